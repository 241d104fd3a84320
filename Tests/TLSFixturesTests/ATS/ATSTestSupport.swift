import Foundation
import XCTest
import TLSFixtures

/// Hand-built server facts, written from the scenario catalog's prose (scenarios.md), never from server
/// code: what a client would observe about each fixture.
enum ATSFactsKit {
    /// A fixed "now" so every date in the facts is reproducible.
    static let now = Date(timeIntervalSince1970: 1_750_000_000) // 2025-06-15
    static let day: TimeInterval = 86_400

    /// Deterministic stand-in for base64(SHA-256(SPKI)): 32 bytes derived from a label.
    static func pin(_ label: String) -> String {
        var bytes = Array(label.utf8)
        while bytes.count < 32 { bytes += Array(label.utf8) + [UInt8(bytes.count)] }
        return Data(bytes.prefix(32)).base64EncodedString()
    }

    static func signatureAlgorithm(digest: String, signerKey: String) -> String {
        switch (digest, signerKey) {
        case ("none", _): return "ED25519"
        case (_, "EC"): return "ecdsa-with-\(digest.uppercased())"
        default: return "\(digest)WithRSAEncryption"
        }
    }

    static func cert(_ cn: String?, issuer: String, dns: [String]? = nil, ips: [String] = [],
                     keyType: KeyAlgorithm = .rsa, bits: Int = 2048, curve: String? = nil,
                     digest: String = "sha256", signerKey: String = "RSA",
                     notBefore: Date = now - day, days: Double = 397, isCA: Bool = false,
                     selfIssued: Bool = false, eku: [String]? = ["serverAuth"], key: String? = nil,
                     serial: String = "1") -> CertificateFacts {
        let subject = cn.map { "CN=\($0),O=swift-tls-fixtures" } ?? "O=swift-tls-fixtures"
        let keyLabel = key ?? "key-\(cn ?? "none")"
        let der = Data("DER:\(subject):\(issuer):\(serial):\(keyLabel)".utf8)
        return CertificateFacts(
            subject: subject, issuer: issuer, commonName: cn, dnsNames: dns, ipAddresses: ips,
            keyType: keyType, keyBits: bits, curve: curve,
            signatureAlgorithm: signatureAlgorithm(digest: digest, signerKey: signerKey), signatureDigest: digest,
            notBefore: notBefore, notAfter: notBefore + days * day, isCA: isCA, isSelfIssued: selfIssued,
            extendedKeyUsage: eku, spkiSHA256: pin(keyLabel),
            sha256Fingerprint: der.map { String(format: "%02x", $0) }.joined().padding(toLength: 64, withPad: "0", startingAt: 0),
            der: der)
    }

    static func root(_ cn: String, key: String? = nil) -> CertificateFacts {
        cert(cn, issuer: "CN=\(cn),O=swift-tls-fixtures", dns: nil, notBefore: now - 400 * day, days: 3650,
             isCA: true, selfIssued: true, eku: nil, key: key ?? "key-\(cn)")
    }

    /// The built-in CA, installed on the device as a trusted root.
    static let builtInCA = root("swift-tls-fixtures CA")
    static let builtInIssuer = builtInCA.subject

    static let modernSuites: AcceptedSuites = [
        .tls1_2: ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
        .tls1_3: ["TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"],
    ]

    /// A compliant leaf for a host: RSA-2048, SHA-256, from the built-in CA, SANs `localhost`, the host, `127.0.0.1`
    /// and `::1`, EKU serverAuth, 397 days from one day ago. The product's leaves name DNS names only (the ip-san
    /// scenario names the addresses); these facts keep the addresses so the reference cases for IP-literal URLs have a
    /// certificate that matches them, and ATS's verdicts on qualified names do not depend on them.
    static func leaf(_ host: String, issuer: String = builtInIssuer, key: String? = nil) -> CertificateFacts {
        cert(host, issuer: issuer, dns: ["localhost", host], ips: ["127.0.0.1", "::1"], key: key)
    }

