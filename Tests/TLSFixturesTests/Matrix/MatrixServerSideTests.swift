import Foundation
import Testing

/// scripts/matrix.py's server-side column, without any client: `--render` re-derives every cell's summary and finding
/// from the connection records a report keeps, so a hand-made report shows what a real one would (the records below
/// are in the control API's own shapes, as compact_record keeps them).
@Suite("scripts/matrix.py: what the server saw, summarised and checked against the client's verdict")
struct MatrixServerSideTests {
    static func record(_ outcome: [String: Any]?, requests: [String] = [], serverName: String? = "localhost",
                       alertAfterHandshake: [String: Any]? = nil) -> [String: Any] {
        var record: [String: Any] = ["peer": "IPv4", "requests": requests, "requestCount": requests.count]
        record["outcome"] = outcome
        record["serverName"] = serverName
        record["alertAfterHandshake"] = alertAfterHandshake
        return record
    }

    static var completed: [String: Any] { ["kind": "handshakeCompleted", "protocol": "TLSv1.3",
                                           "cipher": "TLS_AES_128_GCM_SHA256", "clientCertificate": false] }

    static func result(_ accepted: Bool?, _ records: [[String: Any]]) -> [String: Any] {
        ["accepted": accepted.map { $0 as Any } ?? NSNull(), "detail": accepted == true ? "HTTP 200" : "refused",
         "short": "", "server": ["short": "", "connections": records]]
    }

    /// Renders `rows` (scenario → client → result) and gives back the report and the markdown.
    static func render(_ rows: [(String, [String: [String: Any]])]) throws -> (report: [String: Any], markdown: String) {
        let scratch = TestEnvironment.temporaryDirectory("matrix-render")
        let input = scratch.appendingPathComponent("in.json"), output = scratch.appendingPathComponent("out.json")
        let markdown = scratch.appendingPathComponent("out.md")
        let clients = ["openssl", "pyca"].map { ["id": $0, "stack": "s", "summary": "s", "status": "ok", "version": "1"] }
        let report: [String: Any] = [
            "generated": "2026-01-01", "machine": "test", "clients": clients, "notServed": [] as [Any],
            "rows": rows.map { ["scenario": $0.0, "host": "localhost", "primary": true, "results": $0.1] as [String: Any] }]
        try JSONSerialization.data(withJSONObject: report).write(to: input)
        let run = try Subprocess.run(["python3", TestEnvironment.packageRoot.appendingPathComponent("scripts/matrix.py").path,
                                      "--render", input.path, "--json", output.path, "--markdown", markdown.path])
        try #require(run.status == 0, "matrix.py --render failed: \(run.stderr)")
        let rendered = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: output)) as? [String: Any])
        return (rendered, try String(contentsOf: markdown, encoding: .utf8))
    }

    static func server(_ report: [String: Any], _ scenario: String, _ client: String) -> [String: Any]? {
        let rows = report["rows"] as? [[String: Any]] ?? []
        let row = rows.first { $0["scenario"] as? String == scenario }
        return ((row?["results"] as? [String: Any])?[client] as? [String: Any])?["server"] as? [String: Any]
    }

    @Test("each outcome in a few words; a refusal the fixture never saw, or one it answered a request for, is flagged")
    func summariesAndFindings() throws {
        let unknownCA: [String: Any] = ["kind": "alertReceived", "alert": ["code": 48, "name": "unknown_ca"], "phase": "afterServerFlight"]
        let early: [String: Any] = ["kind": "closedWithoutAlert", "phase": "beforeClientHello"]
        let noSuite: [String: Any] = ["kind": "alertSent", "alert": ["code": 40, "name": "handshake_failure"],
                                      "reason": "no shared cipher", "phase": "afterClientHello"]
        let (report, markdown) = try Self.render([
            ("refused", ["openssl": Self.result(false, [Self.record(unknownCA)]),
                         "pyca": Self.result(false, [])]),
            ("served", ["openssl": Self.result(true, [Self.record(Self.completed, requests: ["GET / 200"])]),
                        "pyca": Self.result(true, [Self.record(Self.completed)])]),
            ("retried", ["openssl": Self.result(false, [Self.record(early), Self.record(early),
                                                        Self.record(Self.completed, requests: ["GET / 200"])]),
                         "pyca": Self.result(false, [Self.record(noSuite)])]),
            ("late", ["openssl": Self.result(false, [Self.record(Self.completed, alertAfterHandshake: ["code": 42, "name": "bad_certificate"])]),
                      "pyca": Self.result(nil, [])]),
            ("plain", ["openssl": Self.result(false, [Self.record(["kind": "notTLS", "firstBytes": "GET / HTTP/1.1",
                                                                   "reason": "http request"])])]),
        ])
        func short(_ scenario: String, _ client: String) -> String? { Self.server(report, scenario, client)?["short"] as? String }
        func finding(_ scenario: String, _ client: String) -> String? { Self.server(report, scenario, client)?["finding"] as? String }

        #expect(short("refused", "openssl") == "alert unknown_ca(48)")
        #expect(finding("refused", "openssl") == nil)
        #expect(short("refused", "pyca") == "never arrived")
        #expect(finding("refused", "pyca")?.hasPrefix("never arrived: the refusal is not proven") == true)
        #expect(short("served", "openssl") == "completed, GET / 200")
        #expect(finding("served", "openssl") == nil)
        // pyca fetches the chain with verification off and sends no request, whatever its verdict.
        #expect(short("served", "pyca") == "completed, no request")
        #expect(finding("served", "pyca") == nil)
        // Distinct outcomes, requests answered first, repeats said but not counted (retry counts vary between runs).
        #expect(short("retried", "openssl") == "completed, GET / 200; closed before ClientHello (repeated)")
        #expect(finding("retried", "openssl") == "refused, yet the fixture answered a request")
        #expect(short("retried", "pyca") == "server sent handshake_failure(40)")
        #expect(short("late", "openssl") == "completed, then alert bad_certificate(42)")
        #expect(finding("late", "openssl") == nil)
        // Plain HTTP to a TLS port: the server closed on bytes that are not TLS, which no TLS client's refusal is.
        #expect(short("plain", "openssl") == "not TLS (GET / HTTP/1.1)")
        // No verdict, nothing to prove.
        #expect(finding("late", "pyca") == nil)

        #expect(markdown.contains("## What the server saw"))
        #expect(markdown.contains("| `refused` | localhost | alert unknown_ca(48) | ⚠ never arrived |"))
        #expect(markdown.contains("- `refused` (localhost) × `pyca`: never arrived"))
        #expect(markdown.contains("- `retried` (localhost) × `openssl`: refused, yet the fixture answered a request"))
    }
}
