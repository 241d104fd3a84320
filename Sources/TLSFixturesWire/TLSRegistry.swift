import Foundation

/// Names for the numbers a ClientHello carries, as the IANA "Transport Layer Security (TLS) Parameters" registries
/// spell them (https://www.iana.org/assignments/tls-parameters/): what connection records print, so a record reads like
/// the RFCs and Apple's and Java's APIs rather than like one TLS library.
///
/// A number not in a table prints as `0x1234`; a GREASE value (RFC 8701: 0x0A0A, 0x1A1A, … 0xFAFA, sent by Chrome,
/// BoringSSL and Apple's clients to keep servers tolerant) as `GREASE(0x0A0A)`.
public enum TLSRegistry {
    /// The IANA name of a cipher suite (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), or `0x…`.
    public static func cipherSuiteName(_ code: UInt16) -> String { name(code, in: cipherSuites) }
    /// The IANA name of a supported group (`x25519`, `secp256r1`, `X25519MLKEM768`), or `0x…`.
    public static func groupName(_ code: UInt16) -> String { name(code, in: groups) }
    /// The IANA name of a signature scheme (`rsa_pss_rsae_sha256`), or `0x…`.
    public static func signatureSchemeName(_ code: UInt16) -> String { name(code, in: signatureSchemes) }
    /// The IANA name of an extension type (`server_name`, `status_request`), or `0x…`.
    public static func extensionName(_ code: UInt16) -> String { name(code, in: extensions) }
    /// A protocol version as `TLSVersion` spells it (`TLSv1.2`), or `0x…`.
    public static func versionName(_ code: UInt16) -> String {
        if let version = version(code) { return version.rawValue }
        return name(code, in: [:])
    }

    /// The protocol version a wire number stands for; nil for GREASE, drafts and anything else.
    public static func version(_ code: UInt16) -> TLSVersion? {
        switch code {
        case 0x0300: return .ssl3
        case 0x0301: return .tls1_0
        case 0x0302: return .tls1_1
        case 0x0303: return .tls1_2
        case 0x0304: return .tls1_3
        default: return nil
        }
    }

    /// RFC 8701 §2: both bytes equal, each of the form 0x?A.
    public static func isGREASE(_ code: UInt16) -> Bool {
        code & 0x0F0F == 0x0A0A && code >> 8 == code & 0xFF
    }

    private static func name(_ code: UInt16, in table: [UInt16: String]) -> String {
        if let name = table[code] { return name }
        let hex = "0x" + String(format: "%04X", code)
        return isGREASE(code) ? "GREASE(\(hex))" : hex
    }

