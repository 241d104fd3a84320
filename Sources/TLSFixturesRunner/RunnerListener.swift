import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesServer

/// The limits every runner connection meets while it speaks HTTP: the fixtures' own (see `RunnerListener`).
struct RunnerLimits: Sendable {
    var idleTimeout: TimeAmount
    var headerTimeout: TimeAmount
    /// nil: a quarter of the descriptors; the listener holds at most `ListenerLimits.dashboardConnectionCap`.
    var maximumConnections: Int?
    var logger: Logger
}

/// The HTTP pipeline of the runner's listeners: NIOHTTP1 parses each request, `RequestFlow` hands them on one at a
/// time while the client reads its answers, `RunnerRequestRouter` answers the dashboard's and the control API's and
/// hands the proxy's to `ProxyHandler` (where this listener proxies).
enum RunnerHTTPPipeline {
    static func configure(
        _ channel: Channel, services: RunnerServices, dashboard: DashboardContent?, limits: RunnerLimits? = nil
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        if let limits { try pipeline.addHandler(IdleStateHandler(allTimeout: limits.idleTimeout)) }
        // Bytes a client sends after CONNECT and before the tunnel is up go to the tunnel, not to the floor.
        let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
        let encoder = HTTPResponseEncoder()
        try pipeline.addHandler(decoder)
        try pipeline.addHandler(encoder)
        let deadline = limits.map {
            HTTPRequestDeadlineHandler(timeout: $0.headerTimeout, startsAfterHandshake: false, logger: $0.logger)
        }
        if let deadline { try pipeline.addHandler(deadline) }
        // Each small request can ask for the whole catalog, or a minute of key generation: one at a time, and answers
        // wait while the client is not reading.
        let flow = RequestFlow()
        try pipeline.addHandler(flow)
        let router = RunnerRequestRouter(services: services, dashboard: dashboard)
        try pipeline.addHandler(router)
        if let policy = services.proxy {
            let layer = HTTPLayer(decoder: decoder, encoder: encoder, flow: flow, router: router, deadline: deadline)
            try pipeline.addHandler(
                ProxyHandler(
                    policy: policy, connector: services.connector, told: services.proxyRefused, layer: layer))
        }
    }
}

/// One port of the runner's front door — the dashboard's (with the control API and, by default, the proxy) or the
/// proxy's own (`serve --proxy-port`).
///
/// It meets whatever reaches its port with the fixtures' limits: the header timeout (a request must arrive whole in
/// time: no slowloris), the idle timeout, back-pressure (answers wait for a client that does not read them), at most 256
/// connections, and a pause in accepting when descriptors run out. A CONNECT tunnel, once up, leaves the HTTP limits
/// behind with the HTTP handlers.
package final class RunnerListener: Sendable {
    package let port: Int
    private let channels: [Channel]
    private let connections: ConnectionTracker

    /// Open connections right now.
    package var connectionCount: Int { connections.count }

    private init(port: Int, channels: [Channel], connections: ConnectionTracker) {
        self.port = port; self.channels = channels; self.connections = connections
    }

    /// Listens on `port` (0: a free one) of `bindAddresses` (default: 127.0.0.1 and, when it can, ::1).
    static func listen(
        label: String, port: Int, bindAddresses: [String]?, limits: RunnerLimits, services: RunnerServices,
        dashboard: DashboardContent?
    ) async throws -> RunnerListener {
        let cap = min(
            limits.maximumConnections ?? ListenerLimits.automaticConnectionCap(), ListenerLimits.dashboardConnectionCap)
        let connections = ConnectionTracker(limit: cap, label: label, logger: limits.logger)
        let bootstrap = ListenerLimits.bootstrap(
            label: label, logger: limits.logger, backlog: 256, connections: connections
        ) { channel in
            try RunnerHTTPPipeline.configure(channel, services: services, dashboard: dashboard, limits: limits)
        }
        var channels: [Channel] = []
        do {
            channels = try await FixtureServer.bind(bootstrap, addresses: bindAddresses ?? ["127.0.0.1"], port: port)
            if bindAddresses == nil,
                let v6 = try? await FixtureServer.bind(
                    bootstrap, address: "::1", port: channels.first?.localAddress?.port ?? port)
            {
                channels.append(v6)
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        return RunnerListener(
            port: channels.first?.localAddress?.port ?? port, channels: channels, connections: connections)
    }

    /// Stops listening and closes every connection (tunnels too) within a second.
    package func stop() async {
        for channel in channels { try? await channel.close() }
        await connections.closeAll(within: .seconds(1))
    }
}
