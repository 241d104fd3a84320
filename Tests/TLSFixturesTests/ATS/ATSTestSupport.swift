import COpenSSL
import Foundation
import XCTest
@testable import TLSFixtures

/// Server facts for the ATS model's tests, made without a server: what a client would observe about a fixture. The
/// catalog's rows are derived from each scenario's file (`ATSCatalog`); the helpers here build them, and the facts of
/// the reference cases that are no scenario.
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

/// The scenario catalog as test data for the ATS model: the facts a client would observe at `NAME.fixtures.test`. The
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

/// Every row is derived from its scenario file, as a client would see the server it describes (issue 37): the file's
/// `expect.handshake` (protocol, suites, key, signature, certificates sent), its certificate plan as the library reads
/// it (`CertificatePlan.profile`: names, subject, validity, key usage), the chain its `tls.sendChain` sends, and its
/// `expect.verify`. A new scenario needs no row here. Rows written by hand remain only where that cannot work, each
/// saying why (`handRows`).
enum ATSCatalog {
    static func rows() -> [ATSCatalogRow] {
        ScenarioCatalog.builtIn.scenarios.filter { $0.expect.ats != .notApplicable }.map { scenario in
            handRows[scenario.name] ?? derived(scenario)
        }
    }

    /// The rows derivation cannot make, by scenario, each with its reason.
    static let handRows: [String: ATSCatalogRow] = {
        typealias F = ATSFactsKit
        func h(_ name: String) -> String { "\(name).fixtures.test" }
        var rows: [String: ATSCatalogRow] = [:]
        // rc4 and 3des: the linked OpenSSL has neither suite, so it cannot name them in IANA's terms (CipherNames); the
        // suites are written here, as the file's expect.handshake names them in OpenSSL's.
        for (name, suite) in [("rc4", "TLS_ECDHE_RSA_WITH_RC4_128_SHA"), ("3des", "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA")] {
            rows[name] = ATSCatalogRow(
                name: name, facts: F.facts(leaf: F.leaf(h(name)), accepted: [.tls1_2: [suite]]), impossibleMention: suite)
        }
        return rows
    }()

    /// The facts a client would observe for `scenario`, made from its file.
    static func derived(_ scenario: Scenario) -> ATSCatalogRow {
        typealias F = ATSFactsKit
        guard let tls = scenario.tls, let plan = scenario.certificate else {
            return ATSCatalogRow(
                name: scenario.name, facts: ServerFacts(scheme: "http", accepted: [:], presentedChain: [], trust: nil))
        }
        let declared = scenario.expect.handshake ?? Expectations.Handshake()
        let version = Self.version(declared.protocol)
        let suites = declared.ciphers.map { CipherNames.isTLS13(iana: $0) ? $0 : Self.iana($0) }

        // The leaf, as the library makes it from the plan.
        let profile = try! plan.profile(scenarioName: scenario.name)
        let (notBefore, notAfter) = profile.validity.resolve(now: F.now)
        let names = profile.subjectAltNames
        let dns: [String]? = names.map { $0.compactMap { name -> String? in
            if case .dns(let text) = name { return text } else { return nil }
        } }
        let ips: [String] = names?.compactMap { name -> String? in
            if case .ip(let address) = name { return address } else { return nil }
        } ?? []
        var keyBits = declared.keyBits
        var curve: String? = nil
        if case .ec(let named) = plan.key {
            keyBits = Int(named.rawValue.dropFirst()) ?? keyBits
            curve = ["p224": "secp224r1", "p256": "prime256v1", "p384": "secp384r1", "p521": "secp521r1"][named.rawValue]
        }
        let selfSigned = plan.leafIssuer == .selfSigned
        let authority: BuiltinAuthority? = if case .authority(let issuer) = plan.leafIssuer { issuer } else { nil }
        let issuers = authority.map(Self.issuerChain) ?? []
        let commonName = profile.subject.commonName
        let subject = commonName.map { "CN=\($0),O=swift-tls-fixtures" } ?? (plan.emptySubject ? "" : "O=swift-tls-fixtures")
        var leaf = F.cert(
            commonName, issuer: selfSigned ? subject : issuers.first!.subject, dns: dns, ips: ips,
            keyType: declared.keyType, bits: keyBits, curve: curve,
            digest: plan.key == .ed25519 ? "none" : plan.digest.rawValue,
            signerKey: selfSigned ? (declared.keyType == .ec ? "EC" : "RSA") : (issuers.first!.keyType == .ec ? "EC" : "RSA"),
            notBefore: notBefore, days: notAfter.timeIntervalSince(notBefore) / F.day, selfIssued: selfSigned,
            eku: profile.extendedKeyUsage?.map(\.rawValue), key: plan.keyName ?? scenario.name)
        leaf.subject = subject
        if let sources = profile.statusSources {
            leaf.ocspURLs = sources.ocspURL.map { [$0] } ?? []
            leaf.crlURLs = sources.crlURL.map { [$0] } ?? []
            leaf.mustStaple = sources.mustStaple
        }

        // The chain the server sends (tls.sendChain), and the one a client builds to the CA it trusts.
        let intermediates = issuers.filter { !$0.isSelfIssued }
        let root = issuers.last { $0.isSelfIssued }
        let presented: [CertificateFacts]
        switch tls.sendChain {
        case .full: presented = [leaf] + intermediates
        case .leafOnly: presented = [leaf]
        case .withRoot: presented = [leaf] + intermediates + (root.map { [$0] } ?? [])
        case .reversed: presented = [leaf] + (root.map { [$0] } ?? []) + intermediates.reversed()
        }
        let reachesIssuer = tls.sendChain != .leafOnly || intermediates.isEmpty
        let verified = selfSigned ? [leaf] : reachesIssuer ? [leaf] + intermediates + (root.map { [$0] } ?? []) : [leaf]
        // Against every root the device trusts (pin-mitm's interception root too), as the file states it.
        let verify = declared.verifyTrustingDeviceRoots ?? scenario.expect.verify ?? "ok"
        let chainError = selfSigned ? Self.verifyError("self-signed certificate") : Self.verifyError(verify)

        var facts = F.facts(
            leaf: leaf, accepted: [version: suites], chainError: chainError, presented: presented, verified: verified)
        if tls.stapleOCSP, let status = plan.revocation?.status {
            let revoked = status == .revoked
            facts.stapledOCSP = OCSPResponseFacts(
                responseStatus: "successful", certificateStatus: status.rawValue,
                revocationReason: revoked ? "keyCompromise" : nil, revokedAt: revoked ? F.now - F.day : nil,
                thisUpdate: F.now, nextUpdate: F.now + F.day, signedByIssuer: true)
        }
        let atFault = version == .ssl3 ? "SSLv3" : suites.first
        return ATSCatalogRow(
            name: scenario.name, facts: facts, impossibleMention: scenario.expect.atsFix?.kind == .impossible ? atFault : nil)
    }

