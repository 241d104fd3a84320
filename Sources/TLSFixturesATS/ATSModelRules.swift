import Foundation

/// How sure the model is that a rule describes what Apple's systems do.
public enum ATSConfidence: String, Sendable, Codable, CaseIterable {
    /// Apple's documentation or Apple's open-source code states it, and nothing Apple published contradicts it.
    case high
    /// One Apple source states it while another is silent or reads differently, or closed code (CFNetwork)
    /// makes the final decision. Where it matters the other reading is an option.
    case medium
    /// Reported by others or inferred; Apple has not stated it. Where it matters the other reading is an option.
    case low
}

/// The statements about Apple's behaviour the model is built from, each with its source and confidence.
///
/// Verdicts list the rules that decided them (`ATSVerdict.rules`), so a user can see which part of an answer
/// rests on Apple's code, which on Apple's prose, and which on a report. docs/ATS-MODEL.md lists every rule
/// (a test keeps the two in step). Sources under `Security/` are files of apple-oss-distributions/Security.
public enum ATSModelRule: String, Sendable, Codable, CaseIterable {
    case defaultRequirements = "default-requirements"
    case cipherSuites = "cipher-suites"
    case httpBlocked = "http-blocked"
    case exceptionEntryReplacesTopLevel = "exception-entry-replaces-top-level"
    case exceptionDomainKeys = "exception-domain-keys"
    case builtInExceptions = "built-in-exceptions"
    case exceptionIncludesSubdomains = "exception-includes-subdomains"
    case ipExceptionKeys = "ip-exception-keys"
    case localExemption = "local-exemption"
    case ios17ExternalIPs = "ios17-external-ips"
    case privateIPsAreLocal = "private-ips-are-local"
    case localNetworkingEnablesIPs = "local-networking-enables-ips"
    case arbitraryLoads = "arbitrary-loads"
    case arbitraryLoadsIgnored = "arbitrary-loads-ignored"
    case mediaAndWebContent = "media-and-web-content"
    case wrongTypeIsAbsent = "wrong-type-is-absent"
    case numbersComparedWithYes = "numbers-compared-with-yes"
    case inMediaIsNotAKey = "in-media-is-not-a-key"
    case thirdPartyKeys = "third-party-keys"
    case minimumTLSVersionKey = "minimum-tls-version-key"
    case forwardSecrecyKey = "forward-secrecy-key"
    case insecureHTTPLoadsKey = "insecure-http-loads-key"
    case certificateTransparencyKey = "certificate-transparency-key"
    case certificateTransparencyRequired = "certificate-transparency-required"
    case pinnedDomains = "pinned-domains"
    case pinnedDomainsOneLabel = "pinned-domains-one-label"
    case pinnedDomainsCaseInsensitive = "pinned-domains-case-insensitive"
    case webViewPins = "web-view-pins"
    case defaultTrust = "default-trust"
    case ios13CertificateRules = "ios13-certificate-rules"
    case publicValidity398Days = "public-validity-398-days"
    case trustOverride = "trust-override"
    case dheWithoutATS = "dhe-without-ats"
    case ios26TLS12Floor = "ios26-tls12-floor"
    case revocationNotFetched = "revocation-not-fetched"
    case stapledOCSPHonoured = "stapled-ocsp-honoured"
    case tlsFeatureIgnored = "tls-feature-ignored"
    case likelyErrorCodes = "likely-error-codes"

    static let docs = "https://developer.apple.com/documentation/bundleresources/information-property-list/nsapptransportsecurity"
    static let configuration = "Security/protocol/SecProtocolConfiguration.m"
    static let configurationTest = "Security/protocol/SecProtocolConfigurationTest.m"

