import Foundation
import Testing
import TLSFixtures

/// How the Info.plist is *read*, rule by rule against Apple's parsers (issue 41). "Security" is
/// apple-oss-distributions/Security at Security-61901.0.87.0.1, "Libc" apple-oss-distributions/Libc; line numbers are
/// those of that release. Each suite only uses API that predates the issue, so it can be run against the old model.
enum AppleSource {
    static let configuration = "Security protocol/SecProtocolConfiguration.m"
    static let configurationTest = "Security protocol/SecProtocolConfigurationTest.m"
    static let policy = "Security OSX/sec/Security/SecPolicy.c"
    static let base64 = "Security OSX/sec/Security/SecBase64.c"
    static let libcInetPton = "Libc net/inet_pton.c"
}

@Suite("NSExceptionDomains keys with a \"/\" are read as Apple's cidr_string_to_subnet_and_mask reads them")
struct ATSCIDRKeyReadingTests {
    /// The exception entry that decides for `host` when the dictionary has one entry, under `key`.
    static func matched(_ key: String, _ host: String) -> String? {
        let policy = ATSPolicy([ATSKey.exceptionDomains: [key: [ATSKey.exceptionAllowsInsecureHTTPLoads: true]]])
        return ATSRequirementsResolver(policy: policy).resolve(host: ATSHost(host)).matchedExceptionDomain
    }

    static func warnings(_ key: String) -> [String] {
        ATSPolicy([ATSKey.exceptionDomains: [key: [:]]]).warnings
            .filter { $0.keyPath == [ATSKey.exceptionDomains, key] }.map(\.message)
    }

    @Test("a short or unusual form names the network Apple's parser reads", arguments: [
        // (key, an address inside, an address outside, the rule and where it is)
        ("10/8", "10.200.0.1", "11.0.0.1", "fewer than three dots: padded with .0 (524–531)"),
        ("10.1/16", "10.1.255.7", "10.2.0.1", "padded with .0 (524–531)"),
        ("0/0", "203.0.113.9", "2001:db8::1", "0.0.0.0/0: every IPv4 address, no IPv6 one (524–531, 151–158)"),
        ("2001:db8/32", "2001:db8::5", "2001:db9::5", "no :: and fewer than 7 colons: :: appended (549–557)"),
        ("fe80/10", "fe80::1", "fec0::1", "hex digits without a colon make an IPv6 network (509, 534–557)"),
        ("10.0.0.0/010", "10.64.0.1", "11.0.0.1", "strtol base 0: /010 is octal 8 (504)"),
        ("10.0.0.0/08", "203.0.113.9", "2001:db8::1", "strtol base 0 stops at the 8: /08 is /0 (504)"),
        ("0010.0.0.0/8", "10.3.0.1", "11.0.0.1",
         "inet_pton reads leading zeros as decimal (533; \(AppleSource.libcInetPton), inet_pton4)"),
        ("00002001:db8::/32", "2001:db8::1", "2001:db9::1",
         "a group may have more than four digits while its value fits 16 bits (560; inet_pton6, val > 0xffff)"),
    ])
    func readsShortForms(key: String, inside: String, outside: String, rule: String) {
        #expect(Self.matched(key, inside) == key, "\(key) should cover \(inside): \(rule)")
        #expect(Self.matched(key, outside) == nil, "\(key) should not cover \(outside): \(rule)")
    }

    @Test("a short form or an octal prefix is warned about, naming the network read")
    func warnsAboutAdjustments() {
        #expect(Self.warnings("10/8").contains { $0.contains("10.0.0.0/8") && $0.contains("pads") })
        #expect(Self.warnings("10.0.0.0/010").contains { $0.contains("/8") && $0.contains("octal") })
        #expect(Self.warnings("2001:db8/32").contains { $0.contains("appends \"::\"") })
        #expect(Self.warnings("10.0.0.0/8").isEmpty)
    }

