import COpenSSL
import Foundation
import NIOCore
import NIOPosix
import TLSFixturesWire
import TLSFixturesATS
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where to connect: `host` is what the certificate must name and what SNI carries; `connectAddress` (curl's
/// `--resolve`) overrides where the TCP connection actually goes.
public struct ProbeTarget: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var connectAddress: String?
    public var scheme: String

    public init(host: String, port: Int, connectAddress: String? = nil, scheme: String = "https") {
        self.host = host; self.port = port; self.connectAddress = connectAddress; self.scheme = scheme
    }

    /// Parses `HOST:PORT`, `[::1]:PORT` or a URL (`https://host:port/…`, default port 443/80).
    public init(parsing text: String) throws {
        if text.contains("://") {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["https", "http"].contains(scheme) else {
                throw ProbeError.invalidTarget(text, "use https://HOST[:PORT]/ or http://…")
            }
            guard let host = url.host, !host.isEmpty else { throw ProbeError.invalidTarget(text, "the URL has no host") }
            self.init(host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: url.port ?? (scheme == "https" ? 443 : 80), scheme: scheme)
            return
        }
        let host: Substring, port: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(after: close)...].dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            throw ProbeError.invalidTarget(text, "use HOST:PORT or a URL")
        }
        guard !host.isEmpty, let number = Int(port), (1...65_535).contains(number) else {
            throw ProbeError.invalidTarget(text, "use HOST:PORT with a port from 1 to 65535")
        }
        self.init(host: String(host), port: number)
    }

    /// Applies curl-style `HOST:PORT:ADDRESS` entries that match this target.
    public mutating func apply(resolve entries: [String]) throws {
        for entry in entries {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let port = Int(parts[1]), !parts[0].isEmpty, !parts[2].isEmpty else {
                throw ProbeError.invalidTarget(entry, "--resolve takes HOST:PORT:ADDRESS, e.g. ats-compliant.fixtures.test:9801:127.0.0.1")
            }
            if parts[0].lowercased() == host.lowercased() && port == self.port {
                connectAddress = parts[2].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            }
        }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    public var isIPLiteral: Bool { IPAddress.parse(host) != nil }
}

/// What the probe offers and whom it trusts.
public struct ProbeOptions: Sendable {
    /// Protocol range offered. Default: everything the linked OpenSSL can speak, so the probe sees what the server chose.
    public var minVersion: TLSVersion = .tls1_0
    public var maxVersion: TLSVersion = .tls1_3
    /// TLS ≤ 1.2 suites offered (OpenSSL syntax). Default: all of them, NULL included, at security level 0.
    public var ciphers: String = "ALL:eNULL:@SECLEVEL=0"
    public var tls13Suites: String? = nil
    /// Roots to verify against; nil uses system trust: `systemTrust` where set, else OpenSSL's default store.
    public var trustRoots: [Certificate]? = nil
    /// What system trust means when `trustRoots` is nil: on macOS the Security framework (the Keychain's trust
    /// settings, as URLSession judges), elsewhere nil (OpenSSL's default store). See `PlatformTrust`.
    public var systemTrust: (any PlatformTrustEvaluator)? = PlatformTrust.default
    /// Which kind of anchor `trustRoots` stand for, for the ATS model.
    public var anchorKind: TrustAnchorKind = .userInstalled
    /// SNI; default the target host unless it is an IP literal (RFC 6066 forbids IP addresses in SNI).
    public var serverName: String? = nil
    public var clientCredential: Credential? = nil
    /// Send `GET /` after the handshake and keep the response.
    public var sendHTTPRequest = true
    /// The largest certificate chain accepted, in bytes. OpenSSL's default is 100 KiB; the probe reads 1 MiB so it can
    /// show a 10,000-name certificate that stock OpenSSL clients refuse as "excessive message size".
    public var maximumCertificateListBytes = 1 << 20
    /// Asked after the handshake and verification, before the HTTP request: a reason to stop there (a pin that did not
    /// match: a pinning client never sends its request over such a connection), or nil to go on. The reason is kept
    /// in `ProbeResult.httpNotSent`.
    public var beforeHTTPRequest: (@Sendable (ProbeResult) -> String?)? = nil
    /// Seconds the whole probe may take — connect, handshake, request and answer together — however the server
    /// paces its bytes; then it reports "timed out after N s". 0.001–86400 (`Timeout`'s range); other values throw.
    public var timeout: TimeInterval = 10
    /// A deadline shared with other probes (see `ProbeDeadline`); the probe ends at the earlier of this and `timeout`.
    public var deadline: ProbeDeadline? = nil

