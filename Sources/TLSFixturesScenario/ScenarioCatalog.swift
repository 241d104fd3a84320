import Foundation
import TLSFixturesWire
import TLSFixturesPKI

/// Scenarios by name: the built-in catalog (the files of `Scenarios/`, compiled in so tests in any package can use
/// them without a path) plus any directory of the user's own files.
public struct ScenarioCatalog: Sendable {
    /// Every scenario, in the order it was given or loaded (the built-in catalog and a directory: by file name).
    public let scenarios: [Scenario]

    /// The port of the dashboard; scenario ports follow it. `--port-base` moves them all together.
    public static let defaultPortBase = 9800
    /// `serve` runs the OCSP responder and CRL endpoint of the revocation scenarios here (9899 with the default base)…
    public static let revocationResponderOffset = 99
    /// …and holds this port bound but never listening, so `ocsp-unreachable`'s responder URL refuses (9898).
    public static let refusingPortOffset = 98
    /// Offsets from the base no scenario may take.
    static let reservedOffsets: [Int: String] = [0: "the dashboard", revocationResponderOffset: "the OCSP responder",
                                                refusingPortOffset: "the refusing OCSP port"]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(scenarios: [Scenario]) { self.scenarios = scenarios }

    /// The catalog shipped in `Scenarios/`, decoded once.
    public static let builtIn: ScenarioCatalog = {
        do {
            let scenarios = try BuiltinScenarioFiles.all.map { file in
                try ScenarioCatalog.decode(Data(file.json.utf8), source: "Scenarios/\(file.name)")
            }
            return ScenarioCatalog(scenarios: scenarios)
        } catch {
            // The built-in files are checked by the test suite; reaching this means a build from edited sources.
            fatalError("the built-in scenario catalog does not decode: \(error)")
        }
    }()

    /// The built-in catalog plus every `*.json` in `directory`. A user file may not reuse a built-in name or port.
    public static func withUserScenarios(from directory: URL?) throws -> ScenarioCatalog {
        guard let directory else { return builtIn }
        let user = try load(directory: directory)
        var names = Set(builtIn.scenarios.map(\.name))
        var ports = Dictionary(builtIn.scenarios.compactMap { s in s.port.map { ($0, s.name) } }, uniquingKeysWith: { a, _ in a })
        for scenario in user {
            guard names.insert(scenario.name).inserted else {
                throw ScenarioError.duplicate(scenario.name, directory.appendingPathComponent("\(scenario.name).json").path)
            }
            do { try builtIn.requireFreeCertificateName(scenario.name) } catch {
                throw ScenarioError.malformed(directory.appendingPathComponent("\(scenario.name).json").path,
                                              "at name: \((error as? any CodedError)?.reason ?? "\(error)")")
            }
            if let port = scenario.port {
                // `serve` puts the dashboard on the base port and the revocation services above it: those offsets are taken.
                let file = directory.appendingPathComponent("\(scenario.name).json").path
                if ports[port] == nil, port == defaultPortBase { throw ScenarioError.dashboardPortTaken(file, port) }
                if let other = ports[port] ?? reservedOffsets[port - defaultPortBase] {
                    throw ScenarioError.portTaken(file, port, other)
                }
                ports[port] = scenario.name
            }
        }
        let catalog = ScenarioCatalog(scenarios: builtIn.scenarios + user)
        for scenario in user {
            try catalog.validateControl(of: scenario, file: directory.appendingPathComponent("\(scenario.name).json").path)
        }
        return catalog
    }

    /// A refusal's control (`expect.refusal.control`) is a scenario of this catalog that every verifying client
    /// accepts: a TLS scenario with no refusal of its own.
    public func validateControl(of scenario: Scenario, file: String? = nil) throws {
        guard let control = scenario.expect.refusal?.control else { return }
        let source = file ?? "scenario \(scenario.name)"
        guard let found = scenarios.first(where: { $0.name == control }) else {
            throw ScenarioError.badControl(source, control, "no scenario of that name",
                                           suggestion: closest(to: control))
        }
        if found.isCleartext {
            throw ScenarioError.badControl(source, control, "it is plain HTTP, so it proves nothing about TLS",
                                           suggestion: nil)
        }
        if found.expect.refusal != nil {
            throw ScenarioError.badControl(source, control, "it has a refusal of its own, so clients refuse it too",
                                           suggestion: nil)
        }
    }

