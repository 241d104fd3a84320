import Foundation

/// Where a client that refuses a scenario stops it, as the fixture sees it: the one fact a refusal test needs besides
/// "the client threw". A scenario file states it (`expect.refusal.step`), and `LoadJudge` counts a refusal only when the
/// fixture's record shows the client stopping there. A handshake that completed and then closed without a request is a
/// refusal only of a scenario whose step is `afterHandshake` (pins): for `expired` it is a client that verified nothing,
/// or one that failed for a reason of its own.
///
/// JSON: the case name (`"certificate"`).
public enum RefusalStep: String, Codable, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The client refuses the URL itself and never connects: Apple's App Transport Security refuses an `http://` load
    /// with `NSURLErrorDomain` -1022 before any connection. The one refusal proven by the client's error alone (the
    /// control proves that the same client reaches fixtures at all).
    case beforeConnecting
    /// The protocol version or the cipher suite: the two sides cannot agree. The server refuses the ClientHello with an
    /// alert (`protocol_version`, `handshake_failure`), or the client refuses the server's choice with such an alert or a
    /// close once the server answered.
    case negotiation
    /// The server's certificate: the client ends the handshake with an alert, or closes, after the server's flight and
    /// before its own Finished.
    case certificate
    /// The server refuses the client for the certificate it did not send (`certificate_required`, `handshake_failure`
    /// after the server's flight).
    case clientCertificate
    /// Pins: the handshake may complete (a client that checks pins once connected), and the client then closes
    /// without sending a request; a client that checks them while verifying stops at the certificate, which counts too.
    case afterHandshake

    /// `at the certificate (an alert or a close after the server's flight, before the client's Finished)`, ….
    public var description: String {
        switch self {
        case .beforeConnecting: return "before connecting (the client refuses the URL itself)"
        case .negotiation:
            return "at the negotiation (an alert about the version or the cipher suite, before the handshake completes)"
        case .certificate:
            return "at the certificate (an alert or a close after the server's flight, before the client's Finished)"
        case .clientCertificate: return "at the client certificate (the server refuses the client after its flight)"
        case .afterHandshake:
            return "at the certificate or after the handshake (an alert or a close before any request)"
        }
    }

    /// Alerts either side sends when the two cannot agree on a version or a suite (RFC 8446 §6.2, RFC 5246 §7.2.2).
    public static let negotiationAlerts: Set<TLSAlert> = [
        .protocolVersion, .handshakeFailure, .insufficientSecurity, TLSAlert(code: 47),
    ]

    /// Whether `record` shows a client stopping at this step. `lateChecks` admits, for `certificate`, a close after a
    /// completed handshake (a client family that checks a name once connected, as the scenario file says).
    public func isShown(by record: ConnectionRecord, acceptingLateChecks lateChecks: Bool = false) -> Bool {
        guard record.requestCount == 0 else { return false }
        switch (self, record.outcome) {
        case (.beforeConnecting, _):
            return false
        case (.negotiation, .alertSent(_, _, let phase)?):
            return phase != .afterServerFlight
        case (.negotiation, .alertReceived(let alert, let phase)?):
            // An alert that names no reason counts once the server has answered: OpenSSL 3's client refuses a TLS 1.0
            // server's legacy signature with internal_error(80) ("legacy sigalg disallowed or unsupported").
            return Self.negotiationAlerts.contains(alert) && phase != .beforeClientHello
                || alert.isUnspecificObjection && phase == .afterServerFlight
        case (.negotiation, .closedWithoutAlert(.afterServerFlight)?):
            return true
        case (.certificate, .alertReceived(_, .afterServerFlight)?),
             (.certificate, .closedWithoutAlert(.afterServerFlight)?):
            return true
        case (.certificate, .handshakeCompleted?):
            return lateChecks && record.closedAfterHandshakeWithoutRequest
        case (.clientCertificate, .alertSent(_, _, .afterServerFlight)?):
            return true
        case (.afterHandshake, .alertReceived(_, .afterServerFlight)?),
             (.afterHandshake, .closedWithoutAlert(.afterServerFlight)?):
            return true
        case (.afterHandshake, .handshakeCompleted?):
            return record.closedAfterHandshakeWithoutRequest
        default:
            return false
        }
    }
}

extension ConnectionRecord {
    /// The handshake completed, and the connection then ended (or the client sent an alert) before any request.
    public var closedAfterHandshakeWithoutRequest: Bool {
        guard case .handshakeCompleted? = outcome, requestCount == 0 else { return false }
        return endedAt != nil || alertAfterHandshake != nil
    }

    /// Whether the client said anything on this connection: a ClientHello, bytes that are not TLS, or a plain-HTTP
    /// request. A connection opened and closed with nothing sent (a client racing IPv4 and IPv6, a port check) carries
    /// no evidence either way.
    public var carriesEvidence: Bool {
        if clientHello != nil || requestCount > 0 { return true }
        switch outcome {
        case .notTLS?, .handshakeCompleted?, .alertReceived?, .alertSent?, .unrecognized?: return true
        case .closedWithoutAlert(let phase)?, .timedOut(let phase)?: return phase != .beforeClientHello
        case .cleartext?, nil: return false
        }
    }
}
