import Foundation
import XCTest
import TLSFixtures

final class ATSPolicyParserTests: XCTestCase {
    static let infoPlistXML = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
        <key>CFBundleIdentifier</key>
        <string>com.example.app</string>
        <key>NSAppTransportSecurity</key>
        <dict>
            <key>NSAllowsArbitraryLoads</key>
            <true/>
            <key>NSAllowsLocalNetworking</key>
            <false/>
            <key>NSExceptionDomains</key>
            <dict>
                <key>legacy.example.com</key>
                <dict>
                    <key>NSIncludesSubdomains</key>
                    <true/>
                    <key>NSExceptionMinimumTLSVersion</key>
                    <string>TLSv1.0</string>
                    <key>NSExceptionRequiresForwardSecrecy</key>
                    <false/>
                    <key>NSExceptionAllowsInsecureHTTPLoads</key>
                    <true/>
                </dict>
                <key>10.0.0.0/8</key>
                <dict/>
            </dict>
            <key>NSPinnedDomains</key>
            <dict>
                <key>pinned.example.com</key>
                <dict>
                    <key>NSPinnedLeafIdentities</key>
                    <array>
                        <dict>
                            <key>SPKI-SHA256-BASE64</key>
                            <string>r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=</string>
                        </dict>
                    </array>
                </dict>
            </dict>
        </dict>
    </dict>
    </plist>
    """

    func testParsesXMLInfoPlist() throws {
        let policy = try ATSPolicy(infoPlist: Data(Self.infoPlistXML.utf8))
        XCTAssertEqual(policy.allowsArbitraryLoads, true)
        XCTAssertEqual(policy.allowsLocalNetworking, false)
        XCTAssertNil(policy.allowsArbitraryLoadsForMedia)
        let legacy = try XCTUnwrap(policy.exceptionDomains["legacy.example.com"])
        XCTAssertEqual(legacy.keyKind, .dns)
        XCTAssertEqual(legacy.includesSubdomains, true)
        XCTAssertEqual(legacy.minimumTLSVersion, .tls1_0)
        XCTAssertEqual(legacy.requiresForwardSecrecy, false)
        XCTAssertEqual(legacy.allowsInsecureHTTPLoads, true)
        XCTAssertEqual(policy.exceptionDomains["10.0.0.0/8"]?.keyKind, .network(ATSIPNetwork("10.0.0.0/8")!))
        XCTAssertEqual(policy.pinnedDomains["pinned.example.com"]?.leafIdentities,
                       ["r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E="])
        XCTAssertNil(policy.pinnedDomains["pinned.example.com"]?.caIdentities)
        XCTAssertEqual(policy.warnings, [])
    }

    func testParsesBinaryInfoPlist() throws {
        let object = try PropertyListSerialization.propertyList(from: Data(Self.infoPlistXML.utf8), options: [], format: nil)
        let binary = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        XCTAssertEqual(try ATSPolicy(infoPlist: binary), try ATSPolicy(infoPlist: Data(Self.infoPlistXML.utf8)))
    }

    func testBareDictionaryFromFoundationAndData() throws {
        let foundation: [String: Any] = ["NSAllowsArbitraryLoads": true,
                                         "NSExceptionDomains": ["example.com": ["NSIncludesSubdomains": true]]]
        let policy = try ATSPolicy(atsDictionary: foundation)
        XCTAssertEqual(policy.allowsArbitraryLoads, true)
        XCTAssertEqual(policy.exceptionDomains["example.com"]?.includesSubdomains, true)
        let data = try PropertyListSerialization.data(fromPropertyList: foundation, format: .xml, options: 0)
        XCTAssertEqual(try ATSPolicy(atsDictionary: data), policy)
        XCTAssertEqual(try ATSPolicy.parse(plist: data), policy, "a bare ATS dictionary is recognised by its keys")
        XCTAssertEqual(try ATSPolicy.parse(plist: Data(Self.infoPlistXML.utf8)).allowsArbitraryLoads, true)
    }

    func testLiteralPolicyEqualsParsedPolicy() throws {
        let literal = ATSPolicy(["NSAllowsArbitraryLoads": true])
        let parsed = try ATSPolicy(atsDictionary: ["NSAllowsArbitraryLoads": true])
        XCTAssertEqual(literal, parsed)
        XCTAssertEqual(ATSPolicy.empty, ATSPolicy([:]))
        XCTAssertEqual(ATSPolicy.empty.warnings, [])
    }

    // MARK: Errors: one line, naming the problem and the fix.

    func testMalformedPlistError() {
        XCTAssertThrowsError(try ATSPolicy(infoPlist: Data("<plist><dict><key>a</key></plist>".utf8))) { error in
            XCTAssertEqual((error as? ATSPolicyError)?.code, .malformed, "\(error)")
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("malformed property list"), text)
            XCTAssertTrue(text.contains("plutil -lint"), text)
            XCTAssertFalse(text.contains("\n"), text)
        }
    }

    func testPlistWithoutATSError() {
        let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>CFBundleIdentifier</key><string>com.example</string></dict></plist>
        """
        for attempt in [{ try ATSPolicy(infoPlist: Data(xml.utf8)) }, { try ATSPolicy.parse(plist: Data(xml.utf8)) }] {
            XCTAssertThrowsError(try attempt()) { error in
                XCTAssertEqual((error as? ATSPolicyError)?.code, .missingATSDictionary)
                XCTAssertEqual("\(error)", "the property list has no NSAppTransportSecurity key, so ATS runs with all "
                               + "defaults; add an NSAppTransportSecurity dictionary, or evaluate with the defaults (ATSPolicy.empty)")
            }
        }
    }

    func testTopLevelNotADictionaryError() {
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\"><array><string>x</string></array></plist>"
        XCTAssertThrowsError(try ATSPolicy(infoPlist: Data(xml.utf8))) { error in
            XCTAssertEqual((error as? ATSPolicyError)?.code, .topLevelNotADictionary)
            XCTAssertTrue("\(error)".contains("is an array, not a dictionary"))
            XCTAssertFalse("\(error)".contains("\n"))
        }
    }

    func testATSNotADictionaryError() {
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><string>on</string></dict></plist>"
        XCTAssertThrowsError(try ATSPolicy(infoPlist: Data(xml.utf8))) { error in
            XCTAssertEqual((error as? ATSPolicyError)?.code, .atsNotADictionary)
            XCTAssertTrue("\(error)".contains("NSAppTransportSecurity is a string, not a dictionary"), "\(error)")
        }
    }

    // MARK: Warnings, as Apple's loader logs them: each names the key.

    /// Apple's parser (SecProtocolConfiguration.m, sec_protocol_configuration_set_ats_overrides) reads booleans as
    /// numbers compared with YES and ignores anything else: a string is absent, an integer is YES when it is 1.
    func testStringBooleansIgnoredIntegersComparedWithYes() {
        let policy = ATSPolicy(["NSAllowsArbitraryLoads": "YES",
                                "NSExceptionDomains": ["example.com": ["NSIncludesSubdomains": "YES",
                                                                       "NSExceptionAllowsInsecureHTTPLoads": 1,
                                                                       "NSExceptionRequiresForwardSecrecy": 2]]])
        XCTAssertNil(policy.allowsArbitraryLoads)
        XCTAssertNil(policy.exceptionDomains["example.com"]?.includesSubdomains)
        XCTAssertEqual(policy.exceptionDomains["example.com"]?.allowsInsecureHTTPLoads, true)
        XCTAssertEqual(policy.exceptionDomains["example.com"]?.requiresForwardSecrecy, false)
        XCTAssertEqual(policy.warnings.map(\.key).sorted(),
                       ["NSAllowsArbitraryLoads", "NSExceptionAllowsInsecureHTTPLoads", "NSExceptionRequiresForwardSecrecy",
                        "NSIncludesSubdomains"])
        XCTAssertTrue(policy.warnings.contains { $0.message.contains("the string \"YES\" is not a boolean") })
        XCTAssertTrue(policy.warnings.contains { $0.message.contains("the integer 1 is read as YES") })
        XCTAssertTrue(policy.warnings.contains { $0.message.contains("the integer 2 is read as NO") })
        XCTAssertEqual(policy.parserRules, [.wrongTypeIsAbsent, .numbersComparedWithYes])
    }

    func testIntegerFromPlistIsComparedWithYes() throws {
        let xml = """
        <?xml version="1.0"?><plist version="1.0"><dict><key>NSAllowsArbitraryLoads</key><integer>1</integer></dict></plist>
        """
        let policy = try ATSPolicy(atsDictionary: Data(xml.utf8))
        XCTAssertEqual(policy.allowsArbitraryLoads, true)
        XCTAssertEqual(policy.warnings.first?.key, "NSAllowsArbitraryLoads")
    }

    /// SecPolicy.c (parseNSPinnedDomains) honours a pinned entry's NSIncludesSubdomains only when it is the boolean
    /// true; a pinned key's case does not matter, a trailing dot or a port makes it unmatchable.
    func testPinnedDomainValues() {
        let policy = ATSPolicy(["NSPinnedDomains": [
            "Example.COM": ["NSIncludesSubdomains": 1, "NSPinnedLeafIdentities": []],
            "dotted.example.": ["NSPinnedLeafIdentities": []],
            "port.example:443": ["NSPinnedLeafIdentities": []],
            "scalar.example": ["NSPinnedCAIdentities": "oops"],
        ]])
        XCTAssertNil(policy.pinnedDomains["Example.COM"]?.includesSubdomains)
        XCTAssertFalse(policy.warnings.contains { $0.keyPath == ["NSPinnedDomains", "Example.COM"] })
        XCTAssertTrue(policy.warnings.contains { $0.keyPath == ["NSPinnedDomains", "dotted.example."] && $0.message.contains("dot") })
        XCTAssertTrue(policy.warnings.contains { $0.keyPath == ["NSPinnedDomains", "port.example:443"] })
        // A non-array identity list still pins the domain, with nothing to match (SecPolicy.c marks it pinned first).
        XCTAssertEqual(policy.pinnedDomains["scalar.example"]?.caIdentities, [])
    }

    func testUnknownKeysAndWrongTypes() {
        let policy = ATSPolicy(["NSAllowsArbitraryLoad": true,
                                "nsallowslocalnetworking": true,
                                "NSExceptionDomains": ["example.com": ["NSExceptionMinimumTLSVersion": "TLSv1",
                                                                       "NSBogus": true],
                                                       "bad.example.com": "yes"],
                                "NSPinnedDomains": []])
        let byKey = Dictionary(grouping: policy.warnings, by: \.key)
        XCTAssertNotNil(byKey["NSAllowsArbitraryLoad"])
        XCTAssertTrue(byKey["nsallowslocalnetworking"]?.first?.message.contains("did you mean NSAllowsLocalNetworking") == true)
        XCTAssertTrue(byKey["NSExceptionMinimumTLSVersion"]?.first?.message.contains("\"TLSv1\" is not one of") == true)
        XCTAssertNotNil(byKey["NSBogus"])
        XCTAssertNotNil(byKey["bad.example.com"])
        XCTAssertTrue(byKey["NSPinnedDomains"]?.first?.message.contains("expected a dictionary, found array") == true)
        XCTAssertNil(policy.exceptionDomains["example.com"]?.minimumTLSVersion)
        XCTAssertEqual(byKey["NSBogus"]?.first?.description,
                       "NSAppTransportSecurity ▸ NSExceptionDomains ▸ example.com ▸ NSBogus: unknown key; ignored")
    }

    func testEveryMinimumVersionString() {
        for (text, version) in [("TLSv1.0", TLSVersion.tls1_0), ("TLSv1.1", .tls1_1), ("TLSv1.2", .tls1_2), ("TLSv1.3", .tls1_3)] {
            let policy = ATSPolicy(["NSExceptionDomains": ["e.com": ["NSExceptionMinimumTLSVersion": .string(text)]]])
            XCTAssertEqual(policy.exceptionDomains["e.com"]?.minimumTLSVersion, version, text)
            XCTAssertEqual(policy.warnings, [], text)
        }
        for bad in ["TLSv1", "1.2", "tlsv1.2", "SSLv3", "TLSv1.4"] {
            let policy = ATSPolicy(["NSExceptionDomains": ["e.com": ["NSExceptionMinimumTLSVersion": .string(bad)]]])
            XCTAssertNil(policy.exceptionDomains["e.com"]?.minimumTLSVersion, bad)
            XCTAssertEqual(policy.warnings.count, 1, bad)
        }
    }

    func testUnusableDomainKeys() {
        let keys = ["Example.com", "example.com:443", "https://example.com", "*.example.com", ""]
        var domains: [String: ATSPlistValue] = [:]
        for key in keys { domains[key] = [:] }
        let policy = ATSPolicy(["NSExceptionDomains": .dictionary(domains)])
        for key in keys {
            XCTAssertEqual(policy.exceptionDomains[key]?.keyKind, .unusable, key)
            XCTAssertTrue(policy.warnings.contains { $0.key == key }, "no warning names \(key)")
        }
        XCTAssertTrue(policy.warnings.contains { $0.key == "Example.com" && $0.message.contains("lowercase") })
        XCTAssertTrue(policy.warnings.contains { $0.key == "example.com:443" && $0.message.contains("port") })
        XCTAssertTrue(policy.warnings.contains { $0.key == "https://example.com" && $0.message.contains("scheme") })
        // A trailing dot is valid and matches only hosts written with one (NSExceptionDomains page): kept, with a warning.
        let dotted = ATSPolicy(["NSExceptionDomains": ["example.com.": [:]]])
        XCTAssertEqual(dotted.exceptionDomains["example.com."]?.keyKind, .dns)
        XCTAssertTrue(dotted.warnings.first?.message.contains("trailing dot") == true)
    }

    func testIPAndCIDRKeys() {
        let policy = ATSPolicy(["NSExceptionDomains": ["192.168.1.10": [:], "fd00::/8": [:], "10.0.0.0/33": [:]]])
        XCTAssertEqual(policy.exceptionDomains["192.168.1.10"]?.keyKind, .ip(ATSIPAddress("192.168.1.10")!))
        XCTAssertEqual(policy.exceptionDomains["fd00::/8"]?.keyKind, .network(ATSIPNetwork("fd00::/8")!))
        XCTAssertEqual(policy.exceptionDomains["10.0.0.0/33"]?.keyKind, .unusable)
        XCTAssertEqual(policy.warnings.map(\.key), ["10.0.0.0/33"])
    }

    /// NSThirdPartyException* keys: Apple's current parser ignores them (warned); they are kept aside for the
    /// older reading (ATSReadings.ThirdPartyKeys.asPlainKeys), never mixed into the plain fields.
    func testThirdPartyKeysAreIgnoredWithWarning() {
        let policy = ATSPolicy(["NSExceptionDomains": [
            "a.com": ["NSThirdPartyExceptionAllowsInsecureHTTPLoads": true,
                      "NSThirdPartyExceptionRequiresForwardSecrecy": false,
                      "NSThirdPartyExceptionMinimumTLSVersion": "TLSv1.1"],
            "b.com": ["NSExceptionMinimumTLSVersion": "TLSv1.2", "NSThirdPartyExceptionMinimumTLSVersion": "TLSv1.0"],
        ]])
        let a = policy.exceptionDomains["a.com"]
        XCTAssertNil(a?.allowsInsecureHTTPLoads)
        XCTAssertNil(a?.requiresForwardSecrecy)
        XCTAssertNil(a?.minimumTLSVersion)
        XCTAssertEqual(a?.thirdParty, ATSThirdPartyExceptionKeys(allowsInsecureHTTPLoads: true, minimumTLSVersion: .tls1_1,
                                                                 requiresForwardSecrecy: false))
        XCTAssertEqual(policy.exceptionDomains["b.com"]?.minimumTLSVersion, .tls1_2)
        XCTAssertEqual(policy.warnings.count, 4)
        // Read on iOS 9 only: the parser knows no profile, so it says both (ATSPolicy.warnings(for:) says which).
        XCTAssertTrue(policy.warnings.allSatisfy {
            $0.key.hasPrefix("NSThirdPartyException") && $0.message.hasPrefix("read as")
                && $0.message.contains("ignored from iOS 10")
        }, "\(policy.warnings)")
    }

    func testObsoleteCertificateTransparencyKey() {
        let policy = ATSPolicy(["NSExceptionDomains": ["a.com": ["NSRequiresCertificateTransparency": true]]])
        XCTAssertEqual(policy.exceptionDomains["a.com"]?.requiresCertificateTransparency, true)
        XCTAssertTrue(policy.warnings.first?.message.contains("iOS 10–12") == true)
    }

    func testPinnedDomainIdentityWarnings() {
        let policy = ATSPolicy(["NSPinnedDomains": [
            "a.com": ["NSPinnedCAIdentities": [], "NSPinnedLeafIdentities": [["SPKI-SHA256-BASE64": "not-base64"], "x"]],
            "b.com": [:],
        ]])
        XCTAssertEqual(policy.pinnedDomains["a.com"]?.caIdentities, [])
        XCTAssertEqual(policy.pinnedDomains["a.com"]?.leafIdentities, ["not-base64"])
        let messages = policy.warnings.map(\.description).joined(separator: "\n")
        XCTAssertTrue(messages.contains("empty list"), messages)
        XCTAssertTrue(messages.contains("32-byte"), messages)
        XCTAssertTrue(messages.contains("[1]"), messages)
        XCTAssertTrue(messages.contains("b.com: has neither"), messages)
    }

    /// NSAllowsArbitraryLoadsInMedia was a documentation typo (corrected 2016-11-14): an unknown key, named as such.
    func testInMediaIsNotAKey() throws {
        let policy = ATSPolicy(["NSAllowsArbitraryLoadsInMedia": true])
        XCTAssertNil(policy.allowsArbitraryLoadsForMedia)
        XCTAssertEqual(policy.warnings.count, 1)
        XCTAssertTrue(policy.warnings[0].message.contains("not a key"), policy.warnings[0].message)
        XCTAssertEqual(policy.parserRules, [.inMediaIsNotAKey])
        // A bare dictionary holding it is still read as an ATS dictionary, so the user hears the warning.
        let bare = try ATSPolicy.parse(plist: Data(ATSPlistRendering.xml(["NSAllowsArbitraryLoadsInMedia": true]).utf8))
        XCTAssertEqual(bare.warnings.count, 1)
    }
}

