import Foundation
import NIOConcurrencyHelpers
import Testing

/// `Poll.until` is how tests wait for what they cannot be told about; its timeout must only ever detect a hang.
@Suite("Poll: a wait whose deadline only detects a hang")
struct PollTests {
    /// What a starved task sees: it looked once, slept, and woke after its deadline. It must look once more, and a
    /// sleep longer than the timeout makes that happen here every time, whatever the machine's speed.
    @Test("a condition that came true while the waiter slept past its deadline is seen, not reported as a time-out")
    func looksOnceMoreAfterTheDeadline() async {
        let looks = NIOLockedValueBox(0)
        let held = await Poll.until(timeout: 0.05, every: .milliseconds(300)) {
            looks.withLockedValue { count in
                count += 1
                return count >= 2
            }
        }
        #expect(held, "the wait gave up at its deadline without looking again")
        #expect(looks.withLockedValue { $0 } == 2)
    }

    @Test("a condition that never holds ends the wait at its deadline with false, having looked more than once")
    func endsAtTheDeadline() async {
        let looks = NIOLockedValueBox(0)
        let held = await Poll.until(timeout: 0.2, every: .milliseconds(10)) {
            looks.withLockedValue { $0 += 1 }
            return false
        }
        #expect(!held)
        #expect(looks.withLockedValue { $0 } >= 2)
    }

    /// The waiter that woke past its deadline may have been queued behind the very task it waits for: before it blames
    /// that task, it sleeps once more, so the task gets to run. Task.sleep never returns early, so the gap is a bound
    /// the machine's speed cannot break.
    @Test("past the deadline, the last look comes one interval later, not at once")
    func lastLookAfterOneMoreInterval() async throws {
        let looks = NIOLockedValueBox<[ContinuousClock.Instant]>([])
        let held = await Poll.until(timeout: 0, every: .milliseconds(200)) {
            looks.withLockedValue { $0.append(.now) }
            return false
        }
        let seen = looks.withLockedValue { $0 }
        #expect(!held)
        try #require(seen.count == 2, "looked \(seen.count) times")
        #expect(seen[1] - seen[0] >= .milliseconds(200), "the last look came \(seen[1] - seen[0]) after the first")
    }

    @Test("require returns once the condition holds, and otherwise fails the test saying what did not happen")
    func requireNamesWhatDidNotHappen() async throws {
        let looks = NIOLockedValueBox(0)
        try await Poll.require("the third look", every: .milliseconds(1)) {
            looks.withLockedValue { count in
                count += 1
                return count == 3
            }
        }
        #expect(looks.withLockedValue { $0 } == 3)
        try await withKnownIssue {
            try await Poll.require("the thing", timeout: 0.05) { false }
        } matching: { issue in
            issue.comments.contains { $0.rawValue == "the thing did not happen within 50 ms" }
        }
    }
}
