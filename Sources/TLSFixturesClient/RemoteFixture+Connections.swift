import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TLSFixturesWire

extension RemoteFixture {
    /// What the fixture saw of its connections after `cursor` (an id; 0: every one it keeps, its last 64), oldest
    /// first: the client's ClientHello, how the handshake ended, whether it came through the runner's proxy and for
    /// which name, the requests answered. With a `wait` (seconds, at most `FixtureAPI.maximumConnectionWait`), the
    /// runner answers once one of them has settled (closed, or answered a request), or when `wait` has passed: a test
    /// waits for the connection its load caused without polling, as with the in-process
    /// `FixtureServer.connections(after:wait:)`. They stay readable after `stop()` (or the lease's end) for a while: the
    /// runner keeps the records of its last `FixtureAPI.keptStoppedFixtures` stopped fixtures, so teardown can read them.
    ///
    /// ```swift
    /// let cursor = try await fixture.latestConnectionID()
    /// _ = try? await session.data(from: fixture.qualifiedURL)
    /// let records = try await fixture.connections(after: cursor, wait: 2)
    /// ```
    public func connections(after cursor: Int = 0, wait: TimeInterval = 0) async throws -> [ConnectionRecord] {
        try await connectionList(after: cursor, wait: wait).connections
    }

    /// The id of the fixture's latest connection (0 before the first): pass it as `after:` to see only what comes next.
    public func latestConnectionID() async throws -> Int {
        try await connectionList(after: Int.max, wait: 0).latestID
    }

    func connectionList(after cursor: Int, wait: TimeInterval) async throws -> ConnectionList {
        try await runner.connectionList(path: "\(FixtureAPI.fixturesPath)/\(id)", after: cursor, wait: wait)
    }

    /// Runs `load` and passes only if the client refused this fixture: `load` threw, a connection from it reached the
    /// fixture (the runner's records say so), and it ended without a request being answered. When `checkingReason`
    /// (the default) and the scenario says what its refusing clients object to (`scenario.expect.refusal`), the alert
    /// and Apple's error code must agree with it too. Otherwise it throws a `LoadExpectationFailure` saying what
    /// happened instead: the client never reached the fixture (with the error it threw: a name that did not resolve
    /// because the proxy was not used, say), it accepted the certificate (`GET /` was answered 200), it refused for
    /// another reason. The same judge as the in-process `FixtureServer.expectRefused` (`LoadJudge`).
    ///
    /// ```swift
    /// try await fixture.expectRefused { try await session.data(from: fixture.qualifiedURL) }
    /// ```
    ///
    /// `wait` bounds how long, after `load` returns, the runner waits for the fixture to see the connection end.
    /// Connections from other clients of the same fixture in the meantime count as this load's.
    public func expectRefused<T>(checkingReason: Bool = true, wait: TimeInterval = 5,
                                 isolation: isolated (any Actor)? = #isolation,
                                 _ load: () async throws -> T) async throws {
        let cursor = try await latestConnectionID()
        var thrown: Error?
        do { _ = try await load() } catch { thrown = error }
        let records = try await connections(after: cursor, wait: wait)
        if let failure = judge(checkingReason: checkingReason).refused(thrown: thrown, records: records) {
            throw failure
        }
    }

    /// Runs `load` and returns its value if the client accepted this fixture: `load` returned and the fixture answered
    /// a request of it. Otherwise it throws a `LoadExpectationFailure` saying what happened instead.
    ///
    /// ```swift
    /// let (data, _) = try await fixture.expectAccepted { try await session.data(from: fixture.qualifiedURL) }
    /// ```
    @discardableResult
    public func expectAccepted<T>(wait: TimeInterval = 5, isolation: isolated (any Actor)? = #isolation,
                                  _ load: () async throws -> T) async throws -> T {
        let cursor = try await latestConnectionID()
        let result: Result<T, Error>
        do { result = .success(try await load()) } catch { result = .failure(error) }
        let records = try await connections(after: cursor, wait: wait)
        var thrown: Error?
        if case .failure(let error) = result { thrown = error }
        if let failure = judge(checkingReason: false).accepted(thrown: thrown, records: records) { throw failure }
        return try result.get()
    }

    /// The judge of loads against this fixture.
    func judge(checkingReason: Bool) -> LoadJudge {
        LoadJudge(scenario: scenario.name, target: "\(url.host ?? "localhost"):\(port)",
                  expectation: checkingReason ? scenario.expect.refusal : nil)
    }
}

extension RemoteFixtures {
    /// The connection records of the catalog scenario `name` on its fixed port (`serve`'s own fixture of it), as
    /// `RemoteFixture.connections(after:wait:)` gives a started fixture's, with the cursor for what comes next.
    public func connections(scenario name: String, after cursor: Int = 0, wait: TimeInterval = 0) async throws
        -> ConnectionList
    {
        let allowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))
        let segment = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
        return try await connectionList(path: "\(FixtureAPI.scenariosPath)/\(segment)", after: cursor, wait: wait)
    }

    func connectionList(path: String, after cursor: Int, wait: TimeInterval) async throws -> ConnectionList {
        let seconds = min(max(wait, 0), TimeInterval(FixtureAPI.maximumConnectionWait))
        let query = "?after=\(max(cursor, 0))&wait=\(String(format: "%.3f", seconds))"
        return try await call("GET", path + "/" + FixtureAPI.connectionsSegment + query, expecting: 200,
                              timeout: requestTimeout + seconds)
    }
}
