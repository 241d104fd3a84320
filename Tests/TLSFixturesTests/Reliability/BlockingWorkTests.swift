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
    func taken() async -> Bool {
        await Poll.until(timeout: 30, every: .milliseconds(10)) { intact }
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
            try #require(await singleton.taken(), "NIO's blocking pool was not all taken")
            try #require(await slow.taken(), "the slow lane was not all taken")
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

/// `CPUBudget`, as values: permits, the reserve for quick work, and the order of the waiting.
@Suite("One CPU budget: slow work never takes the last permit, quick work goes first")
struct CPUBudgetTests {
    @Test("slow work holds at most width - 1 permits; quick work takes the last; the waiting are admitted in order")
    func permits() async throws {
        let budget = CPUBudget(width: 3)
        await budget.acquire(.slow)
        await budget.acquire(.slow)
        #expect(budget.usage == (running: 2, slow: 2, most: 2))
        // A third slow job waits: the last permit is quick work's.
        let thirdSlow = Task { await budget.acquire(.slow) }
        try await Poll.require("the third slow job waiting", every: .milliseconds(1)) { budget.waiting.slow == 1 }
        await budget.acquire(.quick)
        #expect(budget.usage.running == 3)
        // Full: a quick job and then a slow one wait; when a slow job ends, the quick one goes first.
        let quick = Task { await budget.acquire(.quick) }
        try await Poll.require("the quick job waiting", every: .milliseconds(1)) { budget.waiting.quick == 1 }
        budget.release(.slow)
        await quick.value
        #expect(budget.waiting == (quick: 0, slow: 1), "the quick job was not admitted before the slow one")
        budget.release(.quick)
        await thirdSlow.value
        #expect(budget.usage.slow == 2 && budget.usage.most == 3)
    }

    /// A runner's preparations (`Lane.requested`) go before the library's, as `BlockingWork` promises: a test process
    /// that prepares hundreds of fixtures through the library must not make a control API client's start wait behind
    /// all of them. Before, both drew from one first-come queue per kind.
    @Test("requested work is admitted before the library's: requested quick, requested slow, library quick, library slow")
    func requestedGoesFirst() async throws {
        let budget = CPUBudget(width: 2)
        await budget.acquire(.quick)
        await budget.acquire(.quick)
        // Full. They arrive in the opposite order to the one they are admitted in, each once the one before waits.
        let waiting = { @Sendable in
            budget.waiting.quick + budget.waiting.slow + budget.waitingRequested.quick + budget.waitingRequested.slow
        }
        let librarySlow = Task { await budget.acquire(.slow) }
        try await Poll.require("the library's slow job waiting", every: .milliseconds(1)) { waiting() == 1 }
        let libraryQuick = Task { await budget.acquire(.quick) }
        try await Poll.require("the library's quick job waiting", every: .milliseconds(1)) { waiting() == 2 }
        let requestedSlow = Task { await budget.acquire(.slow, .requested) }
        try await Poll.require("the requested slow job waiting", every: .milliseconds(1)) { waiting() == 3 }
        let requestedQuick = Task { await budget.acquire(.quick, .requested) }
        try await Poll.require("the requested quick job waiting", every: .milliseconds(1)) { waiting() == 4 }

        // A release admits the next job under the budget's lock, before it returns: the counts are read at once, and
        // no task is awaited until the end, so a wrong order fails rather than hangs.
        budget.release(.quick)
        #expect(budget.waitingRequested == (quick: 0, slow: 1) && budget.waiting == (quick: 1, slow: 1),
                "the first permit freed did not go to the requested quick job")
        budget.release(.quick)
        #expect(budget.waitingRequested == (quick: 0, slow: 0) && budget.waiting == (quick: 1, slow: 1),
                "the requested slow job was not admitted before the library's quick one")
        budget.release(.quick)   // the requested quick job ends
        #expect(budget.waiting == (quick: 0, slow: 1), "the library's quick job was not admitted before its slow one")
        // The requested slow job holds the one slow permit of two: the library's slow job waits for it, not for a
        // quick job.
        budget.release(.quick)
        #expect(budget.waiting.slow == 1, "a second slow job took the last permit")
        budget.release(.slow)
        #expect(budget.waiting.slow == 0 && budget.usage == (running: 1, slow: 1, most: 2))
        // Whatever went wrong above, every job is admitted now.
        while waiting() > 0 { budget.release(.slow) }
        for job in [librarySlow, libraryQuick, requestedSlow, requestedQuick] { await job.value }
    }

    /// Only the runner's lane is requested work.
    @Test("BlockingWork's requested lanes, and only they, draw on the budget as requested work")
    func requestedLanes() {
        let lanes: [BlockingWork.Lane] = [.quick, .slow, .everyCore, .requested(slow: false), .requested(slow: true),
                                          .nothingToMake]
        #expect(lanes.map(\.isRequested) == [false, false, false, true, true, false])
        #expect(lanes.map(\.isSlow) == [false, true, true, false, true, false])
    }

}

