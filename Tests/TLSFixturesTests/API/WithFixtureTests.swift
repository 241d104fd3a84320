import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixtures

/// docs/macos.md's Swift Testing example, exactly as it appears there (`DocExamplesTests`). It proves a refusal by
/// difference, so here, where URLSession's libcurl does not trust the kit's CA, it must fail on the control half
/// (`HoldsExampleOutcome`); `ExampleRuns` runs it again where the CA is trusted, and it must pass.
@Suite("docs/macos.md: the Swift Testing example", HoldsExampleOutcome())
struct MacSwiftTestingExampleTests {
    init() { TestEnvironment.useSharedStoreAsDefault() }

    // README: swift-testing-example begin
    @Test func expiredCertificateIsRefused() async throws {
        let session = URLSession(configuration: .ephemeral)   // or your app's session, with its pinning delegate
        // A fresh ats-compliant (the control) must be accepted and a fresh expired refused at the certificate.
        try await FixtureServer.expectRefused("expired") { url in try await session.data(from: url) }
    }
    // README: swift-testing-example end
}

@Suite("withFixture, the Swift Testing scope")
struct WithFixtureTests {
    init() { TestEnvironment.useSharedStoreAsDefault() }

    @Test("a TLS 1.2 client is refused by tls-v1-0, and the fixture saw protocol_version")
    func tls10IsRefusedByAModernClient() async throws {
        try await withFixture("tls-v1-0") { fixture in
            var options = ProbeOptions()
            options.minVersion = .tls1_2          // what URLSession offers under ATS
            options.trustRoots = [fixture.caCertificate]

            let result = try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: fixture.port))

            #expect(!result.succeeded)
            #expect(result.failure?.contains("protocol version") == true)
            #expect(fixture.connections.last?.outcome?.alert == .protocolVersion)   // what the server saw
        }
    }

    @Test("the probe verifies the name it sends as SNI, as curl and s_client do")
    func verifiesServerName() async throws {
        try await withFixture("ats-compliant") { fixture in
            var options = ProbeOptions()
            options.trustRoots = [fixture.caCertificate]
            options.sendHTTPRequest = false
            let target = ProbeTarget(host: "localhost", port: fixture.port)
            let plain = try await TLSProbe(options: options).probe(target)
            options.serverName = "elsewhere.example"   // the certificate names localhost and the scenario host only
            let renamed = try await TLSProbe(options: options).probe(target)
            #expect(plain.verification?.summary == "ok")
            #expect(renamed.verification?.summary == "hostname mismatch")
        }
    }

    @Test("the fixture is stopped when the body throws")
    func stopsOnError() async throws {
        struct Expected: Error {}
        let port = PortBox()
        await #expect(throws: Expected.self) {
            try await withFixture("ats-compliant") { fixture in
                port.value = fixture.port
                #expect(Ports.accepts(fixture.port))
                throw Expected()
            }
        }
        #expect(port.value != 0 && port.released)
    }

    @Test("an unknown scenario name is a clear error, with a suggestion")
    func unknownName() async throws {
        await #expect {
            try await withFixture("expird") { _ in }
        } throws: { "\($0)".contains("unknown scenario \"expird\" (did you mean \"expired\"?)") }
    }
}
