import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesFleet
import TLSFixturesServer
import TLSFixturesWire

/// What one listener of the runner answers: the dashboard, the control API, the proxy, or some of them.
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
    /// How the proxy reaches a fixture (a test's stand-in, or a TCP connection).
    var connector: any FixtureConnector = SocketConnector()
}

/// Routes each request of a runner connection to its room, once `RequestGuard` has let it in: the dashboard and the
/// control API answer here (`AnswerWriter`), the proxy's requests go on whole to `ProxyHandler`. `RequestFlow` in front
/// hands it one request at a time, so it keeps no queue and never touches reading.
///
/// Reads: `HTTPServerRequestPart`. Writes: `HTTPServerResponsePart`. Passes on: `ProxyRequest`.
final class RunnerRequestRouter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = ProxyRequest
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// A request, collecting its body (a dashboard request's is read and dropped).
        case collecting(HTTPRequestHead, ByteBuffer, RequestGuard.Room)
        /// Answered already (a refusal that keeps the connection): the rest of the request is read and dropped.
        case skipping
        /// After a refusal that closes the connection.
        case closing
    }

    private let services: RunnerServices
    private let dashboard: DashboardContent?
    private let port: RequestGuard.Port
    private var state = State.idle

    init(services: RunnerServices, dashboard: DashboardContent?) {
        self.services = services
        self.dashboard = dashboard
        port = RequestGuard.Port(
            controlAPI: services.controlAPI != nil, proxy: services.proxy != nil, dashboard: dashboard != nil,
            proxyElsewhere: services.proxyElsewhere, allowRemoteClients: services.allowRemoteClients)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.closing, _):
            break
        case (.skipping, .end):
            state = .idle
        case (.skipping, _):
            break
        case (.idle, .head(let head)):
            if let refusal = RequestGuard.checkHead(head, on: port) {
                refuse(context, head, refusal)
                if !refusal.closing { state = .skipping }
                return
            }
            state = .collecting(head, context.channel.allocator.buffer(capacity: 0), RequestGuard.room(head))
        case (.idle, _):
            break
        case (.collecting, .head):
            // A head before the last request ended: not HTTP as the decoder reads it.
            state = .closing
            context.close(promise: nil)
        case (.collecting(let head, var body, let room), .body(var bytes)):
            guard room != .dashboard else { return }
            if let refusal = RequestGuard.bodyProblem(count: body.readableBytes + bytes.readableBytes) {
                refuse(context, head, refusal)
                return
            }
            body.writeBuffer(&bytes)
            state = .collecting(head, body, room)
        case (.collecting(let head, let body, let room), .end):
            state = .idle
            if let refusal = RequestGuard.check(
                head, peer: context.channel.remoteAddress, localPort: context.channel.localAddress?.port, on: port)
            {
                refuse(context, head, refusal)
                return
            }
            switch room {
            case .dashboard: answerDashboard(context, head)
            case .api: answerAPI(context, head, body)
            case .connect, .forward: context.fireChannelRead(wrapInboundOut(ProxyRequest(head: head, body: body)))
            }
        }
    }

    // MARK: The rooms that answer here

    private func answerDashboard(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let path = RequestGuard.path(head.uri)
        let answer: HTTPAnswer
        if let route = dashboard?.route(path.isEmpty ? "/" : path), head.method == .GET || head.method == .HEAD {
            answer = HTTPAnswer(
                status: .ok, contentType: route.contentType, body: route.body,
                extraHeaders: route.filename.map { [("Content-Disposition", "attachment; filename=\"\($0)\"")] } ?? [])
        } else {
            answer = .text(.notFound, "not found; try / or /scenarios.json")
        }
        AnswerWriter.write(answer, to: head, closing: false, context: context)
    }

    /// Answered asynchronously; `RequestFlow` holds the requests behind it meanwhile.
    private func answerAPI(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer) {
        guard let controlAPI = services.controlAPI else { return }
        let request = ControlAPI.Request(
            method: head.method, uri: head.uri, contentType: head.headers.first(name: "Content-Type"),
            body: Data(body.readableBytesView))
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask { await controlAPI.answer(request) }.assumeIsolated().whenComplete {
            let answer = (try? $0.get()) ?? HTTPAnswer.text(.internalServerError, "internal error")
            AnswerWriter.write(answer, to: head, closing: false, context: loopBound.value)
        }
    }

    // MARK: Refusals

    /// The control API's refusals are JSON, the others a line of text; a proxy request's is told to `proxyRefused`.
    private func refuse(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ refusal: RequestGuard.Refusal) {
        let room = RequestGuard.room(head)
        if room.isProxy, let told = services.proxyRefused {
            told(ProxyHandler.refusal(head, peer: context.channel.remoteAddress, refusal.status, refusal.reason))
        }
        let answer =
            room == .api
            ? HTTPAnswer.failure(ControlAPIFailure(Int(refusal.status.code), refusal.reason))
            : HTTPAnswer.text(refusal.status, "\(refusal.status.code) \(refusal.reason)")
        if refusal.closing { state = .closing }
        AnswerWriter.write(answer, to: head, closing: refusal.closing, context: context)
    }

    /// A dashboard or proxy connection left silent is closed (one waiting for its answer never gets here:
    /// `RequestFlow` keeps the event).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard error is HTTPParserError, case .idle = state else {
            context.close(promise: nil)
            return
        }
        // Not HTTP at all: one line saying so, then close.
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        refuse(context, head, RequestGuard.Refusal(status: .badRequest, reason: "not an HTTP request", closing: true))
    }
}
