import Foundation
import Testing
@testable import TLSFixtures

/// Issue 29, items 6–8: `probe` says what a default client of the linked OpenSSL does with each handshake (proven by a
/// second handshake, and agreeing with curl, which uses the same defaults), shows a stapled OCSP answer and a NULL
/// cipher, and `scenarios show` gives the per-client outcomes.
@Suite("Probe verdicts and scenario outcomes as people read them", .ownThreads)
struct ProbeVerdictTests {
    static var store: CertificateStore { TestEnvironment.sharedStore }

    struct Row: Sendable, CustomTestStringConvertible {
        var scenario: String
        /// The cause the probe names, and the words OpenSSL (so curl, which links it) gives for the refusal.
        var reason: String?
        var openssl: String?
        var testDescription: String { scenario }
    }

    /// The four of the issue, each with the reason curl's own error shows (curl 7.88 + OpenSSL 3.0 here), and a control.
    static let rows: [Row] = [
        Row(scenario: "tls-v1-0", reason: "SHA-1 and MD5", openssl: "legacy sigalg disallowed or unsupported"),
        Row(scenario: "dh1024", reason: "DH group is smaller", openssl: "dh key too small"),
        Row(scenario: "null", reason: "none of the suites a default client offers", openssl: "handshake failure"),
        Row(scenario: "10000-sans", reason: "default limit", openssl: "excessive message size"),
        Row(scenario: "ats-compliant", reason: nil, openssl: nil),
    ]

    @Test("each handshake says what a default client does, as curl does it; exit 5 when only the permissive one completes",
          .requires(Tools.curl), arguments: rows)
    func defaultClient(_ row: Row) async throws {
        let caFile = try TestEnvironment.file(try Self.store.ca().certificate.pem, name: "ca.pem")
        try await withFixture(row.scenario, store: Self.store) { fixture in
            let target = "localhost:\(fixture.port)"
            let probe = try await TestEnvironment.tlsFixturesAwaiting(["probe", target, "--ca", caFile])
            let curl = try await Subprocess.runAwaiting(["curl", "-sS", "-o", "/dev/null", "--cacert", caFile, "https://\(target)/"], timeout: 30)
            if let reason = row.reason, let words = row.openssl {
                #expect(probe.status == 5, "\(row.scenario): exit \(probe.status)\n\(probe.combined)")
                let line = probe.stdout.split(separator: "\n").first { $0.hasPrefix("Default client") } ?? ""
                #expect(line.contains("REFUSES") && line.contains(reason) && line.contains(words), "\(line)")
                // curl links the same OpenSSL with its defaults: it must refuse for the same reason.
                #expect(curl.status != 0 && curl.stderr.contains(words), "curl: \(curl.stderr)")
                // --default-client makes the probe's own handshake fail the same way: exit 2.
                let strict = try await TestEnvironment.tlsFixturesAwaiting(
                    ["probe", target, "--ca", caFile, "--default-client"])
                #expect(strict.status == 2 && strict.stdout.contains(words), "\(strict.combined)")
            } else {
                #expect(probe.status == 0 && probe.stdout.contains("Default client  completes the handshake"), "\(probe.combined)")
                #expect(curl.status == 0, "curl: \(curl.stderr)")
            }
            // NULL suites authenticate without encrypting: said whenever one was negotiated, and only then.
            #expect(probe.stdout.contains("Encryption  NONE") == (row.scenario == "null"), "\(probe.stdout)")
        }
    }

