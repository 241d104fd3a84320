import Foundation
import Testing
@testable import TLSFixtures

/// The client matrix run live (scripts/matrix.py): real client stacks against real fixtures, each a report card
/// (`tls-fixtures report --family STACK`) held to the scenario files' `expect.clients` by the differential judge.
///
/// `make test` runs every stack that installs from Debian's packages, PyPI or the package mirror — on Linux all
/// thirteen (scripts/ensure-deps.sh matrix-test installs them; the three Swift clients are built from Matrix/ into
/// .build-matrix) — each on the controls, on failures every stack must refuse, and on every scenario where that stack
/// differs from OpenSSL: where its file lists the stack in `expect.clients`, or where the `openssl` client's verdict
/// is another. Each stack's card must have nothing but *as expected*: a refusal seen at the scenario's step, for its
/// reason, with the control accepted by the same client; an acceptance answered. So a CA that one stack refuses fails
/// the controls here, and a stack whose behaviour changes (or a server change one stack notices) fails the comparison
/// with the scenario file. `make matrix` runs every scenario on every stack.
@Suite("ClientMatrix: every client stack, live")
struct ClientMatrixTests {
    /// The Must-show controls: every stack verifies them.
    static let controls = ["ats-compliant", "pinned", "ecc256", "tls-v1-3", "intermediate"]
    /// Failures every stack that checks the property must refuse, with `impersonation` (a www.apple.com leaf) among
    /// them.
    static let mustReject = ["expired", "self-signed", "wrong-host", "untrusted-root", "name-constraint-violation",
                             "impersonation"]

    /// Each live client's scenarios: the controls, the must-refuse failures, every scenario the matrix can serve
    /// where the client's expected verdict differs from OpenSSL's verify result or from the `openssl` client's, and
    /// every scenario whose `expect.clients` no matrix run has recorded yet (not in docs/clients.json: written on a Mac,
    /// say), so each client is held to them.
    static func plan(catalog: ScenarioCatalog, clients: [MatrixClient],
                     recorded: Set<String>? = MatrixEnvironment.recordedInCommittedReport())
        -> [MatrixClient: [String]] {
        let judged = catalog.scenarios.filter { scenario in
            scenario.expect.defaultClientOutcome != nil && scenario.expect.handshake?.requires == nil
                && !MatrixEnvironment.outOfScope.contains(scenario.name)
        }
        var plan: [MatrixClient: [String]] = [:]
        for client in clients {
            var names = controls + mustReject
            for scenario in judged where !names.contains(scenario.name) {
                let expect = scenario.expect
                let listed = expect.clients?.contains { $0.clients.contains(client) } ?? false
                let unrecorded = expect.clients != nil && recorded.map { !$0.contains(scenario.name) } == true
                let differs = expect.outcome(for: client)?.outcome != expect.outcome(for: .openssl)?.outcome
                if listed || unrecorded || differs {
                    names.append(scenario.name)
                }
            }
            plan[client] = names
        }
        return plan
    }

