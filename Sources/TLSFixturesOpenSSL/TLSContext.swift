import COpenSSL
import Foundation
import TLSFixturesWire

/// The TLS knobs of one server or client context, in OpenSSL's own vocabulary.
package struct TLSSettings: Sendable, Equatable {
    package var minVersion: TLSVersion
    package var maxVersion: TLSVersion
    /// OpenSSL cipher string for TLS 1.2 and older (`ECDHE+AESGCM`); nil keeps OpenSSL's default.
    public var ciphers: String?
    /// TLS 1.3 suites (`TLS_AES_128_GCM_SHA256:…`); nil keeps OpenSSL's default.
    public var tls13Suites: String?
    /// OpenSSL security level for this context only (0 admits TLS 1.0, SHA-1, small keys). nil keeps the default.
    public var securityLevel: Int?
    /// Key-exchange groups (`X25519:P-256`); nil keeps the default.
    public var groups: String?
    package var dhParameters: DHParameterChoice
    /// A server picks the suite from its own list rather than the client's (SSL_OP_CIPHER_SERVER_PREFERENCE).
    public var serverPreference: Bool

    package init(minVersion: TLSVersion = .tls1_2, maxVersion: TLSVersion = .tls1_3, ciphers: String? = nil,
                tls13Suites: String? = nil, securityLevel: Int? = nil, groups: String? = nil,
                dhParameters: DHParameterChoice = .none, serverPreference: Bool = true) {
        self.minVersion = minVersion; self.maxVersion = maxVersion; self.ciphers = ciphers
        self.tls13Suites = tls13Suites; self.securityLevel = securityLevel; self.groups = groups
        self.dhParameters = dhParameters; self.serverPreference = serverPreference
    }
}

/// Finite-field DH for DHE suites.
package enum DHParameterChoice: Sendable, Equatable {
    /// No DHE: DHE suites cannot be negotiated.
    case none
    /// OpenSSL picks an RFC 7919 group matching the certificate's strength (`SSL_CTX_set_dh_auto`).
    case automatic
    /// Exactly these parameters.
    case explicit(DHParameters)
}

/// A TLS context that cannot be served by the linked OpenSSL, with the reason in OpenSSL's words.
package struct UnsupportedByOpenSSL: CodedError {
    package typealias Code = ErrorCode<UnsupportedByOpenSSL>

    package var code: Code { .unsupported }
    /// OpenSSL's side of it (`no cipher match`), without the version.
    package let detail: String

    package init(_ detail: String) { self.detail = detail }

    package var reason: String { "unsupported by the linked OpenSSL (\(LinkedOpenSSL.versionText)): \(detail)" }
    /// `ScenarioUnsupported` says what serves such a scenario anyway.
    package var fix: String? { nil }
}

extension ErrorCode where Owner == UnsupportedByOpenSSL {
    package static var unsupported: Self { Self("unsupported") }
}

/// Owns one OpenSSL `SSL_CTX`.
///
/// Configured once in `init`, then only used to create `SSL` objects; OpenSSL documents `SSL_new` on a shared,
/// no-longer-modified context as thread-safe, hence `@unchecked Sendable`.
public final class TLSContext: @unchecked Sendable {
    package let pointer: OpaquePointer
    /// Bits of explicitly configured DH parameters (nil when none or automatic).
    let dhBits: Int?
    /// Kept alive for OpenSSL's status callback (`staple(_:)`); set once, before the context is shared.
    var stapleSource: OCSPStapler?
    /// Suites the cipher string names one by one that the linked OpenSSL does not have (Mozilla's `old` list names
    /// DES-CBC3-SHA, which builds without weak ciphers leave out): said, never silently dropped.
    public private(set) var unavailableCipherNames: [String] = []
    /// Key-exchange groups the group list names that the linked OpenSSL does not know (Mozilla's 6.0 lists put
    /// X25519MLKEM768, which arrived with OpenSSL 3.5, first): left out of the list and said, as unavailable suites are.
    public private(set) var unavailableGroupNames: [String] = []