    public init() {}
}

/// The verify result a standard client would report.
public struct VerifyOutcome: Codable, Sendable, Equatable {
    /// The name checked (nil: none).
    public var host: String?
    /// OpenSSL auth level used (2 = a default OpenSSL 3 client).
    public var securityLevel: Int
    /// nil when the chain verified.
    public var error: VerifyError?
    /// Who judged, when not OpenSSL: the platform's evaluator (`macOS trust settings (SecTrust)`) for system trust.
    public var verifier: String? = nil
    /// `ok`, or OpenSSL's text.
    public var summary: String { error?.text ?? "ok" }
}

public struct ProbeHTTPResponse: Codable, Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public var body: String
}

/// Everything a client learned from one connection attempt.
public struct ProbeResult: Codable, Sendable, Equatable {
    public var target: String
    public var connectedTo: String?
    /// nil when the handshake completed.
    public var failure: String?
    /// `TLSv1.2`, as `SSL_get_version` prints it.
    public var protocolName: String?
    public var version: TLSVersion?
    public var cipher: HandshakeDetails.Cipher?
    /// "Server Temp Key" in s_client's words: `X25519`, `ECDH prime256v1`, `DH 1024`; for a group with no temporary key
    /// (OpenSSL 3.5's default hybrid) the group: `X25519MLKEM768`. nil for RSA key exchange.
    public var keyExchange: String?
    /// The negotiated group as OpenSSL names it (`x25519`, `secp256r1`, `X25519MLKEM768`); nil when none was used.
    public var group: String?
    public var alpn: String?
    /// The chain exactly as sent, leaf first.
    public var presentedChain: [CertificateFacts]
    /// As a default OpenSSL 3 client judges it (security level 2, hostname, purpose sslserver).
    public var verification: VerifyOutcome?
    /// Chain building, signatures and dates only, for the ATS model.
    public var trust: TrustFacts?
    /// The OCSP response the server stapled (the probe always asks for one); nil when it sent none.
    public var stapledOCSP: OCSPResponseFacts?
    public var http: ProbeHTTPResponse?
    /// The probe gave up at its deadline (`failure` says where: handshake or HTTP answer).
    public var timedOut = false
    /// Why no HTTP request was sent although one was asked for (`ProbeOptions.beforeHTTPRequest` stopped it).
    public var httpNotSent: String?

    package init(target: String, connectedTo: String?, presentedChain: [CertificateFacts]) {
        self.target = target; self.connectedTo = connectedTo; self.presentedChain = presentedChain
    }

    public var succeeded: Bool { failure == nil }
}

public enum ProbeError: Error, CustomStringConvertible, Sendable, Equatable {
    case invalidTarget(String, String)
    case connect(String, String)
    /// A scan of many handshakes (`ServerFactsCollector`) reached its deadline: target, and where it stopped.
    case timedOut(String, String)

    public var description: String {
        switch self {
        case .invalidTarget(let text, let hint): return "invalid target \"\(text)\": \(hint)"
        case .connect(let target, let why): return "cannot connect to \(target): \(why)"
        case .timedOut(let target, let what): return "\(target): \(what)"
        }
    }
}

/// An OpenSSL client that reports what it negotiated, what it was shown, and why verification failed.
///
/// ```swift
/// let result = try TLSProbe(trusting: [ca.certificate]).probe(ProbeTarget(host: "localhost", port: fixture.port))
/// ```
public struct TLSProbe: Sendable {
    public var options: ProbeOptions

    public init(options: ProbeOptions = ProbeOptions()) { self.options = options }

    public init(trusting roots: [Certificate]) {
        var options = ProbeOptions()
        options.trustRoots = roots
        self.init(options: options)
    }

