import Foundation
import NIOHTTP1
import TLSFixturesFleet
import TLSFixturesScenario
import TLSFixturesWire

/// The control API (`FixtureAPI` has the paths and limits): a table of routes over the fleet's narrow views, a request
/// in and an answer out, no sockets, so every route and status is tested in memory. A new endpoint is a row of
/// `routes` and a method here.
struct ControlAPI: Sendable {
    typealias Fleet = FleetQueries & FleetCommands

    struct Request: Sendable {
        var method: HTTPMethod
        var uri: String
        var contentType: String?
        var body: Data
    }

    /// What a handler gets: the request and the path's one variable segment (`ID`, `TAG`, `NAME`), when the pattern
    /// has one.
    typealias Handler = @Sendable (ControlAPI, Request, _ parameter: String) async throws -> HTTPAnswer

    /// One resource: its path (`ID`, `TAG` and `NAME` stand for a segment) and its methods, in the order the 404
    /// lists them.
    struct Route: Sendable {
        var pattern: String
        var methods: [(method: HTTPMethod, handler: Handler)]

        init(_ pattern: String, _ methods: [(method: HTTPMethod, handler: Handler)]) {
            self.pattern = pattern
            self.methods = methods
        }

        /// The variable segment when `segments` is this route's path ("" when the pattern has none); nil otherwise.
        func match(_ segments: [String]) -> String? {
            let parts = pattern.split(separator: "/").map(String.init)
            guard parts.count == segments.count else { return nil }
            var parameter = ""
            for (part, segment) in zip(parts, segments) {
                if ["ID", "TAG", "NAME"].contains(part) { parameter = segment } else if part != segment { return nil }
            }
            return parameter
        }
    }

    static let routes: [Route] = [
        Route(
            FixtureAPI.fixturesPath,
            [
                (.POST, { api, request, _ in try await api.start(request) }),
                (.GET, { api, request, _ in try api.list(request) }),
            ]),
        Route(
            FixtureAPI.fixturesPath + "/ID",
            [
                (.GET, { api, _, id in try api.describe(id) }),
                (.DELETE, { api, _, id in await api.stop(id) }),
            ]),
        Route(FixtureAPI.fixturesPath + "/ID/renew", [(.POST, { api, request, id in try api.renew(id, request) })]),
        Route(
            FixtureAPI.fixturesPath + "/ID/" + FixtureAPI.connectionsSegment,
            [(.GET, { api, request, id in try await api.connections(of: .leased(id), request) })]),
        Route(
            FixtureAPI.scenariosPath + "/NAME/" + FixtureAPI.connectionsSegment,
            [(.GET, { api, request, name in try await api.connections(of: .catalog(name), request) })]),
        Route(FixtureAPI.sessionsPath + "/TAG", [(.DELETE, { api, _, tag in try await api.stopSession(tag) })]),
        Route(FixtureAPI.healthPath, [(.GET, { api, request, _ in try api.health(request) })]),
    ]

    let fleet: any Fleet
    /// Where the runner's proxy listens, once it does: every description names it.
    let proxy: @Sendable () -> ProxyEndpoint?

    func answer(_ request: Request) async -> HTTPAnswer {
        do {
            return try await route(request)
        } catch let failure as ControlAPIFailure {
            return .failure(failure)
        } catch let error as FleetError {
            return .failure(FleetErrorStatus.failure(error))
        } catch {
            return .failure(ControlAPIFailure(500, "\(error)"))
        }
    }

    private func route(_ request: Request) async throws -> HTTPAnswer {
        let path = RequestGuard.path(request.uri)
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        for route in Self.routes {
            guard let parameter = route.match(segments) else { continue }
            guard let handler = route.methods.first(where: { $0.method == request.method })?.handler else {
                let allowed = route.methods.map(\.method.rawValue)
                var failure = ControlAPIFailure(
                    405, "\(request.method.rawValue) is not allowed here; use \(allowed.joined(separator: " or "))")
                failure.allow = allowed.joined(separator: ", ")
                throw failure
            }
            return try await handler(self, request, parameter)
        }
        let endpoints = Self.routes.map { route in
            route.methods.map(\.method.rawValue).joined(separator: "|") + " " + route.pattern
        }
        throw ControlAPIFailure(
            404, "no such endpoint \(path): the control API is \(endpoints.joined(separator: ", "))")
    }