    deinit { SSL_CTX_free(pointer) }

    /// The ALPN protocols a fixture offers, in OpenSSL's length-prefixed wire form.
    static let alpnHTTP11: [UInt8] = [8] + Array("http/1.1".utf8)

    /// Made in OpenSSL's legacy-provider library context (`LegacyProviders`): RC4 needs it in OpenSSL 3.
    public let usesLegacyProvider: Bool

    private init(method: OpaquePointer?, settings: TLSSettings, library: OpaquePointer? = nil) throws {
        OpenSSLError.clearQueue()
        pointer = try checkNotNull(library.map { SSL_CTX_new_ex($0, nil, method) } ?? SSL_CTX_new(method), "create a TLS context")
        usesLegacyProvider = library != nil
        if case .explicit(let parameters) = settings.dhParameters { dhBits = parameters.bits } else { dhBits = nil }
        // The security level goes first: OpenSSL checks keys, DH groups and chain certificates against it
        // as they are added (a 512-bit DH group is refused at the default level with "dh key too small").
        if let level = settings.securityLevel {
            SSL_CTX_set_security_level(pointer, Int32(level))
            if level == 0 {
                // Level 0 still refuses DH groups under 1024 bits (a floor hard-wired in OpenSSL's default security
                // callback). This context exists to present weak parameters, so at level 0 it admits everything.
                SSL_CTX_set_security_callback(pointer) { _, _, _, _, _, _, _ in 1 }
            }
        }
        try applyVersions(settings)
        try applyCiphers(settings)
        if let groups = settings.groups { try applyGroups(groups) }
        switch settings.dhParameters {
        case .none: break
        case .automatic:
            try checkOne(shim_SSL_CTX_set_dh_auto(pointer, 1), "enable automatic DH parameters")
        case .explicit(let parameters):
            // set0 takes ownership of one reference on success.
            let copy = try parameters.retainedPointer()
            if SSL_CTX_set0_tmp_dh_pkey(pointer, copy) != 1 {
                EVP_PKEY_free(copy)
                throw OpenSSLError.drain("use the \(parameters.bits)-bit DH parameters")
            }
        }
        // Renegotiation is never a fixture feature, and the client side of it is a well-known DoS lever.
        _ = SSL_CTX_set_options(pointer, shim_SSL_OP_NO_RENEGOTIATION | shim_SSL_OP_NO_COMPRESSION)
        _ = shim_SSL_CTX_set_mode(pointer, shim_SSL_MODE_RELEASE_BUFFERS | shim_SSL_MODE_ENABLE_PARTIAL_WRITE
                                    | shim_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
    }

    private func applyVersions(_ settings: TLSSettings) throws {
        guard settings.minVersion <= settings.maxVersion else {
            throw OpenSSLError(operation: "set the protocol range", reasons: ["minimum \(settings.minVersion) is above maximum \(settings.maxVersion)"])
        }
        try checkOne(shim_SSL_CTX_set_min_proto_version(pointer, settings.minVersion.openSSLValue), "set the minimum protocol to \(settings.minVersion)")
        try checkOne(shim_SSL_CTX_set_max_proto_version(pointer, settings.maxVersion.openSSLValue), "set the maximum protocol to \(settings.maxVersion)")
    }

    private func applyCiphers(_ settings: TLSSettings) throws {
        if let ciphers = settings.ciphers {
            if SSL_CTX_set_cipher_list(pointer, ciphers) != 1 {
                let reasons = OpenSSLError.drainReasons()
                if reasons.contains(where: { $0.contains("no cipher match") }) && settings.minVersion < .tls1_3 {
                    throw UnsupportedByOpenSSL("no cipher in \"\(ciphers)\" is available (OpenSSL reports: no cipher match)")
                }
                throw OpenSSLError(operation: "set the cipher list \"\(ciphers)\"", reasons: reasons)
            }
        }
        if let suites = settings.tls13Suites {
            try checkOne(SSL_CTX_set_ciphersuites(pointer, suites), "set the TLS 1.3 suites \"\(suites)\"")
        }
        if let ciphers = settings.ciphers {
            let available = Set(cipherNames)
            // Single suites are spelled like DES-CBC3-SHA; keywords (ALL, ECDHE, kEDH) and operators (!, +, @) are not.
            unavailableCipherNames = ciphers.split(separator: ":").map(String.init).filter { token in
                token.contains("-") && token.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "-" } && !available.contains(token)
            }
        }
    }

