import COpenSSL
import TLSFixturesWire

/// What one server-side connection saw of its client during the handshake, filled in by OpenSSL's callbacks: the
/// ClientHello (the context's client-hello callback, `SSL_CTX_set_client_hello_cb`) and the alerts either side sent
/// (the connection's info callback, `SSL_CB_READ_ALERT` / `SSL_CB_WRITE_ALERT`). Owned by its `OpenSSLConnection`,
/// which the callbacks reach through the `SSL`'s ex-data; used on that connection's event loop only.
package final class HandshakeObservations {
    /// The first ClientHello (a HelloRetryRequest brings a second, with the same offer but one key share).
    package private(set) var clientHello: ConnectionRecord.ClientHello?
    /// The first alert the peer sent while the handshake was in progress.
    package private(set) var alertReceived: TLSAlert?
    /// The first alert this side sent while the handshake was in progress.
    package private(set) var alertSent: TLSAlert?
    /// The first alert the peer sent after the handshake completed, close_notify aside.
    package private(set) var alertReceivedAfterHandshake: TLSAlert?

    init() {}

    /// The `SSL` ex-data slot the callbacks find this object in; allocated once per process.
    static let exDataIndex: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)

    /// Attaches to `ssl` (unretained: the connection owning both outlives every callback on its `SSL`).
    func attach(to ssl: OpaquePointer) {
        SSL_set_ex_data(ssl, Self.exDataIndex, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_info_callback(ssl) { ssl, kind, value in
            guard kind & SSL_CB_ALERT != 0, let ssl,
                  let observations = HandshakeObservations.attached(to: ssl) else { return }
            // For alerts `value` is the level in the high byte and the description in the low one.
            let alert = TLSAlert(code: UInt8(truncatingIfNeeded: value & 0xFF))
            observations.noteAlert(alert, read: kind & SSL_CB_READ != 0, duringHandshake: SSL_in_init(ssl) == 1)
        }
    }

    static func attached(to ssl: OpaquePointer) -> HandshakeObservations? {
        SSL_get_ex_data(ssl, exDataIndex).map { Unmanaged<HandshakeObservations>.fromOpaque($0).takeUnretainedValue() }
    }

    private func noteAlert(_ alert: TLSAlert, read: Bool, duringHandshake: Bool) {
        switch (read, duringHandshake) {
        case (true, true): if alertReceived == nil { alertReceived = alert }
        case (false, true): if alertSent == nil { alertSent = alert }
        case (true, false):
            if alertReceivedAfterHandshake == nil, alert != .closeNotify { alertReceivedAfterHandshake = alert }
        case (false, false): break
        }
    }

    /// Installed on every server context: reads the ClientHello for the connection's observations, never refuses one.
    static let clientHelloCallback: SSL_client_hello_cb_fn = { ssl, _, _ in
        if let ssl, let observations = HandshakeObservations.attached(to: ssl), observations.clientHello == nil {
            observations.clientHello = ClientHelloReader(ssl).read()
        }
        return SSL_CLIENT_HELLO_SUCCESS
    }
}

/// Reads a ClientHello through OpenSSL's `SSL_client_hello_get0_*` accessors, and the bodies of the extensions it names
/// with the wire formats of RFC 6066 §3 (server_name), RFC 8422 §5.1.1 / RFC 8446 §4.2.7 (supported_groups),
/// RFC 8446 §4.2.3 (signature_algorithms), RFC 7301 §3.1 (ALPN) and RFC 8446 §4.2.1 (supported_versions). Only valid
/// inside the client-hello callback.
struct ClientHelloReader {
    let ssl: OpaquePointer

    init(_ ssl: OpaquePointer) { self.ssl = ssl }

