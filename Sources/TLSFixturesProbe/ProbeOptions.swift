import Foundation
import TLSFixturesATS
import TLSFixturesWire
import TLSFixturesOpenSSL
import TLSFixturesPKI

/// What the probe offers and whom it trusts.
public struct ProbeOptions: Sendable {
    /// Protocol range offered. Default: everything the linked OpenSSL can speak, so the probe sees what the server chose.
    public var minVersion: TLSVersion = .tls1_0
    /// The highest version offered; default TLS 1.3.
    public var maxVersion: TLSVersion = .tls1_3
    /// TLS ≤ 1.2 suites offered (OpenSSL syntax). Default: all of them, NULL included, at security level 0.
    public var ciphers: String = "ALL:eNULL:@SECLEVEL=0"
    /// TLS 1.3 suites offered (OpenSSL's `-ciphersuites` syntax); nil offers OpenSSL's default three.
    public var tls13Suites: String? = nil
    /// Roots to verify against; nil uses system trust: `systemTrust` where set, else OpenSSL's default store.
    public var trustRoots: [Certificate]? = nil
    /// What system trust means when `trustRoots` is nil: on macOS the Security framework (the Keychain's trust
    /// settings, as URLSession judges), elsewhere nil (OpenSSL's default store). See `PlatformTrust`.
    public var systemTrust: (any PlatformTrustEvaluator)? = PlatformTrust.default
    /// Which kind of anchor `trustRoots` stand for, for the ATS model.
    public var anchorKind: TrustAnchorKind = .userInstalled
    /// SNI; default the target host unless it is an IP literal (RFC 6066 forbids IP addresses in SNI).
    public var serverName: String? = nil
    /// A certificate and key to answer a server's certificate request with (`client-cert-required`); nil sends none.
    public var clientCredential: Credential? = nil
    /// Send `GET /` after the handshake and keep the response.
    public var sendHTTPRequest = true
    /// The largest HTTP body the probe keeps, in bytes; a longer one makes the probe fail with "the HTTP answer's body
    /// is over N bytes" rather than report part of it. A fixture's JSON answer is a few KiB.
    public var maximumHTTPBodyBytes = 1 << 20
    /// The largest certificate chain accepted, in bytes. OpenSSL's default is 100 KiB; the probe reads 1 MiB so it can
    /// show a 10,000-name certificate that stock OpenSSL clients refuse as "excessive message size".
    public var maximumCertificateListBytes = 1 << 20
    /// Asked after the handshake and verification, before the HTTP request: a reason to stop there (a pin that did not
    /// match: a pinning client never sends its request over such a connection), or nil to go on. The reason is kept
    /// in `ProbeResult.httpNotSent`.
    public var beforeHTTPRequest: (@Sendable (ProbeResult) -> String?)? = nil
    /// Seconds the whole probe may take — connect, handshake, request and answer together — however the server
    /// paces its bytes; then it reports "timed out after N s". 0.001–86400 (`Timeout`'s range); other values throw.
    public var timeout: TimeInterval = 10
    /// A deadline shared with other probes (see `ProbeDeadline`); the probe ends at the earlier of this and `timeout`.
    public var deadline: ProbeDeadline? = nil

    /// Whose handshake the probe makes.
    public enum Handshake: String, Sendable, CaseIterable {
        /// Offer everything the linked OpenSSL can speak (every version, every suite, security level 0, a 1 MiB
        /// certificate list), so the probe sees and reports whatever the server chose.
        case permissive
        /// Make the handshake a default client of the linked OpenSSL would (`DefaultClientVerdict`): weak servers then
        /// fail it as curl and `openssl s_client` do. `minVersion`, `maxVersion`, `ciphers`, `tls13Suites` and
        /// `maximumCertificateListBytes` are not used.
        case defaultClient = "default-client"
    }

    /// Whose handshake the probe makes; default `.permissive`.
    public var handshake: Handshake = .permissive
    /// After a permissive handshake that completed, make a second connection with a default client's settings and
    /// say whether it completes (`ProbeResult.defaultClient`). Off by default: it is a second connection to the server.
    public var checkDefaultClient = false

    /// The defaults above: every version and suite, system trust, `GET /`, a 10 s limit.
    public init() {}
}
