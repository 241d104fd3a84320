import Foundation
import TLSFixturesWire
import TLSFixturesPKI

/// One fixture: the TLS settings, the certificate plan, and what standard clients are expected to make of it.
///
/// A scenario changes one thing from the catalog's baseline (RSA-2048 leaf, SHA-256, from the built-in CA, SANs
/// `localhost` and `NAME.fixtures.test`, EKU serverAuth, 397 days from one day ago, TLS 1.2–1.3 with ECDHE + AES-GCM),
/// so a failure has one cause. Files in `Scenarios/` state only what differs.
public struct Scenario: Codable, Sendable, Hashable, Identifiable {
    /// The scenario's name: a catalog name (`expired`) or your own; also the first label of `qualifiedHost`.
    public var name: String
    /// The catalog group it belongs to (`custom` for your own scenarios).
    public var group: ScenarioGroup
    /// The fixed port `serve` uses (moved by `--port-base`); nil for user scenarios without one.
    public var port: Int?
    /// What is deliberately different, in one line.
    public var summary: String
    /// nil: plain HTTP, no TLS (the `http` scenario). A file asks for that by giving neither `tls` nor `certificate`.
    public var tls: TLSPlan?
    /// nil exactly when `tls` is nil: a file that gives one without the other is refused.
    public var certificate: CertificatePlan?
    /// What standard clients are expected to make of it: OpenSSL's verify result, the ATS verdict and fix, pins.
    public var expect: Expectations

    public var id: String { name }

    /// The host apps must use for ATS tests: `localhost` and loopback IP literals are exempt from ATS by default.
    public var qualifiedHost: String { "\(name).\(Scenario.fixturesDomain)" }
    /// The domain of every `qualifiedHost`: reserved for testing (RFC 6761), so it never resolves to a real server.
    public static let fixturesDomain = "fixtures.test"

    /// True for plain HTTP (the `http` scenario).
    public var isCleartext: Bool { tls == nil }

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(name: String, group: ScenarioGroup, port: Int? = nil, summary: String, tls: TLSPlan? = TLSPlan(),
                certificate: CertificatePlan? = CertificatePlan(), expect: Expectations) {
        self.name = name; self.group = group; self.port = port; self.summary = summary
        self.tls = tls; self.certificate = certificate; self.expect = expect
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case name, group, port, summary, tls, certificate, expect }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        group = try c.decode(ScenarioGroup.self, forKey: .group)
        port = try c.decodeIfPresent(Int.self, forKey: .port)
        summary = try c.decode(String.self, forKey: .summary)
        tls = try c.decodeIfPresent(TLSPlan.self, forKey: .tls)
        certificate = try c.decodeIfPresent(CertificatePlan.self, forKey: .certificate)
        expect = try c.decode(Expectations.self, forKey: .expect)
        try validate(codingPath: decoder.codingPath)
    }

    /// Rules a file can break that types alone do not catch.
    func validate(codingPath: [CodingKey] = []) throws {
        func fail(_ key: CodingKeys, _ message: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: codingPath + [key], debugDescription: message))
        }
        do { try CertificateStore.validate(name: name) } catch { throw fail(.name, "\(error)") }
        if let port, !(1...65_535).contains(port) { throw fail(.port, "\(port) is not a TCP port (1–65535)") }
        if tls != nil && certificate == nil { throw fail(.certificate, "a TLS scenario needs a certificate plan (use {} for the baseline)") }
        // One rule, files and inline alike: plain HTTP is asked for by giving neither (Scenarios/http.json); a
        // certificate without "tls" is a TLS scenario missing a key, never silently served as HTTP.
        if tls == nil && certificate != nil {
            throw fail(.tls, "missing, so this scenario would be plain HTTP and its certificate unused: add \"tls\": {} "
                       + "for the baseline TLS 1.2–1.3 settings, or leave \"certificate\" out too for plain HTTP "
                       + "(as the http scenario)")
        }
        if let tls, tls.minVersion > tls.maxVersion {
            throw fail(.tls, "minVersion \(tls.minVersion) is above maxVersion \(tls.maxVersion)")
        }
        if let tls, tls.stapleOCSP, certificate?.revocation == nil {
            throw fail(.tls, "stapleOCSP needs a certificate with a revocation plan (certificate.revocation) to staple an answer about")
        }
        if let plan = certificate, plan.revocation != nil, plan.issuer == "self" {
            throw fail(.certificate, "a self-signed certificate has no issuer to answer OCSP or sign a CRL: give certificate.issuer")
        }
    }

    /// The names an app may connect by that reach this fixture through `/etc/hosts`: `NAME.fixtures.test` and any other
    /// name under `fixtures.test` the certificate carries (`long-subdomain`'s 63-character label).
    public var fixtureHosts: [String] {
        let suffix = ".\(Scenario.fixturesDomain)"
        let extra = ((certificate?.hosts ?? []) + (certificate?.extraHosts ?? [])).map { $0.lowercased() }
            .filter { $0.hasSuffix(suffix) && !$0.hasPrefix("*.") && $0 != qualifiedHost }
        var seen = Set<String>()
        return ([qualifiedHost] + extra).filter { seen.insert($0).inserted }
    }

    /// Needs an OCSP responder and CRL endpoint running beside it (the leaf names their URLs).
    public var needsRevocationServices: Bool { tls != nil && certificate?.revocation != nil }
}