    /// Issue 36, item 11: the handshake completes for expired and self-signed, but no verifying client gets there.
    @Test("a certificate that does not verify is said to be refused by a default client, as curl refuses it",
          .requires(Tools.curl), arguments: [("expired", "certificate has expired"), ("self-signed", "self-signed certificate")])
    func defaultClientRefusesTheCertificate(_ scenario: String, _ words: String) async throws {
        let caFile = try TestEnvironment.file(try Self.store.ca().certificate.pem, name: "ca.pem")
        try await withFixture(scenario, store: Self.store) { fixture in
            let target = "localhost:\(fixture.port)"
            let probe = try await Subprocess.runAwaiting([TestEnvironment.cli, "probe", target, "--ca", caFile])
            let curl = try await Subprocess.runAwaiting(["curl", "-sS", "-o", "/dev/null", "--cacert", caFile, "https://\(target)/"])
            #expect(probe.status == 3, "\(probe.combined)")
            let line = probe.stdout.split(separator: "\n").first { $0.hasPrefix("Default client") } ?? ""
            #expect(line.contains("REFUSES") && line.contains(words) && !line.contains("completes"), "\(line)")
            #expect(curl.status != 0 && curl.stderr.contains(words), "curl: \(curl.stderr)")
        }
    }

    @Test("the JSON carries the same verdict")
    func defaultClientJSON() async throws {
        let caFile = try TestEnvironment.file(try Self.store.ca().certificate.pem, name: "ca.pem")
        try await withFixture("dh1024", store: Self.store) { fixture in
            let result = try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(fixture.port)", "--ca", caFile, "--json"])
            let object = try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any]
            let verdict = try #require((object?["result"] as? [String: Any])?["defaultClient"] as? [String: Any])
            #expect(verdict["outcome"] as? String == "refuses" && (verdict["failure"] as? String)?.contains("dh key too small") == true)
        }
    }

    @Test("a stapled OCSP answer is in the text, as in the JSON")
    func stapledAnswer() async throws {
        let caFile = try TestEnvironment.file(try Self.store.ca().certificate.pem, name: "ca.pem")
        for (scenario, status) in [("revoked-stapled", "revoked (keyCompromise"), ("ocsp-good-stapled", "good; signed by the issuer")] {
            try await withFixture(scenario, store: Self.store) { fixture in
                let text = try await TestEnvironment.tlsFixturesAwaiting(
                    ["probe", "localhost:\(fixture.port)", "--ca", caFile])
                let line = text.stdout.split(separator: "\n").first { $0.hasPrefix("OCSP staple") } ?? ""
                #expect(line.contains(status), "\(scenario): \(text.stdout)")
            }
        }
        try await withFixture("ats-compliant", store: Self.store) { fixture in
            let text = try await TestEnvironment.tlsFixturesAwaiting(
                ["probe", "localhost:\(fixture.port)", "--ca", caFile])
            #expect(!text.stdout.contains("OCSP staple"), "no staple, no line: \(text.stdout)")
        }
    }

    @Test("scenarios show lists what each client of the matrix does, as the scenario table and --json do",
          arguments: ["ip-san", "expired", "ats-compliant", "sha1-intermediate"])
    func clientOutcomes(_ name: String) throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        let text = try TestEnvironment.tlsFixtures(["scenarios", "show", name]).stdout
        // The "Clients:" line and the indented ones after it: "OUTCOME: a, b, c (…)" or "OUTCOME: a, b — because".
        let lines = text.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("Clients:") }, "no Clients line:\n\(text)")
        var said: [String: String] = [:]
        for line in lines[start...].prefix(while: { $0.hasPrefix("Clients:") || $0.hasPrefix("                accept:")
                                                    || $0.hasPrefix("                reject:") }) {
            let body = line.dropFirst(16)
            let outcome = String(body.prefix { $0 != ":" })
            let names = body.dropFirst(outcome.count + 2).components(separatedBy: " — ")[0].components(separatedBy: " (")[0]
            for client in names.components(separatedBy: ", ") { said[client] = outcome }
        }
        // Every client of the matrix once, with the outcome the scenario file gives it (its data, not our wording).
        for client in MatrixClient.allCases {
            let outcome = try #require(scenario.expect.outcome(for: client)).outcome.rawValue
            #expect(said[client.rawValue] == outcome, "\(name): \(client.rawValue) should be \(outcome):\n\(text)")
        }
        #expect(said.count == MatrixClient.allCases.count, "\(said)")
        for difference in scenario.expect.clients ?? [] { #expect(text.contains(difference.because), "\(name): the reason is missing") }
    }
}
