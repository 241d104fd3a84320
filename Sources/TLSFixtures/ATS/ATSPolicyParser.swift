import Foundation

/// Turns an `NSAppTransportSecurity` dictionary into an `ATSPolicy`, collecting warnings on the way.
///
/// The parser is lenient the way iOS is: a bad value never fails the whole policy, it is ignored
/// (as iOS ignores it) and reported, so the evaluation that follows matches what the device does.
struct ATSPolicyParser {
    private var warnings: [ATSPolicyWarning] = []

    mutating func parse(_ ats: [String: ATSPlistValue]) -> ATSPolicy {
        var media = boolean(ats, ATSKey.allowsArbitraryLoadsForMedia, path: [])
        if let older = boolean(ats, ATSKey.allowsArbitraryLoadsInMedia, path: []) {
            // Both spellings reach the same setting; the newer one wins if both are there.
            if media == nil { media = older } else {
                warn([ATSKey.allowsArbitraryLoadsInMedia],
                     "both spellings present; \(ATSKey.allowsArbitraryLoadsForMedia) wins")
            }
        }
        let policy = ATSPolicy(
            allowsArbitraryLoads: boolean(ats, ATSKey.allowsArbitraryLoads, path: []),
            allowsArbitraryLoadsForMedia: media,
            allowsArbitraryLoadsInWebContent: boolean(ats, ATSKey.allowsArbitraryLoadsInWebContent, path: []),
            allowsLocalNetworking: boolean(ats, ATSKey.allowsLocalNetworking, path: []),
            exceptionDomains: exceptionDomains(ats[ATSKey.exceptionDomains]),
            pinnedDomains: pinnedDomains(ats[ATSKey.pinnedDomains]),
            warnings: [],
            dictionary: ats)
        for key in ats.keys.sorted() where !ATSKey.topLevel.contains(key) {
            warn([key], unknownKeyMessage(key, known: ATSKey.topLevel))
        }
        var result = policy
        result.warnings = warnings
        return result
    }

    // MARK: - Exception domains

    private static let exceptionKeys: Set<String> = [
        ATSKey.includesSubdomains, ATSKey.exceptionAllowsInsecureHTTPLoads, ATSKey.exceptionMinimumTLSVersion,
        ATSKey.exceptionRequiresForwardSecrecy, ATSKey.requiresCertificateTransparency,
        ATSKey.thirdPartyAllowsInsecureHTTPLoads, ATSKey.thirdPartyMinimumTLSVersion,
        ATSKey.thirdPartyRequiresForwardSecrecy,
    ]

    private mutating func exceptionDomains(_ value: ATSPlistValue?) -> [String: ATSExceptionDomain] {
        guard let value else { return [:] }
        guard case .dictionary(let domains) = value else {
            warn([ATSKey.exceptionDomains], "expected a dictionary, found \(value.typeName); ignored")
            return [:]
        }
        var result: [String: ATSExceptionDomain] = [:]
        for key in domains.keys.sorted() {
            let path = [ATSKey.exceptionDomains, key]
            guard case .dictionary(let entry) = domains[key]! else {
                warn(path, "expected a dictionary, found \(domains[key]!.typeName); entry ignored")
                continue
            }
            result[key] = exceptionDomain(key: key, entry: entry, path: path)
        }
        return result
    }

