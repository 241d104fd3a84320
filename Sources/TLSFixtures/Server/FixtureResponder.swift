import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The JSON body every fixture request gets: which scenario answered and what the handshake negotiated.
public struct FixtureResponse: Codable, Sendable, Equatable {
    public struct Request: Codable, Sendable, Equatable {
        public var method: String
        public var path: String
        public var httpVersion: String
    }
    public var scenario: String
    /// nil for the plain-HTTP scenario.
    public var tls: HandshakeDetails?
    public var request: Request
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
        var keyExchange: String?, sni: String?, alpn: String?, clientCertificate: String?
        init(_ d: HandshakeDetails) {
            `protocol` = d.protocol; openssl = d.cipher.openssl; iana = d.cipher.iana
            keyExchange = d.keyExchange; sni = d.sni; alpn = d.alpn; clientCertificate = d.clientCertificate
        }
    }
    struct Answer: Sendable {
        var body: ByteBuffer
        var headers: HTTPHeaders
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
/// Reads: `HTTPServerRequestPart` (from NIOHTTP1's decoder and pipeline handler) and `TLSHandshakeCompleted`.
/// Writes: `HTTPServerResponsePart`. Closes the connection after the response when the request asks to (HTTP/1.0
/// without keep-alive, `Connection: close`), and on an `IdleStateEvent`.
final class FixtureResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

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

    init(scenarioName: String, cache: FixtureAnswerCache = FixtureAnswerCache()) {
        self.scenarioName = scenarioName
        self.cache = cache
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
        } else if case let key = FixtureAnswerCache.Key(handshake: handshakeKey, method: request.method.rawValue, uri: request.uri,
                                                       versionMajor: request.version.major, versionMinor: request.version.minor),
                  let shared = cache.answer(for: key) {
            answer = shared
            last = answer
            lastRequest = (request.method, request.uri, request.version)
        } else {
            let key = FixtureAnswerCache.Key(handshake: handshakeKey, method: request.method.rawValue, uri: request.uri,
                                             versionMajor: request.version.major, versionMinor: request.version.minor)
            let body = self.body(for: request, allocator: context.channel.allocator)
            var headers = HTTPHeaders()
            headers.reserveCapacity(7)
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.readableBytes))
            headers.add(name: "Cache-Control", value: "no-store")
            // The dashboard's live column fetches fixtures from another origin and reads the result.
            headers.add(name: "Access-Control-Allow-Origin", value: "*")
            headers.add(name: "X-TLS-Fixture", value: scenarioName)
            answer = FixtureAnswerCache.Answer(body: body, headers: headers)
            cache.remember(answer, for: key)
            last = answer
            lastRequest = (request.method, request.uri, request.version)
        }
        let body = answer.body
        var headers = answer.headers
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        else if request.version.major == 1 && request.version.minor == 0 { headers.add(name: "Connection", value: "keep-alive") }

        let responseHead = HTTPResponseHead(version: request.version, status: .ok, headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
