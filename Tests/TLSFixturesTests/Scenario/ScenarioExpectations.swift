import Foundation
import Testing
@testable import TLSFixtures

// What a client must observe for every catalog scenario: what its file declares (`expect.handshake`, `expect.verify`,
// `expect.trustedRoots`), written by hand from /work/shared/scenarios.md (the spec) and OpenSSL's documented
// behaviour, never read from what the server does. Each verify text was confirmed with `openssl verify -auth_level 2
// -purpose sslserver -verify_hostname localhost` against certificates made with the openssl CLI. A scenario file is
// therefore the one place its expectations are written: a new file is held to its own, with no edit here.
//
// Baseline (scenarios.md, `Expectations.Handshake()`): RSA-2048 leaf signed with SHA-256 by the built-in EC P-256
// root, sent alone; TLS 1.2–1.3, ECDHE + AES-GCM. A client offering everything up to TLS 1.3 therefore gets TLS 1.3
// with an AES-GCM suite and an (EC)DHE share, and the leaf shows `ecdsa-with-SHA256`.

/// The key exchange a client sees: s_client's "Server Temp Key" (X25519 / ECDH curve, DH bits) or none at all.
enum KeyExchange: Equatable, Sendable, CustomStringConvertible {
    /// X25519, X448 or an ECDH curve.
    case ecdhe
    /// Finite-field DH with a group of exactly this size.
    case dhe(bits: Int)
    /// Static RSA key transport: the server sends no ephemeral key.
    case rsa

    var description: String {
        switch self {
        case .ecdhe: return "ECDHE"
        case .dhe(let bits): return "DHE \(bits)"
        case .rsa: return "RSA"
        }
    }

    /// Reads the probe's `keyExchange` (`X25519`, `ECDH prime256v1`, `DH 1024`, `X25519MLKEM768`, nil for RSA) and the
    /// server's JSON (which says `RSA`).
    static func fromProbe(_ text: String?) -> KeyExchange? {
        guard let text, text != "RSA" else { return .rsa }
        if text.hasPrefix("X25519") || text.hasPrefix("X448") || text.hasPrefix("ECDH") || isHybridECDHE(text) { return .ecdhe }
        if text.hasPrefix("DH "), let bits = Int(text.dropFirst(3).trimmingCharacters(in: .whitespaces)) { return .dhe(bits: bits) }
        return nil
    }

    /// Reads s_client's "Server Temp Key: X25519, 253 bits" / "ECDH, prime256v1, 256 bits" / "DH, 1024 bits" (or
    /// OpenSSL 3.5's "Peer Temp Key: …" and "Negotiated TLS1.3 group: X25519MLKEM768"); nil (no such line) is static RSA.
    static func fromSClient(_ text: String?) -> KeyExchange? {
        guard let text else { return .rsa }
        if text.hasPrefix("X25519") || text.hasPrefix("X448") || text.hasPrefix("ECDH") || isHybridECDHE(text) { return .ecdhe }
        if text.hasPrefix("DH,") {
            let digits = text.dropFirst(3).trimmingCharacters(in: .whitespaces).prefix { $0.isNumber }
            return Int(digits).map { .dhe(bits: $0) }
        }
        return nil
    }
}

extension KeyExchange {
    /// The hybrid groups of OpenSSL 3.5+ (X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024) send an ECDHE share
    /// and an ML-KEM one in one key share: the client still sees an ephemeral EC key agreement, now with ML-KEM on top.
    /// A pure ML-KEM group is not one (and no scenario expects it: it reads as unknown, and fails the comparison).
    static func isHybridECDHE(_ group: String) -> Bool {
        group.range(of: "MLKEM", options: .caseInsensitive) != nil
            && ["X25519", "X448", "SecP256r1", "SecP384r1", "SecP521r1"].contains { group.lowercased().hasPrefix($0.lowercased()) }
    }
}

extension ScenarioExpectation {
    /// The expectations `scenario`'s file declares (`expect.handshake`, `expect.verify`, `expect.trustedRoots`).
    init(declaredBy scenario: Scenario) {
        name = scenario.name
        guard !scenario.isCleartext else { return }
        let declared = scenario.expect.handshake ?? Expectations.Handshake()
        requires = declared.requires.map { OptionalFeature(rawValue: $0)! }
        // expect.verify is against the built-in CA alone; where the device is assumed to trust more roots (pin-mitm's
        // interception root), the file states the verdict against all of them too.
        let caOnly = scenario.expect.verify ?? "(Scenarios/\(scenario.name).json states no expect.verify)"
        handshake = HandshakeExpectation(
            protocolName: declared.protocol, ciphers: Set(declared.ciphers),
            keyExchange: KeyExchange.fromDeclared(declared.keyExchange), leafSignature: Set(declared.leafSignature),
            keyType: declared.keyType, keyBits: declared.keyBits, certificateCount: declared.certificates,
            verify: declared.verifyTrustingDeviceRoots ?? caOnly,
            verifyAgainstBuiltInCAOnly: declared.verifyTrustingDeviceRoots == nil ? nil : caOnly,
            deviceAlsoTrustsInterceptionRoot: scenario.expect.trustedRoots?.contains(BuiltinAuthority.interceptionRoot.rawValue) == true,
            stockOpenSSLRefuses: declared.stockOpenSSLRefuses)
    }
}

