import Foundation

/// The kind of build a config is read for: Android parses `<debug-overrides>` only when the app is debuggable
/// (`android:debuggable`, which a debug build sets).
public enum NSCBuild: String, Sendable, Codable, CaseIterable {
    /// A release build: `<debug-overrides>` is skipped unread.
    case release
    /// A debuggable build: `<debug-overrides>` applies.
    case debug
}

extension NSCDocument {
    /// Parses `network_security_config.xml` as Android's `XmlConfigSource` does for `build`, or throws the error that
    /// would stop the app. `debugResource` is the file's `_debug` twin (`network_security_config_debug.xml`), whose
    /// `<debug-overrides>` a debuggable build uses when the main file has none.
    public static func parse(_ data: Data, build: NSCBuild,
                             debugResource: Data? = nil) throws(NSCConfigError) -> NSCDocument {
        var parser = NSCParser(build: build)
        var document = try parser.document(NSCXMLReader.root(of: data))
        if build == .debug, document.debugOverrides == nil, let debugResource {
            document.debugOverrides = try parser.debugResource(NSCXMLReader.root(of: debugResource))
        }
        document.warnings = parser.warnings
        return document
    }
}

/// `XmlConfigSource`'s reading, element by element (frameworks/base, core/java/android/security/net/config/).
struct NSCParser {
    static let root = "network-security-config"

    enum Kind: String {
        case base = "base-config"
        case domain = "domain-config"
        case debug = "debug-overrides"
    }

    let build: NSCBuild
    var warnings: [String] = []
    /// Every `<domain>` name seen so far in the file: Android refuses a second one, wherever it is.
    var seenDomains: Set<String> = []

    init(build: NSCBuild) {
        self.build = build
    }

    /// `parseNetworkSecurityConfig`: the top level, in file order.
    mutating func document(_ root: NSCXMLElement) throws(NSCConfigError) -> NSCDocument {
        guard root.name == Self.root else {
            throw NSCConfigError.wrongRoot(line: root.line, found: root.name, expected: Self.root)
        }
        var document = NSCDocument()
        var seenBase = false
        var seenDebug = false
        for element in root.children {
            switch element.name {
            case Kind.base.rawValue:
                guard !seenBase else {
                    throw NSCConfigError.duplicate("base-config", in: Self.root, line: element.line)
                }
                seenBase = true
                document.base = try entry(element, kind: .base)
            case Kind.domain.rawValue:
                document.domainConfigs.append(try entry(element, kind: .domain))
            case Kind.debug.rawValue:
                // A second one is refused in every build; only a debuggable build reads what is inside.
                guard !seenDebug else {
                    throw NSCConfigError.duplicate("debug-overrides", in: Self.root, line: element.line)
                }
                seenDebug = true
                if build == .debug {
                    document.debugOverrides = try entry(element, kind: .debug)
                } else {
                    warnings.append("line \(element.line): <debug-overrides> is skipped unread in a release build")
                }
            default:
                skip(element, in: Self.root)
            }
        }
        return document
    }

    /// `parseDebugOverridesResource`: the `_debug` file's `<debug-overrides>`, everything else in it skipped.
    mutating func debugResource(_ root: NSCXMLElement) throws(NSCConfigError) -> NSCConfigEntry? {
        guard root.name == Self.root else {
            throw NSCConfigError.wrongRoot(line: root.line, found: root.name, expected: Self.root)
        }
        var found: NSCConfigEntry?
        var seen = false
        for element in root.children where element.name == Kind.debug.rawValue {
            guard !seen else { throw NSCConfigError.duplicate("debug-overrides", in: Self.root, line: element.line) }
            seen = true
            found = try entry(element, kind: .debug)
        }
        return found
    }

