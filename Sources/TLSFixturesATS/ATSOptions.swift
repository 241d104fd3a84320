import Foundation
import TLSFixturesWire

/// Which iOS release family to model. ATS changed in a few steps; each profile is one step, named by
/// the first release it covers, so a user can ask "what would iOS 13 do?" without knowing the details.
public enum ATSOSProfile: String, Sendable, Codable, CaseIterable, Comparable, CustomStringConvertible {
    /// iOS 9: ATS as introduced. No `NSAllowsLocalNetworking`, media or web-content keys, no local exemption.
    case ios9
    /// iOS 10–12: the local exemption, the media/web/local-networking keys and the clause that makes them
    /// switch `NSAllowsArbitraryLoads` off; `NSRequiresCertificateTransparency` still read. No TLS 1.3 in the client.
    case ios10
    /// iOS 13: adds the iOS 13 certificate rules (support note 103769) and TLS 1.3.
    case ios13
    /// iOS 14–16: adds `NSPinnedDomains` and the 398-day rule for publicly trusted certificates (support note 102028).
    case ios14
    /// iOS 17 and later (the default): external IP addresses fall under ATS; IP and CIDR exception keys.
    case ios17
    /// iOS 26, as reported (OWASP MASTG-TECH-0149, not Apple's documentation): iOS 17's rules, and TLS 1.0/1.1
    /// refused for URLSession loads whatever the exception. Low confidence; choose it explicitly.
    case ios26

    /// iOS 17: the newest profile from Apple's documentation and source.
    public static let `default`: ATSOSProfile = .ios17

    /// Accepts `ios17`, `17`, `iOS 13`, `iOS 15.4`, `iphoneos16`…: any text whose first number is the
    /// major version. Any release maps to the profile that covers it.
    public init?(parsing text: String) {
        if let exact = ATSOSProfile(rawValue: text.lowercased()) { self = exact; return }
        let digits = text.drop(while: { !$0.isNumber }).prefix(while: \.isNumber)
        guard let major = Int(digits) else { return nil }
        switch major {
        case 9: self = .ios9
        case 10...12: self = .ios10
        case 13: self = .ios13
        case 14...16: self = .ios14
        // Apple numbered the release after iOS 18 as 26; there is no iOS 19–25.
        case 17...25: self = .ios17
        case 26...: self = .ios26
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .ios9: return "iOS 9"
        case .ios10: return "iOS 10–12"
        case .ios13: return "iOS 13"
        case .ios14: return "iOS 14–16"
        case .ios17: return "iOS 17+"
        case .ios26: return "iOS 26 (as reported)"
        }
    }

    private var order: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (lhs: ATSOSProfile, rhs: ATSOSProfile) -> Bool { lhs.order < rhs.order }

    /// iOS 10 introduced the local exemption and the keys that turn `NSAllowsArbitraryLoads` off.
    var hasLocalExemptionAndNewKeys: Bool { self >= .ios10 }
    /// Every IP literal counts as local on iOS 10–16; from iOS 17 only loopback and local addresses do.
    var exemptsAllIPLiterals: Bool { self >= .ios10 && self < .ios17 }
    /// The `NSThirdPartyException*` keys were documented for iOS 9 only (they left the Information Property List Key
    /// Reference on 2016-09-13, the day iOS 10 shipped).
    var readsThirdPartyExceptionKeys: Bool { self == .ios9 }
    /// Apple's built-in exception entries (apple.com and six more) are in its parser from Security-59306 (iOS 13) on;
    /// what earlier systems did is not published.
    var hasBuiltInExceptions: Bool { self >= .ios13 }
    /// IP and CIDR exception keys arrived with iOS 17.
    var supportsIPExceptionKeys: Bool { self >= .ios17 }
    /// The iOS 13 certificate rules (RSA ≥ 2048, no SHA-1, SAN required, EKU, 825 days).
    var hasIOS13CertificateRules: Bool { self >= .ios13 }
    /// `NSPinnedDomains` arrived with iOS 14; earlier releases ignore the key.
    var supportsPinnedDomains: Bool { self >= .ios14 }
    /// At most 398 days for certificates from preinstalled roots issued from 2020-09-01 (support note 102028): iOS 14+.
    var hasPublicValidityRule: Bool { self >= .ios14 }
    /// `NSRequiresCertificateTransparency` was read by "earlier versions of the system": modelled as iOS 10–12
    /// (the key arrived with iOS 10; Apple enforces CT for every public certificate since iOS 12.1.1).
    var honoursCertificateTransparencyKey: Bool { self == .ios10 }
    /// Publicly trusted leaves need SCTs whatever the dictionary says: from iOS 12.1.1 (support note 103214), so from
    /// the ios13 profile on; the ios10 profile (10–12) mostly predates it and only says so.
    var requiresCertificateTransparencyForPublicCertificates: Bool { self >= .ios13 }
    /// The newest protocol Apple's client offers: TLS 1.3 arrived in iOS 12.2 but was off by default until 13.
    var maxTLSVersion: TLSVersion { self >= .ios13 ? .tls1_3 : .tls1_2 }
    /// The oldest protocol a URLSession load offers at all, whatever the ATS dictionary says.
    var minimumTLSVersionFloor: TLSVersion { self >= .ios26 ? .tls1_2 : .tls1_0 }
}

