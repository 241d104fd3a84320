import COpenSSL
import Foundation
import TLSFixturesWire

/// One OpenSSL client `SSL` driven through two memory BIOs, for the probe. It does no I/O of its own: the caller feeds
/// it the server's bytes and sends what it produces. So OpenSSL never touches a socket — it cannot write with a plain
/// `send` that raises SIGPIPE, or set `errno` the caller reads later — and every wait stays with the caller's deadline.
/// Not `Sendable`: one thread drives it.
package final class TLSClientSession {
    /// Where an operation stands.
    package enum Step: Equatable {
        case done
        /// OpenSSL needs more bytes from the server (after sending what `takeOutput` returns).
        case needsInput
        /// The server closed the TLS session cleanly (close_notify).
        case closed
        /// OpenSSL's reasons, oldest first (an alert the server sent, a protocol error); empty when it gave none.
        case failed(reasons: [String], code: Int32)
    }

    /// What the handshake settled on, as the client saw it.
    package struct Negotiated {
        /// `TLSv1.2`, as `SSL_get_version` prints it.
        package var protocolName: String
        package var version: TLSVersion?
        /// The suite in OpenSSL's and in IANA's words.
        package var cipher: (openssl: String, iana: String)?
        /// The server's temporary key (`X25519`, `ECDH prime256v1`, `DH 1024`); nil for RSA key exchange or a KEM group.
        package var temporaryKey: String?
        /// The negotiated group as OpenSSL names it.
        package var group: String?
        package var alpn: String?
    }

    private let ssl: OpaquePointer
    private let networkIn: OpaquePointer
    private let networkOut: OpaquePointer

    /// `serverName` is sent as SNI (nil: none). The session always asks for a stapled OCSP response and for Signed
    /// Certificate Timestamps (RFC 6962), which it collects without judging them.
    package init(context: TLSContext, serverName: String?) throws {
        OpenSSLError.clearQueue()
        let ssl = try checkNotNull(SSL_new(context.pointer), "create a client connection")
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OpenSSLError.drain("allocate connection buffers")
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)   // Not yet handed to the SSL, so not freed with it.
            SSL_free(ssl)
            throw OpenSSLError.drain("allocate connection buffers")
        }
        // An empty input BIO means "retry when more arrives", not end of file.
        _ = shim_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)   // The SSL owns both BIOs from here on.
        SSL_set_connect_state(ssl)
        if let serverName { _ = shim_SSL_set_tlsext_host_name(ssl, serverName) }
        StapleRequest.ask(ssl)
        _ = shim_SSL_enable_ct_permissive(ssl)
        self.ssl = ssl
        networkIn = input
        networkOut = output
    }

    deinit { SSL_free(ssl) }

    // MARK: Bytes in and out

    /// Bytes the server sent.
    package func feed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        // A memory BIO grows as needed; it cannot refuse a write short of memory exhaustion.
        _ = bytes.withUnsafeBytes { BIO_write(networkIn, $0.baseAddress, Int32($0.count)) }
    }

    /// Everything OpenSSL produced for the server since the last call (empty: nothing).
    package func takeOutput() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(networkOut))
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = bytes.withUnsafeMutableBytes { BIO_read(networkOut, $0.baseAddress, Int32(pending)) }
        return Array(bytes.prefix(Int(max(0, read))))
    }

    // MARK: TLS operations

    package func handshake() -> Step {
        OpenSSLError.clearQueue()
        let rc = SSL_connect(ssl)
        return rc == 1 ? .done : step(for: rc)
    }

    /// Encrypts all of `plaintext` into the output.
    package func write(_ plaintext: [UInt8]) -> Step {
        OpenSSLError.clearQueue()
        var written = 0
        let rc = plaintext.withUnsafeBytes { SSL_write_ex(ssl, $0.baseAddress, $0.count, &written) }
        return rc == 1 ? .done : step(for: 0)
    }

    /// Decrypts what the fed bytes hold: plaintext (possibly none) and where the session stands — `.needsInput` once
    /// every complete record is read.
    package func read() -> (plaintext: [UInt8], step: Step) {
        var plaintext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            OpenSSLError.clearQueue()
            var count = 0
            let rc = buffer.withUnsafeMutableBytes { SSL_read_ex(ssl, $0.baseAddress, $0.count, &count) }
            if rc == 1 {
                plaintext += buffer[0..<count]
                continue
            }
            return (plaintext, step(for: 0))
        }
    }

    /// Queues our close_notify (send it with `takeOutput`). Never waits for the server's.
    package func shutdown() {
        OpenSSLError.clearQueue()
        if SSL_in_init(ssl) == 1 { return }   // No close_notify in the middle of a handshake.
        _ = SSL_shutdown(ssl)
        OpenSSLError.clearQueue()
    }

    private func step(for rc: Int32) -> Step {
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needsInput
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed(reasons: OpenSSLError.drainReasons(), code: code)
        }
    }

    // MARK: What the server showed and what was negotiated

    /// The chain exactly as the server sent it, leaf first; available even when the handshake failed after the
    /// Certificate message (TLS 1.2 client authentication).
    package var peerChain: [Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<shim_sk_X509_num(stack)).compactMap { index in
            shim_sk_X509_value(stack, index).flatMap { try? Certificate(retaining: $0) }
        }
    }

    /// The OCSP response the server stapled; nil when it sent none.
    package var stapledOCSP: Data? { StapleRequest.received(ssl) }

    /// The Signed Certificate Timestamps received for the leaf, by where they came from (only well-formed ones count:
    /// OpenSSL parses each list, signatures unchecked); nil when the linked OpenSSL has no CT and asked for none.
    package var peerSCTs: (embedded: Int, tlsExtension: Int, stapledOCSP: Int)? {
        guard shim_has_ct() == 1 else { return nil }
        var counts = (embedded: 0, tlsExtension: 0, stapledOCSP: 0)
        for index in 0..<shim_SSL_peer_sct_count(ssl) {
            switch shim_SSL_peer_sct_source(ssl, index) {
            case shim_SCT_SOURCE_X509V3_EXTENSION: counts.embedded += 1
            case shim_SCT_SOURCE_TLS_EXTENSION: counts.tlsExtension += 1
            case shim_SCT_SOURCE_OCSP_STAPLED_RESPONSE: counts.stapledOCSP += 1
            default: break
            }
        }
        return counts
    }

    package var negotiated: Negotiated {
        var result = Negotiated(protocolName: String(cString: SSL_get_version(ssl)), version: TLSVersion(openSSLValue: SSL_version(ssl)))
        if let cipher = SSL_get_current_cipher(ssl) {
            result.cipher = (String(cString: SSL_CIPHER_get_name(cipher)), SSL_CIPHER_standard_name(cipher).map { String(cString: $0) } ?? "")
        }
        var key: OpaquePointer? = nil
        if shim_SSL_get_peer_tmp_key(ssl, &key) == 1, let key {
            result.temporaryKey = KeyExchangeName.describe(key)
            EVP_PKEY_free(key)
        }
        result.group = KeyExchangeName.negotiatedGroup(ssl)
        var alpn: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &alpn, &length)
        if let alpn, length > 0 { result.alpn = String(decoding: UnsafeBufferPointer(start: alpn, count: Int(length)), as: UTF8.self) }
        return result
    }
}
