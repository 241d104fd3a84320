import Foundation

/// Performs one real TLS handshake with a given client offer. The OpenSSL implementation lives in the
/// probe layer; the diagnostics only need this much, which also lets tests substitute a fake server.
public protocol ATSHandshaker: Sendable {
    func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome
}

/// What a completed handshake showed.
public struct ATSHandshakeSuccess: Sendable, Codable, Equatable {
    public var version: TLSVersion
    public var suite: String
    public var presentedChain: [CertificateFacts]
    public var trust: TrustFacts?

    public init(version: TLSVersion, suite: String, presentedChain: [CertificateFacts], trust: TrustFacts?) {
        self.version = version
        self.suite = suite
        self.presentedChain = presentedChain
        self.trust = trust
    }
}

public enum ATSHandshakeOutcome: Sendable, Codable, Equatable {
    case success(ATSHandshakeSuccess)
    /// The handshake failed; `reason` is the client library's own text (e.g. OpenSSL's alert description).
    case failure(reason: String)
}

/// A handshaker that replays a server described by `ServerFacts` instead of connecting: it picks the newest
/// version and the first server suite the offer admits. Used by tests, and by the CLI to run diagnostics
/// against a scenario's recorded facts without starting a server.
public struct ATSReplayHandshaker: ATSHandshaker {
    public var facts: ServerFacts

    public init(facts: ServerFacts) {
        self.facts = facts
    }

    public func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
        let spoken = facts.accepted.filter { !$0.value.isEmpty }
        guard !spoken.isEmpty else { return .failure(reason: "connection closed during the handshake") }
        let common = spoken.keys.filter { $0 >= offer.minVersion && $0 <= offer.maxVersion }.sorted(by: >)
        guard !common.isEmpty else {
            let server = spoken.keys.sorted().map(\.description).joined(separator: ", ")
            return .failure(reason: "protocol version alert: the server speaks \(server), "
                            + "the client offers \(offer.minVersion)–\(offer.maxVersion)")
        }
        for version in common {
            if let suite = spoken[version]!.first(where: { offer.admits(version: version, suite: $0) }) {
                return .success(ATSHandshakeSuccess(version: version, suite: suite,
                                                    presentedChain: facts.presentedChain, trust: facts.trust))
            }
        }
        return .failure(reason: "handshake failure alert: no cipher suite in common at "
                        + common.map(\.description).joined(separator: ", "))
    }
}

/// One configuration nscurl tries: the group it belongs to, its name, and the ATS dictionary.
public struct ATSDiagnosticConfiguration: Sendable, Codable, Equatable {
    public var group: String
    public var name: String
    public var dictionary: [String: ATSPlistValue]

    public init(group: String, name: String, dictionary: [String: ATSPlistValue]) {
        self.group = group
        self.name = name
        self.dictionary = dictionary
    }
}

/// The outcome of one configuration.
public struct ATSDiagnosticResult: Sendable, Codable, Equatable {
    public var configuration: ATSDiagnosticConfiguration
    /// nscurl's PASS: the load completed with no error.
    public var passed: Bool
    /// What nscurl would print after `Error :` in verbose mode; `nil` on PASS.
    public var error: String?
    public var offer: ATSClientOffer
    public var handshake: ATSHandshakeOutcome?
    /// The evaluator's verdict on a completed handshake (a handshake that succeeds must still pass the
    /// certificate and trust rules).
    public var verdict: ATSVerdict?
}

/// `nscurl --ats-diagnostics`, modelled: the same configurations in the same order, each turned into a
/// client offer, handshaken for real through an `ATSHandshaker`, and judged by the evaluator.
public struct ATSDiagnostics: Sendable {
    /// Profile and readings (nscurl is a data load without a trust override; those fields are ignored).
    public var options: ATSEvaluationOptions

    public init(options: ATSEvaluationOptions = .init()) {
        self.options = options
    }

    /// The configuration sequence of nscurl, as listed in ats-reference.md.
    public static func configurations(host: String) -> [ATSDiagnosticConfiguration] {
        let versions: [TLSVersion] = [.tls1_3, .tls1_2, .tls1_1, .tls1_0]
        func entry(_ fields: [String: ATSPlistValue]) -> [String: ATSPlistValue] {
            [ATSKey.exceptionDomains: .dictionary([host: .dictionary(fields)])]
        }
        let noPFS: [String: ATSPlistValue] = [ATSKey.exceptionRequiresForwardSecrecy: false]
        let noPFSInsecure: [String: ATSPlistValue] = [ATSKey.exceptionRequiresForwardSecrecy: false,
                                                      ATSKey.exceptionAllowsInsecureHTTPLoads: true]
        var list = [
            ATSDiagnosticConfiguration(group: "Default ATS Secure Connection", name: "ATS Default Connection",
                                       dictionary: [:]),
            ATSDiagnosticConfiguration(group: "Allowing Arbitrary Loads", name: "Allow All Loads",
                                       dictionary: [ATSKey.allowsArbitraryLoads: true]),
        ]
        for version in versions {
            list.append(ATSDiagnosticConfiguration(
                group: "Configuring TLS exceptions for \(host)", name: version.rawValue,
                dictionary: entry([ATSKey.exceptionMinimumTLSVersion: .string(version.rawValue)])))
        }
        list.append(ATSDiagnosticConfiguration(group: "Configuring PFS exceptions for \(host)",
                                               name: "Disabling Perfect Forward Secrecy", dictionary: entry(noPFS)))
        list.append(ATSDiagnosticConfiguration(
            group: "Configuring PFS exceptions and allowing insecure HTTP for \(host)",
            name: "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP", dictionary: entry(noPFSInsecure)))
        for version in versions {
            var fields = noPFS
            fields[ATSKey.exceptionMinimumTLSVersion] = .string(version.rawValue)
            list.append(ATSDiagnosticConfiguration(group: "Configuring TLS exceptions with PFS disabled for \(host)",
                                                   name: "\(version.rawValue) with PFS disabled", dictionary: entry(fields)))
        }
        for version in versions {
            var fields = noPFSInsecure
            fields[ATSKey.exceptionMinimumTLSVersion] = .string(version.rawValue)
            list.append(ATSDiagnosticConfiguration(
                group: "Configuring TLS exceptions with PFS disabled and insecure HTTP allowed for \(host)",
                name: "\(version.rawValue) with PFS disabled and insecure HTTP allowed", dictionary: entry(fields)))
        }
        return list
    }

