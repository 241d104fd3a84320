import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesFleet

/// The legacy helper's own interface (issue 37): `tls-fixtures legacy-helper REQUEST`, one line of JSON back on a pipe,
/// stopped by closing its standard input, rather than `serve`'s hidden `--no-dashboard`. The `tls-fixtures` built
/// with the tests stands in for the `make legacy-openssl` build: it speaks the same interface and links this OpenSSL,
/// so it serves what this process can and reports the rest unsupported, as the real helper would what it cannot.
@Suite("The legacy helper's interface")
struct LegacyHelperInterfaceTests {
    static var helper: URL { URL(fileURLWithPath: TestEnvironment.cli) }

    @Test("a request in, the document of what serves out, and closing its input stops it and frees its ports")
    func pipeProtocol() async throws {
        let base = try ServeEndToEndTests.freePortBase()
        let request = LegacyHelperRequest(
            scenarios: ["ats-compliant", "ssl-v3"], storeDirectory: TestEnvironment.sharedStore.directory.path,
            portBase: base, bindAddresses: nil, handshakeTimeout: 10, idleTimeout: 60)
        let helper = try await LegacyHelperProcess.start(helper: Self.helper, request: request, timeout: 300)
        let statuses = Dictionary(uniqueKeysWithValues: helper.document.scenarios.map { ($0.name, $0.status) })
        #expect(statuses == ["ats-compliant": .serving, "ssl-v3": .unsupported], "\(statuses)")
        #expect(Ports.accepts(base + 1), "the helper does not serve ats-compliant on its catalog port")
        #expect(!Ports.accepts(base), "the helper opened a front door")
        await helper.stop()
        #expect(!Ports.accepts(base + 1), "the helper still listens after its input closed")
    }

    @Test("a fleet hands the scenarios this OpenSSL cannot serve to the helper, and stops it when it stops")
    func fleetAsksTheHelper() async throws {
        var options = FixtureFleet.Options()
        options.portBase = try ServeEndToEndTests.freePortBase()
        options.legacyHelper = Self.helper
        let fleet = try await FixtureFleet.start(
            try ScenarioCatalog.builtIn.scenarios(named: ["ats-compliant", "rc4"]), catalog: .builtIn,
            store: TestEnvironment.sharedStore, options: options)
        // The helper answered (it links this OpenSSL, so rc4 stays unsupported, with this OpenSSL's reason).
        let states = fleet.catalogStates
        guard case .unsupported(let reason) = states.first(where: { $0.scenario.name == "rc4" })?.state else {
            Issue.record("rc4 is \(String(describing: states.last?.state)), not unsupported after the helper answered")
            await fleet.stop()
            return
        }
        #expect(reason.contains("unsupported by the linked OpenSSL"), "\(reason)")
        let kept = fleet.state.withLockedValue(\.legacyHelper)
        let helper = try #require(kept, "the fleet kept no helper")
        #expect(helper.document.scenarios.map(\.name) == ["rc4"], "the helper was asked for more than rc4")
        await fleet.stop()
        #expect(fleet.state.withLockedValue(\.legacyHelper) == nil)
    }

    @Test("a helper that is not one fails the start with its own last line")
    func notAHelper() async throws {
        let request = LegacyHelperRequest(
            scenarios: ["rc4"], storeDirectory: TestEnvironment.sharedStore.directory.path, portBase: 1,
            bindAddresses: nil, handshakeTimeout: 10, idleTimeout: 60)
        await #expect(throws: LegacyHelperError.self) {
            _ = try await LegacyHelperProcess.start(helper: URL(fileURLWithPath: "/bin/false"), request: request)
        }
    }
}
