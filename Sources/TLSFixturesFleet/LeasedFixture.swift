import Foundation
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

/// What a start of a leased fixture asks for, in the fleet's terms: the front door reads it from the control API's
/// request body (`StartFixtureRequest`), decoding an inline scenario with the scenario files' own rules.
package struct LeaseRequest: Sendable, Equatable {
    /// The scenario to serve: a catalog scenario by name, or one of the caller's own.
    package enum Source: Sendable, Equatable {
        case catalog(String)
        /// Prepared in memory only: nothing it names is written to the store.
        case inline(Scenario)
    }

    package var scenario: Source
    /// Seconds the fixture lives without a renew (nil: `FixtureAPI.defaultTTL`).
    package var ttl: Int?
    /// A tag that stops a test run's fixtures together.
    package var session: String?

    package init(scenario: Source, ttl: Int? = nil, session: String? = nil) {
        self.scenario = scenario
        self.ttl = ttl
        self.session = session
    }
}

/// A fixture the fleet serves on a free port under a lease, in domain values: the scenario, where it listens, what it
/// presents, and its lease. The front door describes it to clients (`FixtureDescription`); the fleet never does.
package struct LeasedFixture: Sendable {
    package var id: String
    package var scenario: Scenario
    package var port: Int
    /// `https://localhost:PORT/` (the address it listens on when not loopback).
    package var url: URL
    /// `https://NAME.fixtures.test:PORT/`.
    package var qualifiedURL: URL
    /// `https://NAME.DOMAIN:PORT/` for each of the fleet's domains.
    package var domainURLs: [URL]
    package var pins: FixturePins
    /// The CA its chain leads to.
    package var caCertificate: Certificate
    /// What the server sends, leaf first; empty for plain HTTP.
    package var chain: [Certificate]
    /// The client identity the server demands, when it does.
    package var clientCredential: Credential?
    /// The built-in interception CA, for a scenario whose clients must trust it (`expect.trustedRoots`); nil otherwise.
    package var interceptionRoot: Certificate?
    package var session: String?
    /// Seconds, from the last start or renew.
    package var ttl: Int
    package var expiresAt: Date

    /// Memberwise: each argument sets the property of the same name.
    package init(
        id: String, scenario: Scenario, port: Int, url: URL, qualifiedURL: URL, domainURLs: [URL], pins: FixturePins,
        caCertificate: Certificate, chain: [Certificate], clientCredential: Credential?, interceptionRoot: Certificate?,
        session: String?, ttl: Int, expiresAt: Date
    ) {
        self.id = id; self.scenario = scenario; self.port = port; self.url = url; self.qualifiedURL = qualifiedURL
        self.domainURLs = domainURLs; self.pins = pins; self.caCertificate = caCertificate; self.chain = chain
        self.clientCredential = clientCredential; self.interceptionRoot = interceptionRoot; self.session = session
        self.ttl = ttl; self.expiresAt = expiresAt
    }

    /// `server`, leased as `id`.
    init(id: String, server: FixtureServer, lease: FleetState.Lease) {
        let prepared = server.prepared
        self.init(
            id: id, scenario: server.scenario, port: server.port, url: server.url, qualifiedURL: server.qualifiedURL,
            domainURLs: server.domainURLs, pins: server.pins, caCertificate: prepared.caCertificate,
            chain: prepared.chainSent, clientCredential: prepared.clientCredential,
            interceptionRoot: lease.interceptionRoot, session: lease.session, ttl: lease.ttl,
            expiresAt: lease.expiresAt)
    }
}
