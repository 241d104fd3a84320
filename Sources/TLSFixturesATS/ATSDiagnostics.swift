import Foundation
import TLSFixturesWire

/// Performs one real TLS handshake — and the load after it — with a given client offer. The OpenSSL implementation
/// lives in the probe layer; the diagnostics only need this much, which also lets tests substitute a fake server.
public protocol ATSHandshaker: Sendable {
    func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome
}

/// What a completed handshake showed.
public struct ATSHandshakeSuccess: Sendable, Codable, Equatable {
    /// The version the handshake settled on.
    public var version: TLSVersion
    /// The negotiated suite's IANA name.
    public var suite: String
    /// The certificates the server sent, leaf first.
    public var presentedChain: [CertificateFacts]
    /// Chain building and verification against the trusted roots; nil when it was not judged.
    public var trust: TrustFacts?
    /// The Signed Certificate Timestamps received for the leaf; nil when not recorded.
    public var scts: ServerFacts.SCTCounts?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(version: TLSVersion, suite: String, presentedChain: [CertificateFacts], trust: TrustFacts?,
                scts: ServerFacts.SCTCounts? = nil) {
        self.version = version
        self.suite = suite
        self.presentedChain = presentedChain
        self.trust = trust
        self.scts = scts
    }
}

/// Why a handshake, or the load right after it, failed — as far as a client can tell from the outside. It decides
/// the NSURLError code nscurl would most likely print.
public enum ATSHandshakeFailureKind: String, Sendable, Codable, CaseIterable {
    /// No protocol version in common.
    case protocolVersion = "protocol-version"
    /// No cipher suite in common.
    case cipherSuite = "cipher-suite"
    /// The server demanded a client certificate and refused the load without one.
    case clientCertificateRequired = "client-certificate-required"
    /// The server closed the connection during the handshake.
    case closed
    case timedOut = "timed-out"
    /// No TCP connection at all.
    case cannotConnect = "cannot-connect"
    /// Something else; the reason text says what.
    case other
    /// Not classified by the handshaker: the diagnostics classify the reason text.
    case unclassified

    /// Classifies a TLS client's failure text (OpenSSL's alert and reason strings, or the replay handshaker's).
    /// - Parameter afterServerCertificate: the server had already sent its certificate when the handshake failed,
    ///   which in TLS 1.2 means it failed over the client's certificate rather than over versions or suites.
    public init(classifying reason: String, afterServerCertificate: Bool = false) {
        let text = reason.lowercased()
        func has(_ fragments: String...) -> Bool { fragments.contains { text.contains($0) } }
        if has("certificate required") {
            self = .clientCertificateRequired
        } else if has("rejected the session after the handshake") || afterServerCertificate,
                  has("handshake failure", "bad certificate", "access denied", "unknown ca") {
            // A TLS 1.3 server that wants a client certificate answers after the client has finished; a TLS 1.2 one
            // fails the handshake after its own Certificate message.
            self = .clientCertificateRequired
        } else if has("protocol version", "unsupported protocol", "wrong version number", "no protocols available",
                      "version too low", "unsupported_protocol") {
            self = .protocolVersion
        } else if has("handshake failure", "no shared cipher", "no cipher", "no ciphers available",
                      "insufficient security", "no suitable") {
            self = .cipherSuite
        } else if has("timed out", "timeout") {
            self = .timedOut
        } else if has("cannot connect", "connection refused", "cannot resolve", "no route") {
            self = .cannotConnect
        } else if has("closed the connection", "unexpected eof", "connection closed", "connection reset") {
            self = .closed
        } else {
            self = .other
        }
    }

    /// The error nscurl most likely reports for this failure.
    public var likelyError: ATSLikelyError {
        switch self {
        case .protocolVersion: return .secure(-9836, "errSSLPeerProtocolVersion")
        case .cipherSuite: return .secure(-9824, "errSSLPeerHandshakeFail")
        case .clientCertificateRequired: return .clientCertificateRequired
        case .closed: return .secure(-9806, "errSSLClosedAbort")
        case .timedOut: return .timedOut
        case .cannotConnect: return .cannotConnect
        case .other, .unclassified:
            return ATSLikelyError(urlErrorCode: -1200, urlErrorName: "NSURLErrorSecureConnectionFailed")
        }
    }
}

