import Foundation
import NIOCore
import TLSFixturesWire

extension FixtureServer {
    /// What the fixture saw of its most recent connections (`FixtureConfiguration.connectionRecordLimit`, 64 by
    /// default), oldest first: the client's ClientHello, how the handshake ended, the requests answered.
    public var connections: [ConnectionRecord] { log.records }

    /// The id of the latest connection, 0 before the first: pass it as `after:` to see only what comes next.
    public var latestConnectionID: Int { log.latestID }

    /// The records of connections after `cursor` (an id), oldest first, once one of them is settled (closed, or
    /// answered a request), or when `wait` has passed, whichever comes first; with no `wait`, at once. No polling:
    /// every change to a record wakes the wait.
    ///
    /// ```swift
    /// let cursor = fixture.latestConnectionID
    /// _ = try? await session.data(from: fixture.url)
    /// let records = await fixture.connections(after: cursor, wait: .seconds(2))
    /// ```
    public func connections(after cursor: Int, wait: Duration = .zero) async -> [ConnectionRecord] {
        await log.records(after: cursor, until: Self.deadline(after: wait)) { records in
            records.contains(where: \.isSettled)
        }
    }

    /// Runs `load` and passes only if the client refused this fixture: `load` threw, a connection from it reached the
    /// fixture, and it ended without a request being answered. When `checkingReason` (the default) and the scenario
    /// says what its refusing clients object to (`expect.refusal`), the alert that ended the handshake and Apple's
    /// error code must agree with it too. Otherwise it throws a `LoadExpectationFailure` saying what happened instead —
    /// the client never reached the fixture (and the error it threw), it accepted the certificate (`GET /` was answered
    /// 200), it refused for another reason (`unknown_ca(48)`: the CA is not trusted), …
    ///
    /// ```swift
    /// try await fixture.expectRefused { try await URLSession.shared.data(from: fixture.url) }
    /// ```
    ///
    /// `wait` bounds how long to wait, after `load` returns, for the fixture to see the connection end. Connections
    /// from other clients of the same fixture in the meantime count as this load's.
    public func expectRefused<T>(checkingReason: Bool = true, wait: Duration = .seconds(5),
                                 isolation: isolated (any Actor)? = #isolation,
                                 _ load: () async throws -> T) async throws {
        let cursor = latestConnectionID
        var thrown: Error?
        do { _ = try await load() } catch { thrown = error }
        let records = await log.records(after: cursor, until: Self.deadline(after: wait)) { records in
            records.contains { $0.requestCount > 0 } || (!records.isEmpty && records.allSatisfy { $0.endedAt != nil })
        }
        if let failure = judge(checkingReason: checkingReason).refused(thrown: thrown, records: records) {
            throw failure
        }
    }

    /// Runs `load` and returns its value if the client accepted this fixture: `load` returned and the fixture answered
    /// a request of it. Otherwise it throws a `LoadExpectationFailure` saying what happened instead (the client
    /// refused, with the alert it sent; it never reached the fixture; the answer came from somewhere else).
    ///
    /// ```swift
    /// let (data, _) = try await fixture.expectAccepted { try await session.data(from: fixture.url) }
    /// ```
    @discardableResult
    public func expectAccepted<T>(wait: Duration = .seconds(5), isolation: isolated (any Actor)? = #isolation,
                                  _ load: () async throws -> T) async throws -> T {
        let cursor = latestConnectionID
        let result: Result<T, Error>
        do { result = .success(try await load()) } catch { result = .failure(error) }
        let records = await log.records(after: cursor, until: Self.deadline(after: wait)) { records in
            records.contains { $0.requestCount > 0 } || (!records.isEmpty && records.allSatisfy { $0.endedAt != nil })
        }
        var thrown: Error?
        if case .failure(let error) = result { thrown = error }
        if let failure = judge(checkingReason: false).accepted(thrown: thrown, records: records) { throw failure }
        return try result.get()
    }

    /// The judge of loads against this fixture.
    package func judge(checkingReason: Bool) -> LoadJudge {
        LoadJudge(scenario: scenario.name, target: "\(Self.urlHost(listeningOn: boundAddresses)):\(port)",
                  expectation: checkingReason ? scenario.expect.refusal : nil)
    }

    package static func deadline(after wait: Duration) -> NIODeadline {
        let (seconds, attoseconds) = wait.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        return .now() + .nanoseconds(min(nanoseconds, 86_400 * 1_000_000_000))
    }
}