    @Test("a key Apple's parser refuses makes an entry that never matches", arguments: [
        // (key, the address it seems to name, why Apple's parser refuses it)
        ("198.51.100.100/32", "198.51.100.100", "14 characters before the slash; the buffer takes 13 (519–522)"),
        ("2001:0db8:0000:0000:0000:0000:0000:0000/32", "2001:db8::1", "39 characters before the slash (544–547)"),
        ("::ffff:198.51.100.0/120", "::ffff:198.51.100.7", "a dot after a colon (463)"),
        ("[2001:db8::]/32", "2001:db8::1", "a bracket is not an allowed character (491)"),
        ("fe80::%en0/64", "fe80::1", "no interface scope: \"%\" is not allowed (491, 498)"),
        ("10.0.0.0/33", "10.0.0.1", "an IPv4 prefix above 32 (511)"),
        ("10.0.0.0/", "10.0.0.1", "strtol converts nothing: EINVAL (505)"),
        ("10.0.0.0/8/8", "10.0.0.1", "a second slash (480)"),
        ("10.0.0./8", "10.0.0.1", "the slash right after a dot (480)"),
        ("2001:db8::1:/64", "2001:db8::1", "the slash after a single colon (481)"),
        ("example.com/path", "93.184.216.34", "a letter past f is not allowed (491)"),
    ])
    func refusedKeysNeverMatch(key: String, address: String, why: String) {
        #expect(Self.matched(key, address) == nil, "\(key) must never match: \(why)")
        #expect(Self.warnings(key).contains { $0.contains("never matches") }, "\(key): \(Self.warnings(key))")
    }

    /// Apple's own CIDR test (SecProtocolConfigurationTest.m 549–627), keys written the long way, still reads the same.
    @Test("the keys of testCIDRExceptions read as Apple's test expects")
    func appleTestKeys() {
        #expect(Self.matched("198.51.100.0/24", "198.51.100.255") == "198.51.100.0/24")
        #expect(Self.matched("2001:db8::/32", "2001:db8:85a3::8a2e:370:7334") == "2001:db8::/32")
        #expect(Self.matched("::/0", "fe00::") == "::/0")
        #expect(Self.matched("0.0.0.0/1", "127.255.255.255") == "0.0.0.0/1")
        #expect(Self.matched("0.0.0.0/1", "128.0.0.0") == nil)
    }
}

@Suite("NSPinnedDomains digests are decoded as Apple's SecBase64Decode decodes them")
struct ATSPinDigestReadingTests {
    typealias F = ATSFactsKit
    static let host = "api.fixtures.test"
    /// The SPKI digest of the leaf `F.compliant(host)` presents.
    static let pin = F.pin("key-\(host)")

