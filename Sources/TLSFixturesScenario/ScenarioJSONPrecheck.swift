/// What Foundation's JSON decoding does not report about a scenario file, found before it runs, each as one line naming
/// the key: a duplicate key (JSONDecoder silently keeps one), a number that is not a whole number or does not fit
/// (`"port": 9900.5` came out as "The given data was not valid JSON."), a control character in a string (an escape
/// sequence in a summary reached the terminal raw), and a top level that is not an object.
///
/// The one strict reading of JSON a person sends: scenario files, and the control API's request bodies, which carry
/// scenario files inline (so `{"scenario": {"name": "a", "name": "b"}}` is refused as the same file would be).
///
/// A small recursive-descent reader over the bytes: it builds nothing, stops at the first finding, nests at most
/// `maximumDepth` deep, and reports nothing for text that is not JSON at all, which the decoder then reports with
/// its line and column. Every byte sequence is safe to give it (the scenario fuzzer feeds it).
package struct ScenarioJSONPrecheck {
    /// A scenario file nests four levels at most (scenario → certificate → validity → …).
    static let maximumDepth = 32

    /// One problem, where it is.
    package struct Finding: Sendable, Equatable {
        /// The keys down to it (`["tls"]`, `["certificate", "hosts", "[2]"]`); empty for the whole document.
        package var path: [String]
        /// What is wrong there, without the place.
        package var problem: String
        /// For a repeated key, that key: the field at fault is `path` plus it.
        package var key: String?

        /// `at KEY.PATH: problem`, as scenario files' errors read.
        package var text: String { ScenarioJSONPrecheck.location(path) + problem }

        /// The field at fault, dotted as the control API names fields (`scenario.name`, `ttl`); nil for the whole
        /// document.
        package var field: String? {
            let keys = path + (key.map { [$0] } ?? [])
            return keys.isEmpty ? nil : keys.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
    }

    /// The first problem found, as `at KEY.PATH: problem` (or a whole-file problem), or nil.
    package static func problem(in bytes: [UInt8]) -> String? {
        finding(in: bytes)?.text
    }

    /// The first problem found, or nil. `document` names the whole in a top-level problem ("a scenario file holds one
    /// JSON object").
    package static func finding(in bytes: [UInt8], document: String = "a scenario file") -> Finding? {
        var reader = ScenarioJSONPrecheck(bytes: bytes)
        do {
            reader.skipWhitespace()
            guard let first = reader.peek() else { return nil }
            if first != UInt8(ascii: "{") {
                guard let kind = reader.kindOfValue(first) else { return nil }
                return Finding(path: [], problem: "\(document) holds one JSON object ({…}), not \(kind)")
            }
            try reader.value(path: [], depth: 0)
            return nil
        } catch let found as Found {
            return found.finding
        } catch {
            return nil   // Not JSON: the decoder says where.
        }
    }

    /// How the reader stops at a finding (`Finding` itself is a value, not an error a caller could catch).
    private struct Found: Error { let finding: Finding }
    private struct NotJSON: Error {}

    private static func found(_ path: [String], _ problem: String, key: String? = nil) -> Found {
        Found(finding: Finding(path: path, problem: problem, key: key))
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private func kindOfValue(_ byte: UInt8) -> String? {
        switch byte {
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "true or false"
        case UInt8(ascii: "n"): return "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return "a number"
        default: return nil
        }
    }

    static func location(_ path: [String]) -> String {
        path.isEmpty ? "" : "at \(path.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")): "
    }

    private mutating func value(path: [String], depth: Int) throws {
        guard depth < Self.maximumDepth else {
            throw Self.found(path, "nested more than \(Self.maximumDepth) levels deep; a scenario file needs four")
        }
        skipWhitespace()
        guard let byte = peek() else { throw NotJSON() }
        switch byte {
        case UInt8(ascii: "{"): try object(path: path, depth: depth)
        case UInt8(ascii: "["): try array(path: path, depth: depth)
        case UInt8(ascii: "\""): _ = try string(path: path, isKey: false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number(path: path)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: throw NotJSON()
        }
    }

    private mutating func object(path: [String], depth: Int) throws {
        index += 1   // {
        var seen = Set<String>()
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { index += 1; return }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw NotJSON() }
            let key = try string(path: path, isKey: true)
            guard seen.insert(key).inserted else {
                throw Self.found(path, "the key \"\(key)\" appears twice; keep one", key: key)
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw NotJSON() }
            index += 1
            try value(path: path + [key], depth: depth + 1)
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return
            default: throw NotJSON()
            }
        }
    }

    private mutating func array(path: [String], depth: Int) throws {
        index += 1   // [
        skipWhitespace()
        if peek() == UInt8(ascii: "]") { index += 1; return }
        var element = 0
        while true {
            try value(path: path + ["[\(element)]"], depth: depth + 1)
            element += 1
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return
            default: throw NotJSON()
            }
        }
    }

    /// A string, unescaped; in a value, a control character (raw or escaped) is a finding at `path`. Keys are left to
    /// the decoder: one with a control character is an unknown key, reported with the character escaped.
    private mutating func string(path: [String], isKey: Bool) throws -> String {
        index += 1   // "
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flush() {
            scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
        }
        while true {
            guard let byte = peek() else { throw NotJSON() }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                let text = String(scalars)
                if !isKey, let control = text.unicodeScalars.first(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
                    let hex = String(control.value, radix: 16, uppercase: true)
                    let code = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
                    throw Self.found(path, "control character U+\(code) "
                                  + "in a string; scenario text is printed to terminals, so write it without escape sequences")
                }
                return text
            case UInt8(ascii: "\\"):
                guard let escaped = peek() else { throw NotJSON() }
                index += 1
                flush()
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escaped))
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                        throw NotJSON()
                    }
                    index += 4
                    // A lone surrogate half stands for nothing printable; U+FFFD keeps the check simple.
                    scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
                default: throw NotJSON()
                }
            default:
                utf8.append(byte)
            }
        }
    }

    /// Every number in a scenario file is a whole number that fits an `Int`.
    private mutating func number(path: [String]) throws {
        let start = index
        while let byte = peek(), byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
            index += 1
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if Int(text) != nil { return }
        guard let value = Double(text) else { throw NotJSON() }
        let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
        if value != value.rounded() {
            throw Self.found(path, "\(shown) is not a whole number")
        }
        if !(Double(Int.min)..<Double(Int.max)).contains(value) {
            throw Self.found(path, "\(shown) is too large a number")
        }
    }

    private mutating func literal(_ word: String) throws {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else { throw NotJSON() }
        index += expected.count
    }
}
