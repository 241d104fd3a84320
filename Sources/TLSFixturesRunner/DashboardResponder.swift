import Foundation
import NIOCore
import NIOHTTP1

/// The dashboard's routes: `/`, `/scenarios.json`, `/hosts`, `/ca.pem`, `/ca.cer`, `/ca.p12` (`DashboardContent`).
///
/// Reads: `HTTPServerRequestPart`. Writes: `HTTPServerResponsePart` — one of the static routes, or 404.
final class DashboardResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let content: DashboardContent
    private var head: HTTPRequestHead?

    init(content: DashboardContent) { self.content = content }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let request = head else { return }
            head = nil
            let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "/")
            var headers = HTTPHeaders()
            let status: HTTPResponseStatus
            let body: Data
            if let route = content.route(path), request.method == .GET || request.method == .HEAD {
                status = .ok
                body = route.body
                headers.add(name: "Content-Type", value: route.contentType)
                if let filename = route.filename { headers.add(name: "Content-Disposition", value: "attachment; filename=\"\(filename)\"") }
            } else {
                status = .notFound
                body = Data("not found; try / or /scenarios.json\n".utf8)
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            }
            headers.add(name: "Content-Length", value: "\(body.count)")
            headers.add(name: "Cache-Control", value: "no-store")
            if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
            if request.method != .HEAD {
                var buffer = context.channel.allocator.buffer(capacity: body.count)
                buffer.writeBytes(body)
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            }
            let keepAlive = request.isKeepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
}
