import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import TLSFixtures

/// Every suite of this folder runs one test at a time: they measure this process's descriptors, threads and memory,
/// and a neighbour's connections would blur the numbers.
@Suite("Reliability and security", .serialized)
enum ReliabilitySuite {}

/// Runs blocking socket work on a Dispatch thread, not on the cooperative pool that the rest of the tests share.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}

/// Starts `name` warm, runs `body` with the fixture and the baseline, checks recovery, and always stops the fixture.
func withHostileFixture(_ name: String, handshakeTimeout: TimeAmount = ReliabilityFixtures.handshakeTimeout,
                        idleTimeout: TimeAmount = ReliabilityFixtures.idleTimeout, memoryGrowthMB: Int = Bounds.residentGrowthMB,
                        sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: (FixtureServer) async throws -> Void) async throws {
    let (fixture, baseline) = try await ReliabilityFixtures.startWarm(name, handshakeTimeout: handshakeTimeout, idleTimeout: idleTimeout)
    do {
        try await body(fixture)
        try await ReliabilityFixtures.expectRecovered(fixture, baseline: baseline, memoryGrowthMB: memoryGrowthMB, sourceLocation: sourceLocation)
    } catch {
        await fixture.stop()
        throw error
    }
    await fixture.stop()
}

extension ReliabilitySuite {
    /// Bytes no TLS client would send, against a running fixture with a 1 s handshake timeout and a 2 s idle timeout.
    /// Each test ends with `expectRecovered`: a normal client is served at once, and descriptors, threads and memory
    /// are back to the baseline.
    @Suite("Hostile input against a running fixture", .enabled(if: Platform.isLinux, "reads /proc/self"))
    struct HostileInput {
        static let scenarios = ["tls-v1-0", "tls-v1-3"]
        static var bound: TimeInterval { Bounds.closeBound(ReliabilityFixtures.handshakeTimeout) }

        /// What the server did with one connection's bytes.
        static func send(_ bytes: [UInt8], to port: Int, wait: TimeInterval = bound, trickle: [UInt8] = [],
                         interval: TimeInterval = 1) async throws -> RawConnection.Outcome {
            try await offThePool {
                let connection = try RawConnection(port: port)
                if !bytes.isEmpty { connection.send(bytes) }
                return connection.readUntilClosed(timeout: wait, trickle: trickle, interval: interval)
            }
        }

        /// Each payload on its own connection, all sent before any is read; every close is awaited against one
        /// common deadline.
        static func sendAtOnce(_ payloads: [[UInt8]], to port: Int) async throws -> [RawConnection.Outcome] {
            try await offThePool {
                let start = Date()
                let connections = try payloads.map { payload in
                    let connection = try RawConnection(port: port)
                    connection.send(payload)
                    return connection
                }
                return connections.map { $0.readUntilClosed(timeout: max(0.1, Self.bound - Date().timeIntervalSince(start))) }
            }
        }

        /// A fixture may answer garbage with nothing or with one TLS alert, and must then close: never a ServerHello,
        /// never an HTTP answer, never silence until the client gives up.
        static func expectRejected(_ outcome: RawConnection.Outcome, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(outcome.closedAfter != nil, "\(what): still open after \(bound) s", sourceLocation: sourceLocation)
            #expect(outcome.received.isEmpty || (outcome.startsWithAlert && outcome.received.count == 7),
                    "\(what): unexpected reply \(outcome.received.prefix(16).map { String(format: "%02x", $0) }.joined())",
                    sourceLocation: sourceLocation)
        }

        @Test("random bytes are refused and the connection closed", arguments: scenarios)
        func randomBytes(scenario: String) async throws {
            try await withHostileFixture(scenario) { fixture in
                // 24 reproducible payloads of 1 byte to 4 KiB, all connections at once; a failure names its seed.
                let port = fixture.port
                let seeds = Array(UInt64(1)...24)
                let payloads = seeds.map { seed in
                    var generator = SeededBytes(seed: seed)
                    return generator.bytes([1, 5, 17, 300, 1_500, 4_096][Int(seed) % 6])
                }
                let outcomes = try await Self.sendAtOnce(payloads, to: port)
                for (seed, outcome) in zip(seeds, outcomes) { Self.expectRejected(outcome, "random bytes, seed \(seed)") }
            }
        }