    /// `parseConfigEntry`: one config element and, for a domain-config, its nested ones.
    mutating func entry(_ element: NSCXMLElement, kind: Kind) throws(NSCConfigError) -> NSCConfigEntry {
        var entry = NSCConfigEntry(line: element.line)
        // Only these two attributes are read, each only when present: an absent one is inherited.
        if let value = element.attributes["cleartextTrafficPermitted"] {
            entry.cleartextTrafficPermitted = boolean(value, "cleartextTrafficPermitted", default: true, element)
        }
        if let value = element.attributes["hstsEnforced"] {
            entry.hstsEnforced = boolean(value, "hstsEnforced", default: false, element)
        }
        for name in element.attributes.keys.sorted() where name.contains(":") && !name.hasPrefix("xmlns") {
            warnings.append("line \(element.line): \(name) on <\(element.name)> is not read (Android reads "
                            + "cleartextTrafficPermitted and hstsEnforced, with no namespace prefix)")
        }
        var seenTrustAnchors = false
        var seenPinSet = false
        for child in element.children {
            switch child.name {
            case "domain":
                guard kind == .domain else {
                    throw NSCConfigError.notAllowed("domain", in: kind.rawValue, line: child.line,
                                                    fix: "put the <domain> in a <domain-config>")
                }
                entry.domains.append(try domain(child))
            case "trust-anchors":
                guard !seenTrustAnchors else {
                    throw NSCConfigError.duplicate("trust-anchors", in: kind.rawValue, line: child.line)
                }
                seenTrustAnchors = true
                entry.trustAnchors = try trustAnchors(child, overridePinsByDefault: kind == .debug)
            case "pin-set":
                guard kind == .domain else {
                    throw NSCConfigError.notAllowed("pin-set", in: kind.rawValue, line: child.line,
                                                    fix: "pins are per domain: put the <pin-set> in a <domain-config>")
                }
                guard !seenPinSet else {
                    throw NSCConfigError.duplicate("pin-set", in: kind.rawValue, line: child.line)
                }
                seenPinSet = true
                entry.pinSet = try pinSet(child)
            case "domain-config":
                guard kind == .domain else {
                    throw NSCConfigError.notAllowed("domain-config", in: kind.rawValue, line: child.line,
                                                    fix: "move it to the top level of <network-security-config>")
                }
                entry.children.append(try self.entry(child, kind: .domain))
            case "certificateTransparency" where kind != .debug:
                entry.certificateTransparency = boolean(child.attributes["enabled"] ?? "", "enabled", default: false,
                                                        child)
                warnings.append("line \(child.line): <certificateTransparency> (Android 16's schema) is recorded but "
                                + "not modelled")
            default:
                skip(child, in: kind.rawValue)
            }
        }
        // Checked once the element is read: an error inside it comes first, as in Android.
        if kind == .domain && entry.domains.isEmpty { throw NSCConfigError.noDomain(line: element.line) }
        return entry
    }

    /// `parseDomain`: the trimmed, lowercased name, once in the file.
    mutating func domain(_ element: NSCXMLElement) throws(NSCConfigError) -> NSCDomain {
        guard element.startsWithText else { throw NSCConfigError.invalidDomain(line: element.line, "has no name") }
        guard !element.elementAfterText else {
            throw NSCConfigError.invalidDomain(line: element.line, "has elements inside it")
        }
        let name = element.text.javaTrimmed.lowercased()
        guard seenDomains.insert(name).inserted else { throw NSCConfigError.duplicateDomain(name, line: element.line) }
        let subdomains = element.attributes["includeSubdomains"]
            .map { boolean($0, "includeSubdomains", default: false, element) } ?? false
        return NSCDomain(name, includeSubdomains: subdomains)
    }

    /// `parseTrustAnchors`: the `<certificates>` entries, anything else skipped.
    mutating func trustAnchors(_ element: NSCXMLElement,
                               overridePinsByDefault: Bool) throws(NSCConfigError) -> [NSCCertificates] {
        var anchors: [NSCCertificates] = []
        for child in element.children {
            guard child.name == "certificates" else {
                skip(child, in: "trust-anchors")
                continue
            }
            guard let src = child.attributes["src"] else {
                throw NSCConfigError.invalidCertificates(line: child.line, "has no src attribute")
            }
            guard let source = NSCCertificateSource(src: src) else {
                throw NSCConfigError.invalidCertificates(line: child.line, "src=\"\(src)\" is not system, user, wfa "
                                                         + "or a resource (@raw/NAME)")
            }
            let overridePins = child.attributes["overridePins"]
                .map { boolean($0, "overridePins", default: overridePinsByDefault, child) } ?? overridePinsByDefault
            anchors.append(NSCCertificates(source, overridePins: overridePins))
        }
        return anchors
    }

    /// `parsePinSet`: the expiration day, then the `<pin>` elements (anything else skipped).
    mutating func pinSet(_ element: NSCXMLElement) throws(NSCConfigError) -> NSCPinSet {
        var expiration: NSCDay?
        if let value = element.attributes["expiration"] {
            guard let day = NSCExpiration.parse(value) else {
                throw NSCConfigError.invalidExpiration(value, line: element.line)
            }
            expiration = day
        }
        var pins: [String] = []
        for child in element.children {
            guard child.name == "pin" else {
                skip(child, in: "pin-set")
                continue
            }
            let pin = try self.pin(child)
            if !pins.contains(pin) { pins.append(pin) }
        }
        return NSCPinSet(pins: pins, expiration: expiration)
    }

