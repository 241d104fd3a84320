import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import TLSFixturesFleet
import TLSFixturesOpenSSL
import TLSFixturesServer
import TLSFixturesWire

/// Where the front door listens, once it does: what the catalog document and every fixture description add to what
/// the fleet says.
struct FrontDoorAddresses: Sendable, Equatable {
    /// `http://HOST:PORT/` of the dashboard.
    var dashboard: String?
    var proxy: ProxyEndpoint?

    /// `document` with the dashboard, the control API and the proxy named.
    func decorate(_ document: CatalogDocument) -> CatalogDocument {
        var document = document
        document.dashboard = dashboard
        if let dashboard, let url = URL(string: dashboard) {
            document.controlAPI = url.appendingPathComponent("api/fixtures").absoluteString
        }
        document.proxy = proxy
        return document
    }

    /// Shared by the front door's rooms; set once the listeners are bound.
    final class Box: Sendable {
        private let box = NIOLockedValueBox(FrontDoorAddresses())
        var value: FrontDoorAddresses { box.withLockedValue { $0 } }
        func set(_ addresses: FrontDoorAddresses) { box.withLockedValue { $0 = addresses } }
    }
}

/// The runner's HTTP front door: the dashboard, the control API and the CONNECT proxy, on the dashboard's port (the
/// proxy on a port of its own with `proxyPort`).
///
/// Each room holds only the view of the fleet it uses: the dashboard `FleetQueries`, the control API `FleetQueries` and
/// `FleetCommands`, the proxy `FixtureLookup`. It never changes the fleet's state but through `FleetCommands`, and the
/// fleet never learns where the front door listens: the front door adds its own addresses to what the fleet says.
package final class RunnerFrontDoor: Sendable {
    package struct Options: Sendable {
        /// The dashboard's port (0: a free one).
        package var port: Int
        package var bindAddresses: [String]? = nil
        /// Serve the proxy on this port of its own instead of the dashboard's.
        package var proxyPort: Int? = nil
        /// Let clients on other machines use the control API and the proxy (loopback only by default).
        package var allowRemoteClients = false
        package var idleTimeout: TimeAmount = .seconds(60)
        package var headerTimeout: TimeAmount = .seconds(20)
        package var maximumConnections: Int? = nil
        package var logger = Logger(label: "tls-fixtures.runner")
        /// Told each proxy request answered with an error rather than reaching a fixture.
        package var proxyRefused: (@Sendable (ProxyRefusal) -> Void)? = nil

        package init(port: Int) { self.port = port }
    }

    package let dashboard: RunnerListener
    /// The proxy's own listener, with `proxyPort`.
    package let proxy: RunnerListener?
    /// `localhost`, or the address given to `bindAddresses` when that is not loopback.
    package let host: String
    private let addresses: FrontDoorAddresses.Box

    package var dashboardURL: URL { URL(string: "http://\(host):\(dashboard.port)/")! }
    /// Where the proxy listens, as descriptions and the catalog document name it.
    package var proxyEndpoint: ProxyEndpoint? { addresses.value.proxy }

    private init(dashboard: RunnerListener, proxy: RunnerListener?, host: String, addresses: FrontDoorAddresses.Box) {
        self.dashboard = dashboard; self.proxy = proxy; self.host = host; self.addresses = addresses
    }

    /// Listens on the dashboard's port (and the proxy's); nothing is left listening when it throws.
    package static func open(
        fleet: some FleetQueries & FleetCommands & FixtureLookup, ca: Certificate, options: Options
    ) async throws
        -> RunnerFrontDoor
    {
        let host = FixtureServer.urlHost(listeningOn: options.bindAddresses)
        let addresses = FrontDoorAddresses.Box()
        let limits = RunnerLimits(
            idleTimeout: options.idleTimeout, headerTimeout: options.headerTimeout,
            maximumConnections: options.maximumConnections, logger: options.logger)
        let controlAPI = ControlAPI(fleet: fleet, proxy: { addresses.value.proxy })
        let proxyPolicy = ProxyPolicy(fixtures: fleet)
        let ownProxyPort = options.proxyPort != nil
        let services = RunnerServices(
            controlAPI: controlAPI, proxy: ownProxyPort ? nil : proxyPolicy, proxyElsewhere: options.proxyPort,
            allowRemoteClients: options.allowRemoteClients, proxyRefused: options.proxyRefused)
        let content = try DashboardContent(fleet: fleet, ca: ca, addresses: addresses)
        let dashboard = try await RunnerListener.listen(
            label: "dashboard", port: options.port, bindAddresses: options.bindAddresses,
            limits: limits, services: services, dashboard: content)
        var proxy: RunnerListener? = nil
        if let proxyPort = options.proxyPort {
            let proxyServices = RunnerServices(
                controlAPI: nil, proxy: proxyPolicy, allowRemoteClients: options.allowRemoteClients,
                proxyRefused: options.proxyRefused)
            do {
                proxy = try await RunnerListener.listen(
                    label: "proxy", port: proxyPort, bindAddresses: options.bindAddresses, limits: limits,
                    services: proxyServices, dashboard: nil)
            } catch let error as FixtureError where error.code == .portInUse {
                await dashboard.stop()
                // Not the fixtures' ports: moving `portBase` would not help.
                throw RunnerError.proxyPortInUse(error.reason)
            } catch {
                await dashboard.stop()
                throw error
            }
        }
        addresses.set(
            FrontDoorAddresses(
                dashboard: "http://\(host):\(dashboard.port)/",
                proxy: ProxyEndpoint(port: proxy?.port ?? dashboard.port, domains: fleet.fixtureDomains)))
        return RunnerFrontDoor(dashboard: dashboard, proxy: proxy, host: host, addresses: addresses)
    }

    /// `document` as the front door serves it: with the dashboard, the control API and the proxy named.
    package func decorate(_ document: CatalogDocument) -> CatalogDocument { addresses.value.decorate(document) }

    /// The proxy first (its tunnels), then the dashboard.
    package func stop() async {
        await proxy?.stop()
        await dashboard.stop()
    }
}
