import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Network)
import Network
#endif

/// The runner's HTTP proxy: it resolves `NAME.fixtures.test` (and `NAME.DOMAIN` for `serve --domain`) to the runner's
/// fixtures, so an app or test reaches a fixture by its qualified name — the name ATS applies to — with no /etc/hosts
/// entry and no sudo. TLS stays end to end: the proxy only tunnels (`CONNECT`), so the client sees the fixture's own
/// certificate for the name it asked for.
///
/// It reaches this runner's fixtures and nothing else (anything else is `403`), so a session configured with it never
/// silently connects anywhere directly.
public struct FixtureProxy: Sendable, Hashable {
    /// The runner's host as the device sees it: `localhost` on a simulator, the Mac's address on a device.
    public var host: String
    /// The proxy's TCP port: the runner's port (`serve --port-base`, 9800 by default).
    public var port: Int
    /// The domains it resolves: `fixtures.test` and every `serve --domain`.
    public var domains: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(host: String = "localhost", port: Int = 9800, domains: [String] = ["fixtures.test"]) {
        self.host = host; self.port = port; self.domains = domains
    }

    /// For `URLSessionConfiguration.connectionProxyDictionary`: HTTP and HTTPS through this proxy, with the string keys
    /// CFNetwork reads on iOS and macOS (`kCFNetworkProxiesHTTPSProxy` and friends are macOS-only constants, but iOS
    /// honours the same strings) and FoundationNetworking reads on Linux.
    public var connectionProxyDictionary: [AnyHashable: Any] {
        [
            "HTTPEnable": 1,
            "HTTPProxy": host,
            "HTTPPort": port,
            "HTTPSEnable": 1,
            "HTTPSProxy": host,
            "HTTPSPort": port,
        ]
    }

    /// The same as libcurl (and curl, Python, most command-line clients) take it from the environment: `https_proxy`,
    /// `http_proxy`, and `no_proxy` for loopback so the runner's own API is reached directly.
    ///
    /// On Linux this is the way to route URLSession: FoundationNetworking does not read `connectionProxyDictionary`
    /// (swift-corelibs-foundation leaves it a TODO in `EasyHandle.swift`), but the libcurl under it reads these.
    public var environment: [String: String] {
        let url = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        return ["https_proxy": url, "http_proxy": url, "no_proxy": "localhost,127.0.0.1,::1"]
    }
}

extension URLSessionConfiguration {
    /// A configuration (a copy of `base`, ephemeral by default) whose sessions reach fixtures through `proxy`.
    ///
    /// ```swift
    /// let session = URLSession(configuration: .fixtures(through: fixture.proxy!))
    /// let (data, _) = try await session.data(from: fixture.qualifiedURL)   // no /etc/hosts entry needed
    /// ```
    public static func fixtures(through proxy: FixtureProxy, base: URLSessionConfiguration = .ephemeral) -> URLSessionConfiguration {
        // Copy, never mutate `base`: `.default` and `.ephemeral` hand out fresh objects, but a caller's may be shared.
        let configuration = (base.copy() as? URLSessionConfiguration) ?? .ephemeral
        configuration.routeFixtures(through: proxy)
        return configuration
    }

    /// Sends this configuration's requests through the runner's proxy: `connectionProxyDictionary` everywhere (every
    /// request goes to the proxy, which refuses anything that is not a fixture), and on iOS 17 / macOS 14 also
    /// `proxyConfigurations` with an HTTP CONNECT proxy limited to the fixture domains (`matchDomains`), which
    /// URLSession prefers there. (On Linux, FoundationNetworking ignores both: use `FixtureProxy.environment`.)
    public func routeFixtures(through proxy: FixtureProxy) {
        connectionProxyDictionary = proxy.connectionProxyDictionary
        #if canImport(Network) && !os(Linux)
        // No macOS in the check: the package deploys to macOS 14, where proxyConfigurations began, so `*` covers it
        // (naming it makes the compiler warn "unnecessary check"; scripts/lint-darwin.py's `available` rule).
        if #available(iOS 17.0, tvOS 17.0, watchOS 10.0, *),
           let port = NWEndpoint.Port(rawValue: UInt16(clamping: proxy.port)) {
            var configuration = ProxyConfiguration(httpCONNECTProxy: .hostPort(host: NWEndpoint.Host(proxy.host), port: port))
            configuration.matchDomains = proxy.domains
            configuration.allowFailover = false
            proxyConfigurations = [configuration]
        }
        #endif
    }
}
