import Foundation

/// A TLS alert: its number on the wire and the name the IANA "TLS Alerts" registry gives it (RFC 8446 §6,
/// https://www.iana.org/assignments/tls-parameters/#tls-parameters-6). Printed as TLS libraries' logs and the RFCs
/// print it, `certificate_expired(45)`.
///
/// JSON: `{"code": 45, "name": "certificate_expired"}`. A name alone (`"certificate_expired"`), as scenario files write
/// it, or a bare number also decodes.
public struct TLSAlert: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The AlertDescription byte.
    public var code: UInt8

    /// The alert with this number.
    public init(code: UInt8) { self.code = code }

    /// The alert the registry names `name` (`unknown_ca`); nil for a name it does not have.
    public init?(name: String) {
        guard let code = Self.names.first(where: { $0.value == name })?.key else { return nil }
        self.code = code
    }

    /// The registry's name (`unknown_ca`), or `alert_NNN` for a number it does not assign.
    public var name: String { Self.names[code] ?? "alert_\(code)" }

    /// `unknown_ca(48)`.
    public var description: String { "\(name)(\(code))" }

    /// What a peer says by sending it, in a test author's terms: why a client that sent it refused.
    public var meaning: String {
        switch code {
        case 0: return "it closed the connection cleanly (close_notify), giving no reason"
        case 40: return "the handshake could not agree on parameters (no shared cipher suite or group), or it aborted"
        case 42: return "it rejected the certificate without saying why (names, dates, signatures, or a trust callback)"
        case 43: return "the certificate's key type or usage is not one it accepts (extended key usage, key type)"
        case 44: return "it found the certificate revoked"
        case 45: return "it found the certificate expired"
        case 46:
            return "it rejected the certificate for a reason it does not name (trust and pinning callbacks send this)"
        case 47, 50, 10: return "it found the server's message malformed"
        case 48:
            return "it does not trust the certificate's issuer (is the built-in CA among the client's trusted roots?)"
        case 49: return "it denied access"
        case 51: return "a signature or key check failed"
        case 70: return "the two sides share no protocol version"
        case 71: return "the server's parameters are too weak for it (a small DH group, a weak suite)"
        case 80: return "it failed for an internal reason, not one about the server"
        case 86: return "it saw a version downgrade it did not expect (TLS_FALLBACK_SCSV)"
        case 90: return "it cancelled the handshake"
        case 109, 110: return "an extension it needs was missing or unexpected"
        case 112: return "the server does not serve the name it asked for"
        case 116: return "the server requires a client certificate and none was sent"
        case 120: return "no common application protocol (ALPN)"
        default: return "it sent \(description)"
        }
    }

    /// Alerts that refuse without naming what is wrong: a client that refuses a scenario for the scenario's own reason
    /// may still send one of these (a pinning or trust callback has no finer words than `certificate_unknown`; OpenSSL
    /// 3's stock client refuses a TLS 1.0 server at its default security level with `internal_error`), so they never
    /// count against the reason a scenario expects.
    public var isUnspecificObjection: Bool { [42, 46, 80, 90].contains(code) }

    /// `close_notify(0)`: the sender is closing the connection cleanly.
    public static let closeNotify = TLSAlert(code: 0)
    /// `handshake_failure(40)`: no acceptable set of parameters (OpenSSL's server sends it for "no shared cipher").
    public static let handshakeFailure = TLSAlert(code: 40)
    /// `bad_certificate(42)`: a certificate was corrupt or failed a check the sender does not name.
    public static let badCertificate = TLSAlert(code: 42)
    /// `unsupported_certificate(43)`: a certificate of a type or usage the sender does not accept.
    public static let unsupportedCertificate = TLSAlert(code: 43)
    /// `certificate_revoked(44)`.
    public static let certificateRevoked = TLSAlert(code: 44)
    /// `certificate_expired(45)`: a certificate is expired or not yet valid.
    public static let certificateExpired = TLSAlert(code: 45)
    /// `certificate_unknown(46)`: some other certificate problem made it unacceptable.
    public static let certificateUnknown = TLSAlert(code: 46)
    /// `unknown_ca(48)`: the chain does not lead to a CA the sender trusts.
    public static let unknownCA = TLSAlert(code: 48)
    /// `decrypt_error(51)`: a handshake signature or key check failed.
    public static let decryptError = TLSAlert(code: 51)
    /// `protocol_version(70)`: the peer's protocol version is one the sender does not support.
    public static let protocolVersion = TLSAlert(code: 70)
    /// `insufficient_security(71)`: the parameters the peer offered are weaker than the sender accepts.
    public static let insufficientSecurity = TLSAlert(code: 71)
    /// `internal_error(80)`: a failure of the sender's own, unrelated to the peer.
    public static let internalError = TLSAlert(code: 80)
    /// `user_canceled(90)`: the sender gave up on the handshake.
    public static let userCanceled = TLSAlert(code: 90)
    /// `certificate_required(116)`: a TLS 1.3 server required a client certificate and got none.
    public static let certificateRequired = TLSAlert(code: 116)

    /// The registry (RFC 8446 §6 for TLS 1.3's, RFC 5246 §7.2 for the older ones it keeps as reserved).
    static let names: [UInt8: String] = [
        0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 21: "decryption_failed",
        22: "record_overflow", 30: "decompression_failure", 40: "handshake_failure", 41: "no_certificate",
        42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked", 45: "certificate_expired",
        46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied",
        50: "decode_error", 51: "decrypt_error", 52: "too_many_cids_requested", 60: "export_restriction",
        70: "protocol_version", 71: "insufficient_security", 80: "internal_error", 86: "inappropriate_fallback",
        90: "user_canceled", 100: "no_renegotiation", 109: "missing_extension", 110: "unsupported_extension",
        111: "certificate_unobtainable", 112: "unrecognized_name", 113: "bad_certificate_status_response",
        114: "bad_certificate_hash_value", 115: "unknown_psk_identity", 116: "certificate_required",
        117: "general_error", 120: "no_application_protocol", 121: "ech_required",
    ]

    private enum CodingKeys: String, CodingKey { case code, name }

    public init(from decoder: Decoder) throws {
        if let single = try? decoder.singleValueContainer() {
            if let code = try? single.decode(UInt8.self) {
                self.init(code: code)
                return
            }
            if let name = try? single.decode(String.self) {
                guard let alert = TLSAlert(name: name) else {
                    throw DecodingError.dataCorruptedError(in: single, debugDescription:
                        "\"\(name)\" is not a TLS alert name (RFC 8446 §6: certificate_expired, unknown_ca, …)")
                }
                self = alert
                return
            }
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(code: try c.decode(UInt8.self, forKey: .code))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(code, forKey: .code)
        try c.encode(name, forKey: .name)
    }
}
