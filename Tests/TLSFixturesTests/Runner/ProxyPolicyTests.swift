import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// What the runner's proxy may reach, as a table (issue 23): a fixture's own port, named as a client would name it,
/// and nothing else, so it is never an open proxy (README, "Testing an iOS app"). The rows are the rules as they stand;
/// the end-to-end proxy suite keeps what only real TLS through a real tunnel shows.
@Suite("The proxy's allow/deny table")
struct ProxyPolicyTests {
    static let fixture = ServedFixture(
        scenario: "ats-compliant", port: 40_001, isCleartext: false, address: "127.0.0.1")
    static let policy = ProxyPolicy(
        fixtures: FakeFleet(served: [40_001: fixture], domains: ["fixtures.test", "fixtures.example.com"]))

    enum Verdict: Equatable, CustomStringConvertible {
        case allow
        /// 403: a name outside the runner's, or a port no fixture of it listens on.
        case forbidden
        /// 400: not `HOST:PORT` at all.
        case malformed

        var description: String {
            switch self {
            case .allow: "allow"
            case .forbidden: "403"
            case .malformed: "400"
            }
        }
    }

    @Test(
        "CONNECT authorities",
        arguments: [
            // The fixture by the names a client uses for it.
            ("ats-compliant.fixtures.test:40001", Verdict.allow),
            ("ATS-Compliant.Fixtures.Test:40001", .allow),  // DNS names are case-insensitive (RFC 4343)
            ("ats-compliant.fixtures.example.com:40001", .allow),  // a `serve --domain`
            ("localhost:40001", .allow),
            ("127.0.0.1:40001", .allow),
            ("[::1]:40001", .allow),
            // Names outside the runner's domains, or no name under them.
            ("example.com:40001", .forbidden),
            ("fixtures.test:40001", .forbidden),
            ("ats-compliant.fixtures.test.evil.example:40001", .forbidden),
            ("a..fixtures.test:40001", .forbidden),
            ("a b.fixtures.test:40001", .forbidden),
            ("10.0.0.1:40001", .forbidden),
            // A DNS label is at most 63 octets (RFC 1035 §2.3.4).
            (String(repeating: "a", count: 64) + ".fixtures.test:40001", .forbidden),
            // Ports no fixture of this runner listens on: the runner's own, anyone else's.
            ("ats-compliant.fixtures.test:9800", .forbidden),
            ("ats-compliant.fixtures.test:443", .forbidden),
            ("localhost:22", .forbidden),
            // Not an authority.
            ("ats-compliant.fixtures.test", .malformed),
            ("ats-compliant.fixtures.test:", .malformed),
            (":40001", .malformed),
            ("ats-compliant.fixtures.test:0", .malformed),
            ("ats-compliant.fixtures.test:65536", .malformed),
            ("ats-compliant.fixtures.test:40001x", .malformed),
            ("[::1:40001", .malformed),
        ])
    func authorities(authority: String, expected: Verdict) {
        let verdict: Verdict
        switch Self.policy.target(authority: authority) {
        case .success(let served):
            #expect(served == Self.fixture)
            verdict = .allow
        case .failure(let refusal):
            verdict = refusal.status == 400 ? .malformed : refusal.status == 403 ? .forbidden : .allow
            #expect([400, 403].contains(refusal.status), "\(refusal)")
            #expect(!refusal.reason.contains("\n"), "\(refusal.reason)")
        }
        #expect(verdict == expected, "\(authority): \(verdict), expected \(expected)")
    }

    @Test("a refusal names what the proxy does reach")
    func refusalsSayWhy() throws {
        guard case .failure(let name) = Self.policy.target(authority: "example.com:40001") else {
            Issue.record("allowed"); return
        }
        #expect(name.reason.contains("NAME.fixtures.test, NAME.fixtures.example.com"), "\(name.reason)")
        guard case .failure(let port) = Self.policy.target(authority: "localhost:22") else {
            Issue.record("allowed"); return
        }
        #expect(port.reason.contains("no fixture of this runner listens on port 22"), "\(port.reason)")
        // Control characters in what the client sent are shown escaped, never raw.
        guard case .failure(let raw) = Self.policy.target(authority: "a\r\nb") else { Issue.record("allowed"); return }
        #expect(raw.reason.contains("a\\r\\nb"), "\(raw.reason)")
    }
}