    /// `parsePin`: SHA-256 only, base64 of exactly 32 bytes, nothing else inside.
    func pin(_ element: NSCXMLElement) throws(NSCConfigError) -> String {
        let digest = element.attributes["digest"]
        guard digest?.lowercased() == "sha-256" else {
            throw NSCConfigError.invalidPin(line: element.line, digest.map { "digest \"\($0)\" is not supported: "
                + "Android knows SHA-256 only" } ?? "has no digest attribute (digest=\"SHA-256\")")
        }
        guard element.startsWithText else { throw NSCConfigError.invalidPin(line: element.line, "has no digest text") }
        guard let bytes = AndroidBase64.decode(element.text.javaTrimmed) else {
            throw NSCConfigError.invalidPin(line: element.line, "is not base64 as Android decodes it (its padding)")
        }
        guard bytes.count == 32 else {
            throw NSCConfigError.invalidPin(line: element.line, "decodes to \(bytes.count) bytes, where a SHA-256 "
                                            + "digest is 32")
        }
        guard !element.elementAfterText else {
            throw NSCConfigError.invalidPin(line: element.line, "has elements inside it")
        }
        return bytes.base64EncodedString()
    }

    /// A boolean attribute as Android's compiled XML gives it back: aapt2 turns `true`/`TRUE`/`True` and
    /// `false`/`FALSE`/`False` (spaces around allowed) into booleans and keeps anything else as text, which
    /// `getAttributeBooleanValue` answers with the default it is given.
    mutating func boolean(_ value: String, _ name: String, default fallback: Bool, _ element: NSCXMLElement) -> Bool {
        switch value.trimmingCharacters(in: .whitespaces) {
        case "true", "TRUE", "True": return true
        case "false", "FALSE", "False": return false
        default:
            warnings.append("line \(element.line): \(name)=\"\(value)\" is not true or false: Android reads it as "
                            + "\(fallback) (the default it reads \(name) with)")
            return fallback
        }
    }

    mutating func skip(_ element: NSCXMLElement, in parent: String) {
        warnings.append("line \(element.line): <\(element.name)> in <\(parent)> is not an element Android reads: "
                        + "skipped")
    }
}

/// `<pin-set expiration>` as `SimpleDateFormat("yyyy-MM-dd")` with `setLenient(false)` reads it: three numbers
/// separated by `-`, a real day of the Gregorian calendar (year 1 or later), and whatever follows ignored
/// (`DateFormat.parse(String)` stops where the pattern ends).
enum NSCExpiration {
    static func parse(_ text: String) -> NSCDay? {
        var fields: [Int] = []
        var digits = ""
        var rest = Substring(text)
        while fields.count < 3 {
            digits = String(rest.prefix { $0.isASCII && $0.isNumber })
            guard !digits.isEmpty, digits.count <= 9, let number = Int(digits) else { return nil }
            fields.append(number)
            rest = rest.dropFirst(digits.count)
            if fields.count < 3 {
                guard rest.first == "-" else { return nil }
                rest = rest.dropFirst()
            }
        }
        let (year, month, day) = (fields[0], fields[1], fields[2])
        guard year >= 1, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        return NSCDay(year: year, month: month, day: day)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// `android.util.Base64.decode(text, DEFAULT)`, which NSC pins go through: characters outside the alphabet and `=`
/// are skipped (spaces, line breaks, anything else), padding may be left out but when present must be complete, and
/// nothing but skipped characters may follow it; a lone sixth bit-group at the end is an error.
package enum AndroidBase64 {
    package static func decode(_ text: String) -> Data? {
        var output: [UInt8] = []
        var value = 0
        var state = 0   // 0–3: inside a quartet; 4: one `=` read, one more expected; 5: only skippable characters
        for byte in text.utf8 {
            let digit = Self.value(byte)
            switch state {
            case 0, 1, 2, 3:
                if let digit {
                    value = value << 6 | digit
                    state += 1
                    if state == 4 {
                        output += [UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
                        state = 0
                        value = 0
                    }
                } else if byte == UInt8(ascii: "=") {
                    switch state {
                    case 2:
                        output.append(UInt8(value >> 4 & 0xff))
                        state = 4
                    case 3:
                        output += [UInt8(value >> 10 & 0xff), UInt8(value >> 2 & 0xff)]
                        state = 5
                    default:
                        return nil
                    }
                }
            case 4:
                if byte == UInt8(ascii: "=") { state = 5 } else if digit != nil { return nil }
            default:
                if digit != nil || byte == UInt8(ascii: "=") { return nil }
            }
        }
        switch state {
        case 0, 5: break
        case 2: output.append(UInt8(value >> 4 & 0xff))
        case 3: output += [UInt8(value >> 10 & 0xff), UInt8(value >> 2 & 0xff)]
        default: return nil   // 1: six bits make no byte; 4: half the padding
        }
        return Data(output)
    }

    private static func value(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return Int(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return Int(byte - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}

extension String {
    /// `String.trim()` in Java: every character up to U+0020 at either end.
    var javaTrimmed: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0.value > 0x20 }),
              let last = scalars.lastIndex(where: { $0.value > 0x20 }) else { return "" }
        return String(scalars[first...last])
    }
}
