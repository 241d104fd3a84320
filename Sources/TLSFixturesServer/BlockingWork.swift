import Foundation
import NIOConcurrencyHelpers
import NIOPosix

/// Where the kit's blocking work runs: never on the cooperative pool, and never on `NIOThreadPool.singleton`, which
/// NIO's own file I/O and the code around ours share. Each kind has threads of its own, so none waits behind another:
///
/// - `Lane.quick` preparation (a key that exists, an EC or RSA-2048 key, reading the store, issuing a leaf): as many
///   threads as cores.
/// - `Lane.slow` preparation (`CertificateStore.slowWork(preparing:)`: an RSA key of 4096 bits or more, a DH group:
///   seconds to a minute of one core each) while fixtures serve: half the cores (at least one), so slow keys never
///   take every core from quick work and the event loops.
/// - `Lane.everyCore`: the catalog's own slow preparation (`serve` on a first run, `tls-fixtures prepare`), where
///   finishing soonest is what matters: as many threads as cores.
/// - `Lane.requested`: a start a control API client waits for (`PreparationLanes`, which also bounds how many slow
///   ones it admits): a quick and a slow lane of their own, as wide as the two above, so a runner's clients never
///   queue behind fixtures the same process prepares through the library (a test process's), nor behind the catalog.
/// - `Lane.nothingToMake`: a preparation that generates nothing (a warm store's scenario): no permit, a thread of its
///   own, so it is never queued behind key generation.
/// - Blocking I/O (a probe's handshakes, which may wait out a timeout without using a core; binding a port; reading
///   the CA): a thread each, so it never queues behind key generation.
///
/// A test process that starts fixtures and probes them from many tests at once used to run all of it on the
/// singleton's threads (one per core): a few probes waiting out timeouts, or one RSA-8192 key, held every one of them,
/// and a fixture that needed a moment of work waited for a minute and more.
///
/// Threads of their own are not cores of their own, though: every lane busy at once is five pools' worth of key
/// generation on two cores, and the fixtures' event loops starve behind it. So all CPU-bound preparation, in every lane,
/// draws from one budget (`CPUBudget.shared`: as many permits as cores, at least two), and slow work may never hold the
/// last permit, so quick work never waits behind slow work; requested work waiting for a permit is admitted before the
/// library's, so the budget keeps `Lane.requested`'s promise too; and probes, which are I/O but each a handshake's
/// worth of CPU, run at most `maximumProbes` at once.
package enum BlockingWork {
    package enum Lane: Sendable {
        case quick, slow, everyCore
        case requested(slow: Bool)
        /// A preparation that generates nothing (`CertificateStore.makesNothing(preparing:)`): it reads the store and
        /// signs a leaf at most. Not CPU-bound, so it takes no permit: a thread of its own, at once, never behind key
        /// generation. A warm store's scenario once waited over 300 s for a permit behind a test process's keys.
        case nothingToMake
    }

    /// `Lane.slow`'s threads: half the cores (at least one).
    package static let slowWidth = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
    private static let coreWidth = max(2, ProcessInfo.processInfo.activeProcessorCount)
    private static let quickPool = started(NIOThreadPool(numberOfThreads: coreWidth))
    private static let slowPool = started(NIOThreadPool(numberOfThreads: slowWidth))
    private static let everyCorePool = started(NIOThreadPool(numberOfThreads: coreWidth))
    private static let requestedQuickPool = started(NIOThreadPool(numberOfThreads: coreWidth))
    private static let requestedSlowPool = started(NIOThreadPool(numberOfThreads: slowWidth))

    private static func started(_ pool: NIOThreadPool) -> NIOThreadPool {
        pool.start()
        return pool
    }

    /// Runs preparation work in `lane`, once the process's CPU budget admits it.
    package static func prepare<T: Sendable>(_ lane: Lane, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if case .nothingToMake = lane { return try await blockingIO(body) }
        let kind = lane.isSlow ? CPUBudget.Kind.slow : .quick
        let priority = lane.isRequested ? CPUBudget.Priority.requested : .library
        await CPUBudget.shared.acquire(kind, priority)
        defer { CPUBudget.shared.release(kind) }
        switch lane {
        case .quick: return try await quickPool.runIfActive(body)
        case .slow: return try await slowPool.runIfActive(body)
        case .everyCore: return try await everyCorePool.runIfActive(body)
        case .requested(slow: false): return try await requestedQuickPool.runIfActive(body)
        case .requested(slow: true): return try await requestedSlowPool.runIfActive(body)
        case .nothingToMake: return try await blockingIO(body)
        }
    }

    /// Runs blocking I/O on a thread of its own.
    package static func blockingIO<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// At most this many probes run at once in a process; more wait their turn (a probe's handshake is a moment of
    /// CPU, and hundreds at once would take the cores from the fixtures they probe).
    package static let maximumProbes = 4 * max(2, ProcessInfo.processInfo.activeProcessorCount)
    private static let probes = AsyncGate(width: maximumProbes)

    /// A probe's blocking handshakes, on a thread of its own, at most `maximumProbes` at once.
    package static func probe<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        await probes.enter()
        defer { probes.leave() }
        return try await blockingIO(body)
    }
}

