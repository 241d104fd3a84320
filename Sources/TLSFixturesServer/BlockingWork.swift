import Foundation
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
/// - Blocking I/O (a probe's handshakes, which may wait out a timeout without using a core; binding a port; reading
///   the CA): a thread each, so it never queues behind key generation.
///
/// A test process that starts fixtures and probes them from many tests at once used to run all of it on the
/// singleton's threads (one per core): a few probes waiting out timeouts, or one RSA-8192 key, held every one of them,
/// and a fixture that needed a moment of work waited for a minute and more.
package enum BlockingWork {
    package enum Lane: Sendable {
        case quick, slow, everyCore
        case requested(slow: Bool)
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

    /// Runs preparation work in `lane`.
    package static func prepare<T: Sendable>(_ lane: Lane, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        switch lane {
        case .quick: try await quickPool.runIfActive(body)
        case .slow: try await slowPool.runIfActive(body)
        case .everyCore: try await everyCorePool.runIfActive(body)
        case .requested(slow: false): try await requestedQuickPool.runIfActive(body)
        case .requested(slow: true): try await requestedSlowPool.runIfActive(body)
        }
    }

    /// Runs blocking I/O on a thread of its own.
    package static func blockingIO<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result(catching: body)) }
        }
    }
}