    static func verdict(_ identities: [ATSPlistValue]) -> (ATSVerdict, ATSPolicy) {
        let policy = ATSPolicy([ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: .array(identities)]]])
        let verdict = ATSEvaluator(policy: policy)
            .evaluate(url: URL(string: "https://\(host)/")!, facts: F.compliant(host))
        return (verdict, policy)
    }

    static func spaced(_ text: String, every count: Int, with separator: String) -> String {
        var out = ""
        for (index, character) in text.enumerated() {
            if index > 0, index % count == 0 { out += separator }
            out.append(character)
        }
        return out
    }

    /// SecBase64.c, SecBase64Decode_ 303–389 (every character outside the alphabet skipped, decoding ends after a
    /// padded quartet); SecPolicy.c, CreateCFDataFromBase64CFString 1466–1496.
    @Test("spaces, tabs, line breaks and text after the padding leave the same digest",
          arguments: [
            spaced(pin, every: 4, with: " "),
            spaced(pin, every: 22, with: "\n"),
            spaced(pin, every: 11, with: "\t\r\n"),
            "  \(pin)\n",
            "\(pin) (the leaf's key)",
          ])
    func whitespaceIsSkipped(written: String) {
        let (verdict, _) = Self.verdict([[ATSKey.spkiSHA256Base64: .string(written)]])
        #expect(verdict.allowed, "\(written.debugDescription) pins the leaf as \(Self.pin) does: \(verdict)")
        // Control: a different digest written the same way does not.
        let other = Self.spaced(F.pin("other"), every: 4, with: " ")
        #expect(!Self.verdict([[ATSKey.spkiSHA256Base64: .string(other)]]).0.allowed)
    }

    @Test("what Apple refuses pins the domain with nothing that matches", arguments: [
        // (the identity item, why nothing can match, where)
        (ATSPlistValue.dictionary([ATSKey.spkiSHA256Base64: .data(Data(base64Encoded: pin)!)]),
         "a <data> value is not a string: skipped (parseNSPinnedDomains, isString, 1565)"),
        (.string(pin), "an item that is not a dictionary: skipped (isDictionary, 1562)"),
        (.dictionary([:]), "no SPKI-SHA256-BASE64 key: skipped (1564–1565)"),
        (.dictionary([ATSKey.spkiSHA256Base64: ""]), "an empty string gives no data (1476)"),
        (.dictionary([ATSKey.spkiSHA256Base64: "!!!! ----"]), "nothing decodable gives no data (1479, 1485)"),
        (.dictionary([ATSKey.spkiSHA256Base64: .string(String(pin.dropLast()))]),
         "no padding: the last, unfinished quartet is dropped, leaving 30 bytes (SecBase64Decode_, 360)"),
        (.dictionary([ATSKey.spkiSHA256Base64: .string("sha256/" + pin)]),
         "TrustKit's sha256/ prefix is base64 too: 37 bytes, never a 32-byte digest"),
        (.dictionary([ATSKey.spkiSHA256Base64: .string(Data(repeating: 7, count: 20).base64EncodedString())]),
         "20 bytes: trustd compares whole digests (trust/trustd/SecPolicyServer.c, SecPolicyCheckLeafSPKISHA256)"),
    ])
    func refusedDigestsNeverMatch(item: ATSPlistValue, why: String) {
        let (verdict, policy) = Self.verdict([item])
        #expect(!verdict.allowed, "\(why): \(verdict)")
        #expect(verdict.violations.first?.rule == .pinning, "\(why): \(verdict)")
        #expect(!policy.warnings.isEmpty, "\(why): the parser says nothing")
    }
}

@Suite("NSThirdPartyException* keys: read on iOS 9, whose documentation listed them, ignored from iOS 10")
struct ATSThirdPartyKeyReadingTests {
    typealias F = ATSFactsKit
    typealias T = ATSReferenceTableTests

    /// Information Property List Key Reference: iOS 9's NSAppTransportSecurity table listed the three keys; its
    /// revision history for 2016-09-13 (the day iOS 10 shipped) "Removed all mention of the following
    /// third-party-server exception keys". Apple's parser (Security-59306 and later, SecProtocolConfiguration.m,
    /// sec_protocol_configuration_set_ats_overrides 735–738) reads only the plain keys.
    @Test("a third-party minimum version admits TLS 1.0 on iOS 9 only",
          arguments: [(ATSOSProfile.ios9, true), (.ios10, false), (.ios13, false), (.ios14, false), (.ios17, false)])
    func minimumVersion(profile: ATSOSProfile, allowed: Bool) {
        let policy = ATSPolicy(T.domainEntry([ATSKey.thirdPartyMinimumTLSVersion: "TLSv1.0"]))
        let verdict = ATSEvaluator(policy: policy, options: ATSEvaluationOptions(profile: profile))
            .evaluate(url: URL(string: T.https)!, facts: T.tls10)
        #expect(verdict.allowed == allowed, "\(profile): \(verdict)")
        #expect(verdict.rules.contains { $0.id == .thirdPartyKeys }, "\(profile): \(verdict.rules)")
    }

