import Foundation

/// What a fixture saw of one connection it accepted: who connected, what the client offered, how the handshake ended,
/// and which HTTP requests it answered. The evidence a refusal test rests on: a client that refused a scenario reached
/// the fixture and ended the handshake (an alert, or a close without a request), which no thrown error alone can show.
///
/// A fixture keeps the most recent ones in a ring (`FixtureConfiguration.connectionRecordLimit`, 64 by default). A
/// record appears when the connection is accepted and fills in as it goes: `clientHello` when the ClientHello arrives,
/// `outcome` when the handshake ends, `requests` as they are answered, `endedAt` when the connection closes.
///
/// JSON (the control API's encoding, `FixtureAPI.encoder()`: ISO 8601 dates; every key present, `null` when there is
/// nothing — `"endedAt": null` while open, `"proxy": null`, `"clientHello": null` before one arrived; decoding takes such
/// a key absent too, as older runners wrote it):
///
/// ```json
/// {"id": 7, "acceptedAt": "2026-05-01T10:00:00Z", "endedAt": "2026-05-01T10:00:00Z", "peer": "127.0.0.1:52114",
///  "clientHello": {"serverName": "expired.fixtures.test", "legacyVersion": "TLSv1.2",
///                  "supportedVersions": ["TLSv1.3", "TLSv1.2"], "cipherSuites": ["TLS_AES_256_GCM_SHA384", …],
///                  "groups": ["x25519", …], "signatureAlgorithms": ["ecdsa_secp256r1_sha256", …],
///                  "alpn": ["http/1.1"], "extensions": ["server_name", "status_request", …]},
///  "outcome": {"kind": "alertReceived", "alert": {"code": 45, "name": "certificate_expired"},
///              "phase": "afterServerFlight"},
///  "alertAfterHandshake": null, "requests": [], "requestCount": 0, "proxy": null}
/// ```
public struct ConnectionRecord: Sendable, Hashable, Codable, Identifiable {
    /// Numbers the fixture's connections from 1 as it sets them up (connections accepted at the same moment may be
    /// numbered in either order); a cursor for `connections(after:)`.
    public var id: Int
    /// When the fixture accepted the connection.
    public var acceptedAt: Date
    /// When it closed; nil while it is open.
    public var endedAt: Date?
    /// The client's address and port as the fixture saw them (`127.0.0.1:52114`, `[::1]:52114`).
    public var peer: String
    /// Set when the connection came through the runner's CONNECT proxy: for which authority the client asked.
    public var proxy: Proxy?
    /// The client's ClientHello as the server parsed it; nil before one arrived (and for plain HTTP).
    public var clientHello: ClientHello?
    /// How the handshake ended; nil while it is still going on.
    public var outcome: Outcome?
    /// An alert the client sent after the handshake had completed (close_notify aside): a client that verifies the
    /// certificate only once the handshake is done refuses this way.
    public var alertAfterHandshake: TLSAlert?
    /// The HTTP requests answered on this connection, the first `maximumRecordedRequests` of them; one the server could
    /// not parse is among them as `Request.malformed`, with the 400 it was answered.
    public var requests: [Request]
    /// How many requests were answered in all (`requests` keeps the first few).
    public var requestCount: Int
    /// The number of the latest request answered on this connection, counted across the fixture's connections from 1
    /// (`Request.number`): a kept-alive connection opened before a test's cursor shows by it that it answered a
    /// request after the cursor. nil before the first request (and from runners that did not count).
    public var lastRequestNumber: Int?

    /// `requests` keeps at most this many: a keep-alive client may send any number, and a record's size is bounded.
    public static let maximumRecordedRequests = 16

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(id: Int, acceptedAt: Date, endedAt: Date? = nil, peer: String, proxy: Proxy? = nil,
                clientHello: ClientHello? = nil, outcome: Outcome? = nil, alertAfterHandshake: TLSAlert? = nil,
                requests: [Request] = [], requestCount: Int? = nil, lastRequestNumber: Int? = nil) {
        self.id = id; self.acceptedAt = acceptedAt; self.endedAt = endedAt; self.peer = peer; self.proxy = proxy
        self.clientHello = clientHello; self.outcome = outcome; self.alertAfterHandshake = alertAfterHandshake
        self.requests = requests; self.requestCount = requestCount ?? requests.count
        self.lastRequestNumber = lastRequestNumber ?? requests.compactMap(\.number).max()
    }

    private enum CodingKeys: String, CodingKey {
        case id, acceptedAt, endedAt, peer, proxy, clientHello, outcome, alertAfterHandshake, requests, requestCount
        case lastRequestNumber
    }

