import COpenSSL

/// Verification outside the handshake, so the probe can report results a strict client would have aborted on.
enum ChainVerifier {
    static func verify(chain: [Certificate], roots: [Certificate]?, host: String?, securityLevel: Int, purpose: Bool) -> VerifyOutcome {
        let (error, _) = run(chain: chain, roots: roots, host: host, securityLevel: securityLevel, purpose: purpose)
        return VerifyOutcome(host: host, securityLevel: securityLevel, error: error)
    }

    static func trust(chain: [Certificate], roots: [Certificate]?, anchor: TrustAnchorKind) -> TrustFacts {
        let (error, verified) = run(chain: chain, roots: roots, host: nil, securityLevel: 0, purpose: false)
        return TrustFacts(chainError: error, verifiedChain: verified.map(\.facts), anchor: anchor)
    }

    /// The path OpenSSL builds from the leaf to a root (possibly partial), leaf first.
    static func verifiedChain(chain: [Certificate], roots: [Certificate]?) -> [Certificate] {
        run(chain: chain, roots: roots, host: nil, securityLevel: 0, purpose: false).1
    }

    private static func run(chain: [Certificate], roots: [Certificate]?, host: String?, securityLevel: Int, purpose: Bool) -> (VerifyError?, [Certificate]) {
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
            if IPAddress.parse(host) != nil { _ = X509_VERIFY_PARAM_set1_ip_asc(parameters, host) }
            else { _ = X509_VERIFY_PARAM_set1_host(parameters, host, 0) }
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
        return (VerifyError(code: code, text: String(cString: X509_verify_cert_error_string(Int(code))),
                            depth: Int(X509_STORE_CTX_get_error_depth(context))), verified)
    }
}
