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
        if failure.status == 429 { answer.extraHeaders.append(("Retry-After", "1")) }
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

    init(_ status: Int, _ message: String, field: String? = nil) {
        self.status = status
        body = APIError(error: message.escapingControlCharacters, field: field)
    }

    var description: String { "\(status): \(body.error)" }
}

/// The one table from the fleet's errors to the control API's statuses. Every `FleetError` code has a row (a test holds
/// that), and where the fleet's fix would not help a client of the API, the row words it in the API's routes.
enum FleetErrorStatus {
    static let table: [FleetError.Code: (status: HTTPResponseStatus, fix: String?)] = [
        .invalidTTL: (.badRequest, nil),
        .invalidSession: (.badRequest, nil),
        .unknownScenario: (.badRequest, nil),
        .invalidScenario: (.badRequest, nil),
        .catalogName: (.badRequest, nil),
        .invalidKeyName: (.badRequest, nil),
        .cannotPrepare: (.unprocessableEntity, nil),
        .full: (.tooManyRequests, "stop some (DELETE /api/fixtures/ID or /api/sessions/TAG) or let their leases end"),
        .stopping: (.serviceUnavailable, nil),
        .preparing: (
            .serviceUnavailable, "GET /api/health?scenarios=NAME answers 200 once it serves (`tls-fixtures wait "
                + "--scenario NAME`); start it then"
        ),
        .cannotListen: (.serviceUnavailable, nil),
        .cannotDescribe: (.internalServerError, nil),
        .noSuchFixture: (.notFound, "GET /api/fixtures lists the running ones"),
    ]

    static func failure(_ error: FleetError) -> ControlAPIFailure {
        let row = table[error.code] ?? (.internalServerError, nil)
        let message = row.fix.map { "\(error.reason); \($0)" } ?? error.description
        return ControlAPIFailure(Int(row.status.code), message, field: error.field)
    }
}
