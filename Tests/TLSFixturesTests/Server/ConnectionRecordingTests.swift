import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing
@testable import TLSFixtures

/// What `TLSServerHandler` records, below the socket: an `EmbeddedChannel` with a real OpenSSL client on the other side
/// (`TLSServerHandlerTests.Pair`), time the embedded loop's, so the timeouts are exact.
@Suite("Connection recording in an EmbeddedChannel")
struct ConnectionRecordingTests {
    typealias Pair = TLSServerHandlerTests.Pair

    @Test("a completed handshake: what was agreed, and the ClientHello as the client sent it")
    func completed() throws {
        let pair = try Pair(alpn: ["h2", "http/1.1"], records: true)
        try pair.activate()
        try pair.handshake()
        let record = try #require(pair.record)
        let details = pair.client.details
        #expect(record.outcome == .handshakeCompleted(.init(protocol: "TLSv1.3", cipher: details.cipher.iana, group: details.group,
                                                             clientCertificate: false)))
        let hello = try #require(record.clientHello)
        #expect(hello.alpn == ["h2", "http/1.1"])   // the client's list, in its order
        #expect(hello.serverName == nil)             // this client sets no SNI
        #expect(hello.extensions.contains("application_layer_protocol_negotiation"))
        #expect(!hello.extensions.contains("server_name"))
        #expect(hello.highestVersion == .tls1_3)
        #expect(record.endedAt == nil)
        pair.channel.pipeline.fireChannelInactive()
        #expect(pair.record?.endedAt != nil)
        #expect(pair.record?.outcome?.kind == "handshakeCompleted", "the close keeps the outcome")
    }

    @Test("the handshake timeout, before the ClientHello and after the server's flight")
    func timeouts() throws {
        let silent = try Pair(records: true)
        try silent.activate()
        silent.channel.embeddedEventLoop.advanceTime(by: TLSServerHandlerTests.handshakeTimeout)
        #expect(silent.record?.outcome == .timedOut(phase: .beforeClientHello))
        #expect(silent.record?.clientHello == nil)

        let deciding = try Pair(records: true)
        try deciding.activate()
        _ = deciding.client.handshake()
        try deciding.deliverToServer()   // ClientHello in, the server's flight out; the client never answers
        #expect(try deciding.channel.readOutbound(as: ByteBuffer.self) != nil)
        deciding.channel.embeddedEventLoop.advanceTime(by: TLSServerHandlerTests.handshakeTimeout)
        #expect(deciding.record?.outcome == .timedOut(phase: .afterServerFlight))
        #expect(deciding.record?.clientHello != nil)
    }

    @Test("an alert from the client after the server's flight: RFC 5246's plaintext alert record, fatal unknown_ca")
    func alertReceived() throws {
        let pair = try Pair(maxVersion: .tls1_2, records: true)
        try pair.activate()
        _ = pair.client.handshake()
        try pair.deliverToServer()
        try pair.deliverToClient()
        // ContentType alert (21), version 3.3, length 2, level fatal (2), description unknown_ca (48): RFC 5246 §6.2.1, §7.2.
        try pair.channel.writeInbound(ByteBuffer(bytes: [21, 3, 3, 0, 2, 2, 48]))
        #expect(pair.record?.outcome == .alertReceived(.unknownCA, phase: .afterServerFlight))
        #expect(!pair.channel.isActive)
    }

    @Test("an alert from the server: a TLS 1.0–1.1 client of a TLS 1.2 server gets protocol_version(70), with OpenSSL's reason")
    func alertSent() throws {
        let old = TLSSettings(minVersion: .tls1_0, maxVersion: .tls1_1, ciphers: "ALL:@SECLEVEL=0", securityLevel: 0)
        let pair = try Pair(clientSettings: old, records: true)
        try pair.activate()
        _ = pair.client.handshake()
        try pair.deliverToServer()
        guard case .alertSent(let alert, let reason, let phase)? = pair.record?.outcome else {
            Issue.record("expected an alert sent: \(pair.record?.summary ?? "no record")")
            return
        }
        #expect(alert == .protocolVersion)
        #expect(phase == .afterClientHello)
        #expect(reason == "unsupported protocol")
        #expect(pair.record?.clientHello?.legacyVersion == "TLSv1.1")
        #expect(pair.record?.clientHello?.supportedVersions == [])   // before TLS 1.3 there is no such extension
    }

    @Test("a client that goes away mid-ClientHello: closed without an alert, before the ClientHello")
    func closedEarly() throws {
        let pair = try Pair(records: true)
        try pair.activate()
        _ = pair.client.handshake()
        let hello = try #require(pair.client.takeOutput(allocator: pair.channel.allocator))
        try pair.channel.writeInbound(hello.getSlice(at: hello.readerIndex, length: 5)!)
        pair.channel.pipeline.fireChannelInactive()
        #expect(pair.record?.outcome == .closedWithoutAlert(phase: .beforeClientHello))
        #expect(pair.record?.endedAt != nil)
    }
}

