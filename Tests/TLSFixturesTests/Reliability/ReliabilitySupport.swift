import COpenSSL
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Shared machinery of the reliability and security suites: what this process holds (descriptors, threads, memory),
// clients that misbehave on purpose (raw POSIX sockets, a TLS client that keeps its connection), and the check every
// hostile-input test ends with: a normal client is served at once and nothing was left behind.
// darwin-lint: file allows proc — every suite that reads /proc here is enabled only when Platform.isLinux

enum Platform {
    #if os(Linux)
    static let isLinux = true
    #else
    static let isLinux = false
    #endif
}

// MARK: - What this process holds

/// Descriptors, threads and resident memory of this process, from `/proc/self` (Linux).
struct ProcessResources: CustomStringConvertible, Sendable {
    var descriptors: Int
    var threads: Int
    var residentKB: Int

    static func now() -> ProcessResources {
        ProcessResources(descriptors: count("/proc/self/fd"), threads: count("/proc/self/task"), residentKB: residentKilobytes())
    }

    private static func count(_ directory: String) -> Int {
        // Listing opens one descriptor of its own; it is there in every sample, so comparisons are unaffected.
        (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
    }

    private static func residentKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? -1
        }
        return -1
    }

    var description: String { "\(descriptors) fds, \(threads) threads, \(residentKB / 1024) MB resident" }
}

/// TCP sockets of this process on a given port, from `/proc/self/net/tcp{,6}` matched against `/proc/self/fd`: the
/// precise count of connections a fixture (or a client of it) still holds, whatever else the test process is doing.
enum SocketTable {
    struct Entry {
        var localPort: Int
        var remotePort: Int
        var state: Int   // 0x0A = LISTEN
        var inode: String
    }

    static func ownSockets() -> [Entry] {
        var inodes = Set<String>()
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in fds {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
               target.hasPrefix("socket:[") {
                inodes.insert(String(target.dropFirst("socket:[".count).dropLast()))
            }
        }
        return (allSockets() ?? []).filter { inodes.contains($0.inode) }
    }

    /// Which process holds the socket `inode`, for a failure message: "this process", or "pid N: its command line", or
    /// nil when no process does (TIME_WAIT) or it cannot be seen. Reads every process's descriptors: failures only.
    static func owner(inode: String) -> String? {
        let target = "socket:[\(inode)]"
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for pid in processes where Int32(pid) != nil {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for fd in fds where (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) == target {
                if Int32(pid) == getpid() { return "this process" }
                let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map {
                    $0.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
                } ?? "?"
                return "pid \(pid): \(command.prefix(200))"
            }
        }
        return nil
    }