/// The smaller value types the model is built from.
final class ATSValueTests: XCTestCase {
    func testProfileParsing() {
        let cases: [(String, ATSOSProfile?)] = [
            ("ios17", .ios17), ("17", .ios17), ("iOS 13", .ios13), ("13.7", .ios13), ("iOS 14", .ios14), ("iOS 15.4", .ios14), ("16", .ios14), ("ios9", .ios9),
            ("12", .ios10), ("10", .ios10), ("18", .ios17), ("26.1", .ios26), ("ios26", .ios26), ("8", nil), ("banana", nil),
        ]
        for (text, expected) in cases { XCTAssertEqual(ATSOSProfile(parsing: text), expected, text) }
        XCTAssertEqual(ATSOSProfile.default, .ios17)
        XCTAssertEqual(ATSLoadKind(parsing: "WebKit"), .web)
        XCTAssertEqual(ATSLoadKind(parsing: "media"), .media)
    }

    func testIPParsing() {
        XCTAssertEqual(ATSIPAddress("127.0.0.1")?.bytes, [127, 0, 0, 1])
        XCTAssertEqual(ATSIPAddress("::1"), ATSIPAddress("0:0:0:0:0:0:0:1"))
        XCTAssertEqual(ATSIPAddress("[::1]"), ATSIPAddress("::1"))
        XCTAssertEqual(ATSIPAddress("fe80::1%en0"), ATSIPAddress("fe80::1"))
        XCTAssertEqual(ATSIPAddress("::ffff:10.0.0.1")?.bytes.suffix(4), [10, 0, 0, 1])
        for bad in ["256.0.0.1", "1.2.3", "localhost", "1::2::3", ":::", "12345::1", "1.2.3.4.5"] {
            XCTAssertNil(ATSIPAddress(bad), bad)
        }
        XCTAssertTrue(ATSIPNetwork("10.1.0.0/16")!.contains(ATSIPAddress("10.1.200.3")!))
        XCTAssertFalse(ATSIPNetwork("10.1.0.0/16")!.contains(ATSIPAddress("10.2.0.1")!))
        XCTAssertTrue(ATSIPNetwork("10.0.0.0/12")!.contains(ATSIPAddress("10.15.0.1")!))
        XCTAssertFalse(ATSIPNetwork("10.0.0.0/12")!.contains(ATSIPAddress("10.16.0.1")!))
        XCTAssertFalse(ATSIPNetwork("fd00::/8")!.contains(ATSIPAddress("10.0.0.1")!))
        XCTAssertTrue(ATSIPNetwork("0.0.0.0/0")!.contains(ATSIPAddress("8.8.8.8")!))
    }

