import Foundation
import NIOHTTP1
import TLSFixturesWire
import TLSFixturesScenario

/// One whole HTTP answer, ready to write.
struct HTTPAnswer: Sendable {
    var status: HTTPResponseStatus
    var contentType: String?
    var body: Data
    var extraHeaders: [(String, String)] = []

    static func json<T: Encodable>(_ status: HTTPResponseStatus, _ value: T) -> HTTPAnswer {
        let body = (try? FixtureAPI.encoder().encode(value)) ?? Data("{}".utf8)
        return HTTPAnswer(status: status, contentType: "application/json", body: body + Data("\n".utf8))
    }

    /// One line of JSON, so a log or `curl` shows the whole error on one line.
    static func failure(_ failure: ControlAPIFailure) -> HTTPAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(failure.body)) ?? Data("{}".utf8)
        var answer = HTTPAnswer(status: HTTPResponseStatus(statusCode: failure.status), contentType: "application/json",
                                body: body + Data("\n".utf8))
        if failure.status == 429 { answer.extraHeaders.append(("Retry-After", "1")) }
        if let allow = failure.allow { answer.extraHeaders.append(("Allow", allow)) }
        return answer
    }

    static func text(_ status: HTTPResponseStatus, _ line: String) -> HTTPAnswer {
        HTTPAnswer(status: status, contentType: "text/plain; charset=utf-8", body: Data((line + "\n").utf8))
    }
}

/// The control API's routes over `FixtureLeases` (see `FixtureAPI` for the table): a request in, an answer out, no
/// sockets, so every status is tested without one.
enum ControlAPIRoutes {
    struct Request: Sendable {
        var method: HTTPMethod
        var uri: String
        var contentType: String?
        var body: Data
    }

    static func answer(_ request: Request, leases: FixtureLeases) async -> HTTPAnswer {
        do {
            return try await route(request, leases: leases)
        } catch let failure as ControlAPIFailure {
            return .failure(failure)
        } catch {
            return .failure(ControlAPIFailure(500, "\(error)"))
        }
    }

    private static func route(_ request: Request, leases: FixtureLeases) async throws -> HTTPAnswer {
        let (path, query) = split(request.uri)
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (parts.count, parts.first, parts.dropFirst().first) {
        case (2, "api", "fixtures"):
            switch request.method {
            case .GET:
                let session = query["session"]
                return .json(.ok, FixtureList(fixtures: leases.list(session: session)))
            case .POST:
                let described = try await leases.start(try decodeStart(request))
                return .json(.created, described).adding("Location", "\(FixtureAPI.fixturesPath)/\(described.id)")
            default:
                throw methodNotAllowed(request.method, allow: ["GET", "POST"])
            }
        case (3, "api", "fixtures"):
            let id = parts[2]
            switch request.method {
            case .GET: return .json(.ok, try leases.describe(id))
            case .DELETE:
                await leases.stop(id)
                return HTTPAnswer(status: .noContent, contentType: nil, body: Data())
            default: throw methodNotAllowed(request.method, allow: ["GET", "DELETE"])
            }
        case (4, "api", "fixtures") where parts[3] == "renew":
            guard request.method == .POST else { throw methodNotAllowed(request.method, allow: ["POST"]) }
            let renewal: RenewFixtureRequest = request.body.allSatisfy(\.isWhitespaceByte)
                ? RenewFixtureRequest() : try decode(RenewFixtureRequest.self, request, known: ["ttl"])
            return .json(.ok, try leases.renew(parts[2], ttl: renewal.ttl))
        case (3, "api", "sessions"):
            guard request.method == .DELETE else { throw methodNotAllowed(request.method, allow: ["DELETE"]) }
            let session = parts[2]
            guard FixtureAPI.isValidSession(session) else {
                throw ControlAPIFailure(400, "\"\(session)\" is not a session tag: use 1–\(FixtureAPI.maximumSessionLength) letters, digits, '.', '_' or '-'", field: "session")
            }
            return .json(.ok, SessionStopped(session: session, stopped: await leases.stopSession(session)))
        default:
            throw ControlAPIFailure(404, "no such endpoint \(path): the control API is POST|GET \(FixtureAPI.fixturesPath), "
                                    + "GET|DELETE \(FixtureAPI.fixturesPath)/ID, POST \(FixtureAPI.fixturesPath)/ID/renew, DELETE \(FixtureAPI.sessionsPath)/TAG")
        }
    }

    private static func methodNotAllowed(_ method: HTTPMethod, allow: [String]) -> ControlAPIFailure {
        var failure = ControlAPIFailure(405, "\(method.rawValue) is not allowed here; use \(allow.joined(separator: " or "))")
        failure.allow = allow.joined(separator: ", ")
        return failure
    }

    static func decodeStart(_ request: Request) throws -> StartFixtureRequest {
        try decode(StartFixtureRequest.self, request, known: ["scenario", "ttl", "session"])
    }

    /// Strict: a JSON object, of `application/json`, with no key the request type does not know (a misspelt `"tll"`
    /// would otherwise be a silent 300-second lease).
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, known: Set<String>) throws -> T {
        guard request.contentType?.lowercased().split(separator: ";").first?.trimmingCharacters(in: .whitespaces) == "application/json" else {
            throw ControlAPIFailure(415, "send the body as JSON (Content-Type: application/json)")
        }
        guard !request.body.allSatisfy(\.isWhitespaceByte) else {
            throw ControlAPIFailure(400, "the body is empty; send a JSON object such as {\"scenario\": \"expired\"}")
        }
        let object: [String: JSONValue]
        do {
            object = try JSONDecoder().decode([String: JSONValue].self, from: request.body)
        } catch {
            throw ControlAPIFailure(400, "the body is not a JSON object (\(ScenarioCatalog.syntaxProblem(in: request.body) ?? "expected {…}"))")
        }
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw ControlAPIFailure(400, "unknown key \"\(unknown)\" (known: \(known.sorted().joined(separator: ", ")))", field: unknown)
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

    private static func split(_ uri: String) -> (path: String, query: [String: String]) {
        let pieces = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if pieces.count == 2 {
            for pair in pieces[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                if kv.count == 2 { query[kv[0]] = kv[1] }
            }
        }
        return (String(pieces[0]), query)
    }
}

extension HTTPAnswer {
    func adding(_ name: String, _ value: String) -> HTTPAnswer {
        var answer = self
        answer.extraHeaders.append((name, value))
        return answer
    }
}

extension UInt8 {
    var isWhitespaceByte: Bool { self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D }
}