    // MARK: The handlers

    private func start(_ request: Request) async throws -> HTTPAnswer {
        let body = try Self.decode(StartFixtureRequest.self, request, known: ["scenario", "ttl", "session"])
        let started = try await fleet.startLeased(try LeaseRequest(body))
        let described: FixtureDescription
        do {
            described = try describe(started)
        } catch {
            // A fixture nobody was told of would run until its lease ends.
            await fleet.stopLeased(id: started.id)
            throw error
        }
        return .json(.created, described).adding("Location", "\(FixtureAPI.fixturesPath)/\(described.id)")
    }

    private func list(_ request: Request) throws -> HTTPAnswer {
        let session = RequestGuard.query(request.uri).last { $0.name == "session" }?.value
        return .json(.ok, FixtureList(fixtures: try fleet.leasedFixtures(session: session).map(describe)))
    }

    private func describe(_ id: String) throws -> HTTPAnswer {
        .json(.ok, try describe(try fleet.leasedFixture(id: id)))
    }

    /// Idempotent: a fixture stopped already is `204` too.
    private func stop(_ id: String) async -> HTTPAnswer {
        await fleet.stopLeased(id: id)
        return HTTPAnswer(status: .noContent, contentType: nil, body: Data())
    }

    private func renew(_ id: String, _ request: Request) throws -> HTTPAnswer {
        let renewal: RenewFixtureRequest =
            request.body.allSatisfy(\.isWhitespaceByte)
            ? RenewFixtureRequest() : try Self.decode(RenewFixtureRequest.self, request, known: ["ttl"])
        return .json(.ok, try describe(try fleet.renewLease(id: id, ttl: renewal.ttl)))
    }

    private func stopSession(_ session: String) async throws -> HTTPAnswer {
        guard FixtureAPI.isValidSession(session) else {
            throw ControlAPIFailure(
                400,
                "\"\(session)\" is not a session tag: use 1–\(FixtureAPI.maximumSessionLength) letters, digits, "
                    + "'.', '_' or '-'", field: "session")
        }
        return .json(.ok, SessionStopped(session: session, stopped: await fleet.stopSession(session)))
    }

    /// `200` when ready, `503` (with `Retry-After` while preparing) when not, and the same `RunnerHealth` either way,
    /// so `curl -sf` is a readiness check. `?scenarios=a,b` asks about those alone.
    private func health(_ request: Request) throws -> HTTPAnswer {
        let pairs = RequestGuard.query(request.uri)
        if let unknown = pairs.first(where: { $0.name != "scenarios" })?.name {
            throw ControlAPIFailure(
                400, "unknown query parameter \"\(unknown)\" (known: scenarios=NAME,NAME…)", field: unknown)
        }
        var asked: [String]? = nil
        if let list = pairs.last?.value {
            asked = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard asked?.isEmpty == false else {
                throw ControlAPIFailure(400, "scenarios= names no scenario; give NAME,NAME…", field: "scenarios")
            }
        }
        let health = RunnerHealth(fleet, asking: asked)
        let answer = HTTPAnswer.json(health.ready ? .ok : .serviceUnavailable, health)
        return health.status == .preparing ? answer.adding("Retry-After", "1") : answer
    }

    /// The fixture's records after `?after=N` (default 0: every one kept) — and, with `?requestsAfter=M`, older
    /// connections that answered a request numbered above M — waiting up to `?wait=S` seconds
    /// (`FixtureAPI.maximumConnectionWait` at most; default 0, at once) for one to settle. The wait is a task on the
    /// fleet's connection log, woken by every change: it holds no thread, and the connection's other requests queue.
    private func connections(of fixture: FixtureFleet.Key, _ request: Request) async throws -> HTTPAnswer {
        let (after, wait) = try Self.connectionQuery(request.uri)
        return .json(.ok, try await fleet.connections(of: fixture, after: after, wait: wait))
    }

