import Foundation
import Testing

/// scripts/test-summary.py, the last word of `make test` and `make test-asan`: it counts what the runs' logs say, and
/// it cannot pass on nothing (a group that did not run, ran nothing, or stopped half-way; a parameterized test with no
/// case; no client matrix where one is required).
@Suite("make test's summary cannot pass on nothing", .requires(Tools.python))
struct TestSummaryTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/test-summary.py").path

    /// Swift Testing's last line of a run, which it prints even when nothing ran.
    static func end(_ count: Int) -> String { "✔ Test run with \(count) tests in 1 suite passed after 1.234 seconds." }
    static let passing = ["◇ Test run started.", "✔ Test \"one\" passed after 0.100 seconds.",
                          "✔ Test \"two\" with 3 test cases passed after 0.200 seconds.",
                          "Test Case 'XCTestCaseTests.testThree' passed (0.010 seconds)", end(2)]
    static let matrixLine = "client matrix ran: curl on 60 scenarios: curl 7.88.1"

    /// The summary of `logs` (file name → lines), each written to a fresh folder; `missing` names logs never written.
    static func summary(_ logs: [String: [String]], missing: [String] = [],
                        environment: [String: String] = [:]) async throws -> Subprocess.Result {
        let folder = TestEnvironment.temporaryDirectory("test-summary")
        for (name, lines) in logs {
            try (lines.joined(separator: "\n") + "\n").write(to: folder.appendingPathComponent(name), atomically: true,
                                                             encoding: .utf8)
        }
        let paths = (logs.keys.sorted() + missing).map { folder.appendingPathComponent($0).path }
        // Neither of make test's switches unless the test sets it: this run's own environment may have them.
        let switches = ["TLS_FIXTURES_CI": "", "TLS_FIXTURES_MATRIX_REQUIRED": ""].merging(environment) { $1 }
        return try await Subprocess.runAwaiting([try #require(Tools.python.path), script] + paths,
                                                environment: switches)
    }

    @Test("whole logs that ran tests pass, counted by test (a parameterized one once)")
    func passes() async throws {
        let reliability = ["✔ Test \"four\" passed after 1 seconds.", Self.end(1)]
        let result = try await Self.summary(["parallel.log": Self.passing + [Self.matrixLine],
                                             "reliability.log": reliability],
                                            environment: ["TLS_FIXTURES_MATRIX_REQUIRED": "1"])
        #expect(result.status == 0, "\(result.combined)")
        #expect(result.stdout.hasPrefix("tests: 4 passed, 0 failed, 0 skipped\n"), "\(result.stdout)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    /// Swift Testing's words for a test that passed or failed with known issues (`withKnownIssue`): each is counted,
    /// and a "started" line whose name begins with a verb is not a result.
    @Test("a pass with known issues is a pass, a failure with them a failure; a result line it cannot read fails it")
    func knownIssuesAndUnreadableResults() async throws {
        let known = ["◇ Test \"a failed probe is said\" started.",
                     "━ Test \"five\" passed after 0.083 seconds with 1 known issue.",
                     "✘ Test \"six\" failed after 0.1 seconds with 2 issues (including 1 known issue).", Self.end(2)]
        let counted = try await Self.summary(["parallel.log": Self.passing, "reliability.log": known])
        #expect(counted.stdout.hasPrefix("tests: 4 passed, 1 failed, 0 skipped\n"), "\(counted.combined)")
        #expect(!counted.stderr.contains("cannot read"), "\(counted.stderr)")

        let unreadable = ["✔ Test \"seven\" passed after 0.1 seconds, twice.", Self.end(1)]
        let result = try await Self.summary(["parallel.log": Self.passing, "reliability.log": unreadable])
        #expect(result.status == 1, "\(result.combined)")
        #expect(result.stderr.contains("a test's result this summary cannot read, so it is not counted: "
                                       + "✔ Test \"seven\" passed after 0.1 seconds, twice."), "\(result.stderr)")
    }

    @Test("a group's log that is missing fails it, naming the log")
    func missingLog() async throws {
        let result = try await Self.summary(["parallel.log": Self.passing], missing: ["reliability.log"])
        #expect(result.status == 1 && result.stderr.contains("reliability.log: no such log"), "\(result.combined)")
    }

    @Test("a group whose filter matched no test fails it")
    func nothingRan() async throws {
        let empty = ["Test Suite 'Selected tests' started at 2026-01-01 00:00:00.000",
                     "\t Executed 0 tests, with 0 failures (0 unexpected) in 0.0 (0.0) seconds", "◇ Test run started.",
                     "✔ Test run with 0 tests in 0 suites passed after 0.001 seconds."]
        let result = try await Self.summary(["parallel.log": Self.passing, "reliability.log": empty])
        #expect(result.status == 1 && result.stderr.contains("reliability.log: no test ran"), "\(result.combined)")
    }

    @Test("a run that stopped half-way (no last line) fails it")
    func cutShort() async throws {
        let result = try await Self.summary(["parallel.log": Array(Self.passing.dropLast())])
        #expect(result.status == 1 && result.stderr.contains("parallel.log: the run did not finish"),
                "\(result.combined)")
    }

    @Test("a parameterized test that ran none of its cases fails it, named")
    func noCases() async throws {
        let log = Array(Self.passing.dropLast())
            + ["✔ Test \"every scenario\" with 0 test cases passed after 0.001 seconds.", Self.end(3)]
        let result = try await Self.summary(["parallel.log": log])
        #expect(result.status == 1 && result.stderr.contains("every scenario ran none of its test cases"),
                "\(result.combined)")
    }

    @Test("where the client matrix is required, a run without it fails; elsewhere it is said only")
    func matrixRequired() async throws {
        let required = try await Self.summary(["parallel.log": Self.passing],
                                              environment: ["TLS_FIXTURES_MATRIX_REQUIRED": "1"])
        #expect(required.status == 1 && required.stderr.contains("the client matrix did not run"),
                "\(required.combined)")
        let optional = try await Self.summary(["parallel.log": Self.passing])
        #expect(optional.status == 0 && optional.stdout.contains("client matrix: did not run"), "\(optional.combined)")
    }

    @Test("a failed test fails it; a skip fails it in CI only")
    func failuresAndSkips() async throws {
        let failed = try await Self.summary(["parallel.log": Array(Self.passing.dropLast())
            + ["✘ Test \"five\" failed after 0.5 seconds with 1 issue.", Self.end(3)]])
        #expect(failed.status == 1 && failed.stdout.contains("failed: five"), "\(failed.combined)")
        let skipping = ["parallel.log": Array(Self.passing.dropLast())
            + ["➜ Test \"six\" skipped: \"needs a Mac\"", Self.end(3)]]
        let skipped = try await Self.summary(skipping)
        #expect(skipped.status == 0 && skipped.stdout.contains("skipped: six: needs a Mac"), "\(skipped.combined)")
        let inCI = try await Self.summary(skipping, environment: ["TLS_FIXTURES_CI": "1"])
        #expect(inCI.status == 1, "\(inCI.combined)")
    }
}
