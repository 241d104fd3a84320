import Foundation

extension ATSPolicy {
    /// The parser's warnings, with a warning for every key the chosen OS ignores: the iOS 10 top-level keys on iOS 9,
    /// `NSPinnedDomains` before iOS 14, IP and CIDR exception keys before iOS 17, `NSRequiresCertificateTransparency`
    /// outside iOS 10–12, and the `NSThirdPartyException*` keys wherever the third-party reading ignores them. A
    /// profile's warning replaces the parser's on the same key, being the more precise of the two.
    public func warnings(for options: ATSEvaluationOptions) -> [ATSPolicyWarning] {
        let profile = options.profile
        var ignored: [ATSPolicyWarning] = []
        func ignore(_ path: [String], _ message: String) {
            ignored.append(ATSPolicyWarning(keyPath: path, message: message))
        }
        if !profile.hasLocalExemptionAndNewKeys {
            let newer = [ATSKey.allowsLocalNetworking, ATSKey.allowsArbitraryLoadsForMedia,
                         ATSKey.allowsArbitraryLoadsInWebContent]
            for key in newer where dictionary[key] != nil {
                ignore([key], "\(profile) ignores this key: it arrived in iOS 10")
            }
        }
        if !profile.supportsPinnedDomains, dictionary[ATSKey.pinnedDomains] != nil {
            ignore([ATSKey.pinnedDomains], "\(profile) ignores this key: it arrived in iOS 14, so nothing is pinned")
        }
        let rawEntries = dictionary[ATSKey.exceptionDomains]?.dictionaryValue ?? [:]
        let thirdPartyIgnored = options.readings.thirdPartyKeys.effective(on: profile) == .ignored
        for (key, entry) in exceptionDomains.sorted(by: { $0.key < $1.key }) {
            let path = [ATSKey.exceptionDomains, key]
            switch entry.keyKind {
            case .ip, .network:
                if !profile.supportsIPExceptionKeys {
                    ignore(path, "\(profile) ignores this entry: IP and CIDR keys arrived in iOS 17")
                }
            case .dns, .unusable:
                break
            }
            if entry.requiresCertificateTransparency != nil, !profile.honoursCertificateTransparencyKey {
                ignore(path + [ATSKey.requiresCertificateTransparency], profile > .ios10
                       ? "\(profile) ignores this key: it requires Certificate Transparency for publicly trusted "
                            + "certificates whatever the key says"
                       : "\(profile) ignores this key: it arrived in iOS 10")
            }
            let raw = rawEntries[key]?.dictionaryValue ?? [:]
            for (thirdParty, plain) in ATSKey.thirdPartyTwins where thirdPartyIgnored && raw[thirdParty] != nil {
                ignore(path + [thirdParty], "\(profile) ignores this key: only iOS 9 read the NSThirdPartyException* "
                       + "keys (documented until 2016-09-13); write \(plain)")
            }
        }
        let replaced = Set(ignored.map(\.keyPath))
        return warnings.filter { !replaced.contains($0.keyPath) } + ignored
    }
}