    /// Sets the key-exchange groups. When OpenSSL refuses the list, each name is tried alone: those it does not know are
    /// left out and listed in `unavailableGroupNames`, the rest set in their order; a list with none it knows is
    /// unsupported, and a list that fails although every name is known is an error in OpenSSL's words.
    private func applyGroups(_ groups: String) throws {
        if shim_SSL_CTX_set1_groups_list(pointer, groups) == 1 { return }
        let refusal = OpenSSLError.drainReasons()
        let names = groups.split(separator: ":").map(String.init)
        let unknown = names.filter { name in
            let known = shim_SSL_CTX_set1_groups_list(pointer, name) == 1
            OpenSSLError.clearQueue()
            return !known
        }
        let known = names.filter { !unknown.contains($0) }
        guard !unknown.isEmpty else {
            throw OpenSSLError(operation: "set the key-exchange groups \"\(groups)\"", reasons: refusal)
        }
        guard !known.isEmpty else {
            throw UnsupportedByOpenSSL("no key-exchange group in \"\(groups)\" is available")
        }
        try checkOne(shim_SSL_CTX_set1_groups_list(pointer, known.joined(separator: ":")),
                     "set the key-exchange groups \"\(known.joined(separator: ":"))\"")
        unavailableGroupNames = unknown
    }

    /// The OpenSSL names of every suite this context may negotiate, TLS 1.3 ones included, in preference order.
    var cipherNames: [String] {
        guard let list = SSL_CTX_get_ciphers(pointer) else { return [] }
        return (0..<OPENSSL_sk_num(list)).compactMap { index in
            OPENSSL_sk_value(list, index).map { String(cString: SSL_CIPHER_get_name(OpaquePointer($0))) }
        }
    }

    // MARK: Server

    /// A server context presenting `certificate` with `chain` (intermediates, possibly a root) after it. Settings the
    /// default providers cannot serve are tried once more with OpenSSL's legacy provider loaded for this context only
    /// (OpenSSL 3 keeps RC4 there); if that cannot serve them either, the first reason is thrown.
    package static func server(settings: TLSSettings, certificate: Certificate, key: PrivateKey, chain: [Certificate],
                              clientCARoots: [Certificate]? = nil) throws -> TLSContext {
        do {
            return try server(settings: settings, certificate: certificate, key: key, chain: chain, clientCARoots: clientCARoots, library: nil)
        } catch let unsupported as UnsupportedByOpenSSL {
            guard let legacy = LegacyProviders.libraryContext else { throw unsupported }
            do {
                return try server(settings: settings, certificate: certificate, key: key, chain: chain, clientCARoots: clientCARoots,
                                  library: legacy)
            } catch is UnsupportedByOpenSSL {
                throw unsupported
            }
        }
    }

