import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import TLSFixturesOpenSSL
import TLSFixturesWire

/// The JSON body every fixture request gets: which scenario answered and what the handshake negotiated.
package struct FixtureResponse: Codable, Sendable, Equatable {
    package struct Request: Codable, Sendable, Equatable {
        package var method: String
        package var path: String
        package var httpVersion: String
    }
    package var scenario: String
    /// nil for the plain-HTTP scenario.
    public var tls: HandshakeDetails?
    package var request: Request
}

/// Answers already made by one fixture, shared by its connections: every connection that negotiated the same thing
/// and asks the same request gets the same bytes, so a new connection need not encode JSON again.
final class FixtureAnswerCache: Sendable {
    struct Key: Hashable {
        var handshake: HandshakeKey?
        var method: String
        var uri: String
        var versionMajor: Int
        var versionMinor: Int
    }
    /// `HandshakeDetails`, hashable (the public type is only Equatable).
    struct HandshakeKey: Hashable {
        var `protocol`: String, openssl: String, iana: String
        var keyExchange: String?, group: String?, sni: String?, alpn: String?, clientCertificate: String?
        init(_ d: HandshakeDetails) {
            `protocol` = d.protocol; openssl = d.cipher.openssl; iana = d.cipher.iana
            keyExchange = d.keyExchange; group = d.group; sni = d.sni; alpn = d.alpn; clientCertificate = d.clientCertificate
        }
    }
    /// The answer serialised once: status line and fixed headers (without the final blank line, so a `Connection`
    /// header can follow), and the body.
    struct Answer: Sendable {
        var head: ByteBuffer
        var body: ByteBuffer
    }
    /// Clients choose paths and SNI names, so the cache is bounded; past the bound answers are made per connection.
    static let capacity = 256
    private let answers = NIOLockedValueBox([Key: Answer]())

    func answer(for key: Key) -> Answer? { answers.withLockedValue { $0[key] } }

    func remember(_ answer: Answer, for key: Key) {
        answers.withLockedValue { if $0.count < Self.capacity { $0[key] = answer } }
    }
}