extension ReliabilitySuite {
    /// Every lane of the process's preparation held by jobs that wait (a test process making RSA-8192 keys in all of
    /// them): the budget admits no more than its permits, keeps one for quick work, and a fixture is still prepared,
    /// started and probed. Before the budget every lane ran as wide as its pool, five pools on two cores.
    @Suite("One CPU budget across every lane")
    struct CPUBudgetLiveTests {
        @Test("with every lane busy, at most the budget runs, a quick preparation still runs, a fixture still answers")
        func everyLaneBusy() async throws {
            let budget = CPUBudget.shared
            let release = DispatchSemaphore(value: 0)
            let started = NIOLockedValueBox(0)
            var jobs: [Task<Void, Never>] = []
            for lane in [BlockingWork.Lane.slow, .everyCore, .requested(slow: true), .slow, .everyCore] {
                for _ in 0..<budget.width {
                    jobs.append(Task {
                        _ = try? await BlockingWork.prepare(lane) {
                            started.withLockedValue { $0 += 1 }
                            // async-lint: allow process-wait — a BlockingWork pool thread, the one the test holds
                            _ = release.wait(timeout: .now() + 120)
                        }
                    })
                }
            }
            defer {
                for _ in jobs { release.signal() }
            }
            // Admitted is not yet started (the body runs on a pool thread a moment later): wait for both, then for
            // a job held back, so a busy scheduler cannot make the count read early.
            try await Poll.require("a full budget with a slow job held back", every: .milliseconds(1)) {
                budget.usage.slow == budget.width - 1 && started.withLockedValue { $0 } >= budget.width - 1
                    && budget.waiting.slow > 0
            }
            #expect(started.withLockedValue { $0 } == budget.width - 1, "more slow jobs ran than the budget allows")
            let store = TestEnvironment.suiteStore("CPUBudget")
            let result = try await withFixture("ats-compliant", store: store) { fixture in
                try await TLSProbe(trusting: [fixture.caCertificate]).probe(ProbeTarget(host: "localhost",
                                                                                     port: fixture.port))
            }
            #expect(result.failure == nil && result.http?.status == 200, "\(result.failure ?? "")")
            #expect(budget.usage.most <= budget.width, "the budget ran \(budget.usage.most) jobs at once")
            for _ in jobs { release.signal() }
            for job in jobs { await job.value }
            #expect(budget.usage.running == 0 && budget.waiting == (quick: 0, slow: 0)
                        && budget.waitingRequested == (quick: 0, slow: 0))
        }

        /// A warm store's scenario generates nothing: it reads the store and signs a leaf at most, so it takes no
        /// permit and never queues behind other work's keys. In a CI rehearsal (ci25, under ASan, beside another run),
        /// a fleet's preparation of ats-compliant from a store that had its key waited over 300 s for a permit behind
        /// the test process's key generation, and its readiness test failed.
        @Test("with every permit held, a scenario whose keys exist is still prepared: it takes no permit")
        func warmStoreTakesNoPermit() async throws {
            let budget = CPUBudget.shared
            let store = TestEnvironment.suiteStore("CPUBudgetWarm")
            let scenario = try ScenarioCatalog.builtIn.scenario(named: "ats-compliant")
            // The control: on a fresh store it makes a key, and goes through the budget.
            #expect(!store.makesNothing(preparing: scenario), "a fresh store already had ats-compliant's key")
            _ = try await FixtureServer.prepare(scenario, store: store)
            #expect(store.makesNothing(preparing: scenario), "ats-compliant still makes something once prepared")

            let release = DispatchSemaphore(value: 0)
            let started = NIOLockedValueBox(0)
            var jobs: [Task<Void, Never>] = []
            for _ in 0..<budget.width {
                jobs.append(Task {
                    _ = try? await BlockingWork.prepare(.quick) {
                        started.withLockedValue { $0 += 1 }
                        // async-lint: allow process-wait — a BlockingWork pool thread, the one the test holds
                        _ = release.wait(timeout: .now() + 120)
                    }
                })
            }
            defer {
                for _ in jobs { release.signal() }
            }
            try await Poll.require("every permit held", every: .milliseconds(1)) {
                budget.usage.running == budget.width && started.withLockedValue { $0 } == budget.width
            }
            // Quick work that does make something waits now…
            let quickRan = NIOLockedValueBox(false)
            let quick = Task { _ = try? await BlockingWork.prepare(.quick) { quickRan.withLockedValue { $0 = true } } }
            try await Poll.require("a quick job waiting for a permit", every: .milliseconds(1)) {
                budget.waiting.quick == 1
            }
            // …and the warm preparation does not. A minute only detects that it waited for a permit after all.
            let prepared = NIOLockedValueBox<PreparedScenario?>(nil)
            let preparing = Task {
                let made = try await FixtureServer.prepare(scenario, store: store)
                prepared.withLockedValue { $0 = made }
            }
            try await Poll.require("the warm preparation, with every permit held") {
                prepared.withLockedValue { $0 } != nil
            }
            #expect(!quickRan.withLockedValue { $0 }, "a quick job ran while every permit was held")
            #expect(budget.usage.running == budget.width, "the warm preparation took a permit")
            for _ in jobs { release.signal() }
            for job in jobs { await job.value }
            await quick.value
            try await preparing.value
            #expect(quickRan.withLockedValue { $0 })
        }
    }
}
