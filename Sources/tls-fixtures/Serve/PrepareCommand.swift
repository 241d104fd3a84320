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
        let results = try await FixtureFleet.prepare(scenarios, store: store) { progress in
            if case .generating(let name, let key) = progress, !output.json {
                Output.error("generating the \(key) key for \(name) (first run only)…")
            }
        }
        var prepared: [String] = []
        var unsupported: [String: String] = [:]
        for scenario in scenarios {
            switch results[scenario.name] {
            case .success?: prepared.append(scenario.name)
            case .failure(let error as ScenarioUnsupported)?: unsupported[scenario.name] = error.detail
            case .failure(let error)?: throw error
            case nil: break
            }
        }
        let report = Report(prepared: prepared, unsupported: unsupported, keysGenerated: PrivateKey.generatedCount - keys,
                            certificatesIssued: CertificateStore.issuedCount - issued, seconds: Date().timeIntervalSince(start))
        if output.json { try Output.json(report); return }
        print("Prepared \(prepared.count) scenario\(prepared.count == 1 ? "" : "s") in \(store.directory.path): \(report.keysGenerated) key\(report.keysGenerated == 1 ? "" : "s") generated, \(report.certificatesIssued) certificate\(report.certificatesIssued == 1 ? "" : "s") issued (\(String(format: "%.1f", report.seconds)) s).")
        for (name, reason) in unsupported.sorted(by: { $0.key < $1.key }) { print("Not served: \(name): \(reason)") }
    }
}
