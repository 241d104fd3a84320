import Foundation

/// What one client did with every scenario and its control, beside what each fixture saw, judged by the differential
/// judge (`LoadJudge`): badssl.com's dashboard for any client — a command, your app's networking stack in the
/// Simulator, a browser clicked through by hand — that also says what the server saw, so every verdict is proven or
/// says why it is not.
///
/// Each entry is *as expected* (the client did what a verifying client of its family does: refused at the scenario's
/// step, or accepted), *unexpected* (it accepted what such a client refuses, refused what it accepts, or refused at
/// another step or for another reason), or *unproven* (the client refused the control too, never reached the fixture,
/// or the records cannot tell), and says why. Written as Markdown for people, JSON for tools, JUnit XML for CI (one
/// test case per scenario).
public struct ReportCard: Codable, Sendable, Hashable {
    /// The client, in the words of whoever made the card (`curl -sS --cacert {ca} {url}`, `URLSession, MyApp`).
    public var client: String
    /// Whose expectations it is held to (`ReportCard.Family`).
    public var family: Family
    /// When the card was made.
    public var date: Date
    /// Where it was made: the runner's URL, the OS and its version, a device, as the maker says.
    public var context: [String: String]
    /// One entry per scenario, in the order run.
    public var entries: [Entry]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(client: String, family: Family, date: Date = Date(), context: [String: String] = [:],
                entries: [Entry] = []) {
        self.client = client
        self.family = family
        self.date = date
        self.context = context
        self.entries = entries
    }

    /// Whose expectations a client is held to.
    public enum Family: Codable, Sendable, Hashable, CustomStringConvertible {
        /// A client that verifies as OpenSSL does, trusting the kit's CA alone: accepts what `expect.verify` calls
        /// `ok`, refuses the rest (plain HTTP is accepted).
        case verifying
        /// A stack of the client matrix (`curl`, `java`, …): the scenario files' verdict for it (`expect.clients`),
        /// which the matrix judged by the name `localhost` (a command's `{url}`).
        case matrix(String)
        /// Apple's URLSession under a default ATS policy, by the qualified name, the kit's CA trusted: `expect.ats`.
        case apple
        /// Any of those, pinning the published `pinned` leaf's key (`leaf`) or the kit's CA key (`ca`) on top: the pin
        /// scenarios are then refused or accepted as `expect.pins` says.
        indirect case pinning(Family, pin: PinTarget)

        /// Which key a pinning client pins.
        public enum PinTarget: String, Codable, Sendable, Hashable { case leaf, ca }

        public var description: String {
            switch self {
            case .verifying: return "a verifying client (OpenSSL's rules, the kit's CA trusted)"
            case .matrix(let name): return "the client matrix's \(name)"
            case .apple: return "Apple's URLSession under a default ATS policy"
            case .pinning(let base, let pin): return "\(base), pinning the \(pin == .leaf ? "pinned leaf's" : "CA's") key"
            }
        }
    }

    /// What a verifying client of the card's family does with a scenario.
    public enum Expected: String, Codable, Sendable, Hashable { case accept, refuse }

    /// The verdict of one entry.
    public enum Verdict: String, Codable, Sendable, Hashable, CaseIterable {
        case asExpected = "as expected"
        case unexpected
        case unproven
    }

    /// What the client said of one load: accepted (it returned, or exited 0), and its words.
    public struct Said: Codable, Sendable, Hashable {
        /// Whether the load returned (a command: exited 0).
        public var accepted: Bool
        /// Its error, or its exit status and output, one line, bounded.
        public var detail: String
        /// The thrown error's domain and code (`NSURLErrorDomain`, -1202), when it threw one.
        public var errorDomain: String?
        public var errorCode: Int?
        /// The stream error underneath a URL error (`_kCFStreamErrorCodeKey`: -9814), when Apple's loader gave one.
        public var streamErrorCode: Int?

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(accepted: Bool, detail: String, errorDomain: String? = nil, errorCode: Int? = nil,
                    streamErrorCode: Int? = nil) {
            self.accepted = accepted
            self.detail = detail.quotedForMessage(limit: 400)
            self.errorDomain = errorDomain
            self.errorCode = errorCode
            self.streamErrorCode = streamErrorCode
        }

        /// What a load that threw `error` said: its words, domain, code and stream code.
        public init(threw error: Error) {
            let bridged = error as NSError
            let stream = bridged.userInfo["_kCFStreamErrorCodeKey"] as? Int
                ?? (bridged.userInfo[NSUnderlyingErrorKey] as? NSError)?.userInfo["_kCFStreamErrorCodeKey"] as? Int
            self.init(accepted: false, detail: "\(ThrownError(error))", errorDomain: bridged.domain,
                      errorCode: bridged.code, streamErrorCode: stream)
        }
    }

