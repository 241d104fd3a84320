import Foundation
import TLSFixturesWire

// The facts a TLS client observes about a server. The probe produces them from real handshakes;
// the ATS layer only ever reads them (it never reaches into a server).

/// One certificate as a client sees it. Every field is read from the DER by OpenSSL.
public struct CertificateFacts: Codable, Sendable, Equatable {
    /// RFC 2253 rendering, e.g. `CN=localhost,O=swift-tls-fixtures`.
    public var subject: String
    /// The issuer's name, in the same syntax as `subject`.
    public var issuer: String
    /// The subject's commonName, if it has one (`nil` when absent, `""` when present but empty).
    public var commonName: String?
    /// DNS names in the subjectAltName extension; `nil` when the certificate has no SAN extension.
    public var dnsNames: [String]?
    /// IP addresses in the subjectAltName extension, in their textual form.
    public var ipAddresses: [String]
    /// `RSA`, `EC` or `Ed25519`.
    public var keyType: KeyAlgorithm
    /// The key size in bits (2048 for RSA-2048, 256 for P-256).
    public var keyBits: Int
    /// The curve's short name (`prime256v1`, `secp384r1`) for EC keys.
    public var curve: String?
    /// OpenSSL's long name of the signature algorithm, e.g. `sha256WithRSAEncryption`, `ecdsa-with-SHA1`.
    public var signatureAlgorithm: String
    /// The digest of that signature, lowercase: `md5`, `sha1`, `sha224`, `sha256`, `sha384`, `sha512`;
    /// `none` for Ed25519 (which hashes internally).
    public var signatureDigest: String
    /// Start of validity.
    public var notBefore: Date
    /// End of validity.
    public var notAfter: Date
    /// basicConstraints says CA:TRUE.
    public var isCA: Bool
    /// Subject and issuer names are equal.
    public var isSelfIssued: Bool
    /// Extended key usages by short name (`serverAuth`, `clientAuth`, …); `nil` when the extension is absent. OpenSSL
    /// reads absent as any usage, but iOS 13+ refuses such a leaf issued after 2019-07-01 unless its root is user-installed.
    public var extendedKeyUsage: [String]?
    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo: the pin format of NSPinnedDomains, TrustKit and HPKP.
    public var spkiSHA256: String
    /// Hex SHA-256 of the whole DER certificate (what certificate pinning compares).
    public var sha256Fingerprint: String
    /// The certificate as sent, DER.
    public var der: Data
    /// Whether the certificate embeds Signed Certificate Timestamps (the CT precertificate SCT list extension);
    /// `nil` when not recorded. SCTs delivered in the handshake or an OCSP response are not seen here.
    public var hasEmbeddedSCTs: Bool?
    /// The OCSP responder URLs of the authorityInfoAccess extension; `nil` when not recorded.
    public var ocspURLs: [String]?
    /// The URIs of the CRL distribution points; `nil` when not recorded.
    public var crlURLs: [String]?
    /// The TLS Feature extension asks for a stapled OCSP response ("must-staple", RFC 7633); `nil` when not recorded.
    public var mustStaple: Bool?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(subject: String, issuer: String, commonName: String?, dnsNames: [String]?, ipAddresses: [String],
                keyType: KeyAlgorithm, keyBits: Int, curve: String?, signatureAlgorithm: String, signatureDigest: String,
                notBefore: Date, notAfter: Date, isCA: Bool, isSelfIssued: Bool, extendedKeyUsage: [String]?,
                spkiSHA256: String, sha256Fingerprint: String, der: Data, hasEmbeddedSCTs: Bool? = nil,
                ocspURLs: [String]? = nil, crlURLs: [String]? = nil, mustStaple: Bool? = nil) {
        self.subject = subject; self.issuer = issuer; self.commonName = commonName; self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses; self.keyType = keyType; self.keyBits = keyBits; self.curve = curve
        self.signatureAlgorithm = signatureAlgorithm; self.signatureDigest = signatureDigest
        self.notBefore = notBefore; self.notAfter = notAfter; self.isCA = isCA; self.isSelfIssued = isSelfIssued
        self.extendedKeyUsage = extendedKeyUsage; self.spkiSHA256 = spkiSHA256
        self.sha256Fingerprint = sha256Fingerprint; self.der = der; self.hasEmbeddedSCTs = hasEmbeddedSCTs
        self.ocspURLs = ocspURLs; self.crlURLs = crlURLs; self.mustStaple = mustStaple
    }
}

/// Who vouches for the root a chain ends in. Apple applies different certificate rules to each.
public enum TrustAnchorKind: String, Codable, Sendable, CaseIterable {
    /// A root the user installed and marked trusted (Settings ▸ Certificate Trust Settings, `simctl keychain add-root-cert`).
    case userInstalled = "user"
    /// A root Apple ships in the system trust store.
    case system
    /// An anchor the app supplied with `SecTrustSetAnchorCertificates` (typical pinning code).
    case appSupplied = "app"
}

