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
///
/// Errors are `APIError` bodies: `400` naming the field, `404`, `405` (with `Allow`), `413` (a body over
/// `maximumBodyBytes`), `415` (a body that is not `application/json`), `429` (`maximumLiveFixtures` are running).
/// Both sides encode and decode with `FixtureAPI.encoder()` and `decoder()`, so dates and data read the same.
public enum FixtureAPI {
    public static let fixturesPath = "/api/fixtures"
    public static let sessionsPath = "/api/sessions"
    /// A fixture started through the API stops when this passes without a renew, so a crashed test run leaves nothing
    /// listening.
    public static let defaultTTL = 300
    /// The longest lease one request may ask for: a day.
    public static let maximumTTL = 86_400
    /// Live fixtures started through the API, at most; one more is `429`.
    public static let maximumLiveFixtures = 256
    /// The largest request body (a scenario with 10,000 names is about 300 KB).
    public static let maximumBodyBytes = 1 << 20
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
    public var scenario: ScenarioReference
    /// Seconds the lease lasts without a renew (1…`FixtureAPI.maximumTTL`; default `FixtureAPI.defaultTTL`).
    public var ttl: Int?
    /// A tag that groups what one test run started, for `DELETE /api/sessions/TAG`.
    public var session: String?

    public init(scenario: ScenarioReference, ttl: Int? = nil, session: String? = nil) {
        self.scenario = scenario; self.ttl = ttl; self.session = session
    }
}

/// `POST /api/fixtures/ID/renew`; an empty body keeps the fixture's ttl.
public struct RenewFixtureRequest: Codable, Sendable, Hashable {
    public var ttl: Int?
    public init(ttl: Int? = nil) { self.ttl = ttl }
}

/// A client certificate a scenario hands out by design (`client-cert-required`): the one private key the API serves.
public struct ClientIdentity: Codable, Sendable, Hashable {
    public var certificatePEM: String
    /// PKCS#8 PEM.
    public var privateKeyPEM: String
    /// The certificate, key and chain as a PKCS#12 archive (base64 in JSON), for `SecPKCS12Import`.
    public var pkcs12: Data
    public var pkcs12Password: String

    public init(certificatePEM: String, privateKeyPEM: String, pkcs12: Data, pkcs12Password: String) {
        self.certificatePEM = certificatePEM; self.privateKeyPEM = privateKeyPEM
        self.pkcs12 = pkcs12; self.pkcs12Password = pkcs12Password
    }
}

/// Where the runner's CONNECT proxy listens (on the runner's host) and which names it resolves to its fixtures.
public struct ProxyEndpoint: Codable, Sendable, Hashable {
    public var port: Int
    /// `fixtures.test` and every `serve --domain`: the proxy tunnels `NAME.DOMAIN:PORT` to the fixture on `PORT`.
    public var domains: [String]

    public init(port: Int, domains: [String]) { self.port = port; self.domains = domains }
}

/// A running fixture as the API describes it (`201` to a start, and every `GET`).
public struct FixtureDescription: Codable, Sendable, Hashable {
    public var id: String
    /// The scenario's name.
    public var scenario: String
    public var group: String
    public var summary: String
    public var port: Int
    /// `https://localhost:PORT/` (`http://` for the cleartext scenario): fine for pinning tests.
    public var url: URL
    /// `https://NAME.fixtures.test:PORT/`: what ATS tests must use (localhost is exempt from ATS).
    public var qualifiedURL: URL
    /// One URL per `serve --domain`: `https://NAME.DOMAIN:PORT/`.
    public var domainURLs: [URL]
    public var pins: FixturePins
    /// The built-in CA.
    public var caPEM: String
    /// What the server sends, leaf first; empty for plain HTTP.
    public var chainPEM: String
    /// The simulated TLS proxy's root a device is assumed to trust (`pin-mitm`), when the scenario has one.
    public var interceptionRootPEM: String?
    /// The client certificate the server accepts, when it demands one.
    public var clientIdentity: ClientIdentity?
    public var expect: FixtureExpectations
    /// The runner's proxy, when it runs one.
    public var proxy: ProxyEndpoint?
    public var session: String?
    public var ttl: Int
    public var expiresAt: Date

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
    public var fixtures: [FixtureDescription]
    public init(fixtures: [FixtureDescription]) { self.fixtures = fixtures }
}

/// `DELETE /api/sessions/TAG`.
public struct SessionStopped: Codable, Sendable, Hashable {
    public var session: String
    /// How many fixtures were running under it and are stopped now.
    public var stopped: Int
    public init(session: String, stopped: Int) { self.session = session; self.stopped = stopped }
}

/// Every error answer: one line naming the problem and the fix, and the request field at fault when there is one.
public struct APIError: Codable, Sendable, Hashable, Error, CustomStringConvertible {
    public var error: String
    /// `scenario`, `ttl`, `session`, `scenario.tls.minVersion`, …
    public var field: String?

    public init(error: String, field: String? = nil) { self.error = error; self.field = field }
    public var description: String { error }
}