    @Test("every client stack's report card is as expected: controls, refusals, where each differs from OpenSSL",
          .enabled(if: MatrixEnvironment.runnable, MatrixEnvironment.skipReason), .timeLimit(.minutes(10)))
    func liveMatrix() async throws {
        for product in MatrixEnvironment.swiftProducts {
            try #require(MatrixEnvironment.built(product), Comment(rawValue:
                "\(MatrixEnvironment.swiftClients.path)/\(product) is missing: `make test` builds it "
                + "(swift build --package-path Matrix --scratch-path .build-matrix --product \(product))"))
        }
        let catalog = try MatrixEnvironment.catalog()
        let clients = MatrixEnvironment.liveClients
        let plan = Self.plan(catalog: catalog, clients: clients)
        let report = try await MatrixEnvironment.run(plan: plan)
        for client in clients {
            let entry = try #require(report.clients.first { $0.id == client.rawValue },
                                     "\(client.rawValue) did not run")
            // Missing is never a pass: make test installs every one (scripts/ensure-deps.sh matrix-test).
            #expect(entry.status == "ok", "\(client.rawValue) is missing: \(entry.reason ?? "?")")
            // For make test's summary: which stacks judged, on how many scenarios.
            let count = plan[client]?.count ?? 0
            print("client matrix ran: \(client.rawValue) on \(count) scenarios: \(entry.version ?? "?")")
        }
        var compared = 0, refusalsProven = 0
        for (client, names) in plan.sorted(by: { $0.key < $1.key }) {
            for name in names {
                let scenario = try catalog.scenario(named: name)
                let row = try #require(report.rows.first { $0.primary && $0.scenario == name },
                                       "\(name) was not served")
                let observed = try #require(row.results[client.rawValue], "\(name): no \(client.rawValue) result")
                let expected = try #require(scenario.expect.outcome(for: client))
                compared += 1
                // The card was held to this stack's verdict in the scenario file…
                #expect(observed.expected == expected.outcome.rawValue,
                        Comment(rawValue: "\(name) × \(client.rawValue): the card expected "
                            + "\(observed.expected ?? "nothing"), the file says \(expected.outcome.rawValue)"))
                // …and its verdict is proven, not inferred (the differential judge: each load on a fixture of its
                // own, a refusal at the scenario's step for its reason with the control accepted, an acceptance
                // answered).
                let because = expected.because.map { " (\($0))" } ?? ""
                #expect(observed.verdict == "as expected", Comment(rawValue: "\(name) × \(client.rawValue): "
                    + "expected \(expected.outcome.rawValue)\(because); the card says \(observed.verdict ?? "nothing")"
                    + ": \(observed.why ?? "") (the client said: \(observed.detail))"))
                if !observed.accepted && observed.verdict == "as expected" { refusalsProven += 1 }
            }
        }
        #expect(compared == plan.values.map(\.count).reduce(0, +))
        // The must-refuse rows alone give every client refusals to prove.
        #expect(refusalsProven >= clients.count, "only \(refusalsProven) refusals were proven")
        // The controls verify in every stack; so a "must reject" row cannot pass because everything is rejected.
        for name in Self.controls {
            let row = try #require(report.rows.first { $0.scenario == name && $0.primary })
            for client in clients {
                let result = row.results[client.rawValue]
                #expect(result?.accepted == true, "\(name) × \(client.rawValue): \(result?.detail ?? "?")")
            }
        }
        // `impersonation` (in every stack's plan, held to its file above) connects by the name it impersonates.
        let impersonation = try #require(report.rows.first { $0.scenario == "impersonation" })
        #expect(impersonation.host == "www.apple.com")
    }
}

/// docs/clients.json (written by `make matrix`) against the scenario files. A documentation consistency check: no
/// client runs here, so these keep the committed report and the files' `expect.clients` (which were written from it)
/// saying the same thing, and nothing more; `ClientMatrixTests` is what holds the files to what the clients do.
@Suite("docs/clients.json: documentation consistency with the scenario files (no client runs)")
struct CommittedMatrixDocumentationTests {
    @Test("docs/clients.json and the scenario files' expect.clients say the same, so the docs cannot drift from them")
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
                guard let observed = row.results[client.rawValue],
                      let expected = scenario.expect.outcome(for: client) else { continue }
                compared += 1
                #expect((observed.accepted ? ClientOutcome.accept : .reject) == expected.outcome,
                        Comment(rawValue: "\(row.scenario) × \(client.rawValue): the scenario file says "
                            + "\(expected.outcome.rawValue), the matrix saw \(observed.detail)"))
                // Each cell is its report card's verdict: the committed matrix was made with nothing unexpected.
                #expect(observed.verdict == "as expected",
                        "\(row.scenario) × \(client.rawValue): \(observed.verdict ?? "no verdict"): \(observed.why ?? "")")
            }
        }
        #expect(compared > 400, "only \(compared) verdicts compared")
    }

    /// The scenario files' steps and late checks were written from this report; it keeps them saying the same thing
    /// (what the clients do now is `ClientMatrixTests`' to hold them to): the report's records re-judged by the same
    /// judge against the files as they are now.
    @Test("docs/clients.json and the scenario files' refusal steps agree: each refusal recorded there shows its step")
    func committedRefusalsMatchSteps() throws {
        let report = try MatrixEnvironment.committedReport()
        let catalog = try MatrixEnvironment.catalog()
        var refusals = 0
        for row in report.rows where row.primary {
            let scenario = try catalog.scenario(named: row.scenario)
            for (client, result) in row.results where !result.accepted {
                refusals += 1
                let server = try #require(result.server, "\(row.scenario) × \(client): no records: re-run `make matrix`")
                if let stack = MatrixClient(rawValue: client),
                   case .failure(let why) = MatrixEnvironment.refusalShown(scenario, server, client: stack) {
                    let text = "\(row.scenario) × \(client): the scenario file's refusal disagrees with docs/clients.json: "
                        + why.reason
                    Issue.record(Comment(rawValue: text))
                }
            }
        }
        #expect(refusals > 200, "only \(refusals) refusals in docs/clients.json")
    }

    @Test("docs/clients.json and the scenario files agree on the controls, the must-refuse list and JSSE taking apple.com")
    func committedControlsAndRefusalsAgree() throws {
        let report = try MatrixEnvironment.committedReport()
        let catalog = try MatrixEnvironment.catalog()
        #expect(report.clients.allSatisfy { $0.status == "ok" }, "docs/clients.json was made with clients missing")
        for name in ClientMatrixTests.controls {
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
        // Which clients ignore the CA's name constraints is a finding users must see: JSSE's (Java, and OkHttp on it),
        // and nobody else.
        let impersonation = try #require(report.rows.first { $0.scenario == "impersonation" })
        #expect(Set(impersonation.results.filter { $0.value.accepted == true }.keys) == ["java", "okhttp"])
    }
}