    @Test("a third-party insecure-HTTP key allows http:// on iOS 9 only; the plain key present wins")
    func insecureLoads() {
        let http = URL(string: "http://api.fixtures.test/")!
        let thirdParty = ATSPolicy(T.domainEntry([ATSKey.thirdPartyAllowsInsecureHTTPLoads: true]))
        func allowed(_ policy: ATSPolicy, _ profile: ATSOSProfile) -> Bool {
            ATSEvaluator(policy: policy, options: .init(profile: profile))
                .evaluate(url: http, facts: T.httpFacts).allowed
        }
        #expect(allowed(thirdParty, .ios9))
        #expect(!allowed(thirdParty, .ios10))
        let both = ATSPolicy(T.domainEntry([ATSKey.thirdPartyAllowsInsecureHTTPLoads: true,
                                            ATSKey.exceptionAllowsInsecureHTTPLoads: false]))
        #expect(!allowed(both, .ios9))
    }
}

@Suite("ats check names every key the chosen OS ignores", .ownThreads)
struct ATSCheckIgnoredKeyTests {
    static func check(_ os: String, plist: String) throws -> Subprocess.Result {
        let file = try TestEnvironment.file(Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>NSAppTransportSecurity</key><dict>\(plist)</dict></dict></plist>
            """.utf8), name: "Info.plist")
        // Port 1 refuses at once: the warnings come before the probe, which is all this looks at.
        return try TestEnvironment.tlsFixtures(["ats", "check", "--os", os, "--plist", file, "--resolve",
                                                "api.fixtures.test:1:127.0.0.1", "https://api.fixtures.test:1/"])
    }

    static let thirdParty = """
        <key>NSExceptionDomains</key><dict><key>api.fixtures.test</key><dict>
        <key>NSThirdPartyExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict></dict>
        """
    static let thirdPartyLine = "warning: NSAppTransportSecurity ▸ NSExceptionDomains ▸ api.fixtures.test ▸ "
        + "NSThirdPartyExceptionMinimumTLSVersion: "

    @Test("a third-party key: ignored from iOS 10, said so; read on iOS 9, not called ignored")
    func thirdPartyKeys() throws {
        let ios10 = try Self.check("ios10", plist: Self.thirdParty)
        #expect(ios10.stderr.contains(Self.thirdPartyLine + "iOS 10–12 ignores this key"), "\(ios10.stderr)")
        let ios17 = try Self.check("ios17", plist: Self.thirdParty)
        #expect(ios17.stderr.contains(Self.thirdPartyLine + "iOS 17+ ignores this key"), "\(ios17.stderr)")
        let ios9 = try Self.check("ios9", plist: Self.thirdParty)
        #expect(ios9.stderr.contains(Self.thirdPartyLine), "\(ios9.stderr)")
        #expect(!ios9.stderr.contains("ignores this key"), "\(ios9.stderr)")
    }

    @Test("keys that arrived later: NSPinnedDomains before iOS 14, NSAllowsLocalNetworking on iOS 9")
    func laterKeys() throws {
        let pinned = "<key>NSPinnedDomains</key><dict><key>api.fixtures.test</key><dict>"
            + "<key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key>"
            + "<string>\(ATSFactsKit.pin("x"))</string></dict></array></dict></dict>"
        let ios13 = try Self.check("ios13", plist: pinned)
        #expect(ios13.stderr.contains("warning: NSAppTransportSecurity ▸ NSPinnedDomains: iOS 13 ignores this key"),
                "\(ios13.stderr)")
        #expect(!(try Self.check("ios14", plist: pinned)).stderr.contains("ignores this key"))
        let local = try Self.check("ios9", plist: "<key>NSAllowsLocalNetworking</key><true/>")
        let localLine = "warning: NSAppTransportSecurity ▸ NSAllowsLocalNetworking: iOS 9 ignores this key"
        #expect(local.stderr.contains(localLine),
                "\(local.stderr)")
    }
}
