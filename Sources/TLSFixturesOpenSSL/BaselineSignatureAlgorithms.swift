import COpenSSL

/// Keeps a weakened server's *handshake* signature algorithms where the baseline has them.
///
/// A scenario lowers OpenSSL's security level to present one weak thing (a SHA-1 or MD5 certificate, a 512-bit key,
/// a 1024-bit DH group, TLS 1.0). The level also decides which signature algorithms the server will sign the
/// handshake with, so at level 0 a server that claims only "the leaf is signed with SHA-1" would also sign
/// ServerKeyExchange / CertificateVerify with SHA-1 for a client that offers only that (`openssl s_client -sigalgs
/// RSA+SHA1`) — a second, unclaimed difference from the baseline, which refuses (sslyze and testssl.sh report it).
///
/// So a server context below the baseline's level gets a security callback that answers the signature-algorithm
/// questions (`SSL_SECOP_OTHER_SIGALG`) exactly as a context at the library's default level answers them — it asks
/// OpenSSL's own default callback, on a pristine context — and every other question as its own level does.
/// TLS 1.0 and 1.1 have no signature-algorithm negotiation: their servers sign with MD5+SHA-1 (RSA) or SHA-1 (ECDSA),
/// full stop, so a scenario that serves those versions necessarily signs that way, and this leaves them alone.
enum BaselineSignatureAlgorithms {
    /// A context nobody configures: its level and callback are what the baseline scenario gets.
    private final class Pristine: @unchecked Sendable {
        let context: OpaquePointer?
        init() { context = SSL_CTX_new(TLS_server_method()) }
    }
    private static let pristine = Pristine()

    /// The security level a context gets by default (OpenSSL's build default, or the system configuration's).
    static var baselineLevel: Int { pristine.context.map { Int(SSL_CTX_get_security_level($0)) } ?? 1 }

    /// Installs the callback on a server context whose level is below the baseline. Call before adding certificates.
    static func apply(to context: OpaquePointer, level: Int) {
        guard level < baselineLevel, let pristine = pristine.context else { return }
        SSL_CTX_set0_security_ex_data(context, UnsafeMutableRawPointer(pristine))
        SSL_CTX_set_security_callback(context) { ssl, ctx, op, bits, nid, other, ex in
            let isSignatureAlgorithm = op & shim_SSL_SECOP_OTHER_TYPE() == shim_SSL_SECOP_OTHER_SIGALG()
            let level = ssl.map { SSL_get_security_level($0) } ?? ctx.map { SSL_CTX_get_security_level($0) } ?? 0
            guard let ex, let judge = SSL_CTX_get_security_callback(OpaquePointer(ex)) else { return 1 }
            if isSignatureAlgorithm {
                // Before TLS 1.2 the algorithm is fixed by the protocol (see above).
                if let ssl, SSL_version(ssl) < TLS1_2_VERSION { return 1 }
                return judge(nil, OpaquePointer(ex), op, bits, nid, other, nil)
            }
            // Level 0 admits everything, including the DH groups under 1024 bits OpenSSL's default callback still
            // refuses there: this context exists to present weak parameters.
            if level == 0 { return 1 }
            return judge(ssl, ctx, op, bits, nid, other, nil)
        }
    }
}