    /// Every TCP socket of this network namespace, every process's; nil where there is no /proc (macOS).
    static func allSockets() -> [Entry]? {
        var entries: [Entry] = []
        var readAny = false
        for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
            // Not String(contentsOfFile:): procfs reports a size of 0 and Foundation then reads one page (4 KB,
            // about 27 sockets), so on a machine with other servers running this process's sockets were missed.
            guard let handle = FileHandle(forReadingAtPath: table) else { continue }
            defer { try? handle.close() }
            guard let data = try? handle.readToEnd() else { continue }
            readAny = true
            let text = String(decoding: data, as: UTF8.self)
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                guard columns.count > 9 else { continue }
                func port(_ column: Substring) -> Int { Int(column.split(separator: ":").last ?? "", radix: 16) ?? -1 }
                entries.append(Entry(localPort: port(columns[1]), remotePort: port(columns[2]), state: Int(columns[3], radix: 16) ?? -1,
                                     inode: String(columns[9])))
            }
        }
        return readAny ? entries : nil
    }

    /// Connections (not listeners) of this process with `port` at either end.
    static func connections(port: Int) -> Int {
        ownSockets().filter { $0.state != 0x0A && ($0.localPort == port || $0.remotePort == port) }.count
    }

    /// Accepted connections of this process's servers on `port` (the fixture's end only, not its clients').
    static func serverSide(port: Int) -> Int {
        ownSockets().filter { $0.state != 0x0A && $0.localPort == port }.count
    }

    /// Listening sockets of this process on `port`.
    static func listeners(port: Int) -> Int {
        ownSockets().filter { $0.state == 0x0A && $0.localPort == port }.count
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held. Closing is asynchronous (a channel
/// closes on its event loop after the test's client has gone), so every "back to baseline" check settles first.
func settle(timeout: TimeInterval = 10, _ condition: () -> Bool) async -> Bool {
    await Poll.until(timeout: timeout, every: .milliseconds(50), condition)
}

/// The reliability suites' store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
var reliabilityStore: CertificateStore { TestEnvironment.suiteStore("Reliability") }

// MARK: - Bounds

/// The bounds every "back to baseline" check uses, and why.
enum Bounds {
    /// Descriptors over the baseline still tolerated once settled: the test process also runs `Subprocess` (a few
    /// files and pipes while a child runs) and Foundation/Dispatch keep a handful lazily. A leak scales with the load
    /// (1,000 connections, 1,000 cycles), so it shows as hundreds, far beyond this.
    static let descriptorSlack = 8
    /// Threads over the baseline: Dispatch and the Swift concurrency pool start and park worker threads on demand.
    /// A thread per connection or per fixture would show as hundreds.
    static let threadSlack = 8
    /// Resident memory growth allowed across one test, in MB, measured after a warm-up round. glibc malloc keeps freed
    /// pages (per-thread arenas), so RSS does not return to its baseline after a burst; it plateaus. 64 MB is what a
    /// leak of about 6 KB per connection over 10,000 connections would add, while the plateau reached by 1,000
    /// simultaneous connections (about 60 KB each while open: SSL object, NIO channel, a 16 KB plaintext buffer) stays
    /// well under it once warmed up. Under AddressSanitizer, add its quarantine (below); under ThreadSanitizer, multiply
    /// by 5, the low end of the 5-10x memory its shadow state costs by its own documentation (one run of 1,000 held
    /// connections grew 202 MB under TSan). Leaks are the plain and ASan runs' to catch; TSan's run is for races.
    static let residentGrowthMB = (64 + addressSanitizerQuarantineMB) * (threadSanitized ? 5 : 1)
    /// AddressSanitizer does not hand freed memory back at once: it holds up to `quarantine_size_mb` (256 by default;
    /// `make test-asan` sets 64) so that a use after free lands on poisoned memory. That growth is ASan's by design,
    /// not the fixture's; 0 when the process is not instrumented.
    static let addressSanitizerQuarantineMB =
        sanitizerSetting("ASAN_OPTIONS", initSymbol: "__asan_init", key: "quarantine_size_mb", default: 256) ?? 0
    /// ThreadSanitizer makes a process that still has other threads sleep `atexit_sleep_ms` (1000 by default) before it
    /// exits, to catch races with them: a correct `probe --timeout 2` then ends after 3.1 s. 0 when not instrumented.
    static let threadSanitizerExitSleep =
        Double(sanitizerSetting("TSAN_OPTIONS", initSymbol: "__tsan_init", key: "atexit_sleep_ms", default: 1000) ?? 0) / 1000

    /// Whether this process is built with ThreadSanitizer (its runtime is linked in, or its options are set).
    static let threadSanitized = sanitizerSetting("TSAN_OPTIONS", initSymbol: "__tsan_init", key: "atexit_sleep_ms", default: 1000) != nil

    /// A numeric setting of a sanitizer this process is built with: its value in the options variable, else the
    /// sanitizer's default; nil when the process is not instrumented (no init symbol, no options).
    private static func sanitizerSetting(_ variable: String, initSymbol: String, key: String, default fallback: Int) -> Int? {
        let options = ProcessInfo.processInfo.environment[variable]
        guard dlsym(dlopen(nil, RTLD_NOW), initSymbol) != nil || options != nil else { return nil }
        let setting = (options ?? "").split(separator: ":").last { $0.hasPrefix("\(key)=") }
        return setting.flatMap { Int($0.dropFirst(key.count + 1)) } ?? fallback
    }
    /// How long a test waits for a close that a timeout must cause before it calls it a hang: the timeout and 30 s
    /// more. A hang detector, not a speed claim: what these tests catch is a connection nobody closes (or one a trickle
    /// keeps open for far longer than this), and event loops on a loaded 2-core runner under a sanitizer have been
    /// seen to starve past 10 s; three times a 1 s timeout was not enough there.
    static func closeBound(_ timeout: TimeAmount) -> TimeInterval { Double(timeout.nanoseconds) / 1e9 + 30 }
}

// MARK: - Fixtures

enum ReliabilityFixtures {
    /// Short timeouts so the hostile-input tests are fast: 1 s to finish a handshake, 2 s of silence.
    static let handshakeTimeout = TimeAmount.seconds(1)
    static let idleTimeout = TimeAmount.seconds(2)

    static func start(_ name: String, handshakeTimeout: TimeAmount = handshakeTimeout, idleTimeout: TimeAmount = idleTimeout,
                      port: Int = 0) async throws -> FixtureServer {
        try await FixtureServer.start(name, store: reliabilityStore,
                                      configuration: FixtureConfiguration(port: port, handshakeTimeout: handshakeTimeout, idleTimeout: idleTimeout))
    }

    /// A normal client: a full handshake trusting the built-in CA, then `GET /`, within `timeout` in all (the probe's
    /// timeout is an overall deadline; it was 5 s per read).
    static func probe(_ fixture: FixtureServer, timeout: TimeInterval = 10) async throws -> ProbeResult {
        var options = ProbeOptions()
        options.trustRoots = [fixture.caCertificate]
        options.timeout = timeout
        return try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: fixture.port, connectAddress: "127.0.0.1",
                                                                      scheme: fixture.scheme))
    }

    /// The protocol `SSL_get_version` names for each scenario these suites use.
    static func expectedProtocol(_ scenario: String) -> String? {
        ["tls-v1-0": "TLSv1", "tls-v1-2": "TLSv1.2", "tls-v1-3": "TLSv1.3"][scenario]
    }

    /// The check every hostile-input test ends with. The process has not crashed (we are still running it); a normal
    /// client is served at once; the fixture holds no connection any more; descriptors and threads are back to the
    /// baseline (within `Bounds`) and resident memory grew by less than `Bounds.residentGrowthMB`.
    static func expectRecovered(_ fixture: FixtureServer, baseline: ProcessResources, memoryGrowthMB: Int = Bounds.residentGrowthMB,
                                sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await probe(fixture)
        #expect(result.failure == nil, "a normal client was refused after the abuse: \(result.failure ?? "")", sourceLocation: sourceLocation)
        #expect(result.http?.status == 200, sourceLocation: sourceLocation)
        if let expected = expectedProtocol(fixture.scenario.name) {
            #expect(result.protocolName == expected, sourceLocation: sourceLocation)
        }
        let drained = await settle { fixture.connectionCount == 0 && SocketTable.connections(port: fixture.port) == 0 }
        #expect(drained, "connections still open: tracker \(fixture.connectionCount), sockets \(SocketTable.connections(port: fixture.port))",
                sourceLocation: sourceLocation)
        var current = ProcessResources.now()
        let settled = await settle {
            current = ProcessResources.now()
            return current.descriptors <= baseline.descriptors + Bounds.descriptorSlack
                && current.threads <= baseline.threads + Bounds.threadSlack
        }
        #expect(settled, "not back to baseline: before \(baseline), after \(current)", sourceLocation: sourceLocation)
        let growthMB = (current.residentKB - baseline.residentKB) / 1024
        #expect(growthMB < memoryGrowthMB, "resident memory grew by \(growthMB) MB: before \(baseline), after \(current)",
                sourceLocation: sourceLocation)
    }

    /// Starts the fixture and warms up (event-loop and thread-pool threads, the certificate cache, Foundation's
    /// Process machinery, malloc arenas)
    /// before the baseline is taken, so the baseline is the steady state rather than a cold process.
    static func startWarm(_ name: String, handshakeTimeout: TimeAmount = handshakeTimeout,
                          idleTimeout: TimeAmount = idleTimeout) async throws -> (FixtureServer, ProcessResources) {
        let fixture = try await start(name, handshakeTimeout: handshakeTimeout, idleTimeout: idleTimeout)
        for _ in 0..<3 { _ = try await probe(fixture) }
        // Foundation's Process keeps a dozen descriptors (its child-reaping machinery) from its first use on.
        try await Subprocess.runAwaiting(["true"])
        _ = await settle { fixture.connectionCount == 0 }
        return (fixture, ProcessResources.now())
    }
}

