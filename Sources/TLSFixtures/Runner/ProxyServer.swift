import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The runner's proxy on a port of its own (`serve --proxy-port`), for a client that wants the proxy and the
/// dashboard apart. By default the proxy shares the dashboard's port and this is not used.
public final class ProxyServer: Sendable {
    public let port: Int
    private let channels: [Channel]
    private let connections: ConnectionTracker

    private init(port: Int, channels: [Channel], connections: ConnectionTracker) {
        self.port = port; self.channels = channels; self.connections = connections
    }

    public static func start(runner: ScenarioRunner, port: Int, bindAddresses: [String]? = nil,
                             allowRemoteClients: Bool = false) async throws -> ProxyServer {
        let services = RunnerServices(leases: nil, proxy: runner.proxyPolicy, proxyElsewhere: nil, allowRemoteClients: allowRemoteClients)
        // The dashboard's limits: a header timeout before the tunnel is up, and at most 256 connections.
        let options = runner.options
        let logger = options.fixtureConfiguration(port: port).logger
        let cap = min(options.maximumConnections ?? ListenerLimits.automaticConnectionCap(), ListenerLimits.dashboardConnectionCap)
        let connections = ConnectionTracker(limit: cap, label: "proxy", logger: logger)
        let limits = RunnerHTTPPipeline.Limits(idleTimeout: options.idleTimeout, headerTimeout: options.headerTimeout, logger: logger)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard connections.admit(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try RunnerHTTPPipeline.configure(channel, services: services, dashboard: nil, limits: limits)
                }
            }
        var channels: [Channel] = []
        do {
            channels = try await FixtureServer.bind(bootstrap, addresses: bindAddresses ?? ["127.0.0.1"], port: port)
            if bindAddresses == nil, let v6 = try? await FixtureServer.bind(bootstrap, address: "::1", port: channels.first?.localAddress?.port ?? port) {
                channels.append(v6)
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        let bound = channels.first?.localAddress?.port ?? port
        runner.leases.setProxy(ProxyEndpoint(port: bound, domains: runner.proxyPolicy.domains))
        return ProxyServer(port: bound, channels: channels, connections: connections)
    }

    /// Stops listening and closes every tunnel.
    public func stop() async {
        for channel in channels { try? await channel.close() }
        await connections.closeAll(within: .seconds(1))
    }
}

extension ScenarioRunner {
    /// What the proxy may reach: this runner's fixtures, by `NAME.fixtures.test` and `NAME.DOMAIN`.
    var proxyPolicy: ProxyPolicy {
        ProxyPolicy(directory: directory, domains: [Scenario.fixturesDomain] + options.domains)
    }
}

extension DashboardResponder: RemovableChannelHandler {}