        @Test("an SSLv2-format ClientHello is refused with an alert", arguments: scenarios)
        func sslv2ClientHello(scenario: String) async throws {
            try await withHostileFixture(scenario) { fixture in
                // The SSLv2-compatible form TLS 1.0 clients once sent (version 3.1 inside), offering suites the
                // TLS 1.0 fixture does serve; and a pure SSLv2 hello (version 0.2, SSL2_RC4_128_WITH_MD5).
                let compatible = HandshakeBytes.sslv2ClientHello(version: (3, 1), cipherSpecs: [[0x00, 0xC0, 0x13], [0x00, 0x00, 0x2F]])
                let pure = HandshakeBytes.sslv2ClientHello(version: (0, 2), cipherSpecs: [[0x01, 0x00, 0x80]])
                for (label, hello) in [("SSLv2-compatible hello", compatible), ("pure SSLv2 hello", pure)] {
                    let outcome = try await Self.send(hello, to: fixture.port)
                    Self.expectRejected(outcome, label)
                    #expect(outcome.startsWithAlert, "\(label): closed without an alert")
                }
            }
        }

        @Test("a truncated ClientHello is closed by the handshake deadline", arguments: scenarios)
        func truncatedClientHello(scenario: String) async throws {
            let hello = try HandshakeBytes.clientHello()
            try await withHostileFixture(scenario) { fixture in
                // Inside the record header, right after it, halfway, one byte short: all at once, each left waiting.
                let cuts = [3, 5, 6, hello.count / 2, hello.count - 1]
                let outcomes = try await Self.sendAtOnce(cuts.map { Array(hello.prefix($0)) }, to: fixture.port)
                for (cut, outcome) in zip(cuts, outcomes) {
                    Self.expectRejected(outcome, "first \(cut) of \(hello.count) bytes")
                }
            }
        }

        /// The record length field has 16 bits, so no record header can announce 2^24 bytes; the 24-bit length is the
        /// handshake message's. Both are tried at their maximum, plus the record size just past TLS's ciphertext
        /// limit (2^14 + 2048 + 1). Each must be refused on sight (an alert), not after buffering what it announces.
        @Test("oversized length announcements are refused on sight", arguments: scenarios)
        func oversizedAnnouncements(scenario: String) async throws {
            try await withHostileFixture(scenario) { fixture in
                let cases: [(String, [UInt8])] = [
                    ("record header announcing 65535 bytes", HandshakeBytes.recordHeader(length: 0xFFFF)),
                    ("record header announcing 2^14+2048+1 bytes", HandshakeBytes.recordHeader(length: (1 << 14) + 2048 + 1)),
                    ("handshake header announcing 2^24-1 bytes", HandshakeBytes.recordHeader(length: 4) + [0x01, 0xFF, 0xFF, 0xFF]),
                ]
                for (label, bytes) in cases {
                    let outcome = try await Self.send(bytes, to: fixture.port)
                    Self.expectRejected(outcome, label)
                    #expect(outcome.startsWithAlert, "\(label): no alert, so it was not refused on sight")
                }
                // A legal record size (2^14+1, within the TLS 1.0–1.2 ciphertext limit) that opens a handshake message
                // announcing 2^24-1 bytes, then silence: the server may wait for the record, but only until its deadline.
                let patient = HandshakeBytes.recordHeader(length: (1 << 14) + 1) + [0x01, 0xFF, 0xFF, 0xFF]
                Self.expectRejected(try await Self.send(patient, to: fixture.port), "2^14+1-byte record announcing a 2^24-1 message")
            }
        }

