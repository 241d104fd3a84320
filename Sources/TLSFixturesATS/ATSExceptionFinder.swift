import Foundation

/// What the exception finder concluded.
public enum ATSExceptionResult: Sendable, Equatable {
    /// ATS's defaults already allow the load (read the finding's notes: it may be the localhost trap).
    case notNeeded
    /// The smallest `NSAppTransportSecurity` dictionary that allows the load, and what the app must do
    /// besides (e.g. a trust override in its URLSessionDelegate). The dictionary may be empty when only
    /// the trust override is needed.
    case exception([String: ATSPlistValue], alsoRequires: [String])
    /// No ATS key admits the load; the text names the problem and what would fix it.
    case impossible(String)
}

/// The finder's answer, with the evidence.
public struct ATSExceptionFinding: Sendable, Equatable {
    /// The smallest dictionary that admits the load, none needed, or why none can.
    public var result: ATSExceptionResult
    /// The app must accept the server trust in its delegate for the dictionary to work.
    public var requiresTrustOverride: Bool
    /// The evaluator's verdict with the dictionary found (for `.impossible`, with the most permissive one tried).
    public var verdict: ATSVerdict
    /// Hints for the user (the localhost trap, keys that only matter on older systems, …).
    public var notes: [String]

    /// The keys of the single `NSExceptionDomains` entry, when that is all the exception is — the shape of a
    /// scenario's expected fix ("domain keys"), so callers can compare without walking the dictionary.
    public var exceptionDomainKeys: [String: ATSPlistValue]? {
        guard case .exception(let dictionary, _) = result, dictionary.count == 1,
              let domains = dictionary[ATSKey.exceptionDomains]?.dictionaryValue, domains.count == 1 else { return nil }
        return domains.values.first?.dictionaryValue
    }

    /// The exception is top-level `NSAllowsArbitraryLoads` (ATS off for every host without its own entry).
    public var usesArbitraryLoads: Bool {
        guard case .exception(let dictionary, _) = result else { return false }
        return dictionary[ATSKey.allowsArbitraryLoads] == .bool(true)
    }

    /// The whole `Info.plist` fragment to paste (`NSAppTransportSecurity` and below), as XML; `nil` when
    /// nothing needs pasting.
    public var plistXML: String? {
        guard case .exception(let dictionary, _) = result else { return nil }
        return ATSPlistRendering.infoPlistXML(ats: dictionary)
    }
}

/// Finds the smallest ATS dictionary that makes the evaluator allow a load, by trying candidates in
/// increasing size and asking the evaluator about each. Searching instead of reasoning backwards keeps the
/// finder and the evaluator from ever disagreeing: whatever it prints, the evaluator allows.
public struct ATSExceptionFinder: Sendable {
    /// How to order candidates of the same size.
    public enum Strategy: String, Sendable, CaseIterable {
        /// Fewest keys first; at equal size, per-domain keys before top-level ones. `NSAllowsArbitraryLoads`
        /// counts as one key, which is what the catalog expects (`legacy-everything`: arbitrary loads + override).
        case fewestKeys
        /// Every per-domain candidate before any top-level key, for users who would rather write three
        /// keys for one host than switch ATS off for every host.
        case domainScopedFirst
    }

    /// Load kind, OS profile and readings; `trustOverride` is ignored (the finder decides whether one is needed).
    public var options: ATSEvaluationOptions
    /// Which candidates are tried first: the fewest keys, or per-domain keys before any top-level key.
    public var strategy: Strategy

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(options: ATSEvaluationOptions = .init(), strategy: Strategy = .fewestKeys) {
        self.options = options
        self.strategy = strategy
    }

    /// What `alsoRequires` says when a dictionary works only with a trust override (`.useCredential`) in the app's delegate.
    public static let trustOverrideRequirement = "a trust override in your URLSessionDelegate: answer the "
        + "server-trust challenge with completionHandler(.useCredential, URLCredential(trust:))"

    /// For a host (and port) and the facts about its server. The scheme comes from the facts.
    public func find(host: String, port: Int? = nil, facts: ServerFacts) -> ATSExceptionFinding {
        var components = URLComponents()
        components.scheme = facts.scheme.lowercased()
        components.host = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        components.port = port
        components.path = "/"
        guard let url = components.url else {
            let verdict = ATSEvaluator(policy: .empty, options: options).evaluate(url: URL(string: "invalid:")!, facts: facts)
            return ATSExceptionFinding(result: .impossible("\"\(host)\" is not a valid host name"),
                                       requiresTrustOverride: false, verdict: verdict, notes: [])
        }
        return find(url: url, facts: facts)
    }

    /// Tries candidate dictionaries from the smallest, each judged by the evaluator against `facts`, and returns the first that admits `url`.
    public func find(url: URL, facts: ServerFacts) -> ATSExceptionFinding {
        // Exception keys are looked up as the URL spells the host, trailing dot included.
        let host = ATSHost(url: url)?.exceptionLookupName ?? ""
        let candidates = self.candidates(host: host)
        for trustOverride in [false, true] {
            for candidate in candidates {
                var options = self.options
                options.trustOverride = trustOverride
                let verdict = ATSEvaluator(policy: ATSPolicy(candidate), options: options).evaluate(url: url, facts: facts)
                guard verdict.allowed else { continue }
                return finding(candidate, trustOverride: trustOverride, verdict: verdict)
            }
        }
        // Explain with the most permissive configuration there is: ATS off and the trust overridden.
        var permissive = options
        permissive.trustOverride = true
        let verdict = ATSEvaluator(policy: ATSPolicy([ATSKey.allowsArbitraryLoads: true]), options: permissive)
            .evaluate(url: url, facts: facts)
        return ATSExceptionFinding(result: .impossible(impossibleReason(verdict)), requiresTrustOverride: false,
                                   verdict: verdict, notes: verdict.notes)
    }