    /// The cipher suites registry: every suite the OpenSSL 3.0 library knows (its table carries the registry's names;
    /// `openssl ciphers -V -stdname 'ALL:COMPLEMENTOFALL:@SECLEVEL=0'` lists them), plus those OpenSSL 3 builds leave
    /// out that old clients still offer: RC4 and 3DES (RFC 5246 Appendix A.5, RFC 8422 §6), the CCM suites of TLS 1.3
    /// (RFC 8446 Appendix B.4), and the two signalling values (RFC 5746 §3.3, RFC 7507 §6).
    static let cipherSuites: [UInt16: String] = [
        0x0001: "TLS_RSA_WITH_NULL_MD5",
        0x0002: "TLS_RSA_WITH_NULL_SHA",
        0x0004: "TLS_RSA_WITH_RC4_128_MD5",
        0x0005: "TLS_RSA_WITH_RC4_128_SHA",
        0x000A: "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        0x0013: "TLS_DHE_DSS_WITH_3DES_EDE_CBC_SHA",
        0x0016: "TLS_DHE_RSA_WITH_3DES_EDE_CBC_SHA",
        0x002C: "TLS_PSK_WITH_NULL_SHA",
        0x002D: "TLS_DHE_PSK_WITH_NULL_SHA",
        0x002E: "TLS_RSA_PSK_WITH_NULL_SHA",
        0x002F: "TLS_RSA_WITH_AES_128_CBC_SHA",
        0x0032: "TLS_DHE_DSS_WITH_AES_128_CBC_SHA",
        0x0033: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
        0x0034: "TLS_DH_anon_WITH_AES_128_CBC_SHA",
        0x0035: "TLS_RSA_WITH_AES_256_CBC_SHA",
        0x0038: "TLS_DHE_DSS_WITH_AES_256_CBC_SHA",
        0x0039: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
        0x003A: "TLS_DH_anon_WITH_AES_256_CBC_SHA",
        0x003B: "TLS_RSA_WITH_NULL_SHA256",
        0x003C: "TLS_RSA_WITH_AES_128_CBC_SHA256",
        0x003D: "TLS_RSA_WITH_AES_256_CBC_SHA256",
        0x0040: "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256",
        0x0041: "TLS_RSA_WITH_CAMELLIA_128_CBC_SHA",
        0x0044: "TLS_DHE_DSS_WITH_CAMELLIA_128_CBC_SHA",
        0x0045: "TLS_DHE_RSA_WITH_CAMELLIA_128_CBC_SHA",
        0x0046: "TLS_DH_anon_WITH_CAMELLIA_128_CBC_SHA",
        0x0067: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
        0x006A: "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256",
        0x006B: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
        0x006C: "TLS_DH_anon_WITH_AES_128_CBC_SHA256",
        0x006D: "TLS_DH_anon_WITH_AES_256_CBC_SHA256",
        0x0084: "TLS_RSA_WITH_CAMELLIA_256_CBC_SHA",
        0x0087: "TLS_DHE_DSS_WITH_CAMELLIA_256_CBC_SHA",
        0x0088: "TLS_DHE_RSA_WITH_CAMELLIA_256_CBC_SHA",
        0x0089: "TLS_DH_anon_WITH_CAMELLIA_256_CBC_SHA",
        0x008C: "TLS_PSK_WITH_AES_128_CBC_SHA",
        0x008D: "TLS_PSK_WITH_AES_256_CBC_SHA",
        0x0090: "TLS_DHE_PSK_WITH_AES_128_CBC_SHA",
        0x0091: "TLS_DHE_PSK_WITH_AES_256_CBC_SHA",
        0x0094: "TLS_RSA_PSK_WITH_AES_128_CBC_SHA",
        0x0095: "TLS_RSA_PSK_WITH_AES_256_CBC_SHA",
        0x009C: "TLS_RSA_WITH_AES_128_GCM_SHA256",
        0x009D: "TLS_RSA_WITH_AES_256_GCM_SHA384",
        0x009E: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        0x009F: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        0x00A2: "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256",
        0x00A3: "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384",
        0x00A6: "TLS_DH_anon_WITH_AES_128_GCM_SHA256",
        0x00A7: "TLS_DH_anon_WITH_AES_256_GCM_SHA384",
        0x00A8: "TLS_PSK_WITH_AES_128_GCM_SHA256",
        0x00A9: "TLS_PSK_WITH_AES_256_GCM_SHA384",
        0x00AA: "TLS_DHE_PSK_WITH_AES_128_GCM_SHA256",
        0x00AB: "TLS_DHE_PSK_WITH_AES_256_GCM_SHA384",
        0x00AC: "TLS_RSA_PSK_WITH_AES_128_GCM_SHA256",
        0x00AD: "TLS_RSA_PSK_WITH_AES_256_GCM_SHA384",
        0x00AE: "TLS_PSK_WITH_AES_128_CBC_SHA256",
        0x00AF: "TLS_PSK_WITH_AES_256_CBC_SHA384",
        0x00B0: "TLS_PSK_WITH_NULL_SHA256",
        0x00B1: "TLS_PSK_WITH_NULL_SHA384",
        0x00B2: "TLS_DHE_PSK_WITH_AES_128_CBC_SHA256",
        0x00B3: "TLS_DHE_PSK_WITH_AES_256_CBC_SHA384",
        0x00B4: "TLS_DHE_PSK_WITH_NULL_SHA256",
        0x00B5: "TLS_DHE_PSK_WITH_NULL_SHA384",
        0x00B6: "TLS_RSA_PSK_WITH_AES_128_CBC_SHA256",
        0x00B7: "TLS_RSA_PSK_WITH_AES_256_CBC_SHA384",
        0x00B8: "TLS_RSA_PSK_WITH_NULL_SHA256",
        0x00B9: "TLS_RSA_PSK_WITH_NULL_SHA384",
        0x00BA: "TLS_RSA_WITH_CAMELLIA_128_CBC_SHA256",
        0x00BD: "TLS_DHE_DSS_WITH_CAMELLIA_128_CBC_SHA256",
        0x00BE: "TLS_DHE_RSA_WITH_CAMELLIA_128_CBC_SHA256",
        0x00BF: "TLS_DH_anon_WITH_CAMELLIA_128_CBC_SHA256",
        0x00C0: "TLS_RSA_WITH_CAMELLIA_256_CBC_SHA256",
        0x00C3: "TLS_DHE_DSS_WITH_CAMELLIA_256_CBC_SHA256",
        0x00C4: "TLS_DHE_RSA_WITH_CAMELLIA_256_CBC_SHA256",
        0x00C5: "TLS_DH_anon_WITH_CAMELLIA_256_CBC_SHA256",
        0x00FF: "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
        0x1301: "TLS_AES_128_GCM_SHA256",
        0x1302: "TLS_AES_256_GCM_SHA384",
        0x1303: "TLS_CHACHA20_POLY1305_SHA256",
        0x1304: "TLS_AES_128_CCM_SHA256",
        0x1305: "TLS_AES_128_CCM_8_SHA256",
        0x5600: "TLS_FALLBACK_SCSV",
        0xC006: "TLS_ECDHE_ECDSA_WITH_NULL_SHA",
        0xC007: "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
        0xC008: "TLS_ECDHE_ECDSA_WITH_3DES_EDE_CBC_SHA",
        0xC009: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        0xC00A: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        0xC010: "TLS_ECDHE_RSA_WITH_NULL_SHA",
        0xC011: "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
        0xC012: "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
        0xC013: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        0xC014: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        0xC015: "TLS_ECDH_anon_WITH_NULL_SHA",
        0xC018: "TLS_ECDH_anon_WITH_AES_128_CBC_SHA",
        0xC019: "TLS_ECDH_anon_WITH_AES_256_CBC_SHA",
        0xC01D: "TLS_SRP_SHA_WITH_AES_128_CBC_SHA",
        0xC01E: "TLS_SRP_SHA_RSA_WITH_AES_128_CBC_SHA",
        0xC01F: "TLS_SRP_SHA_DSS_WITH_AES_128_CBC_SHA",
        0xC020: "TLS_SRP_SHA_WITH_AES_256_CBC_SHA",
        0xC021: "TLS_SRP_SHA_RSA_WITH_AES_256_CBC_SHA",
        0xC022: "TLS_SRP_SHA_DSS_WITH_AES_256_CBC_SHA",
        0xC023: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        0xC024: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
        0xC027: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        0xC028: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
        0xC02B: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        0xC02C: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xC02F: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        0xC030: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        0xC035: "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA",
        0xC036: "TLS_ECDHE_PSK_WITH_AES_256_CBC_SHA",
        0xC037: "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256",
        0xC038: "TLS_ECDHE_PSK_WITH_AES_256_CBC_SHA384",
        0xC039: "TLS_ECDHE_PSK_WITH_NULL_SHA",
        0xC03A: "TLS_ECDHE_PSK_WITH_NULL_SHA256",
        0xC03B: "TLS_ECDHE_PSK_WITH_NULL_SHA384",
        0xC050: "TLS_RSA_WITH_ARIA_128_GCM_SHA256",
        0xC051: "TLS_RSA_WITH_ARIA_256_GCM_SHA384",
        0xC052: "TLS_DHE_RSA_WITH_ARIA_128_GCM_SHA256",
        0xC053: "TLS_DHE_RSA_WITH_ARIA_256_GCM_SHA384",
        0xC056: "TLS_DHE_DSS_WITH_ARIA_128_GCM_SHA256",
        0xC057: "TLS_DHE_DSS_WITH_ARIA_256_GCM_SHA384",
        0xC05C: "TLS_ECDHE_ECDSA_WITH_ARIA_128_GCM_SHA256",
        0xC05D: "TLS_ECDHE_ECDSA_WITH_ARIA_256_GCM_SHA384",
        0xC060: "TLS_ECDHE_RSA_WITH_ARIA_128_GCM_SHA256",
        0xC061: "TLS_ECDHE_RSA_WITH_ARIA_256_GCM_SHA384",
        0xC06A: "TLS_PSK_WITH_ARIA_128_GCM_SHA256",
        0xC06B: "TLS_PSK_WITH_ARIA_256_GCM_SHA384",
        0xC06C: "TLS_DHE_PSK_WITH_ARIA_128_GCM_SHA256",
        0xC06D: "TLS_DHE_PSK_WITH_ARIA_256_GCM_SHA384",
        0xC06E: "TLS_RSA_PSK_WITH_ARIA_128_GCM_SHA256",
        0xC06F: "TLS_RSA_PSK_WITH_ARIA_256_GCM_SHA384",
        0xC072: "TLS_ECDHE_ECDSA_WITH_CAMELLIA_128_CBC_SHA256",
        0xC073: "TLS_ECDHE_ECDSA_WITH_CAMELLIA_256_CBC_SHA384",
        0xC076: "TLS_ECDHE_RSA_WITH_CAMELLIA_128_CBC_SHA256",
        0xC077: "TLS_ECDHE_RSA_WITH_CAMELLIA_256_CBC_SHA384",
        0xC094: "TLS_PSK_WITH_CAMELLIA_128_CBC_SHA256",
        0xC095: "TLS_PSK_WITH_CAMELLIA_256_CBC_SHA384",
        0xC096: "TLS_DHE_PSK_WITH_CAMELLIA_128_CBC_SHA256",
        0xC097: "TLS_DHE_PSK_WITH_CAMELLIA_256_CBC_SHA384",
        0xC098: "TLS_RSA_PSK_WITH_CAMELLIA_128_CBC_SHA256",
        0xC099: "TLS_RSA_PSK_WITH_CAMELLIA_256_CBC_SHA384",
        0xC09A: "TLS_ECDHE_PSK_WITH_CAMELLIA_128_CBC_SHA256",
        0xC09B: "TLS_ECDHE_PSK_WITH_CAMELLIA_256_CBC_SHA384",
        0xC09C: "TLS_RSA_WITH_AES_128_CCM",
        0xC09D: "TLS_RSA_WITH_AES_256_CCM",
        0xC09E: "TLS_DHE_RSA_WITH_AES_128_CCM",
        0xC09F: "TLS_DHE_RSA_WITH_AES_256_CCM",
        0xC0A0: "TLS_RSA_WITH_AES_128_CCM_8",
        0xC0A1: "TLS_RSA_WITH_AES_256_CCM_8",
        0xC0A2: "TLS_DHE_RSA_WITH_AES_128_CCM_8",
        0xC0A3: "TLS_DHE_RSA_WITH_AES_256_CCM_8",
        0xC0A4: "TLS_PSK_WITH_AES_128_CCM",
        0xC0A5: "TLS_PSK_WITH_AES_256_CCM",
        0xC0A6: "TLS_DHE_PSK_WITH_AES_128_CCM",
        0xC0A7: "TLS_DHE_PSK_WITH_AES_256_CCM",
        0xC0A8: "TLS_PSK_WITH_AES_128_CCM_8",
        0xC0A9: "TLS_PSK_WITH_AES_256_CCM_8",
        0xC0AA: "TLS_PSK_DHE_WITH_AES_128_CCM_8",
        0xC0AB: "TLS_PSK_DHE_WITH_AES_256_CCM_8",
        0xC0AC: "TLS_ECDHE_ECDSA_WITH_AES_128_CCM",
        0xC0AD: "TLS_ECDHE_ECDSA_WITH_AES_256_CCM",
        0xC0AE: "TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8",
        0xC0AF: "TLS_ECDHE_ECDSA_WITH_AES_256_CCM_8",
        0xCCA8: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0xCCA9: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        0xCCAA: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0xCCAB: "TLS_PSK_WITH_CHACHA20_POLY1305_SHA256",
        0xCCAC: "TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256",
        0xCCAD: "TLS_DHE_PSK_WITH_CHACHA20_POLY1305_SHA256",
        0xCCAE: "TLS_RSA_PSK_WITH_CHACHA20_POLY1305_SHA256",
    ]