    /// One scenario of the card.
    public struct Entry: Codable, Sendable, Hashable {
        /// The scenario.
        public var scenario: String
        /// Its catalog group.
        public var group: String
        /// What a client of the family does, and why (the scenario file's words).
        public var expected: Expected
        /// Where a refusing client stops (`expect.refusal.step`), for a scenario some client refuses.
        public var steps: [RefusalStep]?
        /// Its control, loaded by the same client on a fixture of its own.
        public var control: String?
        /// What the client said of the scenario.
        public var said: Said
        /// What the client said of the control.
        public var controlSaid: Said?
        /// What the scenario's fixture recorded of the client (its fixture served nobody else).
        public var records: [ConnectionRecord]
        /// What the control's fixture recorded.
        public var controlRecords: [ConnectionRecord]?
        /// As expected, unexpected, or unproven.
        public var verdict: Verdict
        /// Why, in one line.
        public var why: String
        /// What is worth knowing and is not a failure (an Apple code other than the scenario file's, a late check).
        public var notes: [String]

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(scenario: String, group: String, expected: Expected, steps: [RefusalStep]?, control: String?,
                    said: Said, controlSaid: Said?, records: [ConnectionRecord], controlRecords: [ConnectionRecord]?,
                    verdict: Verdict, why: String, notes: [String] = []) {
            self.scenario = scenario; self.group = group; self.expected = expected; self.steps = steps
            self.control = control; self.said = said; self.controlSaid = controlSaid; self.records = records
            self.controlRecords = controlRecords; self.verdict = verdict; self.why = why; self.notes = notes
        }

        /// What the fixture saw, in a few words: each record's summary, repeated ones counted.
        public var seen: String {
            let evidence = records.filter(\.carriesEvidence)
            guard !evidence.isEmpty else { return "no connection" }
            var counts: [(String, Int)] = []
            for summary in evidence.map(\.summary) {
                if let index = counts.firstIndex(where: { $0.0 == summary }) { counts[index].1 += 1 } else {
                    counts.append((summary, 1))
                }
            }
            return counts.map { $0.1 > 1 ? "\($0.0) (\($0.1) connections)" : $0.0 }.joined(separator: "; ")
        }
    }

    /// How many entries have each verdict.
    public var counts: [Verdict: Int] {
        Dictionary(grouping: entries, by: \.verdict).mapValues(\.count)
    }

    /// `report: 57 as expected, 1 unexpected, 2 unproven`.
    public var summaryLine: String {
        let counts = counts
        return "report: \(counts[.asExpected] ?? 0) as expected, \(counts[.unexpected] ?? 0) unexpected, "
            + "\(counts[.unproven] ?? 0) unproven"
    }

    // MARK: Judging one entry

    /// One load of an entry, as `LoadJudge.Load`; `said` is what the client reported of it.
    public struct Observation: Sendable {
        /// The load and its fixture's records.
        public var load: LoadJudge.Load
        /// The client's words.
        public var said: Said

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(load: LoadJudge.Load, said: Said) {
            self.load = load
            self.said = said
        }
    }

    /// What the scenario expects of a client of `family`: `clientOutcome` is the matrix stack's verdict when the
    /// family is one (from `/scenarios.json`'s `clientOutcomes` or the scenario file's `expect.clients`).
    public static func expected(_ expect: FixtureExpectations, family: Family, isCleartext: Bool,
                                clientOutcome: String? = nil) -> Expected {
        // The server refuses every client that sends no certificate, whatever the client verifies.
        if expect.refusal?.steps == [.clientCertificate] { return .refuse }
        switch family {
        case .verifying:
            if isCleartext { return .accept }
            return expect.verify == "ok" ? .accept : .refuse
        case .matrix:
            if let clientOutcome { return clientOutcome == "reject" ? .refuse : .accept }
            return expected(expect, family: .verifying, isCleartext: isCleartext)
        case .apple:
            return expect.ats == .allow ? .accept : .refuse
        case .pinning(let base, let pin):
            if let pins = expect.pins {
                return (pin == .leaf ? pins.leafSPKI : pins.caSPKI) ? .accept : .refuse
            }
            return expected(expect, family: base, isCleartext: isCleartext, clientOutcome: clientOutcome)
        }
    }

    /// The refusal a client of `family` shows, when the scenario assumes a root the client does not trust
    /// (`expect.trustedRoots`, pin-mitm's interception root): refused at the certificate, by trust, whatever alert.
    public static func refusal(_ expect: FixtureExpectations, trustsAssumedRoots: Bool) -> RefusalExpectation? {
        guard let refusal = expect.refusal else { return nil }
        guard expect.trustedRoots != nil, !trustsAssumedRoots else { return refusal }
        return RefusalExpectation(control: refusal.control, step: .certificate)
    }

