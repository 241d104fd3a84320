import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// The runner's front door in memory (issue 23): the request router, the control API's routes, the dashboard and the
/// proxy's refusals, each driven through the pipeline a real connection gets, over a `FakeFleet` that can make every
/// answer happen. The end-to-end suites keep what only a real `serve` shows (TLS through the proxy, real clients).
@Suite("The runner's front door, in an EmbeddedChannel")
struct FrontDoorTests {
    // MARK: Every route

    @Test("every route and method of the control API reaches the fleet as asked and answers with its JSON")
    func routes() async throws {
        let fleet = FakeFleet(fixtures: [
            FakeFleet.leased("abc123", session: "run-1"), FakeFleet.leased("def789"),
        ])
        let door = try await FrontDoorConnection.open(fleet)

        let created = try await door.send(
            "POST", "/api/fixtures", body: #"{"scenario": "expired", "ttl": 60, "session": "run-1"}"#)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("Location") == "/api/fixtures/new456")
        #expect(created.header("Content-Type") == "application/json" && created.header("Cache-Control") == "no-store")
        let description: FixtureDescription = try created.decode()
        #expect(
            description.id == "new456" && description.proxy == FrontDoorConnection.proxy,
            "the front door names its proxy")
        #expect(
            fleet.calls.withLockedValue { $0.started } == [
                LeaseRequest(scenario: .catalog("expired"), ttl: 60, session: "run-1")
            ])

        let all = try await door.send("GET", "/api/fixtures")
        #expect(all.status == 200)
        #expect(try all.decode(FixtureList.self).fixtures.map(\.id) == ["abc123", "def789"])
        #expect(try all.decode(FixtureList.self).fixtures.allSatisfy { $0.proxy == FrontDoorConnection.proxy })
        let bySession = try await door.send("GET", "/api/fixtures?session=run-1")
        #expect(try bySession.decode(FixtureList.self).fixtures.map(\.id) == ["abc123"])
        #expect(fleet.calls.withLockedValue { $0.listedSession } == [nil, "run-1"])

        let one = try await door.send("GET", "/api/fixtures/def789")
        #expect(try one.status == 200 && one.decode(FixtureDescription.self).id == "def789")

        let renewed = try await door.send("POST", "/api/fixtures/abc123/renew", body: #"{"ttl": 120}"#)
        #expect(try renewed.status == 200 && renewed.decode(FixtureDescription.self).ttl == 120, "\(renewed.text)")
        let kept = try await door.send("POST", "/api/fixtures/abc123/renew")
        #expect(kept.status == 200, "an empty renew keeps the fixture's own ttl: \(kept.text)")
        #expect(fleet.calls.withLockedValue { $0.renewed.map(\.ttl) } == [120, nil])
        let gone = try await door.send("POST", "/api/fixtures/nope/renew")
        #expect(gone.status == 404 && gone.error?.error.contains("no fixture \"nope\"") == true, "\(gone.text)")

        // DELETE is idempotent: 204 whether the fleet still had it or not, and never a body.
        for _ in 0..<2 {
            let deleted = try await door.send("DELETE", "/api/fixtures/def789")
            #expect(deleted.status == 204 && deleted.body.isEmpty && deleted.header("Content-Length") == nil)
        }
        #expect(fleet.calls.withLockedValue { $0.stopped } == ["def789", "def789"])

        let session = try await door.send("DELETE", "/api/sessions/run-1")
        #expect(session.status == 200)
        #expect(try session.decode(SessionStopped.self) == SessionStopped(session: "run-1", stopped: 1))
        #expect(await door.isOpen, "keep-alive requests closed the connection")
    }

    // MARK: Every status

