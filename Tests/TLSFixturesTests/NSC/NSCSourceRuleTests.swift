import Foundation
import Testing
import TLSFixtures

/// The rules of AOSP's NSC code that its own tests do not exercise, one case a code path: `XmlConfigSource`'s checks,
/// `ApplicationConfig`'s host lookup, `NetworkSecurityConfig.getDefaultBuilder`'s defaults,
/// `NetworkSecurityTrustManager`'s pin check, `ManifestConfigSource`'s manifest switch, `android.util.Base64`'s
/// decoding of a pin; and the examples of Android's documentation page. `config/` is
/// `core/java/android/security/net/config/` of frameworks/base.
@Suite("NSC model: AOSP's code paths and Android's documented examples, case by case")
struct NSCSourceRuleTests {
    static let xmlSource = "config/XmlConfigSource.java"
    static let docs = "developer.android.com/privacy-and-security/security-config"
    static let pin = "zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w="
    static let android = NSCFacts.publicServer("android.com")
    static let debug = NSCApp(targetSdk: 35, build: .debug)

    static func yes(_ facts: NSCServerFacts) -> NSCCase.Probe { NSCCase.Probe(facts, connects: true) }
    static func no(_ facts: NSCServerFacts, _ step: RefusalStep = .certificate) -> NSCCase.Probe {
        NSCCase.Probe(facts, connects: false, step: step)
    }