    private mutating func exceptionDomain(key: String, entry: [String: ATSPlistValue], path: [String]) -> ATSExceptionDomain {
        let insecure = twin(plain: boolean(entry, ATSKey.exceptionAllowsInsecureHTTPLoads, path: path),
                            thirdParty: boolean(entry, ATSKey.thirdPartyAllowsInsecureHTTPLoads, path: path),
                            keys: (ATSKey.exceptionAllowsInsecureHTTPLoads, ATSKey.thirdPartyAllowsInsecureHTTPLoads),
                            entry: entry, path: path)
        let minimum = twin(plain: tlsVersion(entry, ATSKey.exceptionMinimumTLSVersion, path: path),
                           thirdParty: tlsVersion(entry, ATSKey.thirdPartyMinimumTLSVersion, path: path),
                           keys: (ATSKey.exceptionMinimumTLSVersion, ATSKey.thirdPartyMinimumTLSVersion),
                           entry: entry, path: path)
        let forwardSecrecy = twin(plain: boolean(entry, ATSKey.exceptionRequiresForwardSecrecy, path: path),
                                  thirdParty: boolean(entry, ATSKey.thirdPartyRequiresForwardSecrecy, path: path),
                                  keys: (ATSKey.exceptionRequiresForwardSecrecy, ATSKey.thirdPartyRequiresForwardSecrecy),
                                  entry: entry, path: path)
        let transparency = boolean(entry, ATSKey.requiresCertificateTransparency, path: path)
        if transparency != nil {
            warn(path + [ATSKey.requiresCertificateTransparency],
                 "obsolete: iOS enforces Certificate Transparency for publicly trusted certificates regardless; no effect")
        }
        for entryKey in entry.keys.sorted() where !Self.exceptionKeys.contains(entryKey) {
            warn(path + [entryKey], unknownKeyMessage(entryKey, known: Self.exceptionKeys))
        }
        return ATSExceptionDomain(
            key: key, keyKind: domainKeyKind(key, path: path),
            includesSubdomains: boolean(entry, ATSKey.includesSubdomains, path: path),
            allowsInsecureHTTPLoads: insecure, minimumTLSVersion: minimum,
            requiresForwardSecrecy: forwardSecrecy, requiresCertificateTransparency: transparency)
    }

    /// `NSThirdPartyException*` keys were dropped from the docs in 2016. Reading chosen: parse them as
    /// their plain twins with a warning, because apps that still carry them were written expecting that
    /// effect, and a tool that silently ignored them would hide the difference. The plain key wins if
    /// both are present.
    private mutating func twin<T>(plain: T?, thirdParty: T?, keys: (plain: String, thirdParty: String),
                                  entry: [String: ATSPlistValue], path: [String]) -> T? {
        guard entry[keys.thirdParty] != nil else { return plain }
        if entry[keys.plain] != nil {
            warn(path + [keys.thirdParty],
                 "removed from Apple's documentation in 2016; \(keys.plain) is also present and wins")
            return plain ?? thirdParty
        }
        warn(path + [keys.thirdParty],
             "removed from Apple's documentation in 2016; read as \(keys.plain) (write \(keys.plain) instead)")
        return thirdParty
    }

    /// Classifies a domain key. ATS compares keys with the lowercased host, literally, so a key with
    /// capitals, a scheme, a port or a wildcard silently never matches: exactly what a user needs told.
    private mutating func domainKeyKind(_ key: String, path: [String]) -> ATSExceptionDomain.KeyKind {
        if key.isEmpty {
            warn(path, "empty domain key never matches; write the host name")
            return .unusable
        }
        if key.contains("://") {
            warn(path, "domain key contains a scheme and never matches; write only the host name")
            return .unusable
        }
        if key.contains("/"), ATSIPNetwork(key) == nil {
            warn(path, "domain key contains a path or an invalid CIDR prefix and never matches")
            return .unusable
        }
        if let network = ATSIPNetwork(key) {
            return .network(network)
        }
        if let ip = ATSIPAddress(key), !key.hasPrefix("[") {
            return .ip(ip)
        }
        if key.hasPrefix("[") || key.range(of: #":\d+$"#, options: .regularExpression) != nil {
            warn(path, "domain key contains a port (or brackets) and never matches; write only the host name")
            return .unusable
        }
        if key.contains("*") {
            warn(path, "wildcards are not supported in domain keys; use the parent domain with NSIncludesSubdomains")
            return .unusable
        }
        if key != key.lowercased() {
            warn(path, "domain keys must be lowercase; this one never matches (write \"\(key.lowercased())\")")
            return .unusable
        }
        if key.hasSuffix(".") {
            warn(path, "domain key ends with a dot and never matches; drop the trailing dot")
            return .unusable
        }
        return .dns
    }

    // MARK: - Pinned domains

    private static let pinnedKeys: Set<String> = [
        ATSKey.includesSubdomains, ATSKey.pinnedCAIdentities, ATSKey.pinnedLeafIdentities,
    ]

