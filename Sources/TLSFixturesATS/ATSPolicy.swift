import Foundation
import TLSFixturesWire

/// An app's `NSAppTransportSecurity` configuration, parsed and checked.
///
/// Every field is optional in the sense ATS means it: `nil` = the key is absent (or was ignored because
/// its value had the wrong type). Absence and `false` are different for the keys that switch
/// `NSAllowsArbitraryLoads` off merely by being present, so they are not collapsed to `Bool`.
public struct ATSPolicy: Sendable, Equatable {
    /// `NSAllowsArbitraryLoads`: ATS off for hosts without their own `NSExceptionDomains` entry. Ignored on iOS 10+ when
    /// the media, web-content or local-networking key is present with the right type, whatever its value.
    public var allowsArbitraryLoads: Bool?
    /// `NSAllowsArbitraryLoadsForMedia` (`NSAllowsArbitraryLoadsInMedia` is not a key: a 2016 documentation typo).
    public var allowsArbitraryLoadsForMedia: Bool?
    /// `NSAllowsArbitraryLoadsInWebContent`: ATS off for web views only; its presence switches `NSAllowsArbitraryLoads` off.
    public var allowsArbitraryLoadsInWebContent: Bool?
    /// `NSAllowsLocalNetworking`. Local hosts (unqualified names, `.local`, local addresses) are exempt without it; NO
    /// removes that exemption, YES also allows external IP addresses on iOS 17+. Present, it switches
    /// `NSAllowsArbitraryLoads` off.
    public var allowsLocalNetworking: Bool?
    /// `NSExceptionDomains`, keyed as written in the plist (so warnings and verdicts can quote the key).
    public var exceptionDomains: [String: ATSExceptionDomain]
    /// `NSPinnedDomains` (iOS 14+), keyed as written.
    public var pinnedDomains: [String: ATSPinnedDomain]
    /// What Apple's loader would log about this dictionary: unknown keys, wrong types, unusable domain keys.
    public var warnings: [ATSPolicyWarning]
    /// Model rules the parser applied while reading the dictionary (wrong types, numbers read as booleans, keys
    /// that are not keys), so verdicts can name them with their confidence.
    public var parserRules: [ATSModelRule]
    /// The `NSAppTransportSecurity` dictionary exactly as given, for display and round trips.
    public var dictionary: [String: ATSPlistValue]

    /// No `NSAppTransportSecurity` at all: every default applies.
    public static let empty = ATSPolicy(parsing: [:])

    /// Builds a policy from a dictionary literal, the way tests and the exception finder write one:
    /// `ATSPolicy(["NSExceptionDomains": ["example.com": ["NSIncludesSubdomains": true]]])`.
    public init(_ ats: [String: ATSPlistValue]) {
        self.init(parsing: ats)
    }

    /// A bare `NSAppTransportSecurity` dictionary as Foundation hands it over.
    /// Throws only when a value is not a property-list type at all.
    public init(atsDictionary: [String: Any]) throws {
        guard case .dictionary(let converted)? = ATSPlistValue(foundation: atsDictionary) else {
            throw ATSPolicyError.notAPropertyList
        }
        self.init(parsing: converted)
    }

    /// A bare `NSAppTransportSecurity` dictionary serialized as a plist (XML, binary or OpenStep).
    public init(atsDictionary data: Data) throws {
        self.init(parsing: try ATSPolicy.topLevelDictionary(from: data))
    }

    /// A whole `Info.plist` (XML or binary). Throws if it has no `NSAppTransportSecurity`: that is a
    /// legitimate app configuration (use `ATSPolicy.empty`), but when a user hands the file to an ATS
    /// tool they almost always expected a key to be there.
    public init(infoPlist data: Data) throws {
        try self.init(infoPlistTopLevel: try ATSPolicy.topLevelDictionary(from: data))
    }

    /// An Info.plist already read (so `parse(plist:)` reads the bytes once).
    private init(infoPlistTopLevel top: [String: ATSPlistValue]) throws {
        guard let ats = top[ATSKey.root] else { throw ATSPolicyError.missingATSDictionary }
        guard case .dictionary(let dictionary) = ats else {
            throw ATSPolicyError.atsNotADictionary(found: ats.typeName)
        }
        self.init(parsing: dictionary)
    }

