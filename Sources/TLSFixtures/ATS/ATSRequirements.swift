import Foundation

/// What ATS demands of one connection, before looking at the server. Pure: policy + host + options in,
/// requirements out — so the CLI can print them, and the diagnostics can derive an offer, without facts.
public struct ATSRequirements: Sendable, Codable, Equatable {
    /// Whether ATS's extra rules apply at all. When false, only default trust applies to HTTPS.
    public var atsApplies: Bool
    /// When ATS does not apply, why — one sentence for the user (e.g. the localhost trap).
    public var exemptionReason: String?
    /// The `NSExceptionDomains` key that matched, as written in the plist.
    public var matchedExceptionDomain: String?
    public var minimumTLSVersion: TLSVersion
    public var requiresForwardSecrecy: Bool
    /// `http://` is allowed (an exception entry says so, or ATS does not apply).
    public var allowsInsecureHTTPLoads: Bool
    /// The app's trust override may accept a certificate default trust rejects: the matched entry allows
    /// insecure HTTP loads, or ATS does not apply (the delegate is then free as without ATS).
    public var trustOverrideHonoured: Bool
    /// The `NSPinnedDomains` key that applies, as written.
    public var matchedPinnedDomain: String?
    /// Why some key had no effect here (ignored arbitrary loads, unsupported keys on this profile, …).
    public var notes: [String]

    /// Requirements for a host ATS does not apply to.
    static func exempt(_ reason: String, notes: [String]) -> ATSRequirements {
        ATSRequirements(atsApplies: false, exemptionReason: reason, matchedExceptionDomain: nil,
                        minimumTLSVersion: .tls1_0, requiresForwardSecrecy: false, allowsInsecureHTTPLoads: true,
                        trustOverrideHonoured: true, matchedPinnedDomain: nil, notes: notes)
    }

    /// ATS's defaults: TLS 1.2, forward secrecy, HTTPS only.
    static func defaults(notes: [String]) -> ATSRequirements {
        ATSRequirements(atsApplies: true, exemptionReason: nil, matchedExceptionDomain: nil,
                        minimumTLSVersion: .tls1_2, requiresForwardSecrecy: true, allowsInsecureHTTPLoads: false,
                        trustOverrideHonoured: false, matchedPinnedDomain: nil, notes: notes)
    }
}

/// Finds the exception entry and pinned-domain entry for a host. Kept apart from the resolver because the
/// pinned domains use the same matching, and the exception finder needs to know what would match.
public struct ATSDomainMatcher: Sendable {
    public var readings: ATSReadings
    public var profile: ATSOSProfile

    public init(readings: ATSReadings = .default, profile: ATSOSProfile = .default) {
        self.readings = readings
        self.profile = profile
    }

    /// The exception entry for a host: for a DNS name the exact key, then the nearest ancestor whose entry
    /// has `NSIncludesSubdomains`; for an IP literal (iOS 17+) the literal, then the longest CIDR prefix.
    /// A DNS key never matches an IP connection, and an IP or CIDR key never matches a name.
    public func exceptionEntry(for host: ATSHost, in policy: ATSPolicy) -> ATSExceptionDomain? {
        let entries = policy.exceptionDomains.values
        if let ip = host.ip {
            guard profile.supportsIPExceptionKeys else { return nil }
            if let exact = entries.first(where: { $0.keyKind == .ip(ip) }) { return exact }
            let networks = entries.compactMap { entry -> (ATSExceptionDomain, Int)? in
                guard case .network(let network) = entry.keyKind, network.contains(ip) else { return nil }
                return (entry, network.prefixLength)
            }
            // Longest prefix wins; ties (same block written twice) break by key for determinism.
            return networks.max { ($0.1, $1.0.key) < ($1.1, $0.0.key) }?.0
        }
        let dnsEntries = Dictionary(entries.filter { $0.keyKind == .dns }.map { ($0.key, $0) },
                                    uniquingKeysWith: { first, _ in first })
        return match(host.name, in: dnsEntries, includesSubdomains: \.includesSubdomains)
    }

    /// The pinned-domain entry for a host, matched like a DNS exception key (an IP host matches only a key
    /// spelled as that literal).
    public func pinnedEntry(for host: ATSHost, in policy: ATSPolicy) -> ATSPinnedDomain? {
        match(host.name, in: policy.pinnedDomains, includesSubdomains: \.includesSubdomains)
    }

