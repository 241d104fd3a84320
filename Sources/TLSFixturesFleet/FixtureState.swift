import Foundation
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

/// Where one fixture of the fleet is, and what only that state needs: the one fact the catalog document, the
/// dashboard, the proxy and the control API's lists are all read from (after swift-nio-ssl's `ConnectionState`).
package enum FixtureState: Sendable {
    /// Its certificate is being made (`making`: what is slow about it, "the rsa:8192 key", or ""); a catalog fixture's
    /// port is held meanwhile (bound, not listening), so a port that is taken fails at start, and a client that
    /// connects early is refused rather than accepted and reset.
    case preparing(making: String, reservation: PortReservation?)
    /// A built-in scenario the linked OpenSSL cannot serve (`reason`), while the legacy helper is asked to serve it; it
    /// becomes `servedByHelper`, or `unsupported` with this reason.
    case awaitingHelper(reason: String)
    /// Listening here.
    case serving(FixtureServer)
    /// Served by the legacy helper, a process of its own, as its report says.
    case servedByHelper(CatalogEntry)
    /// The linked OpenSSL (or the store's CA) cannot serve it; never served as something else.
    case unsupported(reason: String)
    /// Prepared in the background, then could not be served.
    case failed(reason: String)
    /// The fleet stopped it.
    case stopped

    /// The fixture listening in this process, when it is serving.
    package var fixture: FixtureServer? {
        if case .serving(let fixture) = self { return fixture }
        return nil
    }

    /// Serving here or in the helper, or about to.
    package var isServingOrPreparing: Bool {
        switch self {
        case .serving, .servedByHelper, .preparing, .awaitingHelper: return true
        case .unsupported, .failed, .stopped: return false
        }
    }

    /// Not settled yet: being made, or waiting for the legacy helper's answer.
    package var isPreparing: Bool {
        switch self {
        case .preparing, .awaitingHelper: return true
        case .serving, .servedByHelper, .unsupported, .failed, .stopped: return false
        }
    }
}

/// A fixture the fleet serves on a port, as the proxy needs it.
package struct ServedFixture: Sendable, Equatable {
    package var scenario: String
    package var port: Int
    /// Plain HTTP (the `http` scenario): the proxy forwards `GET http://…` to it; TLS ones take CONNECT.
    package var isCleartext: Bool
    /// Where the proxy connects: loopback, or the fixture's own address when it listens elsewhere.
    package var address: String
    /// The names a client may reach it by through the proxy, lowercased: `Scenario.fixtureHosts` (`NAME.fixtures.test`
    /// and any other name under it the leaf carries) and `NAME.DOMAIN` for each `serve --domain`.
    package var names: [String]

    /// `names` nil: `NAME.fixtures.test` alone.
    package init(scenario: String, port: Int, isCleartext: Bool, address: String, names: [String]? = nil) {
        self.scenario = scenario; self.port = port; self.isCleartext = isCleartext; self.address = address
        self.names = (names ?? ["\(scenario).\(Scenario.fixturesDomain)"]).map { $0.lowercased() }
    }

    init(_ fixture: FixtureServer) {
        self.init(
            scenario: fixture.scenario.name, port: fixture.port, isCleartext: fixture.scenario.isCleartext,
            address: Self.connectAddress(fixture.boundAddresses),
            names: fixture.scenario.fixtureHosts + fixture.prepared.domains.map { "\(fixture.scenario.name).\($0)" })
    }

    /// A fixture on every address (`--bind 0.0.0.0`) is reached on loopback; one bound to a single address, there.
    static func connectAddress(_ bound: [String]) -> String {
        if bound.isEmpty || bound.contains("127.0.0.1") || bound.contains("0.0.0.0") || bound.contains("localhost") {
            return "127.0.0.1"
        }
        if bound.contains("::1") || bound.contains("::") { return "::1" }
        return bound[0]
    }
}

// The fleet as the front door sees it: three narrow views, so each room of the front door holds only what it uses, and
// a test can stand in for the fleet. A new query (a fixture's connection records, readiness) is a requirement added
// here and a method of `FixtureFleet`.

/// What the proxy may reach: only ports the fleet serves a fixture on, so it can never be an open proxy.
package protocol FixtureLookup: Sendable {
    /// The fixture serving on `port` now, the catalog's or a leased one; nil when none does.
    func servedFixture(onPort port: Int) -> ServedFixture?
    /// The domains every fixture is named under: `fixtures.test` first, then `Options.domains`.
    var fixtureDomains: [String] { get }
    /// Where the proxy notes each tunnel before its first byte, so the fixture's record names the CONNECT authority.
    var proxyHops: ProxyHops { get }
}

/// What the dashboard and the control API read.
package protocol FleetQueries: Sendable {
    /// Moves on every change of state, so a reader knows when to render again.
    var generation: Int { get }
    /// The catalog's fixtures and their states (without the front door's own URLs, which it adds).
    func document() -> CatalogDocument
    /// The catalog the fleet serves from.
    var catalog: ScenarioCatalog { get }
    /// Whether the fleet has begun to stop (nothing new starts).
    var isStopping: Bool { get }
    /// The leased fixture `id`.
    func leasedFixture(id: String) throws(FleetError) -> LeasedFixture
    /// Leased fixtures serving now, oldest lease end first; only `session`'s when given.
    func leasedFixtures(session: String?) -> [LeasedFixture]
    /// The connection records of a leased fixture (by id) or a catalog one (by name) after `cursor`, once one has
    /// settled or `wait` has passed (`FixtureServer.connections(after:wait:)`).
    func connections(of fixture: FixtureFleet.Key, after cursor: ConnectionCursor, wait: Duration) async throws(FleetError)
        -> ConnectionList
    /// The last `limit` connection records of each catalog fixture serving in this process, by scenario name, at
    /// once: what the dashboard shows beside the browser's own result. Fixtures with no records are left out.
    func recentConnections(last limit: Int) -> [String: ConnectionList]
}

/// What the control API asks the fleet to do.
package protocol FleetCommands: Sendable {
    /// Starts the fixture `request` asks for on a free port, with a lease.
    func startLeased(_ request: LeaseRequest) async throws(FleetError) -> LeasedFixture
    /// A fresh lease of `ttl` seconds (nil: the fixture's own) from now.
    func renewLease(id: String, ttl: Int?) throws(FleetError) -> LeasedFixture
    /// Stops a leased fixture; false when there was none by that id (stopped already: not an error).
    @discardableResult
    func stopLeased(id: String) async -> Bool
    /// Stops every leased fixture of `session`; how many.
    func stopSession(_ session: String) async -> Int
}
