import Foundation
import Testing
@testable import TLSFixtures

// What a client must observe for every catalog scenario, written by hand from /work/shared/scenarios.md (the spec)
// and OpenSSL's documented behaviour. Nothing here is read from Scenarios/*.json or copied from the package's output:
// each verify text was confirmed with `openssl verify -auth_level 2 -purpose sslserver -verify_hostname localhost`
// against certificates made with the openssl CLI (P-256 root with name constraints, RSA intermediate, …).
//
// Baseline (scenarios.md): RSA-2048 leaf signed with SHA-256 by the built-in EC P-256 root, sent alone; TLS 1.2–1.3,
// ECDHE + AES-GCM. A client offering everything up to TLS 1.3 therefore gets TLS 1.3 with an AES-GCM suite and an
// (EC)DHE share, and the leaf shows `ecdsa-with-SHA256`.

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

/// Something only some OpenSSL builds can serve (detected at run time, never assumed).
enum OptionalFeature: String, Sendable, CustomStringConvertible {
    case sslv3 = "SSLv3"
    case rc4 = "RC4"
    case tripleDES = "3DES"
    var description: String { rawValue }
}

/// What a client observes in one handshake with the scenario.
struct HandshakeExpectation: Sendable {
    /// As OpenSSL names it: `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3` (`SSLv3`).
    var protocolName: String
    /// OpenSSL cipher names; more than one where the spec leaves the server's choice open.
    var ciphers: Set<String>
    var keyExchange: KeyExchange
    /// The leaf's signature algorithm as `openssl x509 -text` prints it; more than one only where the spec does not
    /// say what kind of key the issuer has (the test then checks the algorithm matches the issuer's key type).
    var leafSignature: Set<String>
    /// `RSA` or `EC`.
    var keyType: String
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
    static let tls13AESGCM: Set<String> = ["TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256"]
    static let ecdheRSAAESGCM: Set<String> = ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]
    static let dheRSAAESGCM: Set<String> = ["DHE-RSA-AES256-GCM-SHA384", "DHE-RSA-AES128-GCM-SHA256"]
    /// A leaf signed with SHA-256 by an issuer the spec does not describe (an intermediate or another root).
    static let sha256ByUnspecifiedIssuer: Set<String> = ["ecdsa-with-SHA256", "sha256WithRSAEncryption"]

    static let baseline = HandshakeExpectation(
        protocolName: "TLSv1.3", ciphers: tls13AESGCM, keyExchange: .ecdhe, leafSignature: ["ecdsa-with-SHA256"],
        keyType: "RSA", keyBits: 2048, certificateCount: 1, verify: "ok")

    /// The baseline with what the scenario changes.
    static func row(_ name: String, requires: OptionalFeature? = nil, _ change: (inout HandshakeExpectation) -> Void = { _ in }) -> ScenarioExpectation {
        var handshake = baseline
        change(&handshake)
        return ScenarioExpectation(name: name, handshake: handshake, requires: requires)
    }

    static let all: [ScenarioExpectation] = [
        // MARK: control
        row("ats-compliant"),
        row("ecc256") { $0.keyType = "EC"; $0.keyBits = 256 },
        row("ecc384") { $0.keyType = "EC"; $0.keyBits = 384 },
        row("rsa4096") { $0.keyBits = 4096 },
        row("rsa8192") { $0.keyBits = 8192 },
        row("sha384") { $0.leafSignature = ["ecdsa-with-SHA384"] },
        row("sha512") { $0.leafSignature = ["ecdsa-with-SHA512"] },
        row("tls-v1-2") { $0.protocolName = "TLSv1.2"; $0.ciphers = ecdheRSAAESGCM },
        row("tls-v1-3"),

        // MARK: protocol
        row("tls-v1-0") { $0.protocolName = "TLSv1"; $0.ciphers = ["ECDHE-RSA-AES128-SHA"] },
        row("tls-v1-1") { $0.protocolName = "TLSv1.1"; $0.ciphers = ["ECDHE-RSA-AES128-SHA"] },
        // ECDHE suites need TLS extensions, which SSLv3 lacks, and the baseline configures no DH group: static RSA.
        row("ssl-v3", requires: .sslv3) {
            $0.protocolName = "SSLv3"; $0.ciphers = ["AES128-SHA", "AES256-SHA"]; $0.keyExchange = .rsa
        },

        // MARK: cipher
        row("static-rsa") {
            $0.protocolName = "TLSv1.2"; $0.keyExchange = .rsa
            $0.ciphers = ["AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA256", "AES256-SHA256", "AES128-SHA", "AES256-SHA"]
        },
        // No size is given for dhe-only: a DHE group as strong as the RSA-2048 key (OpenSSL's automatic choice, and the
        // smallest a security-level-2 client accepts) is 2048 bits.
        row("dhe-only") { $0.protocolName = "TLSv1.2"; $0.ciphers = dheRSAAESGCM; $0.keyExchange = .dhe(bits: 2048) },
        row("dh1024") { $0.protocolName = "TLSv1.2"; $0.ciphers = dheRSAAESGCM; $0.keyExchange = .dhe(bits: 1024) },
        row("dh512") { $0.protocolName = "TLSv1.2"; $0.ciphers = dheRSAAESGCM; $0.keyExchange = .dhe(bits: 512) },
        row("cbc") { $0.protocolName = "TLSv1.2"; $0.ciphers = ["ECDHE-RSA-AES128-SHA"] },
        // "That cipher only", everything else as the baseline (ECDHE, RSA leaf): the ECDHE-RSA variant.
        row("rc4", requires: .rc4) { $0.protocolName = "TLSv1.2"; $0.ciphers = ["ECDHE-RSA-RC4-SHA"] },
        row("3des", requires: .tripleDES) { $0.protocolName = "TLSv1.2"; $0.ciphers = ["ECDHE-RSA-DES-CBC3-SHA"] },
        row("null") { $0.protocolName = "TLSv1.2"; $0.ciphers = ["ECDHE-RSA-NULL-SHA"] },

        // MARK: certificate
        // Security level 2 (112 bits) rejects SHA-1 (63) and MD5 (39) signatures on every certificate but the anchor.
        row("sha1-leaf") { $0.leafSignature = ["ecdsa-with-SHA1"]; $0.verify = "CA signature digest algorithm too weak" },
        row("sha1-intermediate") {
            $0.leafSignature = sha256ByUnspecifiedIssuer; $0.certificateCount = 2
            $0.verify = "CA signature digest algorithm too weak"
        },
        // The control for the two-level chains: root → SHA-256 intermediate → leaf, the intermediate sent.
        row("intermediate") { $0.leafSignature = sha256ByUnspecifiedIssuer; $0.certificateCount = 2 },
        // ECDSA cannot be combined with MD5, so the MD5 leaf comes from an RSA intermediate, which is sent.
        row("md5-leaf") {
            $0.leafSignature = ["md5WithRSAEncryption"]; $0.certificateCount = 2
            $0.verify = "CA signature digest algorithm too weak"
        },
        // The leaf key is judged before the chain is even built.
        row("rsa1024") { $0.keyBits = 1024; $0.verify = "EE certificate key too weak" },
        // RSA-PSS with SHA-256 (mandatory for RSA in TLS 1.3) needs a key of at least 528 bits, so a 512-bit leaf can
        // only sign a TLS 1.2 handshake (PKCS#1 v1.5): the server must stop at TLS 1.2 to be reachable at all.
        row("rsa512") {
            $0.keyBits = 512; $0.protocolName = "TLSv1.2"; $0.ciphers = ecdheRSAAESGCM; $0.verify = "EE certificate key too weak"
        },
        row("self-signed") { $0.leafSignature = ["sha256WithRSAEncryption"]; $0.verify = "self-signed certificate" },
        row("untrusted-root") {
            $0.leafSignature = sha256ByUnspecifiedIssuer; $0.certificateCount = 2
            $0.verify = "self-signed certificate in certificate chain"
        },
        // The host name is checked before name constraints, so OpenSSL reports the mismatch.
        row("wrong-host") { $0.verify = "hostname mismatch" },
        // OpenSSL falls back to the subject CN when there is no SAN extension.
        row("no-san"),
        row("no-common-name"),
        row("expired") { $0.verify = "certificate has expired" },
        row("not-yet-valid") { $0.verify = "certificate is not yet valid" },
        row("validity-826-days"),
        // X509_V_ERR_INVALID_PURPOSE (26).
        row("no-server-auth-eku") { $0.verify = "unsuitable certificate purpose" },
        row("incomplete-chain") {
            $0.leafSignature = sha256ByUnspecifiedIssuer; $0.verify = "unable to get local issuer certificate"
        },
        // The leaf still names localhost (one change: an extra name outside the permitted subtrees).
        row("name-constraint-violation") { $0.verify = "permitted subtree violation" },
        row("1000-sans"),
        // Not in the spec: the baseline leaf plus IP addresses (OpenSSL checks iPAddress constraints and accepts it).
        row("ip-san"),

        // MARK: pinning
        row("pinned"),
        row("pin-reissued"),
        row("pin-rotated-key"),
        // A proxy's root signs the leaf directly and is not sent (the device has it).
        row("pin-mitm") {
            $0.leafSignature = sha256ByUnspecifiedIssuer
            $0.verifyAgainstBuiltInCAOnly = "unable to get local issuer certificate"
            $0.deviceAlsoTrustsInterceptionRoot = true
        },

        // MARK: client auth, cleartext, combination
        row("client-cert-required"),
        ScenarioExpectation(name: "http", handshake: nil),
        // TLS 1.0 leaves only CBC suites; static RSA with AES. The 1024-bit key is rejected before anything else is
        // looked at (self-signed, SHA-1, wrong host come later).
        row("legacy-everything") {
            $0.protocolName = "TLSv1"; $0.ciphers = ["AES128-SHA", "AES256-SHA"]; $0.keyExchange = .rsa
            $0.leafSignature = ["sha1WithRSAEncryption"]; $0.keyBits = 1024; $0.verify = "EE certificate key too weak"
        },
    ]

    static func named(_ name: String) -> ScenarioExpectation {
        guard let row = all.first(where: { $0.name == name }) else { fatalError("no expectation row for \(name)") }
        return row
    }
}

