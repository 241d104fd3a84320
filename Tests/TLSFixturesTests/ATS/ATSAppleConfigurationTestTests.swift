import Foundation
import Testing
import TLSFixtures

/// Every assertion of Apple's `protocol/SecProtocolConfigurationTest.m` (apple-oss-distributions/Security,
/// Security-61901.0.87.0.1), as a statement about the model. Apple's helpers assert, per host, that TLS is required
/// (`sec_protocol_configuration_tls_required_for_host`/`_for_address`) and, in the options it makes, `ats_required`,
/// `min_version` (0 when the options were left alone) and whether cipher suites were set (forward secrecy). In the
/// model those are: http:// blocked (`!allowsInsecureHTTPLoads`), the app's trust override not honoured,
/// `minimumTLSVersion` where ATS applies (nothing where it does not), and `requiresForwardSecrecy`.
///
/// What cannot be a test of the model, and why:
/// - `testAppleBundleExceptionWithNoATSKey` (751–768): a configuration built for Apple's own bundles
///   (`is_apple`, arbitrary loads by default); the model is of third-party apps.
/// - `testExampleATSDictionaries` / `testExampleFile` (842–923): JSON dictionaries from Apple's test bundle, which
///   Apple does not publish.
/// - `test_sec_protocol_configuration_protocol_string_to_version` (925–993), its DTLS rows: `DTLSv1.0` and `DTLSv1.2`
///   are DTLS versions; what a TLS connection does with one as its minimum is not documented, so the model keeps
///   TLS 1.2 and warns (the other rows are below). The `NULL` row is the key being absent.
/// - The mock protocol and `sec_protocol_options` plumbing (1–342): machinery, not assertions about ATS.
///
/// Where the model deliberately answers otherwise, the row says which model rule and why, and the test checks that
/// the answer differs for that reason: if the model changes its mind, the row must change too.
@Suite("SecProtocolConfigurationTest.m, assertion by assertion")
struct ATSAppleConfigurationTestTests {
    /// What one of Apple's assertions says about one host.
    struct Row: Sendable, CustomStringConvertible {
        var line: Int
        var host: String
        /// `atsRequired`: TLS required, and `ats_required` set in the options.
        var required: Bool
        /// `minTLSVersion`; nil for Apple's 0 (the options untouched: ATS does not apply).
        var minimum: TLSVersion?
        /// `forwardSecrecyRequired`: the ATS cipher-suite group set.
        var forwardSecrecy: Bool
        /// The model rule behind a deliberate difference, if the model answers otherwise.
        var differsBy: ATSModelRule?

        var description: String { "line \(line), \(host)" }
    }

    /// One of Apple's configurations and the rows asserted with it.
    struct Case: Sendable, CustomStringConvertible {
        var test: String
        var ats: [String: ATSPlistValue]
        var rows: [Row]
        var description: String { test }
    }

    static func row(_ line: Int, _ host: String, _ required: Bool, _ minimum: TLSVersion?, _ forwardSecrecy: Bool,
                    differsBy: ATSModelRule? = nil) -> Row {
        Row(line: line, host: host, required: required, minimum: minimum, forwardSecrecy: forwardSecrecy,
            differsBy: differsBy)
    }

    /// `runGlobalKeysTestForHostname` (656–686): required means TLS 1.2 and the ATS suites; not required, nothing set.
    static func global(_ line: Int, _ host: String, _ required: Bool, differsBy: ATSModelRule? = nil) -> Row {
        row(line, host, required, required ? .tls1_2 : nil, required, differsBy: differsBy)
    }

    static func entry(_ fields: [String: ATSPlistValue]) -> ATSPlistValue { .dictionary(fields) }
    static let insecure = ATSKey.exceptionAllowsInsecureHTTPLoads
    static let minimum = ATSKey.exceptionMinimumTLSVersion
    static let forwardSecrecy = ATSKey.exceptionRequiresForwardSecrecy