    /// Judges one scenario: `control` is nil for a scenario with no control (a control itself).
    public static func entry(scenario: String, group: String, expect: FixtureExpectations, expected: Expected,
                             trustsAssumedRoots: Bool = false, control: Observation?, observation: Observation,
                             judgesAppleErrors: Bool = LoadJudge.isApplePlatform) -> Entry {
        let refusal = refusal(expect, trustsAssumedRoots: trustsAssumedRoots)
        func entry(_ verdict: Verdict, _ why: String, notes: [String] = []) -> Entry {
            Entry(scenario: scenario, group: group, expected: expected, steps: refusal?.steps,
                  control: control?.load.scenario, said: observation.said, controlSaid: control?.said,
                  records: observation.load.records, controlRecords: control?.load.records, verdict: verdict,
                  why: why, notes: notes)
        }
        let served = observation.load.records.contains { $0.requestCount > 0 }
        // A TLS client on the plain-HTTP fixture: its ClientHello is not HTTP, answered 400 as malformed.
        if observation.load.records.contains(where: { $0.requests.first?.isMalformed == true }),
           !observation.load.records.contains(where: { $0.requests.contains { !$0.isMalformed } }) {
            return entry(.unproven, "the client sent \(scenario) something that is not HTTP (TLS to a plain-HTTP "
                + "fixture?), answered 400: it cannot load this scenario's URL")
        }
        switch expected {
        case .refuse:
            guard let control else {
                return entry(.unproven, "\(scenario) has no control to prove the refusal by")
            }
            switch LoadJudge.differential(control: control.load, scenario: observation.load, expectation: refusal,
                                          judgesAppleErrors: judgesAppleErrors) {
            case .success(let verdict):
                return entry(.asExpected, "refused \(verdict.step), as a verifying client does", notes: verdict.notes)
            case .failure(let failure):
                // The scenario's half in its own words: the card shows the control beside it.
                var why = failure.description
                if failure.code != .controlRefused, let range = why.range(of: "but on \(scenario): ") {
                    why = String(why[range.upperBound...])
                }
                switch failure.code {
                case .controlRefused, .neverReached, .ambiguous, .unrecognizedOutcome, .notTLS, .stillOpen,
                     .unproven, .noRefusal:
                    return entry(.unproven, why)
                default:
                    return entry(.unexpected, why)
                }
            }
        case .accept:
            if let control {
                let controlServed = control.load.records.contains { $0.requestCount > 0 }
                if !controlServed {
                    return entry(.unproven, "your client refuses the control \(control.load.scenario) too ("
                        + (control.load.records.last?.summary ?? "it never reached it") + ")")
                }
            }
            if served && observation.load.thrown == nil {
                return entry(.asExpected, "accepted, as a verifying client does")
            }
            if served {
                return entry(.unexpected, "the fixture answered, but the client then failed: \(observation.said.detail)")
            }
            let evidence = observation.load.records.filter(\.carriesEvidence)
            if evidence.isEmpty {
                return entry(.unproven, "the client never reached \(scenario): \(observation.said.detail)")
            }
            return entry(.unexpected, "refused what a verifying client accepts: "
                + evidence.map(\.summary).joined(separator: "; ") + " (the client said: \(observation.said.detail))")
        }
    }

    // MARK: Writing it

    /// For people: a summary, then a table of every scenario and what each side said.
    public func markdown() -> String {
        var lines = ["# Report card: \(client.escapingMarkdown)", "",
                     "\(summaryLine). Held to \(family); made \(ISO8601DateFormatter().string(from: date))."]
        for (key, value) in context.sorted(by: { $0.key < $1.key }) { lines.append("- \(key): \(value.escapingMarkdown)") }
        lines += ["", "| scenario | expected | the client said | the fixture saw | verdict |",
                  "| --- | --- | --- | --- | --- |"]
        for entry in entries {
            let expected = entry.expected == .accept ? "accept"
                : "refuse " + (entry.steps?.map(\.rawValue).joined(separator: " or ") ?? "")
            let said = (entry.said.accepted ? "accepted" : "refused") + ": " + entry.said.detail
            let verdict = entry.verdict == .asExpected ? "as expected" : "**\(entry.verdict.rawValue)**: \(entry.why)"
            lines.append("| `\(entry.scenario)` | \(expected) | \(said.escapingMarkdown) | "
                + "\(entry.seen.escapingMarkdown) | \(verdict.escapingMarkdown) |")
        }
        let notes = entries.flatMap { entry in entry.notes.map { "- `\(entry.scenario)`: \($0.escapingMarkdown)" } }
        if !notes.isEmpty { lines += ["", "Notes:", ""] + notes }
        return lines.joined(separator: "\n") + "\n"
    }

