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
}