    /// The status each fleet failure gets: RFC 9110's meaning of each (§15.5.1 400 Bad Request for a request the
    /// client must change, §15.5.5 404 for an id it does not have, §15.5.21 422 for a well-formed request for a
    /// scenario that cannot be served, §15.6.1 500, §15.6.4 503 while stopping, out of ports or still preparing the
    /// scenario: "likely to be alleviated after some delay"), §15.5.10 409 for a catalog scenario whose state here has
    /// no records ("a conflict with the current state of the target resource"), and RFC 6585 §4 429
    /// for the cap the README gives ("at most 256 run at once (`429` beyond)").
    static let fleetStatuses: [(code: FleetError.Code, status: Int)] = [
        (.invalidTTL, 400), (.invalidSession, 400), (.unknownScenario, 400), (.invalidScenario, 400),
        (.catalogName, 400),
        (.invalidKeyName, 400), (.cannotPrepare, 422), (.full, 429), (.stopping, 503), (.busy, 503), (.preparing, 503),
        (.cannotListen, 503), (.cannotDescribe, 500), (.noSuchFixture, 404), (.noSuchScenario, 404),
        (.notServing, 409),
    ]

    @Test("each fleet error gets its status from one table, with the field and one line of JSON")
    func fleetErrorStatuses() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        #expect(
            Set(Self.fleetStatuses.map(\.code)) == Set(FleetError.Code.all), "a code without an expected status here")
        for (code, status) in Self.fleetStatuses {
            fleet.startOutcome.withLockedValue {
                $0 = .failure(FleetError(code, "reason \(code)", fix: "fix it", part: .keyName))
            }
            let answer = try await door.send("POST", "/api/fixtures", body: #"{"scenario": "expired"}"#)
            #expect(answer.status == status, "\(code): \(answer.status) \(answer.text)")
            #expect(answer.error?.field == "scenario.certificate.keyName", "\(code): \(answer.text)")
            #expect(answer.error?.error.hasPrefix("reason \(code)") == true, "\(code): \(answer.text)")
            #expect(answer.text.split(separator: "\n").count == 1, "\(code): not one line: \(answer.text)")
        }
        // The cap says when to try again; the API words the fixes the fleet's words would not help with.
        fleet.startOutcome.withLockedValue { $0 = .failure(.full) }
        let full = try await door.send("POST", "/api/fixtures", body: #"{"scenario": "expired"}"#)
        #expect(full.header("Retry-After") == "1")
        #expect(full.error?.error.contains("DELETE /api/fixtures/ID") == true, "\(full.text)")
        // Too many slow keys in the making: 503 with when to come back (RFC 9110 §15.6.4, §10.2.3), and what to start
        // instead. Nothing else that is refused says to retry.
        fleet.startOutcome.withLockedValue { $0 = .failure(.busy(4)) }
        let busy = try await door.send("POST", "/api/fixtures", body: #"{"scenario": "expired"}"#)
        #expect(busy.status == 503 && busy.header("Retry-After") == "10", "\(busy.headers) \(busy.text)")
        #expect(busy.error?.error.contains("whose key exists") == true, "\(busy.text)")
        fleet.startOutcome.withLockedValue { $0 = .failure(.stopping) }
        let stopping = try await door.send("POST", "/api/fixtures", body: #"{"scenario": "expired"}"#)
        #expect(stopping.status == 503 && stopping.header("Retry-After") == nil)
        let missing = try await door.send("GET", "/api/fixtures/nope")
        #expect(
            missing.status == 404 && missing.error?.error.contains("GET /api/fixtures lists") == true, "\(missing.text)"
        )
    }

    /// A new `FleetError` code must get a row in the front door's table and in `Code.all`; this reads the codes the
    /// source declares, so one added without both fails here.
    @Test("every FleetError code the source declares is in Code.all and has a status in the table")
    func everyCodeHasAStatus() throws {
        let source = try String(
            contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Sources/TLSFixturesFleet/FleetError.swift"),
            encoding: .utf8)
        let declared = source.matches(of: /static var (\w+): Self \{ Self\("(\w+)"\) \}/).map { String($0.output.1) }
        #expect(declared.count >= 13, "the scan found \(declared)")
        #expect(Set(declared) == Set(FleetError.Code.all.map(\.description)))
        for code in FleetError.Code.all { #expect(FleetErrorStatus.table[code] != nil, "\(code) has no status") }
    }

    @Test(
        "the front door's own refusals: 400, 403, 404, 405, 413, 415, one line each; the connection survives the 4xx it may"
    )
    func ownRefusals() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        let bad: [(body: String, field: String?, says: String)] = [
            (#"{"scenario":"#, nil, "not a JSON object"),
            (#"["expired"]"#, nil, "the body holds one JSON object ({…}), not an array"),
            (#"{"scenario": "expired", "tll": 30}"#, "tll", "unknown key \"tll\""),
            (#"{"ttl": 30}"#, "scenario", "missing"),
            (#"{"scenario": "expired", "ttl": "30"}"#, "ttl", "whole seconds"),
            (" ", nil, "the body is empty"),
        ]
        for item in bad {
            let answer = try await door.send("POST", "/api/fixtures", body: item.body)
            #expect(
                answer.status == 400 && answer.error?.field == item.field,
                "\(item.body) → \(answer.status) \(answer.text)")
            #expect(answer.error?.error.contains(item.says) == true, "\(item.body) → \(answer.text)")
        }
        #expect(fleet.calls.withLockedValue { $0.started }.isEmpty, "a bad request reached the fleet")
        let tag = try await door.send("DELETE", "/api/sessions/a%20b")
        #expect(tag.status == 400 && tag.error?.field == "session", "\(tag.text)")

        let text = try await door.send(
            "POST", "/api/fixtures", body: #"{"scenario": "expired"}"#, contentType: "text/plain")
        #expect(text.status == 415, "\(text.text)")
        let nowhere = try await door.send("GET", "/api/nothing")
        #expect(nowhere.status == 404)
        // The endpoints as the README's "Testing an iOS app" lists them.
        #expect(
            nowhere.error?.error
                == "no such endpoint /api/nothing: the control API is POST|GET /api/fixtures, GET|DELETE "
                + "/api/fixtures/ID, POST /api/fixtures/ID/renew, GET /api/fixtures/ID/connections, "
                + "GET /api/scenarios/NAME/connections, DELETE /api/sessions/TAG, GET /api/health",
            "\(nowhere.text)")
        let put = try await door.send("PUT", "/api/fixtures", body: "{}")
        #expect(put.status == 405 && put.header("Allow") == "POST, GET", "\(put.headers)")
        let getRenew = try await door.send("GET", "/api/fixtures/abc123/renew")
        #expect(getRenew.status == 405 && getRenew.header("Allow") == "POST")
        #expect(await door.isOpen, "a 4xx the client can correct closed the connection")

        // A web page in the user's browser cannot drive the API: a foreign Origin, or a Host that is not loopback.
        let origin = try await door.send(
            "POST", "/api/fixtures", body: #"{"scenario": "expired"}"#,
            headers: ["Host: localhost:9800", "Origin: http://evil.example"])
        #expect(origin.status == 403 && origin.error?.error.contains("http://evil.example") == true, "\(origin.text)")
        let sameOrigin = try await door.send(
            "GET", "/api/fixtures", headers: ["Host: localhost:9800", "Origin: http://localhost:9800"])
        #expect(sameOrigin.status == 200, "the dashboard's own page was refused")
        let rebinding = try await door.send("GET", "/api/fixtures", headers: ["Host: attacker.example:9800"])
        #expect(
            rebinding.status == 403 && rebinding.error?.error.contains("attacker.example") == true, "\(rebinding.text)")
        #expect(fleet.calls.withLockedValue { $0.started }.isEmpty)

        // Over FixtureAPI.maximumBodyBytes: refused, and the connection closed (the rest of the body is not read).
        let huge = try await door.send(
            "POST", "/api/fixtures", body: String(repeating: " ", count: FixtureAPI.maximumBodyBytes + 1))
        #expect(huge.status == 413, "\(huge.text)")
        #expect(await !door.isOpen)
    }

    @Test("clients that are not on this machine are refused the API and the proxy, unless allowed")
    func remoteClients() async throws {
        let fleet = FakeFleet()
        let remote = try await FrontDoorConnection.open(fleet, client: "192.0.2.7")
        let refused = try await remote.send("GET", "/api/fixtures")
        #expect(
            refused.status == 403 && refused.error?.error.contains("--allow-remote-clients") == true, "\(refused.text)")
        #expect(await !remote.isOpen)
        // The dashboard itself is for anyone who can reach the port.
        let page = try await FrontDoorConnection.open(fleet, client: "192.0.2.7").send("GET", "/scenarios.json")
        #expect(page.status == 200)
        let allowed = try await FrontDoorConnection.open(fleet, client: "192.0.2.7", allowRemoteClients: true)
        #expect(try await allowed.send("GET", "/api/fixtures", headers: ["Host: 192.0.2.1:9800"]).status == 200)
    }

    // MARK: Hostile requests (issue 27)

    @Test("a ttl that is not a whole number is a 400 naming ttl, on start and on renew, and reaches no fleet")
    func wholeSeconds() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        let cases: [(path: String, body: String, says: String)] = [
            ("/api/fixtures", #"{"scenario": "expired", "ttl": 1.5}"#, "ttl: 1.5 is not a whole number"),
            ("/api/fixtures", #"{"scenario": "expired", "ttl": 1e20}"#, "ttl: 1e20 is too large a number"),
            ("/api/fixtures", #"{"scenario": "expired", "ttl": 1e308}"#, "ttl: 1e308 is too large a number"),
            ("/api/fixtures/abc123/renew", #"{"ttl": 2.5}"#, "ttl: 2.5 is not a whole number"),
        ]
        for item in cases {
            let answer = try await door.send("POST", item.path, body: item.body)
            #expect(answer.status == 400 && answer.error?.field == "ttl", "\(item.body) → \(answer.text)")
            #expect(answer.error?.error == item.says, "\(item.body) → \(answer.text)")
            #expect(answer.text.split(separator: "\n").count == 1)
        }
        #expect(fleet.calls.withLockedValue { $0.started.isEmpty && $0.renewed.isEmpty }, "a bad ttl reached the fleet")
    }

    /// An inline scenario is a scenario file's JSON (README, "Testing an iOS app"), so it is read as one: the same
    /// reading (`ScenarioJSONPrecheck`) refuses a key given twice, with the same words, and the body around it too.
    @Test("a key twice, in an inline scenario or in the body, is refused as a scenario file refuses it")
    func duplicateKeys() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        let inline = #"{"name": "a", "name": "b", "group": "custom", "summary": "s", "expect": {"ats": "block"}}"#
        let asFile: String
        do {
            _ = try ScenarioCatalog.decode(Data(inline.utf8), source: "a.json")
            Issue.record("the scenario file was accepted")
            return
        } catch let error as ScenarioError {
            asFile = try #require(error.problem)
        }
        #expect(asFile == "the key \"name\" appears twice; keep one")
        let started = try await door.send("POST", "/api/fixtures", body: #"{"scenario": \#(inline)}"#)
        #expect(started.status == 400 && started.error?.field == "scenario.name", "\(started.text)")
        #expect(started.error?.error == "scenario: \(asFile)", "\(started.text)")
        let nested = try await door.send(
            "POST", "/api/fixtures",
            body: #"{"scenario": {"name": "a", "tls": {"minVersion": "TLSv1.2", "minVersion": "TLSv1.3"}}}"#)
        #expect(nested.status == 400 && nested.error?.field == "scenario.tls.minVersion", "\(nested.text)")
        // What the scenario files' own decoder refuses is the front door's 400 too, naming the key inside `scenario`.
        let badTLS = try await door.send(
            "POST", "/api/fixtures",
            body: #"{"scenario": {"name": "mine", "group": "custom", "summary": "s", "tls": {"minVersion": "TLSv9"}, "#
                + #""certificate": {}, "expect": {"ats": "allow"}}}"#)
        #expect(badTLS.status == 400 && badTLS.error?.field == "scenario.tls.minVersion", "\(badTLS.text)")
        #expect(badTLS.error?.error.hasPrefix("scenario.tls.minVersion: ") == true, "\(badTLS.text)")
        let body = try await door.send("POST", "/api/fixtures", body: #"{"scenario": "expired", "scenario": "pinned"}"#)
        #expect(body.status == 400 && body.error?.field == "scenario", "\(body.text)")
        #expect(body.error?.error == "the key \"scenario\" appears twice; keep one", "\(body.text)")
        let renew = try await door.send("POST", "/api/fixtures/abc123/renew", body: #"{"ttl": 5, "ttl": 6}"#)
        #expect(renew.status == 400 && renew.error?.field == "ttl", "\(renew.text)")
        let notObject = try await door.send("POST", "/api/fixtures", body: #"["expired"]"#)
        #expect(notObject.error?.error.contains("the body holds one JSON object") == true, "\(notObject.text)")
        #expect(fleet.calls.withLockedValue { $0.started.isEmpty && $0.renewed.isEmpty }, "a refused body got through")
    }

    /// RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message that
    /// lacks a Host header field and to any request message that contains more than one Host header field line or a
    /// Host header field with an invalid field value." HTTP/1.0 predates Host, so it may leave it out.
    @Test("HTTP/1.1 without Host, or any request with two, is a 400 and a close, on every room of the door")
    func hostHeader() async throws {
        let fleet = FakeFleet()
        for path in ["/api/fixtures", "/", "/scenarios.json"] {
            let none = try await FrontDoorConnection.open(fleet)
            let missing = try await none.send("GET", path, headers: [])
            #expect(missing.status == 400 && missing.text.contains("needs a Host header"), "\(path): \(missing.text)")
            #expect(await !none.isOpen, "\(path)")
            let two = try await FrontDoorConnection.open(fleet)
            let doubled = try await two.send("GET", path, headers: ["Host: localhost:9800", "Host: evil.example"])
            #expect(doubled.status == 400 && doubled.text.contains("2 Host headers"), "\(path): \(doubled.text)")
            #expect(await !two.isOpen, "\(path)")
        }
        let api = try await FrontDoorConnection.open(fleet).send("GET", "/api/fixtures", headers: [])
        #expect(api.error?.error.contains("RFC 9112") == true, "the API's refusal is its one line of JSON: \(api.text)")
        let spaced = try await FrontDoorConnection.open(fleet).send("GET", "/", headers: ["Host: local host"])
        #expect(spaced.status == 400, "\(spaced.text)")
        let connect = try await FrontDoorConnection.open(fleet)
            .send("CONNECT", "expired.fixtures.test:40001", headers: [])
        #expect(connect.status == 400, "\(connect.text)")
        // HTTP/1.0 needs none; HTTP/1.1 with one is answered.
        let old = try await FrontDoorConnection.open(fleet)
            .exchange(ByteBuffer(string: "GET /api/fixtures HTTP/1.0\r\n\r\n"))
        #expect(old.status == 200, "\(old.text)")
        #expect(try await FrontDoorConnection.open(fleet).send("GET", "/api/fixtures").status == 200)
        #expect(fleet.calls.withLockedValue { $0.listedSession.count } == 2, "a refused request reached the fleet")
    }

    /// A start can take a minute (an RSA-8192 key). The client waiting for it is not idle, and nobody else waits.
    @Test("while a start is still being made, its connection outlives the idle timeout and the API answers others")
    func slowStart() async throws {
        let fleet = FakeFleet()
        let gate = Gate()
        fleet.startGate.withLockedValue { $0 = gate }
        let door = try await FrontDoorConnection.open(fleet)
        let body = #"{"scenario": "expired"}"#
        try await door.channel.writeInbound(
            ByteBuffer(
                string: "POST /api/fixtures HTTP/1.1\r\nHost: localhost:9800\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"))
        for await _ in gate.entered { break }
        // The fleet has the start. The client says nothing meanwhile: the idle timeout fires.
        try await door.channel.testingEventLoop.executeInContext {
            door.channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.all)
        }
        #expect(await door.isOpen, "the idle timeout closed a connection whose answer was still being made")
        let other = try await FrontDoorConnection.open(fleet).send("GET", "/api/fixtures")
        #expect(other.status == 200, "another client waited for the start")
        gate.open()
        let created = try await door.answer()
        #expect(created.status == 201, "\(created.text)")
        // Once answered, a silent connection is idle again.
        try await door.channel.testingEventLoop.executeInContext {
            door.channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.all)
        }
        #expect(await !door.isOpen)
    }

    // MARK: Connection records (issue 25)

    @Test("a fixture's and a catalog scenario's connection records: the cursor and wait reach the fleet, JSON back")
    func connectionRoutes() async throws {
        let fleet = FakeFleet()
        let record = ConnectionRecord(
            id: 7, acceptedAt: Date(timeIntervalSince1970: 1_800_000_000), endedAt: nil, peer: "127.0.0.1:52114",
            proxy: .init(authority: "expired.fixtures.test:9831"),
            outcome: .alertReceived(.certificateExpired, phase: .afterServerFlight))
        fleet.connectionLists.withLockedValue {
            $0[.leased("abc123")] = ConnectionList(connections: [record], latestID: 9)
            $0[.catalog("expired")] = ConnectionList(connections: [], latestID: 0)
        }
        let door = try await FrontDoorConnection.open(fleet)

        let leased = try await door.send("GET", "/api/fixtures/abc123/connections?after=3&wait=2.5")
        #expect(leased.status == 200, "\(leased.text)")
        #expect(try leased.decode(ConnectionList.self) == ConnectionList(connections: [record], latestID: 9))
        let keys = try JSONSerialization.jsonObject(with: leased.body) as? [String: Any]
        #expect(Set(keys?.keys.map { $0 } ?? []) == ["connections", "latestID", "latestRequestNumber", "stopped"],
                "\(leased.text)")
        #expect(keys?["stopped"] is NSNull, "a running fixture's stopped is null: \(leased.text)")
        let catalog = try await door.send("GET", "/api/scenarios/expired/connections")
        #expect(try catalog.status == 200 && catalog.decode(ConnectionList.self).latestID == 0, "\(catalog.text)")
        let asked = fleet.connectionsAsked.withLockedValue { $0 }
        #expect(asked.map(\.key) == [.leased("abc123"), .catalog("expired")])
        #expect(asked.map(\.after) == [3, 0] && asked.map(\.wait) == [.milliseconds(2500), .zero])

        let gone = try await door.send("GET", "/api/fixtures/nope/connections")
        #expect(gone.status == 404 && gone.error?.error.contains("no fixture \"nope\"") == true, "\(gone.text)")
        let unknown = try await door.send("GET", "/api/scenarios/no-such/connections")
        #expect(unknown.status == 404 && unknown.error?.error.contains("/scenarios.json") == true, "\(unknown.text)")
        let post = try await door.send("POST", "/api/scenarios/expired/connections", body: "{}")
        #expect(post.status == 405 && post.header("Allow") == "GET", "\(post.text)")
        #expect(await door.isOpen, "keep-alive requests closed the connection")
    }

    @Test("a connections query the API cannot read is a 400 naming the parameter, and never reaches the fleet")
    func connectionQueries() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        let refused: [(query: String, field: String)] = [
            ("wait=31", "wait"), ("wait=-1", "wait"), ("wait=soon", "wait"), ("wait=nan", "wait"), ("wait=", "wait"),
            ("after=-1", "after"), ("after=x", "after"), ("after=1.5", "after"), ("cursor=3", "cursor"),
        ]
        for (query, field) in refused {
            let answer = try await door.send("GET", "/api/fixtures/abc123/connections?\(query)")
            #expect(answer.status == 400 && answer.error?.field == field, "\(query): \(answer.text)")
        }
        #expect(fleet.connectionsAsked.withLockedValue { $0.isEmpty })
    }

    /// A test waits for the connection its load caused: up to 30 s of a request that is not idle, and no one else
    /// waits behind it.
    @Test("while a connections request waits, its connection outlives the idle timeout and the API answers others")
    func connectionsWait() async throws {
        let fleet = FakeFleet()
        fleet.connectionLists.withLockedValue { $0[.leased("abc123")] = ConnectionList(connections: [], latestID: 4) }
        let gate = Gate()
        fleet.connectionsGate.withLockedValue { $0 = gate }
        let door = try await FrontDoorConnection.open(fleet)
        try await door.channel.writeInbound(
            ByteBuffer(string: "GET /api/fixtures/abc123/connections?wait=30 HTTP/1.1\r\nHost: localhost:9800\r\n\r\n"))
        for await _ in gate.entered { break }
        try await door.channel.testingEventLoop.executeInContext {
            door.channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.all)
        }
        #expect(await door.isOpen, "the idle timeout closed a connection whose records were being waited for")
        fleet.connectionsGate.withLockedValue { $0 = nil }
        let other = try await FrontDoorConnection.open(fleet).send("GET", "/api/fixtures/abc123/connections")
        #expect(other.status == 200, "another client waited behind the wait")
        gate.open()
        let answer = try await door.answer()
        #expect(try answer.status == 200 && answer.decode(ConnectionList.self).latestID == 4, "\(answer.text)")
    }

    // MARK: The dashboard

    @Test("the dashboard: the catalog with the front door's addresses, hosts lines, CA downloads, 404 elsewhere")
    func dashboard() async throws {
        let door = try await FrontDoorConnection.open(FakeFleet())
        let json = try await door.send("GET", "/scenarios.json")
        #expect(json.status == 200 && json.header("Content-Type") == "application/json")
        let document = try JSONDecoder().decode(CatalogDocument.self, from: json.body)
        #expect(document.dashboard == "http://localhost:9800/")
        #expect(document.controlAPI == "http://localhost:9800/api/fixtures")
        #expect(document.proxy == FrontDoorConnection.proxy)
        #expect(document.scenarios.map(\.name) == ["expired"])
        let page = try await door.send("GET", "/")
        #expect(page.status == 200 && page.text.contains("id=\"scenario-expired\""))
        let hosts = try await door.send("GET", "/hosts")
        #expect(hosts.text.contains("127.0.0.1\texpired.fixtures.test\n"), "\(hosts.text)")
        let cer = try await door.send("GET", "/ca.cer")
        #expect(
            cer.body == FrontDoorConnection.ca.der
                && cer.header("Content-Disposition")?.contains("tls-fixtures-ca.cer") == true)
        let headOnly = try await door.send("HEAD", "/")
        #expect(headOnly.status == 200 && headOnly.body.isEmpty)
        let missing = try await door.send("GET", "/nope")
        #expect(missing.status == 404 && missing.text.hasPrefix("not found"))
        let post = try await door.send("POST", "/", body: "x", contentType: "text/plain")
        #expect(post.status == 404, "the dashboard answers GET and HEAD only")
    }

    // MARK: The proxy's refusals on the wire

    @Test("the proxy refuses on the wire: CONNECT elsewhere 403, a bad authority 400, absolute-form to a stranger 403")
    func proxyRefusals() async throws {
        let fleet = FakeFleet(served: [
            40_001: ServedFixture(scenario: "expired", port: 40_001, isCleartext: false, address: "127.0.0.1")
        ])
        let stranger = try await FrontDoorConnection.open(fleet)
        let connect = try await stranger.send("CONNECT", "example.com:443", headers: ["Host: example.com:443"])
        #expect(
            connect.status == 403 && connect.text.hasPrefix("403 this proxy reaches only this runner's fixtures"),
            "\(connect.text)")
        #expect(await !stranger.isOpen, "a refused CONNECT left the connection open")

        let malformed = try await FrontDoorConnection.open(fleet).send("CONNECT", "no-port", headers: ["Host: x"])
        #expect(malformed.status == 400 && malformed.text.contains("is not HOST:PORT"), "\(malformed.text)")
        let notAFixture = try await FrontDoorConnection.open(fleet).send(
            "CONNECT", "expired.fixtures.test:40002", headers: ["Host: x"])
        #expect(
            notAFixture.status == 403 && notAFixture.text.contains("no fixture of this runner listens on port 40002"))
        let forward = try await FrontDoorConnection.open(fleet).send(
            "GET", "http://example.com:40001/", headers: ["Host: example.com"])
        #expect(forward.status == 403, "\(forward.text)")

        // A port without the proxy says where it is; the proxy's own port says where the rest is.
        let elsewhere = try await FrontDoorConnection.open(fleet, proxy: false, proxyElsewhere: 9850)
            .send("CONNECT", "expired.fixtures.test:40001", headers: ["Host: x"])
        #expect(
            elsewhere.status == 405 && elsewhere.text.contains("the proxy listens on port 9850"), "\(elsewhere.text)")
        let proxyPort = try await FrontDoorConnection.open(fleet, controlAPI: false, dashboard: false)
        let page = try await proxyPort.send("GET", "/")
        #expect(
            page.status == 404 && page.text.contains("this is the proxy port of tls-fixtures serve"), "\(page.text)")
        let api = try await proxyPort.send("GET", "/api/fixtures")
        #expect(
            api.status == 404 && api.error?.error.contains("the control API is on the dashboard's port") == true,
            "\(api.text)")
    }

    /// `serve --log-connections` prints what `proxyRefused` is told: every proxy request that reached no fixture, so a
    /// load the proxy stopped is never silent. Refusals of the control API are not the proxy's and are not told.
    @Test("every refused proxy request is told to proxyRefused, with its request, peer and status; API refusals are not")
    func proxyRefusalsTold() async throws {
        let fleet = FakeFleet(served: [
            40_001: ServedFixture(scenario: "expired", port: 40_001, isCleartext: false, address: "127.0.0.1")
        ])
        let told = Told()
        let tell: @Sendable (ProxyRefusal) -> Void = { told.append($0) }
        _ = try await FrontDoorConnection.open(fleet, proxyRefused: tell)
            .send("CONNECT", "expird.fixtures.test:40001", headers: ["Host: expird.fixtures.test:40001"])
        _ = try await FrontDoorConnection.open(fleet, proxyRefused: tell)
            .send("GET", "https://expired.fixtures.test:40001/", headers: ["Host: expired.fixtures.test:40001"])
        _ = try await FrontDoorConnection.open(fleet, proxyRefused: tell)
            .send("GET", "http://expired.fixtures.test:40001/", headers: ["Host: expired.fixtures.test:40001"])
        _ = try await FrontDoorConnection.open(fleet, client: "192.0.2.7", proxyRefused: tell)
            .send("CONNECT", "expired.fixtures.test:40001", headers: ["Host: expired.fixtures.test:40001"])
        _ = try await FrontDoorConnection.open(fleet, proxyRefused: tell)
            .send("CONNECT", "expired.fixtures.test:40001", headers: ["Host: a", "Host: b"])
        // Not the proxy's: the API refusing a remote client, a dashboard page that is not there.
        _ = try await FrontDoorConnection.open(fleet, client: "192.0.2.7", proxyRefused: tell).send("GET", "/api/fixtures")
        _ = try await FrontDoorConnection.open(fleet, proxyRefused: tell).send("GET", "/nosuch")
        let lines = told.all.map { "\($0.request) \($0.status) \($0.peer)" }
        #expect(lines == ["CONNECT expird.fixtures.test:40001 403 127.0.0.1:50000",
                          "GET https://expired.fixtures.test:40001/ 400 127.0.0.1:50000",
                          "GET http://expired.fixtures.test:40001/ 400 127.0.0.1:50000",
                          "CONNECT expired.fixtures.test:40001 403 192.0.2.7:50000",
                          "CONNECT expired.fixtures.test:40001 400 127.0.0.1:50000"], "\(told.all)")
        #expect(told.all.first?.line.hasPrefix("proxy: CONNECT expird.fixtures.test:40001 from 127.0.0.1:50000 refused (403): port 40001 is the expired fixture") == true,
                "\(told.all.first?.line ?? "nothing told")")
        #expect(told.all.dropFirst(3).first?.reason.contains("--allow-remote-clients") == true)
    }

    @Test("bytes that are not HTTP get one line and a close")
    func notHTTP() async throws {
        let door = try await FrontDoorConnection.open(FakeFleet())
        let answer = try await door.exchange(
            ByteBuffer(string: "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\r\n\r\n"))
        #expect(answer.status == 400 && answer.text == "400 not an HTTP request\n", "\(answer.text)")
        #expect(await !door.isOpen)
    }
}

/// What a front door told, in order.
private struct Told: Sendable {
    private let refusals = NIOLockedValueBox<[ProxyRefusal]>([])
    func append(_ refusal: ProxyRefusal) { refusals.withLockedValue { $0.append(refusal) } }
    var all: [ProxyRefusal] { refusals.withLockedValue { $0 } }
}