    private func match<Entry>(_ name: String, in entries: [String: Entry],
                              includesSubdomains: KeyPath<Entry, Bool?>) -> Entry? {
        if let exact = entries[name] { return exact }
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        var depth = 0
        while labels.count > 1 {
            labels.removeFirst()
            depth += 1
            let ancestor = labels.joined(separator: ".")
            guard let entry = entries[ancestor], entry[keyPath: includesSubdomains] == true else { continue }
            // One-extra-label reading: only the parent's entry can reach this host.
            if readings.subdomains == .oneExtraLabel, depth > 1 { continue }
            return entry
        }
        return nil
    }
}

/// Resolves requirements, following the evaluation order in ats-reference.md:
/// exception entry first (it replaces every top-level key), then the local exemption, then the top-level
/// keys with the "arbitrary loads is ignored when…" clause, then the media/web exemptions.
public struct ATSRequirementsResolver: Sendable {
    public var policy: ATSPolicy
    public var options: ATSEvaluationOptions

    public init(policy: ATSPolicy, options: ATSEvaluationOptions = .init()) {
        self.policy = policy
        self.options = options
    }

    public func resolve(url: URL) -> ATSRequirements {
        guard let host = ATSHost(url: url) else {
            return .defaults(notes: ["the URL has no host; ATS defaults shown"])
        }
        return resolve(host: host)
    }

    public func resolve(host: ATSHost) -> ATSRequirements {
        let profile = options.profile
        let matcher = ATSDomainMatcher(readings: options.readings, profile: profile)
        var notes = profileNotes(for: host)

        var requirements: ATSRequirements
        if let entry = matcher.exceptionEntry(for: host, in: policy) {
            requirements = entryRequirements(entry, notes: notes)
        } else {
            requirements = topLevelRequirements(host: host, notes: &notes)
        }

        if let pinned = matcher.pinnedEntry(for: host, in: policy) {
            if profile.supportsPinnedDomains {
                requirements.matchedPinnedDomain = pinned.key
            } else {
                requirements.notes.append("NSPinnedDomains needs iOS 14: \(profile) ignores the \"\(pinned.key)\" pins")
            }
        }
        return requirements
    }

    /// An exception entry's keys alone decide, even when the entry is empty.
    private func entryRequirements(_ entry: ATSExceptionDomain, notes: [String]) -> ATSRequirements {
        var notes = notes
        let overridden = topLevelKeysPresent()
        if !overridden.isEmpty {
            notes.append("the NSExceptionDomains entry \"\(entry.key)\" replaces the top-level "
                         + "\(overridden.joined(separator: ", ")) for this host")
        }
        let insecure = entry.allowsInsecureHTTPLoads ?? false
        var minimum = entry.minimumTLSVersion ?? .tls1_2
        if minimum == .tls1_3, options.profile.maxTLSVersion < .tls1_3 {
            notes.append("NSExceptionMinimumTLSVersion TLSv1.3 on \(options.profile), which has no TLS 1.3: no connection can succeed")
        }
        if minimum < .tls1_0 { minimum = .tls1_0 }
        return ATSRequirements(atsApplies: true, exemptionReason: nil, matchedExceptionDomain: entry.key,
                               minimumTLSVersion: minimum, requiresForwardSecrecy: entry.requiresForwardSecrecy ?? true,
                               allowsInsecureHTTPLoads: insecure, trustOverrideHonoured: insecure,
                               matchedPinnedDomain: nil, notes: notes)
    }

