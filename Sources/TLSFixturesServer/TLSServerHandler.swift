import Logging
import NIOCore
import TLSFixturesOpenSSL
import TLSFixturesWire

/// Fired inbound once the handshake completes, carrying what was negotiated.
package struct TLSHandshakeCompleted: Sendable {
    package let details: HandshakeDetails
}

/// The server side of TLS, on OpenSSL, for one connection. Modelled on swift-nio-ssl's `NIOSSLHandler`.
///
/// Reads: `ByteBuffer` ciphertext from the network. Fires: `ByteBuffer` plaintext, and `TLSHandshakeCompleted` once.
/// Writes: `ByteBuffer` plaintext from the application. Sends: `ByteBuffer` ciphertext.
///
/// Given a `ConnectionRecorder`, it records the client's ClientHello and how the handshake ended (completed, an alert
/// either way, a close, a timeout), and where in the handshake that happened.
///
/// States: `idle` → `handshaking` → `active` → `closing` → `closed`. A handshake that does not finish within
/// `handshakeTimeout` (a silent client, one byte a second) is abandoned. A handshake or record error is logged with
/// OpenSSL's reason and closes this connection only. Our close sends close_notify; the peer's close_notify is
/// answered with ours.
package final class TLSServerHandler: ChannelDuplexHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case handshaking(deadline: Scheduled<Void>)
        case active
        case closing
        case closed
    }

    private var state = State.idle
    private let connection: OpenSSLConnection
    private let handshakeTimeout: TimeAmount
    private let logger: Logger
    /// Application writes made before the handshake finished, replayed once it has.
    private var pendingWrites: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    /// Plaintext written since the last flush, encrypted together at the flush: an HTTP response's head and body
    /// become one TLS record (one `SSL_write`, one ciphertext buffer) rather than one record per write.
    private var unflushed: ByteBuffer?
    private var unflushedPromises: [EventLoopPromise<Void>] = []
    private var plaintext: ByteBuffer?
    private var deliveredPlaintext = false
    private let recorder: ConnectionRecorder?
    private var recordedClientHello = false
    /// The server has answered the ClientHello (its flight, or a HelloRetryRequest): the client is deciding.
    private var serverFlightSent = false
    /// The client's first bytes (at most `ConnectionRecord.Outcome.maximumFirstBytes`), kept only while a recorder
    /// may need them: bytes that are not TLS are named in the record.
    private var firstBytes: [UInt8] = []

    package init(context: TLSContext, handshakeTimeout: TimeAmount, logger: Logger,
                 recorder: ConnectionRecorder? = nil) throws {
        connection = try OpenSSLConnection(context: context)
        self.handshakeTimeout = handshakeTimeout
        self.logger = logger
        self.recorder = recorder
    }

    // MARK: Lifecycle

    package func handlerAdded(context: ChannelHandlerContext) {
        plaintext = context.channel.allocator.buffer(capacity: 16_384)
        if context.channel.isActive { begin(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        begin(context: context)
    }

    private func begin(context: ChannelHandlerContext) {
        guard case .idle = state else { return }
        let timeout = handshakeTimeout
        let deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            guard case .handshaking = state else { return }
            logger.info("handshake timed out after \(timeout.nanoseconds / 1_000_000) ms; closing", metadata: peer(context))
            recorder?.conclude(.timedOut(phase: phase))
            state = .closed
            context.close(promise: nil)
        }
        state = .handshaking(deadline: deadline)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        if case .handshaking(let deadline) = state { deadline.cancel() }
        recorder?.close(outcomeIfNone: handshakeEndedOutcome(reason: nil))
        state = .closed
        failPendingWrites(ChannelError.ioOnClosedChannel)
        failUnflushed(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    // MARK: Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        recorder?.receivedBytes()
        switch state {
        case .idle, .closed:
            return
        case .handshaking:
            if recorder != nil, firstBytes.count < ConnectionRecord.Outcome.maximumFirstBytes {
                firstBytes += bytes.readableBytesView.prefix(ConnectionRecord.Outcome.maximumFirstBytes - firstBytes.count)
            }
            connection.consume(bytes)
            handshakeStep(context: context)
        case .active, .closing:
            connection.consume(bytes)
            decode(context: context)
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        if deliveredPlaintext {
            deliveredPlaintext = false
            context.fireChannelReadComplete()
        }
        sendOutput(context: context, flush: true)
    }

    private func handshakeStep(context: ChannelHandlerContext) {
        guard case .handshaking(let deadline) = state else { return }
        let step = connection.handshake()
        recordClientHello()
        switch step {
        case .needsInput:
            if sendOutput(context: context, flush: true), recordedClientHello { serverFlightSent = true }
        case .complete:
            deadline.cancel()
            state = .active
            sendOutput(context: context, flush: true)
            let details = connection.details
            recorder?.conclude(.handshakeCompleted(.init(protocol: details.protocol, cipher: details.cipher.iana,
                                                         group: details.group,
                                                         clientCertificate: details.clientCertificate != nil)))
            context.fireUserInboundEventTriggered(TLSHandshakeCompleted(details: details))
            replayPendingWrites(context: context)
            // Application data may have arrived in the same read as the client's Finished.
            decode(context: context)
        case .closed:
            deadline.cancel()
            logger.debug("client went away during the handshake", metadata: peer(context))
            recorder?.conclude(handshakeEndedOutcome(reason: nil))
            abort(context: context)
        case .failed(let error):
            deadline.cancel()
            logger.info("handshake failed: \(error.reasons.joined(separator: "; "))", metadata: peer(context))
            let reason = error.reasons.first.map(Self.reasonWithoutLibrary)
            recorder?.conclude(notTLSOutcome(reason: reason) ?? handshakeEndedOutcome(reason: reason))
            // Send the alert OpenSSL queued, so the client learns why, then close.
            abort(context: context)
        }
    }

    private func decode(context: ChannelHandlerContext) {
        guard var buffer = plaintext else { return }
        plaintext = nil
        defer { plaintext = buffer }
        while true {
            buffer.clear()
            let result = connection.read(into: &buffer)
            if buffer.readableBytes > 0, case .active = state {
                deliveredPlaintext = true
                // The pipeline usually consumes it at once; if it keeps a reference, `clear()` above gives this
                // buffer fresh storage instead of overwriting what was delivered.
                context.fireChannelRead(wrapInboundOut(buffer))
            }
            switch result {
            case .data: continue
            case .needsInput: return
            case .closeNotify:
                // Answer close_notify with ours, then close the transport.
                closeGracefully(context: context, promise: nil)
                return
            case .failed(let error):
                logger.info("TLS record error: \(error.reasons.joined(separator: "; "))", metadata: peer(context))
                if let alert = connection.observations.alertReceivedAfterHandshake {
                    recorder?.alertAfterHandshake(alert)
                }
                abort(context: context)
                return
            }
        }
    }

    // MARK: Outbound

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = unwrapOutboundIn(data)
        switch state {
        case .idle, .handshaking:
            pendingWrites.append((bytes, promise))
        case .active:
            queue(bytes, promise: promise)
        case .closing, .closed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    package func flush(context: ChannelHandlerContext) {
        guard case .active = state else { return }
        encryptUnflushed(context: context)
        context.flush()
    }

    package func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all else {
            promise?.fail(ChannelError.operationUnsupported)
            return
        }
        switch state {
        case .active:
            closeGracefully(context: context, promise: promise)
        case .handshaking(let deadline):
            deadline.cancel()
            state = .closed
            context.close(mode: mode, promise: promise)
        case .idle, .closing, .closed:
            state = .closed
            context.close(mode: mode, promise: promise)
        }
    }

    private func queue(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) {
        if unflushed == nil {
            unflushed = bytes
        } else {
            unflushed!.writeImmutableBuffer(bytes)
        }
        if let promise { unflushedPromises.append(promise) }
    }

    /// Encrypts everything written since the last flush and passes the ciphertext on (unflushed).
    private func encryptUnflushed(context: ChannelHandlerContext) {
        guard let bytes = unflushed else { return }
        unflushed = nil
        let promise: EventLoopPromise<Void>?
        switch unflushedPromises.count {
        case 0: promise = nil
        case 1: promise = unflushedPromises[0]
        default:
            let combined = context.eventLoop.makePromise(of: Void.self)
            for each in unflushedPromises { combined.futureResult.cascade(to: each) }
            promise = combined
        }
        unflushedPromises.removeAll(keepingCapacity: true)
        if let error = connection.write(bytes) {
            logger.info("could not encrypt a response: \(error.reasons.joined(separator: "; "))", metadata: peer(context))
            promise?.fail(error)
            abort(context: context)
            return
        }
        if let output = connection.takeOutput(allocator: context.channel.allocator) {
            context.write(wrapOutboundOut(output), promise: promise)
        } else {
            promise?.succeed(())
        }
    }

    private func failUnflushed(_ error: Error) {
        unflushed = nil
        let promises = unflushedPromises
        unflushedPromises = []
        for promise in promises { promise.fail(error) }
    }

    private func replayPendingWrites(context: ChannelHandlerContext) {
        // A handler that closed the channel on `TLSHandshakeCompleted` has already started the shutdown.
        guard case .active = state else {
            failPendingWrites(ChannelError.ioOnClosedChannel)
            return
        }
        let writes = pendingWrites
        pendingWrites = []
        for (bytes, promise) in writes { queue(bytes, promise: promise) }
        if !writes.isEmpty {
            encryptUnflushed(context: context)
            context.flush()
        }
    }

    private func failPendingWrites(_ error: Error) {
        let writes = pendingWrites
        pendingWrites = []
        for (_, promise) in writes { promise?.fail(error) }
    }

    // MARK: Closing

    /// close_notify, flushed, then the transport closes once it is written (never waiting on the peer). A peer that
    /// stopped reading could leave that write pending forever, so the close is forced after `closeTimeout`.
    private func closeGracefully(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard case .active = state else {
            context.close(promise: promise)
            return
        }
        // Whatever the application wrote goes out before our close_notify.
        encryptUnflushed(context: context)
        guard case .active = state else {   // Encrypting failed and aborted the connection.
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        state = .closing
        connection.shutdown()
        var finished = false
        let finish: () -> Void = { [self] in
            guard !finished else { return }
            finished = true
            state = .closed
            context.close(promise: promise)
        }
        let forced = context.eventLoop.assumeIsolated().scheduleTask(in: Self.closeTimeout) { finish() }
        guard let output = connection.takeOutput(allocator: context.channel.allocator) else {
            forced.cancel()
            finish()
            return
        }
        context.writeAndFlush(wrapOutboundOut(output)).assumeIsolated().whenComplete { _ in
            forced.cancel()
            finish()
        }
    }

    package static let closeTimeout = TimeAmount.milliseconds(500)

    /// Sends any alert OpenSSL queued and closes, after a failure.
    private func abort(context: ChannelHandlerContext) {
        state = .closed
        failPendingWrites(ChannelError.ioOnClosedChannel)
        failUnflushed(ChannelError.ioOnClosedChannel)
        if let output = connection.takeOutput(allocator: context.channel.allocator) {
            context.writeAndFlush(wrapOutboundOut(output)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }

    /// Passes on whatever OpenSSL produced; true when there was something.
    @discardableResult
    private func sendOutput(context: ChannelHandlerContext, flush: Bool) -> Bool {
        guard let output = connection.takeOutput(allocator: context.channel.allocator) else { return false }
        context.write(wrapOutboundOut(output), promise: nil)
        if flush { context.flush() }
        return true
    }

    // MARK: Recording

    private func recordClientHello() {
        guard !recordedClientHello, let hello = connection.observations.clientHello else { return }
        recordedClientHello = true
        recorder?.clientHello(hello)
    }

    /// `SSL routines: no shared cipher` → `no shared cipher`: OpenSSL's own words, without the library's name.
    static func reasonWithoutLibrary(_ reason: String) -> String {
        guard let range = reason.range(of: " routines: ") else { return reason }
        return String(reason[range.upperBound...])
    }

    /// Where the handshake had got to, from the server's side.
    private var phase: ConnectionRecord.Phase {
        if serverFlightSent { return .afterServerFlight }
        return connection.observations.clientHello != nil ? .afterClientHello : .beforeClientHello
    }

    /// `notTLS` when the handshake failed on the client's very first bytes because they are not a TLS record (no
    /// handshake or alert record header, `16 03 …`), and neither side sent an alert: OpenSSL rejects such bytes (`http
    /// request`, `wrong version number`) and sends none. Nil otherwise.
    private func notTLSOutcome(reason: String?) -> ConnectionRecord.Outcome? {
        guard connection.observations.clientHello == nil, connection.observations.alertReceived == nil,
              connection.observations.alertSent == nil, let first = firstBytes.first else { return nil }
        // A TLS record opens with a content type (20–24) and a major version of 3; an SSLv2-compatible hello with the
        // high bit set. Anything else was never TLS.
        let looksLikeTLS = (20...24).contains(first) && (firstBytes.count < 2 || firstBytes[1] == 3) || first & 0x80 != 0
        guard !looksLikeTLS else { return nil }
        return .notTLS(firstBytes: ConnectionRecord.Outcome.describeFirstBytes(firstBytes), reason: reason)
    }

    /// How a handshake that did not complete ended: the client's alert, else ours (with OpenSSL's `reason`), else a
    /// close without one.
    private func handshakeEndedOutcome(reason: String?) -> ConnectionRecord.Outcome {
        recordClientHello()
        if let alert = connection.observations.alertReceived { return .alertReceived(alert, phase: phase) }
        if let alert = connection.observations.alertSent { return .alertSent(alert, reason: reason, phase: phase) }
        return .closedWithoutAlert(phase: phase)
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Transport errors (reset by peer) end this connection only. The deadline task holds this handler and its
        // channel, so it must be cancelled here or a reset mid-handshake keeps them until the deadline fires.
        logger.debug("connection error: \(error)", metadata: peer(context))
        if case .handshaking(let deadline) = state { deadline.cancel() }
        state = .closed
        failUnflushed(error)
        context.close(promise: nil)
    }

    private func peer(_ context: ChannelHandlerContext) -> Logger.Metadata {
        ["peer": "\(context.remoteAddress?.description ?? "?")"]
    }
}