    /// Either form, told apart by content: a top level with `NSAppTransportSecurity` is an Info.plist;
    /// one whose keys are all ATS top-level keys is a bare ATS dictionary; anything else is an Info.plist
    /// without ATS, reported as such.
    public static func parse(plist data: Data) throws -> ATSPolicy {
        let top = try topLevelDictionary(from: data)
        if top[ATSKey.root] != nil { return try ATSPolicy(infoPlistTopLevel: top) }
        // The typo'd media key counts here: a bare dictionary holding it is still meant as an ATS dictionary.
        let recognised = ATSKey.topLevel.union([ATSKey.allowsArbitraryLoadsInMedia])
        if !top.isEmpty, top.keys.allSatisfy(recognised.contains) { return ATSPolicy(parsing: top) }
        throw ATSPolicyError.missingATSDictionary
    }

    /// An app's plist as an ATS tool reads it: `parse(plist:)`, except that a plist with no `NSAppTransportSecurity`
    /// key (most apps) is ATS's defaults, which is what such an app gets, with a one-line `note` saying so. A plist that
    /// is not one, or whose key is not a dictionary, still throws.
    public static func parseApp(plist data: Data) throws -> (policy: ATSPolicy, note: String?) {
        do {
            return (try parse(plist: data), nil)
        } catch let error as ATSPolicyError where error.code == .missingATSDictionary {
            return (.empty, missingKeyNote)
        }
    }

    /// What `parseApp(plist:)` says of a plist without the key.
    public static let missingKeyNote = "the property list has no NSAppTransportSecurity key: evaluating ATS's defaults, "
        + "which is what an app without the key gets"

    static func topLevelDictionary(from data: Data) throws -> [String: ATSPlistValue] {
        // Two binary shapes crash or swamp Foundation's reader; refuse them before it sees them.
        if let problem = BinaryPlistPrecheck.problem(in: data) { throw ATSPolicyError.malformed(detail: "\(problem)") }
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            // The parser's own reason (it names the line) is more useful than the generic localized text.
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? error.localizedDescription
            let oneLine = detail.split(whereSeparator: \.isNewline).joined(separator: " ")
            throw ATSPolicyError.malformed(detail: oneLine)
        }
        guard let value = ATSPlistValue(foundation: object) else { throw ATSPolicyError.notAPropertyList }
        guard case .dictionary(let dictionary) = value else {
            throw ATSPolicyError.topLevelNotADictionary(found: value.typeName)
        }
        return dictionary
    }

    private init(parsing ats: [String: ATSPlistValue]) {
        var parser = ATSPolicyParser()
        let parsed = parser.parse(ats)
        self = parsed
    }

    /// Memberwise, used by the parser.
    init(allowsArbitraryLoads: Bool?, allowsArbitraryLoadsForMedia: Bool?, allowsArbitraryLoadsInWebContent: Bool?,
         allowsLocalNetworking: Bool?, exceptionDomains: [String: ATSExceptionDomain],
         pinnedDomains: [String: ATSPinnedDomain], warnings: [ATSPolicyWarning], parserRules: [ATSModelRule],
         dictionary: [String: ATSPlistValue]) {
        self.allowsArbitraryLoads = allowsArbitraryLoads
        self.allowsArbitraryLoadsForMedia = allowsArbitraryLoadsForMedia
        self.allowsArbitraryLoadsInWebContent = allowsArbitraryLoadsInWebContent
        self.allowsLocalNetworking = allowsLocalNetworking
        self.exceptionDomains = exceptionDomains
        self.pinnedDomains = pinnedDomains
        self.warnings = warnings
        self.parserRules = parserRules
        self.dictionary = dictionary
    }
}

/// One `NSExceptionDomains` entry. `nil` fields were absent, so the ATS default applies to them.
public struct ATSExceptionDomain: Sendable, Equatable {
    /// How the key can match a connection; decided at parse time from the key's shape.
    public enum KeyKind: Sendable, Equatable {
        /// A lowercase DNS name: matches hosts by name (and subdomains if `includesSubdomains`).
        case dns
        /// An IP literal (iOS 17+): matches connections to exactly that address.
        case ip(ATSIPAddress)
        /// A CIDR block (iOS 17+): matches addresses inside it; the longest prefix wins.
        case network(ATSIPNetwork)
        /// A key that can never match (uppercase, port, scheme, wildcard, empty); a warning says why.
        case unusable
    }