    /// Blocks the calling thread for at most `options.timeout` (or until `options.deadline`), whatever the server does.
    /// Throws when the timeout is out of range or no TCP connection can be made in time; every TLS failure, a timeout
    /// during the handshake or the HTTP answer included, is a result.
    public func probe(_ target: ProbeTarget) throws -> ProbeResult {
        IgnoreSIGPIPE.once()
        let clock = ProbeClock(timeout: try Timeout(seconds: options.timeout, name: "the probe's timeout"), shared: options.deadline)
        let (fd, address) = try Socket.connect(target, clock: clock)
        defer { close(fd) }
        var result = ProbeResult(target: target.description, connectedTo: address, presentedChain: [])
        if target.scheme == "http" {
            if options.sendHTTPRequest {
                switch HTTPExchange.plain(fd: fd, host: target.host, clock: clock) {
                case .success(let response): result.http = response
                case .failure(let failure): result.record(failure)
                }
            }
            return result
        }
        let context: TLSContext
        do {
            var settings = TLSSettings(minVersion: options.minVersion, maxVersion: options.maxVersion, ciphers: options.ciphers,
                                       tls13Suites: options.tls13Suites, securityLevel: 0)
            if options.minVersion >= .tls1_3 { settings.ciphers = nil }
            context = try TLSContext.client(settings: settings, clientCertificate: options.clientCredential.map {
                ($0.certificate, $0.privateKey, $0.intermediates)
            }, maximumCertificateListBytes: options.maximumCertificateListBytes, alpn: ["http/1.1"])
        } catch {
            result.failure = "client configuration: \(error)"
            return result
        }
        guard let ssl = SSL_new(context.pointer) else {
            result.failure = OpenSSLError.drain("create a client connection").description
            return result
        }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        let serverName = options.serverName ?? (target.isIPLiteral ? nil : target.host)
        if let serverName { _ = shim_SSL_set_tlsext_host_name(ssl, serverName) }
        StapleRequest.ask(ssl)

        let connected = clock.drive(ssl, fd: fd) { SSL_connect(ssl) }
        let rc = connected ?? -1
        // The chain is available even when the handshake failed after the Certificate message (TLS 1.2 client auth).
        let chain = peerChain(ssl)
        result.presentedChain = chain.map(\.facts)
        if connected == nil {
            result.failure = "\(clock.timedOut) during the TLS handshake"
            result.timedOut = true
        } else if rc != 1 {
            result.failure = handshakeFailure(ssl, rc)
        } else {
            fillNegotiated(ssl, into: &result)
        }
        if !chain.isEmpty {
            // The name checked is the one sent as SNI (`--servername`), as curl and s_client -verify_hostname do.
            let name = options.serverName ?? target.host
            if options.trustRoots == nil, let platform = options.systemTrust {
                (result.verification, result.trust) = PlatformTrust.outcome(platform, chain: result.presentedChain, host: name,
                                                                            anchor: options.anchorKind)
            } else {
                result.verification = Verifier.verify(chain: chain, roots: options.trustRoots, host: name, securityLevel: 2, purpose: true)
                result.trust = Verifier.trust(chain: chain, roots: options.trustRoots, anchor: options.anchorKind)
            }
            if let staple = StapleRequest.received(ssl), let leaf = chain.first {
                // The issuer the response must be signed by: from the verified path, else from what was sent or trusted.
                let verified = Verifier.verifiedChain(chain: chain, roots: options.trustRoots)
                let issuer = verified.count > 1 ? verified[1]
                    : (Array(chain.dropFirst()) + (options.trustRoots ?? [])).first { $0.subject == leaf.issuer }
                result.stapledOCSP = OCSPResponseReader.facts(der: staple, certificate: leaf, issuer: issuer)
            }
        }
        if rc == 1 && options.sendHTTPRequest, let stop = options.beforeHTTPRequest?(result) {
            result.httpNotSent = stop
        } else if rc == 1 && options.sendHTTPRequest {
            switch HTTPExchange.tls(ssl: ssl, fd: fd, host: target.host, clock: clock) {
            case .success(let response): result.http = response
            case .failure(let failure): result.record(failure)
            }
        }
        if rc == 1 { _ = SSL_shutdown(ssl) }   // Best effort: the socket is non-blocking, and nothing waits for it.
        return result
    }

    /// The same, off the cooperative thread pool.
    public func probe(_ target: ProbeTarget) async throws -> ProbeResult {
        try await NIOThreadPool.singleton.runIfActive { try self.probe(target) }
    }

