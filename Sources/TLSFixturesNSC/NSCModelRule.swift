import Foundation

/// How sure the model is that a rule describes what Android does.
public enum NSCConfidence: String, Sendable, Codable, CaseIterable {
    /// AOSP's source (or OkHttp's) states it and Android's documentation agrees or is silent.
    case high
    /// One source states it while the behaviour also depends on something the model does not see (the build tools'
    /// compilation of the file, a device vendor's build), or the documentation and the code differ in detail.
    case medium
    /// Reported by others or inferred.
    case low
}

/// The statements about Android the NSC model is built from, each with its source and confidence. Verdicts list the
/// rules that decided them (`NSCVerdict.rules`); docs/android.md lists every one (a test keeps the two in step).
///
/// `config/` is `core/java/android/security/net/config/` of AOSP's frameworks/base
/// (aosp-mirror/platform_frameworks_base); "docs" is
/// <https://developer.android.com/privacy-and-security/security-config>.
public enum NSCModelRule: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case platformDefaults = "platform-defaults"
    case manifestCleartext = "manifest-cleartext"
    case documentStructure = "document-structure"
    case elementPlacement = "element-placement"
    case domainNames = "domain-names"
    case mostSpecificDomain = "most-specific-domain"
    case hostNormalization = "host-normalization"
    case inheritance = "inheritance"
    case booleanAttributes = "boolean-attributes"
    case certificateSources = "certificate-sources"
    case overridePins = "override-pins"
    case debugOverrides = "debug-overrides"
    case debugResource = "debug-resource"
    case pinDigests = "pin-digests"
    case pinSetExpiration = "pin-set-expiration"
    case pinsAnyInChain = "pins-any-in-chain"
    case pinsAfterTrust = "pins-after-trust"
    case trustAnchorRequired = "trust-anchor-required"
    case cleartextBeforeConnecting = "cleartext-before-connecting"
    case okHttpTLSVersions = "okhttp-tls-versions"
    case platformTLSVersions = "platform-tls-versions"
    case tls12CipherSuites = "tls12-cipher-suites"
    case hostnameAfterHandshake = "hostname-after-handshake"
    case hostnameInSANOnly = "hostname-in-san-only"
    case chainStrength = "chain-strength"
    case stackAsScenario = "stack-as-scenario"

    static let config = "config/"
    static let docs = "docs"

    /// One sentence: what the rule says.
    public var summary: String {
        switch self {
        case .platformDefaults:
            return "Without a setting: cleartext allowed below target SDK 28, not from 28; the system CAs trusted, the "
                + "user-installed ones too only below target SDK 24; no pins"
        case .manifestCleartext:
            return "android:usesCleartextTraffic counts only when the app names no Network Security Config; left out, "
                + "it is true below target SDK 28"
        case .documentStructure:
            return "The root is <network-security-config>; one <base-config> and one <debug-overrides> at most; an "
                + "element Android does not know is skipped; any other error stops the app at its first connection"
        case .elementPlacement:
            return "<domain>, <pin-set> and nested <domain-config> only in a <domain-config>; one <trust-anchors> and "
                + "one <pin-set> per element; a <domain-config> needs a <domain>"
        case .domainNames:
            return "A <domain> is its text trimmed and lowercased, with no element inside; each name at most once in "
                + "the file, includeSubdomains or not"
        case .mostSpecificDomain:
            return "An exact <domain> wins, then the longest includeSubdomains entry the host is a subdomain of, then "
                + "base-config; an IP address is matched as text"
        case .hostNormalization:
            return "The host is lowercased and a trailing dot dropped before the lookup"
        case .inheritance:
            return "A value a config leaves out comes from its enclosing domain-config, then base-config, then the "
                + "platform defaults, wherever base-config stands in the file; <trust-anchors> and <pin-set> replace "
                + "the inherited ones whole"
        case .booleanAttributes:
            return "true/false (also TRUE, True, FALSE, False) are booleans; any other value is read as the "
                + "attribute's default: cleartextTrafficPermitted=\"no\" permits cleartext"
        case .certificateSources:
            return "<certificates src> is system, user, wfa or a resource (@raw/NAME, PEM or DER); anything else, "
                + "or no src, stops the app"
        case .overridePins:
            return "A chain ending at an anchor with overridePins=\"true\" skips the pin check; where one certificate "
                + "is in two entries, the overriding one counts"
        case .debugOverrides:
            return "<debug-overrides> applies only to debuggable builds: its trust anchors (overridePins true unless "
                + "set) join every config's; nothing else in it has an effect; a release build never reads it"
        case .debugResource:
            return "A debuggable build without <debug-overrides> reads the one in NAME_debug.xml beside the config"
        case .pinDigests:
            return "A <pin> is SHA-256 (any case) of the SubjectPublicKeyInfo, base64 as android.util.Base64 reads it "
                + "(whitespace and stray characters skipped, padding optional), exactly 32 bytes; else the app stops"
        case .pinSetExpiration:
            return "expiration is a yyyy-MM-dd day, read strictly; from the device's local midnight starting that day "
                + "the pins are not enforced (the connection is judged without them)"
        case .pinsAnyInChain:
            return "One pin matching any certificate of the trusted chain, leaf to anchor, is enough"
        case .pinsAfterTrust:
            return "Pins are checked after the chain is trusted, in the trust manager, during the handshake: a pin "
                + "failure ends the handshake"
        case .trustAnchorRequired:
            return "The chain must end at a certificate of the config's trust anchors (\"Trust anchor for "
                + "certification path not found\")"
        case .cleartextBeforeConnecting:
            return "An http:// request to a host whose config denies cleartext fails before connecting "
                + "(OkHttp: UnknownServiceException \"CLEARTEXT communication to HOST not permitted by network "
                + "security policy\")"
        case .okHttpTLSVersions:
            return "OkHttp 3.13 and later offer TLS 1.2 and 1.3 only (ConnectionSpec.MODERN_TLS); TLS 1.0 and 1.1 need "
                + "COMPATIBLE_TLS in code, no config key"
        case .platformTLSVersions:
            return "The platform speaks TLS 1.3 from Android 10 (API 29); apps targeting Android 15 (API 35) on it get "
                + "no TLS 1.0 or 1.1 at all"
        case .tls12CipherSuites:
            return "For TLS 1.2 the client offers what both OkHttp and Conscrypt enable: ECDHE with AES-GCM or "
                + "ChaCha20, ECDHE-RSA with AES-CBC-SHA, RSA key exchange with AES-GCM or AES-CBC-SHA; never "
                + "finite-field DHE, 3DES, RC4 or NULL"
        case .hostnameAfterHandshake:
            return "OkHttp checks the host name after the handshake (OkHostnameVerifier): a wrong name ends the "
                + "connection without a request, not the handshake"
        case .hostnameInSANOnly:
            return "OkHttp looks for a DNS host name in the leaf's subjectAltName only: a leaf without one fails the "
                + "host-name check, whatever its common name"
        case .chainStrength:
            return "Conscrypt refuses a chain with an RSA key under 1024 bits or an MD5 signature, and from Android 10 "
                + "(API 29) one with a SHA-1 signature; an RSA-1024 leaf passes"
        case .stackAsScenario:
            return "What the model does not judge (validity dates, signature and key strength, name constraints) is "
                + "taken as the scenario file states it: OpenSSL's verify trusting the device's roots, or "
                + "expect.android where Android differs"
        }
    }

    /// Where the rule comes from: a file and function of AOSP or OkHttp, or a page.
    public var source: String {
        let c = Self.config
        let d = Self.docs
        switch self {
        case .platformDefaults:
            return "\(c)NetworkSecurityConfig.java, getDefaultBuilder; \(d), \"Customize trusted CAs\"; "
                + "NetworkSecurityConfigTests.testUserAddedCaOptIn"
        case .manifestCleartext:
            return "\(c)ManifestConfigSource.java, getConfigSource; ParsingPackageUtils (usesCleartextTraffic defaults "
                + "to targetSdkVersion < P); ApplicationInfo.FLAG_USES_CLEARTEXT_TRAFFIC (\"ignored on Android N and "
                + "above if an Android Network Security Config is present\")"
        case .documentStructure:
            return "\(c)XmlConfigSource.java, parseNetworkSecurityConfig (XmlUtils.beginDocument, skipCurrentTag); "
                + "XmlConfigTests.testBadConfig0–5"
        case .elementPlacement:
            return "\(c)XmlConfigSource.java, parseConfigEntry; bad_config4.xml, bad_config5.xml"
        case .domainNames:
            return "\(c)XmlConfigSource.java, parseDomain; bad_config3.xml; domain_whitespace.xml"
        case .mostSpecificDomain:
            return "\(c)ApplicationConfig.java, getConfigForHostname; NetworkSecurityConfigTests."
                + "testMostSpecificNetworkSecurityConfig, testSubdomainIncluded; \(d), \"domain-config\""
        case .hostNormalization:
            return "\(c)ApplicationConfig.java, getConfigForHostname"
        case .inheritance:
            return "\(c)NetworkSecurityConfig.java, Builder.getEffective…; XmlConfigSource.java (a base-config after "
                + "a domain-config still parents it); XmlConfigTests.testNestedDomainConfigs; \(d), \"Configuration "
                + "inheritance behavior\""
        case .booleanAttributes:
            return "\(c)XmlConfigSource.java, parseConfigEntry (getAttributeBooleanValue with "
                + "DEFAULT_CLEARTEXT_TRAFFIC_PERMITTED); android.content.res.XmlBlock.getAttributeBooleanValue (the "
                + "default for a value that is not a boolean); aapt2 ResourceUtils::ParseBool"
        case .certificateSources:
            return "\(c)XmlConfigSource.java, parseCertificatesEntry; ResourceCertificateSource.java; \(d), "
                + "\"trust-anchors\""
        case .overridePins:
            return "\(c)NetworkSecurityConfig.java (constructor's sort, getTrustAnchors); "
                + "NetworkSecurityTrustManager.java, isPinningEnforced; XmlConfigTests.testOverridesPins, "
                + "testDebugDedup"
        case .debugOverrides:
            return "\(c)XmlConfigSource.java, parseNetworkSecurityConfig and addDebugAnchorsIfNeeded; XmlConfigTests."
                + "testDebugOverridesDisabled, testBasicDebugOverrides, testDebugOverridesWithDomain; \(d), "
                + "\"Debug-only overrides\""
        case .debugResource:
            return "\(c)XmlConfigSource.java, parseDebugOverridesResource; XmlConfigTests.testExtraDebugResource, "
                + "testExtraDebugResourceIgnored"
        case .pinDigests:
            return "\(c)XmlConfigSource.java, parsePin; Pin.java, isSupportedDigestAlgorithm; android.util.Base64 "
                + "(Decoder.process); bad_config0.xml, bad_config1.xml, bad_config2.xml"
        case .pinSetExpiration:
            return "\(c)XmlConfigSource.java, parsePinSet (SimpleDateFormat(\"yyyy-MM-dd\"), setLenient(false)); "
                + "NetworkSecurityTrustManager.java, checkPins; XmlConfigTests.testExpiredPin; \(d), \"pin-set\""
        case .pinsAnyInChain:
            return "\(c)NetworkSecurityTrustManager.java, checkPins; \(d), \"Pin certificates\""
        case .pinsAfterTrust:
            return "\(c)NetworkSecurityTrustManager.java, checkServerTrusted (the delegate, then checkPins); "
                + "RootTrustManager.java"
        case .trustAnchorRequired:
            return "\(c)NetworkSecurityTrustManager.java (a TrustManagerImpl over the config's anchors); "
                + "XmlConfigTests.testEmptyAnchors, testBasicDomainConfig"
        case .cleartextBeforeConnecting:
            return "OkHttp 3.13 RealConnection.connect (NetworkSecurityPolicy.isCleartextTrafficPermitted(host)); "
                + "\(d), \"Opt out of cleartext traffic\""
        case .okHttpTLSVersions:
            return "OkHttp 3.13.1 ConnectionSpec.MODERN_TLS (tlsVersions TLS_1_3, TLS_1_2), the default of "
                + "OkHttpClient.connectionSpecs"
        case .platformTLSVersions:
            return "developer.android.com, Android 10 behavior changes (\"TLS 1.3 enabled by default\"); Android 15 "
                + "behavior changes for apps targeting it (\"Restricted TLS versions\")"
        case .tls12CipherSuites:
            return "OkHttp 3.13.1 ConnectionSpec.APPROVED_CIPHER_SUITES (enabled where the socket supports them); "
                + "Conscrypt NativeCrypto.DEFAULT_X509_CIPHER_SUITES"
        case .hostnameAfterHandshake:
            return "OkHttp 3.13 RealConnection.connectTls (\"Hostname … not verified\" after startHandshake)"
        case .hostnameInSANOnly:
            return "OkHttp 3.13 OkHostnameVerifier.verifyHostname (getSubjectAltNames only)"
        case .chainStrength:
            return "Conscrypt ChainStrengthAnalyzer (MIN_RSA_MODULUS_LEN_BITS 1024, SIGNATURE_ALGORITHM_OID_BLACKLIST "
                + "with sha1WithRSAEncryption and ecdsa-with-SHA1 in Android 10's); Android 10 behavior changes "
                + "(\"SHA-1 certificate signatures not trusted in TLS\")"
        case .stackAsScenario:
            return "the scenario files (expect.verify, expect.handshake.verifyTrustingDeviceRoots, expect.android)"
        }
    }

    /// How sure the model is of it.
    public var confidence: NSCConfidence {
        switch self {
        case .booleanAttributes, .platformTLSVersions: return .medium
        case .stackAsScenario: return .low
        default: return .high
        }
    }

    /// `id (confidence)`.
    public var description: String { "\(rawValue) (\(confidence.rawValue))" }
}
