import Foundation
import TLSFixturesATS
import TLSFixturesOpenSSL

/// Judges a certificate chain as the platform does, for "system trust" (a probe given no roots).
///
/// On macOS that is the Security framework (`SecTrustEvaluator`): it reads the Keychain's trust settings, where the
/// README installs the built-in CA, so `probe` and `ats diagnose` answer as URLSession and nscurl do. OpenSSL's
/// default store there is Homebrew's cert.pem, which knows nothing of the Keychain. Elsewhere there is no platform
/// evaluator and OpenSSL's default store is the system's.
public protocol PlatformTrustEvaluator: Sendable {
    /// For reports, e.g. `macOS trust settings (SecTrust)`.
    var name: String { get }
    /// Evaluates `chain` (DER, leaf first, as the server sent it) for a TLS server named `host`; nil skips the name.
    func evaluate(chain: [Data], host: String?) -> PlatformTrustVerdict
}

/// What a platform evaluator concluded.
public struct PlatformTrustVerdict: Sendable, Equatable {
    /// Why the platform refused the chain, in its own code and words.
    public struct Failure: Sendable, Equatable {
        /// The platform's own code: for SecTrust the OSStatus of `SecTrustEvaluateWithError`'s error.
        public var status: Int32
        /// The platform's own words.
        public var message: String
        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(status: Int32, message: String) { self.status = status; self.message = message }
    }
    /// nil when the chain is trusted.
    public var failure: Failure?
    /// The chain the platform built, leaf to anchor (DER); empty when it built none.
    public var builtChain: [Data]
    /// Whose anchor the built chain ends in, when the platform can tell (macOS: its trust-settings domain).
    public var anchor: TrustAnchorKind?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(failure: Failure?, builtChain: [Data], anchor: TrustAnchorKind? = nil) {
        self.failure = failure; self.builtChain = builtChain; self.anchor = anchor
    }
}

/// The platform's own trust evaluator, when this platform has one.
public enum PlatformTrust {
    /// The evaluator system trust means on this platform: SecTrust where the Security framework exists, else none
    /// (OpenSSL's default store).
    public static var `default`: (any PlatformTrustEvaluator)? {
        #if canImport(Security)
        return SecTrustEvaluator()
        #else
        return nil
        #endif
    }

    /// The probe's verify outcome and trust facts from a platform's verdicts on `chain`: one with the host checked
    /// (`verification`), one without (`trust`: chain, signatures and dates only, for the ATS model's own rules).
    static func outcome(_ evaluator: any PlatformTrustEvaluator, chain: [CertificateFacts], host: String?,
                        anchor: TrustAnchorKind, now: Date = Date()) -> (VerifyOutcome, TrustFacts) {
        let der = chain.map(\.der)
        let named = evaluator.evaluate(chain: der, host: host)
        let unnamed = host == nil ? named : evaluator.evaluate(chain: der, host: nil)
        let verification = VerifyOutcome(host: host, securityLevel: 2,
                                         error: named.failure.map { verifyError($0, chain: chain, now: now) }, verifier: evaluator.name)
        let built = unnamed.builtChain.compactMap { try? Certificate(der: $0).facts }
        let trust = TrustFacts(chainError: unnamed.failure.map { verifyError($0, chain: chain, now: now) },
                               verifiedChain: built, anchor: unnamed.anchor ?? anchor)
        return (verification, trust)
    }

    /// A platform failure in OpenSSL's `X509_V_ERR_*` terms, which the ATS model and the probe's exit status read; the
    /// text stays the platform's own. SecTrust's codes are the OSStatus values of Apple's SecBase.h, as its policy
    /// checks report them (Security's SecPolicyChecks.list): an expired and a not-yet-valid certificate share
    /// errSecCertificateExpired, so the dates tell them apart, and an untrusted anchor is told apart by the chain's top.
    package static func verifyError(_ failure: PlatformTrustVerdict.Failure, chain: [CertificateFacts], now: Date) -> VerifyError {
        let code: Int32
        var depth = 0
        switch failure.status {
        case -67818, -67819:   // errSecCertificateExpired, errSecCertificateNotValidYet
            if let index = chain.firstIndex(where: { $0.notBefore > now }) {
                code = 9; depth = index                                            // X509_V_ERR_CERT_NOT_YET_VALID
            } else {
                code = 10; depth = chain.firstIndex { $0.notAfter < now } ?? 0     // X509_V_ERR_CERT_HAS_EXPIRED
            }
        case -67602: code = 62                                                 // errSecHostNameMismatch: HOSTNAME_MISMATCH
        case -67843, -25318:                                                   // errSecNotTrusted, errSecCreateChainFailed
            if chain.count == 1, chain[0].isSelfIssued {
                code = 18                                                          // DEPTH_ZERO_SELF_SIGNED_CERT
            } else if let top = chain.last, chain.count > 1, top.isSelfIssued, top.isCA {
                code = 19; depth = chain.count - 1                                 // SELF_SIGNED_CERT_IN_CHAIN
            } else {
                code = 20; depth = max(0, chain.count - 1)                         // UNABLE_TO_GET_ISSUER_CERT_LOCALLY
            }
        case -67609: code = 26                                                 // errSecInvalidExtendedKeyUsage: INVALID_PURPOSE
        case -67735: code = 66                                                 // errSecUnsupportedKeySize: EE_KEY_TOO_SMALL
        case -67815: code = 68                                                 // errSecInvalidDigestAlgorithm: CA_MD_TOO_WEAK
        case -67689, -67900: code = 47                                         // errSecInvalidName, …NameNotAllowed: PERMITTED_VIOLATION
        case -67820: code = 23                                                 // errSecCertificateRevoked: CERT_REVOKED
        default: code = 1                                                      // X509_V_ERR_UNSPECIFIED
        }
        return VerifyError(code: code, text: failure.message, depth: depth)
    }
}
