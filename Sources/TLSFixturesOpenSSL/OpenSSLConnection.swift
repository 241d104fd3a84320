import COpenSSL
import NIOCore

/// One OpenSSL `SSL` (server-side unless told otherwise) driven through two memory BIOs: ciphertext from the network is written into
/// `networkIn`, ciphertext OpenSSL wants to send accumulates in `networkOut`. It does no I/O of its own; the
/// channel handler moves bytes. Used on one event loop only (not `Sendable`).
package final class OpenSSLConnection {
    private let ssl: OpaquePointer
    private let networkIn: OpaquePointer
    private let networkOut: OpaquePointer

    package enum Step {
        case complete
        /// OpenSSL needs more bytes from the peer.
        case needsInput
        /// The peer closed the TLS session (close_notify) or the transport.
        case closed
        case failed(OpenSSLError)
    }

    package enum ReadResult {
        /// Some plaintext was appended (possibly zero bytes when a record held none).
        case data
        case needsInput
        /// close_notify received.
        case closeNotify
        case failed(OpenSSLError)
    }

    /// The size of explicitly configured DH parameters, for reporting.
    private let dhBits: Int?
    /// The peer's ClientHello and the alerts either side sent, as OpenSSL's callbacks report them.
    package let observations = HandshakeObservations()

    /// Which end of the handshake this connection plays. Fixtures are servers; the client end lets tests drive
    /// `TLSServerHandler` from an `EmbeddedChannel` with a real OpenSSL peer and no sockets.
    package enum Role { case server, client }

    /// Allocating and freeing the memory BIOs, replaceable so a test can make the second allocation fail.
    package struct BIOAllocator {
        package var make: () -> OpaquePointer? = { BIO_new(BIO_s_mem()) }
        package var free: (OpaquePointer) -> Void = { BIO_free($0) }

        package init() {}
    }

    package init(context: TLSContext, role: Role = .server, allocator: BIOAllocator = BIOAllocator()) throws {
        dhBits = context.dhBits
        OpenSSLError.clearQueue()
        let ssl = try checkNotNull(SSL_new(context.pointer), "create a TLS connection")
        guard let input = allocator.make() else {
            SSL_free(ssl)
            throw OpenSSLError.drain("allocate connection buffers")
        }
        guard let output = allocator.make() else {
            // Not yet handed to the SSL, so not freed with it.
            allocator.free(input)
            SSL_free(ssl)
            throw OpenSSLError.drain("allocate connection buffers")
        }
        // An empty input BIO means "retry later", not end of file.
        _ = shim_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)   // The SSL owns both BIOs from here on.
        switch role {
        case .server: SSL_set_accept_state(ssl)
        case .client: SSL_set_connect_state(ssl)
        }
        self.ssl = ssl
        self.networkIn = input
        self.networkOut = output
        observations.attach(to: ssl)
    }

    deinit { SSL_free(ssl) }

    // MARK: Bytes in and out

    package func consume(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            // A memory BIO grows as needed; it cannot refuse a write short of memory exhaustion.
            _ = BIO_write(networkIn, base, Int32(bytes.count))
        }
    }

    var hasOutput: Bool { BIO_ctrl_pending(networkOut) > 0 }

    /// Everything OpenSSL has produced for the network since the last call, or nil.
    package func takeOutput(allocator: ByteBufferAllocator) -> ByteBuffer? {
        let pending = Int(BIO_ctrl_pending(networkOut))
        guard pending > 0 else { return nil }
        var buffer = allocator.buffer(capacity: pending)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { raw in
            Int(max(0, BIO_read(networkOut, raw.baseAddress, Int32(pending))))
        }
        return buffer
    }

    // MARK: TLS operations

    package func handshake() -> Step {
        OpenSSLError.clearQueue()
        let rc = SSL_do_handshake(ssl)
        rememberEphemeralKey()
        if rc == 1 { return .complete }
        return step(for: rc, operation: "complete the TLS handshake")
    }

    /// The server's ephemeral key as it was while the handshake waited for the client's key exchange: a TLS 1.2 server
    /// frees it once the shared secret is derived, and with automatic DH parameters nothing else records its size.
    private var ephemeralKey: String?

    private func rememberEphemeralKey() {
        guard ephemeralKey == nil else { return }
        var key: OpaquePointer? = nil
        if shim_SSL_get_tmp_key(ssl, &key) == 1, let key {
            ephemeralKey = KeyExchangeName.describe(key)
            EVP_PKEY_free(key)
        }
    }

    /// Decrypts whatever complete records are buffered, appending plaintext to `buffer`.
    package func read(into buffer: inout ByteBuffer) -> ReadResult {
        OpenSSLError.clearQueue()
        var result = ReadResult.data
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 16_384) { raw in
            var count = 0
            if SSL_read_ex(ssl, raw.baseAddress, raw.count, &count) == 1 { return count }
            switch step(for: 0, operation: "read a TLS record") {
            case .needsInput, .complete: result = .needsInput
            case .closed: result = .closeNotify
            case .failed(let error): result = .failed(error)
            }
            return 0
        }
        return result
    }

    /// Encrypts `plaintext` into the output BIO.
    package func write(_ plaintext: ByteBuffer) -> OpenSSLError? {
        OpenSSLError.clearQueue()
        var failure: OpenSSLError? = nil
        plaintext.withUnsafeReadableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                var written = 0
                if SSL_write_ex(ssl, bytes.baseAddress! + offset, bytes.count - offset, &written) != 1 {
                    if case .failed(let error) = step(for: 0, operation: "write a TLS record") { failure = error }
                    else { failure = OpenSSLError(operation: "write a TLS record", reasons: ["the session is closing"]) }
                    return
                }
                offset += written
            }
        }
        return failure
    }

    /// Queues our close_notify. Never waits for the peer's.
    package func shutdown() {
        OpenSSLError.clearQueue()
        if SSL_in_init(ssl) == 1 { return }   // No close_notify in the middle of a handshake.
        _ = SSL_shutdown(ssl)
        OpenSSLError.clearQueue()
    }

    private func step(for rc: Int32, operation: String) -> Step {
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needsInput
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let reasons = OpenSSLError.drainReasons()
            return reasons.isEmpty ? .closed : .failed(OpenSSLError(operation: operation, reasons: reasons))
        default:
            return .failed(OpenSSLError.drain(operation))
        }
    }

    // MARK: What was negotiated

    package var details: HandshakeDetails {
        let cipher = SSL_get_current_cipher(ssl)
        var alpnData: UnsafePointer<UInt8>? = nil
        var alpnLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &alpnData, &alpnLength)
        let alpn = alpnData.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(alpnLength)), as: UTF8.self) }
        var clientSubject: String? = nil
        if let peer = SSL_get1_peer_certificate(ssl) {
            clientSubject = (try? Certificate(taking: peer))?.subject
        }
        return HandshakeDetails(
            protocol: String(cString: SSL_get_version(ssl)),
            cipher: HandshakeDetails.Cipher(
                openssl: cipher.map { String(cString: SSL_CIPHER_get_name($0)) } ?? "",
                iana: cipher.flatMap { SSL_CIPHER_standard_name($0) }.map { String(cString: $0) } ?? ""),
            keyExchange: keyExchange,
            group: KeyExchangeName.negotiatedGroup(ssl),
            sni: SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) },
            alpn: alpn,
            clientCertificate: clientSubject)
    }

    /// The key exchange: `X25519`, `ECDH prime256v1`, `DH 2048`, `X25519MLKEM768`, or `RSA` (no ephemeral key at all).
    /// The server's ephemeral key is freed once a TLS 1.2 handshake is done, and a KEM group (OpenSSL 3.5's default
    /// hybrid) never has one, so the key remembered during the handshake, the negotiated group, then the suite, answer then.
    private var keyExchange: String? {
        var key: OpaquePointer? = nil
        if shim_SSL_get_tmp_key(ssl, &key) == 1, let key {
            defer { EVP_PKEY_free(key) }
            return KeyExchangeName.describe(key)
        }
        if let ephemeralKey { return ephemeralKey }
        if let group = KeyExchangeName.negotiatedGroup(ssl) { return KeyExchangeName.display(group: group) }
        guard let cipher = SSL_get_current_cipher(ssl) else { return nil }
        switch SSL_CIPHER_get_kx_nid(cipher) {
        case NID_kx_dhe: return dhBits.map { "DH \($0)" } ?? "DH"
        case NID_kx_rsa: return "RSA"
        default: return nil
        }
    }
}