    /// The `NSExceptionDomains` key exactly as written (case and all), for warnings and verdicts.
    public var key: String
    /// How the key can match, decided from its shape when parsed.
    public var keyKind: KeyKind
    /// `NSIncludesSubdomains`: the entry also covers names below the key (every subdomain by default; the
    /// `subdomains` reading offers the current docs' one extra label).
    public var includesSubdomains: Bool?
    /// `NSExceptionAllowsInsecureHTTPLoads`: allows `http://`, and lets the app's own trust override accept an
    /// untrusted certificate; without that delegate code, trust still fails. Versions and suites are unchanged.
    public var allowsInsecureHTTPLoads: Bool?
    /// `NSExceptionMinimumTLSVersion`: the lowest version accepted for the domain (default TLS 1.2).
    public var minimumTLSVersion: TLSVersion?
    /// `NSExceptionRequiresForwardSecrecy`: NO also admits the six TLS_RSA_WITH_AES suites and drops the leaf key-size
    /// rule; no other suite (DHE, 3DES, RC4) is added.
    public var requiresForwardSecrecy: Bool?
    /// Required CT for this domain on earlier systems (iOS 10–12); no effect later, where CT is enforced for public
    /// certificates whatever this says.
    public var requiresCertificateTransparency: Bool?
    /// The `NSThirdPartyException*` keys, parsed so the iOS 9 reading (`ATSReadings.ThirdPartyKeys`) can use them;
    /// Apple's current parser ignores them. `nil` when the entry has none.
    public var thirdParty: ATSThirdPartyExceptionKeys?
    /// One of the entries Apple's parser registers for every app before reading its dictionary (`builtIn`), not one
    /// the app wrote.
    public var isBuiltIn = false

    /// The entries Security/protocol/SecProtocolConfiguration.m registers for every configuration, third-party apps
    /// included (`sec_protocol_configuration_register_builtin_exceptions`, the same seven from Security-59306 to
    /// Security-61901): HTTP allowed, forward secrecy not required, subdomains included; TLS 1.0 for the maps hosts.
    /// An app's own entry under the same key replaces one (`set_ats_overrides` runs after them).
    public static let builtIn: [ATSExceptionDomain] = [
        ("apple.com", TLSVersion.tls1_2), ("ls.apple.com", .tls1_0), ("gs.apple.com", .tls1_0),
        ("geo.apple.com", .tls1_0), ("is.autonavi.com", .tls1_0), ("apple-mapkit.com", .tls1_0),
        ("setup.icloud.com", .tls1_2),
    ].map { key, version in
        ATSExceptionDomain(key: key, keyKind: .dns, includesSubdomains: true, allowsInsecureHTTPLoads: true,
                           minimumTLSVersion: version, requiresForwardSecrecy: false,
                           requiresCertificateTransparency: nil, thirdParty: nil, isBuiltIn: true)
    }
}

/// The `NSThirdPartyException*` twins of the exception keys (removed from Apple's documentation in 2016).
public struct ATSThirdPartyExceptionKeys: Sendable, Equatable {
    /// `NSThirdPartyExceptionAllowsInsecureHTTPLoads`.
    public var allowsInsecureHTTPLoads: Bool?
    /// `NSThirdPartyExceptionMinimumTLSVersion`.
    public var minimumTLSVersion: TLSVersion?
    /// `NSThirdPartyExceptionRequiresForwardSecrecy`.
    public var requiresForwardSecrecy: Bool?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(allowsInsecureHTTPLoads: Bool?, minimumTLSVersion: TLSVersion?, requiresForwardSecrecy: Bool?) {
        self.allowsInsecureHTTPLoads = allowsInsecureHTTPLoads
        self.minimumTLSVersion = minimumTLSVersion
        self.requiresForwardSecrecy = requiresForwardSecrecy
    }
}

