import Foundation
import Testing
import TLSFixtures

/// AOSP's own tests of the Network Security Config, as statements about the model: every test of
/// `tests/NetworkSecurityConfigTest/src/android/security/net/config/XmlConfigTests.java` and
/// `NetworkSecurityConfigTests.java` (aosp-mirror/platform_frameworks_base), each with its `res/xml` file written out,
/// and where AOSP asserts a connection to android.com or google.com, that server as facts (`NSCFacts`).
///
/// What cannot be a case, and why:
/// - `testTrustManagerKeystore`: the provider's `TrustManagerFactory` plumbing, not a config rule.
/// - `testConfigBuilderParentLoop`: a `Builder` API guard; a file cannot make a loop.
/// - The `empty_trust`, `extra_debug_resource` and `bad_extra_debug_resource` main files are not in the stored tree;
///   their content is what the tests' assertions need (an empty `<trust-anchors>` in `<base-config>`), said where used.
@Suite("AOSP's NetworkSecurityConfigTest, test by test")
struct NSCAOSPTests {
    static let xmlTests = "tests/NetworkSecurityConfigTest/…/XmlConfigTests.java"
    static let programmaticTests = "tests/NetworkSecurityConfigTest/…/NetworkSecurityConfigTests.java"

    static let android = NSCFacts.publicServer("android.com")
    static let developer = NSCFacts.publicServer("developer.android.com")
    static let google = NSCFacts.publicServer("google.com", pins: ["googleChainPin"])
    static let debug = NSCApp(targetSdk: 35, build: .debug)

    static func yes(_ facts: NSCServerFacts) -> NSCCase.Probe { NSCCase.Probe(facts, connects: true) }
    static func no(_ facts: NSCServerFacts, _ step: RefusalStep = .certificate) -> NSCCase.Probe {
        NSCCase.Probe(facts, connects: false, step: step)
    }

    /// res/xml/empty_trust.xml, as testEmptyAnchors needs it: a base-config that trusts nothing.
    static let emptyTrust = nsc("<base-config><trust-anchors></trust-anchors></base-config>")

