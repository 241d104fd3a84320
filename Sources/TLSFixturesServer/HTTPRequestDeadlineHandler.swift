import Logging
import NIOCore
import NIOHTTP1

/// The header timeout: closes a connection whose next request has not arrived whole within `timeout` — counted from
/// the connection's start (behind TLS, from the end of the handshake, which has its own deadline) and then from the
/// end of each request. A client
/// that sends one header line every few seconds keeps the idle timeout from ever firing (slowloris); this one fires
/// anyway. Between requests it is the keep-alive timeout too: an idle keep-alive connection is closed after `timeout`.
/// While an answer is still owed (a control-API request that prepares a slow key can take a minute) the client is not
/// the one keeping anyone waiting: the clock restarts when the answer is flushed.
///
/// Reads: `HTTPServerRequestPart` and `TLSHandshakeCompleted`, both passed on unchanged. Watches: outbound flushes
/// (whatever was written: parts or pre-serialised bytes), passed on unchanged. Writes: nothing of its own; closes.
///
/// One timer per connection, not one per request: the handler notes when the current wait began (a clock read per
/// request), and the timer, when it fires, closes the connection or re-arms itself for the wait's true end.
package final class HTTPRequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias InboundOut = HTTPServerRequestPart
    package typealias OutboundIn = NIOAny
    package typealias OutboundOut = NIOAny

    private let timeout: TimeAmount
    private let startsAfterHandshake: Bool
    private let logger: Logger
    /// When the wait for the next whole request began, on the event loop's clock (an embedded loop's in tests).
    private var waitingSince = NIODeadline.uptimeNanoseconds(0)
    private var timer: Scheduled<Void>?
    /// Requests read whole and not answered yet. Every answerer behind this handler flushes each answer as it ends it
    /// (and the control API answers one request at a time), so a flush settles what is owed.
    private var answersOwed = 0

    /// `startsAfterHandshake`: the clock starts at `TLSHandshakeCompleted` rather than at the connection's start.
    package init(timeout: TimeAmount, startsAfterHandshake: Bool, logger: Logger) {
        self.timeout = timeout
        self.startsAfterHandshake = startsAfterHandshake
        self.logger = logger
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive && !startsAfterHandshake { arm(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        if !startsAfterHandshake { arm(context: context) }
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            answersOwed += 1
            waitingSince = context.eventLoop.now
        }
        context.fireChannelRead(data)
    }

    package func flush(context: ChannelHandlerContext) {
        if answersOwed > 0 {
            answersOwed = 0
            waitingSince = context.eventLoop.now
        }
        context.flush()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSHandshakeCompleted { arm(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    private func arm(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        waitingSince = context.eventLoop.now
        schedule(at: waitingSince + timeout, context: context)
    }

    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard context.channel.isActive else { return }
            let due = answersOwed > 0 ? context.eventLoop.now + timeout : waitingSince + timeout
            if context.eventLoop.now < due {
                schedule(at: due, context: context)
                return
            }
            logger.info("no whole request within \(timeout.nanoseconds / 1_000_000) ms; closing",
                        metadata: ["peer": "\(context.remoteAddress?.description ?? "?")"])
            context.close(promise: nil)
        }
    }
}
