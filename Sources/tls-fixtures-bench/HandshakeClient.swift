import COpenSSL
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What one client handshake saw.
struct HandshakeFacts: Codable {
    var `protocol`: String
    var cipher: String
    /// The ECDHE group, when there was one.
    var group: String?
    /// SHA-256 of the leaf certificate's DER, hex: proves every peer serves the same certificate.
    var leafSHA256: String
    var sessionReused: Bool
}

/// A blocking OpenSSL client that does one full handshake per call: the same client measures every peer's start
/// latency. Session caching and tickets are off, so every handshake is a full one.
final class HandshakeClient {
    private let ctx: OpaquePointer

    init(scenario: BenchScenario) throws {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw BenchError("SSL_CTX_new failed") }
        self.ctx = ctx
        SSL_CTX_set_security_level(ctx, scenario.securityLevel)
        _ = shim_SSL_CTX_set_min_proto_version(ctx, scenario.version.openSSLValue)
        _ = shim_SSL_CTX_set_max_proto_version(ctx, scenario.version.openSSLValue)
        guard SSL_CTX_set_cipher_list(ctx, scenario.cipher) == 1 else { throw BenchError("cipher \(scenario.cipher) unavailable") }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        _ = shim_SSL_CTX_set_session_cache_mode(ctx, shim_SSL_SESS_CACHE_OFF)
        _ = SSL_CTX_set_options(ctx, shim_SSL_OP_NO_TICKET)
    }

    deinit { SSL_CTX_free(ctx) }

    /// Connects to 127.0.0.1:`port`. Returns nil when nothing listens yet (ECONNREFUSED), so callers can poll.
    static func dial(port: Int) throws -> Int32? {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            let code = errno
            close(fd)
            if code == ECONNREFUSED { return nil }
            throw BenchError("connect: \(String(cString: strerror(code)))")
        }
        return fd
    }

    /// One full handshake on an open socket (which it closes). nil if the peer hung up during the handshake (a
    /// server that accepted before it was ready).
    func handshake(fd: Int32) throws -> HandshakeFacts? {
        defer { close(fd) }
        guard let ssl = SSL_new(ctx) else { throw BenchError("SSL_new failed") }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            var reasons: [String] = []
            while case let code = ERR_get_error(), code != 0 {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            if reasons.isEmpty { return nil }
            throw BenchError("handshake failed: \(reasons.joined(separator: "; "))")
        }
        var fingerprint = ""
        if let leaf = SSL_get1_peer_certificate(ssl) {
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            X509_digest(leaf, EVP_sha256(), &digest, &length)
            fingerprint = digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
            X509_free(leaf)
        }
        let cipher = SSL_get_current_cipher(ssl).map { String(cString: SSL_CIPHER_get_name($0)) } ?? ""
        let nid = shim_SSL_get_negotiated_group(ssl)
        let group = nid > 0 ? OBJ_nid2sn(nid).map { String(cString: $0) } : nil
        let facts = HandshakeFacts(protocol: String(cString: SSL_get_version(ssl)), cipher: cipher, group: group,
                                   leafSHA256: fingerprint, sessionReused: SSL_session_reused(ssl) == 1)
        _ = SSL_shutdown(ssl)
        return facts
    }

    /// `count` HTTP requests: all on one connection (`keepAlive`), or a new connection and full handshake for each.
    /// Deterministic work for callgrind (scripts/bench/profile.sh), where wrk's time-bound runs are not.
    func requests(port: Int, count: Int, keepAlive: Bool) throws -> Int {
        var completed = 0
        var ssl: OpaquePointer? = nil
        var fd: Int32 = -1
        func open() throws {
            guard let socket = try Self.dial(port: port) else { throw BenchError("nothing listens on \(port)") }
            fd = socket
            ssl = SSL_new(ctx)
            SSL_set_fd(ssl, fd)
            guard SSL_connect(ssl) == 1 else { throw BenchError("handshake failed") }
        }
        func closeConnection() {
            if let ssl { SSL_free(ssl) }
            ssl = nil
            if fd >= 0 { close(fd) }
            fd = -1
        }
        defer { closeConnection() }
        let request = Array("GET /bench HTTP/1.1\r\nHost: localhost\r\n\(keepAlive ? "" : "Connection: close\r\n")\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<count {
            if ssl == nil { try open() }
            guard SSL_write(ssl, request, Int32(request.count)) == Int32(request.count) else { throw BenchError("write failed") }
            // Read until the headers and Content-Length bytes of body have arrived.
            var received: [UInt8] = []
            var expected: Int? = nil
            while expected == nil || received.count < expected! {
                let n = SSL_read(ssl, &buffer, Int32(buffer.count))
                guard n > 0 else { throw BenchError("connection closed mid-response") }
                received.append(contentsOf: buffer[0..<Int(n)])
                if expected == nil, let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
                    guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                          let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else {
                        throw BenchError("response without Content-Length")
                    }
                    expected = end.upperBound + length
                }
            }
            completed += 1
            if !keepAlive { closeConnection() }
        }
        return completed
    }

    /// Connects (polling while the port refuses, up to `deadline`) and handshakes.
    func firstHandshake(port: Int, deadline: Date, pollMicroseconds: UInt32 = 200) throws -> HandshakeFacts {
        while true {
            if let fd = try Self.dial(port: port), let facts = try handshake(fd: fd) { return facts }
            if Date() > deadline { throw BenchError("no handshake on port \(port) in time") }
            usleep(pollMicroseconds)
        }
    }
}

/// Monotonic nanoseconds.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Resident set size of this process, from /proc (Linux) — nil elsewhere.
func residentKiB(field: String = "VmRSS") -> Int? {
    #if os(Linux)
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
    #endif
    return nil
}

struct Summary: Codable {
    var count: Int
    var medianMs: Double
    var p99Ms: Double
    var meanMs: Double
    var minMs: Double
    var maxMs: Double

    init(nanos samples: [UInt64]) {
        let sorted = samples.sorted().map { Double($0) / 1e6 }
        count = sorted.count
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            // Nearest rank.
            let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
            return sorted[max(0, min(sorted.count - 1, rank - 1))]
        }
        medianMs = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        p99Ms = percentile(99)
        meanMs = sorted.reduce(0, +) / Double(max(1, sorted.count))
        minMs = sorted.first ?? .nan
        maxMs = sorted.last ?? .nan
    }
}
