import Foundation
import TLSFixturesWire
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario

/// One scenario as the outside world sees it: `/scenarios.json`, `scenarios list --json`, `serve --json`.
package struct CatalogEntry: Codable, Sendable, Equatable {
    package enum Status: String, Codable, Sendable {
        case serving, unsupported, listed
        /// Its keys are being made in the background (a first run); served when ready.
        case preparing
        /// Made in the background, then could not be served: `reason` says why.
        case failed
        /// The runner stopped it.
        case stopped
    }

    package var name: String
    package var group: ScenarioGroup
    package var summary: String
    package var port: Int?
    /// `https://localhost:PORT/`: fine for pinning tests.
    public var url: String?
    /// `https://NAME.fixtures.test:PORT/`: what ATS tests must use (localhost and loopback IPs are exempt from ATS).
    public var qualifiedURL: String?
    /// `https://NAME.DOMAIN:PORT/` for each `serve --domain`, when serving.
    public var domainURLs: [String]?
    package var status: Status
    package var reason: String?
    package var expect: Expectations
    /// Present once the scenario's certificates exist (serving).
    public var pins: FixturePins?
    package var tls: TLSPlan?
    package var certificate: CertificatePlan?
    /// What the served leaf says about revocation (its OCSP and CRL URLs, must-staple); nil when it names nothing.
    public var revocationSources: RevocationSources?
    /// Who serves it when not this process: the legacy helper (`make legacy-openssl`) and the OpenSSL it links.
    public var servedBy: String?
    /// Suites the scenario names that the linked OpenSSL does not have, so they are not served (e.g. mozilla-old's
    /// DES-CBC3-SHA on Debian's and Homebrew's OpenSSL 3); nil when none.
    public var unavailableCiphers: [String]?
    /// Key-exchange groups the scenario names that the linked OpenSSL does not know, so they are not offered (the
    /// Mozilla profiles' X25519MLKEM768 before OpenSSL 3.5); nil when none.
    public var unavailableGroups: [String]?
    /// What each client of the client matrix is expected to make of it for host `localhost` (for `long-subdomain`, its
    /// long name): `expect.clients` where it names the client, else `expect.verify`'s verdict. Nil without TLS.
    public var clientOutcomes: [String: ClientOutcome]?
    /// `Expectations.notJudgedByClientMatrix` while no client matrix has judged the scenario (its file has no
    /// `expect.clients` yet); `clientOutcomes` is then absent rather than guessed. Nil once judged, and without TLS.
    public var clientMatrix: String?
    /// What a browser that verifies certificates makes of `url` (`Scenario.browserExpectation`): the dashboard's live
    /// column marks the visiting browser's result expected or unexpected against it.
    public var browser: Scenario.BrowserExpectation?

    package init(scenario: Scenario, port: Int?, host: String = "localhost", status: Status, reason: String? = nil, pins: FixturePins? = nil) {
        name = scenario.name
        group = scenario.group
        summary = scenario.summary
        self.port = port
        let scheme = scenario.isCleartext ? "http" : "https"
        url = port.map { "\(scheme)://\(host):\($0)/" }
        qualifiedURL = port.map { "\(scheme)://\(scenario.qualifiedHost):\($0)/" }
        self.status = status
        self.reason = reason
        expect = scenario.expect
        self.pins = pins
        tls = scenario.tls
        certificate = scenario.certificate
        browser = scenario.browserExpectation
        if let why = scenario.clientMatrixNotJudged {
            clientMatrix = why
        } else if scenario.expect.defaultClientOutcome != nil {
            clientOutcomes = Dictionary(uniqueKeysWithValues: MatrixClient.allCases.compactMap { client in
                scenario.expect.outcome(for: client).map { (client.rawValue, $0.outcome) }
            })
        }
    }
}

/// A client of the client matrix, as `/scenarios.json` lists them (docs/CLIENTS.md has what each one did).
package struct MatrixClientEntry: Codable, Sendable, Equatable {
    public var id: String
    package var stack: String
    package var summary: String

    package init(_ client: MatrixClient) { id = client.rawValue; stack = client.stack; summary = client.summary }
}

/// The whole catalog with where each scenario lives.
package struct CatalogDocument: Codable, Sendable, Equatable {
    package var generator = "swift-tls-fixtures"
    package var openSSL = LinkedOpenSSL.versionText
    package var dashboard: String?
    /// Said once, where every reader of this document sees it.
    public var atsNote = ATSTrap.note
    /// `http://HOST:PORT` of the OCSP responder and CRL endpoint the revocation scenarios' leaves name, when running.
    public var revocationResponder: String?
    /// What Apple does about revocation, said once (each revocation scenario says what it means in `expect.revocation`).
    public var revocationNote = RevocationNote.apple
    /// `serve --domain`: leaves also name `NAME.DOMAIN`, and the proxy resolves those names.
    public var domains: [String]?
    /// The control API (`POST` here starts a fixture on a free port; see the README's "Testing an iOS app").
    public var controlAPI: String?
    /// The runner's HTTP proxy: `CONNECT NAME.fixtures.test:PORT` reaches the fixture on PORT, no /etc/hosts needed.
    public var proxy: ProxyEndpoint?
    /// The clients `expect.clients` and `clientOutcomes` name, in the client matrix's order.
    public var clients = MatrixClient.allCases.map(MatrixClientEntry.init)
    package var scenarios: [CatalogEntry]

    package init(dashboard: String?, scenarios: [CatalogEntry]) {
        self.dashboard = dashboard
        self.scenarios = scenarios
    }

    package func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

/// The localhost trap, in one sentence used everywhere a user could fall into it.
package enum ATSTrap {
    package static let note = "ATS does not apply to localhost, other unqualified names, .local names or loopback and local IP addresses (before iOS 17 every IP literal): an ATS test against https://localhost:PORT or https://127.0.0.1:PORT passes whatever the server does. Test ATS against https://NAME.fixtures.test:PORT/ with the names mapped to 127.0.0.1 (`tls-fixtures hosts`)."
}

/// The revocation pointers of a served leaf, as a client reads them.
package struct RevocationSources: Codable, Sendable, Equatable {
    package var ocsp: [String]
    package var crl: [String]
    package var mustStaple: Bool

    /// nil when the leaf names no OCSP responder, no CRL and no TLS Feature.
    public init?(leaf: Certificate) {
        ocsp = leaf.ocspURLs
        crl = leaf.crlURLs
        mustStaple = leaf.mustStaple
        if ocsp.isEmpty && crl.isEmpty && !mustStaple { return nil }
    }
}

/// What Apple's clients do about revocation, in one paragraph used wherever revocation scenarios are shown.
package enum RevocationNote {
    package static let apple = "ATS checks no revocation, and Apple's default trust evaluation fetches no OCSP response or CRL for a "
        + "certificate that is not Extended Validation (Security/trust/trustd/SecRevocationServer.c, SecPathBuilderCheckRevocation), so a "
        + "revoked leaf loads. It does honour an OCSP response the server staples: a stapled \"revoked\" fails trust (the same function "
        + "consumes stapled responses first; URLSession's ClientHello asks for one). An app that wants revocation checked adds "
        + "SecPolicyCreateRevocation (Alamofire's RevocationTrustEvaluator); trustd then asks the OCSP responder, never a CRL (it has no "
        + "CRL support), and without kSecRevocationRequirePositiveResponse an unreachable responder is not fatal (\"best attempt\", "
        + "Apple's kSecRevocationRequirePositiveResponse documentation). Apple's trust code knows no TLS Feature (must-staple) extension."
}