// MARK: - A client that sends exactly what the test says

/// A blocking TCP client on raw POSIX sockets.
final class RawConnection {
    private(set) var fd: Int32 = -1

    enum Failure: Error, CustomStringConvertible {
        case system(String, Int32)
        var description: String {
            switch self { case .system(let what, let code): return "\(what): \(String(cString: strerror(code)))" }
        }
    }

    init(port: Int, address: String = "127.0.0.1") throws {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw Failure.system("socket", errno) }
        #if canImport(Darwin)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var address4 = sockaddr_in()
        address4.sin_family = sa_family_t(AF_INET)
        address4.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, address, &address4.sin_addr)
        let rc = withUnsafePointer(to: &address4) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc_close(fd)
            fd = -1
            throw Failure.system("connect to port \(port)", code)
        }
    }

    deinit { close() }

    /// The port this end of the connection got (what a server sees as the peer's port).
    var localPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? Int(UInt16(bigEndian: address.sin_port)) : -1
    }

    /// Sends all of `bytes`; false when the peer has already closed (EPIPE, ECONNRESET).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let n = bytes[offset...].withUnsafeBytes { Glibc_send(fd, $0.baseAddress, $0.count, flags) }
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    struct Outcome {
        /// Everything the server sent.
        var received: [UInt8]
        /// Seconds until the server closed (EOF or reset); nil when it was still open at the deadline.
        var closedAfter: TimeInterval?
        var reset: Bool
        /// How many trickle bytes went out before the close.
        var trickled = 0
        /// A TLS alert record (content type 21) opens the reply.
        var startsWithAlert: Bool { received.first == 0x15 && received.count >= 7 }
        /// The alert's description byte (RFC 8446 §6), when the reply opens with one.
        var alertDescription: UInt8? { startsWithAlert ? received[6] : nil }
    }

    /// Reads until the server closes or `timeout` seconds pass, optionally sending `trickle` one byte every `interval`
    /// (the first at once).
    func readUntilClosed(timeout: TimeInterval, trickle: [UInt8] = [], interval: TimeInterval = 1) -> Outcome {
        let start = Date()
        var received: [UInt8] = []
        var nextByte = 0
        var nextSend = start
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let now = Date()
            let elapsed = now.timeIntervalSince(start)
            if elapsed >= timeout { return Outcome(received: received, closedAfter: nil, reset: false, trickled: nextByte) }
            if nextByte < trickle.count, now >= nextSend {
                if !send([trickle[nextByte]]) {
                    // The peer is gone; the read below reports how.
                } else {
                    nextByte += 1
                }
                nextSend = nextSend.addingTimeInterval(interval)
            }
            var wait = timeout - elapsed
            if nextByte < trickle.count { wait = min(wait, max(0, nextSend.timeIntervalSinceNow)) }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(max(1, min(wait, 1) * 1000)))
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc_recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n]; continue }
            if n == 0 { return Outcome(received: received, closedAfter: Date().timeIntervalSince(start), reset: false, trickled: nextByte) }
            if errno == EINTR || errno == EAGAIN { continue }
            return Outcome(received: received, closedAfter: Date().timeIntervalSince(start), reset: errno == ECONNRESET, trickled: nextByte)
        }
    }

    /// The first bytes the server sends within `timeout` (empty when none, or when it closed first).
    func readFirst(timeout: TimeInterval) -> [UInt8] {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { Glibc_recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0..<n]) : []
    }

    /// Closes with a TCP reset instead of a FIN (SO_LINGER with a zero timeout).
    func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    func close() {
        if fd >= 0 { Glibc_close(fd); fd = -1 }
    }
}

