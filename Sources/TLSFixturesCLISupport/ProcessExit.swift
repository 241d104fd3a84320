import Foundation

/// A child's exit, as a flag a thread can wait on and a continuation a task can await: set once, by the process's
/// termination handler. `tls-fixtures report`'s command loads await it; the tests' subprocesses use it too.
package final class ProcessExit: @unchecked Sendable {
    package init() {}

    private let condition = NSCondition()
    private var done = false
    private var waiters: [UUID: CheckedContinuation<Bool, Never>] = [:]

    /// Whether the child has exited (its termination handler has run).
    package var isFinished: Bool {
        condition.lock()
        defer { condition.unlock() }
        return done
    }

    package func finish() {
        condition.lock()
        done = true
        let resumed = waiters
        waiters.removeAll()
        condition.broadcast()
        condition.unlock()
        for continuation in resumed.values { continuation.resume(returning: true) }
    }

    /// Blocks until the exit or `deadline`; whether it exited.
    package func wait(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !done {
            if !condition.wait(until: deadline) { return done }
        }
        return true
    }

    /// Awaits the exit for up to `seconds`; whether it exited. Holds no thread meanwhile.
    package func finished(within seconds: TimeInterval) async -> Bool {
        let id = UUID()
        var timer: Task<Void, Never>?
        let exited = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            condition.lock()
            if done {
                condition.unlock()
                continuation.resume(returning: true)
                return
            }
            waiters[id] = continuation
            condition.unlock()
            // Started once the continuation is registered, so an early expiry cannot miss it.
            if seconds.isFinite {
                let nanoseconds = UInt64(max(0, min(seconds, 86_400)) * 1_000_000_000)
                timer = Task {
                    try? await Task.sleep(nanoseconds: nanoseconds)
                    self.expire(id)
                }
            }
        }
        timer?.cancel()
        return exited
    }

    private func expire(_ id: UUID) {
        condition.lock()
        let continuation = waiters.removeValue(forKey: id)
        condition.unlock()
        continuation?.resume(returning: false)
    }
}
