import NIOConcurrencyHelpers
import NIOCore
import TLSFixturesWire

/// The runner's CONNECT tunnels that are open now, by the address and port of each tunnel's own socket towards its
/// fixture: what a fixture sees as its peer. The proxy notes a tunnel before it forwards the client's first byte and
/// forgets it once the tunnel has closed; a fixture's `ConnectionAnnotator` (`annotator`) looks its peer up here, so
/// its record says "came through the proxy for AUTHORITY".
package final class ProxyHops: Sendable {
    private struct Hop {
        var proxy: ConnectionRecord.Proxy
        var token: Int
    }

    private let hops = NIOLockedValueBox<(byPeer: [String: Hop], nextToken: Int)>(([:], 0))

    package init() {}

    /// What fixtures ask.
    package var annotator: ConnectionAnnotator {
        ConnectionAnnotator { [self] address, port in lookUp(address: address, port: port) }
    }

    /// How many tunnels are noted now (for tests: a closed tunnel is forgotten).
    package var count: Int { hops.withLockedValue { $0.byPeer.count } }

    /// Notes that the tunnel whose socket towards the fixture is `local` carries `authority`'s CONNECT; the token
    /// forgets it (`forget`), and only it: a port the system hands out again belongs to the tunnel noted last.
    package func note(local: SocketAddress, authority: String) -> Int? {
        guard let key = Self.key(local.ipAddress, local.port) else { return nil }
        return hops.withLockedValue { hops in
            hops.nextToken += 1
            hops.byPeer[key] = Hop(proxy: ConnectionRecord.Proxy(authority: authority), token: hops.nextToken)
            return hops.nextToken
        }
    }

    package func forget(local: SocketAddress, token: Int) {
        guard let key = Self.key(local.ipAddress, local.port) else { return }
        hops.withLockedValue { hops in
            if hops.byPeer[key]?.token == token { hops.byPeer[key] = nil }
        }
    }

    package func lookUp(address: String, port: Int) -> ConnectionRecord.Proxy? {
        guard let key = Self.key(address, port) else { return nil }
        return hops.withLockedValue { $0.byPeer[key]?.proxy }
    }

    private static func key(_ address: String?, _ port: Int?) -> String? {
        guard let address, let port else { return nil }
        return "\(address)|\(port)"
    }
}