/// The outcome of one handshake-and-load.
public enum ATSHandshakeOutcome: Sendable, Equatable {
    case success(ATSHandshakeSuccess)
    /// The handshake or the load failed; `reason` is the client library's own text (e.g. OpenSSL's alert
    /// description), `kind` what it amounts to (left `.unclassified`, the diagnostics classify the text).
    case failure(reason: String, kind: ATSHandshakeFailureKind = .unclassified)
}

/// JSON as a report reader wants it — `{"completed": true, "version": …}` or `{"completed": false, "failure": …}` —
/// rather than Swift's synthesized enum encoding (`{"success": {"_0": …}}`).
extension ATSHandshakeOutcome: Codable {
    private enum CodingKeys: String, CodingKey {
        case completed, version, cipherSuite, presentedChain, trust, scts, failure, failureKind
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decode(Bool.self, forKey: .completed) {
            self = .success(ATSHandshakeSuccess(
                version: try container.decode(TLSVersion.self, forKey: .version),
                suite: try container.decode(String.self, forKey: .cipherSuite),
                presentedChain: try container.decodeIfPresent([CertificateFacts].self, forKey: .presentedChain) ?? [],
                trust: try container.decodeIfPresent(TrustFacts.self, forKey: .trust),
                scts: try container.decodeIfPresent(ServerFacts.SCTCounts.self, forKey: .scts)))
        } else {
            self = .failure(reason: try container.decode(String.self, forKey: .failure),
                            kind: try container.decodeIfPresent(ATSHandshakeFailureKind.self, forKey: .failureKind) ?? .unclassified)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .success(let success):
            try container.encode(true, forKey: .completed)
            try container.encode(success.version, forKey: .version)
            try container.encode(success.suite, forKey: .cipherSuite)
            try container.encode(success.presentedChain, forKey: .presentedChain)
            try container.encodeIfPresent(success.trust, forKey: .trust)
            try container.encodeIfPresent(success.scts, forKey: .scts)
        case .failure(let reason, let kind):
            try container.encode(false, forKey: .completed)
            try container.encode(reason, forKey: .failure)
            try container.encode(kind, forKey: .failureKind)
        }
    }
}

/// A handshaker that replays a server described by `ServerFacts` instead of connecting: it picks the newest
/// version and the first server suite the offer admits. Used by tests, and by the CLI to run diagnostics
/// against a scenario's recorded facts without starting a server.
public struct ATSReplayHandshaker: ATSHandshaker {
    /// The recorded server to answer from.
    public var facts: ServerFacts

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(facts: ServerFacts) {
        self.facts = facts
    }

    /// Answers as the recorded server would: its newest version and first suite the offer admits, or the failure a client would see.
    public func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
        let spoken = facts.accepted.filter { !$0.value.isEmpty }
        guard !spoken.isEmpty else { return .failure(reason: "connection closed during the handshake", kind: .closed) }
        let common = spoken.keys.filter { $0 >= offer.minVersion && $0 <= offer.maxVersion }.sorted(by: >)
        guard !common.isEmpty else {
            let server = spoken.keys.sorted().map(\.description).joined(separator: ", ")
            return .failure(reason: "protocol version alert: the server speaks \(server), "
                            + "the client offers \(offer.minVersion)–\(offer.maxVersion)", kind: .protocolVersion)
        }
        for version in common {
            if let suite = spoken[version]!.first(where: { offer.admits(version: version, suite: $0) }) {
                return .success(ATSHandshakeSuccess(version: version, suite: suite,
                                                    presentedChain: facts.presentedChain, trust: facts.trust,
                                                    scts: facts.scts))
            }
        }
        return .failure(reason: "handshake failure alert: no cipher suite in common at "
                        + common.map(\.description).joined(separator: ", "), kind: .cipherSuite)
    }
}

/// One configuration nscurl tries: the group it belongs to, its name, and the ATS dictionary.
public struct ATSDiagnosticConfiguration: Sendable, Codable, Equatable {
    /// nscurl's group heading (`Default ATS Secure Connection`, `Allowing Arbitrary Loads`, …).
    public var group: String
    /// The configuration's line in nscurl's output (`TLSv1.2`, `Disabling Perfect Forward Secrecy`, …).
    public var name: String
    /// The `NSAppTransportSecurity` dictionary nscurl loads the URL with.
    public var dictionary: [String: ATSPlistValue]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(group: String, name: String, dictionary: [String: ATSPlistValue]) {
        self.group = group
        self.name = name
        self.dictionary = dictionary
    }
}

