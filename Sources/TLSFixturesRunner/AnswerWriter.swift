import Foundation
import NIOCore
import NIOHTTP1

/// The one writer of the front door's answers — the control API's, the dashboard's, the proxy's forwarded ones and
/// every refusal: head, body, end, with `Content-Length`, `Cache-Control: no-store`, and `Connection: close` when the
/// connection closes after it (asked, or the client's request was not keep-alive).
enum AnswerWriter {
    /// Writes `answer` to `request` on `context`, closing the connection after it when `closing`.
    static func write(
        _ answer: HTTPAnswer, to request: HTTPRequestHead, closing: Bool, context: ChannelHandlerContext
    ) {
        var headers = HTTPHeaders()
        if let type = answer.contentType { headers.add(name: "Content-Type", value: type) }
        for (name, value) in answer.extraHeaders { headers.add(name: name, value: value) }
        if answer.status != .noContent { headers.add(name: "Content-Length", value: "\(answer.body.count)") }
        headers.add(name: "Cache-Control", value: "no-store")
        let keepAlive = request.isKeepAlive && !closing
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: answer.status, headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        if !answer.body.isEmpty && request.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: answer.body.count)
            buffer.writeBytes(answer.body)
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { loopBound.value.close(promise: nil) }
        }
    }
}
