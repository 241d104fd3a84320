import Foundation
import XCTest
import TLSFixtures

/// One row of the reference table: a URL, a policy, what the server shows, and what ATS decides.
struct ATSReferenceCase: Sendable {
    var name: String
    var url: String
    var policy: [String: ATSPlistValue] = [:]
    var facts: ServerFacts
    var options = ATSEvaluationOptions()
    var allowed: Bool
    /// The first violation's rule, for blocked cases.
    var rule: ATSRule?
    var atsApplies: Bool?
    /// `.some(nil)` asserts that no exception entry matched.
    var matched: String??
    var pinned: String??
    var noteContains: String?
    var urlError: Int?
    var waivedCount: Int?
    /// Some warning of the policy contains this text.
    var warningContains: String? = nil
    /// No warning names one of these keys.
    var noWarningOn: [String] = []
    /// The verdict lists this model rule, with this reading when one is given.
    var appliedRule: ATSModelRule? = nil
    var appliedReading: String? = nil
}

/// Table-driven cases taken from ats-reference.md. Each case's comment names the section of the
/// reference (and through it the Apple document or source file) it comes from.
final class ATSReferenceTableTests: XCTestCase {
    typealias F = ATSFactsKit

    static let host = "api.fixtures.test"
    static let https = "https://api.fixtures.test/"
    static var modern: ServerFacts { F.compliant(host) }
    static var tls10: ServerFacts { F.speaking(host, F.tls10Only) }
    static var tls11: ServerFacts { F.speaking(host, F.tls11Only) }
    static var tls12: ServerFacts { F.speaking(host, F.tls12Only) }
    static var httpFacts: ServerFacts { ServerFacts(scheme: "http", accepted: [:], presentedChain: [], trust: nil) }
    static func ios(_ profile: ATSOSProfile, _ edit: (inout ATSEvaluationOptions) -> Void = { _ in }) -> ATSEvaluationOptions {
        var options = ATSEvaluationOptions(profile: profile)
        edit(&options)
        return options
    }
    static func withLeaf(_ host: String = host, anchor: TrustAnchorKind = .userInstalled,
                         accepted: AcceptedSuites = F.modernSuites, chainError: VerifyError? = nil,
                         _ edit: (inout CertificateFacts) -> Void) -> ServerFacts {
        var leaf = F.leaf(host)
        edit(&leaf)
        return F.facts(leaf: leaf, accepted: accepted, chainError: chainError, anchor: anchor)
    }
    static var selfSigned: ServerFacts {
        var leaf = F.leaf(host, issuer: "CN=\(host),O=swift-tls-fixtures")
        leaf.isSelfIssued = true
        return F.facts(leaf: leaf, chainError: F.verifyError(18, "self-signed certificate"), verified: [leaf])
    }
    static var expired: ServerFacts {
        withLeaf(chainError: F.verifyError(10, "certificate has expired")) {
            $0.notBefore = F.now - 400 * F.day; $0.notAfter = F.now - F.day
        }
    }
    static func domainEntry(_ key: String, _ fields: [String: ATSPlistValue]) -> [String: ATSPlistValue] {
        [ATSKey.exceptionDomains: [key: .dictionary(fields)]]
    }
    static func domainEntry(_ fields: [String: ATSPlistValue]) -> [String: ATSPlistValue] {
        domainEntry(host, fields)
    }
    /// A TLS 1.0 server whose certificate carries the IP as an IP SAN.
    static func ipServer(_ ip: String) -> ServerFacts {
        var leaf = F.leaf(host)
        leaf.ipAddresses = [ip]
        return F.facts(leaf: leaf, accepted: F.tls10Only)
    }
    static let pinnedLeaf = F.pin("key-\(host)")
    static let caPin = F.builtInCA.spkiSHA256

