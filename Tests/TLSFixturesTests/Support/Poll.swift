import Foundation
import Testing

/// Waiting for what a test cannot be told about (a file another process writes, a log line, a page it serves): look
/// every `interval`, sleeping in between, so no thread is held.
///
/// The timeout only detects a hang, and the condition is looked at once more after it has passed. On a busy machine a
/// sleeping task can wake long after its deadline (two cores, both pool threads making other tests' keys), and a loop
/// that gives up at the deadline without looking again fails on how fast the machine was, not on what the subject did:
/// a CI rehearsal saw eight Python servers reported as never started, each after its port file had long been written.
enum Poll {
    /// Whether `condition` held, looked at every `interval` until `timeout` has passed, and once after. The last look
    /// comes one `interval` after the deadline was seen: a task starved along with this one (both queued behind a busy
    /// pool, this one resumed first) gets to run before the waiter blames it.
    @discardableResult
    static func until(timeout: TimeInterval, every interval: Duration = .milliseconds(20),
                      _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        // Looks first, whenever the task gets to run, so a wait always looks at least twice: once, and once after.
        while true {
            if try await condition() { return true }
            if ContinuousClock.now >= deadline || Task.isCancelled { break }
            try? await Task.sleep(for: interval)
        }
        try? await Task.sleep(for: interval)
        return try await condition()
    }

    /// `until`, for a wait the test cannot go on without: a condition that never held fails the test, saying what did
    /// not happen. The default minute is a hang detector, not a speed limit.
    static func require(_ what: @autoclosure () -> String, timeout: TimeInterval = 60,
                        every interval: Duration = .milliseconds(20), sourceLocation: SourceLocation = #_sourceLocation,
                        _ condition: () async throws -> Bool) async throws {
        let held = try await until(timeout: timeout, every: interval, condition)
        let bound = timeout >= 1 ? "\(Int(timeout)) s" : "\(Int(timeout * 1000)) ms"
        try #require(held, "\(what()) did not happen within \(bound)", sourceLocation: sourceLocation)
    }
}