    /// One sentence: what the rule says.
    public var summary: String {
        switch self {
        case .defaultRequirements:
            return "With ATS on: TLS 1.2 or later, forward-secret ECDHE suites (or TLS 1.3), a leaf key of RSA ≥ 2048 or EC ≥ 256, "
                + "SHA-256 or better signatures"
        case .cipherSuites:
            return "The TLS 1.2 suites ATS offers: Apple's current source list (ECDHE with AES-GCM, ChaCha20, AES-CBC-SHA)"
        case .httpBlocked:
            return "http:// is blocked (NSURLErrorDomain -1022) unless an exception allows insecure HTTP loads or ATS is off"
        case .exceptionEntryReplacesTopLevel:
            return "A matching NSExceptionDomains entry, even an empty one, decides alone: the top-level keys do not apply to that host"
        case .exceptionDomainKeys:
            return "Exception-domain keys are looked up exactly as written: lowercase, and a trailing dot matches only a host written with one"
        case .builtInExceptions:
            return "Apple's parser registers exception entries of its own for every app (apple.com, ls.apple.com, "
                + "gs.apple.com, geo.apple.com, is.autonavi.com, apple-mapkit.com, setup.icloud.com: HTTP allowed, no "
                + "forward secrecy, subdomains included); an app's entry under the same key replaces one"
        case .exceptionIncludesSubdomains:
            return "NSIncludesSubdomains in an exception entry reaches every subdomain, at any depth"
        case .ipExceptionKeys:
            return "From iOS 17 an exception key may be an IP address or a CIDR range; the longest matching prefix wins"
        case .localExemption:
            return "Unqualified names, .local names and local IP addresses are exempt from ATS, unless NSAllowsLocalNetworking is explicitly NO"
        case .ios17ExternalIPs:
            return "From iOS 17 (apps linked with the iOS 17 SDK) external IP addresses fall under ATS; loopback and local ones stay exempt"
        case .privateIPsAreLocal:
            return "Private-range addresses (10/8, 172.16/12, 192.168/16, fc00::/7) count as local: the system exempts a connection it "
                + "makes directly on the device's own network, which the model assumes"
        case .localNetworkingEnablesIPs:
            return "NSAllowsLocalNetworking = YES on iOS 17+ also allows IP addresses ATS would otherwise restrict"
        case .arbitraryLoads:
            return "NSAllowsArbitraryLoads = YES turns ATS off for hosts without an exception entry; default trust still applies"
        case .arbitraryLoadsIgnored:
            return "NSAllowsArbitraryLoads is ignored (iOS 10+) when NSAllowsLocalNetworking, NSAllowsArbitraryLoadsForMedia or "
                + "NSAllowsArbitraryLoadsInWebContent is present with a value of the right type, whatever that value"
        case .mediaAndWebContent:
            return "NSAllowsArbitraryLoadsForMedia and NSAllowsArbitraryLoadsInWebContent exempt only AVFoundation and WebKit loads"
        case .wrongTypeIsAbsent:
            return "A value of the wrong type (the string \"YES\") is treated as absent in every respect"
        case .numbersComparedWithYes:
            return "Booleans are read as numbers and compared with YES: <integer>1</integer> counts as YES, any other number as NO"
        case .inMediaIsNotAKey:
            return "NSAllowsArbitraryLoadsInMedia is not a key (a documentation typo, corrected 2016-11-14): it is unknown and has no effect"
        case .thirdPartyKeys:
            return "NSThirdPartyException* keys act as their plain twins on iOS 9, whose documentation listed them, and "
                + "are ignored from iOS 10: Apple's parser reads only the plain exception keys"
        case .minimumTLSVersionKey:
            return "NSExceptionMinimumTLSVersion takes TLSv1.0, TLSv1.1, TLSv1.2 or TLSv1.3; any other value leaves TLS 1.2"
        case .forwardSecrecyKey:
            return "NSExceptionRequiresForwardSecrecy = NO adds TLS_RSA_* suites and drops the leaf key-size rule"
        case .insecureHTTPLoadsKey:
            return "NSExceptionAllowsInsecureHTTPLoads allows http:// and lets the app's trust override accept an untrusted certificate"
        case .certificateTransparencyKey:
            return "Earlier systems (modelled: iOS 10–12) required Certificate Transparency for a domain whose entry sets "
                + "NSRequiresCertificateTransparency; later ones ignore the key, and NO never lifts the requirement for public certificates"
        case .certificateTransparencyRequired:
            return "iOS 12.1.1+: a leaf issued from 2018-10-16 whose chain ends in a preinstalled root needs Signed Certificate "
                + "Timestamps, whatever the Info.plist says; user-installed and app-supplied anchors are exempt"
        case .pinnedDomains:
            return "NSPinnedDomains (iOS 14+): the leaf's SPKI must be in NSPinnedLeafIdentities, a CA's in NSPinnedCAIdentities, "
                + "both when both are given; pins from every matching entry count"
        case .pinnedDomainsOneLabel:
            return "NSIncludesSubdomains in a pinned-domain entry reaches exactly one extra label (the host's direct parent)"
        case .pinnedDomainsCaseInsensitive:
            return "Pinned-domain keys are compared with the host case-insensitively, after the host's trailing dot is dropped"
        case .webViewPins:
            return "WKWebView loads do not apply the app's NSPinnedDomains: trust is evaluated in WebKit's networking process, "
                + "and the pins are read from the evaluating process's main bundle"
        case .defaultTrust:
            return "Default trust applies to every HTTPS load, ATS or not: the chain, its dates, the host name in the SAN"
        case .ios13CertificateRules:
            return "iOS 13+: RSA ≥ 2048 everywhere, no SHA-1, names from the SAN only, EKU serverAuth and ≤ 825 days for "
                + "certificates issued from 2019-07-01 (user-installed roots excepted)"
        case .publicValidity398Days:
            return "iOS 14+: certificates from preinstalled roots issued from 2020-09-01 are valid for at most 398 days"
        case .trustOverride:
            return "A URLSessionDelegate may accept an untrusted certificate only where the exception allows insecure HTTP loads "
                + "or ATS does not apply"
        case .dheWithoutATS:
            return "With ATS out of the way the client offers DHE_RSA suites too (Apple's source lists them only in a \"legacy\" group)"
        case .ios26TLS12Floor:
            return "iOS 26 refuses TLS 1.0 and 1.1 for URLSession loads whatever the exception"
        case .revocationNotFetched:
            return "ATS checks no revocation, and default trust asks no OCSP responder or CRL for a certificate that is not EV; "
                + "a revocation policy (SecPolicyCreateRevocation) makes trustd ask the OCSP responder (never a CRL), and an "
                + "unreachable one is fatal only with kSecRevocationRequirePositiveResponse"
        case .stapledOCSPHonoured:
            return "Default trust consumes an OCSP response the server staples, whatever the policy: \"revoked\" from the issuer fails trust"
        case .tlsFeatureIgnored:
            return "Apple's trust code does not know the TLS Feature extension: a must-staple certificate without a staple is not refused for it"
        case .likelyErrorCodes:
            return "The NSURLError and stream error codes are the likely ones; Apple does not document which code each violation yields"
        }
    }

