import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The dashboard on its own plain-HTTP port: `/`, `/scenarios.json`, `/hosts`, `/ca.pem`, `/ca.cer`, `/ca.p12`.
///
/// It meets whatever reaches its port with the fixtures' limits (the runner's options): the header timeout (a request
/// must arrive whole in time: no slowloris), the idle timeout, back-pressure (answers wait for a client that does not
/// read them), at most 256 connections, and a pause in accepting when descriptors run out.
public final class DashboardServer: Sendable {
    public let port: Int
    /// `localhost`, or the address given to `--bind` when that is not loopback.
    public let host: String
    private let channels: [Channel]
    private let connections: ConnectionTracker

    public var url: URL { URL(string: "http://\(host):\(port)/")! }
    /// Open connections right now.
    public var connectionCount: Int { connections.count }

    private init(port: Int, host: String, channels: [Channel], connections: ConnectionTracker) {
        self.port = port; self.host = host; self.channels = channels; self.connections = connections
    }

    /// Static content, computed once: the catalog does not change while `serve` runs.
    struct Content: Sendable {
        var routes: [String: (contentType: String, body: Data, filename: String?)]
    }

    public static func start(runner: ScenarioRunner, port: Int, bindAddresses: [String]? = nil) async throws -> DashboardServer {
        let ca = try runner.store.ca().certificate
        let host = FixtureServer.urlHost(listeningOn: bindAddresses)
        let dashboardURL = "http://\(host):\(port)/"
        let document = runner.document(dashboard: dashboardURL)
        let html = DashboardPage.html(document: document, caSubject: ca.subject, caPin: ca.spkiSHA256)
        let scenarios = runner.started.map(\.scenario) + runner.legacyServed.map(\.scenario) + runner.unsupported.map(\.scenario)
        let content = Content(routes: [
            "/": ("text/html; charset=utf-8", Data(html.utf8), nil),
            "/scenarios.json": ("application/json", try document.json(), nil),
            "/hosts": ("text/plain; charset=utf-8", Data(try HostsFile.lines(for: scenarios).utf8), nil),
            "/ca.pem": ("application/x-pem-file", ca.pem, "tls-fixtures-ca.pem"),
            // Safari on iOS offers to install a profile for exactly this type.
            "/ca.cer": ("application/x-x509-ca-cert", ca.der, "tls-fixtures-ca.cer"),
            "/ca.p12": ("application/x-pkcs12", try ca.exported(as: .p12), "tls-fixtures-ca.p12"),
        ])
        let options = runner.options
        let logger = options.fixtureConfiguration(port: port).logger
        let cap = min(options.maximumConnections ?? ListenerLimits.automaticConnectionCap(), ListenerLimits.dashboardConnectionCap)
        let connections = ConnectionTracker(limit: cap, label: "dashboard", logger: logger)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptPauseHandler(label: "dashboard", logger: logger))
                }
            }
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: FixtureServer.writeBufferWaterMark)
            .childChannelInitializer { channel in
                // Browsers keep dashboard connections alive; tracking them lets stop() close them.
                guard connections.admit(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: options.idleTimeout))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        HTTPRequestDeadlineHandler(timeout: options.headerTimeout, startsAfterHandshake: false, logger: logger))
                    // Each small request can ask for the whole catalog: answers wait while the client is not reading.
                    try channel.pipeline.syncOperations.addHandler(HTTPBackPressureHandler())
                    try channel.pipeline.syncOperations.addHandler(DashboardResponder(content: content))
                }
            }
        var channels: [Channel] = []
        do {
            for address in bindAddresses ?? ["127.0.0.1"] {
                channels.append(try await FixtureServer.bind(bootstrap, address: address, port: port))
            }
            if bindAddresses == nil, let v6 = try? await FixtureServer.bind(bootstrap, address: "::1", port: port) {
                channels.append(v6)
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        return DashboardServer(port: channels.first?.localAddress?.port ?? port, host: host, channels: channels, connections: connections)
    }

    public func stop() async {
        for channel in channels { try? await channel.close() }
        await connections.closeAll(within: .seconds(1))
    }
}

/// Reads: `HTTPServerRequestPart`. Writes: `HTTPServerResponsePart` — one of the static routes, or 404.
final class DashboardResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let content: DashboardServer.Content
    private var head: HTTPRequestHead?

    init(content: DashboardServer.Content) { self.content = content }

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
            if let route = content.routes[path], request.method == .GET || request.method == .HEAD {
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
