import Foundation
import TLSFixturesWire

/// A Network Security Config (or manifest) Android refuses. An app whose config does not parse does not start without
/// it: its first connection fails with `RuntimeException: Failed to parse XML configuration from …` (the
/// `XmlConfigSource.ParserException` inside says where), so every one of these is a broken app, not a warning.
public struct NSCConfigError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<NSCConfigError>`: new ones may be added, none changes
    /// meaning.
    public typealias Code = ErrorCode<NSCConfigError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line, with the line of the file.
    public let reason: String
    /// What to do about it.
    public let fix: String?
    /// The line of the file the problem is on (0 when the file has none to name).
    public let line: Int

    /// Memberwise: each argument sets the property of the same name; control characters are escaped (the text comes
    /// from the user's file).
    public init(code: Code, line: Int, reason: String, fix: String? = nil) {
        self.code = code
        self.line = line
        self.reason = (line > 0 ? "line \(line): " : "") + reason.escapingControlCharacters
        self.fix = fix
    }

    /// The file is not well-formed XML.
    public static func notXML(line: Int, detail: String) -> NSCConfigError {
        NSCConfigError(code: .notXML, line: line, reason: "not well-formed XML (\(detail))",
                       fix: "fix the XML; aapt2 refuses to build the app until it parses")
    }

    /// The root element is not the one expected.
    public static func wrongRoot(line: Int, found: String, expected: String) -> NSCConfigError {
        NSCConfigError(code: .wrongRoot, line: line, reason: "the root element is <\(found)>, not <\(expected)>",
                       fix: "make <\(expected)> the file's root element")
    }

    /// A second `<base-config>`, `<debug-overrides>`, `<trust-anchors>` or `<pin-set>` where one is allowed.
    public static func duplicate(_ element: String, in parent: String, line: Int) -> NSCConfigError {
        NSCConfigError(code: .duplicateElement, line: line, reason: "a second <\(element)> in <\(parent)>: Android "
                       + "allows one", fix: "merge the two <\(element)> elements into one")
    }

    /// An element where Android does not allow it (a `<pin-set>` in `<base-config>`, …).
    public static func notAllowed(_ element: String, in parent: String, line: Int, fix: String) -> NSCConfigError {
        NSCConfigError(code: .elementNotAllowed, line: line, reason: "<\(element)> is not allowed in <\(parent)>",
                       fix: fix)
    }

    /// A `<domain-config>` without a `<domain>`.
    public static func noDomain(line: Int) -> NSCConfigError {
        NSCConfigError(code: .noDomain, line: line, reason: "a <domain-config> without a <domain>",
                       fix: "name the hosts it is for: <domain includeSubdomains=\"true\">example.com</domain>")
    }

    /// A `<domain>` that is not one name.
    public static func invalidDomain(line: Int, _ problem: String) -> NSCConfigError {
        NSCConfigError(code: .invalidDomain, line: line, reason: "<domain> \(problem)",
                       fix: "write one host name as the element's text, nothing else inside it")
    }

    /// The same name in two `<domain>` elements.
    public static func duplicateDomain(_ name: String, line: Int) -> NSCConfigError {
        NSCConfigError(code: .duplicateDomain, line: line, reason: "\(name) is named twice: Android allows each domain "
                       + "once in the file (includeSubdomains or not)",
                       fix: "keep one <domain>\(name)</domain> and put the settings for it in that domain-config")
    }

    /// A `<pin>` Android refuses.
    public static func invalidPin(line: Int, _ problem: String) -> NSCConfigError {
        NSCConfigError(code: .invalidPin, line: line, reason: "<pin> \(problem)",
                       fix: "write <pin digest=\"SHA-256\">BASE64</pin> with the base64 of a 32-byte SHA-256 of the "
                        + "SubjectPublicKeyInfo (tls-fixtures pins NAME --android prints them)")
    }

    /// An `expiration` that is not a `yyyy-MM-dd` day.
    public static func invalidExpiration(_ value: String, line: Int) -> NSCConfigError {
        NSCConfigError(code: .invalidExpiration, line: line, reason: "pin-set expiration \"\(value)\" is not a day "
                       + "written yyyy-MM-dd", fix: "write the day as 2027-01-31")
    }

    /// A `<certificates>` without a usable `src`.
    public static func invalidCertificates(line: Int, _ problem: String) -> NSCConfigError {
        NSCConfigError(code: .invalidCertificates, line: line, reason: "<certificates> \(problem)",
                       fix: "give src=\"system\", src=\"user\" or src=\"@raw/NAME\" (a certificate in res/raw)")
    }

    /// A manifest attribute that is not what Android reads there.
    public static func invalidManifest(line: Int, _ problem: String, fix: String) -> NSCConfigError {
        NSCConfigError(code: .invalidManifest, line: line, reason: problem, fix: fix)
    }
}

extension ErrorCode where Owner == NSCConfigError {
    /// The file is not well-formed XML.
    public static let notXML = ErrorCode("notXML")
    /// The root element is not `<network-security-config>` (or `<manifest>`).
    public static let wrongRoot = ErrorCode("wrongRoot")
    /// An element given twice where Android allows one.
    public static let duplicateElement = ErrorCode("duplicateElement")
    /// An element where Android does not allow it.
    public static let elementNotAllowed = ErrorCode("elementNotAllowed")
    /// A `<domain-config>` without a `<domain>`.
    public static let noDomain = ErrorCode("noDomain")
    /// A `<domain>` without a name, or with elements inside.
    public static let invalidDomain = ErrorCode("invalidDomain")
    /// A domain named twice in the file.
    public static let duplicateDomain = ErrorCode("duplicateDomain")
    /// A `<pin>` with an unsupported digest, no digest, bad base64 or a wrong length.
    public static let invalidPin = ErrorCode("invalidPin")
    /// A `<pin-set expiration>` that is not `yyyy-MM-dd`.
    public static let invalidExpiration = ErrorCode("invalidExpiration")
    /// A `<certificates>` without `src`, or with one Android does not know.
    public static let invalidCertificates = ErrorCode("invalidCertificates")
    /// A manifest value Android does not read as given.
    public static let invalidManifest = ErrorCode("invalidManifest")
}