    private func peerChain(_ ssl: OpaquePointer) -> [Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<shim_sk_X509_num(stack)).compactMap { index in
            shim_sk_X509_value(stack, index).flatMap { try? Certificate(retaining: $0) }
        }
    }

    private func fillNegotiated(_ ssl: OpaquePointer, into result: inout ProbeResult) {
        result.protocolName = String(cString: SSL_get_version(ssl))
        result.version = TLSVersion(openSSLValue: SSL_version(ssl))
        if let cipher = SSL_get_current_cipher(ssl) {
            result.cipher = HandshakeDetails.Cipher(
                openssl: String(cString: SSL_CIPHER_get_name(cipher)),
                iana: SSL_CIPHER_standard_name(cipher).map { String(cString: $0) } ?? "")
        }
        var key: OpaquePointer? = nil
        var temporaryKey: String? = nil
        if shim_SSL_get_peer_tmp_key(ssl, &key) == 1, let key {
            temporaryKey = KeyExchangeName.describe(key)
            EVP_PKEY_free(key)
        }
        result.group = KeyExchangeName.negotiatedGroup(ssl)
        result.keyExchange = KeyExchangeName.summary(temporaryKey: temporaryKey, group: result.group)
        var alpn: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &alpn, &length)
        if let alpn, length > 0 { result.alpn = String(decoding: UnsafeBufferPointer(start: alpn, count: Int(length)), as: UTF8.self) }
    }

    private func handshakeFailure(_ ssl: OpaquePointer, _ rc: Int32) -> String {
        let code = SSL_get_error(ssl, rc)
        let reasons = OpenSSLError.drainReasons()
        if !reasons.isEmpty { return reasons.joined(separator: "; ") }
        if code == SSL_ERROR_SYSCALL { return "the server closed the connection during the handshake" }
        return "handshake failed (SSL error \(code))"
    }
}

extension ProbeResult {
    mutating func record(_ failure: HTTPExchange.Failure) {
        switch failure {
        case .rejected(let reason):
            // In TLS 1.3 the client finishes first, so a server that rejects the session (no client certificate, say)
            // answers with an alert only after SSL_connect has returned success.
            self.failure = "the server rejected the session after the handshake: \(reason)"
        case .timedOut(let what):
            self.failure = what
            timedOut = true
        }
    }
}

/// Verification outside the handshake, so the probe can report results a strict client would have aborted on.
enum Verifier {
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

/// Blocking TCP with deadlines.
enum Socket {
    /// Connects within the probe's deadline and returns a non-blocking socket (every later wait polls on it).
    static func connect(_ target: ProbeTarget, clock: ProbeClock) throws -> (Int32, String) {
        let host = target.connectAddress ?? target.host
        var hints = addrinfo()
        hints.ai_socktype = streamSocketType
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(target.port), &hints, &list)
        guard status == 0, let first = list else {
            throw ProbeError.connect(target.description, "cannot resolve \(host): \(String(cString: gai_strerror(status)))"
                                     + (host.hasSuffix(".fixtures.test") ? " (map it with --resolve \(target.host):\(target.port):127.0.0.1, or the lines of `tls-fixtures hosts`)" : ""))
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if fd < 0 { lastError = String(cString: strerror(errno)); continue }
            if connectWithin(clock, fd, info.pointee.ai_addr, info.pointee.ai_addrlen, error: &lastError) {
                // Handshake flights are small writes; Nagle plus delayed ACKs would add ~40 ms to each TLS 1.3 probe.
                var noDelay: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
                #if canImport(Darwin)
                var one: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
                #endif
                return (fd, describe(info.pointee.ai_addr))
            }
            close(fd)
        }
        // Refused on loopback almost always means the fixture is not running (or not served by this OpenSSL).
        let refused = lastError == String(cString: strerror(ECONNREFUSED))
        throw ProbeError.connect(target.description, lastError + (refused ? " (nothing listens there: is `tls-fixtures serve` "
            + "running, and is the scenario among those it serves?)" : ""))
    }

    /// A non-blocking connect, waited for until the deadline. The socket stays non-blocking.
    private static func connectWithin(_ clock: ProbeClock, _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: socklen_t,
                                      error: inout String) -> Bool {
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if Glibc_or_Darwin_connect(fd, address, length) == 0 { return true }
        guard errno == EINPROGRESS else { error = String(cString: strerror(errno)); return false }
        // Ready once the connect finished either way; `wait` retries after a signal, so SO_ERROR below never reads
        // 0 for a connect still in progress.
        guard clock.wait(fd, for: Int32(POLLOUT)) else { error = clock.timedOut; return false }
        var code: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &size)
        if code != 0 { error = String(cString: strerror(code)); return false }
        return true
    }

    private static func describe(_ address: UnsafeMutablePointer<sockaddr>) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let length = socklen_t(address.pointee.sa_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
        return "\(String(cBuffer: host)):\(String(cBuffer: service))"
    }
}