    /// The built-in entries' rows, the same in three tests.
    static func builtIns(_ lines: ClosedRange<Int>, skipping: Set<String> = []) -> [Row] {
        let hosts: [(String, TLSVersion)] = [
            ("apple.com", .tls1_2), ("csd4.apple.com", .tls1_2), ("setup.icloud.com", .tls1_2),
            ("ls.apple.com", .tls1_0), ("gs.apple.com", .tls1_0), ("geo.apple.com", .tls1_0),
            ("is.autonavi.com", .tls1_0), ("apple-mapkit.com", .tls1_0),
        ]
        return zip(lines, hosts.filter { !skipping.contains($0.0) }).map { row($0, $1.0, false, $1.1, false) }
    }

    /// `runAllowsArbitraryLoadsOverrideTestWithATSDictionary` (770–788): a newer top-level key switches
    /// `NSAllowsArbitraryLoads` off. With `NSAllowsLocalNetworking = YES` the model exempts external IP addresses
    /// (rule local-networking-enables-ips, from the NSAllowsLocalNetworking page's iOS 17 text), where Apple's test
    /// passes `is_direct = false` for them, a flag CFNetwork computes and the test fixes.
    static func overrideRows(localNetworkingYes: Bool) -> [Row] {
        let ipRule: ATSModelRule? = localNetworkingYes ? .localNetworkingEnablesIPs : nil
        return [
            global(778, "localhost", false), global(779, "myhost.local", false), global(780, "example.com", true),
            global(781, "google.com", true), global(782, "127.0.0.1", false),
            global(783, "203.0.113.1", true, differsBy: ipRule), global(784, "::1", false),
            global(785, "fe80::1", false), global(786, "fe00::1", true, differsBy: ipRule),
            global(787, "2001:db8::8a2e:370:7334", true, differsBy: ipRule),
        ]
    }

