import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The probe's TCP connection: connected within the probe's deadline, non-blocking, and read and written only by this
/// type, so every wait is bounded by the same `ProbeClock` and a peer that resets the connection while we write cannot
/// raise SIGPIPE: Linux sends with `MSG_NOSIGNAL`, Darwin sets `SO_NOSIGPIPE` on the socket. Nothing here changes how
/// the process handles signals. `errno` is copied into the error at the failing call, before anything else can run.
final class ProbeSocket {
    /// What a failed socket call said, in `strerror`'s words, taken at the call.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    enum Receive {
        case bytes([UInt8])
        /// The peer closed its side.
        case endOfFile
        case failed(Failure)
        /// The deadline passed first.
        case timedOut
    }

    private let fd: Int32
    /// `ADDRESS:PORT` as connected (numeric).
    let address: String
    private let clock: ProbeClock

    private init(fd: Int32, address: String, clock: ProbeClock) {
        self.fd = fd
        self.address = address
        self.clock = clock
    }

    deinit { close(fd) }

    /// Tries each address `target` resolves to until one connects within the deadline.
    static func connect(_ target: ProbeTarget, clock: ProbeClock) throws -> ProbeSocket {
        let host = target.connectAddress ?? target.host
        var hints = addrinfo()
        hints.ai_socktype = streamSocketType
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(target.port), &hints, &list)
        guard status == 0, let first = list else {
            let why = String(cString: gai_strerror(status))
            if host.hasSuffix(".fixtures.test") { throw ProbeError.unresolvedFixtureName(target.description, host: host, why) }
            throw ProbeError.connect(target.description, "cannot resolve \(host): \(why)")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var refused = false
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = closeOnExecStreamSocket(info.pointee.ai_family, protocol: info.pointee.ai_protocol)
            if fd < 0 { lastError = Failure(code: errno).description; continue }
            switch connectWithin(clock, fd, info.pointee.ai_addr, info.pointee.ai_addrlen) {
            case .success:
                // Handshake flights are small writes; Nagle plus delayed ACKs would add ~40 ms to each TLS 1.3 probe.
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                #if canImport(Darwin)
                // Darwin has no MSG_NOSIGNAL: the socket itself is told not to raise SIGPIPE.
                setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
                #endif
                return ProbeSocket(fd: fd, address: describe(info.pointee.ai_addr), clock: clock)
            case .failure(let failure):
                lastError = failure.why
                refused = refused || failure.why == Failure(code: ECONNREFUSED).description
            }
            close(fd)
        }
        // Refused on loopback almost always means the fixture is not running (or not served by this OpenSSL).
        throw ProbeError.connect(target.description, lastError + (refused ? " (nothing listens there)" : ""),
                                 fix: refused ? "start the fixture (or `tls-fixtures serve`) and check that the scenario is among those it serves" : nil)
    }

    private struct ConnectFailure: Error { let why: String }

    /// A non-blocking connect, waited for until the deadline. The socket stays non-blocking.
    private static func connectWithin(_ clock: ProbeClock, _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>,
                                      _ length: socklen_t) -> Result<Void, ConnectFailure> {
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if systemConnect(fd, address, length) == 0 { return .success(()) }
        let code = errno
        guard code == EINPROGRESS else { return .failure(ConnectFailure(why: Failure(code: code).description)) }
        // Ready once the connect finished either way; `wait` retries after a signal, so SO_ERROR below never reads
        // 0 for a connect still in progress.
        guard clock.wait(fd, for: Int32(POLLOUT)) else { return .failure(ConnectFailure(why: clock.timedOut)) }
        var result: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &size)
        if result != 0 { return .failure(ConnectFailure(why: Failure(code: result).description)) }
        return .success(())
    }

    /// Sends every byte, waiting for room until the deadline. Returns false when the deadline passed.
    func send(_ bytes: [UInt8]) throws(Failure) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count) }
            if sent >= 0 { offset += sent; continue }
            let code = errno
            guard code == EAGAIN || code == EWOULDBLOCK || code == EINTR else { throw Failure(code: code) }
            guard clock.wait(fd, for: Int32(POLLOUT)) else { return false }
        }
        return true
    }

    /// Sends what fits now, without waiting and without reporting failure: for a goodbye (close_notify) nobody waits for.
    func sendIfPossible(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count) }
    }

    /// Waits until the deadline for some bytes (at most `limit`), the end of the stream, or an error.
    func receive(upTo limit: Int = 16_384) -> Receive {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = recv(fd, &buffer, limit, 0)
            if count > 0 { return .bytes(Array(buffer[0..<count])) }
            if count == 0 { return .endOfFile }
            let code = errno
            guard code == EAGAIN || code == EWOULDBLOCK || code == EINTR else { return .failed(Failure(code: code)) }
            guard clock.wait(fd, for: Int32(POLLIN)) else { return .timedOut }
        }
    }

    private static func describe(_ address: UnsafeMutablePointer<sockaddr>) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let length = socklen_t(address.pointee.sa_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
        let hostText = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let serviceText = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(hostText):\(serviceText)"
    }
}

/// `connect` under another name: inside `ProbeSocket` the bare name means the static method.
@inline(__always)
private func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// One `send` that cannot raise SIGPIPE: `MSG_NOSIGNAL` on Linux; on Darwin the socket has `SO_NOSIGPIPE`.
@inline(__always)
private func systemSend(_ fd: Int32, _ base: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    return send(fd, base, count, Int32(MSG_NOSIGNAL))
    #else
    return send(fd, base, count, 0)
    #endif
}

/// Plain HTTP (`http://` targets) talks over the socket itself.
extension ProbeSocket: ProbeByteStream {
    func write(_ bytes: [UInt8]) throws(ProbeStreamFailure) {
        let sent: Bool
        do { sent = try send(bytes) } catch { throw .socket(error.description) }
        guard sent else { throw .timedOut }
    }

    func read() throws(ProbeStreamFailure) -> [UInt8]? {
        switch receive() {
        case .bytes(let bytes): return bytes
        case .endOfFile: return nil
        case .failed(let failure): throw .socket(failure.description)
        case .timedOut: throw .timedOut
        }
    }
}
