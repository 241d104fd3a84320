import TLSFixturesATS

#if canImport(Security)
import Foundation
import Security

/// System trust on macOS: the Security framework's SSL policy with the Keychain's trust settings — what URLSession
/// and `nscurl --ats-diagnostics` use. This file is compiled on Apple platforms only and cannot be built where the
/// project's CI runs; it is kept to documented calls (SecTrustCreateWithCertificates, SecPolicyCreateSSL,
/// SecTrustEvaluateWithError, SecTrustCopyCertificateChain, SecTrustSettingsCopyTrustSettings), and everything
/// that decides what its verdict means is in `PlatformTrust`, which is tested on Linux through a fake evaluator.
package struct SecTrustEvaluator: PlatformTrustEvaluator {
    package init() {}

    package var name: String { "macOS trust settings (SecTrust)" }

    package func evaluate(chain: [Data], host: String?) -> PlatformTrustVerdict {
        let certificates = chain.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
        guard !certificates.isEmpty, certificates.count == chain.count else {
            return PlatformTrustVerdict(failure: .init(status: errSecDecode, message: "the Security framework cannot read the certificates sent"),
                                        builtChain: [])
        }
        let policy = SecPolicyCreateSSL(true, host.map { $0 as CFString })
        var created: SecTrust?
        let status = SecTrustCreateWithCertificates(certificates as CFArray, policy, &created)
        guard status == errSecSuccess, let trust = created else {
            return PlatformTrustVerdict(failure: .init(status: status, message: "SecTrustCreateWithCertificates failed (OSStatus \(status))"),
                                        builtChain: [])
        }
        var error: CFError?
        let trusted = SecTrustEvaluateWithError(trust, &error)
        let built = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        let builtDER = built.map { SecCertificateCopyData($0) as Data }
        let anchor = built.last.flatMap(Self.anchorKind)
        if trusted { return PlatformTrustVerdict(failure: nil, builtChain: builtDER, anchor: anchor) }
        let code = error.map { Int32(truncatingIfNeeded: CFErrorGetCode($0)) } ?? errSecNotTrusted
        let message = error.map { CFErrorCopyDescription($0) as String } ?? "the certificate is not trusted"
        return PlatformTrustVerdict(failure: .init(status: code, message: message), builtChain: builtDER, anchor: anchor)
    }

    /// Whose trust setting makes `root` an anchor: a user's or an administrator's (installed, like the built-in CA)
    /// or the system's. nil when it has none of them (then the caller's assumption stands).
    static func anchorKind(_ root: SecCertificate) -> TrustAnchorKind? {
        #if os(macOS)
        var settings: CFArray?
        if SecTrustSettingsCopyTrustSettings(root, .user, &settings) == errSecSuccess { return .userInstalled }
        if SecTrustSettingsCopyTrustSettings(root, .admin, &settings) == errSecSuccess { return .userInstalled }
        if SecTrustSettingsCopyTrustSettings(root, .system, &settings) == errSecSuccess { return .system }
        #endif
        return nil
    }
}
#endif
