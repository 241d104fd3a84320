import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits for SIGINT or SIGTERM, delivered through Dispatch so the handler can do async work.
package enum ShutdownSignal {
    /// The first of SIGINT and SIGTERM to come. Both lose their default action for good, so a second one cannot kill
    /// the process while it stops.
    package static func wait() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let box = SignalSources(continuation: continuation)
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { box.fire(number) }
                source.resume()
                box.keep(source)
            }
        }
    }

    private final class SignalSources: @unchecked Sendable {
        private let lock = NSLock()
        private var sources: [DispatchSourceSignal] = []
        private var continuation: CheckedContinuation<Int32, Never>?

        init(continuation: CheckedContinuation<Int32, Never>) { self.continuation = continuation }

        func keep(_ source: DispatchSourceSignal) { lock.lock(); sources.append(source); lock.unlock() }

        func fire(_ number: Int32) {
            lock.lock()
            let pending = continuation
            continuation = nil
            lock.unlock()
            pending?.resume(returning: number)
        }
    }
}