    /// The supported groups registry (RFC 8422 §5.1.1 for the elliptic curves, RFC 7919 for ffdhe, RFC 8446 §4.2.7,
    /// and draft-ietf-tls-ecdhe-mlkem for the hybrid post-quantum groups OpenSSL 3.5 offers first).
    static let groups: [UInt16: String] = [
        1: "sect163k1", 2: "sect163r1", 3: "sect163r2", 4: "sect193r1", 5: "sect193r2", 6: "sect233k1",
        7: "sect233r1", 8: "sect239k1", 9: "sect283k1", 10: "sect283r1", 11: "sect409k1", 12: "sect409r1",
        13: "sect571k1", 14: "sect571r1", 15: "secp160k1", 16: "secp160r1", 17: "secp160r2", 18: "secp192k1",
        19: "secp192r1", 20: "secp224k1", 21: "secp224r1", 22: "secp256k1", 23: "secp256r1", 24: "secp384r1",
        25: "secp521r1", 26: "brainpoolP256r1", 27: "brainpoolP384r1", 28: "brainpoolP512r1", 29: "x25519",
        30: "x448", 31: "brainpoolP256r1tls13", 32: "brainpoolP384r1tls13", 33: "brainpoolP512r1tls13",
        256: "ffdhe2048", 257: "ffdhe3072", 258: "ffdhe4096", 259: "ffdhe6144", 260: "ffdhe8192",
        512: "MLKEM512", 513: "MLKEM768", 514: "MLKEM1024",
        0x11EB: "SecP256r1MLKEM768", 0x11EC: "X25519MLKEM768", 0x11ED: "SecP384r1MLKEM1024",
        0x6399: "X25519Kyber768Draft00",
    ]

