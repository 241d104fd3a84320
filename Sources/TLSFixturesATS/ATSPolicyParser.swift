import Foundation
import TLSFixturesWire

/// Turns an `NSAppTransportSecurity` dictionary into an `ATSPolicy`, collecting warnings on the way.
///
/// The parser is lenient the way iOS is: a bad value never fails the whole policy, it is ignored (as iOS ignores
/// it) and reported, so the evaluation that follows matches what the device does. Its value rules follow Apple's
/// own parser (Security/protocol/SecProtocolConfiguration.m, `sec_protocol_configuration_set_ats_overrides`): a
/// boolean key takes any number and compares it with YES; anything that is not a number is absent, in every
/// respect — it does not even count as "present" for the keys that switch `NSAllowsArbitraryLoads` off.
struct ATSPolicyParser {
    private var warnings: [ATSPolicyWarning] = []
    private var rules: [ATSModelRule] = []

    mutating func parse(_ ats: [String: ATSPlistValue]) -> ATSPolicy {
        let policy = ATSPolicy(
            allowsArbitraryLoads: boolean(ats, ATSKey.allowsArbitraryLoads, path: []),
            allowsArbitraryLoadsForMedia: boolean(ats, ATSKey.allowsArbitraryLoadsForMedia, path: []),
            allowsArbitraryLoadsInWebContent: boolean(ats, ATSKey.allowsArbitraryLoadsInWebContent, path: []),
            allowsLocalNetworking: boolean(ats, ATSKey.allowsLocalNetworking, path: []),
            exceptionDomains: exceptionDomains(ats[ATSKey.exceptionDomains]),
            pinnedDomains: pinnedDomains(ats[ATSKey.pinnedDomains]),
            warnings: [], parserRules: [], dictionary: ats)
        for key in ats.keys.sorted() where !ATSKey.topLevel.contains(key) {
            if key == ATSKey.allowsArbitraryLoadsInMedia {
                note(.inMediaIsNotAKey)
                warn([key], "not a key (a typo in Apple's documentation, corrected in 2016): iOS ignores it, so it neither "
                     + "exempts media loads nor switches \(ATSKey.allowsArbitraryLoads) off; write \(ATSKey.allowsArbitraryLoadsForMedia)")
            } else {
                warn([key], unknownKeyMessage(key, known: ATSKey.topLevel))
            }
        }
        var result = policy
        result.warnings = warnings
        result.parserRules = rules
        return result
    }

    // MARK: - Exception domains

    private static let exceptionKeys: Set<String> = [
        ATSKey.includesSubdomains, ATSKey.exceptionAllowsInsecureHTTPLoads, ATSKey.exceptionMinimumTLSVersion,
        ATSKey.exceptionRequiresForwardSecrecy, ATSKey.requiresCertificateTransparency,
    ]
    private static let thirdPartyKeys = ATSKey.thirdPartyTwins

    private mutating func exceptionDomains(_ value: ATSPlistValue?) -> [String: ATSExceptionDomain] {
        guard let value else { return [:] }
        guard case .dictionary(let domains) = value else {
            note(.wrongTypeIsAbsent)
            warn([ATSKey.exceptionDomains], "expected a dictionary, found \(value.typeName); ignored")
            return [:]
        }
        var result: [String: ATSExceptionDomain] = [:]
        for key in domains.keys.sorted() {
            let path = [ATSKey.exceptionDomains, key]
            guard case .dictionary(let entry) = domains[key]! else {
                note(.wrongTypeIsAbsent)
                warn(path, "expected a dictionary, found \(domains[key]!.typeName); entry ignored")
                continue
            }
            result[key] = exceptionDomain(key: key, entry: entry, path: path)
        }
        return result
    }

