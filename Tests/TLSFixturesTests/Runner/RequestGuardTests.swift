import Foundation
import NIOCore
import NIOHTTP1
import Testing
import TLSFixtures
@testable import TLSFixturesRunner

/// The front door's request guard (issue 37): which room a request is for and why one is refused, as pure functions of
/// its head and its peer, each rule alone. `FrontDoorTests` sees the same rules through the whole pipeline.
@Suite("The front door's request guard")
struct RequestGuardTests {
    static func head(
        _ method: HTTPMethod, _ uri: String, headers: [(String, String)] = [("Host", "localhost:9800")],
        version: HTTPVersion = .http1_1
    ) -> HTTPRequestHead {
        HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(headers))
    }

    static let dashboardPort = RequestGuard.Port(
        controlAPI: true, proxy: true, dashboard: true, proxyElsewhere: nil, allowRemoteClients: false)
    static let proxyPort = RequestGuard.Port(
        controlAPI: false, proxy: true, dashboard: false, proxyElsewhere: nil, allowRemoteClients: false)
    static let loopback = try! SocketAddress(ipAddress: "127.0.0.1", port: 50_000)
    static let remote = try! SocketAddress(ipAddress: "192.0.2.7", port: 50_000)

    @Test("each request goes to one room, by its method and target")
    func rooms() {
        let table: [(HTTPMethod, String, RequestGuard.Room)] = [
            (.GET, "/", .dashboard), (.GET, "/scenarios.json", .dashboard), (.GET, "/apis", .dashboard),
            (.GET, "/api", .api), (.POST, "/api/fixtures", .api), (.GET, "/api?x=1", .api),
            (.CONNECT, "expired.fixtures.test:9831", .connect), (.GET, "http://http.fixtures.test:9843/", .forward),
            (.GET, "HTTPS://expired.fixtures.test:9831/", .forward),
        ]
        for (method, uri, room) in table {
            #expect(RequestGuard.room(Self.head(method, uri)) == room, "\(method) \(uri)")
        }
    }

    @Test("Host: one, well formed, required from HTTP/1.1 on (RFC 9112 §3.2)")
    func host() {
        #expect(RequestGuard.hostProblem(Self.head(.GET, "/")) == nil)
        #expect(RequestGuard.hostProblem(Self.head(.GET, "/", headers: [], version: .http1_0)) == nil)
        #expect(RequestGuard.hostProblem(Self.head(.GET, "/", headers: []))?.contains("needs a Host header") == true)
        let two = RequestGuard.hostProblem(Self.head(.GET, "/", headers: [("Host", "a"), ("Host", "b")]))
        #expect(two?.hasPrefix("the request has 2 Host headers") == true)
        #expect(RequestGuard.hostProblem(Self.head(.GET, "/", headers: [("Host", "[::1]:9800")])) == nil)
        #expect(RequestGuard.hostProblem(Self.head(.GET, "/", headers: [("Host", "a b")]))?.contains("is not HOST") == true)
        // A bad Host is refused as the head arrives, with a close.
        let refusal = RequestGuard.checkHead(Self.head(.GET, "/", headers: []), on: Self.dashboardPort)
        #expect(refusal?.status == .badRequest && refusal?.closing == true)
    }

    @Test("the control API refuses what a web page could send: a foreign Origin, a Host that is not loopback")
    func crossSite() {
        let local = Self.head(.POST, "/api/fixtures", headers: [("Host", "localhost:9800"), ("Origin", "http://localhost:9800")])
        #expect(RequestGuard.crossSiteProblem(local, localPort: 9800, allowRemote: false) == nil)
        let page = Self.head(.POST, "/api/fixtures", headers: [("Host", "localhost:9800"), ("Origin", "https://evil.example")])
        #expect(RequestGuard.crossSiteProblem(page, localPort: 9800, allowRemote: false)?.contains("evil.example") == true)
        // The dashboard's own origin, on another port, is another origin.
        let otherPort = Self.head(.POST, "/api", headers: [("Host", "localhost:9800"), ("Origin", "http://localhost:9801")])
        #expect(RequestGuard.crossSiteProblem(otherPort, localPort: 9800, allowRemote: false) != nil)
        let rebound = Self.head(.GET, "/api/fixtures", headers: [("Host", "attacker.example:9800")])
        #expect(RequestGuard.crossSiteProblem(rebound, localPort: 9800, allowRemote: false)?.contains("DNS") == true)
        #expect(RequestGuard.crossSiteProblem(rebound, localPort: 9800, allowRemote: true) == nil)
        let v6 = Self.head(.GET, "/api/fixtures", headers: [("Host", "[::1]:9800")])
        #expect(RequestGuard.crossSiteProblem(v6, localPort: 9800, allowRemote: false) == nil)
    }

    @Test("a whole request: remote clients, rooms this port has not, and the body's limit")
    func wholeRequest() {
        let api = Self.head(.GET, "/api/fixtures")
        let connect = Self.head(.CONNECT, "expired.fixtures.test:9831")
        let page = Self.head(.GET, "/")
        #expect(RequestGuard.check(api, peer: Self.loopback, localPort: 9800, on: Self.dashboardPort) == nil)
        // Clients on other machines reach the dashboard, not the API or the proxy, unless allowed.
        #expect(RequestGuard.check(page, peer: Self.remote, localPort: 9800, on: Self.dashboardPort) == nil)
        for head in [api, connect] {
            let refusal = RequestGuard.check(head, peer: Self.remote, localPort: 9800, on: Self.dashboardPort)
            #expect(refusal?.status == .forbidden && refusal?.closing == true, "\(head.uri)")
        }
        var open = Self.dashboardPort
        open.allowRemoteClients = true
        #expect(RequestGuard.check(connect, peer: Self.remote, localPort: 9800, on: open) == nil)
        // The proxy's own port: no API (404, kept open), no dashboard (refused as the head arrives).
        let noAPI = RequestGuard.check(api, peer: Self.loopback, localPort: 9899, on: Self.proxyPort)
        #expect(noAPI?.status == .notFound && noAPI?.closing == false)
        #expect(RequestGuard.checkHead(page, on: Self.proxyPort)?.status == .notFound)
        // The dashboard's port when the proxy has one of its own: a CONNECT is told where it is.
        var elsewhere = Self.dashboardPort
        elsewhere.proxy = false
        elsewhere.proxyElsewhere = 9899
        let moved = RequestGuard.check(connect, peer: Self.loopback, localPort: 9800, on: elsewhere)
        #expect(moved?.status == .methodNotAllowed && moved?.reason.hasSuffix("the proxy listens on port 9899") == true)
        let limit = FixtureAPI.maximumBodyBytes
        #expect(RequestGuard.bodyProblem(count: limit) == nil)
        #expect(RequestGuard.bodyProblem(count: limit + 1)?.status == .payloadTooLarge)
    }

    @Test("one query parser: in order, empty values kept, percent-decoded")
    func query() {
        let pairs = RequestGuard.query("/api/health?scenarios=a%2Cb&scenarios=&after")
        #expect(pairs.map(\.name) == ["scenarios", "scenarios", "after"])
        #expect(pairs.map(\.value) == ["a,b", "", ""])
        #expect(RequestGuard.query("/api/fixtures").isEmpty)
        #expect(RequestGuard.path("/api/fixtures?session=x") == "/api/fixtures")
        #expect(RequestGuard.isLoopback(try? SocketAddress(ipAddress: "::1", port: 1)))
        #expect(RequestGuard.isLoopback(try? SocketAddress(ipAddress: "127.0.0.2", port: 1)))
        #expect(!RequestGuard.isLoopback(Self.remote) && !RequestGuard.isLoopback(nil))
    }
}