@inline(__always)
private func Glibc_or_Darwin_connect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// A minimal HTTP/1.1 `GET /` with `Connection: close`, enough to read a fixture's JSON answer. The answer is complete
/// at its `Content-Length`, or when the server closes; at the probe's deadline, a head already read is kept (with the
/// body so far) and anything less is a timeout.
enum HTTPExchange {
    static func request(host: String) -> [UInt8] {
        Array("GET / HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: tls-fixtures-probe\r\nAccept: application/json\r\nConnection: close\r\n\r\n".utf8)
    }

    enum Failure: Error {
        /// An alert or TLS error instead of an answer.
        case rejected(String)
        /// The deadline passed before an answer's head arrived (`during`: what the probe was doing).
        case timedOut(String)
    }

    static func tls(ssl: OpaquePointer, fd: Int32, host: String, clock: ProbeClock) -> Result<ProbeHTTPResponse?, Failure> {
        let request = request(host: host)
        var written = 0
        guard let sent = clock.drive(ssl, fd: fd, { SSL_write_ex(ssl, request, request.count, &written) }) else {
            return .failure(.timedOut("\(clock.timedOut) sending the HTTP request"))
        }
        if sent != 1 {
            let reasons = OpenSSLError.drainReasons()
            return reasons.isEmpty ? .success(nil) : .failure(.rejected(reasons.joined(separator: "; ")))
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while response.count < 1 << 20 && !isComplete(response) {
            var count = 0
            guard let rc = clock.drive(ssl, fd: fd, { SSL_read_ex(ssl, &buffer, buffer.count, &count) }) else {
                return partial(response, clock: clock)
            }
            if rc != 1 {
                let error = SSL_get_error(ssl, rc)
                let reasons = OpenSSLError.drainReasons()
                // close_notify or a plain close after a response ends it normally; an alert is a rejection.
                if error == SSL_ERROR_SSL && !reasons.isEmpty && response.isEmpty {
                    return .failure(.rejected(reasons.joined(separator: "; ")))
                }
                break
            }
            response += buffer[0..<count]
        }
        OpenSSLError.clearQueue()
        return .success(parse(response))
    }

    static func plain(fd: Int32, host: String, clock: ProbeClock) -> Result<ProbeHTTPResponse?, Failure> {
        let request = request(host: host)
        var offset = 0
        while offset < request.count {
            let n = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { offset += n; continue }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return .success(nil) }
            guard clock.wait(fd, for: Int32(POLLOUT)) else { return .failure(.timedOut("\(clock.timedOut) sending the HTTP request")) }
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while response.count < 1 << 20 && !isComplete(response) {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { response += buffer[0..<count]; continue }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { break }
            guard clock.wait(fd, for: Int32(POLLIN)) else { return partial(response, clock: clock) }
        }
        return .success(parse(response))
    }

    /// At the deadline: the answer so far if its head is complete, else a timeout.
    private static func partial(_ response: [UInt8], clock: ProbeClock) -> Result<ProbeHTTPResponse?, Failure> {
        if let head = parse(response) { return .success(head) }
        return .failure(.timedOut("\(clock.timedOut) waiting for the HTTP answer"))
    }

    /// A head and as many body bytes as its `Content-Length` announces (without one, the answer ends at the close).
    static func isComplete(_ bytes: [UInt8]) -> Bool {
        guard let headEnd = bytes.firstRange(of: [13, 10, 13, 10])?.upperBound,
              let response = parse(Array(bytes[..<headEnd])),
              let length = response.headers["content-length"].flatMap({ Int($0) }) else { return false }
        return bytes.count - headEnd >= length
    }

    static func parse(_ bytes: [UInt8]) -> ProbeHTTPResponse? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = lines.first, let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return ProbeHTTPResponse(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}

/// A peer that closes while we write would otherwise kill the whole process with SIGPIPE (OpenSSL writes with
/// plain `send`). Ignored once, and only when nobody installed a handler.
enum IgnoreSIGPIPE {
    private static let done: Void = {
        #if canImport(Glibc)
        var current = sigaction()
        if sigaction(SIGPIPE, nil, &current) == 0 && current.__sigaction_handler.sa_handler == nil {
            signal(SIGPIPE, SIG_IGN)
        }
        #endif
    }()

    static func once() { _ = done }
}
