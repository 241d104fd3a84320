import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesWire
import TLSFixturesFleet
import TLSFixturesServer

/// What one listener of the runner answers besides the dashboard: the control API, the proxy, or both.
struct RunnerServices: Sendable {
    /// The control API (`/api/…`); nil where it is not served.
    var controlAPI: ControlAPI?
    /// The CONNECT and forward proxy; nil where it is not served.
    var proxy: ProxyPolicy?
    /// Where the proxy is when it is not here (for the hint a stray CONNECT gets).
    var proxyElsewhere: Int?
    /// Serve the API and the proxy to clients on other machines too (`serve --allow-remote-clients`).
    var allowRemoteClients = false
    /// Told each proxy request answered with an error rather than reaching a fixture.
    var proxyRefused: (@Sendable (ProxyRefusal) -> Void)? = nil
}

/// The HTTP handlers a CONNECT takes out of the pipeline once the tunnel is up.
struct HTTPLayer {
    var decoder: ByteToMessageHandler<HTTPRequestDecoder>
    var encoder: HTTPResponseEncoder
    var responder: DashboardResponder?
    var deadline: HTTPRequestDeadlineHandler? = nil
    var backPressure: HTTPBackPressureHandler? = nil
}

/// Routes each request of a runner connection.
///
/// Reads: `HTTPServerRequestPart`. Writes: `HTTPServerResponsePart` for the answers it makes, raw `ByteBuffer`s once a
/// CONNECT tunnel is up (then it takes itself out). Passes on: the dashboard's requests, unchanged.
///
/// - `/api/…`: the control API, answered asynchronously; reading pauses meanwhile and pipelined requests wait their turn.
/// - `CONNECT HOST:PORT`: a tunnel to the fixture on PORT, when `ProxyPolicy` allows it (`403` otherwise).
/// - `GET http://HOST:PORT/…` (absolute form): forwarded to the cleartext fixture on PORT.
/// - anything else: the dashboard.
///
/// The API and the proxy answer loopback clients only unless `allowRemoteClients`; the API also refuses requests a
/// web page could make (a foreign `Origin`, a `Host` that is not this machine: DNS rebinding).
final class RunnerRequestRouter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// A dashboard request: its parts go on to the responder.
        case passing
        /// An API or forward-proxy request, collecting its body.
        case collecting(HTTPRequestHead, ByteBuffer, Kind)
        /// An answer is on its way; requests that arrive meanwhile wait in `queued`.
        case answering
        /// A tunnel is up (or being built); nothing here reads HTTP any more.
        case tunnelling
        /// After a refusal that closes the connection.
        case closing
    }

    private enum Kind { case api, forward, connect }

    private let services: RunnerServices
    private let layer: HTTPLayer
    private var state = State.idle
    private var queued: [HTTPServerRequestPart] = []

    init(services: RunnerServices, layer: HTTPLayer) {
        self.services = services
        self.layer = layer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        process(context, unwrapInboundIn(data))
    }

    private func process(_ context: ChannelHandlerContext, _ part: HTTPServerRequestPart) {
        switch state {
        case .answering:
            queued.append(part)
        case .tunnelling, .closing:
            break
        case .passing:
            context.fireChannelRead(wrapInboundOut(part))
            if case .end = part { state = .idle }
        case .collecting(let head, var body, let kind):
            switch part {
            case .head:
                state = .closing
                context.close(promise: nil)
            case .body(var bytes):
                guard body.readableBytes + bytes.readableBytes <= FixtureAPI.maximumBodyBytes else {
                    let reason = "the body is over \(FixtureAPI.maximumBodyBytes) bytes"
                    if kind == .api {
                        refuse(context, head, .payloadTooLarge, reason, closing: true)
                    } else {
                        refuseProxying(context, head, .payloadTooLarge, reason)
                    }
                    return
                }
                body.writeBuffer(&bytes)
                state = .collecting(head, body, kind)
            case .end:
                dispatch(context, head, body, kind)
            }
        case .idle:
            guard case .head(let head) = part else { return }
            if let problem = Self.hostProblem(head) {
                if let kind = classify(head), kind != .api {
                    refuseProxying(context, head, .badRequest, problem)
                } else {
                    refuse(context, head, .badRequest, problem, closing: true)
                }
                return
            }
            guard let kind = classify(head) else {
                if layer.responder == nil {
                    state = .collecting(head, ByteBuffer(), .api)   // answered below with the proxy port's 404
                    notHere(context, head)
                    return
                }
                state = .passing
                context.fireChannelRead(wrapInboundOut(part))
                return
            }
            state = .collecting(head, context.channel.allocator.buffer(capacity: 0), kind)
        }
    }

    /// nil: the dashboard's.
    private func classify(_ head: HTTPRequestHead) -> Kind? {
        if head.method == .CONNECT { return .connect }
        let uri = head.uri.lowercased()
        if uri.hasPrefix("http://") || uri.hasPrefix("https://") { return .forward }
        if uri == "/api" || uri.hasPrefix("/api/") || uri.hasPrefix("/api?") { return .api }
        return nil
    }

    private func dispatch(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer, _ kind: Kind) {
        if !services.allowRemoteClients && !Self.isLoopback(context.channel.remoteAddress) {
            // A phone or another machine using the proxy: the likeliest refusal nobody would otherwise see.
            let reason = "the control API and the proxy answer clients on this machine only "
                + "(`serve --allow-remote-clients` lets others in)"
            if kind == .api {
                refuse(context, head, .forbidden, reason, closing: true)
            } else {
                refuseProxying(context, head, .forbidden, reason)
            }
            return
        }
        switch kind {
        case .api: api(context, head, body)
        case .connect: connect(context, head)
        case .forward: forward(context, head, body)
        }
    }

    // MARK: The control API

    private func api(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer) {
        guard let controlAPI = services.controlAPI else {
            refuse(context, head, .notFound, "this port serves the proxy only; the control API is on the dashboard's port", closing: false)
            return
        }
        if let problem = Self.crossSiteProblem(head, localPort: context.channel.localAddress?.port, allowRemote: services.allowRemoteClients) {
            refuse(context, head, .forbidden, problem, closing: false, json: true)
            return
        }
        let request = ControlAPI.Request(method: head.method, uri: head.uri, contentType: head.headers.first(name: "Content-Type"),
                                         body: Data(body.readableBytesView))
        wait(context, for: context.eventLoop.makeFutureWithTask { await controlAPI.answer(request) }, head: head)
    }

    /// RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message that
    /// lacks a Host header field and to any request message that contains more than one Host header field line or a
    /// Host header field with an invalid field value." Which of two would count is what request smuggling plays on.
    static func hostProblem(_ head: HTTPRequestHead) -> String? {
        let hosts = head.headers["Host"]
        if hosts.count > 1 {
            return "the request has \(hosts.count) Host headers; send one (RFC 9112 §3.2)"
        }
        guard let host = hosts.first else {
            guard head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1) else { return nil }
            return "an HTTP/1.1 request needs a Host header, such as Host: localhost:PORT (RFC 9112 §3.2)"
        }
        // uri-host [":" port] (RFC 3986 §3.2.2): unreserved, percent-encoded, sub-delims, ":" and an IPv6 literal's
        // brackets. Empty is allowed, for a target without an authority.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%!$&'()*+,;=:[]".utf8)
        guard host.utf8.allSatisfy(allowed.contains) else {
            return "Host \"\(ProxyPolicy.shown(host))\" is not HOST[:PORT] (RFC 9112 §3.2)"
        }
        return nil
    }

    /// A request a web page in the user's browser could make: refused, so no site can start or stop fixtures.
    static func crossSiteProblem(_ head: HTTPRequestHead, localPort: Int?, allowRemote: Bool) -> String? {
        let port = localPort.map { ":\($0)" } ?? ""
        if let origin = head.headers.first(name: "Origin")?.lowercased(),
           !["http://localhost\(port)", "http://127.0.0.1\(port)", "http://[::1]\(port)"].contains(origin) {
            return "a request from the web page \(origin) is refused: only the dashboard itself and programs may use the control API"
        }
        guard !allowRemote, let host = head.headers.first(name: "Host")?.lowercased() else { return nil }
        let name = host.hasPrefix("[") ? String(host.prefix { $0 != "]" }) + "]" : String(host.split(separator: ":").first ?? "")
        if !["localhost", "127.0.0.1", "[::1]"].contains(name) {
            return "Host \"\(host)\" is not this machine's loopback name: the control API answers http://localhost:PORT (a name that resolves here by DNS could be any site's)"
        }
        return nil
    }

    // MARK: The proxy

    private func connect(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        guard let policy = services.proxy else { proxyNotHere(context, head); return }
        let entry: ServedFixture
        switch policy.target(authority: head.uri) {
        case .failure(let refusal):
            refuseProxying(context, head, HTTPResponseStatus(statusCode: refusal.status), refusal.reason)
            return
        case .success(let found):
            entry = found
        }
        state = .tunnelling
        setReading(context, false)
        let (clientEnd, fixtureEnd) = TunnelHandler.pair()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ProxyConnector.connect(to: entry, on: context.eventLoop).assumeIsolated().whenComplete { result in
            let (router, context) = loopBound.value
            switch result {
            case .failure(let error):
                router.state = .idle
                router.refuseProxying(context, head, .badGateway, "cannot reach the \(entry.scenario) fixture on port \(entry.port): \(error)")
                router.setReading(context, true)
            case .success(let upstream):
                Self.noteHop(upstream, authority: head.uri, in: policy.fixtures.proxyHops)
                router.splice(context, upstream: upstream, clientEnd: clientEnd, fixtureEnd: fixtureEnd)
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
    private func splice(_ context: ChannelHandlerContext, upstream: Channel, clientEnd: TunnelHandler, fixtureEnd: TunnelHandler) {
        do {
            try upstream.pipeline.syncOperations.addHandler(fixtureEnd)
            let pipeline = context.pipeline.syncOperations
            if let responder = layer.responder { pipeline.removeHandler(responder, promise: nil) }
            if let backPressure = layer.backPressure { pipeline.removeHandler(backPressure, promise: nil) }
            if let deadline = layer.deadline { pipeline.removeHandler(deadline, promise: nil) }
            pipeline.removeHandler(layer.encoder, promise: nil)
            var established = context.channel.allocator.buffer(capacity: 64)
            established.writeString("HTTP/1.1 200 Connection established\r\n\r\n")
            context.writeAndFlush(NIOAny(established), promise: nil)
            try pipeline.addHandler(clientEnd, position: .after(layer.decoder))
            pipeline.removeHandler(layer.decoder, promise: nil)
            pipeline.removeHandler(self, promise: nil)
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
            context.read()
        } catch {
            upstream.close(promise: nil)
            context.close(promise: nil)
        }
    }

    private func forward(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer) {
        guard let policy = services.proxy else { proxyNotHere(context, head); return }
        guard let url = URL(string: head.uri), let scheme = url.scheme?.lowercased(), let host = url.host else {
            refuseProxying(context, head, .badRequest, "\"\(ProxyPolicy.shown(head.uri))\" is not an absolute http:// URL")
            return
        }
        guard scheme == "http" else {
            refuseProxying(context, head, .badRequest, "send https:// through the proxy as CONNECT (what URLSession and curl do), not as \(head.method.rawValue) \(scheme)://")
            return
        }
        let entry: ServedFixture
        switch policy.target(host: host, port: url.port ?? 80) {
        case .failure(let refusal):
            refuseProxying(context, head, HTTPResponseStatus(statusCode: refusal.status), refusal.reason)
            return
        case .success(let found):
            entry = found
        }
        guard entry.isCleartext else {
            refuseProxying(context, head, .badRequest, "port \(entry.port) is the \(entry.scenario) fixture, which speaks TLS: use https:// (a CONNECT through the proxy)")
            return
        }
        var upstreamHead = HTTPRequestHead(version: .http1_1, method: head.method, uri: Self.originForm(url))
        upstreamHead.headers = head.headers
        for hopByHop in ["Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "TE", "Trailer", "Upgrade"] {
            upstreamHead.headers.remove(name: hopByHop)
        }
        upstreamHead.headers.replaceOrAdd(name: "Connection", value: "close")
        let forwardedHead = upstreamHead
        let promise = context.eventLoop.makePromise(of: ForwardedRequestHandler.Answer.self)
        let connected = ProxyConnector.connect(to: entry, on: context.eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(ForwardedRequestHandler(answer: promise, limit: FixtureAPI.maximumBodyBytes))
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
        let forwarded = promise.futureResult.map { forwarded -> HTTPAnswer in
            var answer = HTTPAnswer(status: forwarded.head.status, contentType: nil, body: Data(forwarded.body.readableBytesView))
            for (name, value) in forwarded.head.headers
            where !["connection", "keep-alive", "transfer-encoding", "content-length", "cache-control"].contains(name.lowercased()) {
                answer.extraHeaders.append((name, value))
            }
            return answer
        }
        // Every forwarded request passes here: the refusal is made only when the forward failed.
        let told = services.proxyRefused
        let peer = context.channel.remoteAddress
        let answer = forwarded.flatMapErrorThrowing { error in
            let reason = "cannot reach the \(entry.scenario) fixture on port \(entry.port): \(error)"
            told?(Self.proxyRefusal(head, peer: peer, .badGateway, reason))
            return HTTPAnswer.text(.badGateway, reason)
        }
        wait(context, for: answer, head: head)
    }

    static func originForm(_ url: URL) -> String {
        let path = url.path.isEmpty ? "/" : url.path
        return url.query.map { "\(path)?\($0)" } ?? path
    }

    private func proxyNotHere(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let hint = services.proxyElsewhere.map { "; the proxy listens on port \($0)" } ?? ""
        refuse(context, head, .methodNotAllowed, "this port does not proxy\(hint)", closing: true)
    }

    private func notHere(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        refuse(context, head, .notFound, "this is the proxy port of tls-fixtures serve: send CONNECT NAME.fixtures.test:PORT "
               + "(or GET http://http.fixtures.test:PORT/); the dashboard and the control API are on the dashboard's port", closing: false)
    }

    // MARK: Answers

    /// Waits for `answer` with reading paused, writes it, then lets queued requests through.
    private func wait(_ context: ChannelHandlerContext, for answer: EventLoopFuture<HTTPAnswer>, head: HTTPRequestHead) {
        state = .answering
        setReading(context, false)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        answer.assumeIsolated().whenComplete { result in
            let (router, context) = loopBound.value
            let answer = (try? result.get()) ?? HTTPAnswer.text(.internalServerError, "internal error")
            router.state = .idle
            router.write(context, head, answer, closing: false)
            router.setReading(context, true)
            let waiting = router.queued
            router.queued = []
            for part in waiting { router.process(context, part) }
        }
    }

    /// A proxy request that will not reach a fixture: refused, and told to `proxyRefused` (the fixtures never see it).
    private func refuseProxying(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, _ reason: String) {
        if let told = services.proxyRefused { told(Self.proxyRefusal(head, peer: context.channel.remoteAddress, status, reason)) }
        refuse(context, head, status, reason, closing: true)
    }

    /// What `proxyRefused` is told: the request line bounded and escaped as the reasons quote a client's text.
    private static func proxyRefusal(_ head: HTTPRequestHead, peer: SocketAddress?, _ status: HTTPResponseStatus,
                                     _ reason: String) -> ProxyRefusal {
        ProxyRefusal(request: "\(head.method.rawValue) \(ProxyPolicy.shown(head.uri))",
                     peer: ConnectionRecorder.describe(peer), status: Int(status.code), reason: reason)
    }

    private func refuse(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, _ reason: String,
                        closing: Bool, json: Bool = false) {
        let answer = json || classify(head) == .api
            ? HTTPAnswer.failure(ControlAPIFailure(Int(status.code), reason))
            : HTTPAnswer.text(status, "\(status.code) \(reason)")
        state = closing ? .closing : .idle
        write(context, head, answer, closing: closing)
    }

    private func write(_ context: ChannelHandlerContext, _ request: HTTPRequestHead, _ answer: HTTPAnswer, closing: Bool) {
        var headers = HTTPHeaders()
        if let type = answer.contentType { headers.add(name: "Content-Type", value: type) }
        for (name, value) in answer.extraHeaders { headers.add(name: name, value: value) }
        if answer.status != .noContent { headers.add(name: "Content-Length", value: "\(answer.body.count)") }
        headers.add(name: "Cache-Control", value: "no-store")
        let keepAlive = request.isKeepAlive && !closing
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: answer.status, headers: headers))), promise: nil)
        if !answer.body.isEmpty && request.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: answer.body.count)
            buffer.writeBytes(answer.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { loopBound.value.close(promise: nil) }
        }
    }

    private func setReading(_ context: ChannelHandlerContext, _ on: Bool) {
        context.channel.setOption(ChannelOptions.autoRead, value: on).whenComplete { _ in }
        if on { context.read() }
    }

    /// The idle timeout is for clients that leave a connection silent; one waiting for its answer (a start that makes
    /// an RSA-8192 key can take a minute) is not idle, so the event stops here until the answer is written.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent, case .answering = state { return }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard error is HTTPParserError, case .idle = state else {
            context.close(promise: nil)
            return
        }
        // Not HTTP at all: one line saying so, then close (what the dashboard did through NIO's error handler).
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        refuse(context, head, .badRequest, "not an HTTP request", closing: true)
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}
