import Foundation

extension ConnectionRecord {
    /// How a connection's handshake ended: one closed set of kinds, each with what only it needs.
    ///
    /// JSON: one object whose `kind` names the case, with the case's details beside it:
    /// `{"kind": "handshakeCompleted", "protocol": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "group": "x25519",
    /// "clientCertificate": false}`, `{"kind": "alertReceived", "alert": {"code": 48, "name": "unknown_ca"},
    /// "phase": "afterServerFlight"}`, `{"kind": "alertSent", "alert": …, "reason": "no shared cipher", "phase": …}`,
    /// `{"kind": "closedWithoutAlert", "phase": "beforeClientHello"}`, `{"kind": "timedOut", "phase": …}`,
    /// `{"kind": "cleartext"}`.
    public enum Outcome: Sendable, Hashable, Codable {
        /// The handshake completed; what was agreed.
        case handshakeCompleted(Handshake)
        /// The client ended the handshake with an alert: it refused, and said why.
        case alertReceived(TLSAlert, phase: Phase)
        /// The server ended the handshake with an alert: the two could not agree (no shared version or suite, no client
        /// certificate, a malformed message). `reason` is OpenSSL's own text (`no shared cipher`).
        case alertSent(TLSAlert, reason: String?, phase: Phase)
        /// The client closed (or reset) the connection mid-handshake without an alert.
        case closedWithoutAlert(phase: Phase)
        /// The client did not finish the handshake within `FixtureConfiguration.handshakeTimeout`; the fixture closed
        /// it.
        case timedOut(phase: Phase)
        /// The plain-HTTP scenario: no TLS at all.
        case cleartext

        /// `handshakeCompleted`, `alertReceived`, …: the JSON `kind`.
        public var kind: String {
            switch self {
            case .handshakeCompleted: return "handshakeCompleted"
            case .alertReceived: return "alertReceived"
            case .alertSent: return "alertSent"
            case .closedWithoutAlert: return "closedWithoutAlert"
            case .timedOut: return "timedOut"
            case .cleartext: return "cleartext"
            }
        }

        /// The alert that ended the handshake, either way; nil when none did.
        public var alert: TLSAlert? {
            switch self {
            case .alertReceived(let alert, _), .alertSent(let alert, _, _): return alert
            default: return nil
            }
        }

        private enum CodingKeys: String, CodingKey {
            case kind, `protocol`, cipher, group, clientCertificate, alert, reason, phase
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let kind = try c.decode(String.self, forKey: .kind)
            switch kind {
            case "handshakeCompleted":
                self = .handshakeCompleted(Handshake(
                    protocol: try c.decode(String.self, forKey: .protocol),
                    cipher: try c.decode(String.self, forKey: .cipher),
                    group: try c.decodeIfPresent(String.self, forKey: .group),
                    clientCertificate: try c.decode(Bool.self, forKey: .clientCertificate)))
            case "alertReceived":
                self = .alertReceived(try c.decode(TLSAlert.self, forKey: .alert),
                                      phase: try c.decode(Phase.self, forKey: .phase))
            case "alertSent":
                self = .alertSent(try c.decode(TLSAlert.self, forKey: .alert),
                                  reason: try c.decodeIfPresent(String.self, forKey: .reason),
                                  phase: try c.decode(Phase.self, forKey: .phase))
            case "closedWithoutAlert":
                self = .closedWithoutAlert(phase: try c.decode(Phase.self, forKey: .phase))
            case "timedOut":
                self = .timedOut(phase: try c.decode(Phase.self, forKey: .phase))
            case "cleartext":
                self = .cleartext
            default:
                throw DecodingError.dataCorruptedError(forKey: .kind, in: c,
                                                       debugDescription: "unknown outcome kind \"\(kind)\"")
            }
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .kind)
            switch self {
            case .handshakeCompleted(let handshake):
                try c.encode(handshake.protocol, forKey: .protocol)
                try c.encode(handshake.cipher, forKey: .cipher)
                try c.encodeIfPresent(handshake.group, forKey: .group)
                try c.encode(handshake.clientCertificate, forKey: .clientCertificate)
            case .alertReceived(let alert, let phase):
                try c.encode(alert, forKey: .alert)
                try c.encode(phase, forKey: .phase)
            case .alertSent(let alert, let reason, let phase):
                try c.encode(alert, forKey: .alert)
                try c.encodeIfPresent(reason, forKey: .reason)
                try c.encode(phase, forKey: .phase)
            case .closedWithoutAlert(let phase), .timedOut(let phase):
                try c.encode(phase, forKey: .phase)
            case .cleartext:
                break
            }
        }
    }

    /// What a completed handshake agreed.
    public struct Handshake: Sendable, Hashable, Codable {
        /// The version as OpenSSL names it (`TLSv1.3`, `TLSv1`).
        public var `protocol`: String
        /// The suite's IANA name (`TLS_AES_128_GCM_SHA256`).
        public var cipher: String
        /// The key-exchange group as OpenSSL names it (`x25519`, `X25519MLKEM768`); nil when none was used.
        public var group: String?
        /// Whether the client presented a certificate.
        public var clientCertificate: Bool

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(protocol: String, cipher: String, group: String?, clientCertificate: Bool) {
            self.protocol = `protocol`; self.cipher = cipher; self.group = group
            self.clientCertificate = clientCertificate
        }
    }
}
