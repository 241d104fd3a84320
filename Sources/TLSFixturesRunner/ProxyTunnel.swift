import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesFleet

/// One end of a CONNECT tunnel: the client's channel has one, the fixture's channel its partner, and bytes read on
/// one side are written on the other. Both channels are on one event loop, so the pair calls each other directly.
///
/// Reads: `ByteBuffer` (whatever the peer sends). Writes: `ByteBuffer` (what the partner read).
///
/// Back-pressure: a side asks its socket for more (`read`) only while the partner's channel is writable; otherwise the
/// read waits until the partner drains and says so. A client that sends faster than the fixture takes, or a fixture
/// answering a client that does not read, never grows a buffer here beyond the write watermark.
final class TunnelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: TunnelHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    private init() {}

    /// Two ends that forward to each other.
    static func pair() -> (TunnelHandler, TunnelHandler) {
        let client = TunnelHandler()
        let fixture = TunnelHandler()
        client.partner = fixture
        fixture.partner = client
        return (client, fixture)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.partnerWrite(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.partnerFlush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.partnerClose()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        partner?.partnerClose()
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if partner?.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }

    // MARK: Called by the partner

    private var isWritable: Bool { context?.channel.isWritable ?? false }

    private func partnerWrite(_ data: NIOAny) { context?.write(data, promise: nil) }

    private func partnerFlush() { context?.flush() }

    private func partnerClose() { context?.close(promise: nil) }

    private func partnerBecameWritable() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }
}

/// A client for the forward proxy's one request: writes `head` and `body` to a fixture and collects its whole answer
/// (at most `limit` bytes of body), then completes `answer`.
///
/// Reads: `HTTPClientResponsePart`. Writes: `HTTPClientRequestPart` (once, when active).
final class ForwardedRequestHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer
    }

    private let answer: EventLoopPromise<Answer>
    private let limit: Int
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()
    private var completed = false

    init(answer: EventLoopPromise<Answer>, limit: Int) {
        self.answer = answer
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
        case .body(var part):
            guard body.readableBytes + part.readableBytes <= limit else {
                fail(context, ForwardError("the fixture's answer is over \(limit) bytes"))
                return
            }
            body.writeBuffer(&part)
        case .end:
            guard let head, !completed else { return }
            completed = true
            answer.succeed(Answer(head: head, body: body))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(context, ForwardError("the fixture closed the connection before answering"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(context, error)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: Error) {
        guard !completed else { return }
        completed = true
        answer.fail(error)
        context.close(promise: nil)
    }

    struct ForwardError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// How the proxy reaches a fixture: a channel to it on the caller's event loop (a tunnel's two ends must share one),
/// set up by `initializer` before it connects. Injected into the front door, so a test can stand in for the fixture
/// with a channel of its own and watch a working tunnel and forward in memory.
protocol FixtureConnector: Sendable {
    func connect(
        to fixture: ServedFixture, on eventLoop: EventLoop,
        initializer: @escaping @Sendable (Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<Channel>
}

/// The real one: a TCP connection to the fixture's address and port.
struct SocketConnector: FixtureConnector {
    func connect(
        to fixture: ServedFixture, on eventLoop: EventLoop,
        initializer: @escaping @Sendable (Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<Channel> {
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer(initializer)
            .connect(host: fixture.address, port: fixture.port)
    }
}
