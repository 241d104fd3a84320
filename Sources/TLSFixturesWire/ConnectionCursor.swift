import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a check starts reading a fixture's records: its latest connection and its latest answered request. A check
/// counts what the fixture saw after both — connections opened since, and requests answered since on any connection,
/// so a client that reuses a kept-alive connection opened before the check is seen (`ConnectionRecord.answeredRequest
/// (after:)`).
public struct ConnectionCursor: Sendable, Hashable, CustomStringConvertible {
    /// The id of the latest connection (0 before the first).
    public var connection: Int
    /// The number of the latest answered request (0 before the first).
    public var request: Int

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(connection: Int, request: Int) {
        self.connection = connection
        self.request = request
    }

    /// Before anything: every record counts.
    public static let start = ConnectionCursor(connection: 0, request: 0)

    /// `connection 7, request 12`.
    public var description: String { "connection \(connection), request \(request)" }

    /// The records that belong after this cursor: connections opened after it, and older ones that answered a request
    /// after it.
    public func window(_ records: [ConnectionRecord]) -> [ConnectionRecord] {
        records.filter { $0.id > connection || $0.answeredRequest(after: self) }
    }
}

/// What a fixture stamps on every answer (`X-TLS-Fixture-Request: 9831/7/12`): the port that answered, the connection
/// and the request's number. A check that has the client's response reads it to know that the answer came from this
/// fixture, after its cursor — not from a cache, a mock, or another fixture a parallel test loaded.
public struct ResponseStamp: Sendable, Hashable, CustomStringConvertible {
    /// The header's name.
    public static let header = "X-TLS-Fixture-Request"

    /// The port of the fixture that answered.
    public var port: Int
    /// The connection's id in that fixture's records.
    public var connection: Int
    /// The request's number (`ConnectionRecord.Request.number`).
    public var request: Int

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(port: Int, connection: Int, request: Int) {
        self.port = port
        self.connection = connection
        self.request = request
    }

    /// Parses `9831/7/12`; nil for anything else.
    public init?(_ value: String) {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let port = Int(parts[0]), let connection = Int(parts[1]), let request = Int(parts[2])
        else { return nil }
        self.init(port: port, connection: connection, request: request)
    }

    /// `9831/7/12`, the header's value.
    public var description: String { "\(port)/\(connection)/\(request)" }

    /// What a load returned, as far as it tells where the answer came from: URLSession's `(Data, URLResponse)` and a
    /// bare `URLResponse` are read; anything else tells nothing.
    public enum Reading: Sendable, Hashable {
        /// The load's value is not a URL response: nothing to read.
        case notAResponse
        /// A URL response without the header: it came from no fixture.
        case unstamped
        /// The fixture's stamp.
        case stamped(ResponseStamp)
    }

    /// Reads the stamp from a load's value.
    public static func read(_ value: Any) -> Reading {
        let response: URLResponse
        if let (_, answer) = value as? (Data, URLResponse) {
            response = answer
        } else if let answer = value as? URLResponse {
            response = answer
        } else {
            return .notAResponse
        }
        guard let http = response as? HTTPURLResponse else { return .notAResponse }
        guard let value = http.value(forHTTPHeaderField: header), let stamp = ResponseStamp(value) else {
            return .unstamped
        }
        return .stamped(stamp)
    }
}

/// Which of a fixture's URLs a load of the differential check is given.
public enum FixtureURLChoice: String, Sendable, Hashable, CaseIterable {
    /// `https://localhost:PORT/` (the address a fixture listens on): nothing to resolve, and App Transport Security
    /// exempts it on Apple platforms.
    case localhost
    /// `https://NAME.fixtures.test:PORT/`, which App Transport Security judges: through the runner's proxy, or with the
    /// name mapped to 127.0.0.1.
    case qualifiedName
}
