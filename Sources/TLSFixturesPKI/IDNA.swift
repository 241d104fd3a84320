import Foundation

/// Internationalised domain names as certificates carry them: each label with characters outside ASCII becomes an
/// A-label, `xn--` and its Punycode (RFC 3492, RFC 5891 §4.4), after the mapping browsers apply first (UTS #46 in its
/// common part: lower case, Unicode normalisation form C, the ideographic full stops read as dots).
package enum IDNA {
    /// `name` with every non-ASCII label as an A-label; an ASCII name is returned as it is. Throws
    /// `PKIError.invalidHost` naming `given` (what the user typed: a host, or an email address around the name).
    package static func toASCII(_ name: String, given: String? = nil) throws(PKIError) -> String {
        do { return try encode(name) } catch { throw PKIError.invalidHost(given ?? name, error.problem) }
    }

    /// Why a name cannot be written in ASCII.
    struct Failure: Error { let problem: String }

    private static func encode(_ name: String) throws(Failure) -> String {
        guard !name.unicodeScalars.allSatisfy(\.isASCII) else { return name }
        let mapped = name.precomposedStringWithCanonicalMapping.lowercased()
            .replacingOccurrences(of: "\u{3002}", with: ".").replacingOccurrences(of: "\u{FF0E}", with: ".")
            .replacingOccurrences(of: "\u{FF61}", with: ".")
        let labels = mapped.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return try labels.map { (label) throws(Failure) -> String in
            if label.unicodeScalars.allSatisfy(\.isASCII) { return label }
            if label.unicodeScalars.contains(where: { $0.properties.generalCategory == .spaceSeparator
                                                      || $0.properties.generalCategory == .control }) {
                throw Failure(problem: "a DNS name has no spaces or control characters")
            }
            return "xn--" + (try punycode(label))
        }.joined(separator: ".")
    }

    // RFC 3492 §5 parameters.
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 128

    /// RFC 3492 §6.3, the encoding procedure.
    static func punycode(_ label: String) throws(Failure) -> String {
        let input = label.unicodeScalars.map { Int($0.value) }
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias
        while handled < input.count {
            guard let m = input.filter({ $0 >= n }).min() else { break }
            let (product, overflow) = (m - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow else { throw Failure(problem: "the name is too long to encode") }
            delta += product
            n = m
            for c in input {
                if c < n { delta += 1 }
                if c == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? value + 97 : value + 22)))   // a–z, then 0–9
    }

    /// RFC 3492 §6.1.
    private static func adapt(_ delta: Int, _ count: Int, _ first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
