import NIOCore
import NIOHTTP1

/// The one owner of a runner connection's read flow: requests reach the rooms behind it one at a time, and only while
/// the client reads its answers. Every answer — the dashboard's, the control API's (which may take a minute), the
/// proxy's and every refusal — passes back through here, so back-pressure holds for all of them alike.
///
/// - One at a time: once a request's head has gone on, the next waits here until the answer's `.end` has been written
///   (pipelined requests queue in order, and a slow API answer holds the ones behind it).
/// - Back-pressure: while the channel is not writable (the client does not read what it was sent), requests are held
///   and nothing more is read from the socket: a client that pipelines and never reads makes the runner hold at most
///   one read's worth of requests (after `HTTPBackPressureHandler`, which does the same for the fixtures).
/// - Reads: passed on only when nothing is held, the channel is writable, and no request is complete and waiting for
///   its answer; so a client cannot queue requests without bound behind a slow one.
/// - Idle: a connection waiting for its answer is not idle; the idle timeout's event stops here meanwhile.
///
/// Reads: `HTTPServerRequestPart`. Fires: the same parts, in order. Writes: what it is given (answers, in
/// `HTTPServerResponsePart`s). Taken out with the other HTTP handlers when a CONNECT tunnel goes up: what it still
/// holds then is dropped (HTTP pipelined behind a CONNECT belongs to no one).
final class RequestFlow: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var held = CircularBuffer<HTTPServerRequestPart>()
    /// A request's head went on and its answer has not ended.
    private var inFlight = false
    /// The request in flight arrived whole: it waits for its answer only.
    private var complete = false
    /// A `read()` asked for while reading was held back.
    private var readPending = false
    /// Re-entrancy guard: passing a part on can make a room answer, which drains.
    private var draining = false

    /// Request parts held right now (for tests).
    var heldCount: Int { held.count }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if held.isEmpty && context.channel.isWritable && mayPass(part) {
            pass(part, context)
        } else {
            held.append(part)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        context.write(data, promise: promise)
        if case .end = part {
            inFlight = false
            drain(context)
        }
    }

    func read(context: ChannelHandlerContext) {
        if mayRead(context) {
            context.read()
        } else {
            readPending = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { drain(context) }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A client waiting for its answer (a start that makes an RSA-8192 key can take a minute) is not idle.
        if event is IdleStateHandler.IdleStateEvent, inFlight && complete { return }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        held.removeAll()
        readPending = false
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        held.removeAll()
        if readPending {
            readPending = false
            context.read()
        }
    }

    /// A head waits while another request is in flight; a body or end belongs to the request in flight.
    private func mayPass(_ part: HTTPServerRequestPart) -> Bool {
        if case .head = part { return !inFlight }
        return true
    }

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        held.isEmpty && context.channel.isWritable && !(inFlight && complete)
    }

    private func pass(_ part: HTTPServerRequestPart, _ context: ChannelHandlerContext) {
        switch part {
        case .head:
            inFlight = true
            complete = false
        case .body:
            break
        case .end:
            complete = true
        }
        context.fireChannelRead(wrapInboundOut(part))
    }

    /// Passes held parts on while they may go and the channel is writable, then reads again if it may.
    private func drain(_ context: ChannelHandlerContext) {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        var passed = false
        while context.channel.isWritable, let next = held.first, mayPass(next) {
            pass(held.removeFirst(), context)
            passed = true
        }
        if passed { context.fireChannelReadComplete() }
        if readPending && mayRead(context) {
            readPending = false
            context.read()
        }
    }
}
