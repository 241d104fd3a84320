import Foundation
import NIOHTTP1
import TLSFixturesFleet
import TLSFixturesWire

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
        var answer = HTTPAnswer(
            status: HTTPResponseStatus(statusCode: failure.status), contentType: "application/json",
            body: body + Data("\n".utf8))
        if let seconds = failure.retryAfter { answer.extraHeaders.append(("Retry-After", "\(seconds)")) }
        if let allow = failure.allow { answer.extraHeaders.append(("Allow", allow)) }
        return answer
    }

    static func text(_ status: HTTPResponseStatus, _ line: String) -> HTTPAnswer {
        HTTPAnswer(status: status, contentType: "text/plain; charset=utf-8", body: Data((line + "\n").utf8))
    }

    func adding(_ name: String, _ value: String) -> HTTPAnswer {
        var answer = self
        answer.extraHeaders.append((name, value))
        return answer
    }
}

/// Why the front door refused a request: the HTTP status and the one-line body (the front door's own refusals, and
/// the fleet's errors once `FleetErrorStatus` has given them a status).
struct ControlAPIFailure: Error, Sendable, Equatable, CustomStringConvertible {
    var status: Int
    var body: APIError
    /// For `405`: the methods the resource takes (the `Allow` header).
    var allow: String?
    /// For `429` and `503`: seconds after which to try again (the `Retry-After` header, RFC 9110 §10.2.3).
    var retryAfter: Int?

    init(_ status: Int, _ message: String, field: String? = nil) {
        self.status = status
        body = APIError(error: message.escapingControlCharacters, field: field)
    }

    var description: String { "\(status): \(body.error)" }
}

/// The one table from the fleet's errors to the control API's statuses. Every `FleetError` code has a row (a test holds
/// that), and where the fleet's fix would not help a client of the API, the row words it in the API's routes.
enum FleetErrorStatus {
    typealias Row = (status: HTTPResponseStatus, fix: String?, retryAfter: Int?)

    static let table: [FleetError.Code: Row] = [
        .invalidTTL: (.badRequest, nil, nil),
        .invalidSession: (.badRequest, nil, nil),
        .unknownScenario: (.badRequest, nil, nil),
        .invalidScenario: (.badRequest, nil, nil),
        .catalogName: (.badRequest, nil, nil),
        .invalidKeyName: (.badRequest, nil, nil),
        .cannotPrepare: (.unprocessableEntity, nil, nil),
        .full: (
            .tooManyRequests, "stop some (DELETE /api/fixtures/ID or /api/sessions/TAG) or let their leases end", 1
        ),
        .stopping: (.serviceUnavailable, nil, nil),
        // A place frees when a slow key is made: seconds to a minute.
        .busy: (
            .serviceUnavailable, "try again after Retry-After, or start a scenario whose key exists (catalog "
                + "scenarios started once, or an inline one with a keyName)", 10
        ),
        // A first run's slow key: seconds to a minute.
        .preparing: (
            .serviceUnavailable, "GET /api/health?scenarios=NAME answers 200 once it serves (`tls-fixtures wait "
                + "--scenario NAME`); start it then", 5
        ),
        .cannotListen: (.serviceUnavailable, nil, nil),
        .cannotDescribe: (.internalServerError, nil, nil),
        .noSuchFixture: (.notFound, "GET /api/fixtures lists the running ones", nil),
        .noSuchScenario: (.notFound, nil, nil),
        // RFC 9110 §15.5.10: the scenario exists but its state here has no records to give.
        .notServing: (.conflict, nil, nil),
    ]

    static func failure(_ error: FleetError) -> ControlAPIFailure {
        let row = table[error.code] ?? (.internalServerError, nil, nil)
        let message = row.fix.map { "\(error.reason); \($0)" } ?? error.description
        var failure = ControlAPIFailure(Int(row.status.code), message, field: error.part?.field)
        failure.retryAfter = row.retryAfter
        return failure
    }
}
