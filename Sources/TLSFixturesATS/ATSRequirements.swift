import Foundation
import TLSFixturesWire

/// What ATS demands of one connection, before looking at the server. Pure: policy + host + options in,
/// requirements out — so the CLI can print them, and the diagnostics can derive an offer, without facts.
public struct ATSRequirements: Sendable, Codable, Equatable {
    /// Whether ATS's own transport and certificate rules apply. When false they are skipped; default trust and a
    /// matching `NSPinnedDomains` entry still apply to HTTPS.
    public var atsApplies: Bool
    /// When ATS does not apply, why — one sentence for the user (e.g. the localhost trap).
    public var exemptionReason: String?
    /// The `NSExceptionDomains` key that matched, as written in the plist.
    public var matchedExceptionDomain: String?
    /// The lowest TLS version the load accepts here: TLS 1.2 by default; an exception may set 1.0–1.3, and it is
    /// TLS 1.0 where ATS does not apply.
    public var minimumTLSVersion: TLSVersion
    /// Whether only forward-secret (ECDHE) suites are accepted.
    public var requiresForwardSecrecy: Bool
    /// `http://` is allowed (an exception entry says so, or ATS does not apply).
    public var allowsInsecureHTTPLoads: Bool
    /// The app's trust override may accept a certificate default trust rejects: the matched entry allows
    /// insecure HTTP loads, or ATS does not apply (the delegate is then free as without ATS).
    public var trustOverrideHonoured: Bool
    /// The leaf must carry SCTs: the matched entry sets `NSRequiresCertificateTransparency` on a system that reads it.
    public var requiresCertificateTransparency: Bool
    /// The `NSPinnedDomains` key that applies, as written (the exact host's entry before its parent's).
    public var matchedPinnedDomain: String?
    /// Every `NSPinnedDomains` key that applies: Apple collects the identities of the host's entry and of its
    /// parent's (with `NSIncludesSubdomains`).
    public var matchedPinnedDomains: [String]
    /// Why some key had no effect here (ignored arbitrary loads, unsupported keys on this profile, …).
    public var notes: [String]
    /// The model rules that decided these requirements, with their confidence.
    public var rules: [ATSAppliedRule]

    init(atsApplies: Bool, exemptionReason: String?, matchedExceptionDomain: String?, minimumTLSVersion: TLSVersion,
         requiresForwardSecrecy: Bool, allowsInsecureHTTPLoads: Bool, trustOverrideHonoured: Bool,
         requiresCertificateTransparency: Bool = false, notes: [String], rules: [ATSAppliedRule] = []) {
        self.atsApplies = atsApplies
        self.exemptionReason = exemptionReason
        self.matchedExceptionDomain = matchedExceptionDomain
        self.minimumTLSVersion = minimumTLSVersion
        self.requiresForwardSecrecy = requiresForwardSecrecy
        self.allowsInsecureHTTPLoads = allowsInsecureHTTPLoads
        self.trustOverrideHonoured = trustOverrideHonoured
        self.requiresCertificateTransparency = requiresCertificateTransparency
        self.matchedPinnedDomain = nil
        self.matchedPinnedDomains = []
        self.notes = notes
        self.rules = rules
    }

    /// When ATS does not apply, the warning a tool prints before its result; nil when it applies.
    public var exemptionWarning: String? { atsApplies ? nil : Self.exemptionWarning(exemptionReason) }

    /// The one wording of that warning (`ATSVerdict.exemptionWarning` says the same).
    static func exemptionWarning(_ reason: String?) -> String {
        "ATS does not apply to this load: \(reason ?? "exempt"). The result says nothing about your ATS settings; "
            + "use a qualified name (NAME.fixtures.test)."
    }

    /// Requirements for a host ATS does not apply to.
    static func exempt(_ reason: String, notes: [String]) -> ATSRequirements {
        ATSRequirements(atsApplies: false, exemptionReason: reason, matchedExceptionDomain: nil,
                        minimumTLSVersion: .tls1_0, requiresForwardSecrecy: false, allowsInsecureHTTPLoads: true,
                        trustOverrideHonoured: true, notes: notes)
    }

    /// ATS's defaults: TLS 1.2, forward secrecy, HTTPS only.
    static func defaults(notes: [String]) -> ATSRequirements {
        ATSRequirements(atsApplies: true, exemptionReason: nil, matchedExceptionDomain: nil,
                        minimumTLSVersion: .tls1_2, requiresForwardSecrecy: true, allowsInsecureHTTPLoads: false,
                        trustOverrideHonoured: false, notes: notes)
    }
}

