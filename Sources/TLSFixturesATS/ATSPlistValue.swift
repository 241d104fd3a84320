import Foundation
#if canImport(Darwin)
import CoreFoundation
#endif

/// A property-list value as a Sendable, Equatable Swift enum.
///
/// Why not `Any`: ATS dictionaries travel between tasks (diagnostics run async) and end up in
/// verdicts and reports that must be `Sendable` and comparable in tests. Why keep the plist's own
/// types (rather than decoding straight to Swift properties): ATS ignores a key whose value has the
/// wrong type (`"YES"` instead of `<true/>`), so the model has to see the type the plist really had.
public enum ATSPlistValue: Sendable, Equatable, Hashable {
    case bool(Bool)
    case integer(Int)
    case real(Double)
    case string(String)
    case date(Date)
    case data(Data)
    case array([ATSPlistValue])
    case dictionary([String: ATSPlistValue])

    /// Converts what `PropertyListSerialization` (or a hand-written `[String: Any]`) produced.
    /// Returns `nil` for values a property list cannot hold.
    public init?(foundation value: Any) {
        if Self.isBoolean(value), let flag = value as? Bool {
            self = .bool(flag)
        } else if let text = value as? String {
            self = .string(text)
        } else if let number = value as? NSNumber {
            // Integers and reals both arrive as NSNumber; the ObjC type code tells them apart.
            let code = String(cString: number.objCType)
            if "cCsSiIlLqQ".contains(code) {
                self = .integer(number.intValue)
            } else {
                self = .real(number.doubleValue)
            }
        } else if let date = value as? Date {
            self = .date(date)
        } else if let data = value as? Data {
            self = .data(data)
        } else if let dictionary = value as? [String: Any] {
            var converted: [String: ATSPlistValue] = [:]
            for (key, element) in dictionary {
                guard let element = ATSPlistValue(foundation: element) else { return nil }
                converted[key] = element
            }
            self = .dictionary(converted)
        } else if let array = value as? [Any] {
            var converted: [ATSPlistValue] = []
            for element in array {
                guard let element = ATSPlistValue(foundation: element) else { return nil }
                converted.append(element)
            }
            self = .array(converted)
        } else {
            return nil
        }
    }

    /// Whether a Foundation value is a plist boolean rather than a number.
    ///
    /// This matters because Apple reads a number by comparing it with YES (`<integer>1</integer>` is YES, 2 is NO),
    /// while Swift casts any `NSNumber` to `Bool` on both platforms, so `as? Bool` alone cannot be trusted.
    static func isBoolean(_ value: Any) -> Bool {
        if type(of: value) == Bool.self { return true }
        guard let number = value as? NSNumber else { return false }
        #if canImport(Darwin)
        // Darwin's plist parser returns the CFBoolean singletons for <true/> and <false/>.
        return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation gives Swift `Bool`s (caught above) or NSNumber(value: Bool), type "c".
        return String(cString: number.objCType) == "c"
        #endif
    }

    /// The Foundation object `PropertyListSerialization` can write.
    public var foundationObject: Any {
        switch self {
        case .bool(let value): return value
        case .integer(let value): return value
        case .real(let value): return value
        case .string(let value): return value
        case .date(let value): return value
        case .data(let value): return value
        case .array(let values): return values.map(\.foundationObject)
        case .dictionary(let values): return values.mapValues(\.foundationObject)
        }
    }

    /// The plist type's name as it appears in XML (`string`, `true`/`false` are both `boolean`),
    /// used in warnings such as "expected a boolean, found a string".
    public var typeName: String {
        switch self {
        case .bool: return "boolean"
        case .integer: return "integer"
        case .real: return "real"
        case .string: return "string"
        case .date: return "date"
        case .data: return "data"
        case .array: return "array"
        case .dictionary: return "dictionary"
        }
    }

    /// The value when it is a boolean; nil for any other type (the parser reads numbers by comparing them with YES and
    /// ignores other types).
    public var boolValue: Bool? { if case .bool(let value) = self { return value } else { return nil } }
    /// The value when it is a string; nil otherwise.
    public var stringValue: String? { if case .string(let value) = self { return value } else { return nil } }
    /// The elements when it is an array; nil otherwise.
    public var arrayValue: [ATSPlistValue]? { if case .array(let value) = self { return value } else { return nil } }
    /// The entries when it is a dictionary; nil otherwise.
    public var dictionaryValue: [String: ATSPlistValue]? {
        if case .dictionary(let value) = self { return value } else { return nil }
    }
}