/// What kind of load is being made. ATS has keys that exempt only media or only web content, so the
/// same URL can be allowed for AVFoundation and blocked for URLSession.
public enum ATSLoadKind: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// URLSession / NSURLConnection (the default).
    case data
    /// AVFoundation media loads (`NSAllowsArbitraryLoadsForMedia`).
    case media
    /// WebKit loads (`NSAllowsArbitraryLoadsInWebContent`).
    case web

    /// Parses a load kind: `data` (or `urlsession`), `media` (`avfoundation`), `web` (`webkit`, `webcontent`); nil for
    /// anything else.
    public init?(parsing text: String) {
        switch text.lowercased() {
        case "data", "urlsession": self = .data
        case "media", "avfoundation": self = .media
        case "web", "webkit", "webcontent": self = .web
        default: return nil
        }
    }

    public var description: String { rawValue }
}

/// Where Apple's sources disagree or fall silent, which reading to follow. Each default is the reading stated in
/// ats-reference.md; the other is there so a user can check their app against both (docs/ATS-MODEL.md).
public struct ATSReadings: Sendable, Codable, Equatable {
    /// How far `NSIncludesSubdomains` reaches in an `NSExceptionDomains` entry. (Pinned domains always reach one
    /// label: that is Apple's code, not a reading.)
    public enum Subdomains: String, Sendable, Codable, CaseIterable {
        /// Every subdomain at any depth (Apple's source and its test `testIncludesSubdomains`). Default.
        case everySubdomain
        /// Exactly one extra label (`a.example.com` but not `b.a.example.com`), as the current docs read.
        case oneExtraLabel
    }

    /// Which TLS 1.2 forward-secret suite list ATS offers.
    public enum CipherSuites: String, Sendable, Codable, CaseIterable {
        /// Apple's current source: AES-GCM, ChaCha20 and AES-CBC-SHA with ECDHE. Default.
        case currentSource
        /// The list documented from 2015: adds the CBC SHA256/SHA384 suites, lacks ChaCha20.
        case documented2015
    }

    /// Which IP literals fall under ATS from iOS 17 (without an exception key or `NSAllowsLocalNetworking = YES`).
    public enum IPAddresses: String, Sendable, Codable, CaseIterable {
        /// External addresses only (the default): loopback and link-local stay exempt, as the iOS 17 release notes say
        /// and Apple's iOS 17-era test expects; private ranges count as local too, the model's low-confidence guess.
        case externalOnly
        /// Every IP literal, loopback included, as the `NSAllowsLocalNetworking` page's "IP addresses" reads.
        case every
    }

    /// What the `NSThirdPartyException*` keys do.
    public enum ThirdPartyKeys: String, Sendable, Codable, CaseIterable {
        /// What the chosen OS did (the default): each acts as its plain twin on iOS 9, whose documentation listed them
        /// (Information Property List Key Reference, until 2016-09-13); ignored from iOS 10 (removed from the
        /// documentation the day iOS 10 shipped; Apple's parser, open since Security-59306, reads only the plain keys).
        case byProfile
        /// Nothing, on every profile: Apple's current parser reads only the plain keys.
        case ignored
        /// Each acts as its plain twin on every profile (the plain key wins when both are present).
        case asPlainKeys