/// Answers every HTTP request with `200` and a `FixtureResponse`.
///
/// Reads: `HTTPServerRequestPart` (from NIOHTTP1's `HTTPRequestDecoder`) and `TLSHandshakeCompleted`.
/// Writes: `ByteBuffer`, the whole response. The answer to a given request on a given handshake never changes, so it is
/// serialised once (status line, headers, body) and replayed, instead of re-encoding identical headers through
/// `HTTPResponseEncoder` on every request. Closes the connection after the response when the request asks to
/// (HTTP/1.0 without keep-alive, `Connection: close`), and on an `IdleStateEvent`.
final class FixtureResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private let scenarioName: String
    private var handshake: HandshakeDetails?
    private var head: HTTPRequestHead?
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The fixture's answers, shared by its connections; and the last answer on this connection, reused while
    /// requests repeat (a keep-alive client asking for the same path) without even a lookup. Encoding JSON per
    /// request cost more than the TLS record it travels in.
    private let cache: FixtureAnswerCache
    private var handshakeKey: FixtureAnswerCache.HandshakeKey?
    private var last: FixtureAnswerCache.Answer?
    private var lastRequest: (method: HTTPMethod, uri: String, version: HTTPVersion)?

    /// Where each answered request is recorded (the fixture's connection record).
    private let recorder: ConnectionRecorder?
    /// The port this connection was accepted on, for the answers' stamp; read once.
    private var stampPort: Int?

    init(scenarioName: String, cache: FixtureAnswerCache = FixtureAnswerCache(), recorder: ConnectionRecorder? = nil) {
        self.scenarioName = scenarioName
        self.cache = cache
        self.recorder = recorder
    }

    private static func json<T: Encodable>(_ value: T) -> [UInt8] {
        (try? encoder.encode(value)).map(Array.init) ?? Array("null".utf8)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let completed as TLSHandshakeCompleted:
            handshake = completed.details
            handshakeKey = FixtureAnswerCache.HandshakeKey(completed.details)
            last = nil
            lastRequest = nil
        case is IdleStateHandler.IdleStateEvent:
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            recorder?.receivedBytes()
        case .body:
            break   // The body is read and ignored: every request gets the same answer.
        case .end:
            guard let requestHead = head else { return }
            head = nil
            respond(to: requestHead, context: context)
        }
    }

    /// The `FixtureResponse` JSON, byte for byte what `encoder.encode(FixtureResponse(...))` writes (sorted keys:
    /// request, scenario, tls; nil `tls` left out), assembled from parts the same encoder made.
    private func body(for request: HTTPRequestHead, allocator: ByteBufferAllocator) -> ByteBuffer {
        let requestJSON = Self.json(FixtureResponse.Request(method: request.method.rawValue, path: request.uri,
                                                             httpVersion: "\(request.version)"))
        let scenarioJSON = Self.json(scenarioName)
        let handshakeJSON = handshake.map { Self.json($0) }
        var buffer = allocator.buffer(capacity: requestJSON.count + scenarioJSON.count + (handshakeJSON?.count ?? 0) + 32)
        buffer.writeStaticString("{\"request\":")
        buffer.writeBytes(requestJSON)
        buffer.writeStaticString(",\"scenario\":")
        buffer.writeBytes(scenarioJSON)
        if let handshakeJSON {
            buffer.writeStaticString(",\"tls\":")
            buffer.writeBytes(handshakeJSON)
        }
        buffer.writeStaticString("}\n")
        return buffer
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = request.isKeepAlive
        let answer: FixtureAnswerCache.Answer
        if let last, let previous = lastRequest, previous.uri == request.uri, previous.version == request.version,
           previous.method == request.method {
            answer = last   // The handshake cannot change on a connection.
        } else {
            let key = FixtureAnswerCache.Key(handshake: handshakeKey, method: request.method.rawValue, uri: request.uri,
                                             versionMajor: request.version.major, versionMinor: request.version.minor)
            if let shared = cache.answer(for: key) {
                answer = shared
            } else {
                let body = self.body(for: request, allocator: context.channel.allocator)
                answer = FixtureAnswerCache.Answer(head: head(for: request.version, bodyLength: body.readableBytes,
                                                              allocator: context.channel.allocator), body: body)
                cache.remember(answer, for: key)
            }
            last = answer
            lastRequest = (request.method, request.uri, request.version)
        }
        let number = recorder?.served(method: request.method.rawValue, path: request.uri, status: 200)
        let isHTTP10 = request.version.major == 1 && request.version.minor == 0
        var response = context.channel.allocator.buffer(capacity: answer.head.readableBytes + answer.body.readableBytes + 80)
        response.writeImmutableBuffer(answer.head)
        if let number, let recorder {
            // Which fixture, connection and request answered: a check that holds the client's response knows by it
            // that the answer was this load's, not a cache's, a mock's or another fixture's.
            let port = stampPort ?? context.channel.localAddress?.port ?? 0
            stampPort = port
            response.writeString("\(ResponseStamp.header): \(port)/\(recorder.id)/\(number)\r\n")
        }
        if !keepAlive { response.writeStaticString("Connection: close\r\n") }
        else if isHTTP10 { response.writeStaticString("Connection: keep-alive\r\n") }
        response.writeStaticString("\r\n")
        // HEAD gets the headers of the GET answer and no body (RFC 9110 §9.3.2).
        if request.method != .HEAD { response.writeImmutableBuffer(answer.body) }
        let done = context.writeAndFlush(wrapOutboundOut(response))
        if !keepAlive {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    /// `HTTP/1.1 200 OK` and the fixed headers, each line ending in CRLF. Every value is a constant or a scenario
    /// name ([a-z0-9._-]), so nothing here can split the response.
    private func head(for version: HTTPVersion, bodyLength: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        var head = allocator.buffer(capacity: 200)
        head.writeString("HTTP/\(version.major).\(version.minor) 200 OK\r\n")
        head.writeStaticString("Content-Type: application/json\r\n")
        head.writeString("Content-Length: \(bodyLength)\r\n")
        head.writeStaticString("Cache-Control: no-store\r\n")
        // The dashboard's live column fetches fixtures from another origin and reads the result.
        head.writeStaticString("Access-Control-Allow-Origin: *\r\n")
        head.writeString("X-TLS-Fixture: \(scenarioName)\r\n")
        return head
    }

    /// Malformed HTTP gets `400 Bad Request` before the close, as a real HTTP server answers: it is how a client that
    /// speaks TLS to the plain-HTTP fixture learns why ("wrong version number"). Handled here, on the error path,
    /// rather than by a protocol-error handler every message would pass through. The record lists the 400 as a request
    /// (`ConnectionRecord.Request.malformed`), so it says the server answered rather than that the client went quiet.
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard error is HTTPParserError, context.channel.isActive else {
            context.close(promise: nil)
            return
        }
        recorder?.served(method: ConnectionRecord.Request.malformed, path: ConnectionRecord.Request.malformed, status: 400)
        var response = context.channel.allocator.buffer(capacity: 80)
        response.writeStaticString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        context.writeAndFlush(wrapOutboundOut(response)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
