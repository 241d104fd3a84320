import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing
@testable import TLSFixtures
@testable import TLSFixturesFleet

/// The fleet in this process (issue 23): leases on a manual clock, the typed errors it answers the front door with,
/// and the wall between it and HTTP. Its fixtures are real servers on loopback; only the clock is a test's.
@Suite("The runner's fleet")
struct FleetTests {
    /// A fleet whose leases run on `loop`'s clock, with no catalog fixtures of its own.
    static func fleet(
        on loop: NIOAsyncTestingEventLoop, origin: Date, options: FixtureFleet.Options = FixtureFleet.Options()
    ) async throws -> FixtureFleet {
        var options = options
        let start = loop.now
        options.hooks.leaseClock = LeaseClock(
            eventLoop: loop,
            now: {
                origin.addingTimeInterval(Double(loop.now.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            })
        return try await FixtureFleet.start([], catalog: .builtIn, store: TestEnvironment.sharedStore, options: options)
    }

    /// Waits for fixtures whose lease ended to finish closing (`stop()` waits for the same).
    static func closed(_ fleet: FixtureFleet) async {
        for pending in fleet.state.withLockedValue({ Array($0.closing.values) }) { try? await pending.get() }
    }

    @Test(
        "a lease ends on its clock and frees its port; a renewed one outlives its first term; an ended one stays ended"
    )
    func leaseExpiry() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let origin = Date(timeIntervalSince1970: 1_900_000_000)
        let fleet = try await Self.fleet(on: loop, origin: origin)
        let short = try await fleet.startLeased(LeaseRequest(scenario: .catalog("ats-compliant"), ttl: 2))
        let renewed = try await fleet.startLeased(
            LeaseRequest(scenario: .catalog("ats-compliant"), ttl: 3, session: "run"))
        #expect(short.expiresAt == origin.addingTimeInterval(2) && renewed.expiresAt == origin.addingTimeInterval(3))
        #expect(Ports.accepts(short.port) && Ports.accepts(renewed.port))

        await loop.advanceTime(by: .seconds(1))
        let later = try fleet.renewLease(id: renewed.id, ttl: 10)
        #expect(
            later.ttl == 10 && later.expiresAt == origin.addingTimeInterval(11), "renewed from now, not from the start")
        #expect(fleet.leasedFixtures(session: nil).map(\.id) == [short.id, renewed.id], "oldest lease end first")

        await loop.advanceTime(by: .milliseconds(999))
        #expect((try? fleet.leasedFixture(id: short.id)) != nil, "the lease ended early")
        // A client that connects and hangs up: a record the test reads after the lease ends.
        // Past the connection Ports.accepts made above: its record is opened when the fixture accepts it, which may
        // be after Ports.accepts returned, so wait for it (it closed at once) rather than race it.
        let cursor = try await fleet.connections(of: .leased(short.id), after: .start, wait: .seconds(10)).cursor
        #expect(cursor.connection == 1, "Ports.accepts's connection was not recorded")
        try RawConnection(port: short.port).close()
        _ = try await fleet.connections(of: .leased(short.id), after: cursor, wait: .seconds(10))
        await loop.advanceTime(by: .milliseconds(1))
        await Self.closed(fleet)
        let gone = #expect(throws: FleetError.self) { try fleet.leasedFixture(id: short.id) }
        #expect(gone?.code == .noSuchFixture && gone?.reason.contains("has stopped (its lease ended") == true,
                "\(String(describing: gone))")
        #expect(Ports.canListen(short.port), "the ended lease's port still listens")
        let notRenewed = #expect(throws: FleetError.self) { try fleet.renewLease(id: short.id, ttl: nil) }
        #expect(notRenewed?.reason.contains("has stopped") == true, "\(String(describing: notRenewed))")
        let kept = try await fleet.connections(of: .leased(short.id), after: cursor, wait: .seconds(30))
        #expect(kept.stopped?.reason == "its lease ended" && kept.connections.count == 1, "\(kept)")
        #expect(kept.connections.first?.outcome == .closedWithoutAlert(phase: .beforeClientHello))

