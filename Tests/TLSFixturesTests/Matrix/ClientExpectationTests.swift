import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// This suite's store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
private var clientExpectationStore: CertificateStore { TestEnvironment.suiteStore("ClientExpectation") }

/// `expect.clients` in a scenario file: decoded strictly, resolved the same way everywhere, and shown by a running
/// `serve` on the dashboard and in `/scenarios.json`.
@Suite("Client expectations")
struct ClientExpectationTests {
    static let prefix = #"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{},"expect":{"verify":"ok","ats":"allow","clients":"#

    @Test("malformed expect.clients are one-line errors naming the key and the fix", arguments: [
        (#"[{"clients":["safari"],"outcome":"reject","because":"b"}]}}"#, "unknown client \"safari\""),
        (#"[{"clients":["go"],"outcome":"accept","because":"b"}]}}"#, "list only clients that differ"),
        (#"[{"clients":["go"],"outcome":"reject","because":"b"},{"clients":["go"],"outcome":"reject","because":"c"}]}}"#, "go is listed twice"),
        (#"[{"clients":[],"outcome":"reject","because":"b"}]}}"#, "name at least one client"),
        (#"[{"clients":["go"],"outcome":"reject","because":" "}]}}"#, "say why the client differs"),
        (#"[{"clients":["go"],"outcome":"maybe","because":"b"}]}}"#, "at expect.clients[0].outcome"),
        (#"[{"clients":["go"],"outcome":"reject","why":"b"}]}}"#, "unknown key \"why\""),
    ])
    func malformed(clients: String, fragment: String) throws {
        #expect {
            try ScenarioCatalog.decode(Data((Self.prefix + clients).utf8), source: "custom/x.json")
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("custom/x.json: ") && text.contains(fragment) && !text.contains("\n")
        }
    }

    @Test("a scenario without TLS has no client verdicts")
    func cleartextHasNone() throws {
        let json = #"{"name":"x","group":"custom","summary":"s","expect":{"ats":"block","clients":[{"clients":["go"],"outcome":"reject","because":"b"}]}}"#
        #expect(throws: (any Error).self) { try ScenarioCatalog.decode(Data(json.utf8), source: "x.json") }
        #expect(try ScenarioCatalog.builtIn.scenario(named: "http").expect.outcome(for: .go) == nil)
    }

    @Test("clients not listed get OpenSSL's verdict; listed ones get theirs and the reason")
    func resolution() throws {
        let ipSAN = try ScenarioCatalog.builtIn.scenario(named: "ip-san").expect
        #expect(ipSAN.outcome(for: .openssl)?.outcome == .accept && ipSAN.outcome(for: .openssl)?.because == nil)
        #expect(ipSAN.outcome(for: .swiftNIOSSL)?.outcome == .reject)
        #expect(ipSAN.outcome(for: .swiftNIOSSL)?.because?.contains("iPAddress") == true)
        let expired = try ScenarioCatalog.builtIn.scenario(named: "expired").expect
        #expect(MatrixClient.allCases.allSatisfy { expired.outcome(for: $0)?.outcome == .reject })
        #expect(ipSAN.clientDifferencesSummary == "reject: swift-nio-ssl, async-http-client")
        #expect(expired.clientDifferencesSummary == "—")
    }

    @Test("every scenario with TLS has expect.clients and its own row in docs/clients.json, unless the matrix cannot serve it")
    func everyScenarioHasClientExpectations() throws {
        let gaps = MatrixEnvironment.expectationGaps(catalog: try MatrixEnvironment.catalog(), report: try MatrixEnvironment.committedReport())
        #expect(gaps.isEmpty, "\(gaps.joined(separator: "\n"))")
    }

    @Test("a new scenario no matrix has judged is not yet judged, no gap; expectations without a matrix row, or a row without them, are")
    func newScenarioWithoutExpectations() throws {
        func scenario(_ name: String, clients: String?) throws -> Scenario {
            let expect = #"{"verify":"ok","ats":"allow""# + (clients.map { #","clients":\#($0)"# } ?? "") + "}"
            return try ScenarioCatalog.decode(Data(#"{"name":"\#(name)","group":"custom","summary":"s","tls":{},"certificate":{},"expect":\#(expect)}"#.utf8), source: "\(name).json")
        }
        let everyone = Dictionary(uniqueKeysWithValues: MatrixClient.allCases.map { ($0.rawValue, MatrixEnvironment.Report.Result(accepted: true, detail: "HTTP 200")) })
        let judged = MatrixEnvironment.Report.Row(scenario: "judged", host: "localhost", primary: true, results: everyone)
        let report = MatrixEnvironment.Report(clients: [], rows: [judged, .init(scenario: "unlooked", host: "localhost", primary: true, results: everyone)],
                                              notServed: [.init(scenario: "legacy", status: "unsupported", reason: "no SSLv3"),
                                                          .init(scenario: "slow", status: "preparing", reason: "preparing…")])
        let catalog = ScenarioCatalog(scenarios: [try scenario("judged", clients: "[]"), try scenario("unlooked", clients: nil),
                                                  try scenario("guessed", clients: "[]"), try scenario("new", clients: nil),
                                                  try scenario("legacy", clients: nil), try scenario("slow", clients: "[]")])
        let gaps = MatrixEnvironment.expectationGaps(catalog: catalog, report: report)
        #expect(gaps.count == 2, "\(gaps)")
        #expect(gaps.contains { $0.hasPrefix("unlooked has no expect.clients: run `make matrix`") })
        #expect(gaps.contains { $0.hasPrefix("slow was left out of docs/clients.json (preparing") })
        // Expectations written without the matrix (on a Mac) are no gap: the live matrix runs every client on them.
        #expect(!gaps.contains { $0.hasPrefix("guessed ") }, "\(gaps)")
        let plan = ClientMatrixTests.plan(catalog: catalog, clients: MatrixClient.allCases,
                                          recorded: Set(report.rows.map(\.scenario)))
        #expect(MatrixClient.allCases.allSatisfy { plan[$0]?.contains("guessed") == true }, "\(plan)")
        #expect(!MatrixClient.allCases.contains { plan[$0]?.contains("judged") == true }, "\(plan)")
        #expect(!gaps.contains { $0.hasPrefix("new ") }, "a scenario no matrix has judged yet is a gap: \(gaps)")
        // What every reader is told about it instead.
        let new = try scenario("new", clients: nil)
        #expect(new.expect.clientDifferencesSummary == "not yet judged by the client matrix")
        let entry = CatalogEntry(scenario: new, port: 9861, status: .listed)
        #expect(entry.clientMatrix == "not yet judged by the client matrix" && entry.clientOutcomes == nil)
        #expect(DashboardPage.clientsCell(new.expect, notJudged: entry.clientMatrix).contains("not yet judged by the client matrix"))
        // What the matrix cannot judge says why, not "yet": its clients present no client certificate, and Debian's
        // OpenSSL cannot serve RC4 (scripts/matrix.py's OUT_OF_SCOPE and its not_served rows say the same).
        let builtIn = ScenarioCatalog.builtIn
        #expect(try builtIn.scenario(named: "client-cert-required").clientDifferencesSummary
                    == "not judged by the client matrix: its clients present no client certificate")
        #expect(try builtIn.scenario(named: "rc4").clientDifferencesSummary.hasPrefix("not judged by the client matrix: it needs RC4"))
        let judgedEntry = CatalogEntry(scenario: try scenario("judged", clients: "[]"), port: 9862, status: .listed)
        #expect(judgedEntry.clientMatrix == nil && judgedEntry.clientOutcomes?.count == MatrixClient.allCases.count)
        #expect(try ScenarioCatalog.builtIn.scenario(named: "http").expect.clientDifferencesSummary == "—", "no TLS, nothing to judge")
    }

    @Test("serve shows where clients differ: the dashboard's column and /scenarios.json's clientOutcomes", .timeLimit(.minutes(2)))
    func served() async throws {
        let base = try MatrixEnvironment.freePortBase()
        let serve = try Subprocess.launch([TestEnvironment.cli, "serve", "--dir", clientExpectationStore.directory.path,
                                           "--port-base", "\(base)", "ip-san", "expired"])
        defer { serve.stopBlocking("serve") }
        var waited = 0
        while !Ports.accepts(base) && waited < 600 { try await Task.sleep(for: .milliseconds(100)); waited += 1 }
        let json = try await External.run(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:\(base)/scenarios.json"])
        let document = try JSONDecoder().decode(CatalogDocument.self, from: json.stdoutData)
        #expect(document.clients.map(\.id) == MatrixClient.allCases.map(\.rawValue))
        let ipSAN = try #require(document.scenarios.first { $0.name == "ip-san" })
        #expect(ipSAN.clientOutcomes?["swift-nio-ssl"] == .reject && ipSAN.clientOutcomes?["gnutls"] == .accept, "\(ipSAN.clientOutcomes ?? [:])")
        #expect(ipSAN.expect.clients?.first?.because.contains("iPAddress") == true)
        let expired = try #require(document.scenarios.first { $0.name == "expired" })
        #expect(expired.clientOutcomes?.values.allSatisfy { $0 == .reject } == true)

        let page = try await External.run(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:\(base)/"]).stdout
        let row = try #require(page.range(of: "id=\"scenario-ip-san\"").map { String(page[$0.upperBound...].prefix(2500)) })
        #expect(row.contains("<td class=\"clients\"><span class=\"client-reject\" data-outcome=\"reject\""), "\(row.prefix(1500))")
        #expect(row.contains("reject: swift-nio-ssl, async-http-client</span>"), "\(row.prefix(1500))")
        let expiredRow = try #require(page.range(of: "id=\"scenario-expired\"").map { String(page[$0.upperBound...].prefix(2000)) })
        #expect(expiredRow.contains("<td class=\"clients\">—</td>"))
    }
}
