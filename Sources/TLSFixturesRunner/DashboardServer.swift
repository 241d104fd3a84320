import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesWire
import TLSFixturesServer

/// The dashboard on its own plain-HTTP port: `/`, `/scenarios.json`, `/hosts`, `/ca.pem`, `/ca.cer`, `/ca.p12`; on the
/// same port the control API (`/api/…`) and, unless `serve --proxy-port` puts it elsewhere, the proxy
/// (`RunnerRequestRouter`).
///
/// It meets whatever reaches its port with the fixtures' limits (the runner's options): the header timeout (a request
/// must arrive whole in time: no slowloris), the idle timeout, back-pressure (answers wait for a client that does not
/// read them), at most 256 connections, and a pause in accepting when descriptors run out. A CONNECT tunnel, once up,
/// leaves the HTTP limits behind with the HTTP handlers.
package final class DashboardServer: Sendable {
    package let port: Int
    /// `localhost`, or the address given to `--bind` when that is not loopback.
    public let host: String
    private let channels: [Channel]
    private let connections: ConnectionTracker

    package var url: URL { URL(string: "http://\(host):\(port)/")! }
    /// Open connections right now.
    public var connectionCount: Int { connections.count }

    private init(port: Int, host: String, channels: [Channel], connections: ConnectionTracker) {
        self.port = port; self.host = host; self.channels = channels; self.connections = connections
    }

    /// `proxy`: serve the CONNECT proxy on this port too (else `proxyPort` names where it is, for the hint a stray
    /// CONNECT gets). `allowRemoteClients`: the API and the proxy answer other machines too.
    public static func start(runner: ScenarioRunner, port: Int, bindAddresses: [String]? = nil, proxy: Bool = true,
                             proxyPort: Int? = nil, allowRemoteClients: Bool = false) async throws -> DashboardServer {
        let host = FixtureServer.urlHost(listeningOn: bindAddresses)
        let content = try DashboardContent(runner: runner, dashboardURL: "http://\(host):\(port)/")
        let services = RunnerServices(leases: runner.leases, proxy: proxy ? runner.proxyPolicy : nil, proxyElsewhere: proxyPort,
                                      allowRemoteClients: allowRemoteClients)
        let (channels, connections) = try await RunnerHTTPPipeline.listen(label: "dashboard", runner: runner, port: port,
                                                                          bindAddresses: bindAddresses, services: services,
                                                                          dashboard: content)
        let bound = channels.first?.localAddress?.port ?? port
        if proxy { runner.leases.setProxy(ProxyEndpoint(port: bound, domains: runner.proxyPolicy.domains)) }
        return DashboardServer(port: bound, host: host, channels: channels, connections: connections)
    }

    package func stop() async {
        for channel in channels { try? await channel.close() }
        await connections.closeAll(within: .seconds(1))
    }
}

/// Reads: `HTTPServerRequestPart`. Writes: `HTTPServerResponsePart` — one of the static routes, or 404.
final class DashboardResponder: ChannelInboundHandler {
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