    /// Where the rule comes from: a page, or a file and function of Apple's open-source Security code.
    public var source: String {
        let d = Self.docs
        let c = Self.configuration
        let t = Self.configurationTest
        switch self {
        case .defaultRequirements:
            return "https://developer.apple.com/documentation/security/preventing-insecure-network-connections; "
                + "\(c), sec_protocol_configuration_copy_transformed_options_with_ats_minimums"
        case .cipherSuites:
            return "Security/protocol/SecProtocolHelper.m, tls_ciphersuite_group_ats; the list documented from 2015 differs"
        case .httpBlocked:
            return "https://developer.apple.com/documentation/security/preventing-insecure-network-connections; "
                + "\(c), sec_protocol_configuration_tls_required_for_host"
        case .exceptionEntryReplacesTopLevel:
            return "\(c), sec_protocol_configuration_tls_required_for_host_or_address_internal (the exception is consulted first); "
                + "\(t), testExceptionRaisesSecurityRequirements"
        case .exceptionDomainKeys:
            return "\(d)/nsexceptiondomains (lowercase; the trailing-dot rule); \(c), sec_protocol_configuration_find_exception_for_host"
        case .builtInExceptions:
            return "\(c), sec_protocol_configuration_register_builtin_exceptions (called for every configuration by "
                + "sec_protocol_configuration_create_with_builder in Security/protocol/SecProtocolTypes.m, before "
                + "sec_protocol_configuration_set_ats_overrides); \(t), testBuiltInExceptions and "
                + "testExceptionOverridesBuiltInException"
        case .exceptionIncludesSubdomains:
            return "\(c), sec_protocol_configuration_find_exception_for_host (walks every parent); \(t), testIncludesSubdomains; "
                + "the current \(d)/nsexceptiondomains reads \"one additional path component\""
        case .ipExceptionKeys:
            return "\(d)/nsexceptiondomains; \(c), _find_cidr_exception; \(t), testCIDRExceptions"
        case .localExemption:
            return "\(d)/nsallowslocalnetworking; \(c), sec_protocol_configuration_tls_required_for_host_or_address_internal; "
                + "\(t), testLocalNetworkingAllowedByDefault and testLocalNetworkingDisabled"
        case .ios17ExternalIPs:
            return "iOS 17 release notes (\"ATS now requires secure connections to external IP addresses\"); "
                + "\(t), testLocalNetworkingAllowedByDefault (127.0.0.1, ::1, fe80::1 exempt; 203.0.113.1 not); "
                + "\(d)/nsallowslocalnetworking says only \"IP addresses\""
        case .privateIPsAreLocal:
            return "\(c) takes an is_direct flag that the closed CFNetwork computes; Apple's tests mark only loopback and link-local "
                + "addresses direct"
        case .localNetworkingEnablesIPs:
            return "\(d)/nsallowslocalnetworking (iOS 17: \"access to … IP addresses that they would otherwise restrict\")"
        case .arbitraryLoads:
            return "\(d)/nsallowsarbitraryloads; \(c), sec_protocol_configuration_tls_required"
        case .arbitraryLoadsIgnored:
            return "\(d)/nsallowsarbitraryloads; \(c), sec_protocol_configuration_tls_required; "
                + "\(t), testLocalNetworkingKeyOverridesAllowsArbitraryLoads and the media/web-content variants"
        case .mediaAndWebContent:
            return "\(d)/nsallowsarbitraryloadsformedia and \(d)/nsallowsarbitraryloadsinwebcontent; "
                + "\(c), sec_protocol_configuration_tls_required"
        case .wrongTypeIsAbsent:
            return "\(c), sec_protocol_configuration_set_ats_overrides (ATS_VALUE_FOR_KEY, BOOLEAN_FOR_KEY, STRING_FOR_KEY); "
                + "\(t), testInvalidATSDictionary"
        case .numbersComparedWithYes:
            return "\(c), sec_protocol_configuration_set_ats_overrides (NSNumber compared with @YES); "
                + "\(t), testGarbageValueDisablesAllowsArbitraryLoads (2 is not YES)"
        case .inMediaIsNotAKey:
            return "Information Property List Key Reference, revision history 2016-11-14; "
                + "\(c), sec_protocol_configuration_set_ats_overrides (reads NSAllowsArbitraryLoadsForMedia only)"
        case .thirdPartyKeys:
            return "Information Property List Key Reference, NSAppTransportSecurity (iOS 9: the three "
                + "NSThirdPartyException* keys listed beside their plain twins), revision history 2016-09-13 (\"Removed "
                + "all mention of the following third-party-server exception keys\", the day iOS 10 shipped); \(c), "
                + "sec_protocol_configuration_set_ats_overrides (plain keys only, from Security-59306); CFNetwork is closed"
        case .minimumTLSVersionKey:
            return "\(d)/nsexceptiondomains; \(c), sec_protocol_configuration_protocol_string_to_version; "
                + "\(t), testMinTLSVersionDisallowedStrings"
        case .forwardSecrecyKey:
            return "\(d)/nsexceptiondomains; \(c), sec_protocol_configuration_copy_transformed_options_for_host_or_address_internal "
                + "(tls_ciphersuite_group_ats_compatibility)"
        case .insecureHTTPLoadsKey:
            return "\(d)/nsexceptiondomains (\"loosen the server trust evaluation requirements\"); "
                + "\(c), sec_protocol_configuration_copy_transformed_options_for_host_or_address_internal (ats_required off)"
        case .certificateTransparencyKey:
            return "\(d)/nsexceptiondomains and https://developer.apple.com/documentation/bundleresources/information-property-list/"
                + "nsrequirescertificatetransparency (\"Earlier versions of the system used this key\"; \"The system now requires this "
                + "behavior in all cases, making the key irrelevant.\")"
        case .certificateTransparencyRequired:
            return "Apple support note 103214 (https://support.apple.com/103214: \"Publicly trusted … certificates must meet Apple's "
                + "Certificate Transparency (CT) policy to be evaluated as trusted\"); Security/OSX/sec/Security/SecPolicy.c, "
                + "SecPolicyCreateSSL_internal (kSecPolicyCheckSystemTrustedCTRequired); Security/trust/trustd/SecPolicyServer.c, "
                + "SecPolicyCheckSystemTrustedCTRequired (leaf issued on or after 2018-10-16, root in the system anchor source)"
        case .pinnedDomains:
            return "\(d)/nspinneddomains; Security/OSX/sec/Security/SecPolicy.c, SecPolicyAddATSpinningIfInfoSpecified and parseNSPinnedDomains"
        case .pinnedDomainsOneLabel:
            return "Security/OSX/sec/Security/SecPolicy.c, parseNSPinnedDomains (CopyParentDomainNameFromHostName); "
                + "\(d)/nspinneddomains (\"one additional path component\")"
        case .pinnedDomainsCaseInsensitive:
            return "Security/OSX/sec/Security/SecPolicy.c, parseNSPinnedDomains (kCFCompareCaseInsensitive, trailing dot stripped)"
        case .webViewPins:
            return "Security/OSX/sec/Security/SecPolicy.c, getNSPinnedIdentitiesForHostName (CFBundleGetMainBundle); M. Eidinger, "
                + "\"Info.plist based Certificate Pinning on iOS\" (https://blog.eidinger.info/infoplist-based-certificate-pinning-on-ios, "
                + "iOS 14 to 15.4: \"WKWebView will still connect\" despite a pin mismatch); SecPolicyCreateSSLWithATSPinning (iOS 16) "
                + "and SecPolicySetATSPinning (iOS 18) in trust/headers/SecPolicyPriv.h would let WebKit apply them; WebKit is closed here"
        case .defaultTrust:
            return "\(d)/nsallowsarbitraryloads (\"still subject to default server trust evaluation\")"
        case .ios13CertificateRules:
            return "Apple support note 103769 (https://support.apple.com/en-us/103769)"
        case .publicValidity398Days:
            return "Apple support note 102028 (https://support.apple.com/en-us/102028)"
        case .trustOverride:
            return "\(d)/nsexceptiondomains (NSExceptionAllowsInsecureHTTPLoads); "
                + "https://developer.apple.com/documentation/foundation/performing-manual-server-trust-authentication"
        case .dheWithoutATS:
            return "Security/protocol/SecProtocolHelper.m, tls_ciphersuite_group_legacy (CiphersuitesDHE); scenarios.md admits "
                + "dhe-only by arbitrary loads"
        case .ios26TLS12Floor:
            return "OWASP MASTG-TECH-0149 (https://mas.owasp.org/MASTG/techniques/ios/MASTG-TECH-0149/) and MASTG-BEST-0042 "
                + "(https://mas.owasp.org/MASTG/best-practices/MASTG-BEST-0042/); not in Apple's documentation"
        case .revocationNotFetched:
            return "Security/trust/trustd/SecRevocationServer.c, SecPathBuilderCheckRevocation (allow_fetch: EV or a revocation "
                + "method); Security/trust/trustd/SecPolicyServer.c (\"If we support CRLs\"); "
                + "https://developer.apple.com/documentation/security/secpolicycreaterevocation(_:) (needed only \"to override default "
                + "system behavior\"); https://developer.apple.com/documentation/security/ksecrevocationrequirepositiveresponse (\"best attempt\")"
        case .stapledOCSPHonoured:
            return "Security/trust/trustd/SecRevocationServer.c, SecORVCProcessStapledResponses and SecOCSPSingleResponseProcess "
                + "(CS_Revoked sets kSecPolicyCheckRevocation); https://developer.apple.com/documentation/security/sectrustsetocspresponse(_:_:); "
                + "URLSession's ClientHello carries status_request (packet capture, Apple developer forums thread 796184); CFNetwork is closed"
        case .tlsFeatureIgnored:
            return "Security/OSX/sec/Security/SecCertificate.c has no handler for id-pe-tlsfeature (1.3.6.1.5.5.7.1.24), a non-critical "
                + "extension; no Apple documentation mentions must-staple"
        case .likelyErrorCodes:
            return "https://developer.apple.com/documentation/security/preventing-insecure-network-connections/"
                + "identifying-the-source-of-blocked-connections; nscurl transcripts"
        }
    }

