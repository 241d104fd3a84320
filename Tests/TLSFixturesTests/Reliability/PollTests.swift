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
}
