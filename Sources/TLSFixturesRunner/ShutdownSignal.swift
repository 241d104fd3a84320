import Dispatch
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM, delivered through Dispatch so the handler can do async work.
///
/// `listen()` before announcing that you are ready, `wait()` after. Taking a signal over is not instant: the signal is
/// ignored at once, while Dispatch registers its source on a thread of its own a moment later, and a signal that comes
/// in between is lost. `serve` used to take the signals over only after printing its startup report, so a test (or a
/// process manager) that sent SIGINT the moment it read the report could, on a loaded machine, leave `serve` running.
/// A signal that comes between `listen()` and `wait()` is kept: `wait()` then returns at once.
package final class ShutdownSignal: Sendable {
    private struct State {
        var received: Int32? = nil
        var continuation: CheckedContinuation<Int32, Never>? = nil
    }

    /// Keeps the sources alive as long as this object. Unchecked: set once in `listen()`, before the object is
    /// returned to anyone, and never read.
    private final class Sources: @unchecked Sendable {
        var kept: [DispatchSourceSignal] = []
    }

    private let state = NIOLockedValueBox(State())
    private let sources = Sources()

    private init() {}

    /// Takes SIGINT and SIGTERM over from now on: both lose their default action for good, so a second one cannot kill
    /// the process while it stops.
    package static func listen() -> ShutdownSignal {
        let signals = ShutdownSignal()
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { signals.fire(number) }
            source.resume()
            signals.sources.kept.append(source)
        }
        return signals
    }

    /// The first of SIGINT and SIGTERM since `listen()` (at once, if one came already).
    package func wait() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let received = state.withLockedValue { state -> Int32? in
                if state.received == nil { state.continuation = continuation }
                return state.received
            }
            if let received { continuation.resume(returning: received) }
        }
    }

    private func fire(_ number: Int32) {
        let pending = state.withLockedValue { state -> CheckedContinuation<Int32, Never>? in
            guard state.received == nil else { return nil }
            state.received = number
            defer { state.continuation = nil }
            return state.continuation
        }
        pending?.resume(returning: number)
    }
}