    /// For CI: one test suite, one test case per scenario; unexpected ones fail, unproven ones are skipped with why.
    public func junitXML() -> String {
        let counts = counts
        var lines = [#"<?xml version="1.0" encoding="UTF-8"?>"#,
                     "<testsuites name=\"tls-fixtures report\" tests=\"\(entries.count)\" "
                         + "failures=\"\(counts[.unexpected] ?? 0)\" skipped=\"\(counts[.unproven] ?? 0)\">",
                     "  <testsuite name=\"\(client.xmlEscaped)\" tests=\"\(entries.count)\" "
                         + "failures=\"\(counts[.unexpected] ?? 0)\" skipped=\"\(counts[.unproven] ?? 0)\" "
                         + "timestamp=\"\(ISO8601DateFormatter().string(from: date))\">"]
        for entry in entries {
            let open = "    <testcase classname=\"tls-fixtures.\(entry.group.xmlEscaped)\" name=\"\(entry.scenario.xmlEscaped)\""
            let output = "the client said: \(entry.said.detail); the fixture saw: \(entry.seen)"
            switch entry.verdict {
            case .asExpected:
                lines.append(open + "><system-out>\(output.xmlEscaped)</system-out></testcase>")
            case .unexpected:
                lines.append(open + "><failure message=\"\(entry.why.xmlEscaped)\">\(output.xmlEscaped)</failure>"
                    + "</testcase>")
            case .unproven:
                lines.append(open + "><skipped message=\"\(entry.why.xmlEscaped)\"/></testcase>")
            }
        }
        lines += ["  </testsuite>", "</testsuites>"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// For tools: this value, with `FixtureAPI.encoder()`'s conventions (ISO 8601 dates, sorted keys).
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    /// Reads `json()`'s output.
    public static func decode(_ data: Data) throws -> ReportCard {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(ReportCard.self, from: data)
    }

    /// Writes `report.md`, `report.json` and `report.junit.xml` into `folder` (made if missing); returns their URLs.
    @discardableResult
    public func write(to folder: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let files = [("report.md", Data(markdown().utf8)), ("report.json", try json()),
                     ("report.junit.xml", Data(junitXML().utf8))]
        return try files.map { name, data in
            let url = folder.appendingPathComponent(name)
            try data.write(to: url, options: .atomic)
            return url
        }
    }
}

extension String {
    /// Safe in a Markdown table cell: pipes escaped, line breaks made spaces.
    var escapingMarkdown: String {
        replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }

    /// Safe in XML text and attributes.
    var xmlEscaped: String {
        var text = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "&": text += "&amp;"
            case "<": text += "&lt;"
            case ">": text += "&gt;"
            case "\"": text += "&quot;"
            case "'": text += "&apos;"
            case "\n", "\t": text += " "
            default:
                // XML 1.0 allows no other control characters.
                if scalar.value < 0x20 { text += "?" } else { text.unicodeScalars.append(scalar) }
            }
        }
        return text
    }
}

extension ReportCard {
    /// Where a card made with Apple's URLSession (`family` `.apple`) disagrees with the scenario files: a verdict other
    /// than as expected, or an `NSURLErrorDomain` code or stream code other than `expect.refusal.apple` states. Once a
    /// card from a Mac is committed (docs/apple/), the files must agree with it: the card is the evidence, the files'
    /// guesses give way to it. `expectations` are the files', by scenario name.
    public func appleDisagreements(with expectations: [String: FixtureExpectations]) -> [String] {
        var found: [String] = []
        for entry in entries {
            guard let expect = expectations[entry.scenario] else {
                found.append("\(entry.scenario): no scenario file has this name")
                continue
            }
            if entry.verdict == .unexpected {
                found.append("\(entry.scenario): \(entry.why)")
                continue
            }
            guard entry.verdict == .asExpected, entry.expected == .refuse,
                  let apple = expect.refusal?.apple?.error else { continue }
            if entry.said.errorDomain == "NSURLErrorDomain", let code = entry.said.errorCode,
               code != apple.urlErrorCode {
                found.append("\(entry.scenario): Apple reported NSURLErrorDomain \(code) where the file expects "
                    + "\(apple.urlErrorCode) (\(apple.urlErrorName)): write the observed code, with this card as its "
                    + "source")
            }
            if let stream = entry.said.streamErrorCode, let expected = apple.streamErrorCode, stream != expected {
                found.append("\(entry.scenario): Apple's stream error was \(stream) where the file expects \(expected)"
                    + " (\(apple.streamErrorName ?? "?"))")
            }
        }
        return found
    }
}
