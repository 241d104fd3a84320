import ArgumentParser
import Foundation
import TLSFixtures

struct PrepareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare",
        abstract: "Generate (or confirm) every certificate the scenarios need, without serving.",
        discussion: "Run it once in CI or after `ca init` so later starts do no key generation. Reports how many keys it made."
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "Scenario names (default: all).")
    var names: [String] = []

    struct Report: Encodable {
        var prepared: [String]
        var unsupported: [String: String]
        var keysGenerated: Int
        var certificatesIssued: Int
        var seconds: Double
    }

    func run() async throws {
        let catalog = try source.catalog()
        let scenarios = names.isEmpty ? catalog.scenarios : try catalog.scenarios(named: names)
        let store = storeOptions.store
        let keys = PrivateKey.generatedCount, issued = CertificateStore.issuedCount
        let start = Date()
        var prepared: [String] = []
        var unsupported: [String: String] = [:]
        for scenario in scenarios {
            do {
                _ = try store.prepare(scenario)
                prepared.append(scenario.name)
            } catch let error as ScenarioUnsupported {
                unsupported[scenario.name] = error.reason
            }
        }
        let report = Report(prepared: prepared, unsupported: unsupported, keysGenerated: PrivateKey.generatedCount - keys,
                            certificatesIssued: CertificateStore.issuedCount - issued, seconds: Date().timeIntervalSince(start))
        if output.json { try Output.json(report); return }
        print("Prepared \(prepared.count) scenarios in \(store.directory.path): \(report.keysGenerated) keys generated, \(report.certificatesIssued) certificates issued (\(String(format: "%.1f", report.seconds)) s).")
        for (name, reason) in unsupported.sorted(by: { $0.key < $1.key }) { print("Not served: \(name): \(reason)") }
    }
}