    private static func server(settings: TLSSettings, certificate: Certificate, key: PrivateKey, chain: [Certificate],
                               clientCARoots: [Certificate]?, library: OpaquePointer?) throws -> TLSContext {
        let context = try TLSContext(method: TLS_server_method(), settings: settings, library: library)
        let ctx = context.pointer
        // A lower level admits the weak certificate or group the scenario is about, never weaker handshake signatures.
        if let level = settings.securityLevel { BaselineSignatureAlgorithms.apply(to: ctx, level: level) }
        if SSL_CTX_use_certificate(ctx, certificate.pointer) != 1 {
            throw OpenSSLError.drain("use the \(certificate.publicKey) certificate (a small key needs security level 0)")
        }
        try checkOne(SSL_CTX_use_PrivateKey(ctx, key.pointer), "use the private key")
        try checkOne(SSL_CTX_check_private_key(ctx), "match the private key to the certificate")
        for extra in chain {
            try checkOne(shim_SSL_CTX_add1_chain_cert(ctx, extra.pointer), "add \(extra.subject) to the chain sent")
        }
        // Every connection is a full handshake: a fixture exists to exercise certificate checks, which a
        // resumed session would skip. (It is also what the benchmark must count.)
        _ = shim_SSL_CTX_set_session_cache_mode(ctx, shim_SSL_SESS_CACHE_OFF)
        _ = SSL_CTX_set_options(ctx, shim_SSL_OP_NO_TICKET | (settings.serverPreference ? shim_SSL_OP_CIPHER_SERVER_PREFERENCE : 0))
        _ = SSL_CTX_set_num_tickets(ctx, 0)
        SSL_CTX_set_alpn_select_cb(ctx, { _, out, outLength, clientList, clientLength, _ in
            // Offer http/1.1 only; a client that asks for something else proceeds without ALPN. The client's list goes
            // first, so `selected` points into it (OpenSSL's buffer for the whole callback) rather than into a Swift
            // array's storage, which is only valid inside withUnsafeBufferPointer. With one protocol of ours, whose
            // preference order wins makes no difference.
            var selected: UnsafeMutablePointer<UInt8>? = nil
            let rc = TLSContext.alpnHTTP11.withUnsafeBufferPointer { ours in
                SSL_select_next_proto(&selected, outLength, clientList, clientLength, ours.baseAddress, UInt32(ours.count))
            }
            guard rc == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
            out?.pointee = UnsafePointer(selected)
            return SSL_TLSEXT_ERR_OK
        }, nil)
        if let roots = clientCARoots {
            try context.requireClientCertificates(issuedBy: roots)
        }
        // Every connection's ClientHello goes into its record (HandshakeObservations); the callback never refuses one.
        SSL_CTX_set_client_hello_cb(ctx, HandshakeObservations.clientHelloCallback, nil)
        try context.checkServable(settings)
        return context
    }

