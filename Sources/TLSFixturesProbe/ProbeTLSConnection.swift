import TLSFixturesOpenSSL

/// The probe's TLS client: a `TLSClientSession` (OpenSSL, no I/O) over a `ProbeSocket` (the I/O, bounded by the probe's
/// deadline). It moves ciphertext between the two — whatever OpenSSL produced goes out before the next wait, and every
/// byte that arrives goes in before OpenSSL is asked again — so a failure is reported with OpenSSL's reasons for the
/// bytes the server really sent, or with the socket's own error.
final class ProbeTLSConnection {
    let session: TLSClientSession
    private let socket: ProbeSocket

    init(session: TLSClientSession, socket: ProbeSocket) {
        self.session = session
        self.socket = socket
    }

    /// Completes the handshake, or says why not in one line. Throws only `.timedOut`; every other failure is the text.
    func handshake() throws(ProbeStreamFailure) -> String? {
        let outcome: Outcome
        do {
            outcome = try drive { session.handshake() }
        } catch {
            switch error {
            case .timedOut: throw .timedOut
            case .socket(let why): return "the connection failed during the handshake: \(why)"
            case .tls(let reasons): return reasons.isEmpty ? "the handshake failed, and OpenSSL gave no reason" : reasons.joined(separator: "; ")
            }
        }
        return outcome == .done ? nil : "the server closed the connection during the handshake"
    }

    /// Queues our close_notify and sends it if the socket takes it at once. Nothing waits for the server's.
    func close() {
        session.shutdown()
        socket.sendIfPossible(session.takeOutput())
    }

    private enum Outcome { case done, closed }

    /// Runs `operation` until it is done, sending OpenSSL's output and feeding it the server's bytes in between.
    private func drive(_ operation: () -> TLSClientSession.Step) throws(ProbeStreamFailure) -> Outcome {
        while true {
            let step = operation()
            try flush()
            switch step {
            case .done: return .done
            case .closed: return .closed
            case .failed(let reasons, _): throw .tls(reasons)
            case .needsInput:
                guard let bytes = try socket.read() else { return .closed }
                session.feed(bytes)
            }
        }
    }

    private func flush() throws(ProbeStreamFailure) {
        let output = session.takeOutput()
        if !output.isEmpty { try socket.write(output) }
    }

    /// A terminal step `read` met after returning plaintext, kept for the next call.
    private var pendingEnd: TLSClientSession.Step?
}

/// HTTPS talks over the TLS session.
extension ProbeTLSConnection: ProbeByteStream {
    func write(_ bytes: [UInt8]) throws(ProbeStreamFailure) {
        if try drive({ session.write(bytes) }) == .closed { throw .socket("the server closed the connection") }
    }

    func read() throws(ProbeStreamFailure) -> [UInt8]? {
        while true {
            let (plaintext, step) = pendingEnd.map { ([], $0) } ?? session.read()
            try flush()   // TLS 1.3 post-handshake messages can call for an answer.
            if !plaintext.isEmpty {
                if step != .needsInput { pendingEnd = step }
                return plaintext
            }
            switch step {
            case .done, .closed: return nil
            case .failed(let reasons, _): throw .tls(reasons)
            case .needsInput:
                // A TCP close without close_notify ends the stream too: the HTTP decoder judges whether the answer was whole.
                guard let bytes = try socket.read() else { return nil }
                session.feed(bytes)
            }
        }
    }
}
