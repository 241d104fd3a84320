import Foundation
import Testing
@testable import TLSFixtures

/// The client matrix (scripts/matrix.py, docs/CLIENTS.md) judged against the scenario files' `expect.clients`.
///
/// `make test` runs the reduced set: BoringSSL (the swift-nio-ssl client from Matrix/, built into .build-matrix),
/// GnuTLS and pyca/cryptography's strict RFC 5280 verifier, on the controls and on scenarios that must fail, through the
/// same driver `make matrix` uses. A CA that BoringSSL or a strict verifier refuses fails the controls here; a client
/// whose behaviour changes fails the comparison with its scenario file.
@Suite("ClientMatrix")
struct ClientMatrixTests {
    static let reducedClients: [MatrixClient] = [.swiftNIOSSL, .gnutls, .pyca]
    /// The Must-show controls, the scenarios whose CA design the matrix exists to protect (ip-san, no-san), and failures
    /// every stack that checks the property must refuse, with `impersonation` (a www.apple.com leaf) among them.
    static let reducedScenarios = ["ats-compliant", "pinned", "ecc256", "tls-v1-3", "intermediate", "ip-san", "no-san",
                                   "expired", "self-signed", "wrong-host", "untrusted-root", "name-constraint-violation",
                                   "sha1-leaf", "impersonation"]
    static let controls = ["ats-compliant", "pinned", "ecc256", "tls-v1-3", "intermediate"]

    @Test("BoringSSL, GnuTLS and the strict RFC 5280 verifier do what the scenario files say, controls included",
          .enabled(if: MatrixEnvironment.runnable, MatrixEnvironment.skipReason), .timeLimit(.minutes(5)))
    func reducedMatrix() async throws {
        try #require(MatrixEnvironment.nioClientBuilt, "\(MatrixEnvironment.swiftClients.path)/matrix-nio-ssl is missing: `make test` builds it (swift build --package-path Matrix --scratch-path .build-matrix --product matrix-nio-ssl)")
        let report = try await MatrixEnvironment.run(clients: Self.reducedClients, scenarios: Self.reducedScenarios)
        for client in Self.reducedClients {
            let entry = try #require(report.clients.first { $0.id == client.rawValue })
            // Missing is never a pass: make test installs gnutls-bin and pyca/cryptography (scripts/matrix-python.sh).
            #expect(entry.status == "ok", "\(client.rawValue) is missing: \(entry.reason ?? "?")")
        }
        let catalog = try MatrixEnvironment.catalog()
        #expect(Set(report.rows.filter(\.primary).map(\.scenario)) == Set(Self.reducedScenarios))
        for row in report.rows where row.primary {
            let scenario = try catalog.scenario(named: row.scenario)
            for client in Self.reducedClients {
                let observed = try #require(row.results[client.rawValue], "\(row.scenario): no \(client.rawValue) result")
                guard let accepted = observed.accepted else {
                    Issue.record("\(row.scenario) × \(client.rawValue) was not judged: \(observed.detail)")
                    continue
                }
                let expected = try #require(scenario.expect.outcome(for: client))
                #expect((accepted ? ClientOutcome.accept : .reject) == expected.outcome,
                        "\(row.scenario) × \(client.rawValue): expected \(expected.outcome.rawValue)\(expected.because.map { " (\($0))" } ?? ""), got \(observed.detail)")
            }
        }
        // The controls verify in every stack; so a "must reject" row cannot pass because everything is rejected.
        for name in Self.controls {
            let row = try #require(report.rows.first { $0.scenario == name && $0.primary })
            for client in Self.reducedClients { #expect(row.results[client.rawValue]?.accepted == true, "\(name) × \(client.rawValue): \(row.results[client.rawValue]?.detail ?? "?")") }
        }
        // A leaf for www.apple.com from the built-in CA: all three enforce name constraints, so all three refuse it.
        let impersonation = try #require(report.rows.first { $0.scenario == "impersonation" })
        #expect(impersonation.host == "www.apple.com")
        for client in Self.reducedClients {
            #expect(impersonation.results[client.rawValue]?.accepted == false, "\(client.rawValue) accepted a www.apple.com leaf")
        }
    }

