import Foundation
import NIOCore
import NIOHTTP1
import TLSFixturesFleet
import TLSFixturesServer
import TLSFixturesWire

/// A whole proxy request, as the router hands it on: its head and body.
struct ProxyRequest {
    var head: HTTPRequestHead
    var body: ByteBuffer
}

/// The HTTP handlers a CONNECT takes out of the pipeline once the tunnel is up.
struct HTTPLayer {
    var decoder: ByteToMessageHandler<HTTPRequestDecoder>
    var encoder: HTTPResponseEncoder
    var flow: RequestFlow
    var router: RunnerRequestRouter
    var deadline: HTTPRequestDeadlineHandler? = nil
}

/// The runner's proxy, on a connection: a request the router hands on is checked against `ProxyPolicy`, then either
/// tunnelled (`CONNECT HOST:PORT`: once the fixture's end is up, the HTTP handlers leave the pipeline and the two
/// channels are joined) or forwarded (`GET http://HOST:PORT/…` to the cleartext fixture, its whole answer written
/// back). It reaches fixtures through its `FixtureConnector`, so a test can be the fixture.
///
/// Reads: `ProxyRequest`. Writes: `HTTPServerResponsePart`s for answers and refusals (`AnswerWriter`), raw `ByteBuffer`s
/// once a tunnel is up (then it takes itself out).
final class ProxyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ProxyRequest
    typealias OutboundOut = HTTPServerResponsePart

    private let policy: ProxyPolicy
    private let connector: any FixtureConnector
    private let told: (@Sendable (ProxyRefusal) -> Void)?
    private let layer: HTTPLayer

    init(policy: ProxyPolicy, connector: any FixtureConnector, told: (@Sendable (ProxyRefusal) -> Void)?,
         layer: HTTPLayer) {
        self.policy = policy
        self.connector = connector
        self.told = told
        self.layer = layer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = unwrapInboundIn(data)
        if request.head.method == .CONNECT {
            connect(context, request.head)
        } else {
            forward(context, request.head, request.body)
        }
    }

    // MARK: CONNECT

    private func connect(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let entry: ServedFixture
        switch policy.target(authority: head.uri) {
        case .failure(let refusal):
            refuse(context, head, HTTPResponseStatus(statusCode: refusal.status), refusal.reason)
            return
        case .success(let found):
            entry = found
        }
        let (clientEnd, fixtureEnd) = TunnelHandler.pair()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let hops = policy.fixtures.proxyHops
        connector.connect(to: entry, on: context.eventLoop) { $0.eventLoop.makeSucceededVoidFuture() }
            .assumeIsolated().whenComplete { result in
                let (proxy, context) = loopBound.value
                switch result {
                case .failure(let error):
                    proxy.refuse(
                        context, head, .badGateway,
                        "cannot reach the \(entry.scenario) fixture on port \(entry.port): \(error)")
                case .success(let upstream):
                    Self.noteHop(upstream, authority: head.uri, in: hops)
                    proxy.splice(context, upstream: upstream, clientEnd: clientEnd, fixtureEnd: fixtureEnd)
                }
            }
    }

    /// Notes the tunnel (or forwarded request) by its socket towards the fixture, before any of the client's bytes can
    /// go through it, so the fixture's record of the connection names the authority; forgets it once it has closed.
    static func noteHop(_ upstream: Channel, authority: String, in hops: ProxyHops) {
        guard let local = upstream.localAddress, let token = hops.note(local: local, authority: authority) else {
            return
        }
        // The fixture asks once more as its side closes, which may come after this side's close: forget a moment later.
        upstream.closeFuture.whenComplete { _ in
            upstream.eventLoop.scheduleTask(in: .seconds(2)) { hops.forget(local: local, token: token) }
        }
    }

    /// Takes the HTTP handlers out, answers `200` in raw bytes (nothing may add a body or framing to it), and joins the
    /// two channels. The tunnel end goes in right behind the decoder, so bytes the decoder still holds reach it.
    private func splice(
        _ context: ChannelHandlerContext, upstream: Channel, clientEnd: TunnelHandler, fixtureEnd: TunnelHandler
    ) {
        do {
            try upstream.pipeline.syncOperations.addHandler(fixtureEnd)
            let pipeline = context.pipeline.syncOperations
            pipeline.removeHandler(layer.flow, promise: nil)
            pipeline.removeHandler(layer.router, promise: nil)
            if let deadline = layer.deadline { pipeline.removeHandler(deadline, promise: nil) }
            pipeline.removeHandler(layer.encoder, promise: nil)
            var established = context.channel.allocator.buffer(capacity: 64)
            established.writeString("HTTP/1.1 200 Connection established\r\n\r\n")
            context.writeAndFlush(NIOAny(established), promise: nil)
            try pipeline.addHandler(clientEnd, position: .after(layer.decoder))
            // What the decoder held (a ClientHello sent before the 200) goes on to the tunnel as it leaves (which may
            // be once its own read is done), and reaches the fixture then, not at the client's next read: a client
            // that waits for the ServerHello would otherwise wait for ever.
            let removed = context.eventLoop.makePromise(of: Void.self)
            removed.futureResult.whenComplete { _ in upstream.flush() }
            pipeline.removeHandler(layer.decoder, promise: removed)
            pipeline.removeHandler(self, promise: nil)
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
            context.read()
        } catch {
            upstream.close(promise: nil)
            context.close(promise: nil)
        }
    }

    // MARK: Forwarding

    private func forward(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer) {
        guard let url = URL(string: head.uri), let scheme = url.scheme?.lowercased(), let host = url.host else {
            refuse(context, head, .badRequest, "\"\(ProxyPolicy.shown(head.uri))\" is not an absolute http:// URL")
            return
        }
        guard scheme == "http" else {
            refuse(
                context, head, .badRequest,
                "send https:// through the proxy as CONNECT (what URLSession and curl do), not as "
                    + "\(head.method.rawValue) \(scheme)://")
            return
        }
        let entry: ServedFixture
        switch policy.target(host: host, port: url.port ?? 80) {
        case .failure(let refusal):
            refuse(context, head, HTTPResponseStatus(statusCode: refusal.status), refusal.reason)
            return
        case .success(let found):
            entry = found
        }
        guard entry.isCleartext else {
            refuse(
                context, head, .badRequest,
                "port \(entry.port) is the \(entry.scenario) fixture, which speaks TLS: use https:// (a CONNECT "
                    + "through the proxy)")
            return
        }
        var upstreamHead = HTTPRequestHead(version: .http1_1, method: head.method, uri: Self.originForm(url))
        upstreamHead.headers = head.headers
        for hopByHop in ["Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "TE", "Trailer",
                         "Upgrade"] {
            upstreamHead.headers.remove(name: hopByHop)
        }
        upstreamHead.headers.replaceOrAdd(name: "Connection", value: "close")
        let forwardedHead = upstreamHead
        let promise = context.eventLoop.makePromise(of: ForwardedRequestHandler.Answer.self)
        let connected = connector.connect(to: entry, on: context.eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(
                    ForwardedRequestHandler(answer: promise, limit: FixtureAPI.maximumBodyBytes))
            }
        }
        // The Host as the client named it (`http.fixtures.test:9843`), as a CONNECT's authority would be.
        let authority = "\(host.contains(":") ? "[\(host)]" : host):\(url.port ?? 80)"
        let hops = policy.fixtures.proxyHops
        connected.whenSuccess { upstream in
            Self.noteHop(upstream, authority: authority, in: hops)
            upstream.write(HTTPClientRequestPart.head(forwardedHead), promise: nil)
            if body.readableBytes > 0 { upstream.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
            upstream.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        connected.whenFailure { promise.fail($0) }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        promise.futureResult.assumeIsolated().whenComplete { result in
            let (proxy, context) = loopBound.value
            switch result {
            case .success(let forwarded):
                var answer = HTTPAnswer(
                    status: forwarded.head.status, contentType: nil, body: Data(forwarded.body.readableBytesView))
                for (name, value) in forwarded.head.headers
                where !["connection", "keep-alive", "transfer-encoding", "content-length", "cache-control"]
                    .contains(name.lowercased())
                {
                    answer.extraHeaders.append((name, value))
                }
                AnswerWriter.write(answer, to: head, closing: false, context: context)
            case .failure(let error):
                // Every forwarded request passes here: the refusal is made only when the forward failed.
                let reason = "cannot reach the \(entry.scenario) fixture on port \(entry.port): \(error)"
                proxy.told?(Self.refusal(head, peer: context.channel.remoteAddress, .badGateway, reason))
                AnswerWriter.write(.text(.badGateway, reason), to: head, closing: false, context: context)
            }
        }
    }

    static func originForm(_ url: URL) -> String {
        let path = url.path.isEmpty ? "/" : url.path
        return url.query.map { "\(path)?\($0)" } ?? path
    }

    // MARK: Refusals

    /// A proxy request that will not reach a fixture: refused, told to `proxyRefused` (the fixtures never see it), and
    /// the connection closed.
    private func refuse(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, _ reason: String
    ) {
        told?(Self.refusal(head, peer: context.channel.remoteAddress, status, reason))
        AnswerWriter.write(.text(status, "\(status.code) \(reason)"), to: head, closing: true, context: context)
    }

    /// What `proxyRefused` is told: the request line bounded and escaped as the reasons quote a client's text.
    static func refusal(
        _ head: HTTPRequestHead, peer: SocketAddress?, _ status: HTTPResponseStatus, _ reason: String
    ) -> ProxyRefusal {
        ProxyRefusal(
            request: "\(head.method.rawValue) \(ProxyPolicy.shown(head.uri))",
            peer: ConnectionRecorder.describe(peer), status: Int(status.code), reason: reason)
    }
}
