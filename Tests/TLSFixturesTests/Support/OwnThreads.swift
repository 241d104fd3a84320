import Foundation
import NIOPosix
import Testing

/// Threads of their own for synchronous tests that block: a test that waits for the CLI, `openssl` or a script it
/// starts (`Subprocess.run`, `TestEnvironment.tlsFixtures`) holds the thread it runs on until the child exits.
///
/// Swift Testing runs synchronous tests on the concurrency pool too, which has one thread per core: two on CI. A CI
/// rehearsal's stack samples found both pool threads in such waits for a minute at a time (the layer graph's
/// `swift package dump-package`, the fake machines of `ensure-deps.sh`, the CLI's duration options), and nothing else
/// in the process ran meanwhile: trivial parsing tests took 125 s, and a fleet's preparation, queued behind them, did
/// not serve within its 300 s hang detector. A suite marked `.ownThreads` runs each of its tests on these threads
/// instead (a task executor preference), so the pool stays free for the async tests and the fixtures they serve.
///
/// `scripts/lint-async-blocking.py` holds every synchronous test that blocks to it: outside such a suite, its blocking
/// calls are findings, like an async test's.
final class OwnThreadsExecutor: TaskExecutor {
    /// Four threads, or two a core: blocking tests mostly wait for children, which do the work.
    static let shared = OwnThreadsExecutor(threads: max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))

    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in
            Thread.current.threadDictionary[Self.marker] = true
            job.runSynchronously(on: executor)
        }
    }

    /// Whether the calling thread is one of these.
    static var isCurrent: Bool { Thread.current.threadDictionary[marker] as? Bool == true }
    private static let marker = "OwnThreadsExecutor"
}

/// `.ownThreads` on a suite (or a test): its tests run on `OwnThreadsExecutor`'s threads, not the concurrency pool's.
struct OwnThreadsTrait: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    /// Each test (each case of a parameterized one) on its own; a suite's scope is its tests'.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreadsTrait? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            try await withTaskExecutorPreference(OwnThreadsExecutor.shared) { try await function() }
        } else {
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the suite's tests (or the test) on threads of their own, which they may block: see `OwnThreadsExecutor`.
    static var ownThreads: Self { OwnThreadsTrait() }
}

/// The trait's own check: a test under it is on one of the executor's threads, and one without it is not.
@Suite("Synchronous tests that block run on threads of their own", .ownThreads)
struct OwnThreadsTests {
    @Test("a synchronous test in an .ownThreads suite runs on the executor's threads")
    func synchronousTestOnOwnThreads() {
        #expect(OwnThreadsExecutor.isCurrent)
    }

    @Test("so does an async one, until it hops elsewhere")
    func asyncTestOnOwnThreads() async {
        #expect(OwnThreadsExecutor.isCurrent)
    }
}

/// The control: without the trait, a synchronous test runs on the concurrency pool.
@Suite("Synchronous tests without .ownThreads run on the concurrency pool")
struct PoolThreadsTests {
    @Test("a synchronous test without the trait is not on the executor's threads")
    func synchronousTestOnThePool() {
        #expect(!OwnThreadsExecutor.isCurrent)
    }
}
