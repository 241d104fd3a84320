import Foundation
import TLSFixturesWire

/// The rules the model checks, with stable identifiers for output and tests.
public enum ATSRule: String, Sendable, Codable, CaseIterable {
    /// The URL has no host.
    case invalidURL = "invalid-url"
    /// `http://` to a host where ATS applies and no matching exception allows insecure loads.
    case scheme
    /// No handshake completed at all (nothing to compare with the offer).
    case handshake
    /// No common protocol version (the server's are below the minimum, or above what the client has).
    case tlsVersion = "tls-version"
    /// The server's suites would be admitted with `NSExceptionRequiresForwardSecrecy = NO`.
    case forwardSecrecy = "forward-secrecy"
    /// The server's suites are in no list the client offers.
    case cipherSuite = "cipher-suite"
    /// ATS: leaf RSA ≥ 2048 or EC ≥ 256 (dropped when forward secrecy is not required).
    case leafKeySize = "leaf-key-size"
    /// ATS: certificate signatures SHA-256 or better.
    case signatureHash = "signature-hash"
    /// Default trust: the chain does not build to a trusted anchor, or a date is out of range.
    case trustChain = "trust-chain"
    /// Default trust: the host is not among the certificate's names.
    case hostname
    /// Default trust: MD5 (and older) signatures are never trusted.
    case weakSignature = "weak-signature"
    /// iOS 13+: RSA keys in the chain ≥ 2048 bits.
    case ios13KeySize = "ios13-rsa-key-size"
    /// iOS 13+: SHA-1 signatures are untrusted.
    case ios13SHA1 = "ios13-sha1"
    /// iOS 13+: names come from the SAN only; a certificate without one cannot match.
    case sanRequired = "san-required"
    /// The leaf's extended key usage does not allow TLS server authentication.
    case extendedKeyUsage = "extended-key-usage"
    /// iOS 13+: 825-day maximum (non-user anchors); iOS 14+: 398-day maximum for public certificates.
    case validityPeriod = "validity-period"
    /// `NSPinnedDomains`: no listed identity matches.
    case pinning
    /// The leaf carries no Signed Certificate Timestamps where they are required: its chain ends in a preinstalled root
    /// (iOS 12.1.1+), or the matched entry sets `NSRequiresCertificateTransparency` (iOS 10–12).
    case certificateTransparency = "certificate-transparency"
    /// Default trust: the server stapled an OCSP response, signed by the issuer, that says the leaf is revoked.
    case revocation
}

/// The codes of `ATSLikelyError` (declared with the wire values, so a scenario's refusal expectation and
/// TLSFixturesClient share it): the model's table of which violation yields which error.
extension ATSLikelyError {
    static func secure(_ stream: Int, _ name: String) -> ATSLikelyError {
        ATSLikelyError(urlErrorCode: -1200, urlErrorName: "NSURLErrorSecureConnectionFailed",
                       streamErrorCode: stream, streamErrorName: name)
    }

    static func untrusted(_ stream: Int? = nil, _ name: String? = nil) -> ATSLikelyError {
        ATSLikelyError(urlErrorCode: -1202, urlErrorName: "NSURLErrorServerCertificateUntrusted",
                       streamErrorCode: stream, streamErrorName: name)
    }

    static let appTransportSecurity = ATSLikelyError(
        urlErrorCode: -1022, urlErrorName: "NSURLErrorAppTransportSecurityRequiresSecureConnection")
    // Trust failures: public URLSession logs from iOS 12 to 18 show -1202 with the reason in the stream code for each
    // of these, and none shows -1201, -1203 or -1204 (the scenario files cite them; docs/apple-evidence.md).
    static let expired = untrusted(-9814, "errSSLCertExpired")
    /// No log seen: a guess, as the scenario file says.
    static let notYetValid = untrusted()
    static let unknownRoot = untrusted(-9813, "errSSLNoRootCert")
    static let badURL = ATSLikelyError(urlErrorCode: -1000, urlErrorName: "NSURLErrorBadURL")
    static let clientCertificateRequired = ATSLikelyError(urlErrorCode: -1206,
                                                          urlErrorName: "NSURLErrorClientCertificateRequired")
    static let timedOut = ATSLikelyError(urlErrorCode: -1001, urlErrorName: "NSURLErrorTimedOut")
    static let cannotConnect = ATSLikelyError(urlErrorCode: -1004, urlErrorName: "NSURLErrorCannotConnectToHost")

