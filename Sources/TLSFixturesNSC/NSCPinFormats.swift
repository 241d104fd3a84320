import Foundation

/// Pins as Android apps write them: a Network Security Config `<pin-set>` and OkHttp's `CertificatePinner`.
///
/// Both match a pin against any certificate of the verified chain, and one match is enough (`checkPins` in AOSP's
/// `NetworkSecurityTrustManager`; OkHttp's `CertificatePinner.check`). So the leaf key and a backup key are pinned, not
/// the CA's: with the CA pinned too, a new leaf key from the same CA (`pin-rotated-key`) would pass, where
/// NSPinnedDomains, which requires the leaf list and the CA list each to match, refuses it.
public enum NSCPinFormats {
    /// The pins of one host, each base64 of a SHA-256 of a SubjectPublicKeyInfo.
    public struct Pins: Sendable, Equatable, Codable {
        /// The host the pins are for (`pinned.fixtures.test`).
        public var host: String
        /// The key the server uses now.
        public var leaf: String
        /// A key no server uses yet, kept offline for the next rotation.
        public var backup: String
        /// The CA's key, offered as a commented alternative (pinning it survives a new leaf key).
        public var ca: String?

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(host: String, leaf: String, backup: String, ca: String? = nil) {
            self.host = host
            self.leaf = leaf
            self.backup = backup
            self.ca = ca
        }
    }

    /// The day a pin-set made on `today` expires: a year on (Android's documentation recommends an expiration, so an
    /// app not updated does not fail for good; rotate the keys, or ship new pins, before then).
    public static func defaultExpiration(from today: NSCDay) -> NSCDay {
        let day = today.month == 2 && today.day == 29 ? 28 : today.day
        return NSCDay(year: today.year + 1, month: today.month, day: day)
    }

    /// A `<domain-config>` for the host with the leaf and backup pins, ready for `res/xml/network_security_config.xml`.
    /// `trustAnchor` (`@raw/tls_fixtures_ca`) adds the anchor the chain must end at: a top-level domain-config inherits
    /// base-config's anchors, not those of another domain-config that names a parent domain.
    public static func pinSetXML(_ pins: Pins, expiration: NSCDay, includeSubdomains: Bool = false,
                                 trustAnchor: String? = nil) -> String {
        let host = NSCEvaluator.xmlEscaped(pins.host)
        var lines = [
            "<domain-config>",
            "    <domain includeSubdomains=\"\(includeSubdomains)\">\(host)</domain>",
        ]
        if let trustAnchor {
            lines += [
                "    <!-- the kit's CA (a top-level domain-config does not inherit another's trust-anchors) -->",
                "    <trust-anchors>",
                "        <certificates src=\"\(NSCEvaluator.xmlEscaped(trustAnchor))\"/>",
                "    </trust-anchors>",
            ]
        }
        lines += [
            "    <pin-set expiration=\"\(expiration)\">",
            "        <!-- the leaf key the server uses now -->",
            "        <pin digest=\"SHA-256\">\(pins.leaf)</pin>",
            "        <!-- backup: a key no server uses yet; keep it offline for the next rotation -->",
            "        <pin digest=\"SHA-256\">\(pins.backup)</pin>",
        ]
        if let ca = pins.ca {
            lines += [
                "        <!-- or the CA's key, which a new leaf key from the same CA also passes:",
                "        <pin digest=\"SHA-256\">\(ca)</pin> -->",
            ]
        }
        lines += ["    </pin-set>", "</domain-config>"]
        return lines.joined(separator: "\n")
    }

    /// OkHttp's `CertificatePinner` for the host with the leaf and backup pins, in Kotlin.
    public static func okHttpCertificatePinner(_ pins: Pins) -> String {
        let host = pins.host.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        var lines = [
            "val certificatePinner = CertificatePinner.Builder()",
            "    .add(\"\(host)\", \"sha256/\(pins.leaf)\") // the leaf key",
            "    .add(\"\(host)\", \"sha256/\(pins.backup)\") // backup key: no server uses it",
        ]
        if let ca = pins.ca {
            lines.append("    // .add(\"\(host)\", \"sha256/\(ca)\") // or the CA's key (a new leaf key passes too)")
        }
        lines += [
            "    .build()",
            "val client = OkHttpClient.Builder().certificatePinner(certificatePinner).build()",
        ]
        return lines.joined(separator: "\n")
    }
}