/// The outcome of building and verifying the presented chain against a set of trusted roots.
public struct TrustFacts: Codable, Sendable, Equatable {
    /// OpenSSL's verdict with only chain building, signatures and dates checked — no hostname, no purpose,
    /// no security level — so Apple's own rules can be applied on top by the ATS model. `nil` = chain OK.
    public var chainError: VerifyError?
    /// The verified chain from leaf to anchor when one was built (may include a root the server did not send).
    public var verifiedChain: [CertificateFacts]
    /// Which kind of anchor the trusted roots stand for (the probe's caller says; the built-in CA is `.userInstalled`).
    public var anchor: TrustAnchorKind

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(chainError: VerifyError?, verifiedChain: [CertificateFacts], anchor: TrustAnchorKind) {
        self.chainError = chainError; self.verifiedChain = verifiedChain; self.anchor = anchor
    }
}

/// An OpenSSL `X509_V_ERR_*` result: its number and OpenSSL's own text
/// (`X509_verify_cert_error_string`), e.g. `10` / `certificate has expired`. When the platform judged (SecTrust on
/// macOS), the number is the nearest OpenSSL one and the text is the platform's own (`PlatformTrust`).
///
/// A fact the probe observed, not a Swift error: nothing throws it (a probe that fails throws `ProbeError`).
public struct VerifyError: Codable, Sendable, Equatable, CustomStringConvertible {
    /// OpenSSL's verify code (`X509_V_ERR_*`: 10 expired, 18 self-signed, 62 hostname mismatch, …).
    public var code: Int32
    /// OpenSSL's text for the code (`certificate has expired`).
    public var text: String
    /// Depth in the chain at which it was found (0 = leaf).
    public var depth: Int

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Int32, text: String, depth: Int) { self.code = code; self.text = text; self.depth = depth }
    public var description: String { "\(text) (X509 error \(code) at depth \(depth))" }
}

/// The cipher suites a server accepted, found by real handshakes, for each protocol version it speaks.
/// Keys are versions; values are IANA suite names (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`).
public typealias AcceptedSuites = [TLSVersion: [String]]

/// Everything the ATS model needs to know about one server, gathered from the client side.
public struct ServerFacts: Codable, Sendable, Equatable {
    /// `https` or `http`.
    public var scheme: String
    /// The protocol versions the server completed a handshake with, and the suites it accepted at each.
    /// Empty for `http`.
    public var accepted: AcceptedSuites
    /// The chain exactly as the server sent it, leaf first.
    public var presentedChain: [CertificateFacts]
    /// Trust as evaluated against the device's roots; `nil` for `http`.
    public var trust: TrustFacts?
    /// The OCSP response the server stapled when asked (status_request); `nil` when it sent none.
    public var stapledOCSP: OCSPResponseFacts?
    /// The Signed Certificate Timestamps the client received for the leaf, by where they came from; `nil` when not
    /// recorded (then only `CertificateFacts.hasEmbeddedSCTs` speaks for the leaf).
    public var scts: SCTCounts?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(scheme: String, accepted: AcceptedSuites, presentedChain: [CertificateFacts], trust: TrustFacts?,
                stapledOCSP: OCSPResponseFacts? = nil, scts: SCTCounts? = nil) {
        self.scheme = scheme; self.accepted = accepted; self.presentedChain = presentedChain; self.trust = trust
        self.stapledOCSP = stapledOCSP; self.scts = scts
    }

    /// Signed Certificate Timestamps by the three ways RFC 6962 (§3.3) lets a server deliver them. Apple's CT policy
    /// (support note 103214) counts them differently by source: embedded ones by the certificate's lifetime, and two
    /// suffice when one arrives in the TLS extension or a stapled OCSP response.
    public struct SCTCounts: Codable, Sendable, Equatable {
        /// In the certificate's SCT list extension (1.3.6.1.4.1.11129.2.4.2).
        public var embedded: Int
        /// In the handshake's signed_certificate_timestamp extension (which the client must ask for).
        public var tlsExtension: Int
        /// In the stapled OCSP response's SCT list extension (1.3.6.1.4.1.11129.2.4.5).
        public var stapledOCSP: Int

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(embedded: Int = 0, tlsExtension: Int = 0, stapledOCSP: Int = 0) {
            self.embedded = embedded; self.tlsExtension = tlsExtension; self.stapledOCSP = stapledOCSP
        }

        /// All of them.
        public var total: Int { embedded + tlsExtension + stapledOCSP }
    }
}