    static func connectionQuery(_ uri: String) throws -> (after: ConnectionCursor, wait: Duration) {
        var after = 0
        var requestsAfter = Int.max
        var wait = Duration.zero
        for (name, value) in RequestGuard.query(uri) {
            switch name {
            case "after":
                guard let number = Int(value), number >= 0 else {
                    throw ControlAPIFailure(
                        400, "after=\(value.escapingControlCharacters) is not a connection id; give a whole number "
                            + "from 0 (latestID of the last answer)", field: "after")
                }
                after = number
            case "requestsAfter":
                guard let number = Int(value), number >= 0 else {
                    throw ControlAPIFailure(
                        400, "requestsAfter=\(value.escapingControlCharacters) is not a request number; give a whole "
                            + "number from 0 (latestRequestNumber of the last answer)", field: "requestsAfter")
                }
                requestsAfter = number
            case "wait":
                let limit = FixtureAPI.maximumConnectionWait
                guard let seconds = Double(value), seconds.isFinite, (0...Double(limit)).contains(seconds) else {
                    throw ControlAPIFailure(
                        400, "wait=\(value.escapingControlCharacters) is not a wait; give seconds from 0 to \(limit)",
                        field: "wait")
                }
                wait = .milliseconds(Int64((seconds * 1000).rounded()))
            default:
                throw ControlAPIFailure(
                    400, "unknown query parameter \"\(name.escapingControlCharacters)\" (known: after=ID, "
                        + "requestsAfter=N, wait=SECONDS)", field: name)
            }
        }
        return (ConnectionCursor(connection: after, request: requestsAfter), wait)
    }

    /// `fixture` as a client is told of it, with the runner's proxy; a 500 when its material cannot be written.
    private func describe(_ fixture: LeasedFixture) throws -> FixtureDescription {
        do {
            return try FixtureDescription(fixture, proxy: proxy())
        } catch {
            throw ControlAPIFailure(500, "cannot describe \(fixture.scenario.name): \(error)")
        }
    }

    // MARK: Reading requests

    /// Strict: a JSON object, of `application/json`, with no key the request type does not know (a misspelt `"tll"`
    /// would otherwise be a silent 300-second lease), read first as scenario files are (`ScenarioJSONPrecheck`: no key
    /// twice anywhere, in an inline scenario or around it; whole numbers that fit; no control characters), so an inline
    /// scenario is refused exactly where its file would be, and `"ttl": 1.5` is a 400 naming `ttl`.
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, known: Set<String>) throws -> T {
        guard
            request.contentType?.lowercased().split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
                == "application/json"
        else {
            throw ControlAPIFailure(415, "send the body as JSON (Content-Type: application/json)")
        }
        guard !request.body.allSatisfy(\.isWhitespaceByte) else {
            throw ControlAPIFailure(400, "the body is empty; send a JSON object such as {\"scenario\": \"expired\"}")
        }
        if let finding = ScenarioJSONPrecheck.finding(in: Array(request.body), document: "the body") {
            let place = finding.path.isEmpty ? "" : finding.path.joined(separator: ".") + ": "
            throw ControlAPIFailure(400, place + finding.problem, field: finding.field)
        }
        let object: [String: JSONValue]
        do {
            object = try JSONDecoder().decode([String: JSONValue].self, from: request.body)
        } catch {
            throw ControlAPIFailure(
                400,
                "the body is not a JSON object (\(ScenarioCatalog.syntaxProblem(in: request.body) ?? "expected {…}"))")
        }
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw ControlAPIFailure(
                400, "unknown key \"\(unknown)\" (known: \(known.sorted().joined(separator: ", ")))", field: unknown)
        }
        do {
            return try FixtureAPI.decoder().decode(T.self, from: request.body)
        } catch let error as DecodingError {
            let (field, problem) = describe(error)
            throw ControlAPIFailure(400, field.map { "\($0): \(problem)" } ?? problem, field: field)
        }
    }

    private static func describe(_ error: DecodingError) -> (field: String?, problem: String) {
        func field(_ path: [CodingKey]) -> String? {
            let text = path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return text.isEmpty ? nil : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            return (field(context.codingPath + [key]), "missing; for example {\"scenario\": \"expired\"}")
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let expected = type == Int.self ? "whole seconds (a number)" : type == String.self ? "a string" : "\(type)"
            return (field(context.codingPath), "expected \(expected)")
        case .dataCorrupted(let context):
            return (field(context.codingPath), context.debugDescription)
        @unknown default:
            return (nil, "\(error)")
        }
    }
}

extension UInt8 {
    var isWhitespaceByte: Bool { self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D }
}
