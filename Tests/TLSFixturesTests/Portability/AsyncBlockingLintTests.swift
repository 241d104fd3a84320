import Foundation
import Testing

/// scripts/lint-async-blocking.py (make lint): a call that blocks a thread inside the tests' async code (and inside a
/// synchronous test, which runs on the same pool) is a finding, with its rule, file and line; the same call in other
/// synchronous code, on a thread of its own (`.ownThreads` included), or with a waiver that says why, is not.
@Suite("the async-blocking lint of the tests", .requires(Tools.python))
struct AsyncBlockingLintTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/lint-async-blocking.py").path

    static func lint(_ source: String) async throws -> Subprocess.Result {
        let file = TestEnvironment.temporaryDirectory("async-lint").appendingPathComponent("Sample.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        return try await Subprocess.runAwaiting([try #require(Tools.python.path), script, file.path])
    }

    /// One blocking line per rule, as the tests had them before the lint.
    static let badLines: [(rule: String, line: String)] = [
        ("subprocess-run", "let answer = try Subprocess.run([\"curl\", url])"),
        ("subprocess-run", "let made = try TestEnvironment.tlsFixtures([\"ca\", \"init\"])"),
        ("subprocess-run", "let text = try TestEnvironment.openssl([\"version\"])"),
        ("process-wait", "let result = running.wait(timeout: 20)"),
        ("process-wait", "process.waitUntilExit()"),
        ("sleep", "usleep(50_000)"),
        ("sleep", "sleep(1)"),
        ("sleep", "Thread.sleep(forTimeInterval: 0.1)"),
        ("blocking-wait", "semaphore.wait()"),
        ("spin", "while !done.withLockedValue({ $0 }) { await Task.yield() }"),
        ("deadline-loop", "while Date() < deadline { if ready() { break } }"),
        ("deadline-loop", "while ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }"),
    ]

    @Test("each blocking call in an async function fails the lint with its rule, file and line", arguments: badLines)
    func flagged(rule: String, line: String) async throws {
        let result = try await Self.lint("func sample() async throws {\n    let x = 1\n    \(line)\n}\n")
        #expect(result.status == 1, "\(result.combined)")
        #expect(result.stdout.contains("Sample.swift:3: [\(rule)]"), "\(result.combined)")
        #expect(result.stdout.split(separator: "\n").count == 1, "one finding per line: \(result.stdout)")
    }

    /// Where each of them is fine: synchronous code nobody async calls, a thread of its own, a comment, a string.
    @Test("the same calls in synchronous code, off the pool, in comments and strings, or awaited, pass")
    func accepted() async throws {
        let calls = Self.badLines.map(\.line).filter { !$0.contains("Task.yield") }.joined(separator: "\n        ")
        let source = """
            func synchronous() throws {
                \(calls)
            }

            func asynchronous() async throws {
                let result = try await offThePool {
                    \(calls)
                }
                try await BlockingWork.blockingIO { usleep(1) }
                DispatchQueue.global().async { sleep(1) }
                Thread.detachNewThread { usleep(1) }
                // Subprocess.run([\"curl\"]) waits, which is why this comment says so
                let words = "usleep(1) and Subprocess.run( are words here"
                let signal = await shutdown.wait()
                let exited = await running.finished(timeout: 20)
                let done = await child.wait(timeout: 5)
                while waiting { try await Task.sleep(for: .milliseconds(5)) }
            }
            """
        let result = try await Self.lint(source)
        #expect(result.status == 0, "\(result.combined)")
    }

    @Test("async code is also a Task's body, a nested function, and a synchronous function async code calls")
    func reach() async throws {
        let source = """
            func synchronous() {
                Task { usleep(1) }
            }

            func asynchronous() async throws {
                func asked() throws -> String { try Subprocess.run(["curl"]).stdout }
                _ = try asked()
                try helper()
                try Self.otherHelper()
            }

            func helper() throws { try TestEnvironment.openssl(["version"]) }
            static func otherHelper() throws { process.waitUntilExit() }
            func unused() throws { try TestEnvironment.openssl(["version"]) }
            """
        let result = try await Self.lint(source)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(result.status == 1 && lines.count == 4, "\(result.combined)")
        #expect(lines.contains { $0.contains("Sample.swift:2: [sleep]") }, "\(lines)")
        #expect(lines.contains { $0.contains("Sample.swift:6: [subprocess-run]") }, "\(lines)")
        #expect(lines.contains { $0.contains("Sample.swift:12: [subprocess-run]") && $0.contains("`helper`") },
                "\(lines)")
        #expect(lines.contains { $0.contains("Sample.swift:13: [process-wait]") && $0.contains("`otherHelper`") },
                "\(lines)")
    }

    /// Swift Testing runs a synchronous test on the concurrency pool too: its blocking calls are findings, with the
    /// way out, unless its suite (or the test) runs `.ownThreads`; nested suites inherit it. A plain synchronous
    /// function, and a helper only such a test calls, stay as they were.
    @Test("a synchronous @Test blocks the pool: a finding, unless it or an enclosing suite runs .ownThreads")
    func synchronousTests() async throws {
        let source = """
            @Suite("plain")
            struct Plain {
                @Test("blocks") func blocks() throws {
                    _ = try Subprocess.run(["curl"])
                }
                @Test("parameterized", arguments: [1, 2]) func each(_ n: Int) throws { try helper() }
                @Test("its own", .ownThreads) func own() throws { _ = try Subprocess.run(["curl"]) }
                func helper() throws { usleep(1) }
                func notATest() throws { _ = try Subprocess.run(["curl"]) }
            }

            @Suite("own", .serialized, .ownThreads)
            struct Own {
                @Test func blocks() throws { _ = try Subprocess.run(["curl"]) }
                @Suite struct Nested {
                    @Test func blocksToo() throws { try ownHelper() }
                    func ownHelper() throws { usleep(1) }
                }
            }
            """
        let result = try await Self.lint(source)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(result.status == 1 && lines.count == 2, "\(result.combined)")
        #expect(lines.contains { $0.contains("Sample.swift:4: [subprocess-run]") && $0.contains("`.ownThreads`") },
                "\(lines)")
        #expect(lines.contains { $0.contains("Sample.swift:8: [sleep]") && $0.contains("`helper`") }, "\(lines)")
    }

    @Test("a waiver names its rule and says why; one without a reason, or naming no rule, is a finding")
    func waivers() async throws {
        let waived = try await Self.lint("""
            func sample() async {
                // async-lint: allow process-wait — a defer cannot await; the child has had SIGKILL
                defer { _ = server.wait(timeout: 10) }
                usleep(1)   // async-lint: allow sleep — the sample's own reason
            }
            """)
        #expect(waived.status == 0, "\(waived.combined)")
        let bare = try await Self.lint("func sample() async {\n    usleep(1)   // async-lint: allow sleep\n}\n")
        #expect(bare.status == 1 && bare.stdout.contains("Sample.swift:2: [waiver]")
                && bare.stdout.contains("Sample.swift:2: [sleep]"), "\(bare.combined)")
        let unknown = try await Self.lint("func sample() async {\n    usleep(1)   // async-lint: allow naps — why\n}\n")
        #expect(unknown.status == 1 && unknown.stdout.contains("no rule `naps`"), "\(unknown.combined)")
    }

    @Test("the tests themselves pass it (make lint runs it)")
    func suitePasses() async throws {
        let result = try await Subprocess.runAwaiting([try #require(Tools.python.path), Self.script])
        #expect(result.status == 0, "\(result.combined)")
    }
}