    /// Every key, `null` for what is not known (docs/cli.md's promise for JSON output); `init(from:)`, synthesized,
    /// takes a nil one absent or `null`.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(acceptedAt, forKey: .acceptedAt)
        try c.encode(endedAt, forKey: .endedAt)
        try c.encode(peer, forKey: .peer)
        try c.encode(proxy, forKey: .proxy)
        try c.encode(clientHello, forKey: .clientHello)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(alertAfterHandshake, forKey: .alertAfterHandshake)
        try c.encode(requests, forKey: .requests)
        try c.encode(requestCount, forKey: .requestCount)
        try c.encode(lastRequestNumber, forKey: .lastRequestNumber)
    }

    /// The runner's proxy carried this connection.
    public struct Proxy: Sendable, Hashable, Codable {
        /// The `CONNECT` request's authority (`expired.fixtures.test:9831`).
        public var authority: String

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(authority: String) { self.authority = authority }
    }

    /// One HTTP request the fixture answered.
    public struct Request: Sendable, Hashable, Codable {
        /// `GET`, `HEAD`, …
        public var method: String
        /// The request target as sent (`/`, `/path?query`).
        public var path: String
        /// The status answered: 200, or 400 for a request that could not be parsed.
        public var status: Int
        /// Its number among every request the fixture answered, on any connection, from 1: the order in which they
        /// were answered, and the `request` of the `X-TLS-Fixture-Request` header the answer carried. nil from runners
        /// that did not count.
        public var number: Int?

        /// `method` and `path` of a request that could not be parsed (bytes that are not HTTP), answered 400.
        public static let malformed = "(malformed)"

        /// Whether this was a request that could not be parsed, answered 400 (`method` and `path` are `malformed`).
        public var isMalformed: Bool { method == Self.malformed }

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(method: String, path: String, status: Int, number: Int? = nil) {
            self.method = method; self.path = path; self.status = status; self.number = number
        }

        private enum CodingKeys: String, CodingKey { case method, path, status, number }

        /// Every key, `number` `null` when not counted.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(method, forKey: .method)
            try c.encode(path, forKey: .path)
            try c.encode(status, forKey: .status)
            try c.encode(number, forKey: .number)
        }
    }

    /// Whether this connection answered a request after `cursor`: any request, for a connection opened after it; one
    /// numbered above the cursor's, for a kept-alive connection opened before it.
    public func answeredRequest(after cursor: ConnectionCursor) -> Bool {
        guard requestCount > 0 else { return false }
        if let last = lastRequestNumber { return last > cursor.request }
        return id > cursor.connection
    }

    /// Where the handshake was, from the server's side, when it ended without completing.
    public enum Phase: String, Sendable, Hashable, Codable {
        /// No complete ClientHello had arrived (none at all, or part of one).
        case beforeClientHello
        /// The ClientHello had arrived; the server had not answered it yet.
        case afterClientHello
        /// The server had sent its flight (ServerHello and, before TLS 1.3, its certificate): the client was deciding.
        case afterServerFlight

        /// `before the ClientHello`, `after the server's certificate`, …
        public var phrase: String {
            switch self {
            case .beforeClientHello: return "before its ClientHello"
            case .afterClientHello: return "after its ClientHello, before the server answered"
            case .afterServerFlight: return "after the server's certificate"
            }
        }
    }

    /// Whether the record says how the connection went for the load that caused it: it closed, or it answered a
    /// request. (A connection that completed the handshake and is still open may yet send a request or hang up.)
    public var isSettled: Bool { endedAt != nil || requestCount > 0 }

    /// One line in a test author's terms: `the handshake completed (TLSv1.3, TLS_AES_128_GCM_SHA256) and GET / was
    /// answered 200`, `the client sent certificate_expired(45) after the server's certificate`, ….
    public var summary: String {
        var text: String
        switch outcome {
        case nil:
            text = endedAt == nil
                ? "the handshake is still in progress" : "it closed before any TLS outcome was recorded"
        case .cleartext?:
            text = "a plain HTTP connection (no TLS)"
        case .unrecognized(let kind)?:
            text = "an outcome of kind \"\(kind.quotedForMessage(limit: 64))\" that this version of swift-tls-fixtures "
                + "cannot read: the runner is newer"
        case .handshakeCompleted(let handshake)?:
            text = "the handshake completed (\(handshake.protocol), \(handshake.cipher))"
        case .alertReceived(let alert, let phase)?:
            text = "the client sent \(alert) \(phase.phrase): \(alert.meaning)"
        case .alertSent(let alert, let reason, let phase)?:
            text = "the server refused the client with \(alert) \(phase.phrase)" + (reason.map { " (\($0))" } ?? "")
        case .closedWithoutAlert(let phase)?:
            text = "the client closed the connection without an alert \(phase.phrase)"
        case .timedOut(let phase)?:
            text = "the handshake timed out \(phase.phrase)"
        case .notTLS(let firstBytes, let reason)?:
            let what = outcome?.httpMethod.map { "plain HTTP (a \($0) request)" } ?? "something that is not TLS"
            text = "the client sent \(what), \"\(firstBytes)\", instead of a ClientHello; the server closed the "
                + "connection without an alert" + (reason.map { " (\($0))" } ?? "")
        }
        if let alertAfterHandshake { text += "; then the client sent \(alertAfterHandshake)" }
        switch outcome {
        case .handshakeCompleted?, .cleartext?:
            if let first = requests.first, first.isMalformed {
                text += " and the server answered \(first.status) to a malformed request"
                if requestCount > 1 { text += " (\(requestCount) requests in all)" }
            } else if let first = requests.first {
                text += " and \(first.method) \(first.path) was answered \(first.status)"
                if requestCount > 1 { text += " (\(requestCount) requests in all)" }
            } else if endedAt != nil {
                text += ", then the client closed the connection without sending a request"
            } else {
                text += "; no request yet, and the connection is open"
            }
        default:
            break
        }
        return text
    }
}