    static func facts(leaf: CertificateFacts, accepted: AcceptedSuites = modernSuites,
                      chainError: VerifyError? = nil, anchor: TrustAnchorKind = .userInstalled,
                      presented: [CertificateFacts]? = nil, verified: [CertificateFacts]? = nil) -> ServerFacts {
        let presentedChain = presented ?? [leaf]
        return ServerFacts(scheme: "https", accepted: accepted, presentedChain: presentedChain,
                           trust: TrustFacts(chainError: chainError, verifiedChain: verified ?? [leaf, builtInCA],
                                             anchor: anchor))
    }

    /// Baseline facts for a host (a compliant server).
    static func compliant(_ host: String, anchor: TrustAnchorKind = .userInstalled) -> ServerFacts {
        facts(leaf: leaf(host), anchor: anchor)
    }

    /// A compliant certificate on a server that speaks only `version` with `suites`.
    static func speaking(_ host: String, _ accepted: AcceptedSuites) -> ServerFacts {
        facts(leaf: leaf(host), accepted: accepted)
    }

    static let tls10Only: AcceptedSuites = [.tls1_0: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"]]
    static let tls11Only: AcceptedSuites = [.tls1_1: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"]]
    static let tls12Only: AcceptedSuites = [.tls1_2: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]]
    static let staticRSA: AcceptedSuites = [.tls1_2: [
        "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_RSA_WITH_AES_256_CBC_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA",
    ]]
    static let dheOnly: AcceptedSuites = [.tls1_2: [
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
    ]]

    static func verifyError(_ code: Int32, _ text: String, depth: Int = 0) -> VerifyError {
        VerifyError(code: code, text: text, depth: depth)
    }

    static func url(_ text: String) -> URL { URL(string: text)! }
}

/// The scenario catalog (scenarios.md) as test data: the facts a client would observe at `NAME.fixtures.test`. The
/// verdict and the smallest fix each row must get are not here: they come from the scenario's file (`expect.ats`,
/// `expect.atsFix`), so they are written once.
struct ATSCatalogRow {
    var name: String
    var facts: ServerFacts
    /// For a scenario no ATS key admits: a word the finder's reason must name (the suite or protocol at fault).
    var impossibleMention: String? = nil

