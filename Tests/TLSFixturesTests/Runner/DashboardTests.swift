import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// The dashboard's content in memory (issue 29 item 9, issue 25 item 2): what a verifying browser should make of each
/// scenario, worked out from the scenario files; rows still preparing; pins whole; notes that name no fixed port; and
/// `/live.json`, what each fixture saw, through the front door's pipeline. `ServeEndToEndTests` holds a real `serve` and
/// headless Chromium to the same.
@Suite("The dashboard: expected or unexpected, preparing rows, whole pins, what the server saw")
struct DashboardTests {
    let catalog = ScenarioCatalog.builtIn

    func browser(_ name: String) throws -> Scenario.BrowserExpectation {
        try #require(try catalog.scenario(named: name).browserExpectation, "\(name) has no browser expectation")
    }

    @Test("what a verifying browser makes of a scenario comes from its file: verify, expect.clients, client auth")
    func browserExpectations() throws {
        let expired = try browser("expired")
        #expect(expired.outcome == .reject && expired.noVerifyingClientAccepts, "\(expired)")
        #expect(expired.because.contains("certificate has expired"))
        for name in ["self-signed", "wrong-host"] {
            #expect(try browser(name).noVerifyingClientAccepts, "\(name): every client refuses it")
        }
        let compliant = try browser("ats-compliant")
        #expect(compliant.outcome == .accept && !compliant.noVerifyingClientAccepts)
        // The certificate verifies, but no browser presents a client certificate.
        let clientCert = try browser("client-cert-required")
        #expect(clientCert.outcome == .reject && !clientCert.noVerifyingClientAccepts, "\(clientCert)")
        #expect(clientCert.because.contains("client certificate"))
        // expect.clients names Chromium: its verdict, not OpenSSL's, with the file's reason.
        let noSAN = try browser("no-san")
        #expect(noSAN.outcome == .reject && noSAN.because.contains("Chrome"), "\(noSAN)")
        #expect(try browser("rsa1024").outcome == .accept, "Chromium accepts what OpenSSL's level 2 refuses")
        // A verdict some verifying client disagrees with is no proof the browser skips verification.
        #expect(try !browser("sha1-leaf").noVerifyingClientAccepts)
        // Refused for its protocol, not its certificate: loading it says nothing about certificate checks.
        let tls10 = try browser("tls-v1-0")
        #expect(tls10.outcome == .reject && !tls10.noVerifyingClientAccepts)
        #expect(try browser("http").outcome == .accept)
    }

    static let pin = "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="

    func page() throws -> String {
        func entry(_ name: String, _ status: CatalogEntry.Status, port: Int?, reason: String? = nil) throws -> CatalogEntry {
            CatalogEntry(scenario: try catalog.scenario(named: name), port: port, status: status, reason: reason,
                         pins: status == .serving ? FixturePins(leaf: Self.pin, ca: "C", backup: "B", pinnedLeaf: "P") : nil)
        }
        let document = CatalogDocument(dashboard: "http://localhost:12000/", scenarios: [
            try entry("ats-compliant", .serving, port: 12001),
            try entry("expired", .serving, port: 12031),
            try entry("client-cert-required", .serving, port: 12042),
            try entry("rsa8192", .preparing, port: 12005, reason: "preparing… (making the rsa:8192 key in the background)"),
            try entry("ssl-v3", .unsupported, port: 12012, reason: "unsupported by the linked OpenSSL: no SSLv3"),
        ])
        return DashboardPage.html(document: document, caSubject: "CN=test", caPin: "CAPIN")
    }

    /// The live cell of `name`'s row.
    func liveCell(_ page: String, _ name: String) throws -> String {
        let row = try #require(page.range(of: "id=\"scenario-\(name)\"").map { String(page[$0.upperBound...]) })
        let cell = try #require(row.range(of: "<td class=\"live\"").map { String(row[$0.lowerBound...]) })
        return String(cell[..<(cell.range(of: "</td>")?.upperBound ?? cell.endIndex)])
    }