    @Test("the committed docs/clients.json agrees with the scenario files, so neither can drift")
    func committedMatrixAgrees() throws {
        let report = try MatrixEnvironment.committedReport()
        let catalog = try MatrixEnvironment.catalog()
        #expect(Set(report.clients.map(\.id)) == Set(MatrixClient.allCases.map(\.rawValue)), "re-run `make matrix`: the client list changed")
        var compared = 0
        for row in report.rows where row.primary {
            guard let scenario = try? catalog.scenario(named: row.scenario) else {
                Issue.record("docs/clients.json has \(row.scenario), which no scenario file defines: re-run `make matrix`")
                continue
            }
            for client in MatrixClient.allCases {
                guard let observed = row.results[client.rawValue], let accepted = observed.accepted,
                      let expected = scenario.expect.outcome(for: client) else { continue }
                compared += 1
                #expect((accepted ? ClientOutcome.accept : .reject) == expected.outcome,
                        "\(row.scenario) × \(client.rawValue): the scenario file says \(expected.outcome.rawValue), the matrix saw \(observed.detail)")
            }
        }
        #expect(compared > 400, "only \(compared) verdicts compared")
    }

    @Test("in the committed matrix every control verifies everywhere, and only clients that ignore name constraints take a www.apple.com leaf")
    func committedMustShow() throws {
        let report = try MatrixEnvironment.committedReport()
        let catalog = try MatrixEnvironment.catalog()
        #expect(report.clients.allSatisfy { $0.status == "ok" }, "docs/clients.json was made with clients missing")
        for name in Self.controls {
            let row = try #require(report.rows.first { $0.scenario == name && $0.primary })
            for client in MatrixClient.allCases {
                #expect(row.results[client.rawValue]?.accepted == true, "\(name) × \(client.rawValue)")
            }
        }
        // Every failing scenario of the Must-show list is refused by every client unless its scenario file names the
        // client as one that does not check that property.
        for name in ["expired", "self-signed", "wrong-host", "untrusted-root", "name-constraint-violation", "impersonation"] {
            let row = try #require(report.rows.first { $0.scenario == name && $0.primary })
            let scenario = try catalog.scenario(named: name)
            let exempt = Set((scenario.expect.clients ?? []).filter { $0.outcome == .accept }.flatMap(\.clients).map(\.rawValue))
            for client in MatrixClient.allCases.map(\.rawValue) where !exempt.contains(client) {
                #expect(row.results[client]?.accepted == false, "\(name) × \(client): \(row.results[client]?.detail ?? "?")")
            }
        }
        // Which clients ignore the CA's name constraints is a finding users must see: Java, and nobody else.
        let impersonation = try #require(report.rows.first { $0.scenario == "impersonation" })
        #expect(Set(impersonation.results.filter { $0.value.accepted == true }.keys) == ["java"])
    }
}

/// Where the matrix's parts are, and how to run its driver.
enum MatrixEnvironment {
    /// Set by `make test`: the reduced matrix must run (a missing client fails the test instead of skipping it).
    static let required = ProcessInfo.processInfo.environment["TLS_FIXTURES_MATRIX_REQUIRED"] == "1"
    static let swiftClients = TestEnvironment.packageRoot.appendingPathComponent(".build-matrix/debug")
    static var nioClientBuilt: Bool { FileManager.default.isExecutableFile(atPath: swiftClients.appendingPathComponent("matrix-nio-ssl").path) }
    static var runnable: Bool { required || nioClientBuilt }
    static let skipReason: Comment = "the matrix clients are not built: run `make test`, which builds Matrix/ into .build-matrix"

    /// The built-in catalog plus Matrix/Scenarios (the matrix-only `impersonation`), decoded as strictly as any user's.
    static func catalog() throws -> ScenarioCatalog {
        try ScenarioCatalog.withUserScenarios(from: TestEnvironment.packageRoot.appendingPathComponent("Matrix/Scenarios"))
    }

    struct Report: Decodable {
        struct Client: Decodable { var id: String; var status: String; var reason: String? }
        struct Result: Decodable { var accepted: Bool?; var detail: String }
        struct Row: Decodable { var scenario: String; var host: String; var primary: Bool; var results: [String: Result] }
        /// A scenario the matrix did not serve: `out of scope` (scripts/matrix.py's OUT_OF_SCOPE), or serve's status.
        struct NotServed: Decodable { var scenario: String; var status: String?; var reason: String }
        var clients: [Client]
        var rows: [Row]
        var notServed: [NotServed] = []

        init(clients: [Client], rows: [Row], notServed: [NotServed] = []) {
            self.clients = clients; self.rows = rows; self.notServed = notServed
        }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            clients = try c.decode([Client].self, forKey: .clients)
            rows = try c.decode([Row].self, forKey: .rows)
            notServed = try c.decodeIfPresent([NotServed].self, forKey: .notServed) ?? []
        }

