import Foundation
import TLSFixturesWire

/// The chain the checks look at, and how to name its members in messages.
struct ATSChainView {
    /// The verified chain when one was built (it may add the root the server did not send), else the
    /// chain as presented.
    let certificates: [CertificateFacts]

    init(presented: [CertificateFacts], trust: TrustFacts?) {
        if let verified = trust?.verifiedChain, !verified.isEmpty {
            certificates = verified
        } else {
            certificates = presented
        }
    }

    var leaf: CertificateFacts? { certificates.first }

    /// Certificates whose own signature counts: all but a self-issued CA at the top (the anchor's
    /// self-signature is not checked by anyone — trust in a root comes from the store, not its signature).
    var signedCertificates: [(depth: Int, certificate: CertificateFacts)] {
        certificates.enumerated().compactMap { depth, certificate in
            let isAnchorSelfSignature = depth > 0 && depth == certificates.count - 1
                && certificate.isSelfIssued && certificate.isCA
            return isAnchorSelfSignature ? nil : (depth, certificate)
        }
    }

    static func label(_ certificate: CertificateFacts, depth: Int) -> String {
        if depth == 0 { return "the leaf" }
        let role = certificate.isSelfIssued ? "root" : "intermediate"
        return "the \(role) \(certificate.subject.isEmpty ? "at depth \(depth)" : certificate.subject)"
    }
}

/// Digest strength, for "SHA-256 or better" and "no SHA-1 / MD5".
enum ATSDigest {
    static func rank(_ digest: String) -> Int {
        switch digest.lowercased() {
        case "md2", "md4": return 0
        case "md5": return 1
        case "sha1": return 2
        case "sha224": return 3
        // sha256 and up; `none` is Ed25519, which hashes internally with SHA-512.
        default: return 4
        }
    }
    static let sha256Rank = 4
}

/// Default trust: what Apple's SSL server policy checks on every HTTPS load, whether ATS applies or not
/// (the reference: "when ATS does not apply, default trust … still applies unless the app overrides it").
public struct ATSDefaultTrust: Sendable {
    /// Which OS's trust rules apply (the SHA-1 and key-size limits changed between releases).
    public var profile: ATSOSProfile

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(profile: ATSOSProfile = .default) {
        self.profile = profile
    }

    /// 2019-07-01T00:00:00Z: iOS 13's EKU and 825-day rules cover certificates issued from then on.
    public static let ios13RulesCutoff = Date(timeIntervalSince1970: 1_561_939_200)
    /// 2020-09-01T00:00:00Z: the 398-day rule (support note 102028) covers certificates issued from then on.
    public static let publicValidityCutoff = Date(timeIntervalSince1970: 1_598_918_400)

    /// Every default-trust failure of the chain for `host` (name match, dates, EKU, weak signatures, keys), in chain order; empty when trust holds.
    public func violations(host: ATSHost, presentedChain: [CertificateFacts], trust: TrustFacts?) -> [ATSViolation] {
        guard let trust else {
            return [ATSViolation(rule: .trustChain, message: "trust: no trust evaluation was recorded for this server",
                                 likelyError: .untrusted())]
        }
        let chain = ATSChainView(presented: presentedChain, trust: trust)
        guard let leaf = presentedChain.first ?? chain.leaf else {
            return [ATSViolation(rule: .trustChain, message: "trust: the server presented no certificate",
                                 likelyError: .untrusted(-9807, "errSSLXCertChainInvalid"))]
        }
        var found: [ATSViolation] = []
        if let error = trust.chainError { found.append(Self.chainViolation(error)) }
        found += hostname(host, leaf: leaf)
        found += signatures(chain)
        if profile.hasIOS13CertificateRules { found += rsaKeySizes(chain) }
        found += extendedKeyUsage(leaf, anchor: trust.anchor)
        if profile.hasIOS13CertificateRules { found += validity(leaf, anchor: trust.anchor) }
        return found
    }