    private mutating func pinnedDomains(_ value: ATSPlistValue?) -> [String: ATSPinnedDomain] {
        guard let value else { return [:] }
        guard case .dictionary(let domains) = value else {
            warn([ATSKey.pinnedDomains], "expected a dictionary, found \(value.typeName); ignored")
            return [:]
        }
        var result: [String: ATSPinnedDomain] = [:]
        for key in domains.keys.sorted() {
            let path = [ATSKey.pinnedDomains, key]
            guard case .dictionary(let entry) = domains[key]! else {
                warn(path, "expected a dictionary, found \(domains[key]!.typeName); entry ignored")
                continue
            }
            if key != key.lowercased() || key.contains(":") || key.contains("/") {
                warn(path, "pinned domain keys must be a lowercase host name; this one never matches")
            }
            let ca = identities(entry, ATSKey.pinnedCAIdentities, path: path)
            let leaf = identities(entry, ATSKey.pinnedLeafIdentities, path: path)
            if ca == nil, leaf == nil {
                warn(path, "has neither \(ATSKey.pinnedCAIdentities) nor \(ATSKey.pinnedLeafIdentities); pins nothing")
            }
            for entryKey in entry.keys.sorted() where !Self.pinnedKeys.contains(entryKey) {
                warn(path + [entryKey], unknownKeyMessage(entryKey, known: Self.pinnedKeys))
            }
            result[key] = ATSPinnedDomain(key: key, includesSubdomains: boolean(entry, ATSKey.includesSubdomains, path: path),
                                          caIdentities: ca, leafIdentities: leaf)
        }
        return result
    }

    private mutating func identities(_ entry: [String: ATSPlistValue], _ key: String, path: [String]) -> [String]? {
        guard let value = entry[key] else { return nil }
        let path = path + [key]
        guard case .array(let items) = value else {
            warn(path, "expected an array of { SPKI-SHA256-BASE64 = … } dictionaries, found \(value.typeName); ignored")
            return nil
        }
        if items.isEmpty {
            warn(path, "empty list: no certificate can match it, so every connection to this domain fails")
        }
        var hashes: [String] = []
        for (index, item) in items.enumerated() {
            let itemPath = path + ["[\(index)]"]
            guard case .dictionary(let identity) = item, let hash = identity[ATSKey.spkiSHA256Base64]?.stringValue else {
                warn(itemPath, "expected a dictionary with a \(ATSKey.spkiSHA256Base64) string; ignored")
                continue
            }
            if Data(base64Encoded: hash)?.count != 32 {
                warn(itemPath, "\(ATSKey.spkiSHA256Base64) is not base64 of a 32-byte SHA-256 digest; it can never match")
            }
            hashes.append(hash)
        }
        return hashes
    }

    // MARK: - Values

    /// A boolean key. Anything but a real plist boolean is ignored — iOS reads `"YES"` (a string) as absent.
    private mutating func boolean(_ dictionary: [String: ATSPlistValue], _ key: String, path: [String]) -> Bool? {
        guard let value = dictionary[key] else { return nil }
        if case .bool(let flag) = value { return flag }
        let hint: String
        switch value {
        case .string(let text): hint = "the string \"\(text)\" is not a boolean"
        case .integer(let number): hint = "the integer \(number) is not a boolean"
        default: hint = "expected a boolean, found \(value.typeName)"
        }
        warn(path + [key], "\(hint); ignored (use <true/> or <false/>)")
        return nil
    }

    private mutating func tlsVersion(_ dictionary: [String: ATSPlistValue], _ key: String, path: [String]) -> TLSVersion? {
        guard let value = dictionary[key] else { return nil }
        let allowed = ["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"]
        guard case .string(let text) = value, allowed.contains(text), let version = TLSVersion(rawValue: text) else {
            warn(path + [key], "\(value.stringValue.map { "\"\($0)\"" } ?? value.typeName) is not one of "
                 + "\(allowed.joined(separator: ", ")); ignored, so the default TLSv1.2 applies")
            return nil
        }
        return version
    }

    private func unknownKeyMessage(_ key: String, known: Set<String>) -> String {
        let near = known.first { $0.lowercased() == key.lowercased() }
        return near.map { "unknown key (keys are case-sensitive: did you mean \($0)?); ignored" } ?? "unknown key; ignored"
    }

    private mutating func warn(_ path: [String], _ message: String) {
        warnings.append(ATSPolicyWarning(keyPath: path, message: message))
    }
}
