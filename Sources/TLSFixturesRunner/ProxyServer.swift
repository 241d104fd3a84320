import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesWire
import TLSFixturesScenario
import TLSFixturesServer

/// The runner's proxy on a port of its own (`serve --proxy-port`), for a client that wants the proxy and the
/// dashboard apart. By default the proxy shares the dashboard's port and this is not used.
package final class ProxyServer: Sendable {
    package let port: Int
    private let channels: [Channel]
    private let connections: ConnectionTracker

    private init(port: Int, channels: [Channel], connections: ConnectionTracker) {
        self.port = port; self.channels = channels; self.connections = connections
    }

    package static func start(runner: ScenarioRunner, port: Int, bindAddresses: [String]? = nil,
                             allowRemoteClients: Bool = false) async throws -> ProxyServer {
        let services = RunnerServices(leases: nil, proxy: runner.proxyPolicy, proxyElsewhere: nil, allowRemoteClients: allowRemoteClients)
        let (channels, connections) = try await RunnerHTTPPipeline.listen(label: "proxy", runner: runner, port: port,
                                                                          bindAddresses: bindAddresses, services: services, dashboard: nil)
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