    /// How sure the model is of the rule: high where Apple's documentation or source says it, lower where only reports do.
    public var confidence: ATSConfidence {
        switch self {
        case .exceptionIncludesSubdomains, .ios17ExternalIPs, .localNetworkingEnablesIPs, .numbersComparedWithYes,
             .thirdPartyKeys, .certificateTransparencyKey, .cipherSuites, .likelyErrorCodes, .stapledOCSPHonoured, .tlsFeatureIgnored,
             .webViewPins:
            return .medium
        case .privateIPsAreLocal, .dheWithoutATS, .ios26TLS12Floor:
            return .low
        default:
            return .high
        }
    }

    /// Where the other reading is offered, if there is one (the `ats` commands spell these as options, listed in
    /// docs/ATS-MODEL.md).
    public var otherReading: String? {
        switch self {
        case .exceptionIncludesSubdomains: return "ATSReadings.subdomains = .oneExtraLabel"
        case .ios17ExternalIPs, .privateIPsAreLocal: return "ATSReadings.ipAddresses = .every"
        case .thirdPartyKeys: return "ATSReadings.thirdPartyKeys = .asPlainKeys or .ignored, on every profile"
        case .cipherSuites: return "ATSReadings.cipherSuites = .documented2015"
        case .dheWithoutATS: return "ATSReadings.dhe = .neverOffered"
        case .webViewPins: return "ATSReadings.webViewPins = .enforced"
        case .ios26TLS12Floor: return "ATSOSProfile.ios17, which has no such floor"
        default: return nil
        }
    }
}

