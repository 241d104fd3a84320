import Foundation

extension ConnectionRecord {
    /// A client's ClientHello as the server parsed it, every number named by `TLSRegistry` (IANA's names; unknown
    /// numbers as `0x1234`, GREASE as `GREASE(0x0A0A)`), in the client's order.
    ///
    /// Each list keeps at most `maximumListLength` entries (a hostile hello can name thousands of suites): a record's
    /// size stays bounded whatever a client sends.
    public struct ClientHello: Sendable, Hashable, Codable {
        /// The `server_name` the client asked for (SNI); nil when it sent none.
        public var serverName: String?
        /// The record's `legacy_version` (`TLSv1.2` for every TLS 1.3 client; the highest version before TLS 1.3).
        public var legacyVersion: String
        /// The `supported_versions` extension's list (TLS 1.3 clients); empty when the client did not send it.
        public var supportedVersions: [String]
        /// Offered cipher suites, most preferred first.
        public var cipherSuites: [String]
        /// `supported_groups`: the key-exchange groups offered.
        public var groups: [String]
        /// `signature_algorithms`: the signature schemes the client accepts.
        public var signatureAlgorithms: [String]
        /// ALPN protocols offered (`h2`, `http/1.1`); empty when the client sent none.
        public var alpn: [String]
        /// Every extension present, in the order sent (`server_name`, `status_request`, …).
        public var extensions: [String]

        private enum CodingKeys: String, CodingKey {
            case serverName, legacyVersion, supportedVersions, cipherSuites, groups, signatureAlgorithms, alpn, extensions
        }

        /// Every key, `serverName` `null` when the client sent no SNI; decoding takes it absent too.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(serverName, forKey: .serverName)
            try c.encode(legacyVersion, forKey: .legacyVersion)
            try c.encode(supportedVersions, forKey: .supportedVersions)
            try c.encode(cipherSuites, forKey: .cipherSuites)
            try c.encode(groups, forKey: .groups)
            try c.encode(signatureAlgorithms, forKey: .signatureAlgorithms)
            try c.encode(alpn, forKey: .alpn)
            try c.encode(extensions, forKey: .extensions)
        }

        /// The most entries any list keeps.
        public static let maximumListLength = 128

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(serverName: String?, legacyVersion: String, supportedVersions: [String], cipherSuites: [String],
                    groups: [String], signatureAlgorithms: [String], alpn: [String], extensions: [String]) {
            self.serverName = serverName; self.legacyVersion = legacyVersion; self.supportedVersions = supportedVersions
            self.cipherSuites = cipherSuites; self.groups = groups; self.signatureAlgorithms = signatureAlgorithms
            self.alpn = alpn; self.extensions = extensions
        }

        /// The protocol versions the client listed in `supported_versions`, oldest first; nil when it sent no such list
        /// (a TLS 1.2-and-older client names only its highest version, `legacyVersion`, and not its lowest).
        public var offeredVersions: [TLSVersion]? {
            guard !supportedVersions.isEmpty else { return nil }
            return supportedVersions.compactMap { TLSVersion(rawValue: $0) }.sorted()
        }

        /// The highest version offered: the top of `supported_versions` when sent (RFC 8446 §4.2.1: it then replaces
        /// `legacy_version`), else `legacyVersion`.
        public var highestVersion: TLSVersion? { offeredVersions?.last ?? TLSVersion(rawValue: legacyVersion) }

        /// Whether the client asked for a stapled OCSP response (`status_request`, RFC 6066 §8).
        public var requestsOCSPStaple: Bool { extensions.contains("status_request") }
    }
}