// The POSIX calls whose names clash with methods above.
#if canImport(Glibc)
@inline(__always) private func Glibc_close(_ fd: Int32) { _ = Glibc.close(fd) }
@inline(__always) private func Glibc_send(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { Glibc.send(fd, p, n, f) }
@inline(__always) private func Glibc_recv(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int, _ f: Int32) -> Int { Glibc.recv(fd, p, n, f) }
#else
@inline(__always) private func Glibc_close(_ fd: Int32) { _ = Darwin.close(fd) }
@inline(__always) private func Glibc_send(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { Darwin.send(fd, p, n, f) }
@inline(__always) private func Glibc_recv(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int, _ f: Int32) -> Int { Darwin.recv(fd, p, n, f) }
#endif

// MARK: - Handshake bytes

enum HandshakeBytes {
    /// A real ClientHello from OpenSSL offering `minVersion`…`maxVersion` with every cipher at security level 0, taken
    /// from a memory BIO (nothing is sent anywhere).
    static func clientHello(minVersion: TLSVersion = .tls1_0, maxVersion: TLSVersion = .tls1_3) throws -> [UInt8] {
        let context = try TLSContext.client(settings: TLSSettings(minVersion: minVersion, maxVersion: maxVersion,
                                                                  ciphers: "ALL:@SECLEVEL=0", securityLevel: 0))
        guard let ssl = SSL_new(context.pointer) else { throw OpenSSLError.drain("create a client") }
        defer { SSL_free(ssl) }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else { throw OpenSSLError.drain("make BIOs") }
        SSL_set_bio(ssl, input, output)
        SSL_set_connect_state(ssl)
        _ = shim_SSL_set_tlsext_host_name(ssl, "localhost")
        _ = SSL_do_handshake(ssl)   // Wants to read the ServerHello; the ClientHello is in `output`.
        OpenSSLError.clearQueue()
        let pending = Int(BIO_ctrl_pending(output))
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32(pending)) }
        return Array(bytes.prefix(Int(max(0, read))))
    }

    /// An SSLv2-format (RFC 6101 appendix E) ClientHello: a 2-byte header with the high bit set, message type 1,
    /// `version`, then cipher specs of 3 bytes each and a 16-byte challenge.
    static func sslv2ClientHello(version: (UInt8, UInt8), cipherSpecs: [[UInt8]]) -> [UInt8] {
        let specs = cipherSpecs.flatMap { $0 }
        let challenge = [UInt8](repeating: 0x5A, count: 16)
        var body: [UInt8] = [0x01, version.0, version.1]
        body += be16(specs.count) + be16(0) + be16(challenge.count)
        body += specs + challenge
        return be16(0x8000 | body.count) + body
    }

    /// A TLS record header: content type, version 3.1, and the 16-bit length it announces.
    static func recordHeader(type: UInt8 = 0x16, length: Int) -> [UInt8] { [type, 3, 1] + be16(length) }

    static func be16(_ value: Int) -> [UInt8] { [UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
}

/// A reproducible byte stream (SplitMix64), so a failing random input can be replayed from its seed.
struct SeededBytes {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

// MARK: - A TLS client that keeps its connection

/// An OpenSSL client over a blocking socket that completes a handshake, can send an HTTP/1.1 keep-alive request, and
/// then stays connected until told otherwise: the "live connection" a fixture must close when it stops.
final class HeldTLSClient {
    private let connection: RawConnection
    private let context: TLSContext
    private let ssl: OpaquePointer

    init(port: Int) throws {
        connection = try RawConnection(port: port)
        // Never block a test forever on a server that does not answer.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        context = try TLSContext.client(settings: TLSSettings(minVersion: .tls1_0, maxVersion: .tls1_3, ciphers: "ALL:@SECLEVEL=0", securityLevel: 0))
        guard let ssl = SSL_new(context.pointer) else { throw OpenSSLError.drain("create a client") }
        self.ssl = ssl
        SSL_set_fd(ssl, connection.fd)
        _ = shim_SSL_set_tlsext_host_name(ssl, "localhost")
        OpenSSLError.clearQueue()
        guard SSL_connect(ssl) == 1 else { throw OpenSSLError.drain("complete the handshake") }
    }

    deinit {
        SSL_free(ssl)
        connection.close()
    }

    /// `GET /` with keep-alive; returns the response (head and body) as text, read up to its Content-Length.
    func keepAliveRequest() -> String {
        let request = Array("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        func complete() -> Bool {
            let text = String(decoding: response, as: UTF8.self)
            guard let headEnd = text.range(of: "\r\n\r\n") else { return false }
            let head = text[..<headEnd.lowerBound].lowercased()
            guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                  let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else { return true }
            return text.utf8.count - text.utf8.distance(from: text.startIndex, to: headEnd.upperBound) >= length
        }
        while !complete() {
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            response += buffer[0..<Int(n)]
        }
        return String(decoding: response, as: UTF8.self)
    }

    /// What the server does next, within `timeout`: `closeNotify` (a clean TLS close), `eof` (the transport closed
    /// without close_notify), or `open`.
    enum NextEvent: Equatable { case closeNotify, eof, data, open }

    func awaitServerClose(timeout: TimeInterval) -> NextEvent {
        var descriptor = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else { return .open }
        var byte: UInt8 = 0
        OpenSSLError.clearQueue()
        let n = SSL_read(ssl, &byte, 1)
        if n > 0 { return .data }
        let error = SSL_get_error(ssl, n)
        OpenSSLError.clearQueue()
        return error == SSL_ERROR_ZERO_RETURN ? .closeNotify : .eof
    }
}

/// Collects values from concurrent work.
final class ReliabilityBox<Value: Sendable>: Sendable {
    private let items = NIOLockedValueBox<[Value]>([])
    func append(_ item: Value) { items.withLockedValue { $0.append(item) } }
    var values: [Value] { items.withLockedValue { $0 } }
}