/// One `NSPinnedDomains` entry: base64 SHA-256 SPKI hashes (`SPKI-SHA256-BASE64`).
public struct ATSPinnedDomain: Sendable, Equatable {
    /// The `NSPinnedDomains` key as written.
    public var key: String
    /// `NSIncludesSubdomains`: the pins also cover names exactly one label below the key (`a.example.com`, not
    /// `b.a.example.com`), as Apple's SecPolicy.c compares only the host and its direct parent.
    public var includesSubdomains: Bool?
    /// `nil` when the key is absent: then the CA side is not checked at all (an empty list is different:
    /// nothing can match it).
    public var caIdentities: [String]?
    /// `NSPinnedLeafIdentities`: the leaf's SPKI must be listed; nil when the key is absent, `[]` matches nothing.
    public var leafIdentities: [String]?
}

/// One thing Apple's loader would complain about, naming the key so the user can find it.
public struct ATSPolicyWarning: Sendable, Equatable, Codable, CustomStringConvertible {
    /// From the `NSAppTransportSecurity` dictionary down, e.g. `["NSExceptionDomains", "Example.com"]`.
    public var keyPath: [String]
    /// What is wrong and what the loader does about it, in one line.
    public var message: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(keyPath: [String], message: String) {
        self.keyPath = keyPath
        self.message = message
    }

    /// The key the warning is about.
    public var key: String { keyPath.last ?? ATSKey.root }

    /// One line: keys come from the plist as written, so their control characters are shown escaped
    /// (a key holding a newline would otherwise split the warning and forge a line of `ats check` output).
    public var description: String {
        "\(([ATSKey.root] + keyPath).joined(separator: " ▸ ")): \(message)".escapingControlCharacters
    }
}

/// Why a plist could not be turned into a policy. Each message is one line: the problem, then the fix.
public struct ATSPolicyError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<ATSPolicyError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<ATSPolicyError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when the reason says it all.
    public let fix: String?

    /// Memberwise: each argument sets the property of the same name; control characters are escaped (the reason may
    /// quote the file).
    public init(code: Code, reason: String, fix: String? = nil) {
        self.code = code
        self.reason = reason.escapingControlCharacters
        self.fix = fix?.escapingControlCharacters
    }

    /// The data is not a property list; `detail` is the parser's word.
    public static func malformed(detail: String) -> ATSPolicyError {
        ATSPolicyError(code: .malformed, reason: "malformed property list (\(detail))",
                       fix: "fix the file, e.g. check it with `plutil -lint Info.plist`")
    }

    /// The top level is a `found` (its plist type name).
    public static func topLevelNotADictionary(found: String) -> ATSPolicyError {
        ATSPolicyError(code: .topLevelNotADictionary, reason: "the property list's top level is \(article(found)) \(found), not a dictionary",
                       fix: "an Info.plist must have <dict> at its top level")
    }

    /// No `NSAppTransportSecurity` key.
    public static let missingATSDictionary = ATSPolicyError(
        code: .missingATSDictionary, reason: "the property list has no NSAppTransportSecurity key, so ATS runs with all defaults",
        fix: "add an NSAppTransportSecurity dictionary, or evaluate with the defaults (ATSPolicy.empty)")

    /// `NSAppTransportSecurity` is a `found`.
    public static func atsNotADictionary(found: String) -> ATSPolicyError {
        ATSPolicyError(code: .atsNotADictionary, reason: "NSAppTransportSecurity is \(article(found)) \(found), not a dictionary, so iOS ignores it",
                       fix: "make it a <dict>")
    }

    /// A value a property list cannot hold.
    public static let notAPropertyList = ATSPolicyError(
        code: .notAPropertyList, reason: "the value contains something a property list cannot hold",
        fix: "use only dictionaries, arrays, strings, numbers, booleans, dates and data")

    private static func article(_ word: String) -> String {
        word.first.map { "aeiou".contains($0) } == true ? "an" : "a"
    }
}

/// The key spellings, in one place so the parser, the finder and diagnostics agree on them.
public enum ATSKey {
    /// The Info.plist key that holds the whole ATS dictionary.
    public static let root = "NSAppTransportSecurity"
    /// Top level: ATS off for hosts without their own exception entry (ignored on iOS 10+ when the media, web-content
    /// or local-networking key is present).
    public static let allowsArbitraryLoads = "NSAllowsArbitraryLoads"
    /// Top level: ATS off for AVFoundation media loads.
    public static let allowsArbitraryLoadsForMedia = "NSAllowsArbitraryLoadsForMedia"
    /// Not a key: a typo in Apple's documentation, corrected 2016-11-14. Kept to recognise it and say so.
    public static let allowsArbitraryLoadsInMedia = "NSAllowsArbitraryLoadsInMedia"
    /// Top level: ATS off for web views.
    public static let allowsArbitraryLoadsInWebContent = "NSAllowsArbitraryLoadsInWebContent"
    /// Top level: local hosts are exempt without it; NO removes the exemption, YES also allows external IP addresses
    /// (iOS 17+).
    public static let allowsLocalNetworking = "NSAllowsLocalNetworking"
    /// Top level: per-domain exceptions, keyed by domain (or IP address/CIDR on iOS 17).
    public static let exceptionDomains = "NSExceptionDomains"
    /// Top level: per-domain SPKI pins (iOS 14+).
    public static let pinnedDomains = "NSPinnedDomains"

