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

    /// Where the fixture's records stand now, its latest connection and its latest answered request: pass it as
    /// `after:` to see only what comes next, requests on connections kept alive from before included.
    public func cursor() async throws -> ConnectionCursor {
        try await connectionList(after: ConnectionCursor(connection: Int.max, request: Int.max), wait: 0).cursor
    }

    /// The records after `cursor` (connections opened since, and older ones that answered a request since), oldest
    /// first, once one has settled or `wait` has passed.
    public func connections(after cursor: ConnectionCursor, wait: TimeInterval = 0) async throws -> [ConnectionRecord] {
        try await connectionList(after: cursor, wait: wait).connections
    }

    func connectionList(after cursor: Int, wait: TimeInterval) async throws -> ConnectionList {
        try await runner.connectionList(path: "\(FixtureAPI.fixturesPath)/\(id)", after: cursor, wait: wait)
    }

    func connectionList(after cursor: ConnectionCursor, wait: TimeInterval) async throws -> ConnectionList {
        try await runner.connectionList(path: "\(FixtureAPI.fixturesPath)/\(id)", after: cursor, wait: wait)
    }

    /// Runs `load` and passes only if the client refused this fixture, as far as one fixture, which other clients may
    /// share, can show it: `load` threw, one connection from it reached the fixture, and it ended at the scenario's step
    /// (`scenario.expect.refusal.step`: an alert or a close after the server's certificate, for `expired`) without a
    /// request. When `checkingReason` (the default), the alert must agree with the scenario's too. The same judge as
    /// the in-process `FixtureServer.expectRefused` (`LoadJudge`).
    ///
    /// It fails, with a `LoadExpectationFailure` saying what happened instead, when the client never reached the
    /// fixture (its error says so: a name that did not resolve because the proxy was not used, a proxy that refused),
    /// accepted it (`GET /` was answered 200), refused at another step or for another reason, when several connections
    /// arrived and nothing says which was this load's (`ambiguous`), and when the handshake completed and closed
    /// without a request (`unproven`). The differential form, `RemoteFixtures.expectRefused("NAME") { url in … }`,
    /// proves more: it loads the scenario's control too, on fixtures of its own.
    ///
    /// ```swift
    /// try await fixture.expectRefused { try await session.data(from: fixture.qualifiedURL) }
    /// ```
    ///
    /// `wait` bounds how long, after `load` returns, the runner waits for the fixture to see the connection end.
    public func expectRefused<T>(checkingReason: Bool = true, wait: TimeInterval = 5,
                                 isolation: isolated (any Actor)? = #isolation,
                                 _ load: () async throws -> T) async throws {
        let cursor = try await self.cursor()
        var thrown: Error?
        do { _ = try await load() } catch { thrown = error }
        let records = try await settledRecords(after: cursor, thrown: thrown, wait: wait)
        if let failure = judge(checkingReason: checkingReason).refused(thrown: thrown, records: records,
                                                                       cursor: cursor) {
            throw failure
        }
    }

    /// Runs `load` and returns its value if the client accepted this fixture: `load` returned and the fixture answered
    /// a request of it. When `load` returns URLSession's `(Data, URLResponse)` (or a `URLResponse`), the answer's
    /// `X-TLS-Fixture-Request` stamp must name a request this fixture answered after the check began, so an answer
    /// from a cache, a mock or another fixture fails it; otherwise one connection alone must have answered. A request
    /// on a connection kept alive from an earlier load counts. Otherwise it throws a `LoadExpectationFailure`.
    ///
    /// ```swift
    /// let (data, _) = try await fixture.expectAccepted { try await session.data(from: fixture.qualifiedURL) }
    /// ```
    @discardableResult
    public func expectAccepted<T>(wait: TimeInterval = 5, isolation: isolated (any Actor)? = #isolation,
                                  _ load: () async throws -> T) async throws -> T {
        let cursor = try await self.cursor()
        let result: Result<T, Error>
        do { result = .success(try await load()) } catch { result = .failure(error) }
        var thrown: Error?
        var value: Any?
        switch result {
        case .success(let returned): value = returned
        case .failure(let error): thrown = error
        }
        let records = try await settledRecords(after: cursor, thrown: thrown, wait: wait)
        if let failure = judge(checkingReason: false).accepted(thrown: thrown, value: value, records: records,
                                                               cursor: cursor, port: port) {
            throw failure
        }
        return try result.get()
    }

    /// The records after `cursor` once they say how the load went (`LoadJudge.hasSettled`), or when `wait` has passed;
    /// at once when the load's error says it made no connection. The runner wakes on every change of a record, so this
    /// asks again only after a change that did not settle them.
    func settledRecords(after cursor: ConnectionCursor, thrown: Error?, wait: TimeInterval) async throws
        -> [ConnectionRecord]
    {
        let wait = thrown.map(LoadJudge.madeNoConnection) == true ? 0 : wait
        let deadline = Date().addingTimeInterval(wait)
        var records = try await connections(after: cursor, wait: 0)
        while !LoadJudge.hasSettled(records, after: cursor), case let left = deadline.timeIntervalSinceNow, left > 0 {
            records = try await connections(after: cursor, wait: left)
            if LoadJudge.hasSettled(records, after: cursor) { break }
            // The runner answered at the first settled record (one connection of several may settle first): look
            // again shortly rather than at once, so a connection still in its handshake gets the time to end.
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return records
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
        try await connectionList(path: path, query: "after=\(max(cursor, 0))", wait: wait)
    }

    /// With a request cursor too (`requestsAfter`), so kept-alive connections that answered since are listed.
    func connectionList(path: String, after cursor: ConnectionCursor, wait: TimeInterval) async throws
        -> ConnectionList
    {
        try await connectionList(path: path, query: "after=\(max(cursor.connection, 0))&requestsAfter="
                                     + "\(max(cursor.request, 0))", wait: wait)
    }

    private func connectionList(path: String, query: String, wait: TimeInterval) async throws -> ConnectionList {
        let seconds = min(max(wait, 0), TimeInterval(FixtureAPI.maximumConnectionWait))
        let query = "?\(query)&wait=\(String(format: "%.3f", seconds))"
        return try await call("GET", path + "/" + FixtureAPI.connectionsSegment + query, expecting: 200,
                              timeout: requestTimeout + seconds)
    }
}