/// A model rule as one verdict applied it: the rule, how sure the model is, where it comes from, and — for rules
/// with two readings — which one was used.
public struct ATSAppliedRule: Sendable, Codable, Equatable, CustomStringConvertible {
    public var id: ATSModelRule
    /// How sure the model is of the rule.
    public var confidence: ATSConfidence
    /// What the rule says, in one line.
    public var summary: String
    /// Where it comes from (Apple's documentation, Apple's source file, or the report), for a user who wants to check.
    public var source: String
    /// The reading used, for rules that have another (e.g. `everySubdomain`).
    public var reading: String?
    /// Where the other reading is offered, for rules that have one.
    public var otherReading: String?

    /// The rule with its confidence, summary and source; `reading` names which of two readings was used, if it has two.
    public init(_ rule: ATSModelRule, reading: String? = nil) {
        id = rule
        confidence = rule.confidence
        summary = rule.summary
        source = rule.source
        self.reading = reading
        otherReading = rule.otherReading
    }

    public var description: String { "\(id.rawValue) (\(confidence.rawValue)\(reading.map { ", \($0)" } ?? ""))" }
}

/// Collects applied rules in the order they were used, once each.
struct ATSRuleLog {
    private(set) var rules: [ATSAppliedRule] = []

    init(_ initial: [ATSAppliedRule] = []) {
        for rule in initial { add(rule) }
    }

    mutating func add(_ rule: ATSModelRule, reading: String? = nil) {
        add(ATSAppliedRule(rule, reading: reading))
    }

    mutating func add(_ rule: ATSAppliedRule) {
        guard !rules.contains(where: { $0.id == rule.id }) else { return }
        rules.append(rule)
    }
}