    /// In an exception entry: the entry covers subdomains too (every level, by default). In a pinned-domain entry: one
    /// extra label only.
    public static let includesSubdomains = "NSIncludesSubdomains"
    /// In an exception entry: allow `http://`, and let the app's trust override accept an untrusted certificate.
    public static let exceptionAllowsInsecureHTTPLoads = "NSExceptionAllowsInsecureHTTPLoads"
    /// In an exception entry: `TLSv1.0` … `TLSv1.3`, the lowest version accepted.
    public static let exceptionMinimumTLSVersion = "NSExceptionMinimumTLSVersion"
    /// In an exception entry: NO admits the six TLS_RSA_WITH_AES suites and drops the key-size rule.
    public static let exceptionRequiresForwardSecrecy = "NSExceptionRequiresForwardSecrecy"
    /// In an exception entry: require CT (only iOS 10–12 honour it).
    public static let requiresCertificateTransparency = "NSRequiresCertificateTransparency"
    /// Removed in 2016; parsed for the older reading only.
    public static let thirdPartyAllowsInsecureHTTPLoads = "NSThirdPartyExceptionAllowsInsecureHTTPLoads"
    /// Removed in 2016; parsed for the older reading only.
    public static let thirdPartyMinimumTLSVersion = "NSThirdPartyExceptionMinimumTLSVersion"
    /// Removed in 2016; parsed for the older reading only.
    public static let thirdPartyRequiresForwardSecrecy = "NSThirdPartyExceptionRequiresForwardSecrecy"

    /// In a pinned-domain entry: an array of CA SPKI pins.
    public static let pinnedCAIdentities = "NSPinnedCAIdentities"
    /// In a pinned-domain entry: an array of leaf SPKI pins.
    public static let pinnedLeafIdentities = "NSPinnedLeafIdentities"
    /// The key of each pin dictionary in those arrays: base64 of the SHA-256 of the DER SPKI.
    public static let spkiSHA256Base64 = "SPKI-SHA256-BASE64"

    /// Each `NSThirdPartyException*` key beside the plain exception key it stood for on iOS 9.
    public static let thirdPartyTwins: [(thirdParty: String, plain: String)] = [
        (thirdPartyAllowsInsecureHTTPLoads, exceptionAllowsInsecureHTTPLoads),
        (thirdPartyMinimumTLSVersion, exceptionMinimumTLSVersion),
        (thirdPartyRequiresForwardSecrecy, exceptionRequiresForwardSecrecy),
    ]

    /// The keys allowed directly inside `NSAppTransportSecurity`.
    public static let topLevel: Set<String> = [
        allowsArbitraryLoads, allowsArbitraryLoadsForMedia, allowsArbitraryLoadsInWebContent, allowsLocalNetworking,
        exceptionDomains, pinnedDomains,
    ]
}

/// The codes of `ATSPolicyError`.
extension ErrorCode where Owner == ATSPolicyError {
    /// Not a property list at all (XML, binary or OpenStep syntax).
    public static var malformed: Self { Self("malformed") }
    /// A property list whose top level is not a dictionary.
    public static var topLevelNotADictionary: Self { Self("topLevelNotADictionary") }
    /// An Info.plist with no `NSAppTransportSecurity` key: ATS runs with all defaults.
    public static var missingATSDictionary: Self { Self("missingATSDictionary") }
    /// `NSAppTransportSecurity` that is not a dictionary, which iOS ignores.
    public static var atsNotADictionary: Self { Self("atsNotADictionary") }
    /// A value a property list cannot hold.
    public static var notAPropertyList: Self { Self("notAPropertyList") }
}