    func read() -> ConnectionRecord.ClientHello {
        let limit = ConnectionRecord.ClientHello.maximumListLength
        let legacy = UInt16(truncatingIfNeeded: SSL_client_hello_get0_legacy_version(ssl))
        // supported_versions has a 1-byte length; supported_groups and signature_algorithms a 2-byte one.
        let versions: [UInt16] = pairs(Array((extensionBody(43) ?? []).dropFirst(1)), limit: limit)
        let groups: [UInt16] = pairs(Array((extensionBody(10) ?? []).dropFirst(2)), limit: limit)
        let signatures: [UInt16] = pairs(Array((extensionBody(13) ?? []).dropFirst(2)), limit: limit)
        let suites: [UInt16] = cipherSuites(limit: limit)
        let extensions: [UInt16] = extensionTypes(limit: limit)
        return ConnectionRecord.ClientHello(
            serverName: serverName(), legacyVersion: TLSRegistry.versionName(legacy),
            supportedVersions: versions.map(TLSRegistry.versionName),
            cipherSuites: suites.map(TLSRegistry.cipherSuiteName),
            groups: groups.map(TLSRegistry.groupName),
            signatureAlgorithms: signatures.map(TLSRegistry.signatureSchemeName),
            alpn: alpn(limit: limit), extensions: extensions.map(TLSRegistry.extensionName))
    }

    private func cipherSuites(limit: Int) -> [UInt16] {
        var pointer: UnsafePointer<UInt8>? = nil
        let count = SSL_client_hello_get0_ciphers(ssl, &pointer)
        guard let pointer, count > 0 else { return [] }
        let bytes = UnsafeBufferPointer(start: pointer, count: count)
        guard SSL_client_hello_isv2(ssl) == 1 else { return pairs(Array(bytes), limit: limit) }
        // An SSLv2-format hello lists 3-byte kinds; those that are TLS suites start with a zero byte.
        let kinds = stride(from: 0, to: count - 2, by: 3).filter { bytes[$0] == 0 }.prefix(limit)
        return kinds.map { (UInt16(bytes[$0 + 1]) << 8) | UInt16(bytes[$0 + 2]) }
    }

    private func extensionTypes(limit: Int) -> [UInt16] {
        var types: UnsafeMutablePointer<Int32>? = nil
        var count = 0
        guard SSL_client_hello_get1_extensions_present(ssl, &types, &count) == 1, let types else { return [] }
        defer { shim_OPENSSL_free(types) }
        return UnsafeBufferPointer(start: types, count: count).prefix(limit).map { UInt16(truncatingIfNeeded: $0) }
    }

    private func extensionBody(_ type: UInt32) -> [UInt8]? {
        var pointer: UnsafePointer<UInt8>? = nil
        var count = 0
        guard SSL_client_hello_get0_ext(ssl, type, &pointer, &count) == 1, let pointer else { return nil }
        return Array(UnsafeBufferPointer(start: pointer, count: count))
    }

    /// Big-endian 16-bit values, as many as the bytes hold (a trailing odd byte is malformed and ignored).
    private func pairs(_ bytes: [UInt8], limit: Int) -> [UInt16] {
        stride(from: 0, to: bytes.count - 1, by: 2).prefix(limit)
            .map { (UInt16(bytes[$0]) << 8) | UInt16(bytes[$0 + 1]) }
    }

    /// The first host_name entry of server_name: list length (2), then entries of type (1), length (2), name.
    private func serverName() -> String? {
        guard let body = extensionBody(0), body.count > 5, body[2] == 0 else { return nil }
        let length = Int(body[3]) << 8 | Int(body[4])
        guard length > 0, body.count >= 5 + length else { return nil }
        return String(decoding: body[5 ..< 5 + min(length, 255)], as: UTF8.self)
    }

    /// ALPN: list length (2), then names each prefixed by their length (1).
    private func alpn(limit: Int) -> [String] {
        guard let body = extensionBody(16), body.count > 2 else { return [] }
        var names: [String] = []
        var offset = 2
        while offset < body.count, names.count < limit {
            let length = Int(body[offset])
            guard length > 0, offset + 1 + length <= body.count else { break }
            names.append(String(decoding: body[offset + 1 ... offset + length], as: UTF8.self))
            offset += 1 + length
        }
        return names
    }
}