        /// `.ignored` or `.asPlainKeys`: what the keys do on `profile` under this reading.
        public func effective(on profile: ATSOSProfile) -> ThirdPartyKeys {
            guard self == .byProfile else { return self }
            return profile.readsThirdPartyExceptionKeys ? .asPlainKeys : .ignored
        }
    }

    /// Whether Apple's client offers DHE_RSA suites when ATS does not apply.
    public enum DHE: String, Sendable, Codable, CaseIterable {
        /// Offered, so `dhe-only`, `dh1024` and `dh512` are admitted by `NSAllowsArbitraryLoads` (scenarios.md).
        /// Default, low confidence: Apple's source keeps DHE in a "legacy" group only.
        case offeredWithoutATS
        /// Never offered: DHE-only servers fail whatever the dictionary says.
        case neverOffered
    }

    /// Whether a WKWebView's loads apply the app's `NSPinnedDomains`.
    public enum WebViewPins: String, Sendable, Codable, CaseIterable {
        /// Not applied (the default, medium confidence): Security/OSX/sec/Security/SecPolicy.c reads the pins from the
        /// main bundle of the process that evaluates trust, a web view loads in WebKit's networking process, and a
        /// published test series (iOS 14 to 15.4) saw WKWebView load despite a pin mismatch.
        case notEnforced
        /// Applied as for URLSession: the stricter reading (Apple's SecPolicyCreateSSLWithATSPinning, iOS 16, and
        /// SecPolicySetATSPinning, iOS 18, let another process apply an app's dictionary).
        case enforced
    }

    /// How `NSIncludesSubdomains` matches names.
    public var subdomains: Subdomains
    /// Which suites Apple's client offers with ATS on.
    public var cipherSuites: CipherSuites
    /// Which IP literals iOS 17 leaves exempt.
    public var ipAddresses: IPAddresses
    /// Whether the `NSThirdPartyException*` keys count.
    public var thirdPartyKeys: ThirdPartyKeys
    /// Whether DHE suites are ever offered.
    public var dhe: DHE
    /// Whether web-view loads apply `NSPinnedDomains`.
    public var webViewPins: WebViewPins

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(subdomains: Subdomains = .everySubdomain, cipherSuites: CipherSuites = .currentSource,
                ipAddresses: IPAddresses = .externalOnly, thirdPartyKeys: ThirdPartyKeys = .byProfile,
                dhe: DHE = .offeredWithoutATS, webViewPins: WebViewPins = .notEnforced) {
        self.subdomains = subdomains
        self.cipherSuites = cipherSuites
        self.ipAddresses = ipAddresses
        self.thirdPartyKeys = thirdPartyKeys
        self.dhe = dhe
        self.webViewPins = webViewPins
    }

    /// The readings the model uses unless told otherwise (docs/ATS-MODEL.md names each default).
    public static let `default` = ATSReadings()
}

/// Everything about the client side of an evaluation that is not in the policy or the server facts.
public struct ATSEvaluationOptions: Sendable, Codable, Equatable {
    /// What loads the URL: URLSession (default), media, or a web view; the exemptions differ.
    public var loadKind: ATSLoadKind
    /// Which OS's rules apply; default iOS 17.
    public var profile: ATSOSProfile
    /// The readings of the rules the model is unsure of.
    public var readings: ATSReadings
    /// The app's `URLSessionDelegate` answers the server-trust challenge itself and accepts the trust
    /// (`completionHandler(.useCredential, URLCredential(trust:))`). ATS only lets that count where the
    /// matched exception allows insecure HTTP loads or ATS does not apply.
    public var trustOverride: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(loadKind: ATSLoadKind = .data, profile: ATSOSProfile = .default,
                readings: ATSReadings = .default, trustOverride: Bool = false) {
        self.loadKind = loadKind
        self.profile = profile
        self.readings = readings
        self.trustOverride = trustOverride
    }
}