extension BlockingWork.Lane {
    /// Slow work: an RSA key of 4096 bits or more, a DH group.
    var isSlow: Bool {
        switch self {
        case .quick, .requested(slow: false), .nothingToMake: return false
        case .slow, .everyCore, .requested(slow: true): return true
        }
    }

    /// Work a control API client waits for: the budget admits it before the library's.
    var isRequested: Bool {
        if case .requested = self { return true }
        return false
    }
}

/// The process's budget of CPU-bound preparation: `width` permits (the cores, at least two), one per job running on
/// any lane's pool. Slow jobs hold at most `width - 1`, so a permit is always left for quick work.
///
/// The waiting are admitted in this order, first come, first served within each: requested quick jobs, requested slow
/// ones, then the library's quick jobs and the library's slow ones. Requested work (`Priority.requested`, a start a
/// control API client waits for) so never queues behind the fixtures a test process prepares through the library, as
/// `BlockingWork.Lane.requested` promises; and quick work never queues behind slow work of its own priority. A slow
/// job that cannot be admitted (the slow permits all held) does not hold back quick work behind it. Waiting holds no
/// thread: a job waits as a continuation, not on a pool.
package final class CPUBudget: Sendable {
    package enum Kind: Sendable { case quick, slow }

    /// Whose work it is: a control API client's (`requested`), admitted first, or the library's.
    package enum Priority: Sendable { case requested, library }

    package static let shared = CPUBudget(width: max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// The waiting queues, in the order they are admitted.
    private enum Queue: Int, CaseIterable {
        case requestedQuick, requestedSlow, quick, slow

        init(_ kind: Kind, _ priority: Priority) {
            switch (priority, kind) {
            case (.requested, .quick): self = .requestedQuick
            case (.requested, .slow): self = .requestedSlow
            case (.library, .quick): self = .quick
            case (.library, .slow): self = .slow
            }
        }

        var kind: Kind { self == .requestedQuick || self == .quick ? .quick : .slow }
    }

    private struct State {
        var inUse = 0
        var slowInUse = 0
        var waiting: [Queue: [CheckedContinuation<Void, Never>]] = [:]
        var mostInUse = 0

        func count(_ queue: Queue) -> Int { waiting[queue]?.count ?? 0 }
    }

    /// The permits.
    package let width: Int
    private let state: NIOLockedValueBox<State>

    package init(width: Int) {
        precondition(width >= 2, "a budget needs a permit for quick work beside slow work")
        self.width = width
        state = NIOLockedValueBox(State())
    }

    /// Jobs running now, and of them slow ones; the most that ever ran at once.
    package var usage: (running: Int, slow: Int, most: Int) {
        state.withLockedValue { ($0.inUse, $0.slowInUse, $0.mostInUse) }
    }

    /// The library's jobs waiting for a permit now.
    package var waiting: (quick: Int, slow: Int) {
        state.withLockedValue { ($0.count(.quick), $0.count(.slow)) }
    }

    /// Requested jobs waiting for a permit now.
    package var waitingRequested: (quick: Int, slow: Int) {
        state.withLockedValue { ($0.count(.requestedQuick), $0.count(.requestedSlow)) }
    }

    package func acquire(_ kind: Kind, _ priority: Priority = .library) async {
        let queue = Queue(kind, priority)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLockedValue { state -> Bool in
                // A job waits if it is not admitted now, or if a job that goes before it waits: one of a queue
                // admitted earlier, or of its own. A waiting slow job never holds back a quick one: it waits for a
                // slow permit, and the quick one would take the permit slow work may not.
                let queuedAhead = Queue.allCases.contains { other in
                    other.rawValue <= queue.rawValue && state.count(other) > 0
                        && !(kind == .quick && other.kind == .slow)
                }
                guard Self.admits(kind, state, width: width), !queuedAhead else {
                    state.waiting[queue, default: []].append(continuation)
                    return false
                }
                Self.take(kind, &state)
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    package func release(_ kind: Kind) {
        let woken = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.inUse -= 1
            if kind == .slow { state.slowInUse -= 1 }
            var woken: [CheckedContinuation<Void, Never>] = []
            for queue in Queue.allCases {
                while state.count(queue) > 0, Self.admits(queue.kind, state, width: width) {
                    woken.append(state.waiting[queue]!.removeFirst())
                    Self.take(queue.kind, &state)
                }
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    private static func admits(_ kind: Kind, _ state: State, width: Int) -> Bool {
        state.inUse < width && (kind == .quick || state.slowInUse < width - 1)
    }

    private static func take(_ kind: Kind, _ state: inout State) {
        state.inUse += 1
        if kind == .slow { state.slowInUse += 1 }
        state.mostInUse = max(state.mostInUse, state.inUse)
    }
}

/// At most `width` tasks inside at once; the others wait, in order, as continuations.
package final class AsyncGate: Sendable {
    private let state: NIOLockedValueBox<(inside: Int, waiting: [CheckedContinuation<Void, Never>])>
    private let width: Int

    package init(width: Int) {
        self.width = width
        state = NIOLockedValueBox((0, []))
    }

    package func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLockedValue { state -> Bool in
                guard state.inside < width else {
                    state.waiting.append(continuation)
                    return false
                }
                state.inside += 1
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    package func leave() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.inside -= 1
                return nil
            }
            return state.waiting.removeFirst()   // its permit passes on
        }
        next?.resume()
    }
}
