import TLSFixturesOpenSSL

/// What a client of the linked OpenSSL with its defaults (security level, suites, protocol floor, 100 KiB
/// certificate-list limit: what curl, `openssl s_client`, Python and Node use unless told otherwise) makes of the
/// server's handshake. The probe's own handshake accepts anything the linked OpenSSL can speak, so it can report weak
/// servers; this says whether a default client gets that far.
///
/// Proven by a second handshake with those defaults (`ProbeOptions.checkDefaultClient`), never inferred from the
/// facts. Verification is not part of it: the `verification` verdict says what the same client makes of the chain.
public struct DefaultClientVerdict: Codable, Sendable, Equatable {
    /// `completes`, `refuses`, or `unknown` (the second connection could not be made, or ran out of time).
    public var outcome: String
    /// OpenSSL's words for the failure; nil when the handshake completed.
    public var failure: String?
    /// Why, in a sentence, for the failures a weak server causes; nil when OpenSSL's words say it all.
    public var reason: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(outcome: String, failure: String? = nil, reason: String? = nil) {
        self.outcome = outcome; self.failure = failure; self.reason = reason
    }

    /// A default client's verdict from the outcome of its handshake (`failure` nil: completed).
    package init(handshakeFailure failure: String?) {
        guard let failure else {
            self.init(outcome: "completes")
            return
        }
        self.init(outcome: "refuses", failure: failure, reason: Self.reason(for: failure))
    }

    /// The cause behind OpenSSL's words, for the refusals weak servers provoke.
    static func reason(for failure: String) -> String? {
        let text = failure.lowercased()
        if text.contains("legacy sigalg") || text.contains("no suitable signature algorithm") {
            return "TLS 1.0 and 1.1 sign the handshake with SHA-1 and MD5, which OpenSSL 3 refuses above security "
                + "level 0"
        }
        if text.contains("dh key too small") {
            return "the server's DH group is smaller than the default security level accepts (2048 bits at level 2)"
        }
        if text.contains("excessive message size") {
            return "the certificate chain is larger than OpenSSL's default limit for it (100 KiB, max_cert_list)"
        }
        if ["unsupported protocol", "protocol version", "no protocols available"].contains(where: text.contains) {
            return "the server speaks only protocol versions a default client does not offer"
        }
        if ["no shared cipher", "handshake failure", "no ciphers available"].contains(where: text.contains) {
            return "the server accepts none of the suites a default client offers (NULL, export, RC4 and other weak "
                + "suites are never offered)"
        }
        if text.contains("key too small") || text.contains("ca md too weak") {
            return "the server's key or signature is weaker than the default security level accepts"
        }
        return nil
    }

    /// The client settings a default client of the linked OpenSSL uses: no suites, groups or level of our choosing.
    static var settings: TLSSettings {
        TLSSettings(minVersion: .tls1_0, maxVersion: .tls1_3, ciphers: nil, tls13Suites: nil, securityLevel: nil)
    }
}
