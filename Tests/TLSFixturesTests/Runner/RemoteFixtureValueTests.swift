import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures
import TLSFixturesClient

// Issue 26: the README's "Testing an iOS app" as a new user walks it; each test judged from outside — a real runner,
// the CLI's exit status and output, openssl reading what was made.

/// files' rule, and values that read the same as in process (items 7, 8, 12).
@Suite("TLSFixturesClient against serve: listing, inline rules, the fixture's values", .serialized)
struct RemoteFixtureValueTests {
    @Test("scenarios() lists what the runner serves; an unknown name points at it, not at a module iOS cannot link",
          .requires(Tools.curl))
    func scenariosAndUnknownNames() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let fixtures = RemoteFixtures(runner: runner.runnerURL)
        let listed = try await fixtures.scenarios()
        #expect(listed.map(\.name).sorted() == ["ats-compliant", "expired", "http"])
        let expired = try #require(listed.first { $0.name == "expired" })
        // Scenarios/expired.json: OpenSSL's own words for it, and ATS blocks it.
        #expect(expired.status == .serving && expired.expect.verify == "certificate has expired")
        #expect(expired.expect.ats == .block)
        #expect(expired.port.map { Ports.accepts($0) } == true)

        let error = try await #require(throws: RemoteFixtureError.self) { try await fixtures.start("expird") }
        let text = "\(error)"
        #expect(error.apiError?.field == "scenario" && text.contains("did you mean \"expired\""), "\(text)")
        #expect(text.contains("/scenarios.json") && text.contains("RemoteFixtures().scenarios()"), "\(text)")
    }

    @Test("an inline scenario with a certificate and no tls is refused, naming scenario.tls; a file too; {} is TLS",
          .requires(Tools.curl))
    func certificateWithoutTLS() async throws {
        let runner = try await ControlAPIRunner.start(["ats-compliant"])
        defer { runner.stop() }
        let fixtures = RemoteFixtures(runner: runner.runnerURL)
        let scenario: JSONValue = ["name": "mine", "group": "custom", "summary": "s", "certificate": [:],
                                   "expect": ["ats": "allow"]]
        let error = try await #require(throws: RemoteFixtureError.self) { try await fixtures.start(scenario: scenario) }
        #expect(error.apiError?.field == "scenario.tls", "\(error)")
        #expect("\(error)".contains("\"tls\": {}") && "\(error)".contains("plain HTTP"), "\(error)")

        // A scenario file is held to the same rule, in the same words.
        let folder = TestEnvironment.temporaryDirectory("no-tls")
        let file = #"{"name": "mine", "group": "custom", "summary": "s", "certificate": {}, "#
            + #""expect": {"ats": "allow"}}"#
        try Data(file.utf8).write(to: folder.appendingPathComponent("mine.json"))
        let listed = try await TestEnvironment.tlsFixturesAwaiting(["scenarios", "list", "--scenarios", folder.path])
        CLIInputTests.expectOneLineError(listed, mentioning: ["mine.json: at tls: missing", "\"tls\": {}"])

        // With "tls": {} it is TLS; with neither key it is the plain HTTP the http scenario is.
        let tls = try await fixtures.start(scenario: ["name": "mine", "group": "custom", "summary": "s",
                                                      "certificate": [:], "tls": [:], "expect": ["ats": "allow"]])
        #expect(tls.url.scheme == "https" && !tls.scenario.isCleartext)
        let plain = try await fixtures.start(scenario: ["name": "plain", "group": "custom", "summary": "s",
                                                        "expect": ["ats": "block"]])
        #expect(plain.url.scheme == "http" && plain.scenario.isCleartext)
        await tls.stop()
        await plain.stop()
    }

    @Test("the CA comes as PEM Data (as chainPEM) and optional DER; a fixture prints what and where it is")
    func values() async throws {
        let runner = try await ControlAPIRunner.start(["ats-compliant"])
        defer { runner.stop() }
        let fixture = try await RemoteFixtures(runner: runner.runnerURL).start("expired")
        let ca = try runner.store.ca().certificate
        let pem: Data = fixture.caCertificatePEM
        let chain: Data = fixture.chainPEM
        #expect(pem == ca.pem && !chain.isEmpty)
        let der: Data? = fixture.caCertificateDER
        #expect(der == ca.der)
        let shown = "\(fixture)"
        #expect(shown.contains("expired") && shown.contains(fixture.url.absoluteString) && shown.contains(fixture.id)
                && shown.contains(runner.url), "\(shown)")
        #expect(!shown.contains("RemoteFixture"), "\(shown)")
        await fixture.stop()
    }
}
