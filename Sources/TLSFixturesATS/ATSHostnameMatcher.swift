import Foundation

/// Host-name verification as Apple's SSL policy does it: DNS names against SAN DNS entries with RFC 6125
/// wildcards, IP literals against SAN IP entries, and — before iOS 13 only — the subject CN when the
/// certificate has no SAN extension.
public enum ATSHostnameMatcher {
    /// Whether `host` is a name of `certificate`.
    /// - Parameter commonNameFallback: consult the CN when there is no SAN extension (iOS 9–12 behaviour).
    public static func matches(host: ATSHost, certificate: CertificateFacts, commonNameFallback: Bool) -> Bool {
        if let ip = host.ip {
            // An IP connection matches only IP SANs, compared as addresses.
            return certificate.ipAddresses.contains { ATSIPAddress($0) == ip }
        }
        if let names = certificate.dnsNames {
            return names.contains { matches(name: host.name, pattern: $0) }
        }
        if commonNameFallback, certificate.ipAddresses.isEmpty, let cn = certificate.commonName, !cn.isEmpty {
            return matches(name: host.name, pattern: cn)
        }
        return false
    }

    /// RFC 6125 §6.4.3 matching, restricted the way Apple restricts it: a wildcard only as the whole
    /// leftmost label, standing for exactly one non-empty label, and never directly under a single-label
    /// domain (`*.com` is refused), so `*.fixtures.test` matches `a.fixtures.test` only.
    public static func matches(name: String, pattern: String) -> Bool {
        let name = normalized(name)
        let pattern = normalized(pattern)
        guard !pattern.isEmpty else { return false }
        guard pattern.contains("*") else { return name == pattern }
        guard pattern.hasPrefix("*."), pattern.filter({ $0 == "*" }).count == 1 else { return false }
        let parent = pattern.dropFirst(2)
        guard parent.contains("."), let dot = name.firstIndex(of: ".") else { return false }
        let firstLabel = name[..<dot]
        return !firstLabel.isEmpty && name[name.index(after: dot)...] == parent
    }

    private static func normalized(_ text: String) -> String {
        var lower = text.lowercased()
        if lower.hasSuffix("."), lower.count > 1 { lower.removeLast() }
        return lower
    }
}