    var host: String { "\(name).fixtures.test" }
    var url: URL { URL(string: "\(facts.scheme)://\(host):8443/")! }
}

enum ATSCatalog {
    static func rows() -> [ATSCatalogRow] {
        typealias F = ATSFactsKit
        func baseline(_ name: String) -> ServerFacts { F.compliant("\(name).fixtures.test") }
        func withLeaf(_ name: String, _ edit: (inout CertificateFacts) -> Void,
                      accepted: AcceptedSuites = F.modernSuites, chainError: VerifyError? = nil) -> ServerFacts {
            var leaf = F.leaf("\(name).fixtures.test")
            edit(&leaf)
            return F.facts(leaf: leaf, accepted: accepted, chainError: chainError)
        }
        func h(_ name: String) -> String { "\(name).fixtures.test" }

        var rows: [ATSCatalogRow] = []
        // control
        rows.append(ATSCatalogRow(name: "ats-compliant", facts: baseline("ats-compliant")))
        for (name, bits, curve) in [("ecc256", 256, "prime256v1"), ("ecc384", 384, "secp384r1")] {
            let ecdsa: AcceptedSuites = [
                .tls1_2: ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
                .tls1_3: ["TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256"],
            ]
            rows.append(ATSCatalogRow(name: name, facts: withLeaf(name, { $0.keyType = .ec; $0.keyBits = bits; $0.curve = curve },
                                                              accepted: ecdsa)))
        }
        for (name, bits) in [("rsa4096", 4096), ("rsa8192", 8192)] {
            rows.append(ATSCatalogRow(name: name, facts: withLeaf(name, { $0.keyBits = bits })))
        }
        for (name, digest) in [("sha384", "sha384"), ("sha512", "sha512")] {
            rows.append(ATSCatalogRow(name: name, facts: withLeaf(name, {
                $0.signatureDigest = digest; $0.signatureAlgorithm = "\(digest)WithRSAEncryption"
            })))
        }
        rows.append(ATSCatalogRow(name: "tls-v1-2", facts: F.speaking(h("tls-v1-2"), [.tls1_2: F.modernSuites[.tls1_2]!])))
        rows.append(ATSCatalogRow(name: "tls-v1-3", facts: F.speaking(h("tls-v1-3"), [.tls1_3: F.modernSuites[.tls1_3]!])))
        // protocol
        rows.append(ATSCatalogRow(name: "tls-v1-0", facts: F.speaking(h("tls-v1-0"), F.tls10Only)))
        rows.append(ATSCatalogRow(name: "tls-v1-1", facts: F.speaking(h("tls-v1-1"), F.tls11Only)))
        // ssl-v3 as if the linked OpenSSL could serve it; the unsupported form is tested separately.
        rows.append(ATSCatalogRow(name: "ssl-v3", facts: F.speaking(h("ssl-v3"), [.ssl3: ["TLS_RSA_WITH_AES_128_CBC_SHA"]]), impossibleMention: "SSLv3"))
        // cipher
        rows.append(ATSCatalogRow(name: "static-rsa", facts: F.speaking(h("static-rsa"), F.staticRSA)))
        for name in ["dhe-only", "dh1024", "dh512"] {
            // The DH group size is not in ServerFacts; the catalog says arbitrary loads admits all three.
            rows.append(ATSCatalogRow(name: name, facts: F.speaking(h(name), F.dheOnly)))
        }
        rows.append(ATSCatalogRow(name: "cbc", facts: F.speaking(h("cbc"), [.tls1_2: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"]])))
        for (name, suite) in [("rc4", "TLS_RSA_WITH_RC4_128_SHA"), ("3des", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
                              ("null", "TLS_RSA_WITH_NULL_SHA256")] {
            rows.append(ATSCatalogRow(name: name, facts: F.speaking(h(name), [.tls1_2: [suite]]), impossibleMention: suite))
        }
        // certificate
        rows.append(ATSCatalogRow(name: "sha1-leaf", facts: withLeaf("sha1-leaf", {
            $0.signatureDigest = "sha1"; $0.signatureAlgorithm = "sha1WithRSAEncryption"
        })))
        do {
            let intermediate = F.cert("Intermediate", issuer: F.builtInIssuer, notBefore: F.now - 100 * F.day, days: 1000, isCA: true, eku: nil)
            let leaf = F.leaf(h("intermediate"), issuer: intermediate.subject)
            rows.append(ATSCatalogRow(name: "intermediate",
                                   facts: F.facts(leaf: leaf, presented: [leaf, intermediate], verified: [leaf, intermediate, F.builtInCA])))
        }
        do {
            let intermediate = F.cert("SHA-1 Intermediate", issuer: F.builtInIssuer, digest: "sha1", notBefore: F.now - 100 * F.day,
                                      days: 1000, isCA: true, eku: nil)
            let leaf = F.leaf(h("sha1-intermediate"), issuer: intermediate.subject)
            rows.append(ATSCatalogRow(name: "sha1-intermediate",
                                   facts: F.facts(leaf: leaf, presented: [leaf, intermediate],
                                                  verified: [leaf, intermediate, F.builtInCA])))
        }
        rows.append(ATSCatalogRow(name: "md5-leaf", facts: withLeaf("md5-leaf", {
            $0.signatureDigest = "md5"; $0.signatureAlgorithm = "md5WithRSAEncryption"
        })))
        for (name, bits) in [("rsa1024", 1024), ("rsa512", 512)] {
            rows.append(ATSCatalogRow(name: name, facts: withLeaf(name, { $0.keyBits = bits })))
        }
        do {
            var leaf = F.leaf(h("self-signed"), issuer: "CN=self-signed.fixtures.test,O=swift-tls-fixtures")
            leaf.isSelfIssued = true
            rows.append(ATSCatalogRow(name: "self-signed",
                                   facts: F.facts(leaf: leaf, chainError: F.verifyError(18, "self-signed certificate"),
                                                  verified: [leaf])))
        }
        do {
            let otherRoot = F.root("Untrusted Root")
            let leaf = F.leaf(h("untrusted-root"), issuer: otherRoot.subject)
            rows.append(ATSCatalogRow(name: "untrusted-root",
                                   facts: F.facts(leaf: leaf, chainError: F.verifyError(19, "self-signed certificate in certificate chain", depth: 1),
                                                  presented: [leaf, otherRoot], verified: [leaf, otherRoot])))
        }
        rows.append(ATSCatalogRow(name: "wrong-host", facts: withLeaf("wrong-host", { $0.dnsNames = ["wrong.host.invalid"]; $0.ipAddresses = [] })))
        rows.append(ATSCatalogRow(name: "no-san", facts: withLeaf("no-san", {
            $0.commonName = "localhost"; $0.subject = "CN=localhost,O=swift-tls-fixtures"; $0.dnsNames = nil; $0.ipAddresses = []
        })))
        rows.append(ATSCatalogRow(name: "no-common-name", facts: withLeaf("no-common-name", {
            $0.commonName = ""; $0.subject = "O=swift-tls-fixtures"
        })))
        rows.append(ATSCatalogRow(name: "expired", facts: withLeaf("expired", {
            $0.notBefore = F.now - 398 * F.day; $0.notAfter = F.now - F.day
        }, chainError: F.verifyError(10, "certificate has expired"))))
        rows.append(ATSCatalogRow(name: "not-yet-valid", facts: withLeaf("not-yet-valid", {
            $0.notBefore = F.now + F.day; $0.notAfter = F.now + 398 * F.day
        }, chainError: F.verifyError(9, "certificate is not yet valid"))))
        rows.append(ATSCatalogRow(name: "validity-826-days", facts: withLeaf("validity-826-days", {
            $0.notAfter = $0.notBefore + 826 * F.day
        })))  // user root: allow; app anchor: block (tested separately)
        rows.append(ATSCatalogRow(name: "no-server-auth-eku", facts: withLeaf("no-server-auth-eku", { $0.extendedKeyUsage = ["clientAuth"] })))
        do {
            let intermediate = F.cert("Fixtures Intermediate", issuer: F.builtInIssuer, notBefore: F.now - 100 * F.day,
                                      days: 1000, isCA: true, eku: nil)
            let leaf = F.leaf(h("incomplete-chain"), issuer: intermediate.subject)
            rows.append(ATSCatalogRow(name: "incomplete-chain",
                                   facts: F.facts(leaf: leaf, chainError: F.verifyError(20, "unable to get local issuer certificate"),
                                                  presented: [leaf], verified: [leaf])))
        }
        do {
            let constrained = F.cert("Constrained CA", issuer: F.builtInIssuer, notBefore: F.now - 100 * F.day,
                                     days: 1000, isCA: true, eku: nil)
            let leaf = F.leaf(h("name-constraint-violation"), issuer: constrained.subject)
            rows.append(ATSCatalogRow(name: "name-constraint-violation",
                                   facts: F.facts(leaf: leaf, chainError: F.verifyError(47, "permitted subtree violation"),
                                                  presented: [leaf, constrained], verified: [leaf, constrained, F.builtInCA])))
        }
        rows.append(ATSCatalogRow(name: "ip-san", facts: withLeaf("ip-san", { $0.ipAddresses = ["127.0.0.1", "::1"] })))
        rows.append(ATSCatalogRow(name: "1000-sans", facts: withLeaf("1000-sans", {
            $0.dnsNames = (1...999).map { "san\($0).fixtures.test" } + ["1000-sans.fixtures.test"]
        })))
        // pinning (no NSPinnedDomains in the default policy: trust decides)
        for name in ["pinned", "pin-reissued", "pin-rotated-key", "pin-mitm"] {
            rows.append(ATSCatalogRow(name: name, facts: ATSPinFixtures.facts(name)))
        }
        // cleartext
        rows.append(ATSCatalogRow(name: "http", facts: ServerFacts(scheme: "http", accepted: [:], presentedChain: [], trust: nil)))
        // combination
        do {
            // TLS 1.0 only, static RSA, SHA-1, RSA-1024, self-signed, wrong host.
            let leaf = F.cert("legacy-everything.fixtures.test", issuer: "CN=legacy-everything.fixtures.test,O=swift-tls-fixtures",
                              dns: ["wrong.host.invalid"], bits: 1024, digest: "sha1", selfIssued: true)
            rows.append(ATSCatalogRow(name: "legacy-everything",
                                   facts: F.facts(leaf: leaf, accepted: [.tls1_0: ["TLS_RSA_WITH_AES_128_CBC_SHA"]],
                                                  chainError: F.verifyError(18, "self-signed certificate"), verified: [leaf])))
        }
        // revocation (second round): every leaf from the built-in intermediate, which is sent. ATS checks no revocation and
        // default trust fetches nothing; only a stapled "revoked" signed by the issuer fails (Apple's trustd honours staples).
        do {
            let intermediate = F.cert("Fixtures Intermediate", issuer: F.builtInIssuer, notBefore: F.now - 100 * F.day,
                                      days: 1000, isCA: true, eku: nil)
            func revocationRow(_ name: String, ocsp: Bool = true, crl: Bool = true, mustStaple: Bool = false,
                               stapled: String? = nil) -> ATSCatalogRow {
                var leaf = F.leaf(h(name), issuer: intermediate.subject)
                leaf.ocspURLs = ocsp ? ["http://localhost:9899/ocsp"] : []
                leaf.crlURLs = crl ? ["http://localhost:9899/crl/intermediate.crl"] : []
                leaf.mustStaple = mustStaple
                var facts = F.facts(leaf: leaf, presented: [leaf, intermediate], verified: [leaf, intermediate, F.builtInCA])
                facts.stapledOCSP = stapled.map {
                    OCSPResponseFacts(responseStatus: "successful", certificateStatus: $0, revocationReason: $0 == "revoked" ? "keyCompromise" : nil,
                                      revokedAt: $0 == "revoked" ? F.now - F.day : nil, thisUpdate: F.now, nextUpdate: F.now + F.day,
                                      signedByIssuer: true)
                }
                return ATSCatalogRow(name: name, facts: facts)
            }
            rows.append(revocationRow("revoked"))
            rows.append(revocationRow("revoked-stapled", stapled: "revoked"))
            rows.append(revocationRow("ocsp-good-stapled", stapled: "good"))
            rows.append(revocationRow("must-staple-missing", mustStaple: true))
            var unreachable = revocationRow("ocsp-unreachable")
            unreachable.facts.presentedChain[0].ocspURLs = ["http://localhost:9898/ocsp"]
            rows.append(unreachable)
            rows.append(revocationRow("crl-revoked", ocsp: false))

            // certificate shapes (second round)
            let reversedLeaf = F.leaf(h("reversed-chain"), issuer: intermediate.subject)
            rows.append(ATSCatalogRow(name: "reversed-chain",
                                      facts: F.facts(leaf: reversedLeaf, presented: [reversedLeaf, F.builtInCA, intermediate],
                                                     verified: [reversedLeaf, intermediate, F.builtInCA])))
        }
        rows.append(ATSCatalogRow(name: "no-subject", facts: withLeaf("no-subject", { $0.subject = ""; $0.commonName = nil })))
        rows.append(ATSCatalogRow(name: "10000-sans", facts: withLeaf("10000-sans", {
            $0.dnsNames = ["localhost", "10000-sans.fixtures.test"] + (1...9998).map { "n\($0).10000-sans.fixtures.test" }
        })))
        rows.append(ATSCatalogRow(name: "dh2048", facts: F.speaking(h("dh2048"), F.dheOnly)))
        // Mozilla's configurations (guidelines 6.0's modern and intermediate, 5.8's old): each speaks TLS 1.3 with
        // forward-secret suites, so ATS allows all three. None has a DHE suite any more.
        do {
            let tls13: [String] = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
            // Every built-in intermediate is RSA; modern's ECDSA signature comes straight from the (EC) root.
            let intermediate = F.cert("Fixtures Intermediate", issuer: F.builtInIssuer, notBefore: F.now - 100 * F.day, days: 1000,
                                      isCA: true, eku: nil)
            var modernLeaf = F.leaf(h("mozilla-modern"), issuer: F.builtInIssuer)
            modernLeaf.keyType = .ec; modernLeaf.keyBits = 256; modernLeaf.curve = "prime256v1"
            modernLeaf.notAfter = modernLeaf.notBefore + 90 * F.day
            rows.append(ATSCatalogRow(name: "mozilla-modern", facts: F.facts(leaf: modernLeaf, accepted: [.tls1_3: tls13],
                                                                            presented: [modernLeaf],
                                                                            verified: [modernLeaf, F.builtInCA])))
            var intermediateLeaf = F.leaf(h("mozilla-intermediate"), issuer: intermediate.subject)
            intermediateLeaf.notAfter = intermediateLeaf.notBefore + 90 * F.day
            rows.append(ATSCatalogRow(name: "mozilla-intermediate", facts: F.facts(
                leaf: intermediateLeaf,
                accepted: [.tls1_2: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                                     "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"],
                           .tls1_3: tls13],
                presented: [intermediateLeaf, intermediate], verified: [intermediateLeaf, intermediate, F.builtInCA])))
            let rsaIntermediate = F.cert("RSA Intermediate", issuer: F.builtInIssuer, notBefore: F.now - 100 * F.day,
                                         days: 1000, isCA: true, eku: nil)
            var oldLeaf = F.leaf(h("mozilla-old"), issuer: rsaIntermediate.subject)
            oldLeaf.notAfter = oldLeaf.notBefore + 90 * F.day
            let cbc = ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
                       "TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"]
            rows.append(ATSCatalogRow(name: "mozilla-old", facts: F.facts(
                leaf: oldLeaf,
                accepted: [.tls1_0: cbc, .tls1_1: cbc,
                           .tls1_2: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
                                     "TLS_RSA_WITH_AES_128_GCM_SHA256"] + cbc,
                           .tls1_3: tls13],
                presented: [oldLeaf, rsaIntermediate], verified: [oldLeaf, rsaIntermediate, F.builtInCA])))
        }
        rows.append(ATSCatalogRow(name: "long-subdomain", facts: withLeaf("long-subdomain", {
            $0.dnsNames = ["localhost", "long-subdomain.fixtures.test",
                           "long-extended-subdomain-name-containing-many-letters-and-dashes.fixtures.test"]
        })))
        return rows
    }
}

/// The pinning rows' certificates, from scenarios.md: the published pinned leaf key, the built-in CA,
/// a backup key no server uses, and a trusted "interception" CA.
enum ATSPinFixtures {
    typealias F = ATSFactsKit
    static let pinnedKey = "pinned-leaf-key"
    static let rotatedKey = "rotated-leaf-key"
    static let interceptionCA = F.root("Interception CA")
    static let backupPin = F.pin("backup-key")

    /// The published `pinned.cer`: the leaf a pinning app bundles.
    static let publishedLeaf = leaf("pinned", key: pinnedKey, serial: "100")

    static func leaf(_ name: String, key: String, issuer: CertificateFacts = F.builtInCA, serial: String) -> CertificateFacts {
        F.cert("\(name).fixtures.test", issuer: issuer.subject, dns: ["localhost", "\(name).fixtures.test"],
               ips: ["127.0.0.1", "::1"], key: key, serial: serial)
    }

    static func facts(_ name: String) -> ServerFacts {
        let leaf: CertificateFacts
        var root = F.builtInCA
        switch name {
        case "pinned": leaf = publishedLeaf
        // New certificate, same key: a different DER and fingerprint, the same SPKI.
        case "pin-reissued": leaf = Self.leaf(name, key: pinnedKey, serial: "101")
        case "pin-rotated-key": leaf = Self.leaf(name, key: rotatedKey, serial: "102")
        case "pin-mitm":
            root = interceptionCA
            leaf = Self.leaf(name, key: "proxy-key", issuer: interceptionCA, serial: "103")
        default: fatalError("not a pinning row: \(name)")
        }
        return F.facts(leaf: leaf, presented: [leaf], verified: [leaf, root])
    }
}

extension XCTestCase {
    /// Renders a finding's XML, parses it back as an Info.plist and evaluates with the finding's trust
    /// override: the whole output has to work when pasted.
    func assertRoundTripAllows(_ finding: ATSExceptionFinding, url: URL, facts: ServerFacts,
                               options: ATSEvaluationOptions = .init(), _ label: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        guard let xml = finding.plistXML else { return XCTFail("\(label): no plist output", file: file, line: line) }
        do {
            let policy = try ATSPolicy(infoPlist: Data(xml.utf8))
            XCTAssertEqual(policy.warnings, [], "\(label)", file: file, line: line)
            var options = options
            options.trustOverride = finding.requiresTrustOverride
            let verdict = ATSEvaluator(policy: policy, options: options).evaluate(url: url, facts: facts)
            XCTAssertTrue(verdict.allowed, "\(label): round-tripped policy does not allow:\n\(verdict)", file: file, line: line)
        } catch {
            XCTFail("\(label): plist output does not parse: \(error)", file: file, line: line)
        }
    }
}