    static func pinSet(_ pin: String, expiration: String? = nil) -> String {
        "<domain-config><domain>android.com</domain><pin-set\(expiration.map { " expiration=\"\($0)\"" } ?? "")>"
            + "<pin digest=\"SHA-256\">\(pin)</pin></pin-set></domain-config>"
    }

    static let parserCases: [NSCCase] = [
        NSCCase(name: "wrong root element", source: "\(xmlSource) parseNetworkSecurityConfig (XmlUtils.beginDocument)",
                xml: "<network-config><base-config/></network-config>", expectation: .refused(.wrongRoot)),
        NSCCase(name: "two base-configs", source: "\(xmlSource) parseNetworkSecurityConfig (\"Only one base-config\")",
                xml: nsc("<base-config/><base-config/>"), expectation: .refused(.duplicateElement)),
        NSCCase(name: "two debug-overrides, even in a release build", source: "\(xmlSource) parseNetworkSecurityConfig "
                + "(the check comes before the debuggable test)", xml: nsc("<debug-overrides/><debug-overrides/>"),
                expectation: .refused(.duplicateElement)),
        NSCCase(name: "a broken debug-overrides in a release build", source: "\(xmlSource) parseNetworkSecurityConfig "
                + "(skipCurrentTag when not debuggable)",
                xml: nsc("<debug-overrides><pin-set/></debug-overrides>"),
                expectation: .config(host: "") { $0.cleartextTrafficPermitted == false }),
        NSCCase(name: "the same one in a debug build", source: "\(xmlSource) parseConfigEntry (\"pin-set element not "
                + "allowed in debug-overrides\")", xml: nsc("<debug-overrides><pin-set/></debug-overrides>"),
                app: debug, expectation: .refused(.elementNotAllowed)),
        NSCCase(name: "a domain in debug-overrides", source: "\(xmlSource) parseConfigEntry (\"domain element not "
                + "allowed in debug-overrides\")",
                xml: nsc("<debug-overrides><domain>a.com</domain></debug-overrides>"),
                app: debug, expectation: .refused(.elementNotAllowed)),
        NSCCase(name: "a domain-config inside base-config", source: "\(xmlSource) parseConfigEntry (\"Nested "
                + "domain-config not allowed in base-config\")",
                xml: nsc("<base-config><domain-config><domain>a.com</domain></domain-config></base-config>"),
                expectation: .refused(.elementNotAllowed)),
        NSCCase(name: "two trust-anchors", source: "\(xmlSource) parseConfigEntry (\"Multiple trust-anchor elements\")",
                xml: nsc("<base-config><trust-anchors/><trust-anchors/></base-config>"),
                expectation: .refused(.duplicateElement)),
        NSCCase(name: "two pin-sets", source: "\(xmlSource) parseConfigEntry (\"Multiple pin-set elements\")",
                xml: nsc("<domain-config><domain>a.com</domain><pin-set/><pin-set/></domain-config>"),
                expectation: .refused(.duplicateElement)),
        NSCCase(name: "a domain-config with no domain", source: "\(xmlSource) parseConfigEntry (\"No domain elements "
                + "in domain-config\")", xml: nsc("<domain-config cleartextTrafficPermitted=\"true\"/>"),
                expectation: .refused(.noDomain)),
        NSCCase(name: "an empty domain", source: "\(xmlSource) parseDomain (\"Domain name missing\")",
                xml: nsc("<domain-config><domain></domain></domain-config>"), expectation: .refused(.invalidDomain)),
        NSCCase(name: "an element inside a domain", source: "\(xmlSource) parseDomain (\"domain contains additional "
                + "elements\")", xml: nsc("<domain-config><domain>a.com<b/></domain></domain-config>"),
                expectation: .refused(.invalidDomain)),
        NSCCase(name: "a domain twice, in other case and with includeSubdomains", source: "\(xmlSource) parseDomain "
                + "(lowercased with Locale.US; \"has already been specified\")",
                xml: nsc("<domain-config><domain>Android.COM</domain></domain-config>"
                         + "<domain-config><domain includeSubdomains=\"true\">android.com</domain></domain-config>"),
                expectation: .refused(.duplicateDomain)),
        NSCCase(name: "a domain in a nested config repeats its parent's", source: "\(xmlSource) parseDomain (one "
                + "seenDomains set for the whole file)",
                xml: nsc("<domain-config><domain>a.com</domain><domain-config><domain>a.com</domain></domain-config>"
                         + "</domain-config>"), expectation: .refused(.duplicateDomain)),
        NSCCase(name: "digest in lowercase", source: "config/Pin.java isSupportedDigestAlgorithm (equalsIgnoreCase)",
                xml: nsc("<domain-config><domain>android.com</domain><pin-set><pin digest=\"sha-256\">\(pin)</pin>"
                         + "</pin-set></domain-config>"), expectation: .connections([yes(android)])),
        NSCCase(name: "SHA-512 is not supported", source: "config/Pin.java isSupportedDigestAlgorithm (SHA-256 only)",
                xml: nsc("<domain-config><domain>a.com</domain><pin-set><pin digest=\"SHA-512\">\(pin)</pin>"
                         + "</pin-set></domain-config>"), expectation: .refused(.invalidPin)),
        NSCCase(name: "a pin that is not base64", source: "\(xmlSource) parsePin (\"Invalid pin digest\"); "
                + "android.util.Base64 (a lone '=' after one character)",
                xml: nsc(pinSet("z=")), expectation: .refused(.invalidPin)),
        NSCCase(name: "a pin of 31 bytes", source: "\(xmlSource) parsePin (\"digest length … does not match\")",
                xml: nsc(pinSet("zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2")), expectation: .refused(.invalidPin)),
        NSCCase(name: "a pin without its padding", source: "android.util.Base64 Decoder (padding optional)",
                xml: nsc(pinSet("zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w")),
                expectation: .connections([yes(android)])),
        NSCCase(name: "a pin broken across lines", source: "android.util.Base64 Decoder (characters outside the "
                + "alphabet are skipped)", xml: nsc(pinSet("zCTnfLwLKbS9S2sbp+uF\n    z4KZOocFvXxkV06Ce9O5M2w=")),
                expectation: .connections([yes(android)])),
        NSCCase(name: "a pin with an element after its text", source: "\(xmlSource) parsePin (\"pin contains "
                + "additional elements\")", xml: nsc(pinSet("\(pin)<x/>")), expectation: .refused(.invalidPin)),
        NSCCase(name: "expiration that is not a day", source: "\(xmlSource) parsePinSet (SimpleDateFormat "
                + "yyyy-MM-dd, setLenient(false))", xml: nsc(pinSet(pin, expiration: "2027-02-30")),
                expectation: .refused(.invalidExpiration)),
        NSCCase(name: "expiration without dashes", source: "\(xmlSource) parsePinSet", xml: nsc(pinSet(pin,
                expiration: "20270101")), expectation: .refused(.invalidExpiration)),
        NSCCase(name: "expiration with one-digit month and day, and text after", source: "java.text.SimpleDateFormat "
                + "(numbers of any width; DateFormat.parse(String) ignores what follows)",
                xml: nsc(pinSet("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", expiration: "2026-5-1T12:00")),
                expectation: .connections([yes(android)])),
        NSCCase(name: "the expiration day itself", source: "config/NetworkSecurityTrustManager.java checkPins "
                + "(currentTimeMillis() > expirationTime, which is that day's local midnight)",
                xml: nsc(pinSet("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", expiration: "2026-06-01")),
                expectation: .connections([yes(android)])),
        NSCCase(name: "the day before it", source: "config/NetworkSecurityTrustManager.java checkPins",
                xml: nsc(pinSet("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", expiration: "2026-06-02")),
                expectation: .connections([no(android)])),
        NSCCase(name: "certificates without src", source: "\(xmlSource) parseCertificatesEntry (\"missing src\")",
                xml: nsc("<base-config><trust-anchors><certificates/></trust-anchors></base-config>"),
                expectation: .refused(.invalidCertificates)),
        NSCCase(name: "src in capitals", source: "\(xmlSource) parseCertificatesEntry (\"system\".equals, "
                + "case-sensitive)", xml: nsc("<base-config><trust-anchors><certificates src=\"SYSTEM\"/>"
                + "</trust-anchors></base-config>"), expectation: .refused(.invalidCertificates)),
        NSCCase(name: "src=\"wfa\"", source: "\(xmlSource) parseCertificatesEntry (WfaCertificateSource)",
                xml: nsc("<base-config><trust-anchors><certificates src=\"wfa\"/></trust-anchors></base-config>"),
                expectation: .config(host: "") { $0.trustAnchors == [NSCCertificates(.wfa)] }),
        NSCCase(name: "unknown elements are skipped", source: "\(xmlSource) (XmlUtils.skipCurrentTag for every "
                + "element it does not know)", xml: nsc("<base-config cleartextTrafficPermitted=\"true\"><extra/>"
                + "<trust-anchors><x/><certificates src=\"system\"><y/></certificates></trust-anchors></base-config>"
                + "<unknown/>"), expectation: .connections([yes(android), yes(NSCFacts.cleartext("a.com"))])),
        NSCCase(name: "cleartextTrafficPermitted=\"no\" permits cleartext", source: "\(xmlSource) parseConfigEntry "
                + "(getAttributeBooleanValue(i, DEFAULT_CLEARTEXT_TRAFFIC_PERMITTED)); aapt2 ParseBool keeps "
                + "\"no\" text",
                xml: nsc("<base-config cleartextTrafficPermitted=\"no\"/>"),
                expectation: .connections([yes(NSCFacts.cleartext("a.com"))])),
        NSCCase(name: "cleartextTrafficPermitted=\"FALSE\" is a boolean", source: "aapt2 ResourceUtils::ParseBool "
                + "(true/TRUE/True, false/FALSE/False)", xml: nsc("<base-config cleartextTrafficPermitted=\"FALSE\"/>"),
                app: NSCApp(targetSdk: 27),
                expectation: .connections([no(NSCFacts.cleartext("a.com"), .beforeConnecting)])),
        NSCCase(name: "includeSubdomains=\"yes\" is false", source: "\(xmlSource) parseDomain "
                + "(getAttributeBooleanValue(null, \"includeSubdomains\", false))",
                xml: nsc("<base-config><trust-anchors/></base-config><domain-config><domain includeSubdomains=\"yes\">"
                         + "android.com</domain><trust-anchors><certificates src=\"system\"/></trust-anchors>"
                         + "</domain-config>"),
                expectation: .connections([yes(android), no(NSCFacts.publicServer("developer.android.com"))])),
        NSCCase(name: "debug-overrides' cleartext attribute has no effect", source: "\(xmlSource) "
                + "addDebugAnchorsIfNeeded (only the debug config's certificate entries are used)",
                xml: nsc("<debug-overrides cleartextTrafficPermitted=\"true\"/>"), app: debug,
                expectation: .connections([no(NSCFacts.cleartext("a.com"), .beforeConnecting)])),
        NSCCase(name: "debug anchors join a domain that states its own", source: "\(xmlSource) addDebugAnchorsIfNeeded",
                xml: nsc("<domain-config><domain>example.com</domain><trust-anchors><certificates src=\"@raw/my_ca\"/>"
                         + "</trust-anchors></domain-config><debug-overrides><trust-anchors>"
                         + "<certificates src=\"user\"/></trust-anchors></debug-overrides>"), app: debug,
                expectation: .connections([yes(NSCFacts.userCAServer("example.com")),
                                           yes(NSCFacts.bundledCAServer("example.com"))])),
        NSCCase(name: "a user CA overriding pins in debug-overrides", source: "\(xmlSource) parseConfigEntry "
                + "(defaultOverridePins = configType == CONFIG_DEBUG)",
                xml: nsc("<domain-config><domain>example.com</domain><pin-set><pin digest=\"SHA-256\">\(pin)</pin>"
                         + "</pin-set><trust-anchors><certificates src=\"user\"/></trust-anchors></domain-config>"
                         + "<debug-overrides><trust-anchors><certificates src=\"user\"/></trust-anchors>"
                         + "</debug-overrides>"), app: debug,
                expectation: .connections([yes(NSCFacts.userCAServer("example.com"))])),
        NSCCase(name: "the same pins in a release build", source: "config/NetworkSecurityTrustManager.java checkPins",
                xml: nsc("<domain-config><domain>example.com</domain><pin-set><pin digest=\"SHA-256\">\(pin)</pin>"
                         + "</pin-set><trust-anchors><certificates src=\"user\"/></trust-anchors></domain-config>"
                         + "<debug-overrides><trust-anchors><certificates src=\"user\"/></trust-anchors>"
                         + "</debug-overrides>"),
                expectation: .connections([no(NSCFacts.userCAServer("example.com"))])),
    ]

    static let lookupCases: [NSCCase] = [
        NSCCase(name: "the host's case and trailing dot", source: "config/ApplicationConfig.java getConfigForHostname "
                + "(toLowerCase(Locale.US), a trailing '.' dropped)",
                xml: nsc("<base-config><trust-anchors/></base-config><domain-config><domain>android.com</domain>"
                         + "<trust-anchors><certificates src=\"system\"/></trust-anchors></domain-config>"),
                expectation: .connections([yes(NSCFacts.publicServer("ANDROID.com.")),
                                           no(NSCFacts.publicServer("www.android.com"))])),
        NSCCase(name: "the longest includeSubdomains entry wins", source: "config/ApplicationConfig.java "
                + "getConfigForHostname (bestMatch by hostname length)",
                xml: nsc("<domain-config cleartextTrafficPermitted=\"true\"><domain includeSubdomains=\"true\">"
                         + "example.com</domain></domain-config><domain-config cleartextTrafficPermitted=\"false\">"
                         + "<domain includeSubdomains=\"true\">api.example.com</domain></domain-config>"),
                expectation: .connections([yes(NSCFacts.cleartext("www.example.com")),
                                           no(NSCFacts.cleartext("v1.api.example.com"), .beforeConnecting)])),
        NSCCase(name: "a suffix is not a subdomain", source: "config/ApplicationConfig.java getConfigForHostname (the "
                + "character before the suffix must be '.')",
                xml: nsc("<domain-config cleartextTrafficPermitted=\"true\"><domain includeSubdomains=\"true\">"
                         + "example.com</domain></domain-config>"),
                expectation: .connections([no(NSCFacts.cleartext("badexample.com"), .beforeConnecting)])),
        NSCCase(name: "an IP address is matched as text", source: "config/ApplicationConfig.java getConfigForHostname "
                + "(String.equals; no address ranges)",
                xml: nsc("<domain-config cleartextTrafficPermitted=\"true\"><domain>10.0.2.2</domain></domain-config>"),
                expectation: .connections([yes(NSCFacts.cleartext("10.0.2.2")),
                                           no(NSCFacts.cleartext("10.0.2.3"), .beforeConnecting)])),
        NSCCase(name: "cleartext off from target SDK 28", source: "config/NetworkSecurityConfig.java getDefaultBuilder "
                + "(targetSdkVersion < P)", xml: nsc(""), app: NSCApp(targetSdk: 28),
                expectation: .connections([no(NSCFacts.cleartext("a.com"), .beforeConnecting)])),
        NSCCase(name: "cleartext on at target SDK 27", source: "config/NetworkSecurityConfig.java getDefaultBuilder",
                xml: nsc(""), app: NSCApp(targetSdk: 27),
                expectation: .connections([yes(NSCFacts.cleartext("a.com"))])),
        NSCCase(name: "no config file: usesCleartextTraffic=\"true\"", source: "config/ManifestConfigSource.java "
                + "getConfigSource (DefaultConfigSource with FLAG_USES_CLEARTEXT_TRAFFIC)",
                app: NSCApp(targetSdk: 35, usesCleartextTraffic: true),
                expectation: .connections([yes(NSCFacts.cleartext("a.com"))])),
        NSCCase(name: "a config file: usesCleartextTraffic is ignored", source: "ApplicationInfo.FLAG_USES_CLEARTEXT_"
                + "TRAFFIC (\"ignored on Android N and above if an Android Network Security Config is present\")",
                xml: nsc(""), app: NSCApp(targetSdk: 35, usesCleartextTraffic: true),
                expectation: .connections([no(NSCFacts.cleartext("a.com"), .beforeConnecting)])),
        NSCCase(name: "no config file, no attribute, target 27", source: "ParsingPackageUtils (usesCleartextTraffic "
                + "defaults to targetSdkVersion < P)", app: NSCApp(targetSdk: 27),
                expectation: .connections([yes(NSCFacts.cleartext("a.com"))])),
        NSCCase(name: "pins on the intermediate, not the leaf", source: "config/NetworkSecurityTrustManager.java "
                + "checkPins (every certificate of the trusted chain, anchor included)",
                xml: nsc(pinSet(NSCFacts.g2Pin)), expectation: .connections([yes(android)])),
        NSCCase(name: "pins do not relax trust", source: "config/NetworkSecurityTrustManager.java checkServerTrusted "
                + "(the delegate first, then checkPins)",
                xml: nsc("<domain-config><domain>example.com</domain><pin-set><pin digest=\"SHA-256\">\(pin)</pin>"
                         + "</pin-set></domain-config>"),
                expectation: .connections([no(NSCFacts.bundledCAServer("example.com", pins: [pin]))])),
    ]

    /// The examples of Android's "Network security configuration" page, each as the page describes its effect.
    static let documentationCases: [NSCCase] = [
        NSCCase(name: "Configure a custom CA", source: "\(docs)#ConfigCustom",
                xml: nsc("<domain-config><domain includeSubdomains=\"true\">example.com</domain><trust-anchors>"
                         + "<certificates src=\"@raw/my_ca\"/></trust-anchors></domain-config>"),
                expectation: .connections([yes(NSCFacts.bundledCAServer("api.example.com")),
                                           no(NSCFacts.publicServer("example.com"))])),
        NSCCase(name: "Limit the set of trusted CAs", source: "\(docs)#LimitingCas (the domain trusts only its CA; "
                + "other hosts keep the system's)",
                xml: nsc("<domain-config><domain includeSubdomains=\"true\">secure.example.com</domain>"
                         + "<domain includeSubdomains=\"true\">cdn.example.com</domain><trust-anchors>"
                         + "<certificates src=\"@raw/trusted_roots\"/></trust-anchors></domain-config>"),
                expectation: .connections([no(NSCFacts.publicServer("secure.example.com")),
                                           yes(NSCFacts.bundledCAServer("img.cdn.example.com",
                                                                        resource: "raw/trusted_roots")),
                                           yes(NSCFacts.publicServer("example.com"))])),
        NSCCase(name: "Trust additional CAs", source: "\(docs)#TrustingAdditionalCas",
                xml: nsc("<base-config><trust-anchors><certificates src=\"@raw/extracas\"/>"
                         + "<certificates src=\"system\"/></trust-anchors></base-config>"),
                expectation: .connections([yes(NSCFacts.publicServer("example.com")),
                                           yes(NSCFacts.bundledCAServer("intranet.example",
                                                                        resource: "raw/extracas"))])),
        NSCCase(name: "Configure CAs for debugging: debug build", source: "\(docs)#TrustingDebugCa",
                xml: nsc("<debug-overrides><trust-anchors><certificates src=\"@raw/debug_cas\"/></trust-anchors>"
                         + "</debug-overrides>"), app: debug,
                expectation: .connections([yes(NSCFacts.bundledCAServer("debug.example", resource: "raw/debug_cas"))])),
        NSCCase(name: "Configure CAs for debugging: release build", source: "\(docs)#TrustingDebugCa (\"only when "
                + "android:debuggable is true\")",
                xml: nsc("<debug-overrides><trust-anchors><certificates src=\"@raw/debug_cas\"/></trust-anchors>"
                         + "</debug-overrides>"),
                expectation: .connections([no(NSCFacts.bundledCAServer("debug.example", resource: "raw/debug_cas"))])),
        NSCCase(name: "Opt out of cleartext traffic", source: "\(docs)#CleartextTrafficPermitted",
                xml: nsc("<domain-config cleartextTrafficPermitted=\"false\"><domain includeSubdomains=\"true\">"
                         + "secure.example.com</domain></domain-config>"), app: NSCApp(targetSdk: 27),
                expectation: .connections([no(NSCFacts.cleartext("www.secure.example.com"), .beforeConnecting),
                                           yes(NSCFacts.cleartext("example.com"))])),
        NSCCase(name: "Pin certificates", source: "\(docs)#CertificatePinning (a pin-set with a backup pin and an "
                + "expiration; pins checked until then)",
                xml: nsc("<domain-config><domain includeSubdomains=\"true\">android.com</domain>"
                         + "<pin-set expiration=\"2030-01-01\"><pin digest=\"SHA-256\">\(pin)</pin>"
                         + "<pin digest=\"SHA-256\">fwza0LRMXouZHRC8Ei+4PyuldPDcf3UKgO/04cDM1oE=</pin></pin-set>"
                         + "</domain-config>"),
                expectation: .connections([yes(android), no(NSCFacts.publicServer("www.android.com", pins: ["x"]))])),
        NSCCase(name: "Configuration inheritance", source: "\(docs)#ConfigInheritance (\"values that are not set "
                + "in a specific entry are inherited\": cleartext from base-config; trust-anchors replace the base's)",
                xml: nsc("<base-config cleartextTrafficPermitted=\"false\"><trust-anchors>"
                         + "<certificates src=\"system\"/></trust-anchors></base-config><domain-config>"
                         + "<domain>insecure.example.com</domain><domain>insecure.cdn.example.com</domain>"
                         + "<trust-anchors><certificates src=\"@raw/my_ca\"/></trust-anchors></domain-config>"),
                app: NSCApp(targetSdk: 27),
                expectation: .connections([no(NSCFacts.cleartext("insecure.example.com"), .beforeConnecting),
                                           yes(NSCFacts.bundledCAServer("insecure.cdn.example.com")),
                                           no(NSCFacts.publicServer("insecure.example.com"))])),
        NSCCase(name: "Trust user-added CAs while debugging", source: "\(docs)#TrustingDebugCa (<certificates "
                + "src=\"user\"/> in debug-overrides), with target SDK 24's default",
                xml: nsc("<debug-overrides><trust-anchors><certificates src=\"user\"/></trust-anchors>"
                         + "</debug-overrides>"), app: NSCApp(targetSdk: 24, build: .debug),
                expectation: .connections([yes(NSCFacts.userCAServer("example.com"))])),
    ]

    @Test("XmlConfigSource, NetworkSecurityTrustManager and Base64: each check", arguments: parserCases)
    func parserRules(_ testCase: NSCCase) throws {
        try testCase.check()
    }

    @Test("ApplicationConfig, the defaults, the manifest switch and checkPins", arguments: lookupCases)
    func lookupRules(_ testCase: NSCCase) throws {
        try testCase.check()
    }

    @Test("the documentation's examples", arguments: documentationCases)
    func documentation(_ testCase: NSCCase) throws {
        try testCase.check()
    }

    @Test("at least 60 hand-written cases, each citing its source")
    func caseCount() {
        let all = NSCAOSPTests.xmlConfigCases + NSCAOSPTests.programmaticCases + Self.parserCases + Self.lookupCases
            + Self.documentationCases
        #expect(all.count >= 60, "\(all.count) cases")
        #expect(Set(all.map(\.name)).count == all.count, "two cases share a name")
        for testCase in all { #expect(!testCase.source.isEmpty, "\(testCase.name) cites nothing") }
    }
}
