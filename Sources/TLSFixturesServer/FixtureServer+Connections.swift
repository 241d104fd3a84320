import Foundation
import NIOCore
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesWire

extension FixtureServer {
    /// What the fixture saw of its most recent connections (`FixtureConfiguration.connectionRecordLimit`, 64 by
    /// default), oldest first: the client's ClientHello, how the handshake ended, the requests answered.
    public var connections: [ConnectionRecord] { log.records }

    /// The id of the latest connection, 0 before the first: pass it as `after:` to see only what comes next.
    public var latestConnectionID: Int { log.latestID }

    /// Where the records stand now, its latest connection and its latest answered request: pass it as `after:` to see
    /// only what comes next, including requests on connections kept alive from before.
    public var cursor: ConnectionCursor { log.cursor }

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

    /// The records after `cursor` (connections opened since, and older ones that answered a request since), oldest
    /// first, once one of them is settled, or when `wait` has passed.
    public func connections(after cursor: ConnectionCursor, wait: Duration = .zero) async -> [ConnectionRecord] {
        await log.records(after: cursor, until: Self.deadline(after: wait)) { records in
            records.contains(where: \.isSettled)
        }
    }

    /// Runs `load` and passes only if the client refused this fixture, as far as one fixture, which other clients may
    /// share, can show it: `load` threw, one connection from it reached the fixture, and it ended at the scenario's step
    /// (`expect.refusal.step`: an alert or a close after the server's certificate, for `expired`) without a request.
    /// When `checkingReason` (the default), the alert must agree with the scenario's too.
    ///
    /// It fails, with a `LoadExpectationFailure` saying what happened instead, when the client never reached the
    /// fixture (its error says so: a name that did not resolve, a proxy that refused), accepted it (`GET /` was
    /// answered 200), refused at another step or for another reason, when several connections arrived and nothing
    /// says which was this load's (`ambiguous`: another test's client of a shared fixture), and when the handshake
    /// completed and closed without a request (`unproven`: a pin, a host-name check, a client that verifies nothing
    /// and a crash all look alike). The differential form, `FixtureServer.expectRefused("NAME") { url in … }`,
    /// proves more: it loads the scenario's control too, on fixtures of its own.
    ///
    /// `wait` bounds how long, after `load` returns, to wait for the fixture to see the connection end.
    public func expectRefused<T>(checkingReason: Bool = true, wait: Duration = .seconds(5),
                                 isolation: isolated (any Actor)? = #isolation,
                                 _ load: () async throws -> T) async throws {
        let cursor = self.cursor
        var thrown: Error?
        do { _ = try await load() } catch { thrown = error }
        let records = await settledRecords(after: cursor, thrown: thrown, wait: wait)
        if let failure = judge(checkingReason: checkingReason).refused(thrown: thrown, records: records,
                                                                       cursor: cursor) {
            throw failure
        }
    }

    /// Runs `load` and returns its value if the client accepted this fixture: `load` returned and the fixture answered
    /// a request of it. When `load` returns URLSession's `(Data, URLResponse)` (or a `URLResponse`), the answer's
    /// `X-TLS-Fixture-Request` stamp must name a request this fixture answered after the check began, so an answer
    /// from a cache, a mock or another fixture fails it; otherwise one connection alone must have answered (several
    /// are `ambiguous`). A request on a connection kept alive from an earlier load counts. Otherwise it throws a
    /// `LoadExpectationFailure` saying what happened instead.
    ///
    /// ```swift
    /// let (data, _) = try await fixture.expectAccepted { try await session.data(from: fixture.url) }
    /// ```
    @discardableResult
    public func expectAccepted<T>(wait: Duration = .seconds(5), isolation: isolated (any Actor)? = #isolation,
                                  _ load: () async throws -> T) async throws -> T {
        let cursor = self.cursor
        let result: Result<T, Error>
        do { result = .success(try await load()) } catch { result = .failure(error) }
        var thrown: Error?
        var value: Any?
        switch result {
        case .success(let returned): value = returned
        case .failure(let error): thrown = error
        }
        let records = await settledRecords(after: cursor, thrown: thrown, wait: wait)
        if let failure = judge(checkingReason: false).accepted(thrown: thrown, value: value, records: records,
                                                               cursor: cursor, port: port) {
            throw failure
        }
        return try result.get()
    }