/// Where the matrix's parts are, and how to run its driver.
enum MatrixEnvironment {
    /// Set by `make test`: the live matrix must run (a missing client fails the test instead of skipping it).
    static let required = ProcessInfo.processInfo.environment["TLS_FIXTURES_MATRIX_REQUIRED"] == "1"
    static let swiftClients = TestEnvironment.packageRoot.appendingPathComponent(".build-matrix/debug")
    /// The Swift clients `make test` builds from Matrix/ (`make matrix-test-clients`).
    static var swiftProducts: [String] {
        HostOS.current == .linux ? ["matrix-nio-ssl", "matrix-ahc", "matrix-urlsession"] : ["matrix-nio-ssl"]
    }
    static func built(_ product: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: swiftClients.appendingPathComponent(product).path)
    }
    static var runnable: Bool { required || built("matrix-nio-ssl") }
    static let skipReason: Comment = "the matrix clients are not built: run `make test`, which builds Matrix/ into .build-matrix"
    /// The stacks `make test` runs. On Linux all thirteen: each installs from Debian's packages (openssl, curl,
    /// GnuTLS, NSS, Chromium, Java, OkHttp, Go, Node), PyPI (pyca/cryptography) or the package mirror (swift-nio-ssl,
    /// AsyncHTTPClient; URLSession is the toolchain's). On macOS the committed verdicts are Linux's: there the stacks whose verdicts do
    /// not depend on the OS (BoringSSL built from source, Homebrew's GnuTLS, pyca/cryptography), as before.
    static var liveClients: [MatrixClient] {
        HostOS.current == .linux ? MatrixClient.allCases : [.swiftNIOSSL, .gnutls, .pyca]
    }
    /// Whether a committed cell's records show the scenario's refusal at one of its steps, for its reason, as the
    /// scenario file says now (`LoadJudge`, the judge that gave the cell its verdict when the matrix ran).
    /// The matrix's clients trust the built-in CA alone, but OkHttp, which is given the roots a scenario assumes (so
    /// that on `pin-mitm` its pin, not its trust, refuses): for the others such a scenario is refused at the
    /// certificate, by trust, whatever its own refusal says (`ReportCard.refusal(_:trustsAssumedRoots:)`).
    static func refusalShown(_ scenario: Scenario, _ server: Report.Server, client: MatrixClient)
        -> Result<RefusalStep, LoadExpectationFailure>
    {
        let expect = scenario.expect
        let expectation = ReportCard.refusal(
            FixtureExpectations(verify: expect.verify, ats: expect.ats, trustedRoots: expect.trustedRoots,
                                pins: expect.pins, refusal: expect.refusal),
            trustsAssumedRoots: client == .okhttp)
        let records = server.connections.enumerated().map { $0.element.record(id: $0.offset + 1) }
        return LoadJudge(scenario: scenario.name, target: "its fixture", expectation: expectation,
                         judgesAppleErrors: false).refusalShown(by: records)
    }

    /// scripts/matrix.py's OUT_OF_SCOPE: scenarios the matrix does not judge.
    static let outOfScope: Set<String> = ["http", "client-cert-required"]

    /// The built-in catalog plus Matrix/Scenarios (the matrix-only `impersonation`), decoded as strictly as any user's.
    static func catalog() throws -> ScenarioCatalog {
        try ScenarioCatalog.withUserScenarios(from: TestEnvironment.packageRoot.appendingPathComponent("Matrix/Scenarios"))
    }

    struct Report: Decodable {
        struct Client: Decodable { var id: String; var status: String; var version: String?; var reason: String? }
        struct Result: Decodable {
            /// What the client said: it exited 0 (an HTTP 200 read).
            var accepted: Bool
            var detail: String
            /// What the card held it to (`accept`, `reject`), its verdict (`as expected`, `unexpected`, `unproven`)
            /// and, when that is not as expected, why.
            var expected: String?
            var verdict: String?
            var why: String?
            /// What the cell's own fixture recorded of this client on this row.
            var server: Server?

            init(accepted: Bool, detail: String, server: Server? = nil) {
                self.accepted = accepted; self.detail = detail; self.server = server
            }
        }
        /// The fixture's records of one cell, as docs/clients.json keeps them, with their summary.
        struct Server: Decodable {
            /// A record as docs/clients.json keeps it (scripts/matrix.py's `compact_record`: no ids, times or ports).
            struct Connection: Decodable {
                var peer: String?
                var serverName: String?
                var outcome: ConnectionRecord.Outcome?
                var alertAfterHandshake: TLSAlert?
                var requestCount: Int
                var open: Bool?

                /// The record it was made from, as far as the judge reads one.
                func record(id: Int) -> ConnectionRecord {
                    let date = Date(timeIntervalSince1970: 0)
                    let hello = serverName.map {
                        ConnectionRecord.ClientHello(serverName: $0, legacyVersion: "TLSv1.2", supportedVersions: [],
                                                     cipherSuites: [], groups: [], signatureAlgorithms: [], alpn: [],
                                                     extensions: [])
                    }
                    return ConnectionRecord(id: id, acceptedAt: date, endedAt: open == true ? nil : date,
                                            peer: peer == "IPv6" ? "[::1]:1" : "127.0.0.1:1", clientHello: hello,
                                            outcome: outcome, alertAfterHandshake: alertAfterHandshake,
                                            requestCount: requestCount)
                }
            }
            var short: String
            var connections: [Connection]
        }
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
    /// `expect.verify`). A scenario the report has no row for is not a gap: without `expect.clients` it is new, and the
    /// docs and the catalog document say "not yet judged by the client matrix"; with them, they were written on a
    /// machine without the matrix (a Mac), and the live matrix (`ClientMatrixTests.plan`) runs every client on it
    /// wherever `make test` can (Linux, CI), so they are held to what the clients do before `make matrix` records them
    /// in docs/clients.json. One line per gap, each saying what to do.
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
            guard let row = report.rows.first(where: { $0.primary && $0.scenario == scenario.name }) else { continue }
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

    /// The scenarios docs/clients.json has a row for; nil when it cannot be read.
    static func recordedInCommittedReport() -> Set<String>? {
        guard let report = try? committedReport() else { return nil }
        return Set(report.rows.filter(\.primary).map(\.scenario))
    }

    static func committedReport() throws -> Report {
        try JSONDecoder().decode(Report.self, from: Data(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/clients.json")))
    }

    /// Runs scripts/matrix.py with a fresh CA, its runner on a block of ports from the allocator that keeps every
    /// test's ranges apart, each client on the scenarios `plan` gives it.
    static func run(plan: [MatrixClient: [String]]) async throws -> Report {
        let scratch = TestEnvironment.temporaryDirectory("matrix")
        let output = scratch.appendingPathComponent("report.json")
        let planFile = scratch.appendingPathComponent("plan.json")
        let encoded = Dictionary(uniqueKeysWithValues: plan.map { ($0.key.rawValue, $0.value) })
        try JSONSerialization.data(withJSONObject: encoded, options: [.sortedKeys]).write(to: planFile)
        var lastError = ""
        for _ in 0..<3 {
            let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/matrix.py").path
            let result = try await External.run(["python3", script, "--cli", TestEnvironment.cli,
                                                 "--swift-clients", swiftClients.path, "--plan", planFile.path,
                                                 "--no-extra-rows", "--port-base", "\(try freePortBase())",
                                                 "--json", output.path], timeout: 560)
            if result.status == 0, let data = try? Data(contentsOf: output) {
                // matrix.py's own timing lines (one per report), for make test's log.
                for line in result.stderr.split(separator: "\n") where line.contains(" in ") && line.hasSuffix(" s") {
                    print("client matrix: \(line)")
                }
                return try JSONDecoder().decode(Report.self, from: data)
            }
            lastError = result.stderr
        }
        throw MatrixRunFailed(output: lastError)
    }

    struct MatrixRunFailed: Error, CustomStringConvertible {
        var output: String
        var description: String { "scripts/matrix.py failed: \(output.suffix(1500))" }
    }

    /// A port base whose whole block (the dashboard, every catalog offset, the OCSP responder and the user scenarios
    /// after them) is free now and handed to no other test of this process (`Ports.freeRange`).
    static func freePortBase() throws -> Int {
        let highest = ScenarioCatalog.builtIn.scenarios.compactMap(\.port).max() ?? 9900
        let span = max(highest - ScenarioCatalog.defaultPortBase, ScenarioCatalog.revocationResponderOffset) + 10
        do {
            return try Ports.freeRange(count: span + 1)
        } catch {
            throw MatrixRunFailed(output: "no free block of \(span + 1) ports")
        }
    }
}