    @Test("each row carries its expectation for the script; a row being prepared says preparing; pins are whole")
    func rows() throws {
        let page = try page()
        let expired = try liveCell(page, "expired")
        #expect(expired.contains("data-expect=\"reject\"") && expired.contains("data-no-verifier-accepts=\"true\""))
        #expect(expired.contains("data-url=\"https://localhost:12031/\"") && !expired.contains("data-control"), "\(expired)")
        let compliant = try liveCell(page, "ats-compliant")
        #expect(compliant.contains("data-expect=\"accept\"") && compliant.contains("data-control=\"true\""))
        #expect(!compliant.contains("data-no-verifier-accepts"))
        // Not a control: every trusting browser is refused it, so it cannot tell a distrusting one.
        let clientCert = try liveCell(page, "client-cert-required")
        #expect(clientCert.contains("data-expect=\"reject\"") && !clientCert.contains("data-control"), "\(clientCert)")
        #expect(!clientCert.contains("data-no-verifier-accepts"))

        let preparing = try liveCell(page, "rsa8192")
        #expect(preparing.contains("data-live=\"preparing\"") && preparing.contains(">preparing…</td>"), "\(preparing)")
        #expect(!preparing.contains("unsupported"), "\(preparing)")
        let unsupported = try liveCell(page, "ssl-v3")
        #expect(unsupported.contains("data-live=\"unsupported\"") && unsupported.contains(">unsupported</td>"))
        let sslRow = try #require(page.range(of: "id=\"scenario-ssl-v3\"").map { String(page[$0.upperBound...].prefix(600)) })
        #expect(sslRow.contains("no SSLv3"), "an unsupported row keeps its reason")

        // The whole pin, as text a selection copies (no ellipsis standing for the rest).
        #expect(page.contains("<td class=\"pin\"><code>sha256/\(Self.pin)</code></td>"))
        #expect(!page.contains("\(Self.pin.prefix(12))…"))
        // The warnings the script raises are on the page, hidden until it does.
        #expect(page.contains("id=\"live-not-verifying\" class=\"alarm\" hidden"))
    }

    @Test("no scenario note names a port of serve's: --port-base moves them, and the leaf's URLs say where they are")
    func notesNameNoFixedPort() throws {
        let fixed = try Regex(#"\b9[89]\d\d\b"#)
        for scenario in catalog.scenarios {
            let note = scenario.expect.note ?? ""
            #expect(note.firstMatch(of: fixed) == nil, "\(scenario.name)'s note names a fixed port: \(note)")
        }
    }

    @Test("/live.json: every scenario's state and its last connections, in the record's own one-line summary")
    func live() async throws {
        let fleet = FakeFleet()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let records = (1...5).map { id in
            ConnectionRecord(
                id: id, acceptedAt: start.addingTimeInterval(Double(id)), endedAt: start.addingTimeInterval(Double(id)),
                peer: "127.0.0.1:5000\(id)",
                outcome: id == 5
                    ? .alertReceived(TLSAlert(code: 48), phase: .afterServerFlight)
                    : .handshakeCompleted(.init(protocol: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", group: "x25519",
                                                clientCertificate: false)),
                requests: id == 5 ? [] : [.init(method: "GET", path: "/", status: 200)])
        }
        fleet.recent.withLockedValue { $0 = ["expired": ConnectionList(connections: records, latestID: 5)] }
        let door = try await FrontDoorConnection.open(fleet)
        let answer = try await door.send("GET", DashboardLive.path)
        #expect(answer.status == 200 && answer.header("Content-Type") == "application/json", "\(answer.text)")
        #expect(answer.header("Cache-Control") == "no-store")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let live = try decoder.decode(DashboardLive.self, from: answer.body)
        let expired = try #require(live.scenarios["expired"])
        #expect(expired.status == "serving" && expired.url == "https://localhost:40001/" && expired.latestID == 5)
        // The last few, newest first, each in ConnectionRecord.summary's words.
        #expect(expired.recent?.map(\.id) == [5, 4, 3])
        #expect(expired.recent?.first?.summary == records[4].summary, "\(expired.recent ?? [])")
        #expect(expired.recent?.first?.summary.contains("unknown_ca(48)") == true)
        #expect(expired.recent?.last?.summary.contains("GET / was answered 200") == true)

        // Made for each request: a new connection shows at the next ask, though the fleet's generation did not move.
        let sixth = ConnectionRecord(id: 6, acceptedAt: start, peer: "127.0.0.1:50006")
        fleet.recent.withLockedValue { $0 = ["expired": ConnectionList(connections: records + [sixth], latestID: 6)] }
        let again = try decoder.decode(DashboardLive.self, from: try await door.send("GET", DashboardLive.path).body)
        #expect(again.scenarios["expired"]?.recent?.first?.summary == "the handshake is still in progress")
        #expect(again.scenarios["expired"]?.recent?.first?.settled == false)
    }
}
