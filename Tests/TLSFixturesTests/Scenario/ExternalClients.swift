import Foundation
import NIOConcurrencyHelpers
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Clients we did not write (openssl s_client / verify / x509, curl, Python's ssl) and the plumbing to run them from
// async tests without tying up the cooperative thread pool.

enum External {
    /// Runs a program and awaits its exit (no thread waits for it, Dispatch's no more than the pool's), so many can run
    /// at once.
    static func run(_ arguments: [String], stdin: Data? = nil, timeout: TimeInterval = 60) async throws -> Subprocess.Result {
        try await Subprocess.runAwaiting(arguments, stdin: stdin, timeout: timeout)
    }

    static func openssl(_ arguments: [String], stdin: Data? = nil) async throws -> Subprocess.Result {
        try await run(["openssl"] + arguments, stdin: stdin)
    }

    /// A GET that asks the server to close afterwards, so `s_client -ign_eof` ends when the answer is complete.
    static let closingRequest = Data("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)

    /// Writes PEM (or any) data to a fresh temporary file.
    static func file(_ data: Data, name: String = "f.pem") throws -> String { try TestEnvironment.file(data, name: name) }

    static func pemFile(_ certificates: [Certificate], name: String = "certs.pem") throws -> String {
        try file(Certificate.pem(certificates), name: name)
    }
}

/// What `openssl s_client -showcerts -msg` printed, parsed.
struct SClientTranscript {
    let output: String
    let status: Int32

    /// `New, TLSv1.2, Cipher is X`, when a cipher was agreed.
    var cipher: String? {
        guard let value = value(after: ", Cipher is ") else { return nil }
        return value == "(NONE)" ? nil : value
    }
    var handshakeCompleted: Bool { cipher != nil }
    /// The protocol as OpenSSL names it (`TLSv1`, `TLSv1.3`): the session block's `Protocol  :` line, which s_client
    /// prints for TLS 1.2 and older. A TLS 1.3 server that sends no session ticket gets no session block; then the
    /// suite says it, as TLS 1.3 suites exist only in TLS 1.3. (`New, TLSv1.0, Cipher is …` names the suite's
    /// minimum version, not the protocol, so it is not used otherwise.)
    var protocolName: String? {
        guard handshakeCompleted else { return nil }
        for line in lines where line.trimmingCharacters(in: .whitespaces).hasPrefix("Protocol  :") {
            if let colon = line.firstIndex(of: ":") { return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
        }
        return value(after: "New, ").flatMap { $0.hasPrefix("TLSv1.3,") ? "TLSv1.3" : nil }
    }
    /// What s_client says of the key exchange, nil when it says nothing (static RSA). OpenSSL before 3.2 prints
    /// `Server Temp Key: X25519, 253 bits`; later ones `Peer Temp Key: …`, and for a group with no temporary key —
    /// 3.5's default hybrid — `Negotiated TLS1.3 group: X25519MLKEM768` (apps/lib/s_cb.c, ssl_print_tmp_key).
    var serverTempKey: String? {
        value(after: "Server Temp Key: ") ?? value(after: "Peer Temp Key: ") ?? value(after: "Negotiated TLS1.3 group: ")
    }
    /// `Server public key is N bit`.
    var serverPublicKeyBits: Int? {
        value(after: "Server public key is ").flatMap { Int($0.prefix { $0.isNumber }) }
    }
    /// Every certificate printed (with -showcerts: the chain exactly as sent), as PEM.
    var certificatesPEM: [String] {
        var result: [String] = []
        var current: [String]? = nil
        for line in lines {
            if line.hasPrefix("-----BEGIN CERTIFICATE-----") { current = [line] }
            else if current != nil {
                current!.append(line)
                if line.hasPrefix("-----END CERTIFICATE-----") { result.append(current!.joined(separator: "\n") + "\n"); current = nil }
            }
        }
        return result
    }
    /// The size of the DH prime in a ServerKeyExchange, read from the raw message that `-msg` dumps: proves the group
    /// size even when the client then refuses it.
    var serverKeyExchangeDHPrimeBits: Int? {
        guard let start = lines.firstIndex(where: { $0.hasPrefix("<<<") && $0.contains("ServerKeyExchange") }) else { return nil }
        var bytes: [UInt8] = []
        for line in lines[(start + 1)...] {
            let fields = line.split(separator: " ")
            guard line.hasPrefix(" "), !fields.isEmpty, fields.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else { break }
            bytes += fields.compactMap { UInt8($0, radix: 16) }
            if bytes.count >= 6 { break }
        }
        // Handshake type 12, 3-byte length, then dh_p as a 2-byte length and the big-endian prime.
        guard bytes.count >= 6, bytes[0] == 0x0c else { return nil }
        return (Int(bytes[4]) << 8 | Int(bytes[5])) * 8
    }
    /// The HTTP status lines the server answered with, in order (s_client copies application data to stdout).
    var httpStatusLines: [String] { lines.filter { $0.hasPrefix("HTTP/1.") } }
    /// The fixture's JSON answers (one line each; `-msg` lines may sit between the headers and the body).
    var httpBodies: [String] { lines.filter { $0.hasPrefix("{") && $0.hasSuffix("}") } }
    var httpBody: String? { httpBodies.first }

    private var lines: [String] { output.components(separatedBy: .newlines) }

    private func value(after marker: String) -> String? {
        for line in lines {
            if let range = line.range(of: marker) { return line[range.upperBound...].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }
}

enum SClient {
    /// Connects as a maximally permissive OpenSSL client (every suite, security level 0, `minProtocol`…TLS 1.3) with
    /// SNI `localhost`, sends `request`, and reads until the server closes.
    static func connect(port: Int, minProtocol: String = "TLSv1", maxProtocol: String = "TLSv1.3",
                        cipher: String? = "ALL:eNULL:@SECLEVEL=0", extra: [String] = [],
                        request: Data = External.closingRequest) async throws -> SClientTranscript {
        var arguments = ["s_client", "-connect", "localhost:\(port)", "-servername", "localhost", "-showcerts", "-msg", "-ign_eof",
                         "-min_protocol", minProtocol, "-max_protocol", maxProtocol]
        if let cipher { arguments += ["-cipher", cipher] }
        let result = try await External.openssl(arguments + extra, stdin: request)
        return SClientTranscript(output: result.combined, status: result.status)
    }

    /// A stock client: no options beyond where to connect (the system's default security level and protocols).
    static func stock(port: Int, extra: [String] = []) async throws -> SClientTranscript {
        let result = try await External.openssl(["s_client", "-connect", "localhost:\(port)", "-servername", "localhost", "-ign_eof"] + extra,
                                                stdin: External.closingRequest)
        return SClientTranscript(output: result.combined, status: result.status)
    }
}

enum OpenSSLVerify {
    /// `openssl verify -auth_level 2 -purpose sslserver -verify_hostname localhost -CAfile roots [-untrusted rest] leaf`
    /// on a chain as captured from the wire. Returns `ok` or the first error's text, and the whole output.
    static func judge(chainPEM: [String], roots: [Certificate], host: String = "localhost") async throws -> (verdict: String, output: String) {
        guard let leaf = chainPEM.first else { return ("no certificate", "") }
        let leafFile = try External.file(Data(leaf.utf8), name: "leaf.pem")
        var arguments = ["verify", "-auth_level", "2", "-purpose", "sslserver", "-verify_hostname", host,
                         "-CAfile", try External.pemFile(roots, name: "roots.pem")]
        if chainPEM.count > 1 {
            arguments += ["-untrusted", try External.file(Data(chainPEM.dropFirst().joined().utf8), name: "untrusted.pem")]
        }
        let result = try await External.openssl(arguments + [leafFile])
        return (verdict(result.combined, file: leafFile), result.combined)
    }

    static func verdict(_ output: String, file: String) -> String {
        if output.contains("\(file): OK") { return "ok" }
        // "error 10 at 0 depth lookup: certificate has expired"
        for line in output.components(separatedBy: "\n") {
            if line.hasPrefix("error "), let range = line.range(of: "depth lookup: ") {
                return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
            }
        }
        return "unparsed: \(output)"
    }

    /// `Signature Algorithm:` of the certificate, as `openssl x509 -noout -text` prints it.
    static func signatureAlgorithm(pem: String) async throws -> String? {
        let result = try await External.openssl(["x509", "-noout", "-text"], stdin: Data(pem.utf8))
        for line in result.stdout.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("Signature Algorithm:") {
                return trimmed.dropFirst("Signature Algorithm:".count).trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}

/// What this machine's OpenSSL can do, asked of the openssl CLI (the same library the package links on Linux).
enum OpenSSLFeatures {
    static func has(_ feature: OptionalFeature) async throws -> Bool {
        switch feature {
        case .sslv3:
            // s_client offers -ssl3 only when SSLv3 is compiled in (it always offers -no_ssl3).
            let help = try await External.openssl(["s_client", "-help"]).combined
            return help.components(separatedBy: "\n").contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("-ssl3 ") }
        case .rc4:
            return try await External.openssl(["ciphers", "RC4:@SECLEVEL=0"]).status == 0
        case .tripleDES:
            return try await External.openssl(["ciphers", "3DES:@SECLEVEL=0"]).status == 0
        }
    }
}

/// A port as a running fixture held it, so that a test can later ask whether the fixture let it go.
///
/// "Nothing accepts on the port" is the wrong question after a fixture on port 0 stops: while tests run in parallel,
/// the kernel now and then gives the just-freed port to another test's new fixture, and the check then fails for a
/// reason that is not a bug. The sockets that listened when the port was held are what must be gone; where /proc
/// cannot say which sockets those were, the check falls back to "nothing accepts".
struct HeldPort: Sendable {
    let port: Int
    let host: String
    /// The inodes of the sockets listening on the port when it was held; nil or empty when they are unknown.
    let listeners: Set<String>?
    /// The peers' ports of the fixture's own connections on the port when it was held (open or closing): whatever
    /// is left of them after a stop may still be in the table, and is not someone else's socket.
    var peers: Set<Int> = []

    /// Whether every socket that listened when the port was held is gone.
    var released: Bool {
        guard let listeners, !listeners.isEmpty, let now = Ports.listeners(port) else { return !Ports.accepts(port, host: host) }
        return now.isDisjoint(with: listeners)
    }

    /// Whether a new server could take the port now, or another socket, made since, already has: another test's
    /// listener, or any program's outgoing connection, which the kernel may give a just-freed ephemeral port as its
    /// source port. Such a connection blocks the bind (it has no SO_REUSEADDR) while it is open, and for a minute more
    /// in TIME_WAIT, when no process owns it any more (inode 0). Two CI rehearsals beside another saw each: nothing
    /// listened, and the bind still failed.
    var reusable: Bool {
        if Ports.canListen(port, host: host) { return true }
        guard let listeners, !listeners.isEmpty, released, let now = SocketTable.allSockets() else { return false }
        return now.contains { $0.localPort == port && !listeners.contains($0.inode) && !peers.contains($0.remotePort) }
    }

    /// The sockets on the port now, for a failure message: state (hex, as /proc shows it), peer port, inode.
    var sockets: String {
        guard let now = SocketTable.allSockets()?.filter({ $0.localPort == port }) else { return "unknown (no /proc)" }
        guard !now.isEmpty else { return "none" }
        return now.map {
            "state \(String($0.state, radix: 16, uppercase: true)), peer port \($0.remotePort), inode \($0.inode), held by "
                + (SocketTable.owner(inode: $0.inode) ?? "no process")
        }
            .joined(separator: "; ") + "; held with listeners \(listeners ?? []) and peer ports \(peers.sorted())"
    }
}

/// Ports as the operating system sees them.
enum Ports {
    /// A port nobody listens on right now, that no other socket will be given in the meantime: one of this process's
    /// claimed ports below every ephemeral range (`freeRange`). A port bound to 0, read back and released was the
    /// kernel's to give again, and beside another CI run it did: serve's `--proxy-port` found "port 43165 on 127.0.0.1
    /// is already in use".
    static func unused() throws -> Int {
        try freeRange(count: 1)
    }

    /// Whether a TCP connect to `host` (127.0.0.1 or ::1) on `port` is answered.
    static func accepts(_ port: Int, host: String = "127.0.0.1") -> Bool {
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return withSocketAddress(host: host, port: port) { connect(fd, $0, $1) == 0 }
    }

    /// Whether a new listener can take `port` on `host` (with SO_REUSEADDR, as any server restarting would).
    static func canListen(_ port: Int, host: String = "127.0.0.1") -> Bool {
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if v6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        return withSocketAddress(host: host, port: port) { bind(fd, $0, $1) == 0 } && listen(fd, 1) == 0
    }

    /// Whether a socket is bound to `port` on 127.0.0.1 now, listening or not: a bind without SO_REUSEADDR fails with
    /// EADDRINUSE. What tells a port held for a scenario still preparing (bound, not listening: "connection refused")
    /// from a port nobody holds, which refuses a connection just the same. (A connection of its own in TIME_WAIT would
    /// count too: ask before connecting to the port.)
    static func isBound(_ port: Int) -> Bool {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bound = withSocketAddress(host: "127.0.0.1", port: port) { bind(fd, $0, $1) == 0 }
        return !bound && errno == EADDRINUSE
    }

    /// The inodes of the sockets listening on `port` right now, in any process of this network namespace; nil where
    /// there is no /proc (macOS).
    static func listeners(_ port: Int) -> Set<String>? {
        SocketTable.allSockets().map { Set($0.filter { $0.state == 0x0A && $0.localPort == port }.map(\.inode)) }
    }

    /// `port` as a running fixture holds it now: see `HeldPort`.
    static func held(_ port: Int, host: String = "127.0.0.1") -> HeldPort {
        let sockets = SocketTable.allSockets()?.filter { $0.localPort == port }
        return HeldPort(port: port, host: host, listeners: sockets.map { Set($0.filter { $0.state == 0x0A }.map(\.inode)) },
                        peers: Set((sockets ?? []).filter { $0.state != 0x0A }.map(\.remotePort)))
    }

    /// The first of `count` consecutive ports, all free now, below the ephemeral range (32768 and up on Linux, 49152
    /// on macOS), so no port-0 listener can take one once it is freed. Ranges handed out in this process never
    /// overlap: tests that run in parallel (serve's port bases, the revocation services' ports) each get their own.
    ///
    /// The search goes once round the whole space before it gives up, and steps over a block another process
    /// claims in one go: a process claims its blocks until it exits (about 30 in a whole suite), and a search that gave
    /// up after 50 ranges ran into the other's claims and failed, with two CI runs side by side.
    static func freeRange(count: Int) throws -> Int {
        var claimedElsewhere = 0, inUse = 0
        let tries = space.count / count + space.count / claimBlock + 1
        for _ in 0..<tries {
            let base = blockCursor.withLockedValue { cursor -> Int in
                if cursor + count > space.upperBound { cursor = space.lowerBound }
                defer { cursor += count }
                return cursor
            }
            if let foreign = claim(base..<(base + count)) {
                claimedElsewhere += 1
                let after = blockStart(foreign) + claimBlock
                blockCursor.withLockedValue { cursor in if cursor > base { cursor = max(cursor, after) } }
                continue
            }
            if (base..<(base + count)).allSatisfy({ !accepts($0) && canListen($0) }) { return base }
            inUse += 1
        }
        throw NoFreeRange(count: count, space: space, claimedElsewhere: claimedElsewhere, inUse: inUse,
                          claimFolder: claimFolder.path)
    }

    /// What `freeRange` saw when it found no range.
    struct NoFreeRange: Error, CustomStringConvertible {
        let count: Int, space: Range<Int>, claimedElsewhere: Int, inUse: Int, claimFolder: String
        var description: String {
            "no \(count) consecutive free ports in \(space.lowerBound)-\(space.upperBound - 1): \(claimedElsewhere) ranges "
                + "touched blocks other test processes claim (flocks on \(claimFolder)), \(inUse) had a port in use"
        }
    }

    /// Claims the blocks of `claimBlock` ports that `ports` touches for this process, against other test processes on
    /// the machine (two suites side by side: a worktree's beside a CI rehearsal); nil when it did, else the first
    /// block another process holds. Each process starts its ranges at a random place, and two that sweep into each
    /// other both found a range free and started runners on it (a full run beside another failed so). A claim is an
    /// exclusive `flock` on one file per block, held until this process exits (the kernel drops it then, even after a
    /// crash), so it costs at most one descriptor per block.
    private static func claim(_ ports: Range<Int>) -> Int? {
        let first = (ports.lowerBound - space.lowerBound) / claimBlock
        let last = (ports.upperBound - 1 - space.lowerBound) / claimBlock
        return claimed.withLockedValue { claimed -> Int? in
            var taken: [Int: Int32] = [:]
            for block in first...last where claimed[block] == nil {
                let path = claimFile(blockStart(block))
                let fd = open(path, O_CREAT | O_RDONLY | O_CLOEXEC, 0o666)
                guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                    if fd >= 0 { close(fd) }
                    for fd in taken.values { close(fd) }
                    return block
                }
                taken[block] = fd
            }
            claimed.merge(taken) { old, _ in old }
            return nil
        }
    }

    private static func blockStart(_ block: Int) -> Int { space.lowerBound + block * claimBlock }

    /// The first ports of the `count` blocks from where the next range would start (a test's view of the search).
    static func blocksAhead(_ count: Int) -> [Int] {
        let next = blockCursor.withLockedValue { $0 }
        let blocks = space.count / claimBlock
        return (0..<count).map { blockStart(((next - space.lowerBound) / claimBlock + $0) % blocks) }
    }

    /// The first ports of the blocks `ports` touches.
    static func blocks(touching ports: Range<Int>) -> [Int] {
        Array(stride(from: blockStart((ports.lowerBound - space.lowerBound) / claimBlock), to: ports.upperBound,
                     by: claimBlock))
    }

    /// The file whose `flock` claims the block starting at `start`.
    static func claimFile(_ start: Int) -> String { claimFolder.appendingPathComponent("ports-\(start)").path }

    private static let claimBlock = 128
    /// This process's claims, by block: the descriptors are never closed, so a claim lasts as long as the process.
    private static let claimed = NIOLockedValueBox<[Int: Int32]>([:])
    /// One file per block, named by its first port.
    private static let claimFolder: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-fixtures-test-ports")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o1777)
        return folder
    }()

    /// Where ranges come from: below every ephemeral range, above the catalog's default ports (9800-9900). Room for
    /// 171 blocks, so for three whole suites at once.
    private static let space = 10_000..<32_000
    /// Where the next range starts: a random place for each process, then onwards.
    private static let blockCursor = NIOLockedValueBox(Int.random(in: 10_000..<30_000))

    /// Whether this machine has a usable ::1.
    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return withSocketAddress(host: "::1", port: 0) { bind(fd, $0, $1) == 0 }
    }()

    private static func withSocketAddress<T>(host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// `::1`, `0:0:0:0:0:0:0:1` and `127.0.0.1` in one canonical spelling.
    static func canonicalIP(_ text: String) -> String {
        var v6 = in6_addr()
        if text.contains(":"), inet_pton(AF_INET6, text, &v6) == 1 {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count))
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return text
    }
}