    func testHostClassification() {
        XCTAssertEqual(ATSHost("localhost").kind, .unqualified)
        XCTAssertEqual(ATSHost("Printer.LOCAL").kind, .local)
        XCTAssertEqual(ATSHost("Printer.LOCAL").name, "printer.local")
        XCTAssertEqual(ATSHost("[::1]").kind, .ipLiteral)
        XCTAssertEqual(ATSHost("api.fixtures.test.").name, "api.fixtures.test")
        XCTAssertEqual(ATSHost(url: URL(string: "https://[::1]:8443/")!)?.kind, .ipLiteral)
    }

    func testWildcardMatching() {
        typealias M = ATSHostnameMatcher
        XCTAssertTrue(M.matches(name: "a.example.com", pattern: "*.example.com"))
        XCTAssertTrue(M.matches(name: "A.Example.com", pattern: "*.EXAMPLE.com"))
        XCTAssertFalse(M.matches(name: "example.com", pattern: "*.example.com"))
        XCTAssertFalse(M.matches(name: "a.b.example.com", pattern: "*.example.com"))
        XCTAssertFalse(M.matches(name: "a.com", pattern: "*.com"))
        XCTAssertFalse(M.matches(name: "foo.example.com", pattern: "f*.example.com"))
        XCTAssertFalse(M.matches(name: "a.example.com", pattern: "a.*.com"))
        XCTAssertTrue(M.matches(name: "example.com", pattern: "example.com."))
    }