    static let xmlConfigCases: [NSCCase] = [
        NSCCase(name: "testEmptyConfigFile", source: "\(xmlTests) testEmptyConfigFile; res/xml/empty_config.xml",
                xml: nsc("\n"), app: NSCApp(targetSdk: 24),
                expectation: .connections([yes(android), yes(developer), yes(google)])),
        NSCCase(name: "testEmptyConfigFile: defaults", source: "\(xmlTests) testEmptyConfigFile (cleartext permitted, "
                + "HSTS off, anchors, no pins, for the test app's target SDK, N)", xml: nsc(""),
                app: NSCApp(targetSdk: 24),
                expectation: .config(host: "") { $0.cleartextTrafficPermitted && !$0.hstsEnforced
                    && !$0.trustAnchors.isEmpty && $0.pinSet.pins.isEmpty }),
        NSCCase(name: "testEmptyAnchors", source: "\(xmlTests) testEmptyAnchors; res/xml/empty_trust.xml",
                xml: emptyTrust, expectation: .connections([no(android), no(developer), no(google)])),
        NSCCase(name: "testBasicDomainConfig", source: "\(xmlTests) testBasicDomainConfig; res/xml/domain1.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain>android.com</domain><trust-anchors><certificates src="system" />
                    <certificates src="user" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), no(developer), no(google)])),
        NSCCase(name: "testBasicPinning", source: "\(xmlTests) testBasicPinning; res/xml/pins1.xml",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin digest="SHA-256">zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=</pin></pin-set></domain-config>
                    """),
                expectation: .connections([yes(android), yes(google)])),
        NSCCase(name: "testExpiredPin", source: "\(xmlTests) testExpiredPin; res/xml/expired_pin.xml",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set expiration="2015-01-01">
                    <pin digest="SHA-256">aaaaaaaaaaa2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set></domain-config>
                    """),
                expectation: .connections([yes(android)])),
        NSCCase(name: "testOverridesPins", source: "\(xmlTests) testOverridesPins; res/xml/override_pins.xml",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin digest="SHA-256">aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
                    <trust-anchors><certificates src="system" overridePins="true" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android)])),
        NSCCase(name: "testBadPin", source: "\(xmlTests) testBadPin; res/xml/bad_pin.xml",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin digest="SHA-256">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set></domain-config>
                    """),
                expectation: .connections([no(android), yes(google)])),
        NSCCase(name: "testMultipleDomains", source: "\(xmlTests) testMultipleDomains; res/xml/multiple_domains.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain>android.com</domain><domain>google.com</domain><trust-anchors>
                    <certificates src="system" /><certificates src="user" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), yes(google), no(developer)])),
        NSCCase(name: "testMultipleDomainConfigs", source: "\(xmlTests) testMultipleDomainConfigs; "
                + "res/xml/multiple_configs.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain>android.com</domain><trust-anchors><certificates src="system" />
                    <certificates src="user" /></trust-anchors></domain-config>
                    <domain-config><domain>google.com</domain><trust-anchors><certificates src="system" />
                    <certificates src="user" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), yes(google), no(developer)])),
        NSCCase(name: "testIncludeSubdomains", source: "\(xmlTests) testIncludeSubdomains; res/xml/subdomains.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><trust-anchors>
                    <certificates src="system" /><certificates src="user" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), yes(developer), no(google)])),
        NSCCase(name: "testAttributes", source: "\(xmlTests) testAttributes; res/xml/attributes.xml",
                xml: nsc("<base-config cleartextTrafficPermitted=\"false\" hstsEnforced=\"true\"></base-config>"),
                expectation: .config(host: "") { !$0.cleartextTrafficPermitted && $0.hstsEnforced }),
        NSCCase(name: "testResourcePemCertificateSource", source: "\(xmlTests) testResourcePemCertificateSource; "
                + "res/xml/resource_anchors_pem.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain>android.com</domain><trust-anchors>
                    <certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), no(developer), no(google)])),
        NSCCase(name: "testResourceDerCertificateSource", source: "\(xmlTests) testResourceDerCertificateSource; "
                + "res/xml/resource_anchors_der.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain>android.com</domain><trust-anchors>
                    <certificates src="@raw/ca_certs_der" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), no(developer), no(google)])),
        NSCCase(name: "testNestedDomainConfigs", source: "\(xmlTests) testNestedDomainConfigs; "
                + "res/xml/nested_domains.xml (a base-config after the domain-config still parents it)",
                xml: nsc("""
                    <domain-config><domain includeSubdomains="true">android.com</domain>
                    <trust-anchors><certificates src="system" /></trust-anchors>
                    <domain-config><domain>developer.android.com</domain><pin-set>
                    <pin digest="SHA-256">zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=</pin></pin-set></domain-config>
                    </domain-config>
                    <base-config cleartextTrafficPermitted="false"></base-config>
                    """),
                expectation: .connections([yes(android), yes(developer),
                                           NSCCase.Probe(NSCFacts.cleartext("developer.android.com"), connects: false,
                                                         step: .beforeConnecting)])),
        NSCCase(name: "testNestedDomainConfigs: the child inherits", source: "\(xmlTests) testNestedDomainConfigs "
                + "(child pins set, cleartext and anchors inherited)",
                xml: nsc("""
                    <domain-config><domain includeSubdomains="true">android.com</domain>
                    <trust-anchors><certificates src="system" /></trust-anchors>
                    <domain-config><domain>developer.android.com</domain><pin-set>
                    <pin digest="SHA-256">zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=</pin></pin-set></domain-config>
                    </domain-config>
                    <base-config cleartextTrafficPermitted="false"></base-config>
                    """),
                expectation: .config(host: "developer.android.com") { !$0.pinSet.pins.isEmpty
                    && !$0.cleartextTrafficPermitted && $0.trustAnchors == [NSCCertificates(.system)] }),
        NSCCase(name: "testNestedDomainConfigsOverride", source: "\(xmlTests) testNestedDomainConfigsOverride; "
                + "res/xml/nested_domains_override.xml",
                xml: nsc("""
                    <base-config cleartextTrafficPermitted="false"></base-config>
                    <domain-config cleartextTrafficPermitted="true">
                    <domain includeSubdomains="true">android.com</domain>
                    <domain-config cleartextTrafficPermitted="false"><domain>developer.android.com</domain>
                    </domain-config></domain-config>
                    """),
                expectation: .connections([
                    NSCCase.Probe(NSCFacts.cleartext("android.com"), connects: true),
                    NSCCase.Probe(NSCFacts.cleartext("www.android.com"), connects: true),
                    NSCCase.Probe(NSCFacts.cleartext("developer.android.com"), connects: false,
                                  step: .beforeConnecting),
                ])),
        NSCCase(name: "testDebugOverridesDisabled", source: "\(xmlTests) testDebugOverridesDisabled; "
                + "res/xml/debug_basic.xml (a release build)",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <debug-overrides><trust-anchors><certificates src="system" /></trust-anchors></debug-overrides>
                    """),
                expectation: .connections([no(android), no(developer)])),
        NSCCase(name: "testBasicDebugOverrides", source: "\(xmlTests) testBasicDebugOverrides; res/xml/debug_basic.xml",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <debug-overrides><trust-anchors><certificates src="system" /></trust-anchors></debug-overrides>
                    """), app: debug,
                expectation: .connections([yes(android), yes(developer)])),
        NSCCase(name: "testBasicDebugOverrides: anchors override pins", source: "\(xmlTests) testBasicDebugOverrides "
                + "(every anchor overridesPins)",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <debug-overrides><trust-anchors><certificates src="system" /></trust-anchors></debug-overrides>
                    """), app: debug,
                expectation: .config(host: "") {
                    !$0.trustAnchors.isEmpty && $0.trustAnchors.allSatisfy(\.overridePins) }),
        NSCCase(name: "testDebugOverridesWithDomain", source: "\(xmlTests) testDebugOverridesWithDomain; "
                + "res/xml/debug_domain.xml",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><trust-anchors>
                    <certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
                    <debug-overrides><trust-anchors><certificates src="@raw/test_debug_ca" /></trust-anchors>
                    </debug-overrides>
                    """), app: debug,
                expectation: .connections([yes(android), yes(developer)])),
        NSCCase(name: "testDebugOverridesWithDomain: the debug CA overrides pins", source: "\(xmlTests) "
                + "testDebugOverridesWithDomain (the debug CA among android.com's anchors, overridesPins)",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><trust-anchors>
                    <certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
                    <debug-overrides><trust-anchors><certificates src="@raw/test_debug_ca" /></trust-anchors>
                    </debug-overrides>
                    """), app: debug,
                expectation: .config(host: "android.com") {
                    $0.trustAnchors.first == NSCCertificates(.resource("raw/test_debug_ca"), overridePins: true)
                        && $0.trustAnchors.contains(NSCCertificates(.resource("raw/ca_certs_pem"))) }),
        NSCCase(name: "testDebugInherit", source: "\(xmlTests) testDebugInherit; res/xml/debug_inherit.xml (the "
                + "debug CA joins the platform's anchors: more than one)",
                xml: nsc("""
                    <debug-overrides><trust-anchors><certificates src="@raw/test_debug_ca" /></trust-anchors>
                    </debug-overrides>
                    """), app: debug,
                expectation: .config(host: "android.com") { $0.trustAnchors.count > 1
                    && $0.trustAnchors.contains(NSCCertificates(.resource("raw/test_debug_ca"), overridePins: true)) }),
        NSCCase(name: "testBadConfig0", source: "\(xmlTests) testBadConfig0; res/xml/bad_config0.xml (bad digest)",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin digest="I am probably not an algorithm">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin>
                    </pin-set></domain-config>
                    """), expectation: .refused(.invalidPin)),
        NSCCase(name: "testBadConfig1", source: "\(xmlTests) testBadConfig1; res/xml/bad_config1.xml (no digest)",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin>1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set></domain-config>
                    """), expectation: .refused(.invalidPin)),
        NSCCase(name: "testBadConfig2", source: "\(xmlTests) testBadConfig2; res/xml/bad_config2.xml (empty pin)",
                xml: nsc("<domain-config><domain>android.com</domain><pin-set><pin digest=\"SHA-256\"></pin>"
                         + "</pin-set></domain-config>"), expectation: .refused(.invalidPin)),
        NSCCase(name: "testBadConfig3", source: "\(xmlTests) testBadConfig3; res/xml/bad_config3.xml (a domain twice)",
                xml: nsc("<domain-config><domain>android.com</domain></domain-config>"
                         + "<domain-config><domain>android.com</domain></domain-config>"),
                expectation: .refused(.duplicateDomain)),
        NSCCase(name: "testBadConfig4", source: "\(xmlTests) testBadConfig4; res/xml/bad_config4.xml (a domain in "
                + "base-config)", xml: nsc("<base-config><domain>android.com</domain></base-config>"),
                expectation: .refused(.elementNotAllowed)),
        NSCCase(name: "bad_config5.xml", source: "res/xml/bad_config5.xml (pins in base-config; XmlConfigTests' "
                + "testBadConfig5 parses bad_config4 again, so this file is checked here)",
                xml: nsc("<base-config><pin-set></pin-set></base-config>"), expectation: .refused(.elementNotAllowed)),
        NSCCase(name: "testDebugDedup", source: "\(xmlTests) testDebugDedup; res/xml/override_dedup.xml (the debug "
                + "system anchors override the domain's, so its bad pin is not checked)",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin digest="SHA-256">aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
                    <trust-anchors><certificates src="system" overridePins="false" /></trust-anchors></domain-config>
                    <debug-overrides><trust-anchors><certificates src="system" /></trust-anchors></debug-overrides>
                    """), app: debug,
                expectation: .connections([yes(android)])),
        NSCCase(name: "testDebugDedup: release", source: "res/xml/override_dedup.xml's own comment (\"Connections to "
                + "this will only succeed if overridePins is set\"): the same file in a release build",
                xml: nsc("""
                    <domain-config><domain>android.com</domain><pin-set>
                    <pin digest="SHA-256">aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
                    <trust-anchors><certificates src="system" overridePins="false" /></trust-anchors></domain-config>
                    <debug-overrides><trust-anchors><certificates src="system" /></trust-anchors></debug-overrides>
                    """),
                expectation: .connections([no(android)])),
        NSCCase(name: "testExtraDebugResource", source: "\(xmlTests) testExtraDebugResource; "
                + "res/xml/extra_debug_resource_debug.xml (its main file trusts nothing)",
                xml: emptyTrust, app: debug,
                debugResource: nsc("<debug-overrides><trust-anchors><certificates src=\"system\" /></trust-anchors>"
                                   + "</debug-overrides>"),
                expectation: .connections([yes(android)])),
        NSCCase(name: "testExtraDebugResource: release", source: "\(xmlTests) testExtraDebugResource (\"the _debug "
                + "file is ignored if debug is false\")", xml: emptyTrust,
                debugResource: nsc("<debug-overrides><trust-anchors><certificates src=\"system\" /></trust-anchors>"
                                   + "</debug-overrides>"),
                expectation: .config(host: "") { $0.trustAnchors.isEmpty }),
        NSCCase(name: "testExtraDebugResourceIgnored: debug", source: "\(xmlTests) testExtraDebugResourceIgnored; "
                + "res/xml/bad_extra_debug_resource_debug.xml (its root is not network-security-config)",
                xml: emptyTrust, app: debug,
                debugResource: "<debug-overrides><trust-anchors><certificates src=\"system\" /></trust-anchors>"
                    + "</debug-overrides>",
                expectation: .refused(.wrongRoot)),
        NSCCase(name: "testExtraDebugResourceIgnored: release", source: "\(xmlTests) testExtraDebugResourceIgnored "
                + "(a release build never reads the _debug file)", xml: emptyTrust,
                debugResource: "<debug-overrides><trust-anchors><certificates src=\"system\" /></trust-anchors>"
                    + "</debug-overrides>",
                expectation: .connections([no(android)])),
        NSCCase(name: "testDomainWhitespaceTrimming", source: "\(xmlTests) testDomainWhitespaceTrimming; "
                + "res/xml/domain_whitespace.xml",
                xml: nsc("""
                    <domain-config><domain>android.com
                        </domain><domain>   developer.android.com    </domain><pin-set>
                    <pin digest="SHA-256">  zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=  </pin></pin-set>
                    </domain-config>
                    """),
                expectation: .connections([yes(android), yes(developer)])),
        NSCCase(name: "testDomainWhitespaceTrimming: both names match", source: "\(xmlTests) "
                + "testDomainWhitespaceTrimming (neither host gets the default config)",
                xml: nsc("""
                    <domain-config><domain>android.com
                        </domain><domain>   developer.android.com    </domain><pin-set>
                    <pin digest="SHA-256">  zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=  </pin></pin-set>
                    </domain-config>
                    """),
                expectation: .config(host: "developer.android.com") {
                    $0.pinSet.pins == [NSCFacts.androidComChainPin] }),
    ]

    /// NetworkSecurityConfigTests build configs in code; the same configs as files.
    static let programmaticCases: [NSCCase] = [
        NSCCase(name: "testEmptyConfig", source: "\(programmaticTests) testEmptyConfig (a config with no anchors)",
                xml: emptyTrust, expectation: .connections([no(android)])),
        NSCCase(name: "testEmptyPerNetworkSecurityConfig", source: "\(programmaticTests) "
                + "testEmptyPerNetworkSecurityConfig",
                xml: nsc("""
                    <base-config><trust-anchors><certificates src="system" /></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><trust-anchors />
                    </domain-config>
                    """),
                expectation: .connections([no(android), yes(google)])),
        NSCCase(name: "testBadPin (programmatic)", source: "\(programmaticTests) testBadPin (its pin is 0 bytes, which "
                + "no file can say: a 32-byte pin that matches nothing stands for it)",
                xml: nsc("""
                    <base-config><trust-anchors><certificates src="system" /></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><pin-set>
                    <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin></pin-set>
                    <trust-anchors><certificates src="system" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([no(android), yes(google)])),
        NSCCase(name: "testGoodPin", source: "\(programmaticTests) testGoodPin (G2_SPKI_SHA256, android.com's "
                + "intermediate; the subdomain too)",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><pin-set>
                    <pin digest="SHA-256">\(NSCFacts.g2Pin)</pin></pin-set>
                    <trust-anchors><certificates src="system" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), yes(developer)])),
        NSCCase(name: "testOverridePins", source: "\(programmaticTests) testOverridePins",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><pin-set>
                    <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin></pin-set>
                    <trust-anchors><certificates src="system" overridePins="true" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android)])),
        NSCCase(name: "testMostSpecificNetworkSecurityConfig", source: "\(programmaticTests) "
                + "testMostSpecificNetworkSecurityConfig",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><trust-anchors />
                    </domain-config>
                    <domain-config><domain>developer.android.com</domain><trust-anchors>
                    <certificates src="system" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([no(android), yes(developer)])),
        NSCCase(name: "testSubdomainIncluded", source: "\(programmaticTests) testSubdomainIncluded (first half)",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><trust-anchors>
                    <certificates src="system" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(developer)])),
        NSCCase(name: "testSubdomainIncluded: without", source: "\(programmaticTests) testSubdomainIncluded (second "
                + "half: includeSubdomains false)",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain>android.com</domain><trust-anchors>
                    <certificates src="system" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([no(developer)])),
        NSCCase(name: "testConfigBuilderUsesParents", source: "\(programmaticTests) testConfigBuilderUsesParents (a "
                + "config that sets nothing inherits the N defaults' anchors)", xml: nsc("<base-config/>"),
                app: NSCApp(targetSdk: 24), expectation: .config(host: "") { !$0.trustAnchors.isEmpty }),
        NSCCase(name: "testWithUrlConnection", source: "\(programmaticTests) testWithUrlConnection",
                xml: nsc("""
                    <base-config><trust-anchors></trust-anchors></base-config>
                    <domain-config><domain includeSubdomains="true">android.com</domain><pin-set>
                    <pin digest="SHA-256">\(NSCFacts.g2Pin)</pin></pin-set>
                    <trust-anchors><certificates src="system" /></trust-anchors></domain-config>
                    """),
                expectation: .connections([yes(android), yes(developer), no(google)])),
        NSCCase(name: "testUserAddedCaOptIn: M", source: "\(programmaticTests) testUserAddedCaOptIn (target M: the "
                + "user's CA trusted)", app: NSCApp(targetSdk: 23),
                expectation: .connections([yes(NSCFacts.userCAServer("example.com"))])),
        NSCCase(name: "testUserAddedCaOptIn: N", source: "\(programmaticTests) testUserAddedCaOptIn (target N: not)",
                app: NSCApp(targetSdk: 24), expectation: .connections([no(NSCFacts.userCAServer("example.com"))])),
    ]

    @Test("XmlConfigTests.java, test by test", arguments: xmlConfigCases)
    func xmlConfigTests(_ testCase: NSCCase) throws {
        try testCase.check()
    }

    @Test("NetworkSecurityConfigTests.java, test by test", arguments: programmaticCases)
    func networkSecurityConfigTests(_ testCase: NSCCase) throws {
        try testCase.check()
    }
}