    private func requireClientCertificates(issuedBy roots: [Certificate]) throws {
        let store = try checkNotNull(SSL_CTX_get_cert_store(pointer), "get the certificate store")
        let names = try checkNotNull(shim_sk_X509_NAME_new_null(), "allocate the client CA list")
        var handedOver = false
        defer { if !handedOver { shim_sk_X509_NAME_pop_free(names) } }   // an error before the hand-over frees the list
        for root in roots {
            try checkOne(X509_STORE_add_cert(store, root.pointer), "trust \(root.subject) for client certificates")
            guard let name = X509_NAME_dup(X509_get_subject_name(root.pointer)) else { throw OpenSSLError.drain("copy a CA name") }
            guard shim_sk_X509_NAME_push(names, name) > 0 else {
                X509_NAME_free(name)
                throw OpenSSLError.drain("add \(root.subject) to the client CA list")
            }
        }
        SSL_CTX_set_client_CA_list(pointer, names)   // takes ownership
        handedOver = true
        SSL_CTX_set_verify(pointer, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
    }

    /// Throws `UnsupportedByOpenSSL` when the linked OpenSSL cannot serve `settings` at all. Needs no certificate, so
    /// callers can ask before generating any key.
    package static func checkSupport(_ settings: TLSSettings) throws {
        var bare = settings
        bare.dhParameters = .none
        do {
            let context = try TLSContext(method: TLS_server_method(), settings: bare)
            try context.checkServable(settings)
        } catch let unsupported as UnsupportedByOpenSSL {
            guard let legacy = LegacyProviders.libraryContext else { throw unsupported }
            do {
                let context = try TLSContext(method: TLS_server_method(), settings: bare, library: legacy)
                try context.checkServable(settings)
            } catch is UnsupportedByOpenSSL {
                throw unsupported
            }
        }
    }

    /// Proves that at least one cipher can be negotiated in the configured protocol range. OpenSSL accepts
    /// settings it cannot honour (SSLv3 on a `no-ssl3` build leaves zero usable suites), so this is checked
    /// from an `SSL` object — never assumed, and never silently replaced by something else.
    private func checkServable(_ settings: TLSSettings) throws {
        let ssl = try checkNotNull(SSL_new(pointer), "create a connection to self-check the context")
        defer { SSL_free(ssl) }
        guard let usable = SSL_get1_supported_ciphers(ssl) else {
            throw noUsableCipher(settings)
        }
        let count = OPENSSL_sk_num(usable)
        OPENSSL_sk_free(usable)
        if count <= 0 { throw noUsableCipher(settings) }
    }

    private func noUsableCipher(_ settings: TLSSettings) -> UnsupportedByOpenSSL {
        OpenSSLError.clearQueue()
        let range = settings.minVersion == settings.maxVersion ? "\(settings.minVersion)" : "\(settings.minVersion)–\(settings.maxVersion)"
        if settings.maxVersion == .ssl3 {
            return UnsupportedByOpenSSL("SSLv3 is not compiled in (built with no-ssl3), so no suite can be negotiated")
        }
        return UnsupportedByOpenSSL("no cipher suite in \"\(settings.ciphers ?? "DEFAULT")\" can be negotiated with \(range)")
    }

    // MARK: Client

    /// A client context. Verification runs after the handshake (see `TLSProbe`), so the handshake itself never
    /// aborts on a certificate problem and the probe can report every fact a server presents.
    /// A client context offering `alpn` (plain names, most preferred first). Everything is set here, before the context
    /// is shared: nothing changes it afterwards (the rule its `@unchecked Sendable` rests on).
    package static func client(settings: TLSSettings, clientCertificate: (Certificate, PrivateKey, [Certificate])? = nil,
                              maximumCertificateListBytes: Int? = nil, alpn: [String] = []) throws -> TLSContext {
        let context = try TLSContext(method: TLS_client_method(), settings: settings)
        SSL_CTX_set_verify(context.pointer, SSL_VERIFY_NONE, nil)
        if let maximumCertificateListBytes { _ = shim_SSL_CTX_set_max_cert_list(context.pointer, maximumCertificateListBytes) }
        if !alpn.isEmpty {
            let wire = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            // SSL_CTX_set_alpn_protos returns 0 on success.
            guard wire.withUnsafeBufferPointer({ SSL_CTX_set_alpn_protos(context.pointer, $0.baseAddress, UInt32($0.count)) }) == 0 else {
                throw OpenSSLError.drain("set the ALPN protocols \(alpn)")
            }
        }
        if let (certificate, key, chain) = clientCertificate {
            try checkOne(SSL_CTX_use_certificate(context.pointer, certificate.pointer), "use the client certificate")
            try checkOne(SSL_CTX_use_PrivateKey(context.pointer, key.pointer), "use the client key")
            for extra in chain { try checkOne(shim_SSL_CTX_add1_chain_cert(context.pointer, extra.pointer), "add \(extra.subject) to the client chain") }
        }
        return context
    }
}

/// Owns finite-field DH parameters (an `EVP_PKEY` of type DH holding only p and g).
package final class DHParameters: @unchecked Sendable, Equatable {
    let pointer: OpaquePointer
    deinit { EVP_PKEY_free(pointer) }
    private init(taking pointer: OpaquePointer) { self.pointer = pointer }

    package var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    public static func == (lhs: DHParameters, rhs: DHParameters) -> Bool { EVP_PKEY_parameters_eq(lhs.pointer, rhs.pointer) == 1 }

    /// The 1024-bit MODP group of RFC 2409 ("Oakley group 2"), generator 2 — the group most real-world
    /// 1024-bit DHE servers used (the Logjam paper's target), so nothing needs generating.
    public static func rfc2409Group2() throws -> DHParameters {
        OpenSSLError.clearQueue()
        let p = try checkNotNull(BN_get_rfc2409_prime_1024(nil), "load the RFC 2409 1024-bit prime")
        defer { BN_free(p) }
        let g = try checkNotNull(BN_new(), "allocate the generator")
        defer { BN_free(g) }
        try checkOne(BN_set_word(g, 2), "set the generator")
        let builder = try checkNotNull(OSSL_PARAM_BLD_new(), "allocate DH parameters")
        defer { OSSL_PARAM_BLD_free(builder) }
        try checkOne(OSSL_PARAM_BLD_push_BN(builder, shim_OSSL_PKEY_PARAM_FFC_P(), p), "set p")
        try checkOne(OSSL_PARAM_BLD_push_BN(builder, shim_OSSL_PKEY_PARAM_FFC_G(), g), "set g")
        let params = try checkNotNull(OSSL_PARAM_BLD_to_param(builder), "build DH parameters")
        defer { OSSL_PARAM_free(params) }
        let ctx = try checkNotNull(EVP_PKEY_CTX_new_from_name(nil, "DH", nil), "create a DH context")
        defer { EVP_PKEY_CTX_free(ctx) }
        try checkOne(EVP_PKEY_fromdata_init(ctx), "start building DH parameters")
        var pkey: OpaquePointer? = nil
        try checkOne(EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEY_PARAMETERS, params), "build DH parameters")
        return DHParameters(taking: try checkNotNull(pkey, "build DH parameters"))
    }