        enum CodingKeys: String, CodingKey { case clients, rows, notServed }
    }

    /// Why the matrix may leave a scenario with TLS unjudged: it is outside what the matrix judges, or the linked
    /// OpenSSL cannot serve it (`ssl-v3`, `rc4` and `3des` without the legacy helper). Anything else — a scenario still
    /// preparing, or one that failed — is a hole in the report.
    static let acceptedReasonsNotServed: Set<String> = ["out of scope", "unsupported"]

    /// Every scenario with TLS the committed report judged must say what each client of the matrix does with it: every
    /// client's result in its row, and `expect.clients` in its file (`[]` when every client agrees with
    /// `expect.verify`). A scenario the report has no row for and whose file has no `expect.clients` is not a gap: it is
    /// new, the docs and the catalog document say "not yet judged by the client matrix", and `make matrix` (Linux) fills
    /// it in. One with `expect.clients` but no row is: its verdicts were written without a matrix run. One line per
    /// gap, each saying what to do.
    static func expectationGaps(catalog: ScenarioCatalog, report: Report) -> [String] {
        let notServed = Dictionary(report.notServed.map { ($0.scenario, $0) }, uniquingKeysWith: { first, _ in first })
        var gaps: [String] = []
        for scenario in catalog.scenarios where scenario.expect.defaultClientOutcome != nil {
            if let skipped = notServed[scenario.name] {
                if !acceptedReasonsNotServed.contains(skipped.status ?? "") {
                    gaps.append("\(scenario.name) was left out of docs/clients.json (\(skipped.status ?? "no status"): \(skipped.reason)): run `make matrix` again")
                }
                continue
            }
            guard let row = report.rows.first(where: { $0.primary && $0.scenario == scenario.name }) else {
                if scenario.expect.clients != nil {
                    gaps.append("\(scenario.name) has expect.clients but is not in docs/clients.json, so no client matrix judged them: "
                                + "leave expect.clients out until `make matrix` (Linux) has run, then write them from what the clients did")
                }
                continue
            }
            let unanswered = MatrixClient.allCases.filter { row.results[$0.rawValue] == nil }.map(\.rawValue)
            if !unanswered.isEmpty {
                gaps.append("\(scenario.name) has no result from \(unanswered.joined(separator: ", ")) in docs/clients.json: run `make matrix`")
            }
            if scenario.expect.clients == nil {
                gaps.append("\(scenario.name) has no expect.clients: run `make matrix` and list in its scenario file the clients that differ from expect.verify, each with the reason (\"clients\": [] when none does), then `make scenarios`")
            }
        }
        return gaps
    }

    static func committedReport() throws -> Report {
        try JSONDecoder().decode(Report.self, from: Data(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/clients.json")))
    }

    /// Runs scripts/matrix.py with a fresh CA, on a free block of ports.
    static func run(clients: [MatrixClient], scenarios: [String]) async throws -> Report {
        let output = TestEnvironment.temporaryDirectory("matrix").appendingPathComponent("report.json")
        var lastError = ""
        for _ in 0..<3 {
            let base = try freePortBase()
            let result = try await External.run(["python3", TestEnvironment.packageRoot.appendingPathComponent("scripts/matrix.py").path,
                                                 "--cli", TestEnvironment.cli, "--swift-clients", swiftClients.path,
                                                 "--clients", clients.map(\.rawValue).joined(separator: ","),
                                                 "--scenarios", scenarios.joined(separator: ","), "--no-extra-rows",
                                                 "--port-base", "\(base)", "--json", output.path], timeout: 280)
            if result.status == 0, let data = try? Data(contentsOf: output) { return try JSONDecoder().decode(Report.self, from: data) }
            lastError = result.stderr
        }
        throw MatrixRunFailed(output: lastError)
    }

    struct MatrixRunFailed: Error, CustomStringConvertible {
        var output: String
        var description: String { "scripts/matrix.py failed: \(output.suffix(1500))" }
    }

    /// A port base whose whole block (the dashboard, every catalog offset and the user scenarios after them) is free now.
    /// Below the ephemeral range (32768 and up on Linux, 49152 on macOS), so the block cannot take a port that another
    /// test just got from the system with `Ports.unused()`.
    static func freePortBase() throws -> Int {
        let span = (ScenarioCatalog.builtIn.scenarios.compactMap(\.port).max() ?? 9900) - ScenarioCatalog.defaultPortBase + 10
        for _ in 0..<50 {
            let base = Int.random(in: 20_000...(32_000 - span))
            if (0...span).allSatisfy({ Ports.canListen(base + $0) }) { return base }
        }
        throw MatrixRunFailed(output: "no free block of \(span) ports")
    }
}