/// The catalog's groups, as the scenario table (docs/scenarios.md) orders them.
public enum ScenarioGroup: String, Codable, Sendable, CaseIterable, Hashable {
    case control, `protocol`, cipher, certificate, revocation, pinning
    /// A published server configuration reproduced as a whole (Mozilla's server-side TLS profiles), not one change.
    case profile
    case clientAuth = "client auth"
    case cleartext, combination, custom
}

/// TLS settings; every field defaults to the baseline.
public struct TLSPlan: Codable, Sendable, Hashable {
    /// The lowest version the server accepts; default TLS 1.2.
    public var minVersion: TLSVersion = .tls1_2
    /// The highest version the server accepts; default TLS 1.3.
    public var maxVersion: TLSVersion = .tls1_3
    /// OpenSSL cipher string for TLS ≤ 1.2.
    public var ciphers: String = "ECDHE+AESGCM"
    /// TLS 1.3 suites; nil keeps OpenSSL's default (AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305).
    public var tls13Suites: String? = nil
    /// OpenSSL security level for this fixture only; weak scenarios use 0. nil keeps the library default.
    public var securityLevel: Int? = nil
    /// Key-exchange groups (OpenSSL's `-groups` syntax, e.g. `P-256`); nil keeps OpenSSL's default list.
    public var groups: String? = nil
    /// DHE parameters: `none` (no DHE suites work), OpenSSL's built-in group, or a generated group of N bits.
    public var dh: DHPlan = .none
    /// Whether the server demands a client certificate; default it asks for none.
    public var clientAuth: ClientAuthMode = .none
    /// Which certificates the server sends: the full chain (default), the leaf alone, or the chain out of order.
    public var sendChain: ChainToSend = .full
    /// Staple the issuer's current OCSP answer about the leaf when a client asks (status_request, RFC 6066 §8).
    public var stapleOCSP: Bool = false
    /// The server picks the suite from its own list (OpenSSL's SSL_OP_CIPHER_SERVER_PREFERENCE); false lets the
    /// client's order decide, as Mozilla's intermediate and modern configurations ask.
    public var serverPreference: Bool = true

