import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM, taken over at once and delivered to an async `wait()`.
///
/// `listen()` before announcing that you are ready, `wait()` after. The take-over is synchronous: `listen()` installs
/// a handler with sigaction, which holds for every thread of the process from the moment it returns, and the handler
/// only writes the signal's number into a pipe (write is async-signal-safe); a thread of this object's reads the pipe
/// and wakes `wait()`. A signal that comes before the reader runs waits in the pipe, and one that comes between
/// `listen()` and `wait()` makes `wait()` return at once: no signal after `listen()` is lost. (Dispatch's signal
/// sources, used before, ignore the signal at once but register their source later on a thread of their own, and a
/// signal in between was lost: `serve` then sat in `wait()` for ever.)
package final class ShutdownSignal: Sendable {
    private struct State {
        var received: Int32? = nil
        var continuation: CheckedContinuation<Int32, Never>? = nil
    }

    private let state = NIOLockedValueBox(State())

    private init() {}

    /// Takes SIGINT and SIGTERM over from now on: both lose their default action for good, so a second one cannot kill
    /// the process while it stops. `signals` is for a test, which takes over signals no one else uses; a process has
    /// one listener (the handler's pipe is the process's).
    package static func listen(to signals: [Int32] = [SIGINT, SIGTERM]) -> ShutdownSignal {
        let listener = ShutdownSignal()
        var ends: [Int32] = [-1, -1]
        // Without a pipe (no descriptor left) the signals keep their default action: they still stop the process.
        guard pipe(&ends) == 0 else { return listener }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // A flood of signals must never block the handler: past the pipe's buffer the extra ones are dropped, and
        // the first is all that counts.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        // Set before the handler can run, and read by it only.
        shutdownSignalPipe = ends[1]
        for number in signals {
            var action = sigaction()
            #if canImport(Darwin)
            // darwin-lint: allow glibc-private — Darwin's own name of sigaction's handler union
            action.__sigaction_u.__sa_handler = shutdownSignalHandler
            #else
            action.__sigaction_handler.sa_handler = shutdownSignalHandler
            #endif
            sigemptyset(&action.sa_mask)
            // Other threads' system calls resume rather than fail with EINTR.
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
        let reader = ends[0]
        let thread = Thread {
            // A process started from a thread that blocks signals (a test's pool thread, say) starts with them
            // blocked: this thread takes them whatever it inherited, so they are delivered here and never stay
            // pending for ever. One that comes before this runs waits as pending, then.
            var taken = sigset_t()
            sigemptyset(&taken)
            for number in signals { sigaddset(&taken, number) }
            pthread_sigmask(SIG_UNBLOCK, &taken, nil)
            var byte: UInt8 = 0
            while true {
                let count = read(reader, &byte, 1)
                if count == 1 { listener.fire(Int32(byte)) }
                if count == 0 || (count < 0 && errno != EINTR) { return }
            }
        }
        thread.name = "tls-fixtures shutdown signal"
        thread.start()
        return listener
    }

    /// The first of the signals since `listen()` (at once, if one came already).
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

/// The pipe `ShutdownSignal`'s handler writes to: a C signal handler captures nothing, so it is a global, set by
/// `listen()` before the handler is installed.
nonisolated(unsafe) private var shutdownSignalPipe: Int32 = -1

/// Only async-signal-safe calls: the number, one byte, into the pipe; errno as it was.
private func shutdownSignalHandler(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(shutdownSignalPipe, &byte, 1)
    errno = saved
}
