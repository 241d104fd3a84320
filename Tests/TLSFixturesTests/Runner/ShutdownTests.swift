import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner
import TLSFixturesCLISupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 35, item 7: `serve` stops on every SIGTERM, and never outlives the test process that started it.
@Suite("serve stops: every signal taken, and never left behind")
struct ShutdownTests {
    /// Dispatch's signal sources ignored the signal at once and registered their source later, on a thread of their
    /// own: a signal in between was lost, and `serve` sat in `wait()` for ever. Taken over synchronously, a signal
    /// raised the moment `listen()` returns is the one `wait()` returns. SIGUSR2 stands for SIGTERM: nothing else in
    /// the test process uses it, and this process keeps running after.
    @Test("a signal raised the moment listen() returns is not lost")
    func signalRightAfterListen() async throws {
        let listener = ShutdownSignal.listen(to: [SIGUSR2])
        // To the process, as `kill` sends SIGTERM (raise() would aim at this thread: a pool thread, which blocks
        // signals).
        kill(getpid(), SIGUSR2)
        let received = NIOLockedValueBox<Int32?>(nil)
        Task {
            let number = await listener.wait()
            received.withLockedValue { $0 = number }
        }
        // A hang detector: the handler has run by the time kill() returns, or soon after on another thread.
        await Poll.until(timeout: 30, every: .milliseconds(10)) { received.withLockedValue { $0 } != nil }
        #expect(received.withLockedValue { $0 } == SIGUSR2, "the signal raised right after listen() was lost")
    }

    /// One crashed test process once left seven `serve`s behind, one making keys at 80 % of a core for ten minutes.
    /// A shell stands for the test process here: it starts `serve` as its child with the test hook naming it (as
    /// TestEnvironment.childEnvironment names this process), waits until it serves, and then dies as a crash would
    /// (SIGKILL). Started as the README recipes are (`ReadmeRecipeTests.shell`): Foundation's Process would not see the
    /// shell exit while a `serve` it left holds what it inherited, and this test must end when its subject breaks.
    @Test("a serve whose test process dies stops too")
    func childDiesWithParent() async throws {
        let base = try ServeEndToEndTests.freePortBase()
        let scratch = TestEnvironment.temporaryDirectory("orphan")
        let log = scratch.appendingPathComponent("log")
        let pidFile = scratch.appendingPathComponent("pid")
        let store = TestEnvironment.sharedStoreDirectory.path
        // The wait for serve is a hang detector (5 minutes, in tenths of a second).
        let script = """
            \(TestHooks.parentVariable)=$$ \(ShellWord.quoted(TestEnvironment.cli)) serve expired --port-base \(base) \
              --dir \(ShellWord.quoted(store)) > log 2>&1 &
            echo $! > pid
            i=0
            until grep -q 'Ctrl-C to stop' log || [ $i -ge 3000 ]; do sleep 0.1; i=$((i + 1)); done
            kill -9 $$
            """
        var servePID: pid_t = 0
        defer { if servePID > 0 { kill(servePID, SIGKILL) } }
        let parent = try await ReadmeRecipeTests.shell(script, environment: TestEnvironment.childEnvironmentOverrides,
                                                       in: scratch)
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(parent.status == 128 + SIGKILL, "the parent did not die as a crash would: \(parent.output)")
        try #require(output.contains("Ctrl-C to stop"), "serve did not start: \(output)\n\(parent.output)")
        servePID = try #require(pid_t(String(decoding: try Data(contentsOf: pidFile), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))

        // A hang detector: serve looks for its parent five times a second and then stops as on SIGTERM.
        await Poll.until(timeout: 60, every: .milliseconds(50)) { !Self.runs(servePID) && !Ports.accepts(base) }
        let after = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(!Self.runs(servePID), "serve outlived the process that started it: \(after)")
        #expect(!Ports.accepts(base), "serve's dashboard still answers after its parent died")
        #expect(after.contains("the test process that started this one") && after.contains("SIGTERM: stopping"),
                "serve did not say why it stopped, or did not stop as on SIGTERM: \(after)")
    }

    /// Whether `pid` is a process that runs: not gone, and not a zombie nobody has reaped yet (an orphan's new parent
    /// may be slow to, or in a container never do it).
    static func runs(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        #if os(Linux)
        // darwin-lint: allow proc — under os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
        #else
        return true
        #endif
    }
}
