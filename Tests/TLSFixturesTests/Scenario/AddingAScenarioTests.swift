import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesCLISupport

/// CONTRIBUTING.md's "Adding a scenario to the catalog", followed in a copy of this checkout (issues 23 and 37): a
/// contributor on a machine that cannot run the client matrix (a Mac) adds one file, runs `make scenarios`' steps, and
/// the checks `make test` holds a new scenario to pass: the ATS model's facts come from the file, the scenario shows as
/// not yet judged by the client matrix, and expectations written without a matrix are no gap but every live client's
/// to meet. It does not build the copy: `make scenarios` builds the CLI only to print the table, which is
/// `CatalogMarkdown.table` of the catalog the copy now embeds, and that is what runs here.
@Suite("Adding a scenario, as CONTRIBUTING.md walks it")
struct AddingAScenarioTests {
    static let guideSection = "## Adding a scenario to the catalog"

    /// The tracked files of this checkout, copied to a fresh folder.
    static func copyOfCheckout() throws -> URL {
        let root = TestEnvironment.packageRoot
        let copy = TestEnvironment.temporaryDirectory("checkout")
        let listed = try Subprocess.run(["git", "-C", root.path, "ls-files", "-z"])
        try #require(listed.status == 0, "git ls-files: \(listed.stderr)")
        for path in listed.stdout.split(separator: "\0").map(String.init) {
            let source = root.appendingPathComponent(path)
            guard FileManager.default.fileExists(atPath: source.path) else { continue }  // deleted, not yet committed
            let target = copy.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: source, to: target)
        }
        return copy
    }

    /// The catalog the library built from `checkout` would embed: the generated file's JSON, in its order.
    static func embeddedCatalog(in checkout: URL) throws -> ScenarioCatalog {
        let generated = try String(
            contentsOf: checkout.appendingPathComponent(
                "Sources/TLSFixturesScenario/BuiltinScenarioFiles.generated.swift"),
            encoding: .utf8)
        let files = generated.matches(of: /File\(name: "([^"]+)", json: #"""\n([\s\S]*?)\n"""#\)/)
        return ScenarioCatalog(
            scenarios: try files.map { try ScenarioCatalog.decode(Data($0.output.2.utf8), source: String($0.output.1)) }
        )
    }

    static func python(_ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run([try #require(Tools.python.path)] + arguments)
    }

    @Test(
        "one new file and `make scenarios`: make test's checks pass, the scenario not yet judged by the client matrix",
        .requires(Tools.python))
    func walkThrough() throws {
        // The walk-through names each step this test takes, and the Makefile runs the same scripts.
        let section = Documentation.flattened(
            try #require(try Documentation.section(Self.guideSection, in: "CONTRIBUTING.md")))
        for step in [
            "Scenarios/NAME.json", "make scenarios", "make test", "no row to write",
            "not yet judged by the client matrix", "three files, one commit",
            "make matrix", "expect.clients", "docs/clients.json",
        ] {
            #expect(section.contains(step), "CONTRIBUTING.md's walk-through does not say \(step)")
        }
        let makefile = try String(
            contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Makefile"), encoding: .utf8)
        #expect(
            makefile.contains("python3 scripts/generate-builtin-scenarios.py\n")
                && makefile.contains("scenarios list --markdown > .build/scenario-table.md")
                && makefile.contains("generate-builtin-scenarios.py --table .build/scenario-table.md"),
            "make scenarios changed")

        let checkout = try Self.copyOfCheckout()
        let before = try Self.embeddedCatalog(in: checkout)
        let port = (before.scenarios.compactMap(\.port).max() ?? 9800) + 1
        // 1. One file, its expectations from what the scenario is meant to be, and no expect.clients.
        let json = """
            {
              "name": "aes256-only",
              "group": "control",
              "port": \(port),
              "summary": "TLS 1.2 with AES-256-GCM only",
              "tls": { "minVersion": "TLSv1.2", "maxVersion": "TLSv1.2", "ciphers": "ECDHE-RSA-AES256-GCM-SHA384" },
              "certificate": {},
              "expect": {
                "handshake": { "protocol": "TLSv1.2", "ciphers": ["ECDHE-RSA-AES256-GCM-SHA384"] },
                "verify": "ok", "ats": "allow", "atsFix": { "kind": "not-needed" }
              }
            }

            """
        try json.write(
            to: checkout.appendingPathComponent("Scenarios/aes256-only.json"), atomically: true, encoding: .utf8)
        let script = checkout.appendingPathComponent("scripts/generate-builtin-scenarios.py").path
        // Before `make scenarios`, make test's first check stops, naming it.
        let stale = try Self.python([script, "--check"])
        #expect(stale.status == 1 && stale.combined.contains("make scenarios"), "\(stale.combined)")

        // 2. `make scenarios`: the embedded copy, then docs/scenarios.md's table from the catalog it embeds.
        #expect(try Self.python([script]).status == 0)
        let catalog = try Self.embeddedCatalog(in: checkout)
        #expect(catalog.names == before.names + ["aes256-only"], "the new scenario is not last, by its port")
        let table = checkout.appendingPathComponent(".build/scenario-table.md")
        try FileManager.default.createDirectory(
            at: table.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (CatalogMarkdown.table(catalog) + "\n").write(to: table, atomically: true, encoding: .utf8)
        let written = try Self.python([script, "--table", table.path])
        #expect(written.status == 0, "\(written.combined)")

        // 3. The checks `make test` holds a new scenario to.
        let check = try Self.python([script, "--check"])
        #expect(check.status == 0, "the embedded copy is stale after make scenarios: \(check.combined)")
        let newPage = try String(contentsOf: checkout.appendingPathComponent("docs/scenarios.md"), encoding: .utf8)
        let begin = try #require(newPage.range(of: "<!-- scenario-table begin -->\n"))
        let end = try #require(newPage.range(of: "\n<!-- scenario-table end -->"))
        #expect(
            String(newPage[begin.upperBound..<end.lowerBound]) == CatalogMarkdown.table(catalog),
            "the scenario table's test would fail")
        let row = try #require(newPage.split(separator: "\n").first { $0.contains("`aes256-only`") })
        #expect(row.contains("| not yet judged by the client matrix |"), "\(row)")

        // The client matrix has not run: the committed report has no row for it, and that is no gap.
        let report = try JSONDecoder().decode(
            MatrixEnvironment.Report.self,
            from: Data(contentsOf: checkout.appendingPathComponent("docs/clients.json")))
        #expect(!report.rows.contains { $0.scenario == "aes256-only" })
        let withMatrixOnly = ScenarioCatalog(
            scenarios: catalog.scenarios
                + (try ScenarioCatalog.load(directory: checkout.appendingPathComponent("Matrix/Scenarios"))))
        #expect(MatrixEnvironment.expectationGaps(catalog: withMatrixOnly, report: report) == [])
        // serve's /scenarios.json and `scenarios list --json` say it too.
        let added = try catalog.scenario(named: "aes256-only")
        let entry = CatalogEntry(scenario: added, port: port, status: .listed)
        #expect(entry.clientMatrix == "not yet judged by the client matrix" && entry.clientOutcomes == nil)
        // The ATS model's tests need no row for it: its facts come from the file, and get the file's verdict and fix.
        let facts = ATSCatalog.derived(added)
        #expect(ATSEvaluator().evaluate(url: facts.url, facts: facts.facts).allowed, "\(facts.facts)")
        #expect(ATSExceptionFinder().find(host: facts.host, port: 8443, facts: facts.facts).result == .notNeeded)
        let accepted: AcceptedSuites = [.tls1_2: ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]]
        #expect(facts.facts.accepted == accepted, "\(facts.facts.accepted)")
        // Expectations written on this machine, without a matrix: no gap, and every live client runs on it.
        var withClients = added
        withClients.expect.clients = []
        let byHand = ScenarioCatalog(scenarios: withMatrixOnly.scenarios.filter { $0.name != added.name } + [withClients])
        #expect(MatrixEnvironment.expectationGaps(catalog: byHand, report: report) == [])
        let plan = ClientMatrixTests.plan(catalog: byHand, clients: MatrixClient.allCases,
                                          recorded: Set(report.rows.map(\.scenario)))
        #expect(MatrixClient.allCases.allSatisfy { plan[$0]?.contains("aes256-only") == true })

        // The checkout the test ran in is untouched.
        #expect(
            !FileManager.default.fileExists(
                atPath: TestEnvironment.packageRoot.appendingPathComponent("Scenarios/aes256-only.json").path))
    }
}
