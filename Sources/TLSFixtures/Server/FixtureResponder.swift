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

    init(scenarioName: String) { self.scenarioName = scenarioName }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let completed as TLSHandshakeCompleted:
            handshake = completed.details
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

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let body = FixtureResponse(
            scenario: scenarioName, tls: handshake,
            request: .init(method: request.method.rawValue, path: request.uri, httpVersion: "\(request.version)"))
        let json = (try? Self.encoder.encode(body)) ?? Data("{}".utf8)
        var buffer = context.channel.allocator.buffer(capacity: json.count + 1)
        buffer.writeBytes(json)
        buffer.writeInteger(UInt8(ascii: "\n"))

        let keepAlive = request.isKeepAlive
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: "\(buffer.readableBytes)")
        headers.add(name: "Cache-Control", value: "no-store")
        // The dashboard's live column fetches fixtures from another origin and reads the result.
        headers.add(name: "Access-Control-Allow-Origin", value: "*")
        headers.add(name: "X-TLS-Fixture", value: scenarioName)
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        else if request.version.major == 1 && request.version.minor == 0 { headers.add(name: "Connection", value: "keep-alive") }

        let responseHead = HTTPResponseHead(version: request.version, status: .ok, headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
