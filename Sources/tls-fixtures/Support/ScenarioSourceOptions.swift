import ArgumentParser
import Foundation
import TLSFixtures

/// `--scenarios DIR`: user scenario files added to the built-in catalog.
struct ScenarioSourceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A directory of your own scenario files (*.json), added to the built-in catalog.", valueName: "dir"))
    var scenarios: String?

    func catalog() throws -> ScenarioCatalog {
        try ScenarioCatalog.withUserScenarios(from: scenarios.map { URL(fileURLWithPath: $0) })
    }
}