    /// OpenSSL's verify result in Apple's terms. Codes are OpenSSL's `X509_V_ERR_*` numbers.
    static func chainViolation(_ error: VerifyError) -> ATSViolation {
        let likely: ATSLikelyError
        switch error.code {
        case 9: likely = .notYetValid                                            // CERT_NOT_YET_VALID
        case 10: likely = .expired                                               // CERT_HAS_EXPIRED
        case 13, 14: likely = .expired                                           // bad notBefore/notAfter field
        case 18: likely = .untrusted(-9813, "errSSLNoRootCert")                  // DEPTH_ZERO_SELF_SIGNED_CERT
        case 19: likely = .unknownRoot                                           // SELF_SIGNED_CERT_IN_CHAIN
        case 2, 20, 21: likely = .untrusted(-9813, "errSSLNoRootCert")           // issuer not found: incomplete chain
        default: likely = .untrusted(-9807, "errSSLXCertChainInvalid")           // name constraints, signatures, …
        }
        return ATSViolation(rule: .trustChain, message: "trust: \(error)", likelyError: likely)
    }

    private func hostname(_ host: ATSHost, leaf: CertificateFacts) -> [ATSViolation] {
        let cnFallback = !profile.hasIOS13CertificateRules
        if ATSHostnameMatcher.matches(host: host, certificate: leaf, commonNameFallback: cnFallback) { return [] }
        let mismatch = ATSLikelyError.untrusted(-9843, "errSSLHostNameMismatch")
        if host.ip == nil, leaf.dnsNames == nil, profile.hasIOS13CertificateRules {
            let cn = leaf.commonName.map { " (CN=\($0) is ignored)" } ?? ""
            return [ATSViolation(rule: .sanRequired,
                                 message: "SAN required (iOS 13+): the leaf has no subjectAltName extension\(cn), "
                                    + "so it matches no host name", likelyError: mismatch)]
        }
        let names = (host.ip == nil ? leaf.dnsNames ?? [] : leaf.ipAddresses)
        let shown = names.prefix(4).joined(separator: ", ") + (names.count > 4 ? ", … (\(names.count) in all)" : "")
        let kind = host.ip == nil ? "SAN DNS names" : "SAN IP addresses"
        return [ATSViolation(rule: .hostname,
                             message: "hostname: \(host) is not among the leaf's \(kind) (\(shown.isEmpty ? "none" : shown))",
                             likelyError: mismatch)]
    }

    /// MD5 (and older) is never trusted; SHA-1 not from iOS 13.
    private func signatures(_ chain: ATSChainView) -> [ATSViolation] {
        chain.signedCertificates.compactMap { depth, certificate in
            let rank = ATSDigest.rank(certificate.signatureDigest)
            let who = ATSChainView.label(certificate, depth: depth)
            if rank <= 1 {
                return ATSViolation(rule: .weakSignature,
                                    message: "weak signature: \(who) is signed with \(certificate.signatureDigest) "
                                        + "(\(certificate.signatureAlgorithm)), which Apple never trusts",
                                    likelyError: .untrusted())
            }
            if rank == 2, profile.hasIOS13CertificateRules {
                return ATSViolation(rule: .ios13SHA1,
                                    message: "SHA-1 (iOS 13+): \(who) is signed with SHA-1 "
                                        + "(\(certificate.signatureAlgorithm)), no longer trusted for TLS",
                                    likelyError: .untrusted())
            }
            return nil
        }
    }

    private func rsaKeySizes(_ chain: ATSChainView) -> [ATSViolation] {
        chain.certificates.enumerated().compactMap { depth, certificate in
            guard certificate.keyType == .rsa, certificate.keyBits < 2048 else { return nil }
            return ATSViolation(rule: .ios13KeySize,
                                message: "RSA key size (iOS 13+): \(ATSChainView.label(certificate, depth: depth)) has a "
                                    + "\(certificate.keyBits)-bit RSA key; leaf and CAs need at least 2048 bits",
                                likelyError: .untrusted())
        }
    }

