import COpenSSL

/// IANA suite names (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`, what Apple documents) ↔ OpenSSL names
/// (`ECDHE-RSA-AES128-GCM-SHA256`, what cipher strings take), for every suite the linked OpenSSL knows.
package enum CipherNames {
    private static let table: (ianaToOpenSSL: [String: String], tls13: Set<String>) = {
        var map: [String: String] = [:]
        var tls13: Set<String> = []
        guard let ctx = SSL_CTX_new(TLS_method()) else { return ([:], []) }
        defer { SSL_CTX_free(ctx) }
        SSL_CTX_set_security_level(ctx, 0)
        _ = SSL_CTX_set_cipher_list(ctx, "ALL:eNULL:@SECLEVEL=0")
        if let stack = SSL_CTX_get_ciphers(ctx) {
            for index in 0..<OPENSSL_sk_num(stack) {
                guard let raw = OPENSSL_sk_value(stack, index) else { continue }
                let cipher = OpaquePointer(raw)
                guard let standard = SSL_CIPHER_standard_name(cipher) else { continue }
                let iana = String(cString: standard)
                map[iana] = String(cString: SSL_CIPHER_get_name(cipher))
                if String(cString: SSL_CIPHER_get_version(cipher)) == "TLSv1.3" { tls13.insert(iana) }
            }
        }
        OpenSSLError.clearQueue()
        return (map, tls13)
    }()

    /// The OpenSSL name of an IANA suite, nil when the linked OpenSSL does not have it (3DES, RC4 on most builds).
    public static func openSSLName(iana: String) -> String? { table.ianaToOpenSSL[iana] }

    package static func isTLS13(iana: String) -> Bool { table.tls13.contains(iana) }

    /// The IANA name of an OpenSSL suite name, nil when the linked OpenSSL does not have it.
    package static func ianaName(openSSL name: String) -> String? {
        table.ianaToOpenSSL.first { $0.value == name }?.key
    }

    /// The TLS 1.2-and-older suites an OpenSSL cipher string selects at security level 0, as IANA names (what a
    /// server configured with it accepts when the linked OpenSSL has them); nil when the string selects nothing.
    package static func ianaSuites(cipherString: String) -> [String]? {
        guard let ctx = SSL_CTX_new(TLS_method()) else { return nil }
        defer { SSL_CTX_free(ctx) }
        defer { OpenSSLError.clearQueue() }
        SSL_CTX_set_security_level(ctx, 0)
        guard SSL_CTX_set_cipher_list(ctx, cipherString) == 1, let stack = SSL_CTX_get_ciphers(ctx) else { return nil }
        var suites: [String] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let raw = OPENSSL_sk_value(stack, index), let standard = SSL_CIPHER_standard_name(OpaquePointer(raw))
            else { continue }
            let iana = String(cString: standard)
            if !table.tls13.contains(iana) { suites.append(iana) }
        }
        return suites.isEmpty ? nil : suites
    }

    /// An OpenSSL cipher string offering exactly `suites` (TLS ≤ 1.2), or nil when none is available.
    public static func cipherString(iana suites: [String]) -> String? {
        let names = suites.compactMap(openSSLName(iana:)).filter { !$0.hasPrefix("TLS_") }
        return names.isEmpty ? nil : names.joined(separator: ":") + ":@SECLEVEL=0"
    }
}