// MARK: The differential check

extension RemoteFixtures {
    /// Passes only if your client refuses the scenario `name` for its reason, proven by difference: it starts a fresh
    /// fixture of the scenario and one of its control (`expect.refusal.control`: `ats-compliant` for most, `pinned` for
    /// the pin scenarios) in the runner, each its own and stopped afterwards, and runs `load` once on each with that
    /// fixture's URL. The control must be accepted (a request answered) and the scenario refused at its step
    /// (`expect.refusal.step`: at the certificate for `expired`), with an alert that agrees with its reason. Otherwise
    /// it throws a `LoadExpectationFailure` saying which half failed, in your client's terms: "your client refuses the
    /// control too (unknown_ca(48)) … it does not trust the kit's CA", "your client accepted pin-rotated-key (… GET /
    /// was answered 200): no pin was checked".
    ///
    /// ```swift
    /// let fixtures = RemoteFixtures()
    /// let session = URLSession(configuration: .fixtures(through: try await fixtures.proxy()))
    /// try await fixtures.expectRefused("expired") { url in try await session.data(from: url) }
    /// ```
    ///
    /// `url` chooses the URL `load` gets: `.qualifiedName` (`https://expired.fixtures.test:PORT/`, the default: what App
    /// Transport Security judges; through the runner's proxy, or with the name mapped to 127.0.0.1) or `.localhost`.
    /// `wait` bounds how long, after each load, the runner waits for its fixture to see the connection end. Returns what
    /// each half showed, and notes that are not failures (an Apple error code other than the scenario file's).
    @discardableResult
    public func expectRefused<T>(_ name: String, url: FixtureURLChoice = .qualifiedName, wait: TimeInterval = 5,
                                 isolation: isolated (any Actor)? = #isolation,
                                 _ load: (URL) async throws -> T) async throws -> RefusalVerdict {
        let fixture = try await start(name)
        let control: RemoteFixture
        do {
            guard let refusal = fixture.scenario.expect.refusal else {
                throw LoadExpectationFailure.noRefusal(scenario: name)
            }
            control = try await start(refusal.control)
        } catch {
            await fixture.stop()
            throw error
        }
        let controlLoad = await Self.run(load, on: control, url: url, wait: wait)
        let scenarioLoad = await Self.run(load, on: fixture, url: url, wait: wait)
        await control.stop()
        await fixture.stop()
        switch (controlLoad, scenarioLoad) {
        case (.success(let controlLoad), .success(let scenarioLoad)):
            return try LoadJudge.differential(control: controlLoad, scenario: scenarioLoad,
                                              expectation: fixture.scenario.expect.refusal).get()
        case (.failure(let error), _), (_, .failure(let error)):
            throw error
        }
    }

    /// One load of the differential check on `fixture` (fresh: every record is the load's); fails only when the
    /// runner cannot be asked for the records.
    private static func run<T>(_ load: (URL) async throws -> T, on fixture: RemoteFixture, url choice: FixtureURLChoice,
                               wait: TimeInterval, isolation: isolated (any Actor)? = #isolation) async
        -> Result<LoadJudge.Load, Error>
    {
        let url = choice == .qualifiedName ? fixture.qualifiedURL : fixture.url
        var thrown: Error?
        do { _ = try await load(url) } catch { thrown = error }
        do {
            let records = try await fixture.settledRecords(after: .start, thrown: thrown, wait: wait)
            return .success(LoadJudge.Load(scenario: fixture.scenario.name,
                                           target: "\(url.host ?? "localhost"):\(fixture.port)",
                                           thrown: thrown, records: records))
        } catch {
            return .failure(error)
        }
    }
}