@Suite("ConnectionLog: a bounded ring, and waiting without polling", .timeLimit(.minutes(1)))
struct ConnectionLogTests {
    /// Until a reader is registered as waiting, so that what the test does next happens while it waits.
    static func untilWaiting(_ log: ConnectionLog, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        // A short sleep, not Task.yield: a yielding loop can keep the woken reader off a busy cooperative pool.
        try await Poll.require("a reader waiting on the log", every: .milliseconds(1), sourceLocation: sourceLocation) {
            log.waiterCount > 0
        }
    }

    @Test("keeps the most recent `capacity` records; an update to one it dropped changes nothing")
    func ring() {
        let log = ConnectionLog(capacity: 3)
        let ids = (1...5).map { log.open(peer: "127.0.0.1:\($0)") }
        #expect(ids == [1, 2, 3, 4, 5])
        #expect(log.records.map(\.id) == [3, 4, 5])
        #expect(log.records.map(\.peer) == ["127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"])
        log.update(1) { $0.requestCount = 99 }
        log.update(4) { $0.requestCount = 1 }
        #expect(log.records.map(\.requestCount) == [0, 1, 0])
        #expect(log.latestID == 5)
        #expect(log.records(after: 4).map(\.id) == [5])
        #expect(log.records(after: 5).isEmpty)
        // A cursor is a client's number (`?after=`): any one answers, none traps (Int.max crashed the runner).
        #expect(log.records(after: Int.max).isEmpty && log.records(after: Int.max - 1).isEmpty)
        #expect(log.records(after: Int.min).map(\.id) == [3, 4, 5] && log.records(after: -1).map(\.id) == [3, 4, 5])
    }

    @Test("a waiter wakes on the change it waits for, and at its deadline when none comes")
    func waiting() async throws {
        let log = ConnectionLog(capacity: 8)
        // Far enough that a loaded machine cannot reach it by accident: the point is which event ended the wait.
        let far = NIODeadline.now() + .seconds(120)
        let woken = Task { await log.records(after: 0, until: far) { $0.contains { $0.endedAt != nil } } }
        try await Self.untilWaiting(log)
        let id = log.open(peer: "a")   // a change, but not the awaited one: the reader waits on
        try await Self.untilWaiting(log)
        log.update(id) { $0.endedAt = Date() }
        let records = await woken.value
        #expect(records.map(\.id) == [id])
        #expect(NIODeadline.now() < far, "woken by the change, not by its 120 s deadline")

        // Nothing settles: the wait ends at its deadline with what there is.
        let unsettled = await log.records(after: 0, until: .now() + .milliseconds(50)) { _ in false }
        #expect(unsettled.map(\.id) == [id])
    }

    @Test("a cancelled waiter returns")
    func cancelled() async throws {
        let log = ConnectionLog(capacity: 8)
        // Far enough that a loaded machine cannot reach it by accident: the point is which event ended the wait.
        let far = NIODeadline.now() + .seconds(120)
        let task = Task { await log.records(after: 0, until: far) { !$0.isEmpty } }
        try await Self.untilWaiting(log)
        task.cancel()
        #expect(await task.value.isEmpty)
        #expect(NIODeadline.now() < far, "returned on cancellation, not at its 120 s deadline")
    }
}