    /// Runs every configuration in order (sequentially, so output order and server logs line up).
    public func run(url: URL, handshaker: some ATSHandshaker) async -> ATSDiagnosticsReport {
        let host = ATSHost(url: url)?.name ?? ""
        var results: [ATSDiagnosticResult] = []
        for configuration in Self.configurations(host: host) {
            let offer = self.offer(for: configuration, url: url)
            let outcome: ATSHandshakeOutcome?
            if url.scheme?.lowercased() == "https" {
                outcome = await handshaker.handshake(offer, url: url)
            } else {
                outcome = nil
            }
            results.append(evaluate(configuration, url: url, offer: offer, outcome: outcome))
        }
        return ATSDiagnosticsReport(url: url.absoluteString, host: host, profile: options.profile, results: results)
    }

    /// The client offer a configuration implies for a URL.
    public func offer(for configuration: ATSDiagnosticConfiguration, url: URL) -> ATSClientOffer {
        evaluator(for: configuration).offer(for: url)
    }

    /// Judges one handshake outcome (`nil` for plain HTTP, where there is no handshake).
    public func evaluate(_ configuration: ATSDiagnosticConfiguration, url: URL, offer: ATSClientOffer,
                         outcome: ATSHandshakeOutcome?) -> ATSDiagnosticResult {
        let facts: ServerFacts
        switch outcome {
        case .failure(let reason)?:
            let error = ATSDiagnosticsReport.nsError(code: -1200, message: reason, streamCode: nil)
            return ATSDiagnosticResult(configuration: configuration, passed: false, error: error, offer: offer,
                                       handshake: outcome, verdict: nil)
        case .success(let success)?:
            facts = ServerFacts(scheme: "https", accepted: [success.version: [success.suite]],
                                presentedChain: success.presentedChain, trust: success.trust)
        case nil:
            facts = ServerFacts(scheme: url.scheme ?? "http", accepted: [:], presentedChain: [], trust: nil)
        }
        let verdict = evaluator(for: configuration).evaluate(url: url, facts: facts)
        let error = verdict.violations.first.map {
            ATSDiagnosticsReport.nsError(code: $0.likelyError.urlErrorCode, message: $0.message,
                                         streamCode: $0.likelyError.streamErrorCode)
        }
        return ATSDiagnosticResult(configuration: configuration, passed: verdict.allowed, error: error, offer: offer,
                                   handshake: outcome, verdict: verdict)
    }

    private func evaluator(for configuration: ATSDiagnosticConfiguration) -> ATSEvaluator {
        var options = self.options
        options.loadKind = .data
        options.trustOverride = false
        return ATSEvaluator(policy: ATSPolicy(configuration.dictionary), options: options)
    }
}

/// The diagnostics' results, printable like nscurl and encodable as JSON. Both forms are deterministic
/// (sorted keys, no timestamps) so they can be compared in tests and diffed between runs.
public struct ATSDiagnosticsReport: Sendable, Codable, Equatable {
    public var url: String
    public var host: String
    public var profile: ATSOSProfile
    public var results: [ATSDiagnosticResult]

    public static let separator = String(repeating: "=", count: 80)

    /// nscurl's layout: a header, then each group between lines of 80 `=`, each configuration in `---`
    /// fences with its name, (verbose) the ATS dictionary, `Result : PASS|FAIL`, (verbose) the error.
    public func text(verbose: Bool = false) -> String {
        var lines = [
            "Starting ATS Diagnostics",
            "",
            "Configuring ATS Info.plist keys and displaying the result of HTTPS loads to \(url).",
            "A test will \"PASS\" if URLSession:task:didCompleteWithError: returns a nil error.",
        ]
        if !verbose {
            lines.append("Use '--verbose' to view the ATS dictionaries used and to display the error received "
                         + "in URLSession:task:didCompleteWithError:.")
        }
        lines.append(Self.separator)
        var currentGroup: String?
        for result in results {
            let configuration = result.configuration
            if configuration.group != currentGroup {
                if currentGroup != nil { lines.append(Self.separator) }
                lines += ["", configuration.group]
                currentGroup = configuration.group
            }
            lines += ["---", configuration.name]
            if verbose {
                lines += ["ATS Dictionary:", ATSPlistRendering.openStep(configuration.dictionary)]
            }
            lines.append("Result : \(result.passed ? "PASS" : "FAIL")")
            if verbose, let error = result.error { lines.append("Error : \(error)") }
            lines += ["---", ""]
        }
        lines.append(Self.separator)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The same results as JSON (pretty-printed, sorted keys).
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    /// An `NSError` description shaped like the one nscurl prints, from the model's likely code.
    static func nsError(code: Int, message: String, streamCode: Int?) -> String {
        var text = "Error Domain=NSURLErrorDomain Code=\(code) \"\(message)\""
        if let streamCode { text += " UserInfo={_kCFStreamErrorCodeKey=\(streamCode), _kCFStreamErrorDomainKey=3}" }
        return text
    }
}
