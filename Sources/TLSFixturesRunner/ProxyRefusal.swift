import Foundation

/// A request the runner's proxy answered with an error instead of reaching a fixture: a name or port it will not
/// tunnel to (`ProxyPolicy`), a TLS fixture asked for over http://, or a fixture it could not reach. Told at once
/// (`FixtureRunner.Configuration.proxyRefused`), so `serve --log-connections` shows a load that never arrived at any
/// fixture, next to the connections that did: without it, a client that "refused" because the proxy did leaves no
/// line at all.
package struct ProxyRefusal: Sendable, Equatable {
    /// The request as the client sent it: `CONNECT expird.fixtures.test:9831`, `GET http://http.fixtures.test:9800/`.
    package var request: String
    /// The client's address, `127.0.0.1:52114`.
    package var peer: String
    /// The proxy's answer: 400, 403 or 502.
    package var status: Int
    package var reason: String

    /// `proxy: CONNECT expird.fixtures.test:9831 from 127.0.0.1:52114 refused (403): …`.
    package var line: String { "proxy: \(request) from \(peer) refused (\(status)): \(reason)" }
}
