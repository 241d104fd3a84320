import Foundation
import Testing

/// scripts/matrix.py's rendering, without any client: `--render` re-derives every cell's summaries from the client's
/// words and the connection records a report keeps, and flags the cells whose report card's verdict is not as expected
/// (the verdict is the card's, never the script's), so a hand-made report shows what a real one would (the records
/// below are in the control API's own shapes, as compact_record keeps them).
@Suite("scripts/matrix.py: what the server saw, summarised, beside the report card's verdict", .ownThreads)
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

    static func result(_ accepted: Bool, _ records: [[String: Any]], expected: String = "accept",
                       verdict: String = "as expected", why: String? = nil) -> [String: Any] {
        var result: [String: Any] = ["accepted": accepted, "detail": accepted ? "HTTP 200" : "refused", "short": "",
                                     "expected": expected, "verdict": verdict,
                                     "server": ["short": "", "connections": records]]
        result["why"] = why
        return result
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

    @Test("each outcome in a few words; a cell whose card is not as expected is flagged with the card's why")
    func summariesAndVerdicts() throws {
        let unknownCA: [String: Any] = ["kind": "alertReceived", "alert": ["code": 48, "name": "unknown_ca"],
                                        "phase": "afterServerFlight"]
        let early: [String: Any] = ["kind": "closedWithoutAlert", "phase": "beforeClientHello"]
        let flight: [String: Any] = ["kind": "closedWithoutAlert", "phase": "afterServerFlight"]
        let noSuite: [String: Any] = ["kind": "alertSent", "alert": ["code": 40, "name": "handshake_failure"],
                                      "reason": "no shared cipher", "phase": "afterClientHello"]
        let badCertificate: [String: Any] = ["code": 42, "name": "bad_certificate"]
        let (report, markdown) = try Self.render([
            ("refused", ["openssl": Self.result(false, [Self.record(unknownCA)], expected: "reject"),
                         "pyca": Self.result(false, [], expected: "reject", verdict: "unproven",
                                             why: "the client never reached refused")]),
            ("served", ["openssl": Self.result(true, [Self.record(Self.completed, requests: ["GET / 200"])]),
                        "pyca": Self.result(true, [Self.record(Self.completed, requests: ["GET / 200"])])]),
            ("retried", ["openssl": Self.result(false, [Self.record(early), Self.record(early),
                                                        Self.record(Self.completed, requests: ["GET / 200"])],
                                                expected: "reject", verdict: "unexpected",
                                                why: "your client accepted retried"),
                         "pyca": Self.result(false, [Self.record(noSuite)], expected: "reject")]),
            ("late", ["openssl": Self.result(false, [Self.record(Self.completed, alertAfterHandshake: badCertificate)],
                                             expected: "reject", verdict: "unexpected",
                                             why: "refused after the handshake, not at the certificate"),
                      "pyca": Self.result(false, [Self.record(flight)], verdict: "unexpected",
                                          why: "refused what a verifying client accepts")]),
            ("plain", ["openssl": Self.result(false, [Self.record(["kind": "notTLS", "firstBytes": "GET / HTTP/1.1",
                                                                   "reason": "http request"])], expected: "reject")]),
        ])
        func short(_ scenario: String, _ client: String) -> String? {
            Self.server(report, scenario, client)?["short"] as? String
        }

        #expect(short("refused", "openssl") == "alert unknown_ca(48)")
        #expect(short("refused", "pyca") == "never arrived")
        #expect(short("served", "openssl") == "completed, GET / 200")
        // Distinct outcomes, requests answered first, repeats said but not counted (retry counts vary between runs).
        #expect(short("retried", "openssl") == "completed, GET / 200; closed before ClientHello (repeated)")
        #expect(short("retried", "pyca") == "server sent handshake_failure(40)")
        #expect(short("late", "openssl") == "completed, then alert bad_certificate(42)")
        #expect(short("late", "pyca") == "closed after server flight")
        // Plain HTTP to a TLS port: the server closed on bytes that are not TLS, which no TLS client's refusal is.
        #expect(short("plain", "openssl") == "not TLS (GET / HTTP/1.1)")

        // The verdicts are the cards', kept as they were: a render judges nothing.
        let rows = report["rows"] as? [[String: Any]] ?? []
        let late = (rows.first { $0["scenario"] as? String == "late" }?["results"] as? [String: Any])?["openssl"]
        #expect((late as? [String: Any])?["verdict"] as? String == "unexpected")

        #expect(markdown.contains("## What the server saw"))
        #expect(markdown.contains("| `refused` | localhost | alert unknown_ca(48) | ⚠ never arrived |"))
        #expect(markdown.contains("| `served` | localhost | completed, GET / 200 | completed, GET / 200 |"))
        #expect(markdown.contains("- `refused` (localhost) × `pyca`: unproven: the client never reached refused"))
        #expect(markdown.contains("- `retried` (localhost) × `openssl`: unexpected: your client accepted retried"))
        #expect(!markdown.contains("`retried` (localhost) × `pyca`"), "an as-expected cell is not listed")
        // The first table: an unexpected cell says whether it was the verdict or the step that differs.
        #expect(markdown.contains("| `late` | localhost | ⚠ refused (at another step) | ⚠ refused (expected accept) |"),
                "\(markdown)")
    }
}
