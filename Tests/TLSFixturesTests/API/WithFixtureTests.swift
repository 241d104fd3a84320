import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixtures

@Suite("withFixture, the Swift Testing scope")
struct WithFixtureTests {
    init() { TestEnvironment.useSharedStoreAsDefault() }

    // README: swift-testing-example begin
    @Test func aSelfSignedCertificateIsRefused() async throws {
        try await withFixture("self-signed") { fixture in
            // Passes only if URLSession reached this fixture and refused it for the scenario's reason (an unknown
            // issuer); a DNS failure, a wrong port, or a certificate it accepted fails the test, saying which.
            try await fixture.expectRefused {
                try await URLSession.shared.data(from: fixture.url)
            }
        }
    }

    @Test func tls10IsRefusedByAModernClient() async throws {
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
    // README: swift-testing-example end

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