@Suite("ScenarioEndToEnd: the expectation table")
struct ScenarioEndToEndTableTests {
    @Test("the table has exactly one row for every catalog scenario")
    func coversTheCatalog() {
        let table = ScenarioExpectations.all.map(\.name)
        #expect(Set(table).count == table.count, "duplicate rows: \(table)")
        let catalog = Set(ScenarioCatalog.builtIn.names)
        let missing = catalog.subtracting(table).sorted()
        let extra = Set(table).subtracting(catalog).sorted()
        #expect(missing.isEmpty, "catalog scenarios with no expectation row (write one by hand): \(missing)")
        #expect(extra.isEmpty, "rows for scenarios the catalog does not have: \(extra)")
        // The spec (scenarios.md) lists 45 scenarios; ip-san is ours (the one leaf that names IP addresses).
        #expect(table.count == 46)
    }

    /// The scenario files state OpenSSL's verify text as data (against the built-in CA alone) for users to read; it
    /// must agree with what OpenSSL actually says, which this table was checked against.
    @Test("each scenario file's expect.verify is what OpenSSL says", arguments: ScenarioExpectations.all.filter { $0.handshake != nil })
    func catalogVerifyText(_ row: ScenarioExpectation) throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: row.name)
        let handshake = try #require(row.handshake)
        #expect(scenario.expect.verify == (handshake.verifyAgainstBuiltInCAOnly ?? handshake.verify),
                "Scenarios/\(row.name).json says \"\(scenario.expect.verify ?? "nothing")\"")
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
