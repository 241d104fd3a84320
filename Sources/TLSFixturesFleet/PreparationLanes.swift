import Foundation
import TLSFixturesServer

/// Where the control API's starts are prepared: two lanes, so a start that needs no slow key never waits behind one
/// that does.
///
/// - The slow lane: a start that must make an RSA key of 4096 bits or more, or a DH group
///   (`CertificateStore.slowWork(preparing:)`: seconds to a minute of one core each), on threads of its own
///   (`BlockingWork.Lane.requested(slow: true)`, half the cores). At most `Options.maximumSlowStarts` such starts
///   are admitted (running or queued); one more is refused at once with `FleetError.busy` (the front door asks the
///   client to retry later) instead of queueing for minutes.
/// - The quick lane: everything else (an EC or RSA-2048 key, issuing a leaf), on threads of its own too
///   (`BlockingWork.Lane.requested(slow: false)`); a start that generates nothing (every key exists) takes no CPU
///   permit at all (`BlockingWork.Lane.nothingToMake`).
///
/// Neither is where the catalog's own background preparation runs on a first run, nor where fixtures started through
/// the library in the same process are prepared.
/// The threads are the process's (key generation competes for the same cores whichever fleet asks); the admission
/// count is the fleet's, in its state (`FleetState.slowStarts`).
package struct PreparationLanes: Sendable {
    /// What the slow lane does with a start, in order (a test waits on these rather than on time).
    package enum Event: Sendable, Equatable {
        /// Counted against `maximumSlowStarts`; queued until a slow thread is free.
        case admitted(scenario: String)
        /// Making its key now.
        case started(scenario: String)
        /// Done, made or failed; its place is free.
        case finished(scenario: String)
    }

    let maximumSlowStarts: Int
    private let observer: (@Sendable (Event) -> Void)?

    init(maximumSlowStarts: Int, observer: (@Sendable (Event) -> Void)?) {
        self.maximumSlowStarts = maximumSlowStarts
        self.observer = observer
    }

    /// Runs `body` in the slow lane when `slow`, else in the quick one. A slow start is counted by `admit` (given the
    /// limit; false: refused) and `finish`; past the limit it throws `FleetError.busy` at once; one still queued when
    /// `stopping` turns true is dropped with `FleetError.stopping`, never made for nobody. One already making its key
    /// is abandoned, not waited for (OpenSSL cannot be interrupted), and refused when it is made.
    func run<T: Sendable>(
        slow: Bool, makesNothing: Bool = false, scenario: String, admit: (Int) -> Bool, finish: () -> Void,
        stopping: @escaping @Sendable () -> Bool, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        guard slow else { return try await BlockingWork.prepare(makesNothing ? .nothingToMake : .requested(slow: false), body) }
        let limit = maximumSlowStarts
        guard admit(limit) else { throw FleetError.busy(limit) }
        observer?(.admitted(scenario: scenario))
        defer {
            finish()
            observer?(.finished(scenario: scenario))
        }
        let observer = observer
        return try await BlockingWork.prepare(.requested(slow: true)) {
            if stopping() { throw FleetError.stopping }
            observer?(.started(scenario: scenario))
            let made = try body()
            // Made after the fleet stopped (abandoned): nothing may start listening for it now.
            if stopping() { throw FleetError.stopping }
            return made
        }
    }
}