    /// Every `*.json` file in `directory`, sorted by file name. Each must be named after its scenario.
    public static func load(directory: URL) throws -> [Scenario] {
        let files: [String]
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            throw ScenarioError.unreadable(directory.path, "no such folder")
        }
        guard isDirectory.boolValue else { throw ScenarioError.unreadable(directory.path, "it is a file, not a folder") }
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        } catch {
            throw ScenarioError.unreadable(directory.path, "permission denied")
        }
        return try files.map { file in
            let url = directory.appendingPathComponent(file)
            let data: Data
            do { data = try UserFile.read(url.path) } catch let error as UserFileError { throw ScenarioError.unreadable(url.path, error.problem) }
            let scenario = try decode(data, source: url.path)
            let expected = String(file.dropLast(".json".count))
            guard scenario.name == expected else { throw ScenarioError.misnamed(url.path, scenario.name) }
            return scenario
        }
    }

    /// Decodes one scenario file; errors are one line naming the file and the key. `ScenarioJSONPrecheck` runs first
    /// for what the decoder does not report (duplicate keys, numbers that are not whole or do not fit, control
    /// characters in strings).
    public static func decode(_ data: Data, source: String) throws -> Scenario {
        if let problem = ScenarioJSONPrecheck.problem(in: Array(data)) { throw ScenarioError.malformed(source, problem) }
        do {
            return try JSONDecoder().decode(Scenario.self, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw ScenarioError.malformed(source, syntaxProblem(in: data) ?? error.oneLine)
            }
            throw ScenarioError.malformed(source, error.oneLine)
        }
    }

    /// Where a file that is not JSON at all goes wrong, as line and column. JSONDecoder on Linux says only "The given
    /// data was not valid JSON"; JSONSerialization names the byte ("Invalid value around character 13."), which is
    /// turned into a position an editor can jump to.
    package static func syntaxProblem(in data: Data) -> String? {
        if data.allSatisfy({ [0x20, 0x09, 0x0a, 0x0d].contains($0) }) {
            return "the file is empty; a scenario is one JSON object (see Scenarios/*.json)"
        }
        let problem: String
        do {
            _ = try JSONSerialization.jsonObject(with: data)
            return nil
        } catch {
            problem = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "not valid JSON"
        }
        var text = problem.hasSuffix(".") ? String(problem.dropLast()) : problem
        if let range = text.range(of: #"around (line \d+, column \d+|character \d+)"#, options: .regularExpression) {
            let found = text[range]
            if found.contains("character"), let offset = Int(found.split(separator: " ").last ?? "") {
                let before = data.prefix(max(0, min(offset, data.count)))
                let line = before.filter { $0 == 0x0a }.count + 1
                let column = before.count - (before.lastIndex(of: 0x0a).map { $0 - before.startIndex + 1 } ?? 0) + 1
                text.replaceSubrange(range, with: "at line \(line), column \(column)")
            }
        }
        return "not valid JSON: \(text) (a missing comma, quote or brace?)"
    }

    /// Throws `ScenarioError.unknown` (with the closest names) when there is none by that name.
    public func scenario(named name: String) throws -> Scenario {
        if let found = scenarios.first(where: { $0.name == name }) { return found }
        throw ScenarioError.unknown(name, suggestion: closest(to: name))
    }

    /// In the order given; throws for the first unknown name.
    public func scenarios(named names: [String]) throws -> [Scenario] {
        try names.map(scenario(named:))
    }

    /// Every scenario's name, in the catalog's order.
    public var names: [String] { scenarios.map(\.name) }

    /// The one rule for a name entering the store: a certificate or key issued by name (`cert issue --name`,
    /// `--reuse-key-of`) or a scenario of the user's own (a file, an inline scenario). They share the store's `certs/`,
    /// `keys/` and `exports/` with the scenarios and the store's own material, so such a name there would replace a
    /// scenario's certificate (breaking every app that pins it), or replace or hand out the store's own (the client
    /// identity, the backup pin's key, `exports/ca.cer`), or shadow an issuer name. Throws unless `name` is none of
    /// them: never one of `CertificateStore.reservedNames`; and unless `overriding` (the user said so: `--force`), no
    /// scenario in this catalog (nor one of its `serve --domain` variants, `NAME.domains-…`) and none of
    /// `CertificateStore.ownNames`.
    public func requireFreeCertificateName(_ name: String, overriding: Bool = false) throws {
        try CertificateStore.requireUnreserved(name)
        if overriding { return }
        if names.contains(name) { throw ScenarioError.certificateNameTaken(name) }
        if let role = CertificateStore.ownNames[name] { throw ScenarioError.certificateNameTaken(name, role: role) }
        if let range = name.range(of: ".domains-"), names.contains(String(name[..<range.lowerBound])) {
            throw ScenarioError.certificateNameTaken(name, role: "the \(name[..<range.lowerBound]) scenario's certificate under serve --domain")
        }
    }

    /// The highest port `serve` may use with `portBase`: the last scenario's, or the OCSP responder's above them all.
    public func highestPort(portBase: Int = ScenarioCatalog.defaultPortBase) -> Int {
        let reserved = portBase + (Self.reservedOffsets.keys.max() ?? 0)
        return max(reserved, scenarios.compactMap { port(of: $0, portBase: portBase) }.max() ?? portBase)
    }

    /// The port a scenario is served on with `portBase` (its catalog offset from `defaultPortBase` kept).
    public func port(of scenario: Scenario, portBase: Int = ScenarioCatalog.defaultPortBase) -> Int? {
        if let port = scenario.port { return port - ScenarioCatalog.defaultPortBase + portBase }
        // User scenarios without a port go after the highest catalog port, in catalog order, skipping the reserved ones.
        let highest = scenarios.compactMap(\.port).max() ?? ScenarioCatalog.defaultPortBase
        let unported = scenarios.filter { $0.port == nil }
        guard let index = unported.firstIndex(of: scenario) else { return nil }
        var candidate = highest
        for _ in 0...index {
            candidate += 1
            while Self.reservedOffsets[candidate - ScenarioCatalog.defaultPortBase] != nil { candidate += 1 }
        }
        return candidate - ScenarioCatalog.defaultPortBase + portBase
    }

    /// The catalog name within `max(2, n / 3)` edits of `name` (n its length), nearest first. The distance is at least
    /// the difference in length, so only names that close in length are compared: a name far longer than any (a
    /// megabyte sent to the control API) costs one comparison of lengths per scenario, not a megabyte of edits each.
    package func closest(to name: String) -> String? {
        let length = name.count
        let limit = max(2, length / 3)
        let ranked = names.filter { abs($0.count - length) <= limit }.map { ($0, Self.distance($0, name)) }
            .sorted { $0.1 < $1.1 }
        guard let best = ranked.first, best.1 <= limit else { return nil }
        return best.0
    }

    /// Levenshtein distance, for "did you mean".
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}

