import TLSFixturesWire
import TLSFixturesATS
import TLSFixturesOpenSSL

/// Everything a client learned from one connection attempt.
public struct ProbeResult: Codable, Sendable, Equatable {
    /// The target as given, `host:port` (with the connect address when it differs).
    public var target: String
    /// The address the TCP connection reached; nil when none did.
    public var connectedTo: String?
    /// nil when the handshake completed.
    public var failure: String?
    /// `TLSv1.2`, as `SSL_get_version` prints it.
    public var protocolName: String?
    /// The negotiated version as a value; nil when no handshake completed.
    public var version: TLSVersion?
    /// The negotiated suite (IANA and OpenSSL names, bits); nil when no handshake completed.
    public var cipher: HandshakeDetails.Cipher?
    /// "Server Temp Key" in s_client's words: `X25519`, `ECDH prime256v1`, `DH 1024`; for a group with no temporary key
    /// (OpenSSL 3.5's default hybrid) the group: `X25519MLKEM768`. nil for RSA key exchange.
    public var keyExchange: String?
    /// The negotiated group as OpenSSL names it (`x25519`, `secp256r1`, `X25519MLKEM768`); nil when none was used.
    public var group: String?
    /// The ALPN protocol the server chose (`http/1.1`); nil when it chose none.
    public var alpn: String?
    /// The chain exactly as sent, leaf first.
    public var presentedChain: [CertificateFacts]
    /// As a default OpenSSL 3 client judges it (security level 2, hostname, purpose sslserver).
    public var verification: VerifyOutcome?
    /// Chain building, signatures and dates only, for the ATS model.
    public var trust: TrustFacts?
    /// The OCSP response the server stapled (the probe always asks for one); nil when it sent none.
    public var stapledOCSP: OCSPResponseFacts?
    /// The Signed Certificate Timestamps received for the leaf (the probe always asks for them), by where they came
    /// from; nil when no certificate arrived or the linked OpenSSL has no CT support.
    public var scts: ServerFacts.SCTCounts?
    /// The answer to `GET /`; nil when no request was sent or no answer came.
    public var http: ProbeHTTPResponse?
    /// The probe gave up at its deadline (`failure` says where: handshake or HTTP answer).
    public var timedOut = false
    /// Why no HTTP request was sent although one was asked for (`ProbeOptions.beforeHTTPRequest` stopped it).
    public var httpNotSent: String?
    /// What a default client of the linked OpenSSL makes of the handshake (`ProbeOptions.checkDefaultClient`, or the
    /// probe's own handshake with `ProbeOptions.handshake` `.defaultClient`); nil when not asked.
    public var defaultClient: DefaultClientVerdict?
    /// The negotiated suite encrypts nothing (a NULL cipher): every byte, the HTTP request included, crosses in clear.
    public var unencrypted: Bool {
        guard let cipher else { return false }
        return cipher.openssl.contains("NULL") || cipher.iana.contains("_WITH_NULL_")
    }

    package init(target: String, connectedTo: String?, presentedChain: [CertificateFacts]) {
        self.target = target; self.connectedTo = connectedTo; self.presentedChain = presentedChain
    }

    /// True when the handshake completed (whatever verification concluded).
    public var succeeded: Bool { failure == nil }
}
