import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing
@testable import TLSFixtures

/// `TLSServerHandler` below the socket: an `EmbeddedChannel` on one side, a real OpenSSL client (the same memory-BIO
/// connection, in the client role) on the other, bytes moved by hand — the way swift-nio-ssl's `NIOSSLHandler` tests
/// (`interactInMemory`) drive their handler. Time is the embedded loop's, so deadlines are tested exactly, not by sleeping.
@Suite("TLSServerHandler in an EmbeddedChannel", .ownThreads)
struct TLSServerHandlerTests {
    static let handshakeTimeout = TimeAmount.seconds(10)

    /// What the application above the handler saw.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var plaintext = ""
        var handshakes: [HandshakeDetails] = []
        var inactive = false
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            plaintext += buffer.readString(length: buffer.readableBytes) ?? ""
        }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let done = event as? TLSHandshakeCompleted { handshakes.append(done.details) }
            context.fireUserInboundEventTriggered(event)
        }
        func channelInactive(context: ChannelHandlerContext) { inactive = true }
    }

    /// A server that speaks first (an SMTP or FTP banner): it writes before the handshake can have finished.
    final class Greeter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        var written: EventLoopFuture<Void>?
        func channelActive(context: ChannelHandlerContext) {
            written = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: "220 hello\r\n")))
            context.fireChannelActive()
        }
    }

    /// Holds every write's promise: a peer that has stopped reading, so nothing written ever completes.
    final class StalledWrites: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var held: [EventLoopPromise<Void>?] = []
        var bytes = 0
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            bytes += unwrapOutboundIn(data).readableBytes
            held.append(promise)
        }
        func flush(context: ChannelHandlerContext) {}
    }

    /// A server channel with the handler and a recorder, and the OpenSSL client that will talk to it.
    struct Pair {
        let channel: EmbeddedChannel
        let recorder = Recorder()
        let client: OpenSSLConnection

        /// The fixture's connection log, when the handler records (`records: true`).
        let log = ConnectionLog(capacity: 4)

        init(extra: [ChannelHandler] = [], maxVersion: TLSVersion = .tls1_3, alpn: [String] = [],
             clientSettings: TLSSettings? = nil, records: Bool = false) throws {
            let ca = try CertificateAuthority.ephemeral()
            let leaf = try ca.issueServerCertificate()
            let server = try TLSContext.server(settings: TLSSettings(), certificate: leaf.certificate, key: leaf.privateKey, chain: [])
            channel = EmbeddedChannel()
            let recording = records ? ConnectionRecorder(log: log, peer: nil, annotator: nil) : nil
            let handler = try TLSServerHandler(context: server, handshakeTimeout: TLSServerHandlerTests.handshakeTimeout,
                                               logger: Logger(label: "test"), recorder: recording)
            try channel.pipeline.syncOperations.addHandlers([handler, recorder] + extra)
            let settings = clientSettings ?? TLSSettings(maxVersion: maxVersion)
            client = try OpenSSLConnection(context: try TLSContext.client(settings: settings, alpn: alpn), role: .client)
        }

        /// The one record the handler wrote.
        var record: ConnectionRecord? { log.records.first }

        func activate() throws {
            try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }

        /// Everything the server sent since the last call, fed to the client.
        func deliverToClient() throws {
            while let bytes = try channel.readOutbound(as: ByteBuffer.self) { client.consume(bytes) }
        }

        /// Client output to the server, `chunk` bytes per read (1: a client that trickles).
        func deliverToServer(chunk: Int = .max) throws {
            guard let bytes = client.takeOutput(allocator: channel.allocator) else { return }
            var rest = bytes
            while rest.readableBytes > 0, channel.isActive {
                let piece = rest.readSlice(length: min(chunk, rest.readableBytes))!
                try channel.writeInbound(piece)
            }
        }

        /// Runs the handshake to the end; returns how many round trips it took.
        @discardableResult
        func handshake(chunk: Int = .max) throws -> Int {
            for round in 1...10 {
                let step = client.handshake()
                try deliverToServer(chunk: chunk)
                try deliverToClient()
                if case .complete = step, !recorder.handshakes.isEmpty { return round }
                if case .failed(let error) = step { throw error }
            }
            Issue.record("the handshake did not finish in 10 rounds")
            return 10
        }

        /// Plaintext the client can decrypt from what it has received, and whether a close_notify came with it.
        func clientReads() -> (String, closeNotify: Bool) {
            var buffer = channel.allocator.buffer(capacity: 16_384)
            var text = ""
            while true {
                buffer.clear()
                let result = client.read(into: &buffer)
                text += buffer.readString(length: buffer.readableBytes) ?? ""
                switch result {
                case .data: continue
                case .closeNotify: return (text, true)
                case .needsInput, .failed: return (text, false)
                }
            }
        }
    }

    @Test("a full handshake fires TLSHandshakeCompleted once, then plaintext flows both ways")
    func handshakeAndData() throws {
        let pair = try Pair()
        try pair.activate()
        try pair.handshake()
        #expect(pair.recorder.handshakes.count == 1)
        #expect(pair.recorder.handshakes.first?.protocol == "TLSv1.3")
        #expect(pair.client.details.protocol == "TLSv1.3")

        #expect(pair.client.write(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n")) == nil)
        try pair.deliverToServer()
        #expect(pair.recorder.plaintext == "GET / HTTP/1.1\r\n\r\n")

        // Two writes before one flush go out together; the client decrypts both.
        pair.channel.write(ByteBuffer(string: "HTTP/1.1 200 OK\r\n"), promise: nil)
        pair.channel.write(ByteBuffer(string: "\r\n"), promise: nil)
        #expect(try pair.channel.readOutbound(as: ByteBuffer.self) == nil, "nothing is sent before the flush")
        pair.channel.flush()
        try pair.deliverToClient()
        #expect(pair.clientReads().0 == "HTTP/1.1 200 OK\r\n\r\n")
    }

    /// What a client that checks something only after the handshake does when it objects: an alert once connected.
    /// Made deterministic here: the client is given a server record with one byte flipped, so it fails the record's
    /// integrity check and sends a fatal bad_record_mac(20), which the fixture must record as sent after the handshake.
    @Test("an alert the client sends after the handshake is recorded as alertAfterHandshake, for TLS 1.2 and 1.3")
    func alertAfterHandshakeRecorded() throws {
        for maxVersion in [TLSVersion.tls1_2, .tls1_3] {
            let pair = try Pair(maxVersion: maxVersion, records: true)
            try pair.activate()
            try pair.handshake()
            pair.channel.writeAndFlush(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n"), promise: nil)
            var sent = try #require(try pair.channel.readOutbound(as: ByteBuffer.self), "\(maxVersion)")
            let last = sent.writerIndex - 1
            sent.setInteger(sent.getInteger(at: last, as: UInt8.self)! ^ 0x01, at: last)
            pair.client.consume(sent)
            #expect(pair.clientReads().closeNotify == false)
            try pair.deliverToServer()
            let record = try #require(pair.record, "\(maxVersion)")
            #expect(record.alertAfterHandshake == TLSAlert(code: 20), "\(maxVersion): \(record.summary)")
            #expect(record.summary.contains("then the client sent bad_record_mac(20)"), "\(record.summary)")
        }
    }

    @Test("TLS 1.2 too: the handshake and the data survive a client that sends one byte at a time")
    func partialRecords() throws {
        for maxVersion in [TLSVersion.tls1_2, .tls1_3] {
            let pair = try Pair(maxVersion: maxVersion)
            try pair.activate()
            try pair.handshake(chunk: 1)
            #expect(pair.recorder.handshakes.count == 1, "\(maxVersion)")
            #expect(pair.client.write(ByteBuffer(string: "split across many reads")) == nil)
            try pair.deliverToServer(chunk: 1)
            #expect(pair.recorder.plaintext == "split across many reads", "\(maxVersion)")
        }
    }

    @Test("a write made before the handshake finished is held, then sent once it has, and its promise succeeds")
    func pendingWriteReplay() throws {
        let greeter = Greeter()
        let pair = try Pair(extra: [greeter])
        try pair.activate()
        let written = try #require(greeter.written)
        // Only the handshake may leave before it completes: no application record is queued behind the ServerHello.
        let settled = NIOLockedValueBox(false)
        written.whenComplete { _ in settled.withLockedValue { $0 = true } }
        _ = pair.client.handshake()
        try pair.deliverToServer()
        #expect(!settled.withLockedValue { $0 }, "the greeting's promise completed before the handshake did")
        try pair.handshake()
        #expect(settled.withLockedValue { $0 })
        try written.wait()
        #expect(pair.clientReads().0 == "220 hello\r\n")
    }

    @Test("the peer's close during the handshake ends the connection: the held write fails, no deadline is left behind")
    func closeDuringHandshake() throws {
        let greeter = Greeter()
        let pair = try Pair(extra: [greeter])
        try pair.activate()
        _ = pair.client.handshake()
        try pair.deliverToServer()   // ClientHello in, ServerHello out: mid-handshake
        pair.channel.pipeline.fireChannelInactive()
        #expect(pair.recorder.inactive)
        #expect(throws: ChannelError.ioOnClosedChannel) { try greeter.written?.wait() }
        #expect(pair.recorder.handshakes.isEmpty)
        // Past the handshake deadline nothing fires: it was cancelled with the connection.
        pair.channel.embeddedEventLoop.advanceTime(by: Self.handshakeTimeout + .seconds(1))
        #expect(pair.recorder.handshakes.isEmpty)
    }

    @Test("our close during the handshake closes at once, without a close_notify in the middle of it")
    func ourCloseDuringHandshake() throws {
        let pair = try Pair()
        try pair.activate()
        _ = pair.client.handshake()
        try pair.deliverToServer()
        try pair.deliverToClient()
        try pair.channel.close().wait()
        #expect(!pair.channel.isActive)
        #expect(try pair.channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test("a handshake that never finishes is abandoned at handshakeTimeout, not before")
    func handshakeTimeout() throws {
        let pair = try Pair()
        try pair.activate()
        _ = pair.client.handshake()
        let hello = try #require(pair.client.takeOutput(allocator: pair.channel.allocator))
        try pair.channel.writeInbound(hello.getSlice(at: hello.readerIndex, length: 5)!)   // a record header, then silence
        pair.channel.embeddedEventLoop.advanceTime(by: Self.handshakeTimeout - .milliseconds(1))
        #expect(pair.channel.isActive)
        pair.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!pair.channel.isActive)
        #expect(pair.recorder.handshakes.isEmpty)
    }

    @Test("close sends close_notify after the pending data; a peer that answers with its own is closed cleanly")
    func gracefulClose() throws {
        let pair = try Pair()
        try pair.activate()
        try pair.handshake()
        pair.channel.write(ByteBuffer(string: "last words"), promise: nil)
        let closed = pair.channel.close()
        try pair.deliverToClient()
        let (text, closeNotify) = pair.clientReads()
        #expect(text == "last words" && closeNotify)
        try closed.wait()
        #expect(!pair.channel.isActive)
    }

    @Test("the client's close_notify is answered with ours, then the transport closes")
    func peerCloseNotify() throws {
        let pair = try Pair()
        try pair.activate()
        try pair.handshake()
        pair.client.shutdown()
        try pair.deliverToServer()
        try pair.deliverToClient()
        #expect(pair.clientReads().closeNotify)
        #expect(!pair.channel.isActive)
    }

    @Test("a peer that stops reading cannot hold the close: it is forced after closeTimeout, not before")
    func closeTimeout() throws {
        let pair = try Pair()
        try pair.activate()
        try pair.handshake()
        // From here on nothing written completes, as with a peer whose receive window is full.
        let stalled = StalledWrites()
        try pair.channel.pipeline.syncOperations.addHandler(stalled, position: .first)
        let closed = pair.channel.close()
        #expect(stalled.bytes > 0, "close_notify was not written")
        pair.channel.embeddedEventLoop.advanceTime(by: TLSServerHandler.closeTimeout - .milliseconds(1))
        #expect(pair.channel.isActive, "closed before closeTimeout")
        pair.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!pair.channel.isActive, "not closed at closeTimeout")
        try closed.wait()
    }
}
