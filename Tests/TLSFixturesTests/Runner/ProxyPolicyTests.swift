import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// What the runner's proxy may reach (issues 23 and 27): a fixture's own port, by that fixture's own name, and nothing
/// else. The rules are one table, docs/ios.md's (step 4, "Qualified names"), and this suite runs that table row by
/// row; the edges of the syntax (ports, brackets, DNS limits) are its second table. The end-to-end proxy suite keeps
/// what only real TLS through a real tunnel shows.
@Suite("The proxy's allow/deny table")
struct ProxyPolicyTests {
    /// The fixtures the table speaks of, on their catalog ports, each with the names a client may use for it:
    /// the catalog's `fixtureHosts` (`long-subdomain`'s second name among them) and `NAME.DOMAIN` for the table's
    /// `serve --domain fixtures.example.com`.
    static let domain = "fixtures.example.com"
    static let served: [Int: ServedFixture] = {
        var served: [Int: ServedFixture] = [:]
        for name in ["ats-compliant", "long-subdomain", "http"] {
            let scenario = try! ScenarioCatalog.builtIn.scenario(named: name)
            let port = scenario.port!
            served[port] = ServedFixture(
                scenario: name, port: port, isCleartext: scenario.isCleartext, address: "127.0.0.1",
                names: scenario.fixtureHosts + ["\(name).\(domain)"])
        }
        return served
    }()
    static let policy = ProxyPolicy(fixtures: FakeFleet(served: served, domains: ["fixtures.test", domain]))

    enum Verdict: Equatable, CustomStringConvertible {
        /// Tunnelled (CONNECT) or forwarded (absolute-form GET) to the fixture on the port asked for.
        case allow
        /// 403: a destination the proxy will not reach.
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

    /// What the policy says to `request` (`CONNECT AUTHORITY` or `GET http://…`, as the router hands each on), and the
    /// fixture or the refusal.
    static func judge(_ request: String) -> (Verdict, Result<ServedFixture, ProxyPolicy.Refusal>) {
        let parts = request.split(separator: " ", maxSplits: 1).map(String.init)
        let result: Result<ServedFixture, ProxyPolicy.Refusal>
        if parts[0] == "CONNECT" {
            result = policy.target(authority: parts[1])
        } else {
            // The router's forward path: the absolute URI's host and port.
            let url = URL(string: parts[1])!
            result = policy.target(host: url.host!, port: url.port ?? 80)
        }
        switch result {
        case .success: return (.allow, result)
        case .failure(let refusal): return (refusal.status == 400 ? .malformed : .forbidden, result)
        }
    }

    struct Row: CustomStringConvertible {
        var request: String
        var answer: String
        var description: String { "\(request) → \(answer)" }
    }

