import Foundation

extension ConnectionRecord {
    /// How a connection's handshake ended: one closed set of kinds, each with what only it needs.
    ///
    /// JSON: one object whose `kind` names the case, with the case's details beside it:
    /// `{"kind": "handshakeCompleted", "protocol": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "group": "x25519",
    /// "clientCertificate": false}`, `{"kind": "alertReceived", "alert": {"code": 48, "name": "unknown_ca"},
    /// "phase": "afterServerFlight"}`, `{"kind": "alertSent", "alert": …, "reason": "no shared cipher", "phase": …}`,
    /// `{"kind": "closedWithoutAlert", "phase": "beforeClientHello"}`, `{"kind": "timedOut", "phase": …}`,
    /// `{"kind": "notTLS", "firstBytes": "GET / HTTP/1.1", "reason": "http request"}`, `{"kind": "cleartext"}`. Every
    /// key a kind has is present, `null` when it has no value (`"reason": null`, `"group": null`); decoding takes such a
    /// key absent too. A kind this version does not know (from a newer runner), or a known kind whose details it cannot
    /// read, decodes as `unrecognized`, so the rest of a connection list still reads.
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
        /// The client's first bytes were not TLS (plain HTTP to a TLS port, say), and the server closed the connection
        /// without an alert (OpenSSL sends none for bytes that are not a TLS record). `firstBytes` is what it sent, up to
        /// its first line break and at most `maximumFirstBytes` bytes, printable ASCII as is and any other byte as
        /// `\xNN`; `reason` is OpenSSL's own text (`http request`, `wrong version number`). Not a refusal of the
        /// server's certificate: the client never asked for one.
        case notTLS(firstBytes: String, reason: String?)
        /// The plain-HTTP scenario: no TLS at all.
        case cleartext
        /// A kind this version of the package does not know: the runner is newer than this client. Never a refusal or
        /// an acceptance to `LoadJudge` (`LoadExpectationFailure.Code.unrecognizedOutcome`); update the client.
        case unrecognized(kind: String)

        /// `notTLS`'s `firstBytes` keeps at most this many bytes of what the client sent.
        public static let maximumFirstBytes = 32

        /// `GET / HTTP/1.1`, `\x00\x01abc`: the first line of `bytes` (at most `maximumFirstBytes` of them), printable
        /// ASCII as is and every other byte as `\xNN`, so the text is bounded, one line and safe to print.
        public static func describeFirstBytes<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
            var text = ""
            for byte in bytes.prefix(maximumFirstBytes) {
                if byte == 0x0D || byte == 0x0A { break }
                if (0x20...0x7E).contains(byte), byte != 0x5C {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
                }
            }
            return text
        }

        /// For `notTLS`: the HTTP method the first bytes open with (`GET` in `GET / HTTP/1.1`); nil when they do not
        /// look like an HTTP request line.
        public var httpMethod: String? {
            guard case .notTLS(let firstBytes, _) = self, let space = firstBytes.firstIndex(of: " ") else { return nil }
            let method = firstBytes[..<space]
            guard (3...10).contains(method.count), method.allSatisfy({ ("A"..."Z").contains($0) }) else { return nil }
            return String(method)
        }

        /// `handshakeCompleted`, `alertReceived`, …: the JSON `kind`.
        public var kind: String {
            switch self {
            case .handshakeCompleted: return "handshakeCompleted"
            case .alertReceived: return "alertReceived"
            case .alertSent: return "alertSent"
            case .closedWithoutAlert: return "closedWithoutAlert"
            case .timedOut: return "timedOut"
            case .notTLS: return "notTLS"
            case .cleartext: return "cleartext"
            case .unrecognized(let kind): return kind
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
            case kind, `protocol`, cipher, group, clientCertificate, alert, reason, phase, firstBytes
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let kind = try c.decode(String.self, forKey: .kind)
            do {
                self = try Self.decode(kind, c)
            } catch {
                // A known kind with details this version cannot read (a new phase, say) is as unknown as a new kind.
                self = .unrecognized(kind: kind)
            }
        }

        private static func decode(_ kind: String, _ c: KeyedDecodingContainer<CodingKeys>) throws -> Self {
            switch kind {
            case "handshakeCompleted":
                return .handshakeCompleted(Handshake(
                    protocol: try c.decode(String.self, forKey: .protocol),
                    cipher: try c.decode(String.self, forKey: .cipher),
                    group: try c.decodeIfPresent(String.self, forKey: .group),
                    clientCertificate: try c.decode(Bool.self, forKey: .clientCertificate)))
            case "alertReceived":
                return .alertReceived(try c.decode(TLSAlert.self, forKey: .alert),
                                      phase: try c.decode(Phase.self, forKey: .phase))
            case "alertSent":
                return .alertSent(try c.decode(TLSAlert.self, forKey: .alert),
                                  reason: try c.decodeIfPresent(String.self, forKey: .reason),
                                  phase: try c.decode(Phase.self, forKey: .phase))
            case "closedWithoutAlert":
                return .closedWithoutAlert(phase: try c.decode(Phase.self, forKey: .phase))
            case "timedOut":
                return .timedOut(phase: try c.decode(Phase.self, forKey: .phase))
            case "notTLS":
                return .notTLS(firstBytes: try c.decode(String.self, forKey: .firstBytes),
                               reason: try c.decodeIfPresent(String.self, forKey: .reason))
            case "cleartext":
                return .cleartext
            default:
                return .unrecognized(kind: kind)
            }
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .kind)
            switch self {
            case .handshakeCompleted(let handshake):
                try c.encode(handshake.protocol, forKey: .protocol)
                try c.encode(handshake.cipher, forKey: .cipher)
                try c.encode(handshake.group, forKey: .group)
                try c.encode(handshake.clientCertificate, forKey: .clientCertificate)
            case .alertReceived(let alert, let phase):
                try c.encode(alert, forKey: .alert)
                try c.encode(phase, forKey: .phase)
            case .alertSent(let alert, let reason, let phase):
                try c.encode(alert, forKey: .alert)
                try c.encode(reason, forKey: .reason)
                try c.encode(phase, forKey: .phase)
            case .closedWithoutAlert(let phase), .timedOut(let phase):
                try c.encode(phase, forKey: .phase)
            case .notTLS(let firstBytes, let reason):
                try c.encode(firstBytes, forKey: .firstBytes)
                try c.encode(reason, forKey: .reason)
            case .cleartext, .unrecognized:
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

        private enum CodingKeys: String, CodingKey { case `protocol`, cipher, group, clientCertificate }

        /// Every key, `group` `null` when none was used.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(`protocol`, forKey: .protocol)
            try c.encode(cipher, forKey: .cipher)
            try c.encode(group, forKey: .group)
            try c.encode(clientCertificate, forKey: .clientCertificate)
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
