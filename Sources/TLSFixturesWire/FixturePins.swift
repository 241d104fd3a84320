import Foundation

/// SPKI pins (base64 SHA-256 of the DER SubjectPublicKeyInfo) a test or an app configuration needs: what TrustKit's
/// `TSKPublicKeyHashes` and ATS's `SPKI-SHA256-BASE64` identities hold, without the `sha256/` prefix.
///
/// The same value whether the fixture runs in this process (`FixtureServer.pins`) or in `tls-fixtures serve`
/// (`RemoteFixture.pins`).
public struct FixturePins: Codable, Sendable, Hashable {
    /// This fixture's leaf key; nil for plain HTTP.
    public var leaf: String?
    /// The built-in CA (the root users install).
    public var ca: String
    /// A key no server uses: TrustKit requires a second pin, and real apps keep a backup.
    public var backup: String
    /// The published `pinned` key (what an app under test pins as its leaf).
    public var pinnedLeaf: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(leaf: String?, ca: String, backup: String, pinnedLeaf: String) {
        self.leaf = leaf; self.ca = ca; self.backup = backup; self.pinnedLeaf = pinnedLeaf
    }

    /// A TrustKit domain entry (a value of `kTSKPinnedDomains`), keys spelled as TrustKit's constants are:
    /// `hashes` (default: the published pinned leaf) plus the backup pin, because TrustKit refuses a domain with fewer
    /// than two. Hand it to `TrustKit.initSharedInstance(withConfiguration:)` under the fixture's host.
    ///
    /// TrustKit refuses domains outside the public suffix list, `.test` among them: serve the fixtures under a domain
    /// of your own (`tls-fixtures serve --domain`) and pin that name.
    public func trustKitDomainConfiguration(hashes: [String]? = nil, enforcePinning: Bool = true,
                                            includeSubdomains: Bool = false) -> [String: Any] {
        var pinned = hashes ?? [pinnedLeaf]
        if !pinned.contains(backup) { pinned.append(backup) }
        return [
            "TSKPublicKeyHashes": pinned,
            "TSKEnforcePinning": enforcePinning,
            "TSKIncludeSubdomains": includeSubdomains,
        ]
    }
}