    /// An EKU that is present must allow server auth on every OS (Apple's SSL policy has always checked
    /// it). iOS 13 adds the strict rule — the extension must be present — for certificates issued from
    /// 2019-07-01 whose chain does not end in a user-installed root.
    private func extendedKeyUsage(_ leaf: CertificateFacts, anchor: TrustAnchorKind) -> [ATSViolation] {
        if let usages = leaf.extendedKeyUsage {
            guard !usages.contains("serverAuth"), !usages.contains("anyExtendedKeyUsage") else { return [] }
            return [ATSViolation(rule: .extendedKeyUsage,
                                 message: "extended key usage: the leaf allows only \(usages.joined(separator: ", ")), "
                                    + "not serverAuth", likelyError: .untrusted())]
        }
        guard profile.hasIOS13CertificateRules, anchor != .userInstalled,
              leaf.notBefore >= Self.ios13RulesCutoff else { return [] }
        return [ATSViolation(rule: .extendedKeyUsage,
                             message: "extended key usage (iOS 13+): the leaf has no EKU extension; certificates issued "
                                + "after 2019-07-01 need serverAuth unless the root is user-installed",
                             likelyError: .untrusted())]
    }

    private func validity(_ leaf: CertificateFacts, anchor: TrustAnchorKind) -> [ATSViolation] {
        guard anchor != .userInstalled else { return [] }
        let days = leaf.notAfter.timeIntervalSince(leaf.notBefore) / 86_400
        let shown = String(format: "%.0f", days.rounded(.up))
        if profile.hasPublicValidityRule, anchor == .system, leaf.notBefore >= Self.publicValidityCutoff, days > 398 {
            return [ATSViolation(rule: .validityPeriod,
                                 message: "validity period (iOS 14+): the leaf is valid for \(shown) days; publicly "
                                    + "trusted certificates issued after 2020-09-01 may be valid for at most 398",
                                 likelyError: .untrusted())]
        }
        if leaf.notBefore >= Self.ios13RulesCutoff, days > 825 {
            return [ATSViolation(rule: .validityPeriod,
                                 message: "validity period (iOS 13+): the leaf is valid for \(shown) days; at most 825 "
                                    + "unless the root is user-installed", likelyError: .untrusted())]
        }
        return []
    }
}

/// ATS's own certificate rules, on top of default trust, only where ATS applies.
public struct ATSCertificateRules: Sendable {
    /// The rules have no options: they are ATS's, the same on every OS the model knows.
    public init() {}

    /// ATS's extra certificate failures (weak signatures, small keys, …) on top of default trust; empty when none.
    public func violations(presentedChain: [CertificateFacts], trust: TrustFacts?,
                           requiresForwardSecrecy: Bool) -> [ATSViolation] {
        let chain = ATSChainView(presented: presentedChain, trust: trust)
        guard let leaf = presentedChain.first ?? chain.leaf else { return [] }
        var found: [ATSViolation] = []
        // The key-size rule goes with forward secrecy: NSExceptionRequiresForwardSecrecy = NO drops it.
        if requiresForwardSecrecy, let problem = keySizeProblem(leaf) {
            found.append(ATSViolation(rule: .leafKeySize, message: "leaf key size: \(problem)",
                                      likelyError: .secure(-9883, "errSSLATSMinimumKeySizeViolation")))
        }
        for (depth, certificate) in chain.signedCertificates where ATSDigest.rank(certificate.signatureDigest) < ATSDigest.sha256Rank {
            let code = depth == 0
                ? ATSLikelyError.secure(-9884, "errSSLATSLeafCertificateHashAlgorithmViolation")
                : ATSLikelyError.secure(-9885, "errSSLATSCertificateHashAlgorithmViolation")
            found.append(ATSViolation(rule: .signatureHash,
                                      message: "signature hash: \(ATSChainView.label(certificate, depth: depth)) is signed with "
                                        + "\(certificate.signatureDigest) (\(certificate.signatureAlgorithm)); ATS requires "
                                        + "SHA-256 or better", likelyError: code))
        }
        return found
    }

    private func keySizeProblem(_ leaf: CertificateFacts) -> String? {
        switch leaf.keyType {
        case .rsa where leaf.keyBits < 2048:
            return "the leaf has a \(leaf.keyBits)-bit RSA key; ATS requires RSA ≥ 2048 or EC ≥ 256"
        case .ec where leaf.keyBits < 256:
            return "the leaf has a \(leaf.keyBits)-bit EC key; ATS requires EC ≥ 256 or RSA ≥ 2048"
        case .rsa, .ec:
            return nil
        default:
            return "the leaf has a \(leaf.keyType) key; ATS accepts RSA ≥ 2048 or EC ≥ 256 only"
        }
    }
}