// Literals, so tests and callers can write ATS dictionaries the way they look in Xcode.
extension ATSPlistValue: ExpressibleByBooleanLiteral, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(arrayLiteral elements: ATSPlistValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, ATSPlistValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// JSON as the obvious mapping (booleans, numbers, strings, arrays, objects) so reports read naturally;
/// dates become ISO 8601 strings and data base64 strings, which is lossy but only for keys ATS never uses.
extension ATSPlistValue: Codable {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .real(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ATSPlistValue].self) {
            self = .array(value)
        } else {
            self = .dictionary(try container.decode([String: ATSPlistValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .real(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .date(let value): try container.encode(ISO8601DateFormatter().string(from: value))
        case .data(let value): try container.encode(value.base64EncodedString())
        case .array(let value): try container.encode(value)
        case .dictionary(let value): try container.encode(value)
        }
    }
}

/// Renders ATS dictionaries for people: plist XML to paste into Info.plist, and the
/// `NSDictionary`-description style nscurl prints in verbose mode.
public enum ATSPlistRendering {
    /// `["NSAppTransportSecurity": ats]` as XML plist text, the form Xcode's "Open As ▸ Source Code" shows.
    /// Keys come out sorted (CoreFoundation's writer sorts them), so the text is deterministic.
    public static func infoPlistXML(ats: [String: ATSPlistValue]) -> String {
        xml(["NSAppTransportSecurity": .dictionary(ats)])
    }

    /// Any dictionary as XML plist text.
    public static func xml(_ dictionary: [String: ATSPlistValue]) -> String {
        let object = ATSPlistValue.dictionary(dictionary).foundationObject
        do {
            let data = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
            return String(decoding: data, as: UTF8.self)
        } catch {
            // Only reachable if a non-plist value slipped in, which ATSPlistValue cannot hold.
            preconditionFailure("PropertyListSerialization refused an ATSPlistValue: \(error)")
        }
    }

    /// The `{ key = value; }` text nscurl prints after "ATS Dictionary:" in verbose mode: NSDictionary's own
    /// description, with sorted keys. A nested collection opens on its key's line after the indentation of its own
    /// level (`NSExceptionDomains =     {`), its entries one level deeper, as in real nscurl transcripts.
    public static func nsDictionaryDescription(_ dictionary: [String: ATSPlistValue]) -> String {
        describe(dictionary, level: 0)
    }

    /// The same text under its earlier name.
    public static func openStep(_ dictionary: [String: ATSPlistValue]) -> String {
        nsDictionaryDescription(dictionary)
    }

    private static func describe(_ dictionary: [String: ATSPlistValue], level: Int) -> String {
        let pad = String(repeating: "    ", count: level)
        var lines = ["\(pad){"]
        for key in dictionary.keys.sorted() {
            lines.append("\(pad)    \(quoted(key)) = \(describe(dictionary[key]!, level: level + 1));")
        }
        lines.append("\(pad)}")
        return lines.joined(separator: "\n")
    }

    private static func describe(_ value: ATSPlistValue, level: Int) -> String {
        switch value {
        case .bool(let flag): return flag ? "true" : "false"
        case .integer(let number): return String(number)
        case .real(let number): return String(number)
        case .string(let text): return quoted(text)
        case .date(let date): return quoted(ISO8601DateFormatter().string(from: date))
        case .data(let data): return "<\(data.map { String(format: "%02x", $0) }.joined())>"
        case .array(let values):
            let pad = String(repeating: "    ", count: level)
            var lines = ["\(pad)("]
            for (index, element) in values.enumerated() {
                lines.append("\(pad)    \(describe(element, level: level + 1))\(index < values.count - 1 ? "," : "")")
            }
            lines.append("\(pad))")
            return lines.joined(separator: "\n")
        case .dictionary(let values): return describe(values, level: level)
        }
    }

    /// NSDictionary's description quotes anything that is not a plain identifier (domains contain dots).
    private static func quoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
        return plain ? text : "\"\(text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))\""
    }
}