/// The error a failed load ends with, as nscurl prints it: `NSURLErrorDomain`, the code, Foundation's message and
/// the likely stream error — what users search for — then what the model or the TLS client found.
public struct ATSLoadError: Sendable, Codable, Equatable {
    /// Always `NSURLErrorDomain`: ATS failures surface as URL-loading errors.
    public var domain: String
    /// `NSURLErrorDomain` code, e.g. -1200.
    public var code: Int
    /// Its name, e.g. `NSURLErrorSecureConnectionFailed`.
    public var codeName: String
    /// Foundation's `NSLocalizedDescription` for the code.
    public var message: String
    /// `_kCFStreamErrorCodeKey`, e.g. -9836, when one is expected.
    public var streamErrorCode: Int?
    /// Its name, e.g. `errSSLProtocol`; nil when there is no stream error.
    public var streamErrorName: String?
    /// The URL that failed, as `NSErrorFailingURLStringKey` carries it.
    public var failingURL: String
    /// The whole error in nscurl's form: `Error Domain=NSURLErrorDomain Code=-1200 "…" UserInfo={…}`.
    public var nsError: String
    /// Why, in the model's words, with the TLS client's own text where a handshake failed.
    public var detail: String
    /// The violated rule, when the model's evaluation (not the handshake) failed the load.
    public var rule: ATSRule?
    /// What a failed handshake amounts to, when one failed.
    public var failureKind: ATSHandshakeFailureKind?

    /// Builds the error from the model's likely error for `url`; `detail` says why in the model's or the TLS client's words.
    public init(_ likely: ATSLikelyError, url: String, host: String, profile: ATSOSProfile, detail: String,
                rule: ATSRule? = nil, failureKind: ATSHandshakeFailureKind? = nil) {
        domain = "NSURLErrorDomain"
        code = likely.urlErrorCode
        codeName = likely.urlErrorName
        message = likely.localizedDescription(host: host, profile: profile)
        streamErrorCode = likely.streamErrorCode
        streamErrorName = likely.streamErrorName
        failingURL = url
        self.detail = detail
        self.rule = rule
        self.failureKind = failureKind
        nsError = Self.describe(domain: domain, code: code, message: message, stream: likely.streamErrorCode, url: url,
                                profile: profile)
    }

    /// `NSError`'s description as nscurl prints it. The stream code comes first in UserInfo, as in many real
    /// transcripts, because it is what users search for. (iOS/macOS 26-era transcripts carry no recovery suggestion.)
    static func describe(domain: String, code: Int, message: String, stream: Int?, url: String,
                         profile: ATSOSProfile) -> String {
        var info: [String] = []
        if let stream { info.append("_kCFStreamErrorCodeKey=\(stream)") }
        if (-1205 ... -1200).contains(code), profile < .ios26 {
            info.append("NSLocalizedRecoverySuggestion=Would you like to connect to the server anyway?")
        }
        info += ["NSErrorFailingURLStringKey=\(url)", "NSErrorFailingURLKey=\(url)", "NSLocalizedDescription=\(message)"]
        if stream != nil { info.append("_kCFStreamErrorDomainKey=3") }
        return "Error Domain=\(domain) Code=\(code) \"\(message)\" UserInfo={\(info.joined(separator: ", "))}"
    }
}

/// The outcome of one configuration.
public struct ATSDiagnosticResult: Sendable, Equatable {
    /// The configuration tried.
    public var configuration: ATSDiagnosticConfiguration
    /// nscurl's PASS: the load completed with no error (the handshake, the model's rules and the request itself).
    public var passed: Bool
    /// What nscurl would print after `Error :` in verbose mode; `nil` on PASS.
    public var error: ATSLoadError?
    /// What the client offered under that configuration.
    public var offer: ATSClientOffer
    /// The handshake with that offer; nil when the configuration was judged without one (plain HTTP).
    public var handshake: ATSHandshakeOutcome?
    /// The evaluator's verdict on a completed handshake (a handshake that succeeds must still pass the
    /// certificate and trust rules).
    public var verdict: ATSVerdict?
}

