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
                                      "alertAfterHandshake", "requests", "requestCount"])
        #expect(encoded["endedAt"] is NSNull && encoded["proxy"] is NSNull && encoded["alertAfterHandshake"] is NSNull,
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

    // MARK: - The judge

    static let judge = LoadJudge(scenario: "expired", target: "localhost:9831",
                                 expectation: RefusalExpectation(alerts: [.certificateExpired],
                                                                 apple: ATSLikelyError(urlErrorCode: -1201,
                                                                                       urlErrorName: "NSURLErrorServerCertificateHasBadDate")))
    static let dnsFailure = URLError(.cannotFindHost)

    static func record(_ outcome: ConnectionRecord.Outcome?, ended: Bool = true, requests: [ConnectionRecord.Request] = [],
                       id: Int = 1) -> ConnectionRecord {
        ConnectionRecord(id: id, acceptedAt: accepted, endedAt: ended ? accepted : nil, peer: "127.0.0.1:1", outcome: outcome,
                         requests: requests)
    }

    static let completed = ConnectionRecord.Outcome.handshakeCompleted(.init(protocol: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256",
                                                                              group: "x25519", clientCertificate: false))

    @Test("refused: the load threw, reached the fixture, and ended without a request, for the scenario's reason")
    func refusedPasses() {
        #expect(Self.judge.refused(thrown: Self.dnsFailure, records: [Self.record(.alertReceived(.certificateExpired, phase: .afterServerFlight))]) == nil)
        // An alert that names no reason is consistent with any.
        #expect(Self.judge.refused(thrown: Self.dnsFailure, records: [Self.record(.alertReceived(.certificateUnknown, phase: .afterServerFlight))]) == nil)
        // A client that hangs up after the handshake, as one that rejects a pin does.
        #expect(Self.judge.refused(thrown: Self.dnsFailure, records: [Self.record(Self.completed)]) == nil)
        #expect(Self.judge.refused(thrown: Self.dnsFailure, records: [Self.record(.closedWithoutAlert(phase: .afterServerFlight))]) == nil)
    }

    @Test("not refused: each way a load can look refused without being, said in the test author's terms")
    func refusedFailures() throws {
        let never = try #require(Self.judge.refused(thrown: Self.dnsFailure, records: []))
        #expect(never.code == .neverReached)
        #expect(never.description.hasPrefix("the client never reached expired at localhost:9831 (the load threw NSURLErrorDomain -1003"),
                "\(never)")
        #expect(never.description.contains("FixtureProxy.environment"))

        let refusedPort = try #require(Self.judge.refused(thrown: URLError(.cannotConnectToHost), records: []))
        #expect(refusedPort.description.contains("check the port (fixture.port)"), "\(refusedPort)")
        // The runner's proxy refused the CONNECT: libcurl's words (lib/cf-h1-proxy.c, "CONNECT tunnel failed,
        // response %d"), as FoundationNetworking passes them on, and CFNetwork's kCFErrorHTTPSProxyConnectionFailure.
        let curl403 = NSError(domain: NSURLErrorDomain, code: -1,
                              userInfo: [NSLocalizedDescriptionKey: "CONNECT tunnel failed, response 403"])
        let cfNetwork = NSError(domain: "kCFErrorDomainCFNetwork", code: 310)
        for thrown in [curl403, cfNetwork] {
            let proxied = try #require(Self.judge.refused(thrown: thrown, records: []))
            #expect(proxied.code == .neverReached)
            #expect(proxied.description.contains("the runner's proxy refused the CONNECT"), "\(proxied)")
        }

        let served = [Self.record(Self.completed, requests: [.init(method: "GET", path: "/", status: 200)])]
        let succeeded = try #require(Self.judge.refused(thrown: nil, records: served))
        #expect(succeeded.code == .loadSucceeded)
        #expect(succeeded.description.contains("GET / was answered 200, so the client accepted expired at localhost:9831"), "\(succeeded)")
        #expect(Self.judge.refused(thrown: Self.dnsFailure, records: served)?.code == .accepted)
        #expect(Self.judge.refused(thrown: nil, records: [])?.code == .loadSucceeded)

        let open = try #require(Self.judge.refused(thrown: Self.dnsFailure, records: [Self.record(Self.completed, ended: false)]))
        #expect(open.code == .stillOpen)

        let otherAlert = try #require(Self.judge.refused(thrown: Self.dnsFailure,
                                                         records: [Self.record(.alertReceived(.unknownCA, phase: .afterServerFlight))]))
        #expect(otherAlert.code == .refusedForAnotherReason)
        #expect(otherAlert.description.contains("not for expired's reason"), "\(otherAlert)")
        #expect(otherAlert.description.contains("unknown_ca(48)") && otherAlert.description.contains("certificate_expired(45)"))

        // Gave up before seeing the certificate: no refusal of it.
        let early = try #require(Self.judge.refused(thrown: Self.dnsFailure, records: [Self.record(.closedWithoutAlert(phase: .beforeClientHello))]))
        #expect(early.code == .refusedForAnotherReason)
        #expect(early.description.contains("never saw the server's certificate"), "\(early)")

        // Without an expectation the alert is not judged.
        let lenient = LoadJudge(scenario: "expired", target: "localhost:9831", expectation: nil)
        #expect(lenient.refused(thrown: Self.dnsFailure, records: [Self.record(.alertReceived(.unknownCA, phase: .afterServerFlight))]) == nil)
    }

    #if !canImport(FoundationNetworking)
    @Test("Apple's code must be the scenario's when URLSession reports a TLS failure")
    func appleCode() throws {
        let untrusted = URLError(.serverCertificateUntrusted)   // -1202 for an expired certificate: the CA was not trusted
        let failure = try #require(Self.judge.refused(thrown: untrusted, records: [Self.record(.closedWithoutAlert(phase: .afterServerFlight))]))
        #expect(failure.code == .refusedForAnotherReason)
        #expect(Self.judge.refused(thrown: URLError(.serverCertificateHasBadDate),
                                   records: [Self.record(.closedWithoutAlert(phase: .afterServerFlight))]) == nil)
    }
    #endif

    @Test("accepted: the load returned and the fixture answered it; otherwise what happened instead")
    func accepted() throws {
        let served = [Self.record(Self.completed, requests: [.init(method: "GET", path: "/", status: 200)])]
        #expect(Self.judge.accepted(thrown: nil, records: served) == nil)
        let failedLater = try #require(Self.judge.accepted(thrown: Self.dnsFailure, records: served))
        #expect(failedLater.code == .refused)
        #expect(failedLater.description.contains("failed after the TLS layer"), "\(failedLater)")
        let refused = try #require(Self.judge.accepted(thrown: Self.dnsFailure,
                                                       records: [Self.record(.alertReceived(.unknownCA, phase: .afterServerFlight))]))
        #expect(refused.code == .refused)
        #expect(refused.description.contains("the client sent unknown_ca(48)"), "\(refused)")
        #expect(Self.judge.accepted(thrown: Self.dnsFailure, records: [])?.code == .neverReached)
        #expect(Self.judge.accepted(thrown: nil, records: [])?.code == .loadSucceeded)
        #expect(Self.judge.accepted(thrown: nil, records: [Self.record(Self.completed)])?.code == .noRequestServed)
    }

    @Test("a refusal expectation names something: an empty one is refused")
    func emptyRefusal() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RefusalExpectation.self, from: Data("{}".utf8)) }
    }

    /// A newer runner may record an outcome this client cannot read. Counting it as a refusal (it threw, it reached the
    /// fixture, no request was answered) would pass a "must reject" test on evidence nobody read.
    @Test("an outcome this version does not know is neither a refusal nor an acceptance: both judges say to match the versions")
    func unrecognizedOutcomeJudged() throws {
        let newer = Self.record(.unrecognized(kind: "exploded"))
        let refused = try #require(Self.judge.refused(thrown: URLError(.secureConnectionFailed), records: [newer]))
        #expect(refused.code == .unrecognizedOutcome, "\(refused)")
        #expect(refused.description.contains("\"exploded\"") && refused.description.contains("cannot read: the runner is newer"), "\(refused)")
        #expect(refused.fix?.contains("--version") == true)
        let accepted = try #require(Self.judge.accepted(thrown: URLError(.secureConnectionFailed), records: [newer]))
        #expect(accepted.code == .unrecognizedOutcome, "\(accepted)")
        // Beside a known alert it still does not count: the load's last word is the one nobody can read.
        let alert = Self.record(.alertReceived(.certificateExpired, phase: .afterServerFlight), id: 2)
        #expect(Self.judge.refused(thrown: URLError(.serverCertificateHasBadDate), records: [alert, newer])?.code == .unrecognizedOutcome)
        // A list that holds one still decodes whole.
        var object = try Self.json(alert)
        object["outcome"] = ["kind": "exploded", "shards": 3]
        let list = try JSONSerialization.data(withJSONObject: [try Self.json(Self.record(Self.completed)), object])
        let decoded = try FixtureAPI.decoder().decode([ConnectionRecord].self, from: list)
        #expect(decoded.map(\.outcome) == [Self.completed, .unrecognized(kind: "exploded")])
    }

    @Test("plain HTTP to a TLS fixture is neither a refusal nor an acceptance: both judges say the client did not speak TLS")
    func notTLSJudged() throws {
        let plain = Self.record(.notTLS(firstBytes: "GET / HTTP/1.1", reason: "http request"))
        let refused = try #require(Self.judge.refused(thrown: URLError(.zeroByteResource), records: [plain]))
        #expect(refused.code == .notTLS)
        #expect(refused.description.contains("did not speak TLS") && refused.description.contains("plain HTTP (a GET request)"),
                "\(refused)")
        #expect(refused.fix?.contains("https://") == true)
        let accepted = try #require(Self.judge.accepted(thrown: URLError(.zeroByteResource), records: [plain]))
        #expect(accepted.code == .notTLS && !accepted.description.contains("the client refused"), "\(accepted)")
        // A refusal with an alert beside it still counts as the refusal it is.
        let alert = Self.record(.alertReceived(.certificateExpired, phase: .afterServerFlight), id: 2)
        #expect(Self.judge.refused(thrown: URLError(.serverCertificateHasBadDate), records: [plain, alert]) == nil)
    }

}