/// Why a scenario name or file was refused: an unknown name (with the closest one), a file that cannot be read or
/// decoded, a file not named after its scenario, or a name, port or certificate name already taken.
///
/// One line, whatever the file held: a key or value quoted from it is written with its control characters escaped
/// (`"a\nb"` in JSON is a key with a newline, and would otherwise split the message).
public struct ScenarioError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<ScenarioError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<ScenarioError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when the reason says it all.
    public let fix: String?
    /// The file (or the source name given to `ScenarioCatalog.decode`) the error is about, when there is one.
    public let source: String?
    /// The scenario or certificate name the error is about, when there is one.
    public let name: String?
    /// For `malformed`: what is wrong inside the source, without the source's name ("at tls.minVersion: …").
    package let problem: String?

    /// Memberwise: each argument sets the property of the same name; control characters in `reason` and `fix` are
    /// escaped, so the message stays one line.
    public init(code: Code, reason: String, fix: String? = nil, source: String? = nil, name: String? = nil) {
        self.init(code: code, reason: reason, fix: fix, source: source, name: name, problem: nil)
    }

    private init(code: Code, reason: String, fix: String?, source: String?, name: String?, problem: String?) {
        self.code = code
        self.reason = reason.escapingControlCharacters
        self.fix = fix?.escapingControlCharacters
        self.source = source
        self.name = name
        self.problem = problem
    }

    /// How an unknown name's fix reads: where the names are, for the library and for a runner's control API (which
    /// answers with this error), whose clients cannot link the catalog. The CLI names its own command instead.
    package static let listHint = "`ScenarioCatalog.builtIn.names` lists the built-in ones; a runner lists what it "
        + "serves at /scenarios.json (`RemoteFixtures().scenarios()`)"

    /// No scenario is named `name`; `suggestion` is the closest name, if any is close.
    public static func unknown(_ name: String, suggestion: String?) -> ScenarioError {
        ScenarioError(code: .unknown, reason: "unknown scenario \"\(name)\"" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? ""),
                      fix: listHint, name: name)
    }

    /// `source` is not a scenario, because of `problem`.
    public static func malformed(_ source: String, _ problem: String) -> ScenarioError {
        ScenarioError(code: .malformed, reason: "\(source): \(problem)", fix: nil, source: source, name: nil, problem: problem)
    }

    /// `path` cannot be read, because of `why`.
    public static func unreadable(_ path: String, _ why: String) -> ScenarioError {
        ScenarioError(code: .unreadable, reason: "cannot read scenarios from \(path): \(why)",
                      fix: "give a folder of scenario files (NAME.json) this user can read", source: path)
    }

    /// The file at `path` holds the scenario `name` and is not named `name.json`.
    public static func misnamed(_ path: String, _ name: String) -> ScenarioError {
        ScenarioError(code: .misnamed, reason: "\(path): the file must be named after its scenario (\(name).json)", source: path, name: name)
    }

    /// The file at `path` holds a scenario named like one already loaded.
    public static func duplicate(_ name: String, _ path: String) -> ScenarioError {
        ScenarioError(code: .duplicate, reason: "\(path): a scenario named \"\(name)\" already exists", fix: "choose another name",
                      source: path, name: name)
    }

    /// The file at `path` asks for `port`, which `other` (a scenario's name) already has.
    public static func portTaken(_ path: String, _ port: Int, _ other: String) -> ScenarioError {
        ScenarioError(code: .portTaken, reason: "\(path): port \(port) is already the port of \"\(other)\"",
                      fix: "choose another port, or leave \"port\" out to get the next free one", source: path, name: other)
    }

    /// The file at `path` asks for the dashboard's port.
    public static func dashboardPortTaken(_ path: String, _ port: Int) -> ScenarioError {
        ScenarioError(code: .dashboardPortTaken, reason: "\(path): port \(port) is the dashboard's",
                      fix: "a runner puts the dashboard on its portBase (9800 by default): choose another port, or leave \"port\" out to "
                         + "get the next free one", source: path)
    }

    /// A certificate request names `name`, the certificate of the scenario `name`.
    public static func certificateNameTaken(_ name: String) -> ScenarioError {
        ScenarioError(code: .certificateNameTaken, reason: "\"\(name)\" is the certificate of the \(name) scenario, and apps may pin it",
                      fix: "name the certificate otherwise (CertificateRequest.name)", name: name)
    }

    /// A certificate request names `name`, which the store keeps for itself as `role`.
    public static func certificateNameTaken(_ name: String, role: String) -> ScenarioError {
        ScenarioError(code: .certificateNameTaken, reason: "\"\(name)\" is the store's own: \(role)",
                      fix: "name the certificate otherwise (CertificateRequest.name)", name: name)
    }
}