/// What a TLS handshake negotiated, as the server saw it. Sent to every HTTP request as JSON.
public struct HandshakeDetails: Codable, Sendable, Equatable {
    /// A cipher suite under both of its names.
    public struct Cipher: Codable, Sendable, Equatable {
        /// OpenSSL's name (`ECDHE-RSA-AES128-GCM-SHA256`).
        public var openssl: String
        /// The IANA name (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), as Apple's and Java's APIs print it.
        public var iana: String

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(openssl: String, iana: String) { self.openssl = openssl; self.iana = iana }
    }
    /// The negotiated version as `SSL_get_version` prints it (`TLSv1.3`).
    public var `protocol`: String
    /// The negotiated suite.
    public var cipher: Cipher
    /// "Server Temp Key" in s_client's words (`X25519`, `DH 1024`); nil for RSA key exchange.
    public var keyExchange: String?
    /// The negotiated group as OpenSSL names it (`x25519`, `secp256r1`, `X25519MLKEM768`); nil when none was used.
    public var group: String?
    /// The server name the client sent (SNI); nil when it sent none.
    public var sni: String?
    /// The ALPN protocol chosen (`http/1.1`); nil when the client offered none.
    public var alpn: String?
    /// The client certificate's subject, when the client presented one.
    public var clientCertificate: String?
}
