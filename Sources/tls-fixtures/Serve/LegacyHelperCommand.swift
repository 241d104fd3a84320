import ArgumentParser
import Foundation
import TLSFixtures

/// The legacy helper's own interface (`LegacyHelper`): a runner starts `tls-fixtures-legacy legacy-helper REQUEST`
/// and reads one line of JSON back; the helper serves until its standard input ends. Not for people: hidden.
struct LegacyHelperCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: LegacyHelper.subcommand,
        abstract: "Serve the scenarios a runner asks for, for that runner (the legacy helper's interface).",
        shouldDisplay: false)

    @Argument(help: "The runner's request, as JSON.")
    var request: String

    func run() async throws {
        try await LegacyHelper.serve(try LegacyHelperRequest(json: request))
    }
}