/// Finds the exception entry and pinned-domain entries for a host. Kept apart from the resolver because the
/// exception finder needs to know what would match.
public struct ATSDomainMatcher: Sendable {
    /// Which reading of subdomain and IP matching to apply.
    public var readings: ATSReadings
    /// Which OS's matching rules apply (IP keys need iOS 17).
    public var profile: ATSOSProfile

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(readings: ATSReadings = .default, profile: ATSOSProfile = .default) {
        self.readings = readings
        self.profile = profile
    }

    /// The exception entry for a host: for a DNS name the key spelled exactly as the host (a trailing dot
    /// included), then the nearest ancestor whose entry has `NSIncludesSubdomains` — Apple's built-in entries
    /// (`ATSExceptionDomain.builtIn`, iOS 13+) among them, unless the app wrote the same key; for an IP literal
    /// (iOS 17+) the
    /// literal, then the longest CIDR prefix. A DNS key never matches an IP connection, and an IP or CIDR key never
    /// matches a name. (Security/protocol/SecProtocolConfiguration.m, `sec_protocol_configuration_find_exception_for_host`
    /// and `_find_cidr_exception`.)
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
        var dnsEntries = Dictionary(entries.filter { $0.keyKind == .dns }.map { ($0.key, $0) },
                                    uniquingKeysWith: { first, _ in first })
        if profile.hasBuiltInExceptions {
            // Apple registers these first; the app's entry under the same key replaces one.
            for entry in ATSExceptionDomain.builtIn where policy.exceptionDomains[entry.key] == nil {
                dnsEntries[entry.key] = entry
            }
        }
        let name = host.exceptionLookupName
        if let exact = dnsEntries[name] { return exact }
        // Apple walks from the host to each parent (`a.b.example.com.` → `b.example.com.` → `example.com.` → `com.`);
        // a trailing dot stays part of every step, so dotted keys only ever meet dotted hosts.
        var rest = Substring(name)
        var depth = 0
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            depth += 1
            guard !rest.isEmpty, rest != "." else { break }
            guard let entry = dnsEntries[String(rest)], entry.includesSubdomains == true else { continue }
            // One-extra-label reading: only the parent's entry can reach this host.
            if readings.subdomains == .oneExtraLabel, depth > 1 { continue }
            return entry
        }
        return nil
    }

    /// The pinned-domain entries for a host, as Security/OSX/sec/Security/SecPolicy.c (`parseNSPinnedDomains`)
    /// finds them: the host's trailing dot dropped, keys compared case-insensitively with the host, and with the
    /// host's direct parent when the entry's `NSIncludesSubdomains` is true — one label, never more. The exact entry
    /// comes first.
    public func pinnedEntries(for host: ATSHost, in policy: ATSPolicy) -> [ATSPinnedDomain] {
        let name = host.name
        let parent = name.firstIndex(of: ".").map { String(name[name.index(after: $0)...]) }.flatMap { $0.isEmpty ? nil : $0 }
        let entries = policy.pinnedDomains.values.sorted { $0.key < $1.key }
        let exact = entries.filter { $0.key.lowercased() == name }
        let viaParent = entries.filter { entry in
            entry.includesSubdomains == true && parent != nil && entry.key.lowercased() == parent
        }
        return exact + viaParent.filter { candidate in !exact.contains { $0.key == candidate.key } }
    }

    /// The first pinned-domain entry for a host (the exact one before the parent's).
    public func pinnedEntry(for host: ATSHost, in policy: ATSPolicy) -> ATSPinnedDomain? {
        pinnedEntries(for: host, in: policy).first
    }
}

/// Resolves requirements, following Apple's order (Security/protocol/SecProtocolConfiguration.m,
/// `sec_protocol_configuration_tls_required_for_host_or_address_internal`): the exception entry first (it replaces
/// every top-level key), then the local exemption, then the top-level keys with the "arbitrary loads is ignored
/// when…" clause and the media/web exemptions. Every decision records the model rule behind it.
public struct ATSRequirementsResolver: Sendable {
    /// The app's ATS dictionary.
    public var policy: ATSPolicy
    /// The load kind, OS profile and readings.
    public var options: ATSEvaluationOptions

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(policy: ATSPolicy, options: ATSEvaluationOptions = .init()) {
        self.policy = policy
        self.options = options
    }

