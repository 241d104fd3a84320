import Foundation
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

    /// `"scenario-name"` as JSON, and the handshake as JSON once it is known: encoded once, not per request.
    private let scenarioJSON: [UInt8]
    private var handshakeJSON: [UInt8]?
    /// The last answer on this connection, reused while requests repeat (a keep-alive client asking for the same
    /// path): encoding JSON per request cost more than the TLS record it travels in.
    private var last: (method: HTTPMethod, uri: String, version: HTTPVersion, body: ByteBuffer, headers: HTTPHeaders)?

    init(scenarioName: String) {
        self.scenarioName = scenarioName
        scenarioJSON = Self.json(scenarioName)
    }

    private static func json<T: Encodable>(_ value: T) -> [UInt8] {
        (try? encoder.encode(value)).map(Array.init) ?? Array("null".utf8)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let completed as TLSHandshakeCompleted:
            handshake = completed.details
            handshakeJSON = Self.json(completed.details)
            last = nil
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
        let body: ByteBuffer
        var headers: HTTPHeaders
        if let last, last.method == request.method, last.version == request.version, last.uri == request.uri {
            body = last.body
            headers = last.headers
        } else {
            body = self.body(for: request, allocator: context.channel.allocator)
            headers = HTTPHeaders()
            headers.reserveCapacity(7)
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.readableBytes))
            headers.add(name: "Cache-Control", value: "no-store")
            // The dashboard's live column fetches fixtures from another origin and reads the result.
            headers.add(name: "Access-Control-Allow-Origin", value: "*")
            headers.add(name: "X-TLS-Fixture", value: scenarioName)
            last = (request.method, request.uri, request.version, body, headers)
        }
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