    static let cases: [ATSReferenceCase] = [
        // §Default requirements: a TLS 1.2+, ECDHE, RSA-2048, SHA-256, trusted server passes.
        ATSReferenceCase(name: "default allows a compliant server", url: https, facts: modern, allowed: true,
                      atsApplies: true, matched: .some(nil)),
        // §Default requirements, Scheme: "http:// is blocked: NSURLErrorDomain -1022".
        ATSReferenceCase(name: "http blocked", url: "http://api.fixtures.test/", facts: httpFacts, allowed: false,
                      rule: .scheme, urlError: -1022),
        // §Keys, NSExceptionAllowsInsecureHTTPLoads: "allows http://".
        ATSReferenceCase(name: "insecure HTTP loads allow http", url: "http://api.fixtures.test/",
                      policy: domainEntry([ATSKey.exceptionAllowsInsecureHTTPLoads: true]), facts: httpFacts, allowed: true,
                      matched: .some(host)),
        // §Keys, NSAllowsArbitraryLoads: "ATS off for domains not in NSExceptionDomains".
        ATSReferenceCase(name: "arbitrary loads allow http", url: "http://api.fixtures.test/",
                      policy: [ATSKey.allowsArbitraryLoads: true], facts: httpFacts, allowed: true, atsApplies: false),
        // §Keys, NSAllowsArbitraryLoads: lifts the TLS version rule for hosts without an entry.
        ATSReferenceCase(name: "arbitrary loads allow TLS 1.0", url: https, policy: [ATSKey.allowsArbitraryLoads: true],
                      facts: tls10, allowed: true, atsApplies: false),
        // §Keys, NSExceptionDomains: "Any entry, even an empty one, replaces every top-level key for that domain."
        ATSReferenceCase(name: "empty exception entry overrides arbitrary loads (TLS)", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.exceptionDomains: [host: [:]]], facts: tls10,
                      allowed: false, rule: .tlsVersion, atsApplies: true, matched: .some(host),
                      noteContains: "replaces the top-level NSAllowsArbitraryLoads"),
        // §Keys, NSExceptionDomains: the same, for http (entry without insecure loads → -1022).
        ATSReferenceCase(name: "empty exception entry overrides arbitrary loads (http)", url: "http://api.fixtures.test/",
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.exceptionDomains: [host: [:]]], facts: httpFacts,
                      allowed: false, rule: .scheme, urlError: -1022),
        // §Keys, NSAllowsArbitraryLoads: "Ignored (iOS 10+) when … NSAllowsLocalNetworking is present, whatever its value."
        ATSReferenceCase(name: "arbitrary loads ignored: NSAllowsLocalNetworking YES", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsLocalNetworking: true], facts: tls10,
                      allowed: false, rule: .tlsVersion, atsApplies: true, noteContains: "NSAllowsArbitraryLoads is ignored"),
        // §Keys, NSAllowsArbitraryLoads: … present with value NO still switches it off.
        ATSReferenceCase(name: "arbitrary loads ignored: NSAllowsLocalNetworking NO", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsLocalNetworking: false], facts: tls10,
                      allowed: false, rule: .tlsVersion, atsApplies: true),
        // §Keys, NSAllowsArbitraryLoads: "whatever its value" — a number is a value of the right type (Apple's
        // parser compares it with YES), so <integer>0</integer> is present, as NO.
        ATSReferenceCase(name: "arbitrary loads ignored: NSAllowsLocalNetworking the integer 0", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsLocalNetworking: 0], facts: tls10,
                      allowed: false, rule: .tlsVersion, atsApplies: true, noteContains: "NSAllowsArbitraryLoads is ignored"),
        // §Keys, NSAllowsArbitraryLoads: … NSAllowsArbitraryLoadsForMedia present (NO), data load.
        ATSReferenceCase(name: "arbitrary loads ignored: ForMedia NO", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsForMedia: false], facts: tls10,
                      allowed: false, rule: .tlsVersion, noteContains: "NSAllowsArbitraryLoadsForMedia"),
        // §Keys, NSAllowsArbitraryLoads: … NSAllowsArbitraryLoadsInWebContent present.
        ATSReferenceCase(name: "arbitrary loads ignored: InWebContent YES", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsInWebContent: true],
                      facts: tls10, allowed: false, rule: .tlsVersion),
        // §Keys, NSAllowsArbitraryLoads: the clause is iOS 10+; iOS 9 does not know the newer keys.
        ATSReferenceCase(name: "iOS 9: local networking key does not switch arbitrary loads off", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsLocalNetworking: true], facts: tls10,
                      options: ios(.ios9), allowed: true, atsApplies: false, noteContains: "iOS 9 ignores"),
        // §The localhost trap: "ATS does not apply, by default, to unqualified names (localhost)".
        ATSReferenceCase(name: "localhost is unqualified: exempt", url: "https://localhost:8443/",
                      facts: F.speaking("localhost", F.tls10Only), allowed: true, atsApplies: false,
                      noteContains: "localhost trap"),
        // §Keys, NSAllowsLocalNetworking: "lifts ATS's extra checks only; default trust still applies".
        ATSReferenceCase(name: "localhost exempt but default trust applies", url: "https://localhost:8443/",
                      facts: selfSigned, allowed: false, rule: .trustChain, atsApplies: false, urlError: -1202),
        // §The localhost trap: ".local names" are exempt.
        ATSReferenceCase(name: ".local name exempt", url: "https://printer.local/",
                      facts: F.speaking("printer.local", F.tls10Only), allowed: true, atsApplies: false),
        // §Keys, NSAllowsLocalNetworking: IP addresses exempt on iOS 10–16.
        ATSReferenceCase(name: "IP literal exempt on iOS 13", url: "https://127.0.0.1:8443/", facts: tls10,
                      options: ios(.ios13), allowed: true, atsApplies: false),
        // §Keys, IP addresses on iOS 17+: external IP literals fall under ATS without an exception entry.
        ATSReferenceCase(name: "external IP literal not exempt on iOS 17", url: "https://203.0.113.9:8443/",
                      facts: ipServer("203.0.113.9"), allowed: false, rule: .tlsVersion, atsApplies: true,
                      noteContains: "from iOS 17"),
        // §Keys, NSExceptionDomains: "From iOS 17 a key may be an IP literal".
        ATSReferenceCase(name: "IP literal exception key (iOS 17)", url: "https://127.0.0.1:8443/",
                      policy: domainEntry("127.0.0.1", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]), facts: tls10,
                      allowed: true, atsApplies: true, matched: .some("127.0.0.1")),
        // §Keys, NSExceptionDomains: IPv6 literal keys, compared as addresses.
        ATSReferenceCase(name: "IPv6 literal exception key (iOS 17)", url: "https://[::1]:8443/",
                      policy: domainEntry("0:0:0:0:0:0:0:1", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]), facts: tls10,
                      allowed: true, matched: .some("0:0:0:0:0:0:0:1")),
        // §Keys, NSExceptionDomains: "or CIDR (longest prefix wins)" — the /16 (empty) beats the /8.
        ATSReferenceCase(name: "CIDR longest prefix wins (blocking /16)", url: "https://10.1.2.3/",
                      policy: [ATSKey.exceptionDomains: ["10.0.0.0/8": [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"],
                                                         "10.1.0.0/16": [:]]],
                      facts: ipServer("10.1.2.3"), allowed: false, rule: .tlsVersion, matched: .some("10.1.0.0/16")),
        // §Keys, NSExceptionDomains: outside the /16 the /8 applies.
        ATSReferenceCase(name: "CIDR /8 applies outside the /16", url: "https://10.2.3.4/",
                      policy: [ATSKey.exceptionDomains: ["10.0.0.0/8": [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"],
                                                         "10.1.0.0/16": [:]]],
                      facts: ipServer("10.2.3.4"), allowed: true, matched: .some("10.0.0.0/8")),
        // §Keys, NSExceptionDomains: "A DNS entry never matches a connection made by IP".
        ATSReferenceCase(name: "DNS entry does not match an IP connection", url: "https://203.0.113.9/",
                      policy: domainEntry("localhost", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: ipServer("203.0.113.9"), allowed: false, rule: .tlsVersion, matched: .some(nil)),
        // §Keys, NSExceptionDomains: "… and the reverse": an IP key never matches a name.
        ATSReferenceCase(name: "IP entry does not match a DNS name", url: "https://localhost.fixtures.test/",
                      policy: domainEntry("127.0.0.1", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: F.speaking("localhost.fixtures.test", F.tls10Only), allowed: false, rule: .tlsVersion,
                      matched: .some(nil)),
        // §Keys, NSIncludesSubdomains: default reading "every subdomain" (older docs and the source).
        ATSReferenceCase(name: "NSIncludesSubdomains: every subdomain (default reading)", url: "https://a.b.example.test/",
                      policy: domainEntry("example.test", [ATSKey.includesSubdomains: true, ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: F.speaking("a.b.example.test", F.tls10Only), allowed: true, matched: .some("example.test")),
        // §Keys, NSIncludesSubdomains: current docs "one extra label" — two labels deep does not match.
        ATSReferenceCase(name: "NSIncludesSubdomains: one-extra-label reading, two deep", url: "https://a.b.example.test/",
                      policy: domainEntry("example.test", [ATSKey.includesSubdomains: true, ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: F.speaking("a.b.example.test", F.tls10Only),
                      options: ios(.ios17) { $0.readings.subdomains = .oneExtraLabel },
                      allowed: false, rule: .tlsVersion, matched: .some(nil)),
        // §Keys, NSIncludesSubdomains: one extra label does match under that reading.
        ATSReferenceCase(name: "NSIncludesSubdomains: one-extra-label reading, one deep", url: "https://a.example.test/",
                      policy: domainEntry("example.test", [ATSKey.includesSubdomains: true, ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: F.speaking("a.example.test", F.tls10Only),
                      options: ios(.ios17) { $0.readings.subdomains = .oneExtraLabel },
                      allowed: true, matched: .some("example.test")),
        // §Keys, NSIncludesSubdomains (NO): without it a subdomain is not covered.
        ATSReferenceCase(name: "no NSIncludesSubdomains: subdomain not covered", url: "https://a.example.test/",
                      policy: domainEntry("example.test", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: F.speaking("a.example.test", F.tls10Only), allowed: false, rule: .tlsVersion, matched: .some(nil)),
        // §Keys: "booleans must be real booleans, a string "YES" is ignored" (NSIncludesSubdomains).
        ATSReferenceCase(name: "string YES for NSIncludesSubdomains ignored", url: "https://a.example.test/",
                      policy: domainEntry("example.test", [ATSKey.includesSubdomains: "YES", ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: F.speaking("a.example.test", F.tls10Only), allowed: false, rule: .tlsVersion),
        // §Keys: a string "YES" for NSAllowsArbitraryLoads is ignored.
        ATSReferenceCase(name: "string YES for NSAllowsArbitraryLoads ignored", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: "YES"], facts: tls10, allowed: false, rule: .tlsVersion,
                      atsApplies: true),
        // §Keys, NSExceptionMinimumTLSVersion: TLSv1.0 admits a TLS 1.0 server.
        ATSReferenceCase(name: "minimum TLSv1.0", url: https, policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                      facts: tls10, allowed: true),
        // §Keys, NSExceptionMinimumTLSVersion: TLSv1.1 admits TLS 1.1 …
        ATSReferenceCase(name: "minimum TLSv1.1 admits 1.1", url: https, policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.1"]),
                      facts: tls11, allowed: true),
        // §Keys, NSExceptionMinimumTLSVersion: … but not TLS 1.0.
        ATSReferenceCase(name: "minimum TLSv1.1 blocks 1.0", url: https, policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.1"]),
                      facts: tls10, allowed: false, rule: .tlsVersion, urlError: -1200),
        // §Keys, NSExceptionMinimumTLSVersion: TLSv1.2 is the default, stated explicitly.
        ATSReferenceCase(name: "minimum TLSv1.2 admits 1.2", url: https, policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.2"]),
                      facts: tls12, allowed: true),
        // §Keys, NSExceptionMinimumTLSVersion: TLSv1.3 blocks a server that stops at 1.2.
        ATSReferenceCase(name: "minimum TLSv1.3 blocks 1.2-only", url: https, policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.3"]),
                      facts: tls12, allowed: false, rule: .tlsVersion),
        // §Keys, NSExceptionMinimumTLSVersion: "any other string is ignored" (so TLSv1.2 stays).
        ATSReferenceCase(name: "invalid minimum version ignored", url: https, policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1"]),
                      facts: tls10, allowed: false, rule: .tlsVersion, matched: .some(host)),
        // §Keys, NSExceptionRequiresForwardSecrecy: NO admits TLS_RSA_* suites.
        ATSReferenceCase(name: "forward secrecy NO admits static RSA", url: https,
                      policy: domainEntry([ATSKey.exceptionRequiresForwardSecrecy: false]), facts: F.speaking(host, F.staticRSA),
                      allowed: true),
        // §Default requirements, cipher suites: forward secret ECDHE only.
        ATSReferenceCase(name: "static RSA blocked by default", url: https, facts: F.speaking(host, F.staticRSA),
                      allowed: false, rule: .forwardSecrecy),
        // §Keys, NSExceptionRequiresForwardSecrecy: NO "drops the key-size rule" (iOS 10–12: no iOS 13 RSA rule).
        ATSReferenceCase(name: "forward secrecy NO drops the key-size rule", url: https,
                      policy: domainEntry([ATSKey.exceptionRequiresForwardSecrecy: false]),
                      facts: withLeaf { $0.keyBits = 1024 }, options: ios(.ios10), allowed: true),
        // §Default requirements: "Leaf key: RSA ≥ 2048" (iOS 10–12, ATS rule alone).
        ATSReferenceCase(name: "RSA-1024 leaf blocked by ATS key size", url: https, facts: withLeaf { $0.keyBits = 1024 },
                      options: ios(.ios10), allowed: false, rule: .leafKeySize),
        // §Default requirements: "EC ≥ 256".
        ATSReferenceCase(name: "EC-224 leaf blocked", url: https,
                      facts: withLeaf { $0.keyType = .ec; $0.keyBits = 224; $0.curve = "secp224r1" },
                      allowed: false, rule: .leafKeySize),
        // §Keys, NSExceptionRequiresForwardSecrecy: NO adds only TLS_RSA_*, not DHE.
        ATSReferenceCase(name: "forward secrecy NO does not admit DHE", url: https,
                      policy: domainEntry([ATSKey.exceptionRequiresForwardSecrecy: false]), facts: F.speaking(host, F.dheOnly),
                      allowed: false, rule: .cipherSuite),
        // §Default requirements, cipher suites: current source drops the CBC SHA256 suites …
        ATSReferenceCase(name: "CBC-SHA256 suite blocked under the current-source list", url: https,
                      facts: F.speaking(host, [.tls1_2: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"]]),
                      allowed: false, rule: .cipherSuite),
        // §Default requirements, cipher suites: … which the 2015 documented list has.
        ATSReferenceCase(name: "CBC-SHA256 suite allowed under the 2015 documented list", url: https,
                      facts: F.speaking(host, [.tls1_2: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"]]),
                      options: ios(.ios17) { $0.readings.cipherSuites = .documented2015 }, allowed: true),
        // §Default requirements, cipher suites: ChaCha20 is in the current source only.
        ATSReferenceCase(name: "ChaCha20 TLS 1.2 suite under the 2015 list", url: https,
                      facts: F.speaking(host, [.tls1_2: ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"]]),
                      options: ios(.ios17) { $0.readings.cipherSuites = .documented2015 }, allowed: false, rule: .cipherSuite),
        // §Keys, NSExceptionAllowsInsecureHTTPLoads: "lets the app's trust override accept an otherwise untrusted certificate".
        ATSReferenceCase(name: "trust override + insecure loads accepts self-signed", url: https,
                      policy: domainEntry([ATSKey.exceptionAllowsInsecureHTTPLoads: true]), facts: selfSigned,
                      options: ios(.ios17) { $0.trustOverride = true }, allowed: true, waivedCount: 1),
        // §Keys, NSExceptionAllowsInsecureHTTPLoads: without it the override is not honoured under ATS.
        ATSReferenceCase(name: "trust override without insecure loads: blocked", url: https, facts: selfSigned,
                      options: ios(.ios17) { $0.trustOverride = true }, allowed: false, rule: .trustChain,
                      noteContains: "not honoured"),
        // §Keys, NSAllowsArbitraryLoads: "HTTPS keeps default trust, and the app's delegate may loosen it".
        ATSReferenceCase(name: "arbitrary loads + trust override accepts expired", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true], facts: expired,
                      options: ios(.ios17) { $0.trustOverride = true }, allowed: true, atsApplies: false),
        // §Keys, NSAllowsArbitraryLoads: without the override default trust still rejects it. The reference's
        // "-1201 bad date" is a header name; public URLSession logs of expired certificates show -1202 with -9814
        // underneath (https://github.com/bang590/JSPatch/issues/871; docs/apple-evidence.md §1).
        ATSReferenceCase(name: "arbitrary loads alone keeps default trust", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true], facts: expired, allowed: false, rule: .trustChain,
                      urlError: -1202),
        // §Keys, NSExceptionAllowsInsecureHTTPLoads: "Does not lower the TLS version or cipher rules."
        ATSReferenceCase(name: "insecure loads + override does not lower TLS version", url: https,
                      policy: domainEntry([ATSKey.exceptionAllowsInsecureHTTPLoads: true]), facts: tls10,
                      options: ios(.ios17) { $0.trustOverride = true }, allowed: false, rule: .tlsVersion),
        // §Keys, NSPinnedDomains: "the leaf's SPKI must be listed" — listed.
        ATSReferenceCase(name: "pinned leaf matches", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(pinnedLeaf)]]]]],
                      facts: modern, allowed: true, pinned: .some(host)),
        // §Keys, NSPinnedDomains: leaf not listed → -1200 / -9802.
        ATSReferenceCase(name: "pinned leaf mismatch", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, allowed: false, rule: .pinning, urlError: -1200),
        // §Keys, NSPinnedDomains: "CA list: some CA in the chain must be listed".
        ATSReferenceCase(name: "pinned CA matches", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedCAIdentities: [[ATSKey.spkiSHA256Base64: .string(caPin)]]]]],
                      facts: modern, allowed: true),
        // §Keys, NSPinnedDomains: "both given: both must hold" — CA ok, leaf not.
        ATSReferenceCase(name: "pinned both: leaf fails", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [
                        ATSKey.pinnedCAIdentities: [[ATSKey.spkiSHA256Base64: .string(caPin)]],
                        ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, allowed: false, rule: .pinning),
        // §Keys, NSPinnedDomains: NSIncludesSubdomains extends the pins to subdomains.
        ATSReferenceCase(name: "pinned domain with subdomains applies", url: https,
                      policy: [ATSKey.pinnedDomains: ["fixtures.test": [ATSKey.includesSubdomains: true,
                        ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, allowed: false, rule: .pinning, pinned: .some("fixtures.test")),
        // §Keys, NSPinnedDomains: without NSIncludesSubdomains a subdomain is not pinned.
        ATSReferenceCase(name: "pinned domain without subdomains does not apply", url: https,
                      policy: [ATSKey.pinnedDomains: ["fixtures.test": [
                        ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, allowed: true, pinned: .some(nil)),
        // §Keys, NSPinnedDomains (iOS 14+): iOS 10–12 ignore it.
        ATSReferenceCase(name: "pinned domains ignored before iOS 14", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, options: ios(.ios10), allowed: true, pinned: .some(nil), noteContains: "needs iOS 14"),
        // §Keys, NSPinnedDomains (iOS 14+): iOS 13 ignores it too; iOS 14 applies it.
        ATSReferenceCase(name: "pinned domains ignored on iOS 13", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, options: ios(.ios13), allowed: true, pinned: .some(nil), noteContains: "needs iOS 14"),
        ATSReferenceCase(name: "pinned domains applied on iOS 14", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, options: ios(.ios14), allowed: false, rule: .pinning, pinned: .some(host)),
        // §Keys, NSPinnedDomains: "Pinning never relaxes any other rule" — pins match but TLS 1.0 still blocks.
        ATSReferenceCase(name: "pinning does not relax TLS version", url: https,
                      policy: [ATSKey.pinnedDomains: [host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(pinnedLeaf)]]]]],
                      facts: tls10, allowed: false, rule: .tlsVersion),
        // §Certificate rules beyond ATS: 826-day validity, user-installed root skips the maximum.
        ATSReferenceCase(name: "826 days, user root: allowed", url: https,
                      facts: withLeaf { $0.notAfter = $0.notBefore + 826 * F.day }, allowed: true),
        // §Certificate rules beyond ATS: app-supplied anchors keep the 825-day maximum.
        ATSReferenceCase(name: "826 days, app anchor: blocked", url: https,
                      facts: withLeaf(anchor: .appSupplied) { $0.notAfter = $0.notBefore + 826 * F.day },
                      allowed: false, rule: .validityPeriod, urlError: -1202),
        // §Certificate rules beyond ATS: 825 days exactly is within the limit.
        ATSReferenceCase(name: "825 days, app anchor: allowed", url: https,
                      facts: withLeaf(anchor: .appSupplied) { $0.notAfter = $0.notBefore + 825 * F.day }, allowed: true),
        // §Certificate rules beyond ATS: the 825-day rule covers certificates issued after 2019-07-01 only.
        ATSReferenceCase(name: "900 days issued before 2019-07-01, app anchor: allowed", url: https,
                      facts: withLeaf(anchor: .appSupplied) {
                        $0.notBefore = Date(timeIntervalSince1970: 1_546_300_800); $0.notAfter = $0.notBefore + 900 * F.day
                      }, allowed: true),
        // §Certificate rules beyond ATS: iOS 13 rules are iOS 13+ (iOS 10–12 accept 826 days).
        ATSReferenceCase(name: "826 days, app anchor, iOS 10: allowed", url: https,
                      facts: withLeaf(anchor: .appSupplied) { $0.notAfter = $0.notBefore + 826 * F.day },
                      options: ios(.ios10), allowed: true),
        // §Certificate rules beyond ATS: "issued from 2020-09-01 by preinstalled roots: ≤ 398 days". (A publicly
        // trusted leaf carries SCTs: Certificate Transparency is required of it, support note 103214.)
        ATSReferenceCase(name: "399 days, system root: blocked", url: https,
                      facts: withLeaf(anchor: .system) { $0.notAfter = $0.notBefore + 399 * F.day; $0.hasEmbeddedSCTs = true },
                      allowed: false, rule: .validityPeriod, noteContains: "Apple also requires them from logs it approves"),
        // §Certificate rules beyond ATS: the 398-day rule is iOS 14+ (support note 102028); iOS 13 allows up to 825.
        ATSReferenceCase(name: "399 days, system root, iOS 13: allowed", url: https,
                      facts: withLeaf(anchor: .system) { $0.notAfter = $0.notBefore + 399 * F.day; $0.hasEmbeddedSCTs = true },
                      options: ios(.ios13), allowed: true),
        // §Certificate rules beyond ATS: the 398-day rule is for preinstalled roots only.
        ATSReferenceCase(name: "399 days, user root: allowed", url: https,
                      facts: withLeaf { $0.notAfter = $0.notBefore + 399 * F.day }, allowed: true),
        // §Certificate rules beyond ATS: "certificates … need EKU serverAuth" (strict: present) — app anchor.
        ATSReferenceCase(name: "no EKU extension, app anchor: blocked", url: https,
                      facts: withLeaf(anchor: .appSupplied) { $0.extendedKeyUsage = nil }, allowed: false, rule: .extendedKeyUsage),
        // §Certificate rules beyond ATS: user-installed roots "skip … the strict EKU rule".
        ATSReferenceCase(name: "no EKU extension, user root: allowed", url: https,
                      facts: withLeaf { $0.extendedKeyUsage = nil }, allowed: true),
        // §Certificate rules beyond ATS: "SHA-1 signatures untrusted" even with ATS off (iOS 13+).
        ATSReferenceCase(name: "SHA-1 leaf with arbitrary loads, iOS 17: blocked", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true],
                      facts: withLeaf { $0.signatureDigest = "sha1"; $0.signatureAlgorithm = "sha1WithRSAEncryption" },
                      allowed: false, rule: .ios13SHA1, atsApplies: false),
        // §Certificate rules beyond ATS: before iOS 13 SHA-1 is only an ATS rule, lifted by arbitrary loads.
        ATSReferenceCase(name: "SHA-1 leaf with arbitrary loads, iOS 10: allowed", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true],
                      facts: withLeaf { $0.signatureDigest = "sha1"; $0.signatureAlgorithm = "sha1WithRSAEncryption" },
                      options: ios(.ios10), allowed: true),
        // §Certificate rules beyond ATS: "the DNS name must be in the SAN (CN is ignored)".
        ATSReferenceCase(name: "no SAN, CN matches, iOS 17: blocked", url: https,
                      facts: withLeaf { $0.dnsNames = nil; $0.ipAddresses = [] }, allowed: false, rule: .sanRequired),
        // §Certificate rules beyond ATS: before iOS 13 the CN was still consulted without a SAN.
        ATSReferenceCase(name: "no SAN, CN matches, iOS 10: allowed", url: https,
                      facts: withLeaf { $0.dnsNames = nil; $0.ipAddresses = [] }, options: ios(.ios10), allowed: true),
        // §Default requirements, trust: "hostname in the SAN" with an RFC 6125 wildcard.
        ATSReferenceCase(name: "wildcard SAN matches one label", url: https,
                      facts: withLeaf { $0.dnsNames = ["*.fixtures.test"] }, allowed: true),
        // §Default requirements, trust: a wildcard stands for exactly one label.
        ATSReferenceCase(name: "wildcard SAN does not match two labels", url: "https://a.api.fixtures.test/",
                      facts: withLeaf("a.api.fixtures.test") { $0.dnsNames = ["*.fixtures.test"] },
                      allowed: false, rule: .hostname),
        // §Default requirements, trust: an IP host is matched against IP SANs.
        ATSReferenceCase(name: "IP host against IP SAN (iOS 17 IP entry)", url: "https://127.0.0.1/",
                      policy: domainEntry("127.0.0.1", [:]), facts: modern, allowed: true),
        // §Keys, NSAllowsArbitraryLoadsForMedia: "exempt only AVFoundation loads" — media load.
        ATSReferenceCase(name: "ForMedia exempts media loads", url: https,
                      policy: [ATSKey.allowsArbitraryLoadsForMedia: true], facts: tls10,
                      options: ios(.ios17) { $0.loadKind = .media }, allowed: true, atsApplies: false),
        // §Keys, NSAllowsArbitraryLoadsForMedia: a data load is not exempt.
        ATSReferenceCase(name: "ForMedia does not exempt data loads", url: https,
                      policy: [ATSKey.allowsArbitraryLoadsForMedia: true], facts: tls10, allowed: false, rule: .tlsVersion),
        // §Keys, NSAllowsArbitraryLoadsInWebContent: exempts WebKit loads.
        ATSReferenceCase(name: "InWebContent exempts web loads", url: https,
                      policy: [ATSKey.allowsArbitraryLoadsInWebContent: true], facts: tls10,
                      options: ios(.ios17) { $0.loadKind = .web }, allowed: true, atsApplies: false),
        // §Keys, NSAllowsArbitraryLoadsInWebContent: … and not media loads.
        ATSReferenceCase(name: "InWebContent does not exempt media loads", url: https,
                      policy: [ATSKey.allowsArbitraryLoadsInWebContent: true], facts: tls10,
                      options: ios(.ios17) { $0.loadKind = .media }, allowed: false, rule: .tlsVersion),
        // §Keys, NSExceptionDomains: an entry replaces the media exemption too.
        ATSReferenceCase(name: "exception entry replaces ForMedia for its domain", url: https,
                      policy: [ATSKey.allowsArbitraryLoadsForMedia: true, ATSKey.exceptionDomains: [host: [:]]], facts: tls10,
                      options: ios(.ios17) { $0.loadKind = .media }, allowed: false, rule: .tlsVersion, matched: .some(host)),
        // §Keys, NSExceptionDomains: "dictionary of lowercase domain" — an uppercase key never matches.
        ATSReferenceCase(name: "uppercase domain key never matches", url: "https://api.fixtures.test/",
                      policy: domainEntry("API.fixtures.test", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]), facts: tls10,
                      allowed: false, rule: .tlsVersion, matched: .some(nil)),
        // §Keys, NSThirdPartyException*: "an option may offer the old reading" — each key as its plain twin.
        ATSReferenceCase(name: "third-party minimum version read as its plain twin (older reading)", url: https,
                      policy: domainEntry([ATSKey.thirdPartyMinimumTLSVersion: "TLSv1.0"]), facts: tls10,
                      options: ios(.ios17) { $0.readings.thirdPartyKeys = .asPlainKeys }, allowed: true),
        // §Keys, NSThirdPartyException*: under the older reading the plain key still wins when both are present.
        ATSReferenceCase(name: "older reading: the plain key wins over its third-party twin", url: https,
                      policy: domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.2", ATSKey.thirdPartyMinimumTLSVersion: "TLSv1.0"]),
                      facts: tls10, options: ios(.ios17) { $0.readings.thirdPartyKeys = .asPlainKeys }, allowed: false,
                      rule: .tlsVersion),
        // §Keys, IP addresses on iOS 17+: "offer the other reading" — every IP literal falls under ATS, loopback too.
        ATSReferenceCase(name: "every-IP reading: loopback falls under ATS on iOS 17", url: "https://127.0.0.1:8443/",
                      facts: ipServer("127.0.0.1"), options: ios(.ios17) { $0.readings.ipAddresses = .every },
                      allowed: false, rule: .tlsVersion, atsApplies: true),
        // §Keys, NSAllowsLocalNetworking: YES enables IP addresses under either reading.
        ATSReferenceCase(name: "every-IP reading: NSAllowsLocalNetworking YES still exempts loopback", url: "https://127.0.0.1:8443/",
                      policy: [ATSKey.allowsLocalNetworking: true], facts: ipServer("127.0.0.1"),
                      options: ios(.ios17) { $0.readings.ipAddresses = .every }, allowed: true, atsApplies: false),
        // §Keys, IP addresses on iOS 17+: private-range addresses count as local (low confidence: the runtime decides).
        ATSReferenceCase(name: "private-network IPv4 exempt on iOS 17 (default reading)", url: "https://192.168.1.20/",
                      facts: ipServer("192.168.1.20"), allowed: true, atsApplies: false),
        // §Keys, IP addresses on iOS 17+: an IPv4-mapped loopback address is loopback.
        ATSReferenceCase(name: "IPv4-mapped loopback exempt on iOS 17", url: "https://[::ffff:127.0.0.1]/",
                      facts: ipServer("::ffff:127.0.0.1"), allowed: true, atsApplies: false),
        // §Keys, IP addresses on iOS 17+: carrier-grade NAT (100.64/10, e.g. Tailscale) is not a private range.
        ATSReferenceCase(name: "CGNAT address is external on iOS 17", url: "https://100.100.1.2/",
                      facts: ipServer("100.100.1.2"), allowed: false, rule: .tlsVersion, atsApplies: true),
        // §Keys, NSExceptionDomains: an entry makes ATS apply even to a local host (testExceptionRaisesSecurityRequirements).
        ATSReferenceCase(name: "exception entry for a .local host makes ATS apply", url: "https://myhost.local/",
                      policy: domainEntry("myhost.local", [ATSKey.exceptionRequiresForwardSecrecy: true]),
                      facts: F.speaking("myhost.local", F.tls10Only), allowed: false, rule: .tlsVersion, atsApplies: true,
                      matched: .some("myhost.local")),
        // §Cipher groups under relaxed ATS: the other reading never offers DHE, so dhe-only fails even with ATS off.
        ATSReferenceCase(name: "DHE refused reading: dhe-only blocked despite arbitrary loads", url: https,
                      policy: [ATSKey.allowsArbitraryLoads: true], facts: F.speaking(host, F.dheOnly),
                      options: ios(.ios17) { $0.readings.dhe = .neverOffered }, allowed: false, rule: .cipherSuite,
                      atsApplies: false),
        // §Keys, NSPinnedDomains: the pins of the host's entry and of its parent's (with subdomains) both apply.
        ATSReferenceCase(name: "pins of the exact and the parent entry are pooled", url: https,
                      policy: [ATSKey.pinnedDomains: [
                        host: [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]],
                        "fixtures.test": [ATSKey.includesSubdomains: true,
                                          ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(pinnedLeaf)]]]]],
                      facts: modern, allowed: true, pinned: .some(host), noteContains: "all apply"),
        // §Keys, NSPinnedDomains: NSIncludesSubdomains must be the boolean true (SecPolicy.c compares with kCFBooleanTrue).
        ATSReferenceCase(name: "pinned NSIncludesSubdomains as an integer is ignored", url: https,
                      policy: [ATSKey.pinnedDomains: ["fixtures.test": [ATSKey.includesSubdomains: 1,
                        ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(F.pin("other"))]]]]],
                      facts: modern, allowed: true, pinned: .some(nil)),
        // §Default requirements: "Certificate signatures SHA-256 or better" — SHA-224 is below it, though of the
        // SHA-2 family (a digest rank that treats every SHA-2 digest alike would let it through).
        ATSReferenceCase(name: "SHA-224 leaf blocked", url: https,
                      facts: withLeaf { $0.signatureDigest = "sha224"; $0.signatureAlgorithm = "sha224WithRSAEncryption" },
                      allowed: false, rule: .signatureHash),
        // §Default requirements: "Certificate signatures SHA-256 or better" — SHA-384 leaf passes.
        ATSReferenceCase(name: "SHA-384 leaf allowed", url: https,
                      facts: withLeaf { $0.signatureDigest = "sha384"; $0.signatureAlgorithm = "sha384WithRSAEncryption" },
                      allowed: true),
        // §Default requirements: failures "-9813 no root", trust error -1202 (incomplete chain).
        ATSReferenceCase(name: "unable to get issuer: -1202", url: https,
                      facts: withLeaf(chainError: F.verifyError(20, "unable to get local issuer certificate")) { _ in },
                      allowed: false, rule: .trustChain, urlError: -1202),
        // §Default requirements: "-1204 not yet valid" names the header's code; no public log shows Apple using it
        // (trust failures are -1202 in every log found, docs/apple-evidence.md §1), so the model says -1202, a guess.
        ATSReferenceCase(name: "not yet valid: -1202", url: https,
                      facts: withLeaf(chainError: F.verifyError(9, "certificate is not yet valid")) { $0.notBefore = F.now + F.day },
                      allowed: false, rule: .trustChain, urlError: -1202),
    ]

    func testReferenceTable() {
        XCTAssertGreaterThanOrEqual(Self.cases.count, 40)
        for item in Self.cases {
            let evaluator = ATSEvaluator(policy: ATSPolicy(item.policy), options: item.options)
            let verdict = evaluator.evaluate(url: URL(string: item.url)!, facts: item.facts)
            let label = "\(item.name):\n\(verdict)"
            XCTAssertEqual(verdict.allowed, item.allowed, label)
            if let rule = item.rule { XCTAssertEqual(verdict.violations.first?.rule, rule, label) }
            if item.allowed { XCTAssertNil(verdict.likelyError, label) }
            if let applies = item.atsApplies { XCTAssertEqual(verdict.atsApplies, applies, label) }
            if let matched = item.matched { XCTAssertEqual(verdict.matchedExceptionDomain, matched, label) }
            if let pinned = item.pinned { XCTAssertEqual(verdict.matchedPinnedDomain, pinned, label) }
            if let note = item.noteContains { XCTAssertTrue(verdict.notes.contains { $0.contains(note) }, label) }
            if let code = item.urlError { XCTAssertEqual(verdict.likelyError?.urlErrorCode, code, label) }
            if let waived = item.waivedCount { XCTAssertEqual(verdict.waived.count, waived, label) }
        }
    }

    /// The brief's example message, verbatim.
    func testMinimumVersionMessage() {
        let verdict = ATSEvaluator().evaluate(url: URL(string: Self.https)!, facts: Self.tls10)
        XCTAssertEqual(verdict.violations.first?.message,
                       "minimum TLS version: server speaks at most TLSv1.0, ATS requires TLSv1.2")
        XCTAssertEqual(verdict.likelyError?.streamErrorCode, -9836)
    }

    /// The exception finder works under the corrected rules: a host written with a trailing dot needs a dotted key,
    /// and on the ios26 profile (TLS 1.0/1.1 refused whatever the exception) a TLS 1.0 server has no fix.
    func testExceptionFinderFollowsTheCorrectedRules() throws {
        let dotted = ATSExceptionFinder().find(url: URL(string: "https://api.fixtures.test./")!, facts: Self.tls10)
        XCTAssertEqual(dotted.exceptionDomainKeys, [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"])
        guard case .exception(let dictionary, _) = dotted.result else { return XCTFail("\(dotted.result)") }
        XCTAssertNotNil(dictionary[ATSKey.exceptionDomains]?.dictionaryValue?["api.fixtures.test."])

        let ios26 = ATSExceptionFinder(options: ATSEvaluationOptions(profile: .ios26)).find(url: URL(string: Self.https)!, facts: Self.tls10)
        guard case .impossible(let reason) = ios26.result else { return XCTFail("\(ios26.result)") }
        XCTAssertTrue(reason.contains("TLS 1.2 or later"), reason)

        // 127.0.0.1 is exempt on iOS 17 by default: nothing to add, and the localhost trap is named.
        let loopback = ATSExceptionFinder().find(url: URL(string: "https://127.0.0.1:8443/")!, facts: Self.ipServer("127.0.0.1"))
        XCTAssertEqual(loopback.result, .notNeeded)
        XCTAssertTrue(loopback.notes.contains { $0.contains("localhost trap") })
    }

    /// Verdicts name the model rules they rest on, with confidence and the reading used where there is another.
    func testVerdictsNameTheirRules() {
        let loopback = ATSEvaluator().evaluate(url: URL(string: "https://127.0.0.1:8443/")!, facts: Self.ipServer("127.0.0.1"))
        let ids = loopback.rules.map(\.id)
        XCTAssertTrue(ids.contains(.localExemption), "\(ids)")
        let external = loopback.rules.first { $0.id == .ios17ExternalIPs }
        XCTAssertEqual(external?.confidence, .medium)
        XCTAssertEqual(external?.reading, "externalOnly")
        XCTAssertEqual(external?.otherReading, "ATSReadings.ipAddresses = .every")
        XCTAssertFalse(ids.contains(.defaultRequirements), "ATS does not apply here")

        let blocked = ATSEvaluator().evaluate(url: URL(string: Self.https)!, facts: Self.tls10)
        XCTAssertEqual(blocked.rules.first?.id, .defaultRequirements)
        XCTAssertTrue(blocked.rules.contains { $0.id == .likelyErrorCodes && $0.confidence == .medium })
        XCTAssertEqual(Set(blocked.rules.map(\.id)).count, blocked.rules.count, "each rule once")

        let dhe = ATSEvaluator(policy: ATSPolicy([ATSKey.allowsArbitraryLoads: true]))
            .evaluate(url: URL(string: Self.https)!, facts: F.speaking(Self.host, F.dheOnly))
        XCTAssertEqual(dhe.rules.first { $0.id == .dheWithoutATS }?.confidence, .low)
        for rule in ATSModelRule.allCases {
            XCTAssertFalse(rule.summary.isEmpty || rule.source.isEmpty, rule.rawValue)
        }
    }
}

/// One rule Apple's own code or documentation states, with the source it comes from and the cases that show it.
/// `source` is a page URL, or a file and function of apple-oss-distributions/Security (read to learn, never copied).
struct ATSSourcedRule {
    var rule: String
    var source: String
    var cases: [ATSReferenceCase]
}

/// The rules an audit against Apple's documentation and open-source Security code found the model wrong on
/// (issue 13). Each rule's cases ran against the model before the fix and failed there; the commit that made
/// them pass records which assertions failed.
final class ATSAppleSourceRuleTests: XCTestCase {
    typealias F = ATSFactsKit
    typealias T = ATSReferenceTableTests

    static let host = T.host
    static let https = T.https
    static let security = "apple-oss-distributions/Security"

    /// A TLS 1.0 server whose certificate carries `ip` as an IP SAN: compliant in every other respect.
    static func ipServer(_ ip: String) -> ServerFacts { T.ipServer(ip) }
    static func pinEntry(_ key: String, subdomains: ATSPlistValue? = nil, leaf: String = F.pin("other")) -> [String: ATSPlistValue] {
        var entry: [String: ATSPlistValue] = [ATSKey.pinnedLeafIdentities: [[ATSKey.spkiSHA256Base64: .string(leaf)]]]
        if let subdomains { entry[ATSKey.includesSubdomains] = subdomains }
        return [ATSKey.pinnedDomains: .dictionary([key: .dictionary(entry)])]
    }

    func check(_ sourced: ATSSourcedRule, file: StaticString = #filePath, line: UInt = #line) {
        Self.verify(sourced, file: file, line: line)
    }

    /// Evaluates every case of `sourced` and checks what it states (the rule and source are in every failure's text).
    static func verify(_ sourced: ATSSourcedRule, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(sourced.source.isEmpty, sourced.rule)
        for item in sourced.cases {
            let policy = ATSPolicy(item.policy)
            let verdict = ATSEvaluator(policy: policy, options: item.options).evaluate(url: URL(string: item.url)!, facts: item.facts)
            let label = "\(sourced.rule) [\(sourced.source)] — \(item.name):\n\(verdict)\nwarnings: \(policy.warnings)"
            XCTAssertEqual(verdict.allowed, item.allowed, label, file: file, line: line)
            if let rule = item.rule { XCTAssertEqual(verdict.violations.first?.rule, rule, label, file: file, line: line) }
            if let applies = item.atsApplies { XCTAssertEqual(verdict.atsApplies, applies, label, file: file, line: line) }
            if let matched = item.matched { XCTAssertEqual(verdict.matchedExceptionDomain, matched, label, file: file, line: line) }
            if let pinned = item.pinned { XCTAssertEqual(verdict.matchedPinnedDomain, pinned, label, file: file, line: line) }
            if let note = item.noteContains {
                XCTAssertTrue(verdict.notes.contains { $0.contains(note) }, label, file: file, line: line)
            }
            if let code = item.urlError { XCTAssertEqual(verdict.likelyError?.urlErrorCode, code, label, file: file, line: line) }
            if let warning = item.warningContains {
                XCTAssertTrue(policy.warnings.contains { $0.description.contains(warning) }, label, file: file, line: line)
            }
            for key in item.noWarningOn {
                XCTAssertFalse(policy.warnings.contains { $0.keyPath.contains(key) }, label, file: file, line: line)
            }
            if let id = item.appliedRule {
                let applied = verdict.rules.first { $0.id == id }
                XCTAssertNotNil(applied, label, file: file, line: line)
                if let reading = item.appliedReading { XCTAssertEqual(applied?.reading, reading, label, file: file, line: line) }
            }
        }
    }

    /// Rule 1: an explicit `NSAllowsLocalNetworking = NO` removes the local exemption.
    func testRule01LocalNetworkingNoRemovesTheLocalExemption() {
        let no: [String: ATSPlistValue] = [ATSKey.allowsLocalNetworking: false]
        check(ATSSourcedRule(
            rule: "NSAllowsLocalNetworking = NO: localhost, .local names and loopback IPs fall under ATS",
            source: "\(Self.security) protocol/SecProtocolConfiguration.m, sec_protocol_configuration_tls_required_for_host_or_address_internal "
                + "(local hosts are exempt only while the key is not explicitly false); protocol/SecProtocolConfigurationTest.m, testLocalNetworkingDisabled",
            cases: [
                ATSReferenceCase(name: "localhost", url: "https://localhost:8443/", policy: no,
                                 facts: F.speaking("localhost", F.tls10Only), allowed: false, rule: .tlsVersion, atsApplies: true),
                ATSReferenceCase(name: "myhost.local", url: "https://myhost.local/", policy: no,
                                 facts: F.speaking("myhost.local", F.tls10Only), allowed: false, rule: .tlsVersion, atsApplies: true),
                ATSReferenceCase(name: "127.0.0.1 on iOS 13 (every IP literal is local there)", url: "https://127.0.0.1:8443/", policy: no,
                                 facts: Self.ipServer("127.0.0.1"), options: T.ios(.ios13), allowed: false, rule: .tlsVersion, atsApplies: true),
                ATSReferenceCase(name: "::1 on iOS 17", url: "https://[::1]:8443/", policy: no,
                                 facts: Self.ipServer("::1"), allowed: false, rule: .tlsVersion, atsApplies: true),
            ]))
    }

    /// Rule 2: `NSAllowsLocalNetworking = YES` on iOS 17+ also lets the app reach IP addresses ATS would restrict.
    func testRule02LocalNetworkingYesEnablesIPAddressesOnIOS17() {
        let yes: [String: ATSPlistValue] = [ATSKey.allowsLocalNetworking: true]
        check(ATSSourcedRule(
            rule: "NSAllowsLocalNetworking = YES on iOS 17+: IP addresses ATS would otherwise restrict are allowed",
            source: "https://developer.apple.com/documentation/bundleresources/information-property-list/nsapptransportsecurity/nsallowslocalnetworking",
            cases: [
                ATSReferenceCase(name: "external IPv4 literal", url: "https://203.0.113.7/", policy: yes,
                                 facts: Self.ipServer("203.0.113.7"), allowed: true, atsApplies: false),
                ATSReferenceCase(name: "external IPv6 literal", url: "https://[2001:db8::7]/", policy: yes,
                                 facts: Self.ipServer("2001:db8::7"), allowed: true, atsApplies: false),
                // Control: without the key the same external address falls under ATS (rule 3).
                ATSReferenceCase(name: "control: no key", url: "https://203.0.113.7/",
                                 facts: Self.ipServer("203.0.113.7"), allowed: false, rule: .tlsVersion, atsApplies: true),
            ]))
    }

    /// Rule 3: from iOS 17, *external* IP literals fall under ATS; loopback and link-local ones stay exempt.
    func testRule03IOS17AppliesATSToExternalIPAddressesOnly() {
        check(ATSSourcedRule(
            rule: "iOS 17+: external IP addresses need ATS; loopback and local addresses stay exempt by default",
            source: "iOS 17 release notes (\"ATS now requires secure connections to external IP addresses\"); "
                + "\(Self.security) protocol/SecProtocolConfigurationTest.m, testLocalNetworkingAllowedByDefault "
                + "(127.0.0.1, ::1, fe80::1 exempt; 203.0.113.1, 2001:db8::8a2e:370:7334 not)",
            cases: [
                ATSReferenceCase(name: "127.0.0.1", url: "https://127.0.0.1:8443/", facts: Self.ipServer("127.0.0.1"),
                                 allowed: true, atsApplies: false, noteContains: "localhost trap"),
                ATSReferenceCase(name: "::1", url: "https://[::1]:8443/", facts: Self.ipServer("::1"), allowed: true, atsApplies: false),
                ATSReferenceCase(name: "fe80::1 (link-local)", url: "https://[fe80::1]/", facts: Self.ipServer("fe80::1"),
                                 allowed: true, atsApplies: false),
                ATSReferenceCase(name: "203.0.113.1 (external)", url: "https://203.0.113.1/", facts: Self.ipServer("203.0.113.1"),
                                 allowed: false, rule: .tlsVersion, atsApplies: true),
                ATSReferenceCase(name: "2001:db8::8a2e:370:7334 (external)", url: "https://[2001:db8::8a2e:370:7334]/",
                                 facts: Self.ipServer("2001:db8::8a2e:370:7334"), allowed: false, rule: .tlsVersion, atsApplies: true),
            ]))
    }

    /// Rule 4: `NSPinnedDomains` + `NSIncludesSubdomains` reaches exactly one extra label.
    func testRule04PinnedSubdomainsReachOneLabel() {
        check(ATSSourcedRule(
            rule: "NSPinnedDomains NSIncludesSubdomains: the key is compared with the host and its direct parent only",
            source: "\(Self.security) OSX/sec/Security/SecPolicy.c, parseNSPinnedDomains (CopyParentDomainNameFromHostName); "
                + "https://developer.apple.com/documentation/bundleresources/information-property-list/nsapptransportsecurity/nspinneddomains",
            cases: [
                ATSReferenceCase(name: "two labels below the key: not pinned", url: "https://a.api.fixtures.test/",
                                 policy: Self.pinEntry("fixtures.test", subdomains: true),
                                 facts: F.compliant("a.api.fixtures.test"), allowed: true, pinned: .some(nil)),
                ATSReferenceCase(name: "one label below the key: pinned", url: Self.https,
                                 policy: Self.pinEntry("fixtures.test", subdomains: true),
                                 facts: F.compliant(Self.host), allowed: false, rule: .pinning, pinned: .some("fixtures.test")),
            ]))
    }

    /// Rule 5: pinned-domain keys match case-insensitively.
    func testRule05PinnedKeysMatchCaseInsensitively() {
        check(ATSSourcedRule(
            rule: "NSPinnedDomains keys are compared with the host case-insensitively",
            source: "\(Self.security) OSX/sec/Security/SecPolicy.c, parseNSPinnedDomains (CFStringCompare with kCFCompareCaseInsensitive)",
            cases: [
                ATSReferenceCase(name: "upper-case key pins the host", url: Self.https, policy: Self.pinEntry("API.Fixtures.TEST"),
                                 facts: F.compliant(Self.host), allowed: false, rule: .pinning, pinned: .some("API.Fixtures.TEST"),
                                 noWarningOn: ["API.Fixtures.TEST"]),
                ATSReferenceCase(name: "upper-case parent with subdomains", url: Self.https,
                                 policy: Self.pinEntry("FIXTURES.test", subdomains: true),
                                 facts: F.compliant(Self.host), allowed: false, rule: .pinning, pinned: .some("FIXTURES.test")),
            ]))
    }

    /// Rule 6: a trailing dot in an exception-domain key is significant, both ways.
    func testRule06TrailingDotsInExceptionKeys() {
        let dotted = T.domainEntry("api.fixtures.test.", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"])
        let plain = T.domainEntry("api.fixtures.test", [ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"])
        check(ATSSourcedRule(
            rule: "example.com. matches 'example.com.' but not 'example.com'; example.com matches 'example.com' but not 'example.com.'",
            source: "https://developer.apple.com/documentation/bundleresources/information-property-list/nsapptransportsecurity/nsexceptiondomains; "
                + "\(Self.security) protocol/SecProtocolConfiguration.m, sec_protocol_configuration_find_exception_for_host (exact dictionary lookup)",
            cases: [
                ATSReferenceCase(name: "dotted key, dotted host: matches", url: "https://api.fixtures.test./", policy: dotted,
                                 facts: T.tls10, allowed: true, matched: .some("api.fixtures.test.")),
                ATSReferenceCase(name: "dotted key, plain host: no match", url: Self.https, policy: dotted,
                                 facts: T.tls10, allowed: false, rule: .tlsVersion, matched: .some(nil)),
                ATSReferenceCase(name: "plain key, dotted host: no match", url: "https://api.fixtures.test./", policy: plain,
                                 facts: T.tls10, allowed: false, rule: .tlsVersion, matched: .some(nil)),
                ATSReferenceCase(name: "plain key, plain host: matches", url: Self.https, policy: plain,
                                 facts: T.tls10, allowed: true, matched: .some("api.fixtures.test")),
            ]))
    }

    /// Rule 7: a value of the wrong type is absent in every respect; numbers are compared with YES.
    func testRule07WrongTypedValuesAreAbsentInEveryRespect() {
        check(ATSSourcedRule(
            rule: "a wrong-typed value is absent (it does not switch NSAllowsArbitraryLoads off); a number counts as YES when it equals YES",
            source: "\(Self.security) protocol/SecProtocolConfiguration.m, sec_protocol_configuration_set_ats_overrides "
                + "(ATS_VALUE_FOR_KEY / BOOLEAN_FOR_KEY: NSNumber only, compared with @YES); "
                + "protocol/SecProtocolConfigurationTest.m, testInvalidATSDictionary and testGarbageValueDisablesAllowsArbitraryLoads",
            cases: [
                ATSReferenceCase(name: "NSAllowsLocalNetworking the string YES leaves arbitrary loads on", url: Self.https,
                                 policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsLocalNetworking: "YES"],
                                 facts: T.tls10, allowed: true, atsApplies: false),
                ATSReferenceCase(name: "NSAllowsArbitraryLoadsForMedia the string YES leaves arbitrary loads on", url: Self.https,
                                 policy: [ATSKey.allowsArbitraryLoads: true, ATSKey.allowsArbitraryLoadsForMedia: "YES"],
                                 facts: T.tls10, allowed: true, atsApplies: false),
                ATSReferenceCase(name: "NSAllowsArbitraryLoads <integer>1</integer> equals YES", url: Self.https,
                                 policy: [ATSKey.allowsArbitraryLoads: 1], facts: T.tls10, allowed: true, atsApplies: false),
                ATSReferenceCase(name: "NSAllowsArbitraryLoads <integer>2</integer> is not YES", url: Self.https,
                                 policy: [ATSKey.allowsArbitraryLoads: 2], facts: T.tls10, allowed: false, rule: .tlsVersion),
                ATSReferenceCase(name: "NSIncludesSubdomains <integer>1</integer> in an exception entry", url: "https://a.example.test/",
                                 policy: T.domainEntry("example.test", [ATSKey.includesSubdomains: 1, ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                                 facts: F.speaking("a.example.test", F.tls10Only), allowed: true, matched: .some("example.test")),
            ]))
    }

    /// Rule 8: `NSAllowsArbitraryLoadsInMedia` is not a key.
    func testRule08InMediaIsNotAKey() {
        check(ATSSourcedRule(
            rule: "NSAllowsArbitraryLoadsInMedia was a documentation typo (corrected 2016-11-14): an unknown key",
            source: "Information Property List Key Reference, revision history 2016-11-14 (\"Corrected the … key name for media loads, "
                + "to NSAllowsArbitraryLoadsForMedia\"); \(Self.security) protocol/SecProtocolConfiguration.m, "
                + "sec_protocol_configuration_set_ats_overrides (reads NSAllowsArbitraryLoadsForMedia only)",
            cases: [
                ATSReferenceCase(name: "does not switch arbitrary loads off", url: Self.https,
                                 policy: [ATSKey.allowsArbitraryLoads: true, "NSAllowsArbitraryLoadsInMedia": true],
                                 facts: T.tls10, allowed: true, atsApplies: false, warningContains: "NSAllowsArbitraryLoadsForMedia"),
                ATSReferenceCase(name: "does not exempt media loads", url: Self.https, policy: ["NSAllowsArbitraryLoadsInMedia": true],
                                 facts: T.tls10, options: T.ios(.ios17) { $0.loadKind = .media }, allowed: false, rule: .tlsVersion),
            ]))
    }

    /// Rule 9: `NSThirdPartyException*` keys are ignored.
    func testRule09ThirdPartyExceptionKeysAreIgnored() {
        check(ATSSourcedRule(
            rule: "NSThirdPartyException* keys: Apple's current parser knows only the plain exception keys",
            source: "\(Self.security) protocol/SecProtocolConfiguration.m, sec_protocol_configuration_set_ats_overrides "
                + "(reads NSExceptionAllowsInsecureHTTPLoads, NSIncludesSubdomains, NSExceptionRequiresForwardSecrecy, NSExceptionMinimumTLSVersion)",
            cases: [
                ATSReferenceCase(name: "third-party minimum version has no effect", url: Self.https,
                                 policy: T.domainEntry([ATSKey.thirdPartyMinimumTLSVersion: "TLSv1.0"]), facts: T.tls10,
                                 allowed: false, rule: .tlsVersion, matched: .some(Self.host), warningContains: "ignored"),
                ATSReferenceCase(name: "third-party insecure HTTP loads have no effect", url: "http://api.fixtures.test/",
                                 policy: T.domainEntry([ATSKey.thirdPartyAllowsInsecureHTTPLoads: true]), facts: T.httpFacts,
                                 allowed: false, rule: .scheme, urlError: -1022),
            ]))
    }

    /// Rule 10: `NSRequiresCertificateTransparency = YES` required SCTs on the systems that read the key.
    func testRule10CertificateTransparencyKeyOnEarlierSystems() {
        let ct = T.domainEntry([ATSKey.requiresCertificateTransparency: true])
        check(ATSSourcedRule(
            rule: "earlier systems used NSRequiresCertificateTransparency to require CT for a domain: a leaf without SCTs is refused",
            source: "https://developer.apple.com/documentation/bundleresources/information-property-list/nsapptransportsecurity/nsexceptiondomains "
                + "(NSRequiresCertificateTransparency)",
            cases: [
                ATSReferenceCase(name: "iOS 10–12: YES and a leaf without SCTs", url: Self.https, policy: ct,
                                 facts: T.modern, options: T.ios(.ios10), allowed: false),
                ATSReferenceCase(name: "control: iOS 10–12 without the key", url: Self.https, facts: T.modern,
                                 options: T.ios(.ios10), allowed: true),
                ATSReferenceCase(name: "iOS 17: the key has no effect", url: Self.https, policy: ct, facts: T.modern, allowed: true),
            ]))
    }

    /// Uncertain: whether Apple's client offers DHE with ATS out of the way. The verdict must say so.
    func testDHEWithArbitraryLoadsIsMarkedUncertain() {
        check(ATSSourcedRule(
            rule: "DHE suites are only in Apple's \"legacy\" cipher-suite group: admitting dhe-only under arbitrary loads is uncertain",
            source: "\(Self.security) protocol/SecProtocolHelper.m, tls_ciphersuite_group_legacy (CiphersuitesDHE)",
            cases: [
                ATSReferenceCase(name: "dhe-only with NSAllowsArbitraryLoads", url: Self.https, policy: [ATSKey.allowsArbitraryLoads: true],
                                 facts: F.speaking(Self.host, F.dheOnly), allowed: true, atsApplies: false, noteContains: "uncertain"),
            ]))
    }

    /// Reported, not documented by Apple: iOS 26 refuses TLS 1.0 and 1.1 even with an exception.
    func testIOS26RefusesTLS10And11EvenWithExceptions() {
        let ios26 = ATSEvaluationOptions(profile: ATSOSProfile(parsing: "iOS 26")!)
        check(ATSSourcedRule(
            rule: "iOS 26: TLS 1.0 and 1.1 are refused whatever the exception",
            source: "OWASP MASTG-TECH-0149 (https://mas.owasp.org/MASTG/techniques/ios/MASTG-TECH-0149/) and "
                + "MASTG-BEST-0042 (https://mas.owasp.org/MASTG/best-practices/MASTG-BEST-0042/)",
            cases: [
                ATSReferenceCase(name: "TLSv1.0 exception", url: Self.https, policy: T.domainEntry([ATSKey.exceptionMinimumTLSVersion: "TLSv1.0"]),
                                 facts: T.tls10, options: ios26, allowed: false, rule: .tlsVersion),
                ATSReferenceCase(name: "arbitrary loads", url: Self.https, policy: [ATSKey.allowsArbitraryLoads: true],
                                 facts: T.tls11, options: ios26, allowed: false, rule: .tlsVersion),
                ATSReferenceCase(name: "control: TLS 1.2", url: Self.https, facts: T.tls12, options: ios26, allowed: true),
            ]))
    }

    /// The verdict's JSON names every model rule it applied, with its confidence and source.
    func testVerdictJSONStatesTheConfidenceOfEveryRuleApplied() throws {
        let verdict = ATSEvaluator().evaluate(url: URL(string: "https://127.0.0.1:8443/")!, facts: Self.ipServer("127.0.0.1"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: encoder.encode(verdict)) as? [String: Any])
        let rules = try XCTUnwrap(object["rules"] as? [[String: Any]], "the verdict has no \"rules\": \(object.keys.sorted())")
        XCTAssertFalse(rules.isEmpty)
        for rule in rules {
            XCTAssertNotNil(rule["id"] as? String, "\(rule)")
            XCTAssertTrue(["high", "medium", "low"].contains(rule["confidence"] as? String ?? ""), "\(rule)")
            XCTAssertFalse((rule["source"] as? String ?? "").isEmpty, "\(rule)")
        }
    }
}

/// Three rules an independent set of ATS cases, written from Apple's documentation and Security sources, found missing
/// (issue 28). Each failed against the model before the change that added it; that commit says which assertions.
final class ATSTransparencyAndWebViewRuleTests: XCTestCase {
    typealias F = ATSFactsKit
    typealias T = ATSReferenceTableTests
    typealias S = ATSAppleSourceRuleTests

    static let https = T.https

    /// A compliant server whose chain the facts say ends in `anchor`, its leaf issued one day before `F.now` unless
    /// `issued` says otherwise; `embedded` is the leaf's SCT extension as the probe records it.
    static func facts(anchor: TrustAnchorKind, embedded: Bool? = false, scts: ServerFacts.SCTCounts? = .init(),
                      issued: Date = F.now - F.day) -> ServerFacts {
        var leaf = F.leaf(T.host)
        leaf.hasEmbeddedSCTs = embedded
        leaf.notBefore = issued
        leaf.notAfter = issued + 90 * F.day
        var facts = F.facts(leaf: leaf, anchor: anchor)
        facts.scts = scts
        return facts
    }

    /// Rule 1: a publicly trusted leaf needs SCTs, whatever the Info.plist says; user and app anchors are exempt.
    func testRule11PublicCertificatesNeedCertificateTransparency() {
        check(ATSSourcedRule(
            rule: "a leaf issued from 2018-10-16 whose chain ends in a root the OS ships needs Signed Certificate Timestamps",
            source: "https://support.apple.com/103214 (\"Publicly trusted Transport Layer Security (TLS) server authentication "
                + "certificates must meet Apple's Certificate Transparency (CT) policy to be evaluated as trusted\"); "
                + "\(S.security) OSX/sec/Security/SecPolicy.c, SecPolicyCreateSSL_internal (kSecPolicyCheckSystemTrustedCTRequired); "
                + "trust/trustd/SecPolicyServer.c, SecPolicyCheckSystemTrustedCTRequired (notBefore ≥ 561340800, system anchor "
                + "source); the error: developer forums thread 685561 (-1200, _kCFStreamErrorCodeKey=-9802)",
            cases: [
                ATSReferenceCase(name: "system root, no SCTs: blocked", url: Self.https, facts: Self.facts(anchor: .system),
                                 allowed: false, rule: .certificateTransparency, urlError: -1200,
                                 appliedRule: .certificateTransparencyRequired),
                ATSReferenceCase(name: "whatever the Info.plist says: arbitrary loads", url: Self.https,
                                 policy: [ATSKey.allowsArbitraryLoads: true], facts: Self.facts(anchor: .system),
                                 allowed: false, rule: .certificateTransparency, atsApplies: false),
                ATSReferenceCase(name: "iOS 13: blocked too", url: Self.https, facts: Self.facts(anchor: .system),
                                 options: T.ios(.ios13), allowed: false, rule: .certificateTransparency),
                ATSReferenceCase(name: "control: SCTs embedded", url: Self.https,
                                 facts: Self.facts(anchor: .system, embedded: true, scts: .init(embedded: 2)), allowed: true,
                                 noteContains: "2 embedded", appliedRule: .certificateTransparencyRequired),
                ATSReferenceCase(name: "control: SCTs in the TLS extension only", url: Self.https,
                                 facts: Self.facts(anchor: .system, scts: .init(tlsExtension: 2)), allowed: true,
                                 noteContains: "2 in the TLS extension"),
                ATSReferenceCase(name: "control: SCTs in the stapled OCSP response only", url: Self.https,
                                 facts: Self.facts(anchor: .system, scts: .init(stapledOCSP: 1)), allowed: true),
                ATSReferenceCase(name: "control: user-installed root, no SCTs", url: Self.https,
                                 facts: Self.facts(anchor: .userInstalled), allowed: true),
                ATSReferenceCase(name: "control: app-supplied anchor, no SCTs", url: Self.https,
                                 facts: Self.facts(anchor: .appSupplied), allowed: true),
                ATSReferenceCase(name: "control: issued 2018-10-15, before the requirement", url: Self.https,
                                 facts: Self.facts(anchor: .system, issued: Date(timeIntervalSince1970: 1_539_561_600)),
                                 allowed: true, noteContains: "issued before 2018-10-16"),
                ATSReferenceCase(name: "issued 2018-10-16 at midnight: covered", url: Self.https,
                                 facts: Self.facts(anchor: .system, issued: Date(timeIntervalSince1970: 1_539_648_000)),
                                 allowed: false, rule: .certificateTransparency),
                ATSReferenceCase(name: "iOS 10–12: only said (iOS 12.1.1 enforces it)", url: Self.https,
                                 facts: Self.facts(anchor: .system), options: T.ios(.ios10), allowed: true,
                                 noteContains: "iOS 12.1.1 and later refuse"),
            ]))
    }

    /// Rule 2: `NSRequiresCertificateTransparency = NO` cannot switch the requirement off.
    func testRule12RequiresCertificateTransparencyNoCannotSwitchItOff() {
        check(ATSSourcedRule(
            rule: "NSRequiresCertificateTransparency = NO leaves Certificate Transparency required for a publicly trusted leaf",
            source: "https://developer.apple.com/documentation/bundleresources/information-property-list/"
                + "nsrequirescertificatetransparency (\"The system now requires this behavior in all cases, making the key "
                + "irrelevant.\")",
            cases: [
                ATSReferenceCase(name: "system root, no SCTs, the key NO: blocked", url: Self.https,
                                 policy: T.domainEntry([ATSKey.requiresCertificateTransparency: false]),
                                 facts: Self.facts(anchor: .system), allowed: false, rule: .certificateTransparency,
                                 matched: .some(T.host), noteContains: "= NO does not lift Certificate Transparency"),
                ATSReferenceCase(name: "the key NO with every other exception too", url: Self.https,
                                 policy: T.domainEntry([ATSKey.requiresCertificateTransparency: false,
                                                        ATSKey.exceptionAllowsInsecureHTTPLoads: true,
                                                        ATSKey.exceptionMinimumTLSVersion: "TLSv1.0",
                                                        ATSKey.exceptionRequiresForwardSecrecy: false]),
                                 facts: Self.facts(anchor: .system), allowed: false, rule: .certificateTransparency),
                ATSReferenceCase(name: "control: the key NO, user-installed root", url: Self.https,
                                 policy: T.domainEntry([ATSKey.requiresCertificateTransparency: false]),
                                 facts: Self.facts(anchor: .userInstalled), allowed: true),
            ]))
    }

    /// Rule 3: a web view does not apply the app's pins (medium confidence); the stricter reading applies them.
    func testRule13WebViewsDoNotApplyPinnedDomains() {
        let mismatch = S.pinEntry(T.host)
        let enforced = T.ios(.ios17) { $0.loadKind = .web; $0.readings.webViewPins = .enforced }
        check(ATSSourcedRule(
            rule: "NSPinnedDomains is read from the evaluating process's main bundle; WKWebView loads in WebKit's process and "
                + "connects despite a pin mismatch",
            source: "\(S.security) OSX/sec/Security/SecPolicy.c, getNSPinnedIdentitiesForHostName (CFBundleGetMainBundle); "
                + "https://blog.eidinger.info/infoplist-based-certificate-pinning-on-ios (iOS 14 to 15.4: \"WKWebView will still "
                + "connect and load content from the domain if the SSL public key deviates from the one specified in Info.plist\")",
            cases: [
                ATSReferenceCase(name: "web load, pin mismatch: allowed, said at medium confidence", url: Self.https,
                                 policy: mismatch, facts: T.modern, options: T.ios(.ios17) { $0.loadKind = .web },
                                 allowed: true, pinned: .some(T.host), noteContains: "web view (medium confidence)",
                                 appliedRule: .webViewPins, appliedReading: "notEnforced"),
                ATSReferenceCase(name: "web load, pin mismatch, the stricter reading: blocked", url: Self.https,
                                 policy: mismatch, facts: T.modern, options: enforced, allowed: false, rule: .pinning,
                                 urlError: -1200, appliedRule: .webViewPins, appliedReading: "enforced"),
                ATSReferenceCase(name: "control: a URLSession load with the same pins is blocked", url: Self.https,
                                 policy: mismatch, facts: T.modern, allowed: false, rule: .pinning),
                ATSReferenceCase(name: "web load: pins do not waive other rules", url: Self.https,
                                 policy: mismatch, facts: T.tls10, options: T.ios(.ios17) { $0.loadKind = .web },
                                 allowed: false, rule: .tlsVersion),
            ]))
    }

    func check(_ sourced: ATSSourcedRule, file: StaticString = #filePath, line: UInt = #line) {
        ATSAppleSourceRuleTests.verify(sourced, file: file, line: line)
    }
}