    /// docs/ios.md's table: the request (`a×64` standing for 64 a's) and the answer column, which says the status and,
    /// for a refusal that names the fixture on the port, which name it gives.
    static func documentedRows() throws -> [Row] {
        let lines = try Documentation.page("docs/ios.md").components(separatedBy: "\n")
        let header = try #require(lines.firstIndex(of: "| Request through the proxy | Answer | Why |"))
        return lines[(header + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            var request = String(cells[0].split(separator: "`")[0])
            for match in request.matches(of: /(.)×(\d+)/).reversed() {
                let expanded = String(repeating: String(match.output.1), count: Int(match.output.2)!)
                request.replaceSubrange(match.range, with: expanded)
            }
            return Row(request: request, answer: cells[1])
        }
    }

    @Test("docs/ios.md's table of the proxy's rules is what the proxy does, row by row")
    func documentedTable() throws {
        let rows = try Self.documentedRows()
        #expect(rows.count >= 15, "the table was not found whole: \(rows)")
        for row in rows {
            let (verdict, result) = Self.judge(row.request)
            let expected: Verdict =
                row.answer.hasPrefix("200") || row.answer.hasPrefix("forwarded")
                ? .allow : row.answer.hasPrefix("403") ? .forbidden : .malformed
            #expect(row.answer.hasPrefix("200") || row.answer.hasPrefix("40") || row.answer.hasPrefix("forwarded"),
                    "an answer the test cannot read: \(row)")
            #expect(verdict == expected, "\(row): \(verdict) (\(result))")
            switch result {
            case .success(let fixture):
                let port = Int(row.request.split(separator: ":").last!.prefix { $0.isNumber })!
                #expect(fixture == Self.served[port], "\(row): reached \(fixture)")
                #expect(fixture.isCleartext == row.request.hasPrefix("GET"), "\(row): CONNECT to a cleartext fixture")
            case .failure(let refusal):
                #expect(!refusal.reason.contains("\n"), "\(row): \(refusal.reason)")
                if let named = row.answer.firstMatch(of: /naming `([^`]+)`/)?.output.1 {
                    #expect(refusal.reason.contains(named), "\(row): does not name \(named): \(refusal.reason)")
                }
            }
        }
    }

    @Test(
        "the syntax's edges: ports, brackets, DNS limits",
        arguments: [
            // A DNS name is at most 253 octets, a label at most 63 (RFC 1035 §2.3.4), whatever the fixture is called.
            ("toolong.fixtures.test:40002", Verdict.forbidden),
            ("a.b.fixtures.test:40003", .allow),
            ("a.b.fixtures.test.:40003", .allow),
            ("a.b.fixtures.test..:40003", .forbidden),
            (String(repeating: "a", count: 260) + ".fixtures.test:9801", .forbidden),
            ("fixtures.test:9801", .forbidden),
            ("a..fixtures.test:9801", .forbidden),
            ("a b.fixtures.test:9801", .forbidden),
            ("10.0.0.1:9801", .forbidden),
            ("[2001:db8::1]:9801", .forbidden),
            ("sub.localhost:9801", .forbidden),
            ("ats-compliant.fixtures.test:", .malformed),
            (":9801", .malformed),
            ("ats-compliant.fixtures.test:0", .malformed),
            ("ats-compliant.fixtures.test:65536", .malformed),
            ("ats-compliant.fixtures.test:9801x", .malformed),
            ("ats-compliant.fixtures.test:+9801", .malformed),
            ("[::1:9801", .malformed),
            ("[]:9801", .malformed),
            ("::1:9801", .malformed),
            ("::ffff:127.0.0.1:9801", .malformed),
        ])
    func edges(authority: String, expected: Verdict) {
        // `toolong` is a fixture whose own name is no DNS name (a 64-octet first label): refused by that rule alone.
        let long = String(repeating: "t", count: 64) + ".fixtures.test"
        let policy = ProxyPolicy(
            fixtures: FakeFleet(
                served: Self.served.merging([
                    40_002: ServedFixture(
                        scenario: "toolong", port: 40_002, isCleartext: false, address: "127.0.0.1", names: [long]),
                    40_003: ServedFixture(scenario: "a.b", port: 40_003, isCleartext: false, address: "127.0.0.1"),
                ]) { $1 }, domains: ["fixtures.test"]))
        let authority = authority == "toolong.fixtures.test:40002" ? "\(long):40002" : authority
        let verdict: Verdict
        switch policy.target(authority: authority) {
        case .success: verdict = .allow
        case .failure(let refusal):
            verdict = refusal.status == 400 ? .malformed : .forbidden
            #expect([400, 403].contains(refusal.status) && !refusal.reason.contains("\n"), "\(refusal)")
        }
        #expect(verdict == expected, "\(authority.prefix(80)): \(verdict), expected \(expected)")
    }

    @Test("a refusal says what the proxy does reach, and quotes the request short and escaped")
    func refusalsSayWhy() throws {
        guard case .failure(let stranger) = Self.policy.target(authority: "example.com:9801") else {
            Issue.record("allowed"); return
        }
        #expect(stranger.reason.contains("NAME.fixtures.test, NAME.fixtures.example.com"), "\(stranger.reason)")
        #expect(stranger.reason.contains("port 9801 is ats-compliant.fixtures.test"), "\(stranger.reason)")
        guard case .failure(let loopback) = Self.policy.target(authority: "localhost:22") else {
            Issue.record("allowed"); return
        }
        #expect(loopback.reason.contains("ATS does not apply") && loopback.reason.contains("without the proxy"))
        guard case .failure(let port) = Self.policy.target(authority: "ats-compliant.fixtures.test:22") else {
            Issue.record("allowed"); return
        }
        #expect(port.reason.contains("no fixture of this runner listens on port 22"), "\(port.reason)")
        // Control characters in what the client sent are shown escaped, never raw; a megabyte is not sent back.
        guard case .failure(let raw) = Self.policy.target(authority: "a\r\nb:9801") else {
            Issue.record("allowed"); return
        }
        #expect(raw.reason.contains("a\\r\\nb"), "\(raw.reason)")
        let huge = String(repeating: "a", count: 1_000_000) + ".fixtures.test:9801"
        guard case .failure(let long) = Self.policy.target(authority: huge) else { Issue.record("allowed"); return }
        #expect(long.status == 403 && long.reason.utf8.count < 500, "\(long.reason.prefix(200))")
    }
}