    /// The records after `cursor` once they say how the load went: a request answered, or every connection that
    /// carried anything closed; at once when the load's error says it made no connection.
    package func settledRecords(after cursor: ConnectionCursor, thrown: Error?,
                                wait: Duration) async -> [ConnectionRecord] {
        let wait = thrown.map(LoadJudge.madeNoConnection) == true ? .zero : wait
        return await log.records(after: cursor, until: Self.deadline(after: wait)) { records in
            LoadJudge.hasSettled(records, after: cursor)
        }
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

// MARK: The differential check

extension FixtureServer {
    /// Passes only if your client refuses the catalog scenario `name` for its reason, proven by difference: it starts a
    /// fresh fixture of the scenario and one of its control (`expect.refusal.control`: `ats-compliant` for most,
    /// `pinned` for the pin scenarios), each its own and stopped afterwards, and runs `load` once on each, with that
    /// fixture's URL. The control must be accepted (a request answered) and the scenario refused at its step
    /// (`expect.refusal.step`: at the certificate for `expired`), with an alert that agrees with its reason. Otherwise
    /// it throws a `LoadExpectationFailure` saying which half failed, in your client's terms: "your client refuses the
    /// control too (unknown_ca(48)) … it does not trust the kit's CA", "your client accepted pin-rotated-key (… GET / was
    /// answered 200): no pin was checked".
    ///
    /// ```swift
    /// try await FixtureServer.expectRefused("expired") { url in try await session.data(from: url) }
    /// ```
    ///
    /// `url` chooses the URL `load` gets: `.localhost` (`https://localhost:PORT/`, the default: nothing to resolve) or
    /// `.qualifiedName` (`https://expired.fixtures.test:PORT/`, which App Transport Security judges; map it to 127.0.0.1
    /// first). `wait` bounds how long, after each load, to wait for its fixture to see the connection end. Returns what
    /// each half showed, and notes that are not failures (an Apple error code other than the scenario file's).
    @discardableResult
    public static func expectRefused<T>(_ name: String, store: CertificateStore = .resolved(),
                                        configuration: FixtureConfiguration = FixtureConfiguration(),
                                        url: FixtureURLChoice = .localhost, wait: Duration = .seconds(5),
                                        isolation: isolated (any Actor)? = #isolation,
                                        _ load: (URL) async throws -> T) async throws -> RefusalVerdict {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        guard let refusal = scenario.expect.refusal else { throw LoadExpectationFailure.noRefusal(scenario: name) }
        let control = try await start(refusal.control, store: store, configuration: configuration)
        let fixture: FixtureServer
        do {
            fixture = try await start(scenario, store: store, configuration: configuration)
        } catch {
            await control.stop()
            throw error
        }
        let controlLoad = await run(load, on: control, url: url, wait: wait)
        let scenarioLoad = await run(load, on: fixture, url: url, wait: wait)
        await control.stop()
        await fixture.stop()
        return try LoadJudge.differential(control: controlLoad, scenario: scenarioLoad, expectation: refusal).get()
    }

    /// One load of the differential check on `fixture` (fresh: every record is the load's).
    private static func run<T>(_ load: (URL) async throws -> T, on fixture: FixtureServer, url choice: FixtureURLChoice,
                        wait: Duration, isolation: isolated (any Actor)? = #isolation) async -> LoadJudge.Load {
        let url = choice == .qualifiedName ? fixture.qualifiedURL : fixture.url
        var thrown: Error?
        do { _ = try await load(url) } catch { thrown = error }
        let records = await fixture.settledRecords(after: .start, thrown: thrown, wait: wait)
        return LoadJudge.Load(scenario: fixture.scenario.name, target: "\(url.host ?? "localhost"):\(fixture.port)",
                              thrown: thrown, records: records)
    }
}
