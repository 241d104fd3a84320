import Foundation
import Testing
@testable import TLSFixtures

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A record never blames the client for what the server did: plain HTTP to a TLS port is closed by the server (no
/// alert: OpenSSL's `ssl3_get_record` rejects a first record that is not TLS with SSL_AD_NO_ALERT, reason `http request`
/// or `wrong version number`), and bytes that are not HTTP are answered 400 by the server. Both proven with clients on
/// real sockets.
@Suite("Connection records name what the server did")
struct ConnectionRecordBlameTests {
    typealias EndToEnd = ConnectionRecordEndToEndTests

    @Test("plain HTTP to a TLS fixture: the server closes without an alert while the client is still open, and the record says the client sent plain HTTP and the server closed")
    func plainHTTPToTLS() async throws {
        try await EndToEnd.with("expired") { fixture in
            let cursor = fixture.latestConnectionID
            let client = try RawConnection(port: fixture.port)
            #expect(client.send(Array("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)))
            let seen = client.readUntilClosed(timeout: 10)
            #expect(seen.closedAfter != nil, "the server closed the connection; the client never did")
            #expect(seen.received.isEmpty, "no alert and no answer: \(seen.received.prefix(16))")
            let record = try await EndToEnd.onlyRecord(fixture, after: cursor)
            client.close()
            #expect(record.outcome == .notTLS(firstBytes: "GET /x HTTP/1.1", reason: "http request"), "\(record.summary)")
            #expect(record.outcome?.httpMethod == "GET")
            #expect(record.clientHello == nil)
            #expect(record.summary.contains("the client sent plain HTTP (a GET request)"), "\(record.summary)")
            #expect(record.summary.contains("the server closed the connection without an alert"), "\(record.summary)")
            #expect(!record.summary.contains("the client closed"), "\(record.summary)")
        }
    }

    @Test("bytes that are neither TLS nor HTTP are named escaped and bounded, with OpenSSL's reason")
    func garbageToTLS() async throws {
        try await EndToEnd.with("expired") { fixture in
            let cursor = fixture.latestConnectionID
            let client = try RawConnection(port: fixture.port)
            #expect(client.send([0x00, 0x1B] + Array("[2J\\hello".utf8) + Array(repeating: 0x41, count: 64)))
            let seen = client.readUntilClosed(timeout: 10)
            #expect(seen.closedAfter != nil)
            let record = try await EndToEnd.onlyRecord(fixture, after: cursor)
            client.close()
            guard case .notTLS(let firstBytes, let reason)? = record.outcome else {
                Issue.record("not notTLS: \(record.summary)")
                return
            }
            #expect(firstBytes == "\\x00\\x1B[2J\\x5Chello" + String(repeating: "A", count: 32 - 11), "\(firstBytes)")
            #expect(reason == "wrong version number")
            #expect(record.outcome?.httpMethod == nil)
            #expect(record.summary.contains("the client sent something that is not TLS"), "\(record.summary)")
        }
    }

    @Test("curl to a TLS fixture's http:// URL: the record says plain HTTP, and expectRefused says the client did not speak TLS rather than that it refused", .requires(Tools.curl))
    func curlPlainHTTP() async throws {
        try await EndToEnd.with("expired") { fixture in
            let plain = "http://127.0.0.1:\(fixture.port)/"
            let failure = await #expect(throws: LoadExpectationFailure.self) {
                try await fixture.expectRefused {
                    let result = try await External.run(["curl", "-sS", "--max-time", "20", plain])
                    // curl: (52) Empty reply from server
                    if result.status != 0 { throw EndToEnd.ClientFailed(output: result.combined) }
                }
            }
            #expect(failure?.code == .notTLS, "\(String(describing: failure))")
            let message = failure?.description ?? ""
            #expect(message.contains("did not speak TLS"), "\(message)")
            #expect(message.contains("plain HTTP (a GET request)"), "\(message)")
            #expect(message.contains("https://"), "\(message)")
            #expect(fixture.connections.last?.outcome?.kind == "notTLS")
        }
    }

    @Test("garbage to the plain-HTTP fixture is answered 400, and the record says so rather than that the client sent no request")
    func garbageToCleartext() async throws {
        try await EndToEnd.with("http") { fixture in
            let cursor = fixture.latestConnectionID
            let client = try RawConnection(port: fixture.port)
            #expect(client.send(Array("\u{01}\u{02}not http at all\r\n\r\n".utf8)))
            let seen = client.readUntilClosed(timeout: 10)
            #expect(String(decoding: seen.received, as: UTF8.self).hasPrefix("HTTP/1.1 400 "))
            let record = try await EndToEnd.onlyRecord(fixture, after: cursor)
            client.close()
            #expect(record.outcome == .cleartext)
            #expect(record.requests == [.init(method: "(malformed)", path: "(malformed)", status: 400, number: 1)])
            #expect(record.requestCount == 1)
            #expect(record.summary == "a plain HTTP connection (no TLS) and the server answered 400 to a malformed request",
                    "\(record.summary)")
        }
    }

    @Test("garbage after a completed TLS handshake is answered 400, and recorded", .requires(Tools.openssl))
    func garbageAfterHandshake() async throws {
        try await EndToEnd.with("ats-compliant") { fixture in
            let cursor = fixture.latestConnectionID
            let ca = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let result = try await External.openssl(["s_client", "-connect", "127.0.0.1:\(fixture.port)", "-servername",
                                                     "localhost", "-CAfile", ca, "-ign_eof"],
                                                    stdin: Data("BOGUS\u{01} nonsense\r\n\r\n".utf8))
            #expect(result.stdout.contains("HTTP/1.1 400 Bad Request"), "\(result.combined.suffix(400))")
            let record = try await EndToEnd.onlyRecord(fixture, after: cursor)
            #expect(record.outcome?.kind == "handshakeCompleted", "\(record.summary)")
            #expect(record.requests.map(\.status) == [400])
            #expect(record.requests.first?.isMalformed == true)
            #expect(record.summary.hasSuffix("and the server answered 400 to a malformed request"), "\(record.summary)")
        }
    }
}