extension ScenarioError {
    /// A refusal whose control cannot serve as one.
    public static func badControl(_ source: String, _ control: String, _ why: String, suggestion: String?)
        -> ScenarioError
    {
        ScenarioError(code: .badControl, reason: "\(source): expect.refusal.control \"\(control)\" cannot be the "
                          + "control: \(why)" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? ""),
                      fix: "name a scenario every verifying client accepts that differs from this one only in its "
                          + "defect: ats-compliant for most, pinned for pin scenarios, intermediate for two-level chains",
                      source: source)
    }

    /// The leaf of `scenario` would name `names` hosts with `NAME.DOMAIN` added for each of `domains`: more than
    /// `CertificateProfile.maximumSubjectAltNames`, and its own listed hosts leave no filler to give way.
    public static func domainNamesDoNotFit(scenario: String, names: Int, domains: [String]) -> ScenarioError {
        ScenarioError(code: .domainNamesDoNotFit,
                      reason: "scenario \"\(scenario)\" cannot also name "
                        + "\(domains.map { "\(scenario).\($0)" }.joined(separator: ", ")): "
                        + "its leaf would have \(names) subject alternative names, but at most "
                        + "\(CertificateProfile.maximumSubjectAltNames) go in one certificate",
                      fix: "prepare it without domains, or give it fewer extraHosts", name: scenario)
    }
}

/// The codes of `ScenarioError`.
extension ErrorCode where Owner == ScenarioError {
    /// No scenario has that name (the reason suggests the closest one when there is one).
    public static var unknown: Self { Self("unknown") }
    /// The file or JSON is not a scenario: bad syntax, a missing or unknown key, a value out of range.
    public static var malformed: Self { Self("malformed") }
    /// The file or directory cannot be read.
    public static var unreadable: Self { Self("unreadable") }
    /// A file not named after the scenario it holds (`NAME.json`).
    public static var misnamed: Self { Self("misnamed") }
    /// Two scenarios with one name.
    public static var duplicate: Self { Self("duplicate") }
    /// A port that another scenario already has.
    public static var portTaken: Self { Self("portTaken") }
    /// A port that is the dashboard's (the runner's `portBase`).
    public static var dashboardPortTaken: Self { Self("dashboardPortTaken") }
    /// A certificate named like a scenario's own, which apps may pin.
    public static var certificateNameTaken: Self { Self("certificateNameTaken") }
    /// A scenario whose leaf cannot also name `NAME.DOMAIN` for the domains asked for (`serve --domain`): too many
    /// names for one certificate.
    public static var domainNamesDoNotFit: Self { Self("domainNamesDoNotFit") }
    /// A refusal's control names no scenario, or one that clients refuse too.
    public static var badControl: Self { Self("badControl") }
}