/// One configuration in JSON: its group, name and dictionary side by side with `"result": "PASS" | "FAIL"`.
extension ATSDiagnosticResult: Codable {
    private enum CodingKeys: String, CodingKey {
        case group, name, atsDictionary, result, error, offer, handshake, verdict
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        configuration = ATSDiagnosticConfiguration(
            group: try container.decode(String.self, forKey: .group), name: try container.decode(String.self, forKey: .name),
            dictionary: try container.decode([String: ATSPlistValue].self, forKey: .atsDictionary))
        passed = try container.decode(String.self, forKey: .result) == "PASS"
        error = try container.decodeIfPresent(ATSLoadError.self, forKey: .error)
        offer = try container.decode(ATSClientOffer.self, forKey: .offer)
        handshake = try container.decodeIfPresent(ATSHandshakeOutcome.self, forKey: .handshake)
        verdict = try container.decodeIfPresent(ATSVerdict.self, forKey: .verdict)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(configuration.group, forKey: .group)
        try container.encode(configuration.name, forKey: .name)
        try container.encode(configuration.dictionary, forKey: .atsDictionary)
        try container.encode(passed ? "PASS" : "FAIL", forKey: .result)
        try container.encode(error, forKey: .error)
        try container.encode(offer, forKey: .offer)
        try container.encodeIfPresent(handshake, forKey: .handshake)
        try container.encodeIfPresent(verdict, forKey: .verdict)
    }
}

/// `nscurl --ats-diagnostics`, modelled: the same configurations in the same order, each turned into a
/// client offer, tried for real through an `ATSHandshaker` (handshake and request), and judged by the evaluator.
public struct ATSDiagnostics: Sendable {
    /// Profile and readings (nscurl is a data load without a trust override; those fields are ignored).
    public var options: ATSEvaluationOptions

