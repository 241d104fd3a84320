import Foundation
import NIOCore
import TLSFixturesWire

/// How the runner tells a fixture which of its connections came through the runner's CONNECT proxy, and for which
/// authority: `proxy` is asked with the connecting peer's address and port (the proxy's own outgoing socket, which the
/// proxy knows) and answers the tunnel's `CONNECT` authority, or nil for a connection that did not come through it.
///
/// A fixture asks when the connection's first bytes arrive, and once more when it closes if the first answer was nil;
/// so the proxy must have noted its socket before it forwards the client's first byte. Answers must be quick: they run
/// on the connection's event loop.
package struct ConnectionAnnotator: Sendable {
    package var proxy: @Sendable (_ peerAddress: String, _ peerPort: Int) -> ConnectionRecord.Proxy?

    package init(proxy: @escaping @Sendable (_ peerAddress: String, _ peerPort: Int) -> ConnectionRecord.Proxy?) {
        self.proxy = proxy
    }
}

/// One connection's record, written as the connection goes: what `TLSServerHandler` learns of the handshake and what
/// `FixtureResponder` answers. Used on the connection's event loop only; every write goes to the fixture's
/// `ConnectionLog` at once, so readers see a connection while it is open.
package final class ConnectionRecorder {
    private let log: ConnectionLog
    /// The record's id in `log`.
    package let id: Int
    private let peer: SocketAddress?
    private let annotator: ConnectionAnnotator?
    private var annotated = false
    private var proxyKnown = false
    private var concluded = false
    private var ended = false

    /// Told the record once its connection has closed (`FixtureConfiguration.connectionEnded`).
    private let onEnd: (@Sendable (ConnectionRecord) -> Void)?

    package init(log: ConnectionLog, peer: SocketAddress?, annotator: ConnectionAnnotator?,
                 ended: (@Sendable (ConnectionRecord) -> Void)? = nil) {
        self.log = log
        self.peer = peer
        self.annotator = annotator
        onEnd = ended
        id = log.open(peer: Self.describe(peer))
    }

    /// `127.0.0.1:52114`, `[::1]:52114`.
    package static func describe(_ address: SocketAddress?) -> String {
        guard let address, let ip = address.ipAddress, let port = address.port else {
            return address?.description ?? "?"
        }
        return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }

    /// The client sent its first bytes: the moment to ask whether the runner's proxy carried them.
    package func receivedBytes() {
        guard !annotated else { return }
        annotated = true
        annotate()
    }

    private func annotate() {
        guard let annotator, let ip = peer?.ipAddress, let port = peer?.port,
              let proxy = annotator.proxy(ip, port) else { return }
        proxyKnown = true
        log.update(id) { $0.proxy = proxy }
    }

    package func clientHello(_ hello: ConnectionRecord.ClientHello) {
        log.update(id) { $0.clientHello = hello }
    }

    /// How the handshake ended; only the first call counts (a failure's close follows its alert).
    package func conclude(_ outcome: ConnectionRecord.Outcome) {
        guard !concluded else { return }
        concluded = true
        log.update(id) { $0.outcome = outcome }
    }

    package var hasOutcome: Bool { concluded }

    package func alertAfterHandshake(_ alert: TLSAlert) {
        log.update(id) { if $0.alertAfterHandshake == nil { $0.alertAfterHandshake = alert } }
    }

    /// A request was answered; returns its number among the fixture's requests (for the answer's
    /// `X-TLS-Fixture-Request` stamp), nil when the ring has dropped this record.
    @discardableResult
    package func served(method: String, path: String, status: Int) -> Int? {
        log.answered(id, method: method, path: path, status: status)
    }

    /// The connection closed. A connection that never got an outcome (plain TCP closed before any TLS, say) gets one.
    package func close(outcomeIfNone: ConnectionRecord.Outcome) {
        guard !ended else { return }
        ended = true
        if !proxyKnown { annotate() }
        let outcome: ConnectionRecord.Outcome? = concluded ? nil : outcomeIfNone
        concluded = true
        let final = log.update(id) { record in
            if let outcome { record.outcome = outcome }
            record.endedAt = Date()
        }
        // A record the ring already dropped (a full ring under a flood) is not told: the log no longer has it either.
        if let final, let onEnd { onEnd(final) }
    }
}
