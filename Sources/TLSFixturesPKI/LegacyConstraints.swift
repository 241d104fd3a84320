import Foundation
import TLSFixturesOpenSSL

/// A built-in CA made by an earlier version whose name constraints strict verifiers refuse.
///
/// Earlier CAs wrote their DNS constraints with a leading dot (`DNS:.test`, `DNS:.localhost`). RFC 5280 4.2.1.10
/// defines that form for URI constraints only; OpenSSL, BoringSSL, GnuTLS and NSS accept it for DNS as a legacy
/// extension, but pyca/cryptography's verifier, sslyze and zlint reject the CA ("malformed DNS name constraint"), so
/// every fixture fails there. Such a CA keeps working everywhere else and is never replaced behind the user's back:
/// devices trust it and apps pin it. `ca show` reports it with the way out.
package struct LegacyNameConstraints: Sendable, Equatable {
    /// The offending entries, as stored (`.localhost`, `.test`, …).
    package let leadingDotEntries: [String]

    /// Nil when `certificate` has no leading-dot DNS constraint.
    package init?(_ certificate: Certificate) {
        guard let entries = certificate.nameConstraintEntries else { return nil }
        let found = NameConstraints(permitted: entries.permitted, excluded: entries.excluded).leadingDotDNSEntries
        guard !found.isEmpty else { return nil }
        leadingDotEntries = found
    }

    /// One paragraph for `ca show`: what is wrong, who it affects, and how to replace the authority.
    package func explanation(for authority: BuiltinAuthority = .root) -> String {
        let listed = leadingDotEntries.map { "DNS:\($0)" }.joined(separator: ", ")
        let problem = """
            warning: this \(authority == .root ? "CA" : authority.rawValue) was made by an earlier swift-tls-fixtures. Its \
            name constraints use the leading-dot form (\(listed)), which strict RFC 5280 verifiers (pyca/cryptography, \
            sslyze, zlint) refuse, so every certificate it signed fails in them; OpenSSL, BoringSSL, GnuTLS, NSS, Go and \
            Java still accept it.
            """
        guard authority == .root else {
            return problem + " To have a new one made on next use, move ca/\(authority.rawValue).pem and ca/\(authority.rawValue).key "
                + "out of the store (a device that trusts the old one keeps trusting it until you remove it)."
        }
        return problem + """
             To make a new CA with bare DNS constraints: `tls-fixtures ca init --force` (the old one is moved to \
            ca/replaced-DATE/, not deleted). Devices and simulators that trust the old CA keep trusting it until you \
            remove it, and must be given the new one; apps that pin the old CA's key must pin the new one.
            """
    }
}
