import Foundation

/// The report card of clients driven by hand — an app clicked through on a device, a browser — against `serve`'s
/// catalog fixtures (`serve --report DIR`): every client that connected, per scenario, with a verdict from what the
/// fixture saw. A client is a peer address and what its ClientHello offered, so two apps on one machine are told apart
/// when they offer differently. No client's words are known and no control is loaded beside each scenario, so a
/// verdict rests on the records alone: a request answered is an acceptance, an end at the scenario's step a refusal;
/// the same client's row for the control (`ats-compliant`) is what says it trusts the kit's CA at all.
public struct ManualReport: Sendable {
    /// One scenario's records of one client.
    struct Row: Sendable {
        var scenario: String
        var group: String
        var expect: FixtureExpectations
        var client: String
        var records: [ConnectionRecord]
    }

    private var rows: [String: Row] = [:]
    private var order: [String] = []
    /// Whose expectations the clients are held to.
    public var family: ReportCard.Family
    /// Records kept per row, at most (a client that reconnects all day keeps its latest).
    public static let maximumRecordsPerRow = 16

    /// An empty report, held to `family`'s expectations.
    public init(family: ReportCard.Family = .verifying) { self.family = family }

    /// Adds a connection a catalog fixture of `scenario` saw, once it ended.
    public mutating func add(scenario: String, group: String, expect: FixtureExpectations, record: ConnectionRecord) {
        guard record.carriesEvidence else { return }
        let client = Self.client(of: record)
        let key = "\(scenario)\u{0}\(client)"
        if rows[key] == nil {
            rows[key] = Row(scenario: scenario, group: group, expect: expect, client: client, records: [])
            order.append(key)
        }
        rows[key]!.records.append(record)
        if rows[key]!.records.count > Self.maximumRecordsPerRow { rows[key]!.records.removeFirst() }
    }

    /// `127.0.0.1, through the proxy, TLSv1.3/TLSv1.2, 17 suites`: who connected, as far as the fixture can tell.
    static func client(of record: ConnectionRecord) -> String {
        var words = [record.peerHost]
        if record.proxy != nil { words.append("through the proxy") }
        if let hello = record.clientHello {
            let versions = hello.supportedVersions.isEmpty ? [hello.legacyVersion] : hello.supportedVersions
            words.append(versions.joined(separator: "/"))
            words.append("\(hello.cipherSuites.count) suites")
            if let alpn = hello.alpn.first { words.append("ALPN \(alpn)") }
        } else if case .cleartext? = record.outcome {
            words.append("plain HTTP")
        }
        return words.joined(separator: ", ")
    }

    /// The card so far: one entry per scenario and client.
    public func card(client: String = "clients driven by hand", context: [String: String] = [:]) -> ReportCard {
        var card = ReportCard(client: client, family: family, context: context)
        for key in order {
            guard let row = rows[key] else { continue }
            let isCleartext = row.expect.verify == nil
            let expected = ReportCard.expected(row.expect, family: family, isCleartext: isCleartext)
            let said = ReportCard.Said(accepted: row.records.contains { $0.requestCount > 0 },
                                       detail: "by hand, from \(row.client): the client's words are not known")
            let judge = LoadJudge(scenario: row.scenario, target: "its catalog port",
                                  expectation: ReportCard.refusal(row.expect, trustsAssumedRoots: false),
                                  judgesAppleErrors: false)
            let (verdict, why) = Self.verdict(expected: expected, records: row.records, judge: judge)
            card.entries.append(ReportCard.Entry(
                scenario: row.scenario, group: row.group, expected: expected,
                steps: row.expect.refusal?.steps, control: nil, said: said, controlSaid: nil, records: row.records,
                controlRecords: nil, verdict: verdict, why: why))
        }
        return card
    }

    private static func verdict(expected: ReportCard.Expected, records: [ConnectionRecord], judge: LoadJudge)
        -> (ReportCard.Verdict, String)
    {
        let accepted = records.contains { $0.requestCount > 0 && !$0.requests.allSatisfy(\.isMalformed) }
        switch (expected, accepted) {
        case (.accept, true): return (.asExpected, "accepted, as a verifying client does")
        case (.refuse, true): return (.unexpected, "accepted what a verifying client refuses")
        case (.refuse, false):
            if case .success(let step) = judge.refusalShown(by: records) {
                return (.asExpected, "refused \(step), as a verifying client does")
            }
            return (.unproven, "refused nothing the fixture could see as this scenario's refusal: "
                + (records.last?.summary ?? "no connection"))
        case (.accept, false):
            if case .success = judge.refusalShown(by: records) {
                return (.unexpected, "refused what a verifying client accepts")
            }
            return (.unproven, "no request was answered: " + (records.last?.summary ?? "no connection"))
        }
    }
}