    /// The 2048-bit group of RFC 7919 ("ffdhe2048"): the group Mozilla's server-side TLS guidelines ship for DHE and
    /// OpenSSL's automatic choice for a 2048-bit key, so nothing needs generating.
    public static func ffdhe2048() throws -> DHParameters {
        OpenSSLError.clearQueue()
        let ctx = try checkNotNull(EVP_PKEY_CTX_new_from_name(nil, "DH", nil), "create a DH context")
        defer { EVP_PKEY_CTX_free(ctx) }
        try checkOne(EVP_PKEY_paramgen_init(ctx), "start DH parameter selection")
        try checkOne(EVP_PKEY_CTX_set_dh_nid(ctx, NID_ffdhe2048), "select the RFC 7919 ffdhe2048 group")
        var pkey: OpaquePointer? = nil
        try checkOne(EVP_PKEY_paramgen(ctx, &pkey), "load the ffdhe2048 group")
        return DHParameters(taking: try checkNotNull(pkey, "load the ffdhe2048 group"))
    }

    /// Fresh safe-prime parameters. Fast at 512 bits; slow (seconds) at 1024+, which is why callers cache them.
    public static func generate(bits: Int) throws -> DHParameters {
        OpenSSLError.clearQueue()
        let ctx = try checkNotNull(EVP_PKEY_CTX_new_from_name(nil, "DH", nil), "create a DH parameter generator")
        defer { EVP_PKEY_CTX_free(ctx) }
        try checkOne(EVP_PKEY_paramgen_init(ctx), "start DH parameter generation")
        try checkOne(EVP_PKEY_CTX_set_dh_paramgen_prime_len(ctx, Int32(bits)), "set the DH prime length to \(bits)")
        try checkOne(EVP_PKEY_CTX_set_dh_paramgen_generator(ctx, 2), "set the DH generator")
        var pkey: OpaquePointer? = nil
        try checkOne(EVP_PKEY_paramgen(ctx, &pkey), "generate \(bits)-bit DH parameters")
        return DHParameters(taking: try checkNotNull(pkey, "generate DH parameters"))
    }

    package convenience init(pem: Data) throws {
        OpenSSLError.clearQueue()
        let pkey = try MemoryBIO.reading(pem) { PEM_read_bio_Parameters($0, nil) }
        self.init(taking: try checkNotNull(pkey, "read PEM DH parameters"))
    }

    package var pem: Data {
        get throws { try MemoryBIO.collect("encode DH parameters") { PEM_write_bio_Parameters($0, pointer) } }
    }

    /// A new reference for APIs that take ownership.
    func retainedPointer() throws -> OpaquePointer {
        try checkOne(EVP_PKEY_up_ref(pointer), "retain DH parameters")
        return pointer
    }
}
