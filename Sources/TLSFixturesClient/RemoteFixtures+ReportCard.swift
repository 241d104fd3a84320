import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TLSFixturesWire

extension RemoteFixtures {
    /// Runs `load` on every scenario the runner serves (or those named) and on each one's control, each on a fresh
    /// fixture of its own, and returns the report card: per scenario, what a client of `family` does with it, what
    /// `load` said, what the fixture saw, and the verdict (`ReportCard`). When `folder` is given the card is written
    /// there too (`report.md`, `report.json`, `report.junit.xml`). One test, the whole card — the way an iOS team runs
    /// its real networking stack (pinning delegate, ATS, proxy) in the Simulator:
    ///
    /// ```swift
    /// @Test func reportCard() async throws {
    ///     let fixtures = RemoteFixtures()
    ///     let session = URLSession(configuration: .fixtures(through: fixtures.proxy))
    ///     let card = try await fixtures.reportCard(client: "URLSession", family: .apple) { url in
    ///         try await session.data(from: url)
    ///     }
    ///     #expect(card.counts[.unexpected] == nil, "\(card.summaryLine)")
    /// }
    /// ```
    ///
    /// `load` throws when the client refuses. Each control is loaded once, on a fixture of its own, and stands for
    /// every scenario it is the control of. Scenarios the runner cannot serve (unsupported by its OpenSSL) are left
    /// out; `trustsAssumedRoots` says the client trusts the roots a scenario assumes (pin-mitm's interception root);
    /// `judgesAppleErrors` holds thrown `NSURLErrorDomain` errors to Apple's families (false for a command's exit).
    public func reportCard<T>(scenarios names: [String]? = nil, client: String = "your client",
                              family: ReportCard.Family = .verifying,
                              url: FixtureURLChoice = .qualifiedName, trustsAssumedRoots: Bool = false,
                              context: [String: String] = [:], to folder: URL? = nil, wait: TimeInterval = 5,
                              judgesAppleErrors: Bool = LoadJudge.isApplePlatform,
                              isolation: isolated (any Actor)? = #isolation,
                              _ load: (URL) async throws -> T) async throws -> ReportCard {
        let listed = try await scenarios()
        var chosen = listed.filter { $0.status == .serving }
        if let names {
            let unknown = names.filter { name in !listed.contains { $0.name == name } }
            if let name = unknown.first {
                throw RemoteFixtureError.invalidScenario("the runner serves no scenario \"\(name.quotedForMessage(limit: 64))\": "
                    + "name one it lists (tls-fixtures scenarios list)")
            }
            chosen = names.compactMap { name in listed.first { $0.name == name && $0.status == .serving } }
        }
        var card = ReportCard(client: client, family: family,
                              context: context.merging(["runner": runnerURL.absoluteString]) { mine, _ in mine })
        var controls: [String: ReportCard.Observation] = [:]
        for scenario in chosen {
            let expect = scenario.expect
            var control: ReportCard.Observation?
            if let name = expect.refusal?.control {
                if controls[name] == nil {
                    controls[name] = try await observe(name, load, url: url, wait: wait)
                }
                control = controls[name]
            }
            let observation = try await observe(scenario.name, load, url: url, wait: wait)
            let expected = ReportCard.expected(expect, family: family, isCleartext: scenario.isCleartext,
                                               clientOutcome: scenario.clientOutcome(for: family))
            card.entries.append(ReportCard.entry(scenario: scenario.name, group: scenario.group, expect: expect,
                                                 expected: expected, trustsAssumedRoots: trustsAssumedRoots,
                                                 control: control, observation: observation,
                                                 judgesAppleErrors: judgesAppleErrors))
        }
        if let folder { try card.write(to: folder) }
        return card
    }

    /// One load on a fresh fixture of `name`, with what it said and what the fixture saw.
    private func observe<T>(_ name: String, _ load: (URL) async throws -> T, url choice: FixtureURLChoice,
                            wait: TimeInterval, isolation: isolated (any Actor)? = #isolation) async throws
        -> ReportCard.Observation
    {
        let fixture = try await start(name)
        do {
            let url = choice == .qualifiedName ? fixture.qualifiedURL : fixture.url
            var thrown: Error?
            var said: ReportCard.Said
            do {
                let value = try await load(url)
                said = ReportCard.Said(accepted: true, detail: Self.describe(value))
            } catch {
                thrown = error
                said = ReportCard.Said(threw: error)
            }
            let records = try await fixture.settledRecords(after: .start, thrown: thrown, wait: wait)
            await fixture.stop()
            return ReportCard.Observation(
                load: LoadJudge.Load(scenario: name, target: "\(url.host ?? "localhost"):\(fixture.port)",
                                     thrown: thrown, records: records),
                said: said)
        } catch {
            await fixture.stop()
            throw error
        }
    }

    /// What a load returned, in a few words: a URL response's status, or the value.
    static func describe(_ value: Any) -> String {
        if let (data, response) = value as? (Data, URLResponse) {
            let status = (response as? HTTPURLResponse)?.statusCode.description ?? "?"
            return "\(status), \(data.count) bytes"
        }
        if let response = value as? HTTPURLResponse { return "\(response.statusCode)" }
        return String(describing: value).quotedForMessage(limit: 200)
    }
}

extension RemoteFixtures.ListedScenario {
    /// True for the plain-HTTP scenario: no TLS at all.
    var isCleartext: Bool { expect.verify == nil }

    /// The matrix stack's verdict for a `.matrix` family (or a pinning one built on it).
    func clientOutcome(for family: ReportCard.Family) -> String? {
        switch family {
        case .matrix(let name): return clientOutcomes?[name]
        case .pinning(let base, _): return clientOutcome(for: base)
        case .verifying, .apple: return nil
        }
    }
}
