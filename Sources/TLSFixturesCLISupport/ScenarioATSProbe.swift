import Foundation
import TLSFixturesATS
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesProbe

/// Probes a catalog scenario the way an ATS test must reach it: by its qualified name (`NAME.fixtures.test`) with
/// the name resolved to loopback, trusting the roots the device is assumed to trust.
package enum ScenarioATSProbe {
    package struct Observation: Sendable {
        package var url: URL
        package var facts: ServerFacts
        package var target: ProbeTarget
        package var probeOptions: ProbeOptions
    }

    /// Starts the scenario on a free port, gathers its facts, stops it.
    public static func observe(_ scenario: Scenario, store: CertificateStore) async throws -> Observation {
        try await withFixture(scenario, store: store) { try await observe($0) }
    }

    /// The limit for the whole scan of an in-process fixture, in seconds. The scan is dozens of handshakes sharing one
    /// deadline (`ServerFactsCollector`); one probe's 10 s is too little for them when each carries `10000-sans`'s
    /// 312 KiB chain on a loaded machine (seen under AddressSanitizer with the whole suite running), and a fixture of
    /// this process is not a server that could stall on purpose.
    package static let scanTimeout: TimeInterval = 60

    /// Gathers the facts of a running fixture.
    public static func observe(_ fixture: FixtureServer) async throws -> Observation {
        var options = ProbeOptions()
        options.timeout = scanTimeout
        options.trustRoots = fixture.prepared.deviceTrustRoots
        options.anchorKind = .userInstalled
        options.clientCredential = fixture.prepared.clientCredential
        let target = ProbeTarget(host: fixture.scenario.qualifiedHost, port: fixture.port, connectAddress: "127.0.0.1", scheme: fixture.scheme)
        let facts = try await ServerFactsCollector(probe: TLSProbe(options: options)).collect(target)
        return Observation(url: fixture.qualifiedURL, facts: facts, target: target, probeOptions: options)
    }
}
