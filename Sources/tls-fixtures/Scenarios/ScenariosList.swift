import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

struct ScenariosList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Every scenario with its port, what is wrong, and the expected ATS verdict.",
        discussion: "--json prints the same document the dashboard serves as /scenarios.json (without live pins)."
    )

    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Print a Markdown table (docs/scenarios.md's).")
    var markdown = false

    @Option(help: ArgumentHelp("Port of the dashboard; scenario ports follow it.", valueName: "port"))
    var portBase = ScenarioCatalog.defaultPortBase

    func run() async throws {
        // Here rather than in validate(), which would wrap a catalog error and lose its code for --json.
        let catalog = try source.catalog()
        try PortBaseOption.check(portBase, catalog: catalog)
        let entries = catalog.scenarios.map { CatalogEntry(scenario: $0, port: catalog.port(of: $0, portBase: portBase), status: .listed) }
        let document = CatalogDocument(dashboard: nil, scenarios: entries)
        if output.json {
            print(String(decoding: try document.json(), as: UTF8.self))
            return
        }
        if markdown {
            print(CatalogMarkdown.table(catalog))
            return
        }
        var current: ScenarioGroup? = nil
        for entry in entries {
            if entry.group != current {
                current = entry.group
                print("\n\(entry.group.rawValue.uppercased())")
            }
            let port = entry.port.map(String.init) ?? "-"
            print("  \(port.padding(toLength: 6, withPad: " ", startingAt: 0))\(entry.name.padding(toLength: 27, withPad: " ", startingAt: 0))\(entry.expect.ats.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))\(entry.summary)")
        }
        print("\n\(ATSTrap.note)")
    }
}
