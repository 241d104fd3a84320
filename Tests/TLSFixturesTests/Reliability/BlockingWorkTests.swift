import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import TLSFixtures
@testable import TLSFixturesServer

/// Work that waits on nothing the kit controls, for as long as a test needs: `hold(_:)` occupies `count` threads of
/// `run`'s pool until `release()`, or a minute at most (so a kit that did need those threads fails the test rather
/// than hanging it).
private final class ThreadHold: Sendable {
    private let released = DispatchSemaphore(value: 0)
    private let count: Int
    private let holding = NIOLockedValueBox(0)

    init(_ count: Int, _ run: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.count = count
        for _ in 0..<count {
            run { [released, holding] in
                holding.withLockedValue { $0 += 1 }
                _ = released.wait(timeout: .now() + 60)
                holding.withLockedValue { $0 -= 1 }
            }
        }
    }

    /// Whether every thread was taken within 30 s (awaited, not blocked on: a hold submitted through a task needs the
    /// cooperative thread this runs on).
    func taken() async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while !intact && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        return intact
    }

    /// Whether every thread is still held: false once one let go (released, or its minute ran out).
    var intact: Bool { holding.withLockedValue { $0 } == count }

    func release() { for _ in 0..<count { released.signal() } }
}

extension ReliabilitySuite {
    /// `BlockingWork`: the kit's blocking work keeps off the threads others rely on, and its kinds keep off each other's.
    /// In the reliability process, which runs one test at a time: holding NIO's pool and the slow lane for up to a
    /// minute would stall the parallel run's other tests, and their load would stall this one.
    @Suite("Blocking work: probes and quick preparation wait behind no one")
    struct BlockingWorkTests {
        /// Every thread of NIO's shared blocking pool, and every thread of the slow lane, busy (as a test process making
        /// RSA-8192 keys and waiting on other I/O is): a scenario is still prepared, served and probed. Before
        /// `BlockingWork`, preparation and probes ran on `NIOThreadPool.singleton` and this waited for the hold to end.
        @Test("with NIO's blocking pool and the slow lane held, a fixture is still prepared, started and probed")
        func nothingWaitsBehindOthers() async throws {
            let singleton = ThreadHold(NIOSingletons.blockingPoolThreadCountSuggestion) { work in
                NIOThreadPool.singleton.submit { _ in work() }
            }
            let slow = ThreadHold(BlockingWork.slowWidth) { work in
                Task { try? await BlockingWork.prepare(.slow) { work() } }
            }
            defer {
                singleton.release()
                slow.release()
            }
            // Every thread is taken before the test goes on.
            try #require(try await singleton.taken(), "NIO's blocking pool was not all taken")
            try #require(try await slow.taken(), "the slow lane was not all taken")
            let store = TestEnvironment.suiteStore("BlockingWork")
            let result = try await withFixture("ats-compliant", store: store) { fixture in
                try await TLSProbe(trusting: [fixture.caCertificate]).probe(ProbeTarget(host: "localhost", port: fixture.port))
            }
            #expect(result.failure == nil && result.http?.status == 200, "\(result.failure ?? "")")
            // A hold lets go only when released or after its minute: work that needed those threads finished after that.
            #expect(singleton.intact, "the fixture or the probe waited for NIO's blocking pool")
            #expect(slow.intact, "a quick preparation waited for the slow lane")
        }
    }
}