    // Apple's lists, written here from their sources rather than read from ATSCipherSuites (shared/ats-reference.md
    // quotes them): TLS 1.3's three suites and the TLS 1.2 ECDHE suites of the ATS group in Apple's open-source
    // Security code (SecProtocolTypes: AES-GCM, ChaCha20 and the AES-CBC-SHA pair; the CBC SHA256/SHA384 suites gone);
    // the RSA key-exchange suites that NSExceptionRequiresForwardSecrecy = NO adds, as Apple's documentation of that
    // key lists them.
    static let appleTLS13 = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
    static let appleATSGroupTLS12 = [
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    ]
    static let appleWithoutForwardSecrecy = [
        "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_CBC_SHA256",
        "TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA",
    ]
    /// Apple's documented list (2015 on, "Requirements for Connecting Using ATS"): eleven suites, ECDHE_RSA without
    /// AES_256_CBC_SHA.
    static let appleDocumented2015 = [
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    ]

    func testOffers() {
        let applied = ATSEvaluator().offer(for: URL(string: "https://a.example.com/")!)
        XCTAssertEqual(applied.minVersion, .tls1_2)
        XCTAssertEqual(applied.maxVersion, .tls1_3)
        XCTAssertEqual(Set(applied.tls12Suites), Set(Self.appleATSGroupTLS12))
        XCTAssertEqual(applied.tls12Suites.count, Self.appleATSGroupTLS12.count)
        XCTAssertEqual(Set(applied.tls13Suites), Set(Self.appleTLS13))

        let noPFS = ATSEvaluator(policy: ATSPolicy(["NSExceptionDomains": ["a.example.com": ["NSExceptionRequiresForwardSecrecy": false]]]))
            .offer(for: URL(string: "https://a.example.com/")!)
        XCTAssertEqual(Set(noPFS.tls12Suites), Set(Self.appleATSGroupTLS12 + Self.appleWithoutForwardSecrecy))
        XCTAssertEqual(noPFS.tls12Suites.count, Self.appleATSGroupTLS12.count + Self.appleWithoutForwardSecrecy.count)

        let off = ATSEvaluator(policy: ATSPolicy(["NSAllowsArbitraryLoads": true])).offer(for: URL(string: "https://a.example.com/")!)
        XCTAssertEqual(off.minVersion, .tls1_0)
        XCTAssertTrue(off.tls12Suites.contains("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"), "the catalog admits dhe-only by arbitrary loads")
        XCTAssertFalse(off.tls12Suites.contains { $0.contains("RC4") || $0.contains("3DES") || $0.contains("NULL") })

        let ios10 = ATSEvaluator(options: ATSEvaluationOptions(profile: .ios10)).offer(for: URL(string: "https://a.example.com/")!)
        XCTAssertEqual(ios10.maxVersion, .tls1_2)
        XCTAssertEqual(ios10.tls13Suites, [])

        let documented = ATSEvaluator(options: ATSEvaluationOptions(readings: ATSReadings(cipherSuites: .documented2015)))
            .offer(for: URL(string: "https://a.example.com/")!)
        XCTAssertEqual(Set(documented.tls12Suites), Set(Self.appleDocumented2015))
        XCTAssertEqual(documented.tls12Suites.count, 11)
    }