    /// The `NSLocalizedDescription` Foundation gives this code (English), as nscurl prints it: users search for
    /// these sentences. -1200's wording changed: "A TLS error caused the secure connection to fail." appears in
    /// transcripts from the iOS/macOS 26 era, the older sentence before.
    public func localizedDescription(host: String, profile: ATSOSProfile = .default) -> String {
        let pretending = "You might be connecting to a server that is pretending to be \u{201C}\(host)\u{201D} which could "
            + "put your confidential information at risk."
        switch urlErrorCode {
        case -1200:
            return profile >= .ios26 ? "A TLS error caused the secure connection to fail."
                : "An SSL error has occurred and a secure connection to the server cannot be made."
        case -1201: return "The certificate for this server has expired. \(pretending)"
        case -1202: return "The certificate for this server is invalid. \(pretending)"
        case -1203: return "The certificate for this server was signed by an unknown certifying authority. \(pretending)"
        case -1204: return "The certificate for this server is not yet valid. \(pretending)"
        case -1206: return "The server \u{201C}\(host)\u{201D} requires a client certificate."
        case -1022:
            return "The resource could not be loaded because the App Transport Security policy requires the use of a secure connection."
        case -1001: return "The request timed out."
        case -1004: return "Could not connect to the server."
        case -1000: return "bad URL"
        default: return "The operation couldn\u{2019}t be completed. (NSURLErrorDomain error \(urlErrorCode).)"
        }
    }
}

/// One broken rule, in words a user can act on.
public struct ATSViolation: Sendable, Codable, Equatable, CustomStringConvertible {
    /// Which rule failed.
    public var rule: ATSRule
    /// One line: what is wrong and what ATS requires, e.g.
    /// "minimum TLS version: server speaks at most TLSv1.0, ATS requires TLSv1.2".
    public var message: String
    /// The error a load fails with when this is the first violation.
    public var likelyError: ATSLikelyError

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(rule: ATSRule, message: String, likelyError: ATSLikelyError) {
        self.rule = rule
        self.message = message
        self.likelyError = likelyError
    }

    public var description: String { "[\(rule.rawValue)] \(message)" }
}

/// The model's answer for one URL against one server.
public struct ATSVerdict: Sendable, Codable, Equatable, CustomStringConvertible {
    /// True when the load would complete.
    public var allowed: Bool
    /// Broken rules in the order a connection meets them: transport, then trust and host name, then ATS's other
    /// certificate rules, then pins. The first one decides `likelyError`.
    public var violations: [ATSViolation]
    /// Certificate violations the app's trust override accepted (only where ATS lets it).
    public var waived: [ATSViolation]
    /// False when the host is exempt (unqualified, `.local`, some IP literals) or a top-level key switched ATS off; then ATS's own rules are skipped, while default trust and a matching `NSPinnedDomains` entry still apply.
    public var atsApplies: Bool
    /// Why ATS does not apply, when it does not.
    public var exemptionReason: String?
    /// The `NSExceptionDomains` key that matched, as written; nil when none did.
    public var matchedExceptionDomain: String?
    /// The `NSPinnedDomains` key that matched, as written; nil when none did.
    public var matchedPinnedDomain: String?
    /// Caveats a user should read even when the load is allowed (the localhost trap, ignored keys, …).
    public var notes: [String]
    /// The code of the first violation; `nil` when allowed.
    public var likelyError: ATSLikelyError?
    /// What the client and server would settle on, when they can.
    public var negotiatedVersion: TLSVersion?
    /// The IANA name of the suite client and server would settle on; nil when they share none.
    public var negotiatedSuite: String?
    /// The TLS version and suite rules that applied, with the model rules behind them.
    public var requirements: ATSRequirements
    /// Every model rule this verdict rests on, with its confidence and source (docs/ATS-MODEL.md lists them all).
    public var rules: [ATSAppliedRule]

    /// When ATS does not apply, the warning to print before the result (the same words as
    /// `ATSRequirements.exemptionWarning`); nil when it applies.
    public var exemptionWarning: String? { atsApplies ? nil : ATSRequirements.exemptionWarning(exemptionReason) }

    public var description: String {
        var lines = [allowed ? "ALLOW" : "BLOCK"]
        lines += violations.map { "  violation \($0)" }
        if let likelyError { lines.append("  likely error: \(likelyError)") }
        lines += waived.map { "  waived by trust override \($0)" }
        if let exemptionReason { lines.append("  ATS does not apply: \(exemptionReason)") }
        if let matchedExceptionDomain { lines.append("  exception entry: \(matchedExceptionDomain)") }
        if let matchedPinnedDomain { lines.append("  pinned domain: \(matchedPinnedDomain)") }
        if let negotiatedVersion, let negotiatedSuite { lines.append("  negotiated: \(negotiatedVersion) \(negotiatedSuite)") }
        lines += notes.map { "  note: \($0)" }
        if !rules.isEmpty { lines.append("  rules: \(rules.map(\.description).joined(separator: ", "))") }
        return lines.joined(separator: "\n")
    }
}