    private mutating func exceptionDomain(key: String, entry: [String: ATSPlistValue], path: [String]) -> ATSExceptionDomain {
        let transparency = boolean(entry, ATSKey.requiresCertificateTransparency, path: path)
        if transparency == true {
            warn(path + [ATSKey.requiresCertificateTransparency],
                 "only earlier systems (iOS 10–12) read this key and required Certificate Transparency for the domain; "
                    + "later ones enforce CT for publicly trusted certificates whatever it says")
        }
        var thirdParty: ATSThirdPartyExceptionKeys?
        if Self.thirdPartyKeys.contains(where: { entry[$0.thirdParty] != nil }) {
            note(.thirdPartyKeys)
            thirdParty = ATSThirdPartyExceptionKeys(
                allowsInsecureHTTPLoads: boolean(entry, ATSKey.thirdPartyAllowsInsecureHTTPLoads, path: path),
                minimumTLSVersion: tlsVersion(entry, ATSKey.thirdPartyMinimumTLSVersion, path: path),
                requiresForwardSecrecy: boolean(entry, ATSKey.thirdPartyRequiresForwardSecrecy, path: path))
            for (thirdPartyKey, plain) in Self.thirdPartyKeys where entry[thirdPartyKey] != nil {
                warn(path + [thirdPartyKey], "read as \(plain) only on iOS 9, whose documentation listed it (until "
                     + "2016-09-13), and ignored from iOS 10, whose parser reads only \(plain); write \(plain) instead")
            }
        }
        let known = Self.exceptionKeys.union(Self.thirdPartyKeys.map(\.thirdParty))
        for entryKey in entry.keys.sorted() where !known.contains(entryKey) {
            warn(path + [entryKey], unknownKeyMessage(entryKey, known: Self.exceptionKeys))
        }
        return ATSExceptionDomain(
            key: key, keyKind: domainKeyKind(key, path: path),
            includesSubdomains: boolean(entry, ATSKey.includesSubdomains, path: path),
            allowsInsecureHTTPLoads: boolean(entry, ATSKey.exceptionAllowsInsecureHTTPLoads, path: path),
            minimumTLSVersion: tlsVersion(entry, ATSKey.exceptionMinimumTLSVersion, path: path),
            requiresForwardSecrecy: boolean(entry, ATSKey.exceptionRequiresForwardSecrecy, path: path),
            requiresCertificateTransparency: transparency, thirdParty: thirdParty)
    }

    /// Classifies a domain key. Apple looks the host up in the dictionary exactly as the key is written, so a key
    /// with capitals, a scheme, a port or a wildcard silently never matches: exactly what a user needs told.
    private mutating func domainKeyKind(_ key: String, path: [String]) -> ATSExceptionDomain.KeyKind {
        if key.isEmpty {
            warn(path, "empty domain key never matches; write the host name")
            return .unusable
        }
        if key.contains("://") {
            warn(path, "domain key contains a scheme and never matches; write only the host name")
            return .unusable
        }
        if key.contains("/") {
            // Apple files every key holding a "/" as a CIDR range (`set_ats_overrides`); one its parser cannot read
            // stays in that table without an address, so it never matches anything.
            switch ATSCIDRKey.read(key) {
            case .success(let reading):
                for adjustment in reading.adjustments { warn(path, "read as \(reading.network): \(adjustment)") }
                return .network(reading.network)
            case .failure(let refusal):
                warn(path, "Apple's parser does not read this as a CIDR range (\(refusal)), and a key holding a "
                     + "\"/\" is never looked up as a host: the entry never matches")
                return .unusable
            }
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
            // Valid, and a trap: Apple's page says a dotted key matches only a host written with the dot.
            warn(path, "ends with a dot, so it matches only URLs whose host is written with a trailing dot "
                 + "(\(key)), not \(key.dropLast()); drop the dot unless that is what you mean")
        }
        return .dns
    }

    // MARK: - Pinned domains

    private static let pinnedKeys: Set<String> = [
        ATSKey.includesSubdomains, ATSKey.pinnedCAIdentities, ATSKey.pinnedLeafIdentities,
    ]