extension KeyExchange {
    /// A file's `ECDHE`, `RSA` or `DHE BITS` (the decoder accepts nothing else).
    static func fromDeclared(_ text: String) -> KeyExchange {
        switch text {
        case "ECDHE": return .ecdhe
        case "RSA": return .rsa
        default: return .dhe(bits: Int(text.dropFirst(4))!)
        }
    }
}

/// Something only some OpenSSL builds can serve (detected at run time, never assumed).
enum OptionalFeature: String, Sendable, Equatable, CustomStringConvertible {
    case sslv3 = "SSLv3"
    case rc4 = "RC4"
    case tripleDES = "3DES"
    var description: String { rawValue }
}

/// What a client observes in one handshake with the scenario.
struct HandshakeExpectation: Sendable, Equatable {
    /// As OpenSSL names it: `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3` (`SSLv3`).
    var protocolName: String
    /// OpenSSL cipher names; more than one where the spec leaves the server's choice open.
    var ciphers: Set<String>
    var keyExchange: KeyExchange
    /// The leaf's signature algorithm as `openssl x509 -text` prints it; more than one only where the spec does not
    /// say what kind of key the issuer has (the test then checks the algorithm matches the issuer's key type).
    var leafSignature: Set<String>
    /// `RSA` or `EC`.
    var keyType: KeyAlgorithm
    var keyBits: Int
    /// Certificates the server sends (leaf included).
    var certificateCount: Int
    /// OpenSSL's verify text for host `localhost`, auth level 2, purpose sslserver, against the roots the device is
    /// assumed to trust (the built-in CA; for `pin-mitm` also the interception root).
    var verify: String
    /// The verify text against the built-in CA alone, where that differs from `verify`.
    var verifyAgainstBuiltInCAOnly: String? = nil
    /// The device is assumed to trust a second, "interception" root as well (pin-mitm).
    var deviceAlsoTrustsInterceptionRoot = false
    /// Stock OpenSSL clients (s_client with its defaults) abort the handshake with this error before seeing the chain.
    var stockOpenSSLRefuses: String? = nil
}

/// One catalog row.
struct ScenarioExpectation: Sendable, CustomStringConvertible, CustomTestStringConvertible {
    var name: String
    /// nil: plain HTTP, no TLS.
    var handshake: HandshakeExpectation?
    /// Served only when the linked OpenSSL has this; otherwise starting it must throw `ScenarioUnsupported`.
    var requires: OptionalFeature? = nil

    var description: String { name }
    var testDescription: String { name }
}

enum ScenarioExpectations {
    /// Every catalog scenario with what its file declares.
    static let all: [ScenarioExpectation] = ScenarioCatalog.builtIn.scenarios.map(ScenarioExpectation.init(declaredBy:))

    static func named(_ name: String) -> ScenarioExpectation {
        guard let row = all.first(where: { $0.name == name }) else { fatalError("no expectation row for \(name)") }
        return row
    }
}

@Suite("ScenarioEndToEnd: the expectation table")
struct ScenarioEndToEndTableTests {
    @Test("every TLS scenario file states its verify text; a file without expect.handshake is held to the baseline")
    func declaredExpectations() throws {
        for scenario in ScenarioCatalog.builtIn.scenarios where !scenario.isCleartext {
            #expect(scenario.expect.verify != nil, "Scenarios/\(scenario.name).json: expect.verify is missing")
        }
        let bare = try ScenarioCatalog.decode(Data(#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{},"expect":{"ats":"allow","verify":"ok"}}"#.utf8), source: "x.json")
        let handshake = try #require(ScenarioExpectation(declaredBy: bare).handshake)
        // The baseline as scenarios.md states it, written here once more on purpose: the library's default is the
        // value under test.
        #expect(handshake.protocolName == "TLSv1.3" && handshake.keyExchange == .ecdhe && handshake.keyType == .rsa
                && handshake.keyBits == 2048 && handshake.certificateCount == 1 && handshake.leafSignature == ["ecdsa-with-SHA256"])
        #expect(ScenarioExpectations.named("http").handshake == nil)
    }

    @Test("KeyExchange reads both the probe's and s_client's wording")
    func keyExchangeParsing() {
        #expect(KeyExchange.fromProbe("X25519") == .ecdhe)
        #expect(KeyExchange.fromProbe("ECDH prime256v1") == .ecdhe)
        #expect(KeyExchange.fromProbe("DH 1024") == .dhe(bits: 1024))
        #expect(KeyExchange.fromProbe(nil) == .rsa)
        #expect(KeyExchange.fromSClient("X25519, 253 bits") == .ecdhe)
        #expect(KeyExchange.fromSClient("ECDH, prime256v1, 256 bits") == .ecdhe)
        #expect(KeyExchange.fromSClient("DH, 512 bits") == .dhe(bits: 512))
        #expect(KeyExchange.fromSClient(nil) == .rsa)
    }
}
