import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TLSFixturesWire

/// One fixture's connection records: the most recent `capacity` of them in a ring (the oldest is dropped when a new
/// connection arrives at a full ring), so memory stays bounded however many clients come. Shared by the fixture's
/// connections, each of which updates its own record as it goes (`ConnectionRecorder`); readers get copies.
///
/// Readers can wait for a change without polling: every update wakes the waiters, and a waiter's deadline is a task
/// scheduled on an event loop.
package final class ConnectionLog: Sendable {
    private struct State {
        /// Records by `(id - 1) % capacity`; grows to `capacity`, then wraps.
        var ring: [ConnectionRecord] = []
        var nextID = 1
        /// The number the next answered request gets, on any connection (`ConnectionRecord.Request.number`).
        var nextRequest = 1
        /// Bumped by every change; a waiter registers against the version it last read.
        var version = 0
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>?
        var timeout: Scheduled<Void>?
    }

    private let state = NIOLockedValueBox(State())
    /// The most records kept.
    package let capacity: Int

    package init(capacity: Int) {
        precondition(capacity > 0, "FixtureConfiguration.validate() refuses a capacity below 1")
        self.capacity = capacity
    }

    /// Every record kept, oldest first.
    package var records: [ConnectionRecord] { records(after: 0) }

    /// Readers waiting for a change right now (for tests: a change made once this is 1 must wake that reader).
    package var waiterCount: Int { state.withLockedValue { $0.waiters.count } }

    /// The id the next connection gets, less one: a cursor for "everything from now on".
    package var latestID: Int { state.withLockedValue { $0.nextID - 1 } }

    /// The number of the latest answered request, 0 before the first.
    package var latestRequestNumber: Int { state.withLockedValue { $0.nextRequest - 1 } }

    /// Where the log stands now: its latest connection and its latest answered request.
    package var cursor: ConnectionCursor {
        state.withLockedValue { ConnectionCursor(connection: $0.nextID - 1, request: $0.nextRequest - 1) }
    }

    /// The records kept whose id is above `cursor`, oldest first.
    package func records(after cursor: Int) -> [ConnectionRecord] {
        state.withLockedValue { state in Self.records(in: state, after: cursor, capacity: capacity) }
    }

    /// The records kept after `cursor` (`ConnectionCursor.window`), oldest first: connections opened since, and older
    /// ones that answered a request since.
    package func records(after cursor: ConnectionCursor) -> [ConnectionRecord] {
        state.withLockedValue { state in Self.records(in: state, after: cursor, capacity: capacity) }
    }

    private static func records(in state: State, after cursor: Int, capacity: Int) -> [ConnectionRecord] {
        // Any cursor at all (a client's `?after=` is any number): none above the latest, without overflowing.
        guard cursor < state.nextID - 1 else { return [] }
        let first = max(cursor + 1, state.nextID - state.ring.count)
        return (first ..< state.nextID).map { state.ring[($0 - 1) % capacity] }
    }

    private static func records(in state: State, after cursor: ConnectionCursor, capacity: Int) -> [ConnectionRecord] {
        guard cursor.request < state.nextRequest - 1 else { return records(in: state, after: cursor.connection,
                                                                           capacity: capacity) }
        return cursor.window(state.ring.sorted { $0.id < $1.id })
    }

    // MARK: Writing

    /// Starts the record of a connection accepted now from `peer`; returns its id.
    package func open(peer: String, at date: Date = Date()) -> Int {
        change { state in
            let id = state.nextID
            state.nextID += 1
            let record = ConnectionRecord(id: id, acceptedAt: date, peer: peer)
            if state.ring.count < capacity {
                state.ring.append(record)
            } else {
                state.ring[(id - 1) % capacity] = record
            }
            return id
        }
    }

    /// Changes the record `id`, if the ring still holds it; returns the record as changed (nil: no longer held).
    @discardableResult
    package func update(_ id: Int, _ body: (inout ConnectionRecord) -> Void) -> ConnectionRecord? {
        change { state in
            let slot = (id - 1) % capacity
            guard slot < state.ring.count, state.ring[slot].id == id else { return nil }
            body(&state.ring[slot])
            return state.ring[slot]
        }
    }

    private func change<T>(_ body: (inout State) -> T) -> T {
        let (result, woken) = state.withLockedValue { state -> (T, [Waiter]) in
            let result = body(&state)
            state.version += 1
            let woken = Array(state.waiters.values)
            state.waiters.removeAll(keepingCapacity: true)
            return (result, woken)
        }
        for waiter in woken {
            waiter.timeout?.cancel()
            waiter.continuation?.resume()
        }
        return result
    }

    /// Records an answered request on the record `id`, numbering it among the fixture's requests; returns the number
    /// (nil when the ring no longer holds the record, as for a flood that outran it).
    package func answered(_ id: Int, method: String, path: String, status: Int) -> Int? {
        change { state in
            let slot = (id - 1) % capacity
            guard slot < state.ring.count, state.ring[slot].id == id else { return nil }
            let number = state.nextRequest
            state.nextRequest += 1
            if state.ring[slot].requests.count < ConnectionRecord.maximumRecordedRequests {
                // A client chooses the path; keep a record's size bounded whatever it sends.
                state.ring[slot].requests.append(.init(method: String(method.prefix(32)), path: String(path.prefix(512)),
                                                       status: status, number: number))
            }
            state.ring[slot].requestCount += 1
            state.ring[slot].lastRequestNumber = number
            return number
        }
    }

    // MARK: Waiting

    /// Records above `cursor` once `ready` holds for them, or once `deadline` passes (then whatever is there).
    package func records(after cursor: Int, until deadline: NIODeadline,
                         where ready: @Sendable ([ConnectionRecord]) -> Bool) async -> [ConnectionRecord] {
        await records(after: ConnectionCursor(connection: cursor, request: Int.max), until: deadline, where: ready)
    }

    /// Records after `cursor` (`ConnectionCursor.window`) once `ready` holds for them, or once `deadline` passes (then
    /// whatever is there).
    package func records(after cursor: ConnectionCursor, until deadline: NIODeadline,
                         where ready: @Sendable ([ConnectionRecord]) -> Bool) async -> [ConnectionRecord] {
        while true {
            let (records, version) = state.withLockedValue { state in
                (Self.records(in: state, after: cursor, capacity: capacity), state.version)
            }
            if ready(records) || NIODeadline.now() >= deadline || Task.isCancelled { return records }
            await waitForChange(since: version, until: deadline)
        }
    }

    /// Returns at the next change after `version` (at once if there was one), at `deadline`, or when cancelled.
    private func waitForChange(since version: Int, until deadline: NIODeadline) async {
        let token = state.withLockedValue { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLockedValue { state -> Bool in
                    guard state.version == version, !Task.isCancelled else { return false }
                    state.waiters[token] = Waiter(continuation: continuation)
                    return true
                }
                guard registered else {
                    continuation.resume()
                    return
                }
                let timeout = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(deadline: deadline) { [self] in
                    wake(token)
                }
                let fired = state.withLockedValue { state -> Bool in
                    guard state.waiters[token] != nil else { return true }
                    state.waiters[token]?.timeout = timeout
                    return false
                }
                if fired { timeout.cancel() }
            }
        } onCancel: {
            wake(token)
        }
    }

    private func wake(_ token: Int) {
        let waiter = state.withLockedValue { $0.waiters.removeValue(forKey: token) }
        waiter?.timeout?.cancel()
        waiter?.continuation?.resume()
    }
}