    /// `authority` and the issuers above it, leaf side first.
    static func issuerChain(_ authority: BuiltinAuthority) -> [CertificateFacts] {
        typealias F = ATSFactsKit
        switch authority {
        case .root: return [F.builtInCA]
        case .intermediate, .rsaIntermediate:
            return [F.cert("swift-tls-fixtures intermediate", issuer: F.builtInIssuer, signerKey: "EC",
                           notBefore: F.now - 100 * F.day, days: 1000, isCA: true, eku: nil), F.builtInCA]
        case .sha1Intermediate:
            return [F.cert("swift-tls-fixtures SHA-1 intermediate", issuer: F.builtInIssuer, digest: "sha1", signerKey: "EC",
                           notBefore: F.now - 100 * F.day, days: 1000, isCA: true, eku: nil), F.builtInCA]
        case .untrustedRoot: return [F.root("Untrusted Root")]
        case .interceptionRoot: return [ATSPinFixtures.interceptionCA]
        case .clientCA: return [F.root("swift-tls-fixtures client CA")]
        }
    }

    /// A verify text of the file's as a chain error, nil when the chain holds. OpenSSL's verdicts on what the facts
    /// already say and the ATS model judges itself (the name, the key's size, a digest, the key usage) are not chain
    /// errors: the model must find those from the certificate, not from OpenSSL's words.
    static func verifyError(_ text: String) -> VerifyError? {
        let judgedFromFacts = ["ok", "hostname mismatch", "EE certificate key too weak",
                               "CA signature digest algorithm too weak", "unsuitable certificate purpose"]
        guard !judgedFromFacts.contains(text) else { return nil }
        // OpenSSL's code for its own text (X509_verify_cert_error_string), so no table of codes is written here.
        let code = (0..<100).first { String(cString: X509_verify_cert_error_string($0)) == text }
        return VerifyError(code: Int32(code ?? 1), text: text, depth: 0)
    }

    /// The protocol as the file names it (OpenSSL's names).
    static func version(_ name: String) -> TLSVersion {
        ["SSLv3": .ssl3, "TLSv1": .tls1_0, "TLSv1.1": .tls1_1, "TLSv1.2": .tls1_2, "TLSv1.3": .tls1_3][name] ?? .tls1_3
    }

    /// A suite's IANA name, from its OpenSSL name, as the linked OpenSSL names it.
    static func iana(_ openSSLName: String) -> String { CipherNames.ianaName(openSSL: openSSLName) ?? openSSLName }
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