    private func topLevelRequirements(host: ATSHost, notes: inout [String]) -> ATSRequirements {
        let profile = options.profile
        // iOS 9 knows none of the iOS 10 keys: they are ignored and arbitrary loads is never switched off.
        guard profile.hasLocalExemptionAndNewKeys else {
            let newKeys = [ATSKey.allowsLocalNetworking, ATSKey.allowsArbitraryLoadsForMedia,
                           ATSKey.allowsArbitraryLoadsInWebContent].filter { presentKeys.contains($0) }
            if !newKeys.isEmpty {
                notes.append("\(newKeys.joined(separator: ", ")) arrived in iOS 10; iOS 9 ignores it")
            }
            if policy.allowsArbitraryLoads == true {
                return .exempt("NSAllowsArbitraryLoads is YES and no NSExceptionDomains entry matches \(host): "
                               + "ATS does not apply", notes: notes)
            }
            return .defaults(notes: notes)
        }

        if let reason = localExemption(host) {
            return .exempt(reason, notes: notes + [Self.localhostTrap])
        }
        if host.kind == .ipLiteral, options.profile.supportsIPExceptionKeys {
            notes.append("\(host) is an IP literal: from iOS 17 ATS applies to it unless an IP or CIDR "
                         + "NSExceptionDomains key matches (NSAllowsLocalNetworking no longer covers it)")
        }

        let disabling = arbitraryLoadsDisablers()
        if policy.allowsArbitraryLoads == true {
            if disabling.isEmpty {
                return .exempt("NSAllowsArbitraryLoads is YES and no NSExceptionDomains entry matches \(host): "
                               + "ATS does not apply", notes: notes)
            }
            notes.append("NSAllowsArbitraryLoads is ignored because \(disabling.joined(separator: ", ")) "
                         + "\(disabling.count == 1 ? "is" : "are") present (iOS 10+, whatever the value)")
        }
        switch options.loadKind {
        case .media where policy.allowsArbitraryLoadsForMedia == true:
            return .exempt("NSAllowsArbitraryLoadsForMedia is YES: ATS does not apply to media (AVFoundation) loads",
                           notes: notes)
        case .web where policy.allowsArbitraryLoadsInWebContent == true:
            return .exempt("NSAllowsArbitraryLoadsInWebContent is YES: ATS does not apply to WebKit loads",
                           notes: notes)
        default:
            return .defaults(notes: notes)
        }
    }

    /// The "direct connection" exemption (iOS 10+): unqualified names, `.local` names and, until iOS 17,
    /// IP literals. Under the source reading an explicit `NSAllowsLocalNetworking = NO` turns it off.
    private func localExemption(_ host: ATSHost) -> String? {
        if options.readings.localExemption == .source, policy.allowsLocalNetworking == false { return nil }
        switch host.kind {
        case .unqualified:
            return "\(host) is an unqualified name: ATS does not apply by default"
        case .local:
            return "\(host) is a .local name: ATS does not apply by default"
        case .ipLiteral where options.profile.exemptsIPLiterals:
            return "\(host) is an IP literal: ATS does not apply to IP addresses on iOS 10–16"
        case .ipLiteral, .qualified:
            return nil
        }
    }

    static let localhostTrap = "an ATS test against this host passes whatever the server does (the localhost trap); "
        + "connect by a qualified name such as NAME.fixtures.test to test ATS"

    /// The keys whose mere presence makes iOS 10+ ignore `NSAllowsArbitraryLoads`.
    /// Presence, not the parsed value: a key with a value of the wrong type (the string "YES") still switches
    /// `NSAllowsArbitraryLoads` off, as the reference says ("present, whatever its value").
    private func arbitraryLoadsDisablers() -> [String] {
        [ATSKey.allowsArbitraryLoadsForMedia, ATSKey.allowsArbitraryLoadsInMedia, ATSKey.allowsArbitraryLoadsInWebContent,
         ATSKey.allowsLocalNetworking].filter { presentKeys.contains($0) }
    }

    private var presentKeys: Set<String> { Set(policy.dictionary.keys) }

    /// Top-level keys that an exception entry overrides, for the note that says so.
    private func topLevelKeysPresent() -> [String] {
        [ATSKey.allowsArbitraryLoads, ATSKey.allowsArbitraryLoadsForMedia, ATSKey.allowsArbitraryLoadsInMedia,
         ATSKey.allowsArbitraryLoadsInWebContent, ATSKey.allowsLocalNetworking].filter { presentKeys.contains($0) }
    }

    private func profileNotes(for host: ATSHost) -> [String] {
        var notes: [String] = []
        if !options.profile.supportsIPExceptionKeys {
            let ipKeys = policy.exceptionDomains.values.filter {
                if case .ip = $0.keyKind { return true }
                if case .network = $0.keyKind { return true }
                return false
            }.map(\.key).sorted()
            if !ipKeys.isEmpty {
                notes.append("IP and CIDR exception keys (\(ipKeys.joined(separator: ", "))) need iOS 17; "
                             + "\(options.profile) ignores them")
            }
        }
        return notes
    }
}