    func testPlistValueBridging() throws {
        let xml = """
        <?xml version="1.0"?><plist version="1.0"><dict><key>b</key><true/><key>i</key><integer>1</integer>
        <key>r</key><real>1.5</real><key>s</key><string>YES</string><key>a</key><array><false/></array></dict></plist>
        """
        let object = try PropertyListSerialization.propertyList(from: Data(xml.utf8), options: [], format: nil)
        XCTAssertEqual(ATSPlistValue(foundation: object),
                       ["b": true, "i": 1, "r": 1.5, "s": "YES", "a": [false]])
        XCTAssertEqual(ATSPlistValue(foundation: ["x": true] as [String: Any]), ["x": true])
        XCTAssertEqual(ATSPlistValue(foundation: ["x": 1] as [String: Any]), ["x": 1])
    }

    /// NSDictionary's description, as nscurl prints "ATS Dictionary:" (kiwix/kiwix-apple#1430 shows a real one):
    /// a nested collection opens after its own level's indentation on the key's line.
    func testNSDictionaryDescription() {
        let text = ATSPlistRendering.nsDictionaryDescription(["NSExceptionDomains": ["example.com": [
            "NSExceptionMinimumTLSVersion": "TLSv1.2", "NSIncludesSubdomains": true]]])
        XCTAssertEqual(text, """
        {
            NSExceptionDomains =     {
                "example.com" =         {
                    NSExceptionMinimumTLSVersion = "TLSv1.2";
                    NSIncludesSubdomains = true;
                };
            };
        }
        """)
        XCTAssertEqual(ATSPlistRendering.nsDictionaryDescription([:]), "{\n}")
        XCTAssertEqual(ATSPlistRendering.nsDictionaryDescription(["a": [1, 2]]), "{\n    a =     (\n        1,\n        2\n    );\n}")
    }
}