    static let cases: [Case] = [
        Case(test: "testExceptionRaisesSecurityRequirements (377–421)", ats: [
            ATSKey.allowsArbitraryLoads: true,
            ATSKey.exceptionDomains: [
                "neverssl.com": entry([insecure: false, minimum: "TLSv1.3", forwardSecrecy: true]),
                "google.com": entry([insecure: true, minimum: "TLSv1.3", forwardSecrecy: true]),
                "youtube.com": entry([forwardSecrecy: true]),
                "myhost.local": entry([insecure: false, forwardSecrecy: true]),
            ],
        ], rows: [
            row(406, "example.com", false, nil, false), row(407, "neverssl.com", true, .tls1_3, true),
            row(408, "google.com", false, .tls1_3, true), row(409, "youtube.com", true, .tls1_2, true),
            row(410, "myhost.local", true, .tls1_2, true),
        ] + builtIns(413...420)),
        Case(test: "testBuiltInExceptions (423–446)", ats: [ATSKey.allowsArbitraryLoads: false], rows: [
            row(433, "example.com", true, .tls1_2, true), row(434, "neverssl.com", true, .tls1_2, true),
            row(435, "myhost.local", false, nil, false),
        ] + builtIns(438...445)),
        Case(test: "testExceptionOverridesBuiltInException (448–491)", ats: [
            ATSKey.allowsArbitraryLoads: false,
            ATSKey.exceptionDomains: [
                "neverssl.com": entry([insecure: false, minimum: "TLSv1.3", forwardSecrecy: true]),
                "apple.com": entry([insecure: false, minimum: "TLSv1.3", ATSKey.includesSubdomains: false,
                                    forwardSecrecy: true]),
                "setup.icloud.com": entry([insecure: false, minimum: "TLSv1.3"]),
            ],
        ], rows: [
            row(475, "example.com", true, .tls1_2, true), row(476, "neverssl.com", true, .tls1_3, true),
            row(477, "google.com", true, .tls1_2, true), row(478, "youtube.com", true, .tls1_2, true),
            row(479, "myhost.local", false, nil, false),
            row(482, "apple.com", true, .tls1_3, true), row(483, "csd4.apple.com", true, .tls1_2, true),
            row(484, "setup.icloud.com", true, .tls1_3, true), row(485, "test.setup.icloud.com", true, .tls1_2, true),
        ] + builtIns(486...490, skipping: ["apple.com", "csd4.apple.com", "setup.icloud.com"])),
        Case(test: "testInvalidATSDictionary (493–517)", ats: [
            ATSKey.allowsArbitraryLoads: "YES",
            ATSKey.exceptionDomains: [
                "invalid.exception.com": "",
                "neverssl.com": entry([insecure: "YES", minimum: 13, forwardSecrecy: "NO"]),
            ],
        ], rows: [
            row(511, "example.com", true, .tls1_2, true), row(512, "neverssl.com", true, .tls1_2, true),
            row(513, "google.com", true, .tls1_2, true), row(514, "youtube.com", true, .tls1_2, true),
            row(515, "myhost.local", false, nil, false), row(516, "invalid.exception.com", true, .tls1_2, true),
        ]),
        Case(test: "testIncludesSubdomains (519–547)", ats: [
            ATSKey.exceptionDomains: [
                "example.com": entry([insecure: true, ATSKey.includesSubdomains: true]),
                "subhostname.example.com": entry([insecure: false, ATSKey.includesSubdomains: false,
                                                  minimum: "TLSv1.3"]),
                "another.subhostname.example.com": entry([insecure: false, minimum: "TLSv1.1"]),
            ],
        ], rows: [
            row(543, "example.com", false, .tls1_2, true), row(544, "subhostname.example.com", true, .tls1_3, true),
            row(545, "another.subhostname.example.com", true, .tls1_1, true),
            row(546, "test.another.subhostname.example.com", false, .tls1_2, true),
        ]),
        Case(test: "testCIDRExceptions, first configuration (549–589)", ats: [
            ATSKey.exceptionDomains: [
                "example.com": entry([insecure: true]), "198.51.100.0/24": entry([insecure: true]),
                "198.51.100.0/27": entry([insecure: false]), "198.51.100.1": entry([insecure: true]),
                "198.51.100.101": entry([insecure: false]), "2001:db8::/32": entry([insecure: true]),
                "2001:db8::/64": entry([insecure: false]),
            ],
        ], rows: [
            row(567, "localhost", false, nil, false), row(568, "myhost.local", false, nil, false),
            row(569, "127.0.0.1", false, nil, false), row(570, "::1", false, nil, false),
            row(571, "example.com", false, .tls1_2, true), row(572, "google.com", true, .tls1_2, true),
            row(575, "198.51.100.1", false, .tls1_2, true), row(576, "198.51.100.100", false, .tls1_2, true),
            row(577, "198.51.100.255", false, .tls1_2, true),
            row(578, "2001:db8:85a3::8a2e:370:7334", false, .tls1_2, true),
            row(581, "1.1.1.1", true, .tls1_2, true), row(582, "198.51.100.0", true, .tls1_2, true),
            row(583, "198.51.100.101", true, .tls1_2, true), row(584, "198.51.101.0", true, .tls1_2, true),
            row(585, "203.0.113.0", true, .tls1_2, true), row(586, "255.255.255.0", true, .tls1_2, true),
            row(587, "fe00::", true, .tls1_2, true), row(588, "2001:db8::8a2e:370:7334", true, .tls1_2, true),
            row(589, "2001:db80:0000:0000:0000:0000:0000:0000", true, .tls1_2, true),
        ]),
        Case(test: "testCIDRExceptions, second configuration (591–627)", ats: [
            ATSKey.exceptionDomains: [
                "::/0": entry([insecure: true]), "::/1": entry([insecure: false]),
                "0.0.0.0/0": entry([insecure: true]), "0.0.0.0/1": entry([insecure: false]),
            ],
        ], rows: [
            row(604, "localhost", false, nil, false), row(605, "myhost.local", false, nil, false),
            row(606, "example.com", true, .tls1_2, true),
            row(609, "128.0.0.0", false, .tls1_2, true), row(610, "198.51.100.1", false, .tls1_2, true),
            row(611, "198.51.100.100", false, .tls1_2, true), row(612, "198.51.100.255", false, .tls1_2, true),
            row(613, "198.51.100.0", false, .tls1_2, true), row(614, "198.51.100.101", false, .tls1_2, true),
            row(615, "198.51.101.0", false, .tls1_2, true), row(616, "203.0.113.0", false, .tls1_2, true),
            row(617, "255.255.255.0", false, .tls1_2, true), row(618, "fe00::", false, .tls1_2, true),
            row(621, "127.0.0.1", true, .tls1_2, true), row(622, "::1", true, .tls1_2, true),
            row(623, "1.1.1.1", true, .tls1_2, true), row(624, "127.255.255.255", true, .tls1_2, true),
            row(625, "2001:db8::8a2e:370:7334", true, .tls1_2, true),
            row(626, "2001:db8:85a3::8a2e:370:7334", true, .tls1_2, true),
        ]),
        Case(test: "testMinTLSVersionDisallowedStrings (629–652)", ats: [
            ATSKey.exceptionDomains: [
                "example.com": entry([minimum: "TLSv1.4"]), "google.com": entry([minimum: "TLSV1.3"]),
                "neverssl.com": entry([minimum: "TLSv1.00"]),
            ],
        ], rows: [
            row(649, "example.com", true, .tls1_2, true), row(650, "google.com", true, .tls1_2, true),
            row(651, "neverssl.com", true, .tls1_2, true),
        ]),
        Case(test: "testLocalNetworkingAllowedByDefault (688–707)", ats: [:], rows: [
            global(698, "localhost", false), global(699, "myhost.local", false), global(700, "example.com", true),
            global(701, "127.0.0.1", false), global(702, "203.0.113.1", true), global(703, "::1", false),
            global(704, "fe80::1", false), global(705, "fe00::1", true), global(706, "2001:db8::8a2e:370:7334", true),
        ]),
        Case(test: "testLocalNetworkingDisabled (709–728)", ats: [ATSKey.allowsLocalNetworking: false], rows: [
            global(719, "localhost", true), global(720, "myhost.local", true), global(721, "example.com", true),
            global(722, "127.0.0.1", true), global(723, "203.0.113.1", true), global(724, "::1", true),
            global(725, "fe80::1", true), global(726, "fe00::1", true), global(727, "2001:db8::8a2e:370:7334", true),
        ]),
        Case(test: "testAllowsArbitraryLoads (730–749)", ats: [ATSKey.allowsArbitraryLoads: true], rows: [
            global(740, "localhost", false), global(741, "myhost.local", false), global(742, "example.com", false),
            global(743, "127.0.0.1", false), global(744, "203.0.113.1", false), global(745, "::1", false),
            global(746, "fe80::1", false), global(747, "fe00::1", false), global(748, "2001:db8::8a2e:370:7334", false),
        ]),
        Case(test: "testLocalNetworkingKeyOverridesAllowsArbitraryLoads (790–796)",
             ats: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsLocalNetworking: true],
             rows: overrideRows(localNetworkingYes: true)),
        Case(test: "testFalseWebContentKeyOverridesAllowsArbitraryLoads (798–804)",
             ats: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsInWebContent: false],
             rows: overrideRows(localNetworkingYes: false)),
        Case(test: "testTrueWebContentKeyOverridesAllowsArbitraryLoads (806–812)",
             ats: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsInWebContent: true],
             rows: overrideRows(localNetworkingYes: false)),
        Case(test: "testFalseMediaKeyOverridesAllowsArbitraryLoads (814–820)",
             ats: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsForMedia: false],
             rows: overrideRows(localNetworkingYes: false)),
        Case(test: "testTrueMediaKeyOverridesAllowsArbitraryLoads (822–828)",
             ats: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsForMedia: true],
             rows: overrideRows(localNetworkingYes: false)),
        Case(test: "testGarbageValueDisablesAllowsArbitraryLoads, @2 (832–833)", ats: [ATSKey.allowsArbitraryLoads: 2],
             rows: overrideRows(localNetworkingYes: false)),
        Case(test: "testGarbageValueDisablesAllowsArbitraryLoads, @\"YES\" (835–836)",
             ats: [ATSKey.allowsArbitraryLoads: "YES"],
             rows: overrideRows(localNetworkingYes: false)),
        Case(test: "testGarbageValueDisablesAllowsArbitraryLoads, @NO (838–839)",
             ats: [ATSKey.allowsArbitraryLoads: false],
             rows: overrideRows(localNetworkingYes: false)),
    ]

    @Test("each host of each configuration: TLS required, ats_required, min_version, cipher suites", arguments: cases)
    func configuration(_ item: Case) {
        let policy = ATSPolicy(item.ats)
        let resolver = ATSRequirementsResolver(policy: policy, options: ATSEvaluationOptions(profile: .ios17))
        for row in item.rows {
            let requirements = resolver.resolve(host: ATSHost(row.host))
            let required = !requirements.allowsInsecureHTTPLoads
            let minimum: TLSVersion? = requirements.atsApplies ? requirements.minimumTLSVersion : nil
            let forwardSecrecy = requirements.atsApplies && requirements.requiresForwardSecrecy
            let agrees = required == row.required && !requirements.trustOverrideHonoured == row.required
                && minimum == row.minimum && forwardSecrecy == row.forwardSecrecy
            let apple = "required \(row.required), minimum \(row.minimum?.rawValue ?? "0"), forward secrecy "
                + "\(row.forwardSecrecy)"
            let model = "\(required), \(minimum?.rawValue ?? "0"), \(forwardSecrecy)"
            let said = "\(item.test), \(row): Apple says \(apple); the model: \(model) "
                + "(\(requirements.rules.map(\.description)))"
            if let rule = row.differsBy {
                #expect(!agrees, "the model now agrees; drop differsBy: \(said)")
                #expect(requirements.rules.contains { $0.id == rule },
                        "the difference should come from \(rule.rawValue): \(said)")
            } else {
                #expect(agrees, "\(said)")
            }
        }
    }

    /// `test_sec_protocol_configuration_protocol_string_to_version` (925–993) as `NSExceptionMinimumTLSVersion` values,
    /// and the strings of `testMinTLSVersionDisallowedStrings`.
    @Test("NSExceptionMinimumTLSVersion strings read as Apple's protocol_string_to_version reads them",
          arguments: [
            (nil, TLSVersion.tls1_2), ("", .tls1_2), ("A", .tls1_2), ("SSLv3.0", .tls1_2), ("TLSv1.0", .tls1_0),
            ("TLSv1.1", .tls1_1), ("TLSv1.2", .tls1_2), ("TLSv1.3", .tls1_3), ("TLSv1.31", .tls1_2),
            ("TLSv1.4", .tls1_2), ("DTLSv1.0", .tls1_2), ("DTLSv1.2", .tls1_2), ("DTLSv1.3", .tls1_2),
            ("TLSV1.3", .tls1_2), ("TLSv1.00", .tls1_2),
          ] as [(String?, TLSVersion)])
    func versionStrings(written: String?, version: TLSVersion) {
        let fields: [String: ATSPlistValue] = written.map { [Self.minimum: .string($0)] } ?? [:]
        let policy = ATSPolicy([ATSKey.exceptionDomains: ["example.com": .dictionary(fields)]])
        let requirements = ATSRequirementsResolver(policy: policy).resolve(host: ATSHost("example.com"))
        #expect(requirements.minimumTLSVersion == version, "\(written ?? "no key")")
        if let written, written.hasPrefix("DTLSv1."), written != "DTLSv1.3" {
            #expect(policy.warnings.contains { $0.message.contains("DTLS version") }, "\(written): \(policy.warnings)")
        }
    }
}