    /// Read as Security/OSX/sec/Security/SecPolicy.c (`parseNSPinnedDomains`) reads them: keys compared with the
    /// host case-insensitively, `NSIncludesSubdomains` honoured only when it is the boolean true.
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
            if key.isEmpty || key.contains(":") || key.contains("/") {
                warn(path, "pinned domain keys are host names; this one never matches")
            } else if key.hasSuffix(".") {
                warn(path, "the host's trailing dot is dropped before pinned domains are compared, so a key ending "
                     + "with a dot never matches; write \"\(key.dropLast())\"")
            }
            let ca = identities(entry, ATSKey.pinnedCAIdentities, path: path)
            let leaf = identities(entry, ATSKey.pinnedLeafIdentities, path: path)
            if ca == nil, leaf == nil {
                warn(path, "has neither \(ATSKey.pinnedCAIdentities) nor \(ATSKey.pinnedLeafIdentities); pins nothing")
            }
            for entryKey in entry.keys.sorted() where !Self.pinnedKeys.contains(entryKey) {
                warn(path + [entryKey], unknownKeyMessage(entryKey, known: Self.pinnedKeys))
            }
            result[key] = ATSPinnedDomain(key: key, includesSubdomains: strictBoolean(entry, ATSKey.includesSubdomains, path: path),
                                          caIdentities: ca, leafIdentities: leaf)
        }
        return result
    }

    private mutating func identities(_ entry: [String: ATSPlistValue], _ key: String, path: [String]) -> [String]? {
        guard let value = entry[key] else { return nil }
        let path = path + [key]
        guard case .array(let items) = value else {
            warn(path, "expected an array of { SPKI-SHA256-BASE64 = … } dictionaries, found \(value.typeName); "
                 + "the domain counts as pinned with no identity, so every connection to it fails")
            return []
        }
        if items.isEmpty {
            warn(path, "empty list: no certificate can match it, so every connection to this domain fails")
        }
        var hashes: [String] = []
        for (index, item) in items.enumerated() {
            if let hash = identity(item, path: path + ["[\(index)]"]) { hashes.append(hash) }
        }
        return hashes
    }

    /// One identity as Apple reads it (Security/OSX/sec/Security/SecPolicy.c, `parseNSPinnedDomains`): an item that
    /// is not a dictionary, or whose `SPKI-SHA256-BASE64` is not a string, or decodes to nothing, is skipped; the
    /// digest is decoded as `SPKIPin.decodedAsNSPinnedDomains` says, so spaces and line breaks do not change it.
    /// Returns the digest in canonical base64 (what certificates are compared with), the text as written for a digest
    /// of the wrong length (it never matches), or nil for a skipped item.
    private mutating func identity(_ item: ATSPlistValue, path: [String]) -> String? {
        guard case .dictionary(let identity) = item else {
            warn(path, "expected a dictionary with a \(ATSKey.spkiSHA256Base64) string, found \(item.typeName); "
                 + "Apple skips the item")
            return nil
        }
        guard let value = identity[ATSKey.spkiSHA256Base64] else {
            warn(path, "has no \(ATSKey.spkiSHA256Base64) key; Apple skips the item")
            return nil
        }
        guard case .string(let text) = value else {
            warn(path + [ATSKey.spkiSHA256Base64], "expected a base64 string, found \(value.typeName); Apple reads "
                 + "only a string and skips the item (write the base64 text in a <string>)")
            return nil
        }
        guard let digest = SPKIPin.decodedAsNSPinnedDomains(text) else {
            warn(path + [ATSKey.spkiSHA256Base64], "holds no base64 at all; Apple skips the item")
            return nil
        }
        let canonical = digest.base64EncodedString()
        guard digest.count == 32 else {
            let hint = text.hasPrefix("sha256/")
                ? " (the sha256/ prefix is TrustKit's spelling: write the bare base64)" : ""
            warn(path + [ATSKey.spkiSHA256Base64], "decodes to \(digest.count) bytes as Apple reads it, not a 32-byte "
                 + "SHA-256 digest, so it can never match\(hint)")
            return text
        }
        let written = text.filter { !$0.isWhitespace }
        if written != canonical {
            warn(path + [ATSKey.spkiSHA256Base64], "Apple's decoder skips what is not base64 and stops after the "
                 + "padding: this pins \(canonical)")
        }
        return canonical
    }

    // MARK: - Values

    /// A boolean key as Apple's ATS parser reads it: a real boolean; a number compared with YES (so 1 is YES and
    /// any other number NO); anything else absent.
    private mutating func boolean(_ dictionary: [String: ATSPlistValue], _ key: String, path: [String]) -> Bool? {
        guard let value = dictionary[key] else { return nil }
        switch value {
        case .bool(let flag):
            return flag
        case .integer(let number):
            note(.numbersComparedWithYes)
            warn(path + [key], "the integer \(number) is read as \(number == 1 ? "YES" : "NO") (Apple's parser compares "
                 + "numbers with YES); write <true/> or <false/>")
            return number == 1
        case .real(let number):
            note(.numbersComparedWithYes)
            warn(path + [key], "the real \(number) is read as \(number == 1 ? "YES" : "NO") (Apple's parser compares "
                 + "numbers with YES); write <true/> or <false/>")
            return number == 1
        case .string(let text):
            note(.wrongTypeIsAbsent)
            warn(path + [key], "the string \"\(text)\" is not a boolean; ignored as if the key were absent (use <true/> or <false/>)")
            return nil
        default:
            note(.wrongTypeIsAbsent)
            warn(path + [key], "expected a boolean, found \(value.typeName); ignored as if the key were absent")
            return nil
        }
    }

    /// `NSIncludesSubdomains` in a pinned-domain entry: SecPolicy.c compares it with the boolean true itself, so a
    /// number does not count.
    private mutating func strictBoolean(_ dictionary: [String: ATSPlistValue], _ key: String, path: [String]) -> Bool? {
        guard let value = dictionary[key] else { return nil }
        if case .bool(let flag) = value { return flag }
        note(.wrongTypeIsAbsent)
        warn(path + [key], "expected <true/> or <false/>, found \(value.typeName); pinned domains honour only the boolean "
             + "true, so this is ignored")
        return nil
    }

    /// A version string as `sec_protocol_configuration_protocol_string_to_version` reads it
    /// (SecProtocolConfiguration.m): exactly `TLSv1.` and one digit 0–3, read from the string's UTF-8 C string (so up to a NUL). It also takes
    /// `DTLSv1.0` and `DTLSv1.2`, DTLS versions a TLS connection cannot use; what iOS then does is not known, so the
    /// model keeps TLS 1.2 and says so.
    private mutating func tlsVersion(_ dictionary: [String: ATSPlistValue], _ key: String, path: [String]) -> TLSVersion? {
        guard let value = dictionary[key] else { return nil }
        let allowed = ["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"]
        if case .string(let written) = value, ["DTLSv1.0", "DTLSv1.2"].contains(String(written.prefix { $0 != "\0" })) {
            warn(path + [key], "\"\(written)\" is a DTLS version: Apple's parser takes it, but a TLS connection "
                 + "cannot use it and what iOS does then is not documented; the model keeps the default TLSv1.2")
            return nil
        }
        guard case .string(let written) = value, case let text = String(written.prefix { $0 != "\0" }),
              allowed.contains(text), let version = TLSVersion(rawValue: text) else {
            if value.stringValue == nil { note(.wrongTypeIsAbsent) }
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

    private mutating func note(_ rule: ATSModelRule) {
        if !rules.contains(rule) { rules.append(rule) }
    }
}