    /// The signature schemes registry (RFC 8446 §4.2.3; RFC 8734 for the brainpool schemes). TLS 1.2's
    /// hash-and-signature pairs that TLS 1.3 did not name (SHA-224, DSA) print as numbers.
    static let signatureSchemes: [UInt16: String] = [
        0x0201: "rsa_pkcs1_sha1", 0x0203: "ecdsa_sha1",
        0x0401: "rsa_pkcs1_sha256", 0x0501: "rsa_pkcs1_sha384", 0x0601: "rsa_pkcs1_sha512",
        0x0403: "ecdsa_secp256r1_sha256", 0x0503: "ecdsa_secp384r1_sha384", 0x0603: "ecdsa_secp521r1_sha512",
        0x0804: "rsa_pss_rsae_sha256", 0x0805: "rsa_pss_rsae_sha384", 0x0806: "rsa_pss_rsae_sha512",
        0x0807: "ed25519", 0x0808: "ed448",
        0x0809: "rsa_pss_pss_sha256", 0x080A: "rsa_pss_pss_sha384", 0x080B: "rsa_pss_pss_sha512",
        0x081A: "ecdsa_brainpoolP256r1tls13_sha256", 0x081B: "ecdsa_brainpoolP384r1tls13_sha384",
        0x081C: "ecdsa_brainpoolP512r1tls13_sha512",
    ]

    /// The ExtensionType values registry: the extensions clients send today (RFC 6066, 7301, 7627, 8446, 8449,
    /// 8879, and the ECH and ALPS drafts Chrome sends).
    static let extensions: [UInt16: String] = [
        0: "server_name", 1: "max_fragment_length", 5: "status_request", 10: "supported_groups",
        11: "ec_point_formats", 13: "signature_algorithms", 14: "use_srtp", 15: "heartbeat",
        16: "application_layer_protocol_negotiation", 17: "status_request_v2", 18: "signed_certificate_timestamp",
        21: "padding", 22: "encrypt_then_mac", 23: "extended_master_secret", 27: "compress_certificate",
        28: "record_size_limit", 35: "session_ticket", 41: "pre_shared_key", 42: "early_data",
        43: "supported_versions", 44: "cookie", 45: "psk_key_exchange_modes", 47: "certificate_authorities",
        48: "oid_filters", 49: "post_handshake_auth", 50: "signature_algorithms_cert", 51: "key_share",
        57: "quic_transport_parameters", 0x3374: "next_protocol_negotiation", 0x4469: "application_settings",
        0xFE0D: "encrypted_client_hello", 0xFF01: "renegotiation_info",
    ]
}