        await loop.advanceTime(by: .seconds(2))  // past the renewed fixture's first 3 s
        let again = try fleet.renewLease(id: renewed.id, ttl: nil)
        #expect(
            again.ttl == 10 && again.expiresAt == origin.addingTimeInterval(14),
            "a renew without a ttl keeps the fixture's own")
        #expect(try fleet.leasedFixture(id: renewed.id).ttl == 10)
        #expect(Ports.accepts(renewed.port))
        await loop.advanceTime(by: .seconds(10))  // its lease, renewed at 4 s: 4 + 10 s
        await Self.closed(fleet)
        #expect(fleet.leasedFixtures(session: "run").isEmpty)
        #expect(Ports.canListen(renewed.port))
        await fleet.stop()
    }

    @Test("the fleet's refusals are typed, with the field at fault, and no fixture is left behind")
    func refusals() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let fleet = try await Self.fleet(on: loop, origin: Date())
        func refusal(_ request: LeaseRequest) async -> FleetError? {
            do {
                _ = try await fleet.startLeased(request)
                return nil
            } catch {
                return error
            }
        }
        let ttl = await refusal(LeaseRequest(scenario: .catalog("expired"), ttl: 0))
        #expect(ttl?.code == .invalidTTL && ttl?.part == .ttl)
        let session = await refusal(LeaseRequest(scenario: .catalog("expired"), session: "a b"))
        #expect(session?.code == .invalidSession && session?.part == .session)
        let unknown = await refusal(LeaseRequest(scenario: .catalog("expird")))
        #expect(
            unknown?.code == .unknownScenario && unknown?.reason.contains("did you mean \"expired\"") == true,
            "\(String(describing: unknown))")
        // A name longer than any DNS name (253 bytes, RFC 1035 §2.3.4) names nothing: refused before any look-up, and
        // not sent back (issue 27: a megabyte's "did you mean" held the API for seconds).
        for length in [254, 100_000] {
            let name = "expired" + String(repeating: "d", count: length)
            let long = await refusal(LeaseRequest(scenario: .catalog(name)))
            #expect(long?.code == .unknownScenario && long?.part == .scenario, "\(String(describing: long))")
            #expect(long?.reason.contains("is \(length + 7) bytes; no scenario's is over 253") == true)
            #expect((long?.description.utf8.count ?? .max) < 400, "\(String(describing: long).prefix(300))")
        }
        // Inline scenarios, as the front door decodes them (its own refusals of a body are FrontDoorTests').
        func inline(_ json: String) throws -> LeaseRequest {
            LeaseRequest(scenario: .inline(try ScenarioCatalog.decode(Data(json.utf8), source: "scenario")))
        }
        let taken = await refusal(
            try inline(#"{"name": "expired", "group": "custom", "summary": "s", "expect": {"ats": "block"}}"#))
        #expect(taken?.code == .catalogName && taken?.part == .scenarioName)
        // The store's own names are no scenario's either (issue 36: one rule for every way a name enters the store).
        let reserved = await refusal(
            try inline(
                #"{"name": "client", "group": "custom", "summary": "s", "tls": {}, "certificate": {}, "#
                    + #""expect": {"ats": "allow"}}"#))
        #expect(reserved?.code == .invalidScenario && reserved?.part == .scenarioName, "\(String(describing: reserved))")
        let badKey = await refusal(
            try inline(
                #"{"name": "mine", "group": "custom", "summary": "s", "tls": {}, "certificate": {"keyName": "backup"}, "#
                    + #""expect": {"ats": "allow"}}"#))
        #expect(badKey?.code == .invalidKeyName && badKey?.part == .keyName, "\(String(describing: badKey))")
        #expect(fleet.leasedFixtures(session: nil).isEmpty)
        #expect(fleet.state.withLockedValue { $0.members.isEmpty }, "a refused start left a member in the table")

        let running = try await fleet.startLeased(LeaseRequest(scenario: .catalog("ats-compliant")))
        await fleet.stop()
        let stopping = await refusal(LeaseRequest(scenario: .catalog("expired")))
        #expect(stopping?.code == .stopping)
        #expect(fleet.leasedFixtures(session: nil).isEmpty && !Ports.accepts(running.port), "stop() left a leased fixture")
        #expect(await !fleet.stopLeased(id: running.id))
    }

    @Test("one state per catalog fixture, and the catalog document derived from it")
    func states() async throws {
        var configuration = try Self.freeConfiguration(frontDoor: false)
        configuration.scenarios = ["ats-compliant", "ssl-v3"]
        try await FixtureRunner.withRunner(configuration) { runner in
            let fleet = try #require(runner.fleet)
            let states = fleet.catalogStates
            #expect(states.map(\.scenario.name) == ["ats-compliant", "ssl-v3"], "in catalog order")
            let port = try #require(states.first?.state.fixture?.port)
            #expect(fleet.servedFixture(onPort: port)?.scenario == "ats-compliant")
            // The names the proxy lets through to it: its own (Scenario.fixtureHosts), no other fixture's.
            #expect(fleet.servedFixture(onPort: port)?.names == ["ats-compliant.fixtures.test"])
            #expect(fleet.servedFixture(onPort: port + 1) == nil)
            guard case .unsupported(let reason) = states[1].state else {
                Issue.record("ssl-v3 is \(states[1].state), not unsupported")
                return
            }
            let document = runner.document()
            #expect(document.scenarios.map(\.status) == [.serving, .unsupported])
            #expect(document.scenarios[1].reason == reason)
            #expect(document.dashboard == nil && document.proxy == nil, "no front door, so nothing names one")
        }
    }

    /// Issue 27: a prepared start waited 13–26 s behind two inline RSA-8192 keys, sharing their threads. Slow keys
    /// have a lane of their own now; this watches the lane's events (not the clock) to start `ats-compliant` while
    /// two RSA-8192 starts are in it, and to see it served before either is made.
    @Test("a start whose key exists is served while two RSA-8192 starts are still making theirs; a third is busy")
    func slowKeysHaveALaneOfTheirOwn() async throws {
        let events = NIOLockedValueBox<[PreparationLanes.Event]>([])
        let (stream, continuation) = AsyncStream<PreparationLanes.Event>.makeStream()
        var options = FixtureFleet.Options()
        options.hooks.maximumSlowStarts = 2
        options.hooks.slowLaneObserver = { event in
            events.withLockedValue { $0.append(event) }
            continuation.yield(event)
        }
        let fleet = try await Self.fleet(on: NIOAsyncTestingEventLoop(), origin: Date(), options: options)
        // Once, so the next start of it needs no key (the shared store may be new).
        let first = try await fleet.startLeased(LeaseRequest(scenario: .catalog("ats-compliant")))
        await fleet.stopLeased(id: first.id)

        func slow(_ name: String) -> LeaseRequest {
            let json = #"{"name": ""# + name + #"", "group": "custom", "summary": "made afresh", "tls": {}, "#
                + #""certificate": {"key": "rsa:8192"}, "expect": {"ats": "allow"}}"#
            return LeaseRequest(scenario: .inline(try! ScenarioCatalog.decode(Data(json.utf8), source: "scenario")))
        }
        let done = NIOLockedValueBox<[String]>([])
        for name in ["slow-a", "slow-b"] {
            Task {
                _ = try? await fleet.startLeased(slow(name))
                done.withLockedValue { $0.append(name) }
            }
        }
        // Both admitted, at least one making its key.
        var admitted = 0
        var making = 0
        for await event in stream {
            if case .admitted = event { admitted += 1 }
            if case .started = event { making += 1 }
            if admitted == 2 && making >= 1 { break }
        }
        let third = await #expect(throws: FleetError.self) { try await fleet.startLeased(slow("slow-c")) }
        #expect(third?.code == .busy, "\(String(describing: third))")

        let prepared = try await fleet.startLeased(LeaseRequest(scenario: .catalog("ats-compliant")))
        #expect(Ports.accepts(prepared.port))
        let seen = events.withLockedValue { $0 }
        #expect(!seen.contains { if case .finished = $0 { return true } else { return false } },
                "ats-compliant was served only after a slow key was made: \(seen)")
        #expect(done.withLockedValue { $0 }.isEmpty, "an RSA-8192 start finished first")
        #expect(
            !seen.contains { if case .admitted(let name) = $0 { return name == "slow-c" } else { return false } },
            "the refused start was counted")
        // The one making its key is abandoned (OpenSSL cannot be interrupted); the queued one is dropped, not made.
        await fleet.stop()
    }

    /// A runner of the shared store on a free block of ports, without the legacy helper.
    static func freeConfiguration(frontDoor: Bool = true) throws -> FixtureRunner.Configuration {
        var configuration = FixtureRunner.Configuration()
        configuration.store = TestEnvironment.sharedStore
        configuration.portBase = try ServeEndToEndTests.freePortBase()
        configuration.legacyHelper = .none
        configuration.frontDoor = frontDoor
        return configuration
    }
}

/// The fleet's memory of stopped fixtures is bounded: the last `FixtureAPI.keptStoppedFixtures` keep their records, the
/// ids before them are remembered as stopped long ago, and an id never given is said never to have run.
@Suite("Stopped fixtures' records")
struct StoppedFixturesTests {
    @Test("the last 32 stopped keep their records; older ones are stopped long ago; others never ran or are no id")
    func bounded() throws {
        var stopped = StoppedFixtures()
        let ids = (0..<(FixtureAPI.keptStoppedFixtures + 2)).map { String(format: "%020x", $0) }
        let at = Date(timeIntervalSince1970: 1_900_000_000)
        for id in ids {
            let log = ConnectionLog(capacity: 4)
            _ = log.open(peer: "127.0.0.1:\(id.suffix(4))")
            stopped.add(id, log: log, reason: "its lease ended", at: at)
        }
        #expect(stopped[ids[0]] == nil && stopped[ids[1]] == nil)
        #expect(stopped.whereabouts(of: ids[0]) == .stoppedLongAgo)
        let last = try #require(stopped[ids.last!])
        #expect(last.log.records.count == 1 && last.stopped == ConnectionList.Stopped(at: at, reason: "its lease ended"))
        #expect(stopped.whereabouts(of: ids[2]) == .stopped(.init(at: at, reason: "its lease ended")))
        #expect(stopped.whereabouts(of: "ffffffffffffffffffff") == .neverStarted)
        #expect(stopped.whereabouts(of: "nosuch") == .notAnID)
        #expect(FleetError.noSuchFixture("nosuch", .notAnID).reason.contains("is not a started fixture's id"))
        #expect(!FleetError.noSuchFixture("nosuch", .notAnID).description.contains("stopped"))
        #expect(FleetError.noSuchFixture(ids[0], .stoppedLongAgo).reason.contains("stopped long ago"))
    }
}