        @Test("plain HTTP to the TLS port is refused, not answered", arguments: scenarios)
        func plainHTTP(scenario: String) async throws {
            try await withHostileFixture(scenario) { fixture in
                let request = Array("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n".utf8)
                let outcome = try await Self.send(request, to: fixture.port)
                Self.expectRejected(outcome, "plain HTTP")
                #expect(!String(decoding: outcome.received, as: UTF8.self).hasPrefix("HTTP/"))
            }
        }

        @Test("a silent client is closed by the handshake timeout", arguments: scenarios)
        func silentClient(scenario: String) async throws {
            try await withHostileFixture(scenario) { fixture in
                let outcome = try await Self.send([], to: fixture.port)
                Self.expectRejected(outcome, "silent client")
                // Closed by the deadline, not refused on connect: a slow but honest client gets its full second.
                #expect((outcome.closedAfter ?? 0) >= 0.5 * Double(ReliabilityFixtures.handshakeTimeout.nanoseconds) / 1e9)
            }
        }

        /// Here the handshake timeout is 3 s and the idle timeout 2 s: a byte a second keeps the idle timer from ever
        /// firing, so only the handshake deadline can end the connection.
        @Test("a byte-a-second client is closed by the handshake deadline, not kept alive by its trickle", arguments: scenarios)
        func trickle(scenario: String) async throws {
            let hello = try HandshakeBytes.clientHello()
            let deadline = TimeAmount.seconds(3)
            try await withHostileFixture(scenario, handshakeTimeout: deadline, idleTimeout: .seconds(2)) { fixture in
                let outcome = try await Self.send([], to: fixture.port, wait: Bounds.closeBound(deadline), trickle: hello, interval: 1)
                Self.expectRejected(outcome, "one byte a second")
                #expect(outcome.trickled >= 3, "closed after only \(outcome.trickled) bytes: a byte a second should outlive the 2 s idle timeout and meet the 3 s deadline")
            }
        }

        @Test("handshakes abandoned halfway with a TCP reset leave nothing behind", arguments: scenarios)
        func resetMidHandshake(scenario: String) async throws {
            let hello = try HandshakeBytes.clientHello()
            try await withHostileFixture(scenario) { fixture in
                let port = fixture.port
                // 50 clients send a whole ClientHello, read the server's first flight, then reset; 50 more reset
                // halfway through their ClientHello.
                let answered = try await offThePool { () -> Int in
                    var answered = 0
                    for index in 0..<100 {
                        let connection = try RawConnection(port: port)
                        if index % 2 == 0 {
                            connection.send(hello)
                            if connection.readFirst(timeout: 2).first == 0x16 { answered += 1 }
                        } else {
                            connection.send(Array(hello.prefix(hello.count / 2)))
                        }
                        connection.reset()
                    }
                    return answered
                }
                #expect(answered == 50, "the server answered \(answered) of 50 complete ClientHellos with a ServerHello")
            }
        }

        /// What "refused" looks like to a client: `openssl s_client` completes the handshake, prints RENEGOTIATING on
        /// "R", receives the server's no_renegotiation alert and fails with "no renegotiation". Renegotiation does not
        /// exist in TLS 1.3, hence TLS 1.0 and 1.2 here.
        @Test("client-initiated renegotiation is refused", .requires(Tools.openssl), arguments: [("tls-v1-0", "-tls1"), ("tls-v1-2", "-tls1_2")])
        func renegotiation(scenario: String, flag: String) async throws {
            try await withHostileFixture(scenario) { fixture in
                let port = fixture.port
                let result = try await offThePool {
                    try Subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", flag,
                                        "-cipher", "ALL:@SECLEVEL=0"], stdin: Data("R\n".utf8), timeout: 20)
                }
                #expect(!result.timedOut)
                #expect(result.stdout.contains("Protocol  : TLSv1"), "the handshake did not complete: \(result.combined)")
                #expect(result.combined.contains("RENEGOTIATING"), "s_client did not try: \(result.combined)")
                #expect(result.combined.contains("no renegotiation"), "renegotiation was not refused: \(result.combined)")
                #expect(result.status != 0)
            }
        }
    }
}
