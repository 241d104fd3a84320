import Foundation

/// The control API of `tls-fixtures serve`: JSON over HTTP on the dashboard's port, for tests that cannot start
/// fixtures in their own process (an iOS test target cannot link OpenSSL).
///
/// | request | answer |
/// | --- | --- |
/// | `POST /api/fixtures` with `StartFixtureRequest` | `201` and a `FixtureDescription` |
/// | `GET /api/fixtures` (`?session=TAG`) | `200` and a `FixtureList` |
/// | `GET /api/fixtures/ID` | `200` and a `FixtureDescription`, or `404` |
/// | `POST /api/fixtures/ID/renew` (optional `RenewFixtureRequest`) | `200` and the description with its new lease, or `404` |
/// | `DELETE /api/fixtures/ID` | `204`, also when it was stopped already (idempotent) |
/// | `DELETE /api/sessions/TAG` | `200` and a `SessionStopped`: everything that session started |
/// | `GET /api/health` (`?scenarios=NAME,…`) | `200` when ready, `503` when not, with a `RunnerHealth` either way |
/// | `GET /api/fixtures/ID/connections` (`?after=N&wait=S`) | `200` and a `ConnectionList`, or `404` |
/// | `GET /api/scenarios/NAME/connections` (the same query) | the same for a catalog fixture; `404`, or `409` |
///
/// Errors are `APIError` bodies: `400` naming the field, `404`, `405` (with `Allow`), `413` (a body over
/// `maximumBodyBytes`), `415` (a body that is not `application/json`), `429` (`maximumLiveFixtures` are running), `503`
/// with `Retry-After` (as many starts as may be are making slow keys, or the runner is stopping).
/// Both sides encode and decode with `FixtureAPI.encoder()` and `decoder()`, so dates and data read the same.
public enum FixtureAPI {
    /// `POST` starts a fixture here, `GET` lists them; `/api/fixtures/ID` and `/api/fixtures/ID/renew` act on one.
    public static let fixturesPath = "/api/fixtures"
    /// `DELETE /api/sessions/TAG` stops every fixture started with that session tag.
    public static let sessionsPath = "/api/sessions"
    /// `/api/scenarios/NAME/connections`: a catalog fixture's connection records.
    public static let scenariosPath = "/api/scenarios"
    /// The last segment of a fixture's (or catalog scenario's) connection records.
    public static let connectionsSegment = "connections"
    /// The longest `?wait=` a connections request may ask for, in seconds: long enough for a load to end, short
    /// enough that no client holds the runner's connection for long.
    public static let maximumConnectionWait = 30
    /// How many stopped fixtures' connection records a runner keeps, readable by id (with `stopped` set in the
    /// `ConnectionList`) after the fixture was deleted or its lease ended: the most recently stopped ones.
    public static let keptStoppedFixtures = 32
    /// `GET` answers whether the runner is ready (`RunnerHealth`); `?scenarios=NAME,…` asks about those alone.
    public static let healthPath = "/api/health"
    /// A fixture started through the API stops when this passes without a renew, so a crashed test run leaves nothing
    /// listening.
    public static let defaultTTL = 300
    /// The longest lease one request may ask for: a day.
    public static let maximumTTL = 86_400
    /// Live fixtures started through the API, at most; one more is `429`.
    public static let maximumLiveFixtures = 256
    /// The largest request body (a scenario with 10,000 names is about 300 KB).
    public static let maximumBodyBytes = 1 << 20
    /// The longest scenario name a request may give, in bytes: a name is the first label of a DNS name
    /// (`NAME.fixtures.test`), and no DNS name is longer (RFC 1035 §2.3.4). A longer one is refused unread.
    public static let maximumScenarioNameBytes = 253
    /// Session tags: 1–64 of `A–Z a–z 0–9 . _ -`.
    public static let maximumSessionLength = 64

    /// Where the client finds the runner: `$TLS_FIXTURES_URL`, else `defaultRunnerURL`.
    public static let environmentVariable = "TLS_FIXTURES_URL"
    /// `tls-fixtures serve`'s dashboard with its default `--port-base`.
    public static let defaultRunnerURL = URL(string: "http://localhost:9800")!

    /// Whether `tag` is a valid session tag.
    public static func isValidSession(_ tag: String) -> Bool {
        !tag.isEmpty && tag.count <= maximumSessionLength
            && tag.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
    }

    /// ISO 8601 dates, base64 data, sorted keys: what the runner writes.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// The matching decoder.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// A built-in (or `serve --scenarios`) scenario by name, or a whole scenario file's JSON.
public enum ScenarioReference: Codable, Sendable, Hashable {
    case name(String)
    case inline(JSONValue)

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let name = try? c.decode(String.self) {
            self = .name(name)
            return
        }
        let value = try c.decode(JSONValue.self)
        guard case .object = value else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription:
                "give a scenario's name (\"expired\") or a scenario file's JSON object ({\"name\": …})")
        }
        self = .inline(value)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .name(let name): try c.encode(name)
        case .inline(let value): try c.encode(value)
        }
    }
}

/// `POST /api/fixtures`.
public struct StartFixtureRequest: Codable, Sendable, Hashable {
    /// Which scenario to start: a catalog name, or a whole scenario file's JSON.
    public var scenario: ScenarioReference
    /// Seconds the lease lasts without a renew (1…`FixtureAPI.maximumTTL`; default `FixtureAPI.defaultTTL`).
    public var ttl: Int?
    /// A tag that groups what one test run started, for `DELETE /api/sessions/TAG`.
    public var session: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(scenario: ScenarioReference, ttl: Int? = nil, session: String? = nil) {
        self.scenario = scenario; self.ttl = ttl; self.session = session
    }
}