    /// Memberwise: each argument sets the property of the same name, unchecked.
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
        // The dictionaries name the host as the URL spells it, trailing dot included: that is the key ATS looks up.
        let host = ATSHost(url: url)?.exceptionLookupName ?? ""
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
        return ATSDiagnosticsReport(url: url.absoluteString, host: host, profile: options.profile,
                                    readings: options.readings, results: results)
    }

    /// The client offer a configuration implies for a URL.
    public func offer(for configuration: ATSDiagnosticConfiguration, url: URL) -> ATSClientOffer {
        evaluator(for: configuration).offer(for: url)
    }

    /// Judges one outcome (`nil` for plain HTTP, where there is no handshake).
    public func evaluate(_ configuration: ATSDiagnosticConfiguration, url: URL, offer: ATSClientOffer,
                         outcome: ATSHandshakeOutcome?) -> ATSDiagnosticResult {
        let host = ATSHost(url: url)?.name ?? ""
        let facts: ServerFacts
        switch outcome {
        case .failure(let reason, let kind)?:
            let resolved = kind == .unclassified ? ATSHandshakeFailureKind(classifying: reason) : kind
            let error = ATSLoadError(resolved.likelyError, url: url.absoluteString, host: host, profile: options.profile,
                                     detail: Self.detail(resolved, reason: reason, offer: offer), failureKind: resolved)
            return ATSDiagnosticResult(configuration: configuration, passed: false, error: error, offer: offer,
                                       handshake: outcome, verdict: nil)
        case .success(let success)?:
            facts = ServerFacts(scheme: "https", accepted: [success.version: [success.suite]],
                                presentedChain: success.presentedChain, trust: success.trust, scts: success.scts)
        case nil:
            facts = ServerFacts(scheme: url.scheme ?? "http", accepted: [:], presentedChain: [], trust: nil)
        }
        let verdict = evaluator(for: configuration).evaluate(url: url, facts: facts)
        let error = verdict.violations.first.map { first in
            ATSLoadError(first.likelyError, url: url.absoluteString, host: host, profile: options.profile,
                         detail: verdict.violations.map(\.message).joined(separator: "; "), rule: first.rule)
        }
        return ATSDiagnosticResult(configuration: configuration, passed: verdict.allowed, error: error, offer: offer,
                                   handshake: outcome, verdict: verdict)
    }

    /// The model's account of a failed handshake, with the TLS client's own words last.
    static func detail(_ kind: ATSHandshakeFailureKind, reason: String, offer: ATSClientOffer) -> String {
        let said = "the TLS client said: \(reason)"
        switch kind {
        case .protocolVersion:
            return "no TLS version in common: the client offered \(offer.versionRange); \(said)"
        case .cipherSuite:
            return "no cipher suite in common at \(offer.versionRange) (\(offer.tls12Suites.count) TLS 1.0–1.2 "
                + "and \(offer.tls13Suites.count) TLS 1.3 suites offered); \(said)"
        case .clientCertificateRequired:
            return "the server demands a client certificate and refuses the load without one (nscurl sends none); \(said)"
        case .closed:
            return "the server closed the connection during the handshake; \(said)"
        case .timedOut:
            return "the server did not answer in time; \(said)"
        case .cannotConnect:
            return "no connection could be made; \(said)"
        case .other, .unclassified:
            return "the handshake failed; \(said)"
        }
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
public struct ATSDiagnosticsReport: Sendable, Equatable {
    /// The URL diagnosed, as given.
    public var url: String
    /// Its host, as ATS classifies it (lowercased, no brackets).
    public var host: String
    /// The system the results model. nscurl itself reports the TLS stack of the Mac it runs on.
    public var profile: ATSOSProfile
    /// The readings of the model's uncertain rules used for every configuration.
    public var readings: ATSReadings
    /// One result per configuration, in nscurl's order.
    public var results: [ATSDiagnosticResult]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(url: String, host: String, profile: ATSOSProfile, readings: ATSReadings = .default,
                results: [ATSDiagnosticResult]) {
        self.url = url
        self.host = host
        self.profile = profile
        self.readings = readings
        self.results = results
    }

    /// The line nscurl prints between groups.
    public static let separator = String(repeating: "=", count: 80)

    /// Group headings nscurl prints without a blank line before the first `---` (only the first group).
    static let compactGroups: Set<String> = ["Default ATS Secure Connection"]

    /// nscurl's layout: a header, then each group between lines of 80 `=`, the group's heading (followed by a blank
    /// line, except for the default connection's), each configuration in `---` fences with its name, (verbose) the
    /// ATS dictionary, `Result : PASS|FAIL`, (verbose) the error and the model's detail.
    public func text(verbose: Bool = false) -> String {
        var lines = [
            "Starting ATS Diagnostics",
            "",
            "Configuring ATS Info.plist keys and displaying the result of HTTPS loads to \(url).",
            "A test will \"PASS\" if URLSession:task:didCompleteWithError: returns a nil error.",
            "Modelled system: \(profile); nscurl itself reports the TLS stack of the Mac it runs on.",
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
                if !Self.compactGroups.contains(configuration.group) { lines.append("") }
                currentGroup = configuration.group
            }
            lines += ["---", configuration.name]
            if verbose {
                lines += ["ATS Dictionary:", ATSPlistRendering.nsDictionaryDescription(configuration.dictionary)]
            }
            lines.append("Result : \(result.passed ? "PASS" : "FAIL")")
            if verbose, let error = result.error {
                lines.append("Error : \(error.nsError)")
                lines.append("Detail : \(error.detail)")
            }
            lines += ["---", ""]
        }
        lines.append(Self.separator)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The same results as JSON (pretty-printed, sorted keys); the shape is documented in docs/ATS-MODEL.md.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}

extension ATSDiagnosticsReport: Codable {
    private enum CodingKeys: String, CodingKey {
        case url, host, profile, readings, summary, results
    }

    private enum ProfileKeys: String, CodingKey {
        case id, name
    }

    private struct Summary: Encodable {
        var configurations: Int
        var passed: Int
        var failed: Int
        var defaultConfigurationPassed: Bool
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        url = try container.decode(String.self, forKey: .url)
        host = try container.decode(String.self, forKey: .host)
        let profileContainer = try container.nestedContainer(keyedBy: ProfileKeys.self, forKey: .profile)
        profile = try profileContainer.decode(ATSOSProfile.self, forKey: .id)
        readings = try container.decodeIfPresent(ATSReadings.self, forKey: .readings) ?? .default
        results = try container.decode([ATSDiagnosticResult].self, forKey: .results)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(host, forKey: .host)
        var profileContainer = container.nestedContainer(keyedBy: ProfileKeys.self, forKey: .profile)
        try profileContainer.encode(profile, forKey: .id)
        try profileContainer.encode(profile.description, forKey: .name)
        try container.encode(readings, forKey: .readings)
        let passed = results.filter(\.passed).count
        try container.encode(Summary(configurations: results.count, passed: passed, failed: results.count - passed,
                                     defaultConfigurationPassed: results.first?.passed ?? false), forKey: .summary)
        try container.encode(results, forKey: .results)
    }
}
