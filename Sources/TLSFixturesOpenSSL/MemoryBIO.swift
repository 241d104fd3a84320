import COpenSSL
import Foundation

/// Scoped helpers for OpenSSL memory BIOs, the glue for every PEM/DER/text conversion.
enum MemoryBIO {
    /// Runs `body` with a fresh writable memory BIO and returns everything written to it.
    static func collect(_ operation: String, _ body: (OpaquePointer) throws -> Int32) throws -> Data {
        let bio = try checkNotNull(BIO_new(BIO_s_mem()), "allocate a memory BIO")
        defer { BIO_free(bio) }
        let rc = try body(bio)
        if rc <= 0 { throw OpenSSLError.drain(operation) }
        return contents(of: bio)
    }

    /// Like `collect` but for printers whose return value carries no error meaning.
    static func text(_ body: (OpaquePointer) -> Void) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        body(bio)
        return String(decoding: contents(of: bio), as: UTF8.self)
    }

    static func contents(of bio: OpaquePointer) -> Data {
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let length = shim_BIO_get_mem_data(bio, &pointer)
        guard length > 0, let pointer else { return Data() }
        return Data(bytes: pointer, count: Int(length))
    }

    /// Runs `body` with a read-only memory BIO over `data`.
    static func reading<T>(_ data: Data, _ body: (OpaquePointer) throws -> T) throws -> T {
        try data.withUnsafeBytes { raw -> T in
            let bio = try checkNotNull(BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)), "allocate a memory BIO")
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }
}

/// DER encoders (`i2d_*`) share one calling convention: ask for the length, then encode.
package func derEncode(_ operation: String, _ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> Data {
    let length = encode(nil)
    guard length > 0 else { throw OpenSSLError.drain(operation) }
    var bytes = [UInt8](repeating: 0, count: Int(length))
    let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&cursor)
    }
    guard written == length else { throw OpenSSLError.drain(operation) }
    return Data(bytes)
}

package enum Digest {
    /// SHA-256 via OpenSSL (the package has no other crypto dependency).
    package static func sha256(_ data: Data) -> Data {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &out, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1, "SHA-256 is always available in OpenSSL's default provider")
        return Data(out.prefix(Int(length)))
    }

    /// SHA-1, for tools that still name certificates by it (macOS `security delete-certificate -Z`).
    package static func sha1(_ data: Data) -> Data {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &out, &length, EVP_sha1(), nil)
        }
        precondition(ok == 1, "SHA-1 is always available in OpenSSL's default provider")
        return Data(out.prefix(Int(length)))
    }
}

extension Data {
    package var hexString: String { map { String(format: "%02x", $0) }.joined() }
    /// `AB:CD:…`, the way `openssl x509 -fingerprint` prints.
    package var colonHex: String { map { String(format: "%02X", $0) }.joined(separator: ":") }
}

extension String {
    /// A string from a fixed-size C buffer that OpenSSL filled and NUL-terminated.
    package init(cBuffer buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