    /// The baseline TLS settings; set only the fields a scenario changes.
    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case minVersion, maxVersion, ciphers, tls13Suites, securityLevel, groups, dh, clientAuth, sendChain, stapleOCSP, serverPreference
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = TLSPlan()
        minVersion = try c.decodeIfPresent(TLSVersion.self, forKey: .minVersion) ?? defaults.minVersion
        maxVersion = try c.decodeIfPresent(TLSVersion.self, forKey: .maxVersion) ?? defaults.maxVersion
        ciphers = try c.decodeIfPresent(String.self, forKey: .ciphers) ?? defaults.ciphers
        tls13Suites = try c.decodeIfPresent(String.self, forKey: .tls13Suites)
        securityLevel = try c.decodeIfPresent(Int.self, forKey: .securityLevel)
        if let level = securityLevel, !(0...5).contains(level) {
            throw DecodingError.dataCorruptedError(forKey: .securityLevel, in: c, debugDescription: "OpenSSL security levels are 0–5")
        }
        groups = try c.decodeIfPresent(String.self, forKey: .groups)
        dh = try c.decodeIfPresent(DHPlan.self, forKey: .dh) ?? .none
        clientAuth = try c.decodeIfPresent(ClientAuthMode.self, forKey: .clientAuth) ?? .none
        sendChain = try c.decodeIfPresent(ChainToSend.self, forKey: .sendChain) ?? .full
        stapleOCSP = try c.decodeIfPresent(Bool.self, forKey: .stapleOCSP) ?? false
        serverPreference = try c.decodeIfPresent(Bool.self, forKey: .serverPreference) ?? true
    }

    /// Writes only what differs from the baseline, so a file says exactly what is special about it.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let d = TLSPlan()
        if minVersion != d.minVersion { try c.encode(minVersion, forKey: .minVersion) }
        if maxVersion != d.maxVersion { try c.encode(maxVersion, forKey: .maxVersion) }
        if ciphers != d.ciphers { try c.encode(ciphers, forKey: .ciphers) }
        try c.encodeIfPresent(tls13Suites, forKey: .tls13Suites)
        try c.encodeIfPresent(securityLevel, forKey: .securityLevel)
        try c.encodeIfPresent(groups, forKey: .groups)
        if dh != .none { try c.encode(dh, forKey: .dh) }
        if clientAuth != .none { try c.encode(clientAuth, forKey: .clientAuth) }
        if sendChain != .full { try c.encode(sendChain, forKey: .sendChain) }
        if stapleOCSP { try c.encode(true, forKey: .stapleOCSP) }
        if !serverPreference { try c.encode(false, forKey: .serverPreference) }
    }
}

/// Finite-field DH for DHE suites: `"none"`, `"auto"` (RFC 7919 group sized to the key) or a bit size.
public enum DHPlan: Codable, Sendable, Hashable {
    case none, automatic
    case bits(Int)

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let bits = try? c.decode(Int.self) {
            guard [512, 768, 1024, 1536, 2048, 3072, 4096].contains(bits) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "DH size \(bits) is not offered: use 512, 768, 1024, 1536, 2048, 3072 or 4096")
            }
            self = .bits(bits)
            return
        }
        switch try c.decode(String.self) {
        case "none": self = .none
        case "auto": self = .automatic
        case let other: throw DecodingError.dataCorruptedError(in: c, debugDescription: "\"\(other)\" is not a DH choice: use \"none\", \"auto\" or a bit size")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .none: try c.encode("none")
        case .automatic: try c.encode("auto")
        case .bits(let bits): try c.encode(bits)
        }
    }
}

/// `required`: the handshake fails unless the client presents a certificate from the built-in CA.
public enum ClientAuthMode: String, Codable, Sendable, Hashable {
    case none, required
}

/// Which certificates the server sends after the leaf.
public enum ChainToSend: String, Codable, Sendable, Hashable {
    /// Leaf and intermediates: a correctly configured server.
    case full
    /// The leaf alone (`incomplete-chain`).
    case leafOnly = "leaf-only"
    /// Leaf, intermediates and the root (`untrusted-root`).
    case withRoot = "with-root"
    /// The leaf, then its issuers from the top down: the root, then the intermediates (`reversed-chain`). TLS lets only
    /// the leaf's place be fixed (RFC 8446 §4.4.2); whether the rest may come in any order is up to each client.
    case reversed
}
