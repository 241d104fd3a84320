import ArgumentParser

struct ScenariosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios",
        abstract: "List the scenario catalog, or show one scenario in full.",
        subcommands: [ScenariosList.self, ScenariosShow.self],
        defaultSubcommand: ScenariosList.self
    )
}