    /// The requirements for a load of `url`; defaults with a note when the URL has no host.
    public func resolve(url: URL) -> ATSRequirements {
        guard let host = ATSHost(url: url) else {
            return .defaults(notes: ["the URL has no host; ATS defaults shown"])
        }
        return resolve(host: host)
    }

    /// The requirements for a connection to `host`, in Apple's order: exception entry, local exemption, top-level keys.
    public func resolve(host: ATSHost) -> ATSRequirements {
        let profile = options.profile
        let matcher = ATSDomainMatcher(readings: options.readings, profile: profile)
        var notes = profileNotes(for: host)
        var log = ATSRuleLog()
        for rule in policy.parserRules where rule != .thirdPartyKeys { log.add(rule) }

        var requirements: ATSRequirements
        if let entry = matcher.exceptionEntry(for: host, in: policy) {
            requirements = entryRequirements(entry, host: host, notes: notes, log: &log)
        } else {
            requirements = topLevelRequirements(host: host, notes: &notes, log: &log)
        }
        if requirements.atsApplies {
            log.add(.defaultRequirements)
            log.add(.cipherSuites, reading: options.readings.cipherSuites.rawValue)
        }

        let pinned = matcher.pinnedEntries(for: host, in: policy)
        if !pinned.isEmpty {
            if profile.supportsPinnedDomains {
                requirements.matchedPinnedDomain = pinned.first?.key
                requirements.matchedPinnedDomains = pinned.map(\.key)
                log.add(.pinnedDomains)
                if pinned.contains(where: { $0.key.lowercased() != host.name }) { log.add(.pinnedDomainsOneLabel) }
                if pinned.contains(where: { $0.key != $0.key.lowercased() }) { log.add(.pinnedDomainsCaseInsensitive) }
                if pinned.count > 1 {
                    requirements.notes.append("the pins of \(pinned.map { "\"\($0.key)\"" }.joined(separator: " and ")) "
                                              + "all apply: Apple collects the identities of every matching entry")
                }
            } else {
                requirements.notes.append("NSPinnedDomains needs iOS 14: \(profile) ignores the \"\(pinned[0].key)\" pins")
            }
        }
        requirements.rules = log.rules
        return requirements
    }

    /// An exception entry's keys alone decide, even when the entry is empty.
    private func entryRequirements(_ entry: ATSExceptionDomain, host: ATSHost, notes: [String],
                                   log: inout ATSRuleLog) -> ATSRequirements {
        var notes = notes
        switch entry.keyKind {
        case .ip, .network: log.add(.ipExceptionKeys)
        case .dns, .unusable: log.add(entry.isBuiltIn ? .builtInExceptions : .exceptionDomainKeys)
        }
        if entry.isBuiltIn {
            let minimum = entry.minimumTLSVersion ?? .tls1_2
            notes.append("\"\(entry.key)\" is one of the exceptions Apple's parser registers for every app: HTTP "
                         + "allowed, \(minimum) or later, forward secrecy not required, subdomains included; an "
                         + "NSExceptionDomains entry of your own under that key replaces it")
        }
        if entry.keyKind == .dns, entry.key != host.exceptionLookupName {
            log.add(.exceptionIncludesSubdomains, reading: options.readings.subdomains.rawValue)
        }
        let overridden = topLevelKeysPresent()
        if !overridden.isEmpty || host.kind != .qualified {
            log.add(.exceptionEntryReplacesTopLevel)
        }
        if !overridden.isEmpty {
            notes.append("the NSExceptionDomains entry \"\(entry.key)\" replaces the top-level "
                         + "\(overridden.joined(separator: ", ")) for this host")
        }

        var insecure = entry.allowsInsecureHTTPLoads
        var minimum = entry.minimumTLSVersion
        var forwardSecrecy = entry.requiresForwardSecrecy
        if let thirdParty = entry.thirdParty {
            let reading = options.readings.thirdPartyKeys.effective(on: options.profile)
            log.add(.thirdPartyKeys, reading: reading.rawValue)
            if reading == .asPlainKeys {
                insecure = insecure ?? thirdParty.allowsInsecureHTTPLoads
                minimum = minimum ?? thirdParty.minimumTLSVersion
                forwardSecrecy = forwardSecrecy ?? thirdParty.requiresForwardSecrecy
                notes.append("the NSThirdPartyException* keys of \"\(entry.key)\" act as their plain twins on "
                             + "\(options.profile) (a plain key present wins)")
            } else {
                notes.append("the NSThirdPartyException* keys of \"\(entry.key)\" have no effect on "
                             + "\(options.profile): only iOS 9 read them; Apple's parser reads only the plain exception keys")
            }
        }
        if insecure != nil { log.add(.insecureHTTPLoadsKey) }
        if minimum != nil { log.add(.minimumTLSVersionKey) }
        if forwardSecrecy != nil { log.add(.forwardSecrecyKey) }

        var transparency = false
        if entry.requiresCertificateTransparency == true {
            log.add(.certificateTransparencyKey)
            if options.profile.honoursCertificateTransparencyKey {
                transparency = true
            } else {
                notes.append("NSRequiresCertificateTransparency has no effect on \(options.profile): only earlier systems "
                             + "(iOS 10–12) read it")
            }
        } else if entry.requiresCertificateTransparency == false {
            log.add(.certificateTransparencyKey)
            if options.profile.requiresCertificateTransparencyForPublicCertificates {
                notes.append("NSRequiresCertificateTransparency = NO does not lift Certificate Transparency: \(options.profile) "
                             + "requires it for publicly trusted certificates in all cases, making the key irrelevant")
            }
        }

        let allowsInsecure = insecure ?? false
        let minimumVersion = minimum ?? .tls1_2
        if minimumVersion == .tls1_3, options.profile.maxTLSVersion < .tls1_3 {
            notes.append("NSExceptionMinimumTLSVersion TLSv1.3 on \(options.profile), which has no TLS 1.3: no connection can succeed")
        }
        return ATSRequirements(atsApplies: true, exemptionReason: nil, matchedExceptionDomain: entry.key,
                               minimumTLSVersion: minimumVersion, requiresForwardSecrecy: forwardSecrecy ?? true,
                               allowsInsecureHTTPLoads: allowsInsecure, trustOverrideHonoured: allowsInsecure,
                               requiresCertificateTransparency: transparency, notes: notes)
    }

    private func topLevelRequirements(host: ATSHost, notes: inout [String], log: inout ATSRuleLog) -> ATSRequirements {
        let profile = options.profile
        // iOS 9 knows none of the iOS 10 keys: they are ignored and arbitrary loads is never switched off.
        guard profile.hasLocalExemptionAndNewKeys else {
            let newKeys = [ATSKey.allowsLocalNetworking, ATSKey.allowsArbitraryLoadsForMedia,
                           ATSKey.allowsArbitraryLoadsInWebContent].filter(isPresent)
            if !newKeys.isEmpty {
                notes.append("\(newKeys.joined(separator: ", ")) arrived in iOS 10; iOS 9 ignores it")
            }
            if policy.allowsArbitraryLoads == true {
                log.add(.arbitraryLoads)
                return .exempt("NSAllowsArbitraryLoads is YES and no NSExceptionDomains entry matches \(host): "
                               + "ATS does not apply", notes: notes)
            }
            return .defaults(notes: notes)
        }

        if let reason = localExemption(host, notes: &notes, log: &log) {
            return .exempt(reason, notes: notes + [Self.localhostTrap])
        }

        // Apple's order (sec_protocol_configuration_tls_required): media and web-content exemptions for their own
        // clients, then any of the three newer keys present switches NSAllowsArbitraryLoads off.
        switch options.loadKind {
        case .media where policy.allowsArbitraryLoadsForMedia == true:
            log.add(.mediaAndWebContent)
            return .exempt("NSAllowsArbitraryLoadsForMedia is YES: ATS does not apply to media (AVFoundation) loads",
                           notes: notes)
        case .web where policy.allowsArbitraryLoadsInWebContent == true:
            log.add(.mediaAndWebContent)
            return .exempt("NSAllowsArbitraryLoadsInWebContent is YES: ATS does not apply to WebKit loads",
                           notes: notes)
        default:
            break
        }
        let disabling = arbitraryLoadsDisablers()
        if policy.allowsArbitraryLoads == true {
            if disabling.isEmpty {
                log.add(.arbitraryLoads)
                return .exempt("NSAllowsArbitraryLoads is YES and no NSExceptionDomains entry matches \(host): "
                               + "ATS does not apply", notes: notes)
            }
            log.add(.arbitraryLoadsIgnored)
            notes.append("NSAllowsArbitraryLoads is ignored because \(disabling.joined(separator: ", ")) "
                         + "\(disabling.count == 1 ? "is" : "are") present (iOS 10+, whatever the value)")
        }
        if options.loadKind == .data,
           policy.allowsArbitraryLoadsForMedia == true || policy.allowsArbitraryLoadsInWebContent == true {
            log.add(.mediaAndWebContent)
        }
        return .defaults(notes: notes)
    }

    /// The exemption for "direct" connections (iOS 10+): unqualified names, `.local` names and local IP literals —
    /// every IP literal on iOS 10–16; from iOS 17 loopback and local ones (or every one under `NSAllowsLocalNetworking
    /// = YES`). An explicit `NSAllowsLocalNetworking = NO` turns it off (Apple's test `testLocalNetworkingDisabled`).
    private func localExemption(_ host: ATSHost, notes: inout [String], log: inout ATSRuleLog) -> String? {
        let localNetworking = policy.allowsLocalNetworking
        let reason: String
        switch host.kind {
        case .qualified:
            return nil
        case .unqualified:
            reason = "\(host) is an unqualified name: ATS does not apply by default"
        case .local:
            reason = "\(host) is a .local name: ATS does not apply by default"
        case .ipLiteral:
            guard let ip = host.ip else { return nil }
            if options.profile.exemptsAllIPLiterals {
                reason = "\(host) is an IP literal: ATS does not apply to IP addresses on iOS 10–16"
            } else if localNetworking == true {
                log.add(.localNetworkingEnablesIPs)
                return "NSAllowsLocalNetworking is YES, which from iOS 17 also allows IP addresses ATS would otherwise "
                    + "restrict: ATS does not apply to \(host)"
            } else {
                log.add(.ios17ExternalIPs, reading: options.readings.ipAddresses.rawValue)
                let scope = ip.scope
                guard options.readings.ipAddresses == .externalOnly, scope != .external else {
                    let which = scope == .external ? "an external IP address" : "an IP address (the every-IP reading)"
                    notes.append("\(host) is \(which): from iOS 17 ATS applies to it unless an IP or CIDR "
                                 + "NSExceptionDomains key matches or NSAllowsLocalNetworking is YES")
                    return nil
                }
                if scope == .privateNetwork { log.add(.privateIPsAreLocal) }
                let described: String
                switch scope {
                case .loopback: described = "a loopback address"
                case .linkLocal: described = "a link-local address"
                default: described = "a private-network address (exempt when the device reaches it directly)"
                }
                reason = "\(host) is \(described): ATS does not apply to local IP addresses, on iOS 17 as before"
            }
        }
        log.add(.localExemption)
        if localNetworking == false {
            notes.append("NSAllowsLocalNetworking is explicitly NO, so the local exemption does not apply to \(host): "
                         + "ATS applies as to any other host")
            return nil
        }
        return reason
    }

    static let localhostTrap = "an ATS test against this host passes whatever the server does (the localhost trap); "
        + "connect by a qualified name such as NAME.fixtures.test to test ATS"

    /// The keys whose presence makes iOS 10+ ignore `NSAllowsArbitraryLoads`. Presence means a value of the right
    /// type: Apple's parser treats a wrong-typed value (the string "YES") as no key at all.
    private func arbitraryLoadsDisablers() -> [String] {
        [ATSKey.allowsArbitraryLoadsForMedia, ATSKey.allowsArbitraryLoadsInWebContent, ATSKey.allowsLocalNetworking]
            .filter(isPresent)
    }

    /// A top-level boolean key that Apple's parser would see (right type).
    private func isPresent(_ key: String) -> Bool {
        switch key {
        case ATSKey.allowsArbitraryLoads: return policy.allowsArbitraryLoads != nil
        case ATSKey.allowsArbitraryLoadsForMedia: return policy.allowsArbitraryLoadsForMedia != nil
        case ATSKey.allowsArbitraryLoadsInWebContent: return policy.allowsArbitraryLoadsInWebContent != nil
        case ATSKey.allowsLocalNetworking: return policy.allowsLocalNetworking != nil
        default: return false
        }
    }

    /// Top-level keys that an exception entry overrides, for the note that says so.
    private func topLevelKeysPresent() -> [String] {
        [ATSKey.allowsArbitraryLoads, ATSKey.allowsArbitraryLoadsForMedia, ATSKey.allowsArbitraryLoadsInWebContent,
         ATSKey.allowsLocalNetworking].filter(isPresent)
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
