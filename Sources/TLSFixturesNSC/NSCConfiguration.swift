import Foundation

/// An app's `network_security_config.xml`, parsed as Android's `XmlConfigSource` parses it for one kind of build.
///
/// Only what the file states is here: a value it leaves out is nil and is inherited when the config for a host is
/// resolved (`NSCApplicationConfig`). `debugOverrides` is parsed only for a debuggable build; a release build skips the
/// element unread, as Android does, so an error inside it breaks debug builds alone.
public struct NSCDocument: Sendable, Equatable, Codable {
    /// `<base-config>`: the app-wide settings; nil when the file has none.
    public var base: NSCConfigEntry?
    /// The top-level `<domain-config>` elements in file order, each with its nested ones in `children`.
    public var domainConfigs: [NSCConfigEntry]
    /// `<debug-overrides>` when the build is debuggable and the file (or its `_debug` resource) has one.
    public var debugOverrides: NSCConfigEntry?
    /// What was read but has no effect (an unknown element, a value Android reads as its default), one line each.
    public var warnings: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(base: NSCConfigEntry? = nil, domainConfigs: [NSCConfigEntry] = [],
                debugOverrides: NSCConfigEntry? = nil, warnings: [String] = []) {
        self.base = base
        self.domainConfigs = domainConfigs
        self.debugOverrides = debugOverrides
        self.warnings = warnings
    }
}

/// One `<base-config>`, `<domain-config>` or `<debug-overrides>` element: what it sets; nil inherits.
public struct NSCConfigEntry: Sendable, Equatable, Codable {
    /// `cleartextTrafficPermitted`, as Android reads it.
    public var cleartextTrafficPermitted: Bool?
    /// `hstsEnforced`, as Android reads it (no HTTP stack of the platform acts on it: see the model's notes).
    public var hstsEnforced: Bool?
    /// `<trust-anchors>`: nil when the element is absent (inherited), `[]` for an empty one (nothing trusted).
    public var trustAnchors: [NSCCertificates]?
    /// `<pin-set>` (domain-config only); nil inherits.
    public var pinSet: NSCPinSet?
    /// `<certificateTransparency enabled=…>` (Android 16's schema); recorded, not modelled.
    public var certificateTransparency: Bool?
    /// `<domain>` elements (domain-config only).
    public var domains: [NSCDomain]
    /// Nested `<domain-config>` elements, which inherit from this one.
    public var children: [NSCConfigEntry]
    /// The line the element starts on.
    public var line: Int

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(cleartextTrafficPermitted: Bool? = nil, hstsEnforced: Bool? = nil,
                trustAnchors: [NSCCertificates]? = nil, pinSet: NSCPinSet? = nil,
                certificateTransparency: Bool? = nil, domains: [NSCDomain] = [], children: [NSCConfigEntry] = [],
                line: Int = 0) {
        self.cleartextTrafficPermitted = cleartextTrafficPermitted
        self.hstsEnforced = hstsEnforced
        self.trustAnchors = trustAnchors
        self.pinSet = pinSet
        self.certificateTransparency = certificateTransparency
        self.domains = domains
        self.children = children
        self.line = line
    }
}

/// A `<domain>`: a name, lowercased and trimmed as Android stores it, and whether its subdomains match too.
public struct NSCDomain: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The name (`example.com`, or an IP address written as text: Android compares it as text).
    public var name: String
    /// `includeSubdomains`: names ending in `.NAME` match too, the most specific entry winning.
    public var includeSubdomains: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(_ name: String, includeSubdomains: Bool = false) {
        self.name = name
        self.includeSubdomains = includeSubdomains
    }

    /// `example.com` or `example.com (includeSubdomains)`.
    public var description: String { includeSubdomains ? "\(name) (includeSubdomains)" : name }
}

/// Where a `<certificates src=…>` entry takes its certificates from.
public enum NSCCertificateSource: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `system`: the preinstalled CAs.
    case system
    /// `user`: CAs the user installed (Settings ▸ Security ▸ Encryption & credentials).
    case user
    /// `wfa`: Wi-Fi Alliance CAs for Passpoint (Android 13+).
    case wfa
    /// `@raw/NAME` (or another resource): certificates bundled with the app, PEM or DER.
    case resource(String)

    /// Reads a `src` value; nil for anything Android refuses.
    public init?(src: String) {
        switch src {
        case "system": self = .system
        case "user": self = .user
        case "wfa": self = .wfa
        default:
            guard src.hasPrefix("@"), src.count > 1 else { return nil }
            self = .resource(String(src.dropFirst()))
        }
    }

    /// `system`, `user`, `wfa` or `@raw/NAME`, as the file spells it.
    public var description: String {
        switch self {
        case .system: return "system"
        case .user: return "user"
        case .wfa: return "wfa"
        case .resource(let name): return "@\(name)"
        }
    }
}

/// A `<certificates>` entry of a `<trust-anchors>`.
public struct NSCCertificates: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Where the certificates come from.
    public var source: NSCCertificateSource
    /// `overridePins`: chains ending at one of these skip the pin check (the default is false, true in
    /// `<debug-overrides>`).
    public var overridePins: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(_ source: NSCCertificateSource, overridePins: Bool = false) {
        self.source = source
        self.overridePins = overridePins
    }

    /// `@raw/ca` or `user (overridePins)`.
    public var description: String { overridePins ? "\(source) (overridePins)" : "\(source)" }
}

/// A calendar day, as `<pin-set expiration="yyyy-MM-dd">` names one.
public struct NSCDay: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The year, as written.
    public var year: Int
    /// 1–12.
    public var month: Int
    /// 1–31, within the month.
    public var day: Int

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// A day written as `<pin-set expiration>` takes it (`yyyy-MM-dd`, read as Android reads it); nil for one Android
    /// refuses.
    public init?(parsing text: String) {
        guard let day = NSCExpiration.parse(text) else { return nil }
        self = day
    }

    /// The day `date` falls on in `timeZone` (a device's local time: Android's expiration is local midnight).
    public init(_ date: Date, timeZone: TimeZone) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        self.init(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1)
    }

    /// `2026-01-31`.
    public var description: String {
        String(format: "%04d-%02d-%02d", year, month, day)
    }

    /// Chronological order.
    public static func < (lhs: NSCDay, rhs: NSCDay) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}

/// A `<pin-set>`: SPKI SHA-256 pins, and the day from which they stop being enforced.
public struct NSCPinSet: Sendable, Equatable, Codable {
    /// The pins as base64 of the 32-byte digest, normalized (as decoded, then encoded again).
    public var pins: [String]
    /// `expiration`: from local midnight of this day on, the pins are not checked; nil for never.
    public var expiration: NSCDay?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(pins: [String], expiration: NSCDay? = nil) {
        self.pins = pins
        self.expiration = expiration
    }

    /// Whether the pins are enforced on `today` (the device's local day): Android compares the time with local
    /// midnight at the start of the expiration day, so on that day they already are not.
    public func isEnforced(on today: NSCDay) -> Bool {
        guard !pins.isEmpty else { return false }
        guard let expiration else { return true }
        return today < expiration
    }
}
