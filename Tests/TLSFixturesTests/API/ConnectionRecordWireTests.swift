import Foundation
import Testing
@testable import TLSFixtures

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The records' JSON, the names they print, and the judge of refusals, as values: what the control API and
/// TLSFixturesClient will share.
@Suite("Connection records on the wire")
struct ConnectionRecordWireTests {
    static let accepted = Date(timeIntervalSince1970: 1_780_000_000)

    static func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: FixtureAPI.encoder().encode(value)) as? [String: Any])
    }

    @Test("every outcome is one object whose kind names it, with its details beside it, and decodes back")
    func outcomeShape() throws {
        let outcomes: [(ConnectionRecord.Outcome, [String: Any])] = [
            (.handshakeCompleted(.init(protocol: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", group: "x25519", clientCertificate: false)),
             ["kind": "handshakeCompleted", "protocol": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "group": "x25519",
              "clientCertificate": false]),
            (.alertReceived(.unknownCA, phase: .afterServerFlight),
             ["kind": "alertReceived", "alert": ["code": 48, "name": "unknown_ca"], "phase": "afterServerFlight"]),
            (.alertSent(.handshakeFailure, reason: "no shared cipher", phase: .afterClientHello),
             ["kind": "alertSent", "alert": ["code": 40, "name": "handshake_failure"], "reason": "no shared cipher",
              "phase": "afterClientHello"]),
            (.closedWithoutAlert(phase: .beforeClientHello), ["kind": "closedWithoutAlert", "phase": "beforeClientHello"]),
            (.timedOut(phase: .afterServerFlight), ["kind": "timedOut", "phase": "afterServerFlight"]),
            (.handshakeCompleted(.init(protocol: "TLSv1.2", cipher: "TLS_RSA_WITH_AES_128_GCM_SHA256", group: nil, clientCertificate: true)),
             ["kind": "handshakeCompleted", "protocol": "TLSv1.2", "cipher": "TLS_RSA_WITH_AES_128_GCM_SHA256", "group": NSNull(),
              "clientCertificate": true]),
            (.alertSent(TLSAlert(code: 50), reason: nil, phase: .beforeClientHello),
             ["kind": "alertSent", "alert": ["code": 50, "name": "decode_error"], "reason": NSNull(), "phase": "beforeClientHello"]),
            (.notTLS(firstBytes: "\\x16", reason: nil), ["kind": "notTLS", "firstBytes": "\\x16", "reason": NSNull()]),
            (.notTLS(firstBytes: "GET / HTTP/1.1", reason: "http request"),
             ["kind": "notTLS", "firstBytes": "GET / HTTP/1.1", "reason": "http request"]),
            (.cleartext, ["kind": "cleartext"]),
        ]
        for (outcome, expected) in outcomes {
            let encoded = try Self.json(outcome)
            #expect(NSDictionary(dictionary: encoded) == NSDictionary(dictionary: expected), "\(outcome.kind): \(encoded)")
            let decoded = try FixtureAPI.decoder().decode(ConnectionRecord.Outcome.self, from: FixtureAPI.encoder().encode(outcome))
            #expect(decoded == outcome)
        }
        // A kind from a newer runner decodes as unrecognized (the rest of its list still reads), keeps its name, and
        // encodes back as that kind; a record without a kind is still an error.
        let newer = try JSONDecoder().decode(ConnectionRecord.Outcome.self, from: Data(#"{"kind": "exploded", "shards": 3}"#.utf8))
        #expect(newer == .unrecognized(kind: "exploded") && newer.kind == "exploded")
        #expect(NSDictionary(dictionary: try Self.json(newer)) == NSDictionary(dictionary: ["kind": "exploded"]))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ConnectionRecord.Outcome.self, from: Data(#"{"phase": "beforeClientHello"}"#.utf8))
        }
        // A known kind with a detail this version cannot read (a phase added later) is as unreadable as a new kind.
        #expect(try JSONDecoder().decode(ConnectionRecord.Outcome.self, from: Data(
            #"{"kind": "alertReceived", "alert": 48, "phase": "duringRenegotiation"}"#.utf8)) == .unrecognized(kind: "alertReceived"))
        // A nil detail left out, as older runners wrote it, decodes as nil.
        #expect(try JSONDecoder().decode(ConnectionRecord.Outcome.self, from: Data(
            #"{"kind": "alertSent", "alert": 50, "phase": "beforeClientHello"}"#.utf8))
            == .alertSent(TLSAlert(code: 50), reason: nil, phase: .beforeClientHello))
    }

    @Test("a record's keys are the documented ones, every one present with null for nil; dates are ISO 8601; absent or null keys decode")
    func recordShape() throws {
        let record = ConnectionRecord(
            id: 7, acceptedAt: Self.accepted, peer: "127.0.0.1:52114",
            clientHello: .init(serverName: "expired.fixtures.test", legacyVersion: "TLSv1.2", supportedVersions: ["TLSv1.3"],
                               cipherSuites: ["TLS_AES_128_GCM_SHA256"], groups: ["x25519"],
                               signatureAlgorithms: ["ecdsa_secp256r1_sha256"], alpn: ["http/1.1"],
                               extensions: ["server_name", "status_request"]),
            outcome: .alertReceived(.certificateExpired, phase: .afterServerFlight))
        let encoded = try Self.json(record)
        #expect(Set(encoded.keys) == ["id", "acceptedAt", "endedAt", "peer", "proxy", "clientHello", "outcome",
                                      "alertAfterHandshake", "requests", "requestCount", "lastRequestNumber"])
        #expect(encoded["endedAt"] is NSNull && encoded["proxy"] is NSNull && encoded["alertAfterHandshake"] is NSNull
                    && encoded["lastRequestNumber"] is NSNull,
                "\(encoded)")
        let fresh = try Self.json(ConnectionRecord(id: 1, acceptedAt: Self.accepted, peer: "[::1]:1"))
        #expect(Set(fresh.keys) == Set(encoded.keys))
        #expect(fresh["clientHello"] is NSNull && fresh["outcome"] is NSNull, "\(fresh)")
        // Older runners left nil keys out; the iOS client reads both.
        let older = #"{"id": 1, "acceptedAt": "2026-05-28T20:26:40Z", "peer": "[::1]:1", "requests": [], "requestCount": 0}"#
        let nulls = #"{"id": 1, "acceptedAt": "2026-05-28T20:26:40Z", "endedAt": null, "peer": "[::1]:1", "proxy": null, "#
            + #""clientHello": null, "outcome": null, "alertAfterHandshake": null, "requests": [], "requestCount": 0}"#
        for text in [older, nulls] {
            #expect(try FixtureAPI.decoder().decode(ConnectionRecord.self, from: Data(text.utf8))
                    == ConnectionRecord(id: 1, acceptedAt: Self.accepted, peer: "[::1]:1"))
        }
        #expect(encoded["acceptedAt"] as? String == "2026-05-28T20:26:40Z")
        let hello = try #require(encoded["clientHello"] as? [String: Any])
        #expect(Set(hello.keys) == ["serverName", "legacyVersion", "supportedVersions", "cipherSuites", "groups",
                                    "signatureAlgorithms", "alpn", "extensions"])
        var anonymous = try #require(record.clientHello)
        anonymous.serverName = nil
        let withoutSNI = try Self.json(anonymous)
        #expect(Set(withoutSNI.keys) == Set(hello.keys) && withoutSNI["serverName"] is NSNull, "\(withoutSNI)")
        let decoded = try FixtureAPI.decoder().decode(ConnectionRecord.self, from: FixtureAPI.encoder().encode(record))
        #expect(decoded == record)
        #expect(record.clientHello?.requestsOCSPStaple == true)
        #expect(!record.isSettled)
    }

    /// RFC 8446 §6 and the IANA registry, by number.
    @Test("alerts are named as the registry names them, and decode from a name, a number or the object")
    func alerts() throws {
        let registry: [UInt8: String] = [0: "close_notify", 40: "handshake_failure", 42: "bad_certificate", 45: "certificate_expired",
                                         46: "certificate_unknown", 48: "unknown_ca", 70: "protocol_version", 116: "certificate_required"]
        for (code, name) in registry {
            #expect(TLSAlert(code: code).name == name)
            #expect(TLSAlert(name: name)?.code == code)
        }
        #expect(TLSAlert(code: 45).description == "certificate_expired(45)")
        #expect(TLSAlert(code: 200).name == "alert_200")
        let decoded = try JSONDecoder().decode([TLSAlert].self, from: Data(#"["unknown_ca", 45, {"code": 70, "name": "x"}]"#.utf8))
        #expect(decoded == [.unknownCA, .certificateExpired, .protocolVersion])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TLSAlert.self, from: Data(#""certificate_exploded""#.utf8)) }
    }

    @Test("ClientHello numbers are named from the IANA registries; GREASE and unknown numbers print as numbers")
    func registryNames() {
        // RFC 8446 §B.4, RFC 5289 §3.2, RFC 8446 §4.2.7, draft-ietf-tls-ecdhe-mlkem, RFC 8446 §4.2.3, RFC 6066 §8.
        #expect(TLSRegistry.cipherSuiteName(0x1301) == "TLS_AES_128_GCM_SHA256")
        #expect(TLSRegistry.cipherSuiteName(0xC02F) == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        #expect(TLSRegistry.cipherSuiteName(0x000A) == "TLS_RSA_WITH_3DES_EDE_CBC_SHA")
        #expect(TLSRegistry.groupName(29) == "x25519")
        #expect(TLSRegistry.groupName(0x11EC) == "X25519MLKEM768")
        #expect(TLSRegistry.signatureSchemeName(0x0804) == "rsa_pss_rsae_sha256")
        #expect(TLSRegistry.extensionName(5) == "status_request")
        #expect(TLSRegistry.versionName(0x0304) == "TLSv1.3")
        // RFC 8701 §2: 0x?A?A with both bytes equal.
        #expect(TLSRegistry.isGREASE(0x0A0A) && TLSRegistry.isGREASE(0xFAFA))
        #expect(!TLSRegistry.isGREASE(0x0A1A) && !TLSRegistry.isGREASE(0x1301))
        #expect(TLSRegistry.cipherSuiteName(0x2A2A) == "GREASE(0x2A2A)")
        #expect(TLSRegistry.cipherSuiteName(0xFEFE) == "0xFEFE")
    }

    /// The cipher table against OpenSSL's own, which carries the registry's names: every suite the linked OpenSSL knows
    /// has the name OpenSSL gives it.
    @Test("the cipher-suite table agrees with `openssl ciphers -V -stdname`", .requires(Tools.openssl))
    func cipherTableMatchesOpenSSL() async throws {
        let listing = try await External.openssl(["ciphers", "-V", "-stdname", "ALL:COMPLEMENTOFALL:@SECLEVEL=0"]).stdout
        var compared = 0
        for line in listing.split(separator: "\n") {
            // `          0x13,0x02 - TLS_AES_256_GCM_SHA384 - TLS_AES_256_GCM_SHA384 TLSv1.3 …`
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 2, fields[0].hasPrefix("0x") else { continue }
            let bytes = fields[0].split(separator: ",").compactMap { UInt8($0.dropFirst(2), radix: 16) }
            guard bytes.count == 2 else { continue }
            #expect(TLSRegistry.cipherSuiteName(UInt16(bytes[0]) << 8 | UInt16(bytes[1])) == String(fields[2]), "\(line)")
            compared += 1
        }
        #expect(compared > 100)
    }
}