    private func finding(_ dictionary: [String: ATSPlistValue], trustOverride: Bool, verdict: ATSVerdict) -> ATSExceptionFinding {
        var notes = verdict.notes
        if dictionary[ATSKey.allowsArbitraryLoads] != nil {
            notes.append("NSAllowsArbitraryLoads turns ATS off for every host without its own exception entry; "
                         + "prefer fixing the server")
        }
        if trustOverride {
            notes.append("the trust override accepts a certificate the system rejects; do this only in debug builds "
                         + "or for a test server you control")
        }
        let result: ATSExceptionResult
        if dictionary.isEmpty, !trustOverride {
            result = .notNeeded
        } else {
            result = .exception(dictionary, alsoRequires: trustOverride ? [Self.trustOverrideRequirement] : [])
        }
        return ATSExceptionFinding(result: result, requiresTrustOverride: trustOverride, verdict: verdict, notes: notes)
    }

    /// Candidate dictionaries, smallest first.
    func candidates(host: String) -> [[String: ATSPlistValue]] {
        // Per-domain keys, in the order nscurl tries them: version, then forward secrecy, then insecure HTTP.
        // A higher minimum version is tried first because it is the stricter exception.
        enum Slot: CaseIterable { case version, forwardSecrecy, insecure }
        let options: [(Slot, String, ATSPlistValue)] = [
            (.version, ATSKey.exceptionMinimumTLSVersion, "TLSv1.1"),
            (.version, ATSKey.exceptionMinimumTLSVersion, "TLSv1.0"),
            (.forwardSecrecy, ATSKey.exceptionRequiresForwardSecrecy, false),
            (.insecure, ATSKey.exceptionAllowsInsecureHTTPLoads, true),
        ]
        func entry(_ keys: [(Slot, String, ATSPlistValue)]) -> [String: ATSPlistValue] {
            var fields: [String: ATSPlistValue] = [:]
            for (_, key, value) in keys { fields[key] = value }
            return [ATSKey.exceptionDomains: .dictionary([host: .dictionary(fields)])]
        }
        var bySize: [[[String: ATSPlistValue]]] = [[], [], [], []]
        for size in 1...3 {
            for combination in Self.combinations(of: options, size: size)
            where Set(combination.map { "\($0.0)" }).count == size {
                bySize[size].append(entry(combination))
            }
        }
        var topLevel: [[String: ATSPlistValue]] = []
        switch self.options.loadKind {
        case .media: topLevel.append([ATSKey.allowsArbitraryLoadsForMedia: true])
        case .web: topLevel.append([ATSKey.allowsArbitraryLoadsInWebContent: true])
        case .data: break
        }
        topLevel.append([ATSKey.allowsArbitraryLoads: true])

        switch strategy {
        case .fewestKeys:
            return [[:]] + bySize[1] + topLevel + bySize[2] + bySize[3]
        case .domainScopedFirst:
            return [[:]] + bySize[1] + bySize[2] + bySize[3] + topLevel
        }
    }

    private static func combinations<T>(of items: [T], size: Int) -> [[T]] {
        guard size > 0 else { return [[]] }
        guard items.count >= size else { return [] }
        var result: [[T]] = []
        for (index, item) in items.enumerated() {
            for rest in combinations(of: Array(items[(index + 1)...]), size: size - 1) {
                result.append([item] + rest)
            }
        }
        return result
    }

    /// "No ATS key admits this", then what is wrong, then what the user needs instead.
    private func impossibleReason(_ verdict: ATSVerdict) -> String {
        let blocking = verdict.violations
        let problems = blocking.map(\.message).joined(separator: "; ")
        var needs: [String] = []
        for rule in blocking.map(\.rule) {
            let need: String
            switch rule {
            case .handshake:
                need = "a server the probe can complete a TLS handshake with (a scenario the linked OpenSSL "
                    + "cannot serve, such as SSLv3, RC4, 3DES or NULL, cannot be tested)"
            case .tlsVersion:
                let floor = options.profile.minimumTLSVersionFloor
                need = floor >= .tls1_2 ? "a server that speaks TLS 1.2 or later (\(options.profile) refuses older versions)"
                    : "a server that speaks \(floor) or later (TLS 1.2 to need no exception)"
            case .cipherSuite, .forwardSecrecy:
                need = "a server with an AES or ChaCha20 suite (ECDHE to need no exception)"
            case .pinning:
                need = "pins that match the server's certificates"
            case .invalidURL:
                need = "a URL with a host"
            default:
                need = "a server whose certificate passes default trust"
            }
            if !needs.contains(need) { needs.append(need) }
        }
        return "no ATS key admits this: \(problems.isEmpty ? "the load is blocked" : problems); "
            + "you need \(needs.isEmpty ? "a different server" : needs.joined(separator: " and "))"
    }
}
