import COpenSSL

/// Chain verification outside a handshake, so the probe can report results a strict client would have aborted on: an
/// `X509_STORE` of the given roots and an `X509_STORE_CTX` over the chain as sent, both freed here.
package enum ChainVerifier {
    /// OpenSSL's verify error, in its words.
    package struct Failure: Equatable {
        package var code: Int32
        package var text: String
        /// Depth in the chain at which it was found (0 = leaf).
        package var depth: Int
    }

    /// Verifies `chain` (leaf first) against `roots` (nil: OpenSSL's default store) at OpenSSL auth level
    /// `securityLevel`, checking `host` when given and the sslserver purpose when `purpose`. Returns OpenSSL's error
    /// (nil when the chain verified) and the path it built, possibly partial, leaf first.
    package static func run(chain: [Certificate], roots: [Certificate]?, host: String?, securityLevel: Int,
                            purpose: Bool) -> (Failure?, [Certificate]) {
        guard let leaf = chain.first, let store = X509_STORE_new() else { return (nil, []) }
        defer { X509_STORE_free(store) }
        if let roots {
            for root in roots { _ = X509_STORE_add_cert(store, root.pointer) }
        } else {
            _ = X509_STORE_set_default_paths(store)
        }
        guard let untrusted = shim_sk_X509_new_null(), let context = X509_STORE_CTX_new() else { return (nil, []) }
        defer { shim_sk_X509_free(untrusted); X509_STORE_CTX_free(context) }
        for certificate in chain.dropFirst() { _ = shim_sk_X509_push(untrusted, certificate.pointer) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else { return (nil, []) }
        // "ssl_server": the purpose and trust settings libssl applies when a client verifies a server.
        if purpose { _ = X509_STORE_CTX_set_default(context, "ssl_server") }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_auth_level(parameters, Int32(securityLevel))
        if let host {
            // An IP address literal is checked against IP SANs (set1_ip_asc refuses anything else); a name, against DNS.
            if X509_VERIFY_PARAM_set1_ip_asc(parameters, host) != 1 { _ = X509_VERIFY_PARAM_set1_host(parameters, host, 0) }
        }
        OpenSSLError.clearQueue()
        let ok = X509_verify_cert(context) == 1
        var verified: [Certificate] = []
        if let built = X509_STORE_CTX_get0_chain(context) {
            verified = (0..<shim_sk_X509_num(built)).compactMap { shim_sk_X509_value(built, $0).flatMap { try? Certificate(retaining: $0) } }
        }
        OpenSSLError.clearQueue()
        if ok { return (nil, verified) }
        let code = X509_STORE_CTX_get_error(context)
        return (Failure(code: code, text: String(cString: X509_verify_cert_error_string(Int(code))),
                            depth: Int(X509_STORE_CTX_get_error_depth(context))), verified)
    }
}