/// `POST /api/fixtures/ID/renew`; an empty body keeps the fixture's ttl.
public struct RenewFixtureRequest: Codable, Sendable, Hashable {
    /// The new lease in seconds from now; nil keeps the fixture's current ttl.
    public var ttl: Int?
    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(ttl: Int? = nil) { self.ttl = ttl }
}

/// A client certificate a scenario hands out by design (`client-cert-required`): the one private key the API serves.
public struct ClientIdentity: Codable, Sendable, Hashable {
    /// The client certificate alone, PEM.
    public var certificatePEM: String
    /// PKCS#8 PEM.
    public var privateKeyPEM: String
    /// The certificate, key and chain as a PKCS#12 archive (base64 in JSON), for `SecPKCS12Import`.
    public var pkcs12: Data
    /// The password of `pkcs12` (fixed and public: the identity is a test fixture, not a secret).
    public var pkcs12Password: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(certificatePEM: String, privateKeyPEM: String, pkcs12: Data, pkcs12Password: String) {
        self.certificatePEM = certificatePEM; self.privateKeyPEM = privateKeyPEM
        self.pkcs12 = pkcs12; self.pkcs12Password = pkcs12Password
    }
}

/// Where the runner's CONNECT proxy listens (on the runner's host) and which names it resolves to its fixtures.
public struct ProxyEndpoint: Codable, Sendable, Hashable {
    /// The proxy's TCP port on the runner's host (the runner's own port).
    public var port: Int
    /// `fixtures.test` and every `serve --domain`: the proxy tunnels `NAME.DOMAIN:PORT` to the fixture on `PORT`.
    public var domains: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(port: Int, domains: [String]) { self.port = port; self.domains = domains }
}

/// A running fixture as the API describes it (`201` to a start, and every `GET`).
public struct FixtureDescription: Codable, Sendable, Hashable {
    public var id: String
    /// The scenario's name.
    public var scenario: String
    /// The catalog group (`protocol`, `certificate`, …; `custom` for a scenario given as JSON).
    public var group: String
    /// What is deliberately different about the server, in one line.
    public var summary: String
    /// The TCP port the fixture listens on (on the runner's host, all of its addresses).
    public var port: Int
    /// `https://localhost:PORT/` (`http://` for the cleartext scenario): fine for pinning tests.
    public var url: URL
    /// `https://NAME.fixtures.test:PORT/`: what ATS tests must use (localhost is exempt from ATS).
    public var qualifiedURL: URL
    /// One URL per `serve --domain`: `https://NAME.DOMAIN:PORT/`.
    public var domainURLs: [URL]
    /// SPKI pins (base64 SHA-256) of the leaf, the CA, a backup key and the published `pinned` leaf.
    public var pins: FixturePins
    /// The built-in CA.
    public var caPEM: String
    /// What the server sends, leaf first; empty for plain HTTP.
    public var chainPEM: String
    /// The simulated TLS proxy's root a device is assumed to trust (`pin-mitm`), when the scenario has one.
    public var interceptionRootPEM: String?
    /// The client certificate the server accepts, when it demands one.
    public var clientIdentity: ClientIdentity?
    /// What standard clients are expected to make of this fixture (OpenSSL's verify, ATS, pins).
    public var expect: FixtureExpectations
    /// The runner's proxy, when it runs one.
    public var proxy: ProxyEndpoint?
    /// The session tag it was started with, if any.
    public var session: String?
    /// The lease in seconds: without a renew, the runner stops the fixture at `expiresAt`.
    public var ttl: Int
    /// When the runner stops the fixture unless it is renewed first.
    public var expiresAt: Date

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(id: String, scenario: String, group: String, summary: String, port: Int, url: URL, qualifiedURL: URL,
                domainURLs: [URL], pins: FixturePins, caPEM: String, chainPEM: String, interceptionRootPEM: String?,
                clientIdentity: ClientIdentity?, expect: FixtureExpectations, proxy: ProxyEndpoint?, session: String?,
                ttl: Int, expiresAt: Date) {
        self.id = id; self.scenario = scenario; self.group = group; self.summary = summary; self.port = port
        self.url = url; self.qualifiedURL = qualifiedURL; self.domainURLs = domainURLs; self.pins = pins
        self.caPEM = caPEM; self.chainPEM = chainPEM; self.interceptionRootPEM = interceptionRootPEM
        self.clientIdentity = clientIdentity; self.expect = expect; self.proxy = proxy; self.session = session
        self.ttl = ttl; self.expiresAt = expiresAt
    }
}

/// `GET /api/fixtures`.
public struct FixtureList: Codable, Sendable, Hashable {
    /// Every fixture started through the API that is still running, in start order.
    public var fixtures: [FixtureDescription]
    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(fixtures: [FixtureDescription]) { self.fixtures = fixtures }
}

/// `DELETE /api/sessions/TAG`.
public struct SessionStopped: Codable, Sendable, Hashable {
    /// The session tag from the request path.
    public var session: String
    /// How many fixtures were running under it and are stopped now.
    public var stopped: Int
    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(session: String, stopped: Int) { self.session = session; self.stopped = stopped }
}

/// Every error answer: one line naming the problem and the fix, and the request field at fault when there is one.
///
/// A body, not a Swift error: the client library throws `RemoteFixtureError.refused`, which carries it.
public struct APIError: Codable, Sendable, Hashable, CustomStringConvertible {
    /// One line naming the problem and the fix.
    public var error: String
    /// `scenario`, `ttl`, `session`, `scenario.tls.minVersion`, …
    public var field: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(error: String, field: String? = nil) { self.error = error; self.field = field }
    public var description: String { error }
}
