import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixtures
import TLSFixturesCLISupport

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

@Suite("README examples match the tests they are copied from")
struct ReadmeExamplesTests {
    @Test(arguments: [("xctest-example", "API/XCTestHelperTests.swift"), ("swift-testing-example", "API/WithFixtureTests.swift"),
                      ("ephemeral-example", "API/NewUserFrictionTests.swift"), ("name-clash-example", "API/NewUserFrictionTests.swift"),
                      ("remote-xctest-example", "API/RemoteReadmeExampleTests.swift"),
                      ("remote-swift-testing-example", "API/RemoteReadmeExampleTests.swift")])
    func readmeHasTheTestedCode(marker: String, file: String) throws {
        let source = try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Tests/TLSFixturesTests/\(file)"), encoding: .utf8)
        let readme = try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = source.components(separatedBy: "\n")
        let begin = try #require(lines.firstIndex { $0.contains("README: \(marker) begin") })
        let end = try #require(lines.firstIndex { $0.contains("README: \(marker) end") })
        // The README shows the method without the class's indentation.
        let snippet = lines[(begin + 1)..<end].map { $0.hasPrefix("    ") ? String($0.dropFirst(4)) : $0 }.joined(separator: "\n")
        #expect(readme.contains(snippet), "README.md lacks the current \(marker) from \(file):\n\(snippet)")
    }
}

@Suite("README scenario table")
struct ReadmeTableTests {
    @Test("the README's table is the catalog's (stale: run `make scenarios`)")
    func tableMatchesCatalog() throws {
        let readme = try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try #require(readme.range(of: "<!-- scenario-table begin -->\n"))
        let end = try #require(readme.range(of: "\n<!-- scenario-table end -->"))
        #expect(String(readme[begin.upperBound..<end.lowerBound]) == CatalogMarkdown.table(ScenarioCatalog.builtIn),
                "README.md's scenario table is stale: run `make scenarios`")
    }
}
