import NIOCore
import NIOHTTP1

/// Back-pressure for a server that answers each request the moment it has arrived (the fixtures' responder, the
/// dashboard's): while the channel is not writable — the client is not reading what it was sent — requests are held
/// here and nothing more is read from the socket. A client that pipelines requests and never reads can then make the
/// server hold at most what one read delivered, never an ever-growing queue of answers.
///
/// Why NIO's own tools are not enough on their own: `BackPressureHandler` stops *socket* reads while the channel is
/// not writable, but one read of up to `maxMessagesPerRead` × 64 KiB decodes into thousands of small requests, each
/// answered at once; and `HTTPServerPipelineHandler` holds the next request only until the current answer's `.end` has
/// been *written* into the pipeline, not sent, so it releases a whole batch at once and reads again at once. Both
/// ignore whether the answers leave. This handler waits for them: answers queued per connection are bounded by the
/// channel's high water mark (`ChannelOptions.writeBufferWaterMark`) plus one answer.
///
/// Reads: `HTTPServerRequestPart`. Fires: the same parts, in order, only while the channel is writable.
/// Intercepts: `read()`, passed on only when nothing is held and the channel is writable. Writes: nothing of its own.
///
/// States: `flowing` (parts pass straight through) ⇄ `holding` (parts queue; reads are suspended). It returns to
/// `flowing` when the channel is writable again and the queue has drained.
package final class HTTPBackPressureHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias InboundOut = HTTPServerRequestPart
    package typealias OutboundIn = NIOAny
    package typealias OutboundOut = NIOAny

    /// Request parts that arrived while the answers could not be sent, oldest first.
    private var held = CircularBuffer<HTTPServerRequestPart>()
    /// A `read()` the pipeline asked for while holding; issued once the queue drains.
    private var readPending = false
    /// Re-entrancy guard: forwarding a part can make the responder write, which can change writability.
    private var draining = false

    package init() {}

    /// Request parts held right now (for tests and diagnostics).
    var heldCount: Int { held.count }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if held.isEmpty && context.channel.isWritable {
            context.fireChannelRead(data)
        } else {
            held.append(unwrapInboundIn(data))
        }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { drain(context: context) }
        context.fireChannelWritabilityChanged()
    }

    package func read(context: ChannelHandlerContext) {
        if held.isEmpty && context.channel.isWritable {
            context.read()
        } else {
            readPending = true
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        held.removeAll()
        readPending = false
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        // Whatever was held goes on, so nothing is lost if the handler is taken out.
        while let part = held.popFirst() { context.fireChannelRead(wrapInboundOut(part)) }
        if readPending {
            readPending = false
            context.read()
        }
    }

    /// Passes held parts on while the channel stays writable, then resumes reading once nothing is held.
    private func drain(context: ChannelHandlerContext) {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        var delivered = false
        while context.channel.isWritable, let part = held.popFirst() {
            context.fireChannelRead(wrapInboundOut(part))
            delivered = true
        }
        if delivered { context.fireChannelReadComplete() }
        if held.isEmpty && readPending && context.channel.isWritable {
            readPending = false
            context.read()
        }
    }
}
