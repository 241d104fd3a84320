import Foundation
import TLSFixturesFleet
import TLSFixturesPKI
import TLSFixturesRunner
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

/// The `serve` that `tls-fixtures report` starts when it is given none: the whole catalog, as `serve` runs it (the card
/// lists what the runner serves), on a free block of ports; the card's fixtures are leases of their own.
package enum ReportRunner {
    /// Starts it on the first free block of ports above 20000 (the whole span `serve` reserves from its base).
    package static func start(store: CertificateStore) async throws -> (runner: FixtureRunner, url: URL) {
        let catalog = ScenarioCatalog.builtIn
        let span = catalog.highestPort() - ScenarioCatalog.defaultPortBase
        var lastError: Error = FixtureError.portInUse(port: ScenarioCatalog.defaultPortBase, address: "localhost")
        for _ in 0..<20 {
            let base = Int.random(in: 20_000 ... (32_000 - span))
            var configuration = FixtureRunner.Configuration()
            configuration.catalog = catalog
            configuration.store = store
            configuration.portBase = base
            do {
                let runner = try await FixtureRunner.start(configuration)
                return (runner, URL(string: "http://localhost:\(base)")!)
            } catch let error as FixtureError where error.code == .portInUse {
                lastError = error
            }
        }
        throw lastError
    }
}

/// `--family` and `--pins` as a `ReportCard.Family`.
package enum ReportFamily {
    package static func parse(_ name: String, pins: ReportCard.Family.PinTarget?) throws -> ReportCard.Family {
        let base: ReportCard.Family
        switch name {
        case "verifying": base = .verifying
        case "apple": base = .apple
        default:
            guard let client = MatrixClient(rawValue: name) else {
                let names = ["verifying", "apple"] + MatrixClient.allCases.map(\.rawValue)
                throw CommandLoadError(reason: "--family \(name.quotedForMessage()) is not a family",
                                       fix: "give one of " + names.joined(separator: ", "))
            }
            base = .matrix(client.rawValue)
        }
        return pins.map { .pinning(base, pin: $0) } ?? base
    }
}
