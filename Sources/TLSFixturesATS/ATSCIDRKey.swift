import Foundation
import TLSFixturesWire

/// How Apple's ATS parser reads an `NSExceptionDomains` key that holds a "/": as a network, or as nothing.
///
/// The rules are those of `cidr_string_to_subnet_and_mask` in Security/protocol/SecProtocolConfiguration.m
/// (apple-oss-distributions/Security, Security-61901), described here and reimplemented, not copied:
/// - only digits, `a`–`f`, `A`–`F`, `.`, `:` and one `/` may appear; a dot may not come first, nor after a hex digit, a
///   colon or the slash; a hex digit or colon may not follow a dot or the slash; one `::` at most; the slash may not
///   come first, nor straight after a dot, nor after a single colon;
/// - the prefix is read by `strtol` with base 0, so `/010` is octal 8 and `/08` is 0; an empty prefix is refused;
/// - without hex digits and colons the key is IPv4: prefix ≤ 32, at most 13 characters before the slash (Apple copies
///   them into a 15-byte buffer), and a network with fewer than three dots is padded with `.0` (`10/8` is 10.0.0.0/8);
///   the result must pass Apple's `inet_pton` (four decimal parts of at most 255, leading zeros allowed);
/// - otherwise it is IPv6: prefix ≤ 128, at most 37 characters before the slash (a 39-byte buffer), and a network
///   with fewer than seven colons and no `::` gets `::` appended (`2001:db8/32` is 2001:db8::/32, `fe80/10` is
///   fe80::/10), which then needs room for two more characters; the result must pass `inet_pton`.
///
/// A key Apple refuses still makes an entry, in the CIDR table, that never matches: not even a host spelled like the
/// key (`set_ats_overrides` files every key holding a "/" there, valid or not).
public enum ATSCIDRKey {
    /// A key read as a network, and what the reading changed from what was written.
    public struct Reading: Sendable, Equatable {
        /// The network the key names.
        public let network: ATSIPNetwork
        /// What Apple's parser did that the writer may not expect (padding, an octal prefix), one sentence each.
        public let adjustments: [String]
    }

    /// Why a key with a "/" names no network: Apple's parser refused it, so its entry never matches.
    public struct Refusal: CodedError {
        /// Its kinds: one, a key Apple's parser refuses.
        public typealias Code = ErrorCode<Refusal>
        /// `refusedKey`.
        public let code = Code("refusedKey")
        /// One sentence: what in the key Apple's parser refuses.
        public let reason: String
        /// None: the key is the user's to write differently, as the reason says.
        public var fix: String? { nil }

        /// A refusal for `reason`.
        public init(reason: String) { self.reason = reason }
    }

    /// Apple's buffers for the part before the slash (`MAXIMUM_V4_ADDRESS_LENGTH`, `MAXIMUM_V6_ADDRESS_LENGTH`).
    static let ipv4Buffer = 15
    static let ipv6Buffer = 39

    /// Reads `key` as Apple's parser does.
    public static func read(_ key: String) -> Result<Reading, Refusal> {
        // Apple reads the key's UTF-8 C string, which ends at the first NUL.
        let text = Array(key.utf8.prefix { $0 != 0 })
        var dots = 0
        var colons = 0
        var hexDigits = 0
        var doubleColon = false
        var slash: Int?
        func refuse(_ reason: String) -> Result<Reading, Refusal> { .failure(Refusal(reason: reason)) }
        for (index, byte) in text.enumerated() {
            let afterSlash = slash != nil
            let previous = index > 0 ? text[index - 1] : nil
            switch byte {
            case UInt8(ascii: "."):
                if index == 0 { return refuse("it starts with a dot") }
                if afterSlash { return refuse("the prefix after the slash must be digits only") }
                if hexDigits > 0 || colons > 0 {
                    return refuse("a dot after a hex digit or a colon (an IPv6 address with an IPv4 tail is not read)")
                }
                dots += 1
            case UInt8(ascii: ":"):
                if afterSlash { return refuse("the prefix after the slash must be digits only") }
                if dots > 0 { return refuse("a colon after a dot") }
                colons += 1
                if previous == UInt8(ascii: ":") {
                    if doubleColon { return refuse("more than one \"::\"") }
                    doubleColon = true
                }
            case UInt8(ascii: "/"):
                if afterSlash { return refuse("more than one slash") }
                if index == 0 { return refuse("nothing before the slash") }
                if dots > 0, previous == UInt8(ascii: ".") { return refuse("the address ends with a dot") }
                if colons > 0, index > 2, previous == UInt8(ascii: ":"), text[index - 2] != UInt8(ascii: ":") {
                    return refuse("the address ends with a single colon")
                }
                slash = index
            case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
                if afterSlash { return refuse("the prefix after the slash must be digits only") }
                if dots > 0 { return refuse("a hex digit in a dotted (IPv4) address") }
                hexDigits += 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                break
            default:
                let scalar = Unicode.Scalar(byte)
                let shown = scalar.isASCII ? "\"\(Character(scalar))\"" : "a non-ASCII character"
                return refuse("\(shown) is not allowed (only digits, a–f, \".\", \":\" and one \"/\")")
            }
        }
        guard let slash else { return refuse("no \"/\"") }
        let prefixText = text[(slash + 1)...]
        guard let bits = prefixValue(prefixText) else { return refuse("nothing after the slash") }
        var adjustments: [String] = []
        if prefixText.count > 1, prefixText.first == UInt8(ascii: "0") {
            let written = String(decoding: prefixText, as: UTF8.self)
            adjustments.append("the prefix /\(written) starts with 0, so Apple's parser reads it as an octal number: "
                               + "/\(bits)")
        }
        let address = Array(text[..<slash])
        let written = String(decoding: address, as: UTF8.self)
        if hexDigits == 0, colons == 0 {
            guard bits <= 32 else { return refuse("an IPv4 prefix longer than 32 (/\(bits))") }
            guard address.count + 1 < ipv4Buffer else {
                return refuse("\(address.count) characters before the slash; Apple's parser takes at most "
                              + "\(ipv4Buffer - 2) for an IPv4 network")
            }
            var padded = address
            var paddedDots = dots
            while paddedDots < 3, padded.count + 2 < ipv4Buffer {
                padded += [UInt8(ascii: "."), UInt8(ascii: "0")]
                paddedDots += 1
            }
            guard let bytes = inetPton4(padded) else {
                let shown = String(decoding: padded, as: UTF8.self)
                return refuse("\"\(shown)\" is not an IPv4 address (four decimal parts, each at most 255)")
            }
            let network = ATSIPNetwork(address: ATSIPAddress(bytes: bytes), prefixLength: bits)
            if paddedDots != dots {
                let counted = "\(dots) dot\(dots == 1 ? "" : "s")"
                adjustments.append("\"\(written)\" has \(counted), so Apple's parser pads it with .0 to "
                                   + "\(network.address)")
            }
            return .success(Reading(network: network, adjustments: adjustments))
        }
        guard bits <= 128 else { return refuse("an IPv6 prefix longer than 128 (/\(bits))") }
        guard address.count + 1 < ipv6Buffer else {
            return refuse("\(address.count) characters before the slash; Apple's parser takes at most "
                          + "\(ipv6Buffer - 2) for an IPv6 network")
        }
        var completed = address
        if !doubleColon, colons < 7 {
            guard address.count + 3 < ipv6Buffer else {
                return refuse("\(address.count) characters before the slash leave no room for the \"::\" Apple's "
                              + "parser appends to a network written without one")
            }
            completed += [UInt8(ascii: ":"), UInt8(ascii: ":")]
        }
        guard let bytes = inetPton6(completed) else {
            return refuse("\"\(String(decoding: completed, as: UTF8.self))\" is not an IPv6 address")
        }
        if completed != address {
            adjustments.append("\"\(written)\" has no \"::\" and fewer than eight groups, so Apple's parser "
                               + "appends \"::\"")
        }
        return .success(Reading(network: ATSIPNetwork(address: ATSIPAddress(bytes: bytes), prefixLength: bits),
                                adjustments: adjustments))
    }

    /// `strtol(text, NULL, 0)` on a run of digits (the only characters the scan lets through after the slash): a
    /// leading 0 means octal, read up to the first 8 or 9; nil when no digit is there (Apple's libc sets EINVAL).
    /// Saturates far above 128, where every prefix is refused anyway.
    static func prefixValue(_ digits: ArraySlice<UInt8>) -> Int? {
        guard let first = digits.first else { return nil }
        let base = first == UInt8(ascii: "0") ? 8 : 10
        var value = 0
        for digit in digits {
            let number = Int(digit) - Int(UInt8(ascii: "0"))
            guard number < base else { break }
            value = min(value * base + number, 1 << 20)
        }
        return value
    }

    /// Apple's libc `inet_pton(AF_INET, …)` (Libc net/inet_pton.c, `inet_pton4`): four decimal parts separated by
    /// single dots, each at most 255; leading zeros are allowed and read as decimal.
    static func inetPton4(_ text: [UInt8]) -> [UInt8]? {
        var parts: [UInt8] = []
        var current = 0
        var sawDigit = false
        for byte in text {
            if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                current = current * 10 + Int(byte - UInt8(ascii: "0"))
                guard current <= 255 else { return nil }
                if !sawDigit {
                    guard parts.count < 4 else { return nil }
                    sawDigit = true
                }
            } else if byte == UInt8(ascii: "."), sawDigit {
                guard parts.count < 3 else { return nil }
                parts.append(UInt8(current))
                current = 0
                sawDigit = false
            } else {
                return nil
            }
        }
        guard sawDigit, parts.count == 3 else { return nil }
        return parts + [UInt8(current)]
    }

    /// Apple's libc `inet_pton(AF_INET6, …)` (Libc net/inet_pton.c, `inet_pton6`) for the text the scan lets through
    /// (hex digits and colons): a group may have any number of digits while its value fits 16 bits, one `::` stands for
    /// at least one zero group, and a single colon may neither start nor end the address.
    static func inetPton6(_ text: [UInt8]) -> [UInt8]? {
        var rest = text[...]
        if rest.first == UInt8(ascii: ":") {
            guard rest.dropFirst().first == UInt8(ascii: ":") else { return nil }
            rest = rest.dropFirst()
        }
        var head: [UInt8] = []
        var tail: [UInt8]?
        var value = 0
        var sawDigit = false
        func hexValue(_ byte: UInt8) -> Int? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A")) + 10
            default: return nil
            }
        }
        func append(_ group: Int) -> Bool {
            guard head.count + (tail?.count ?? 0) + 2 <= 16 else { return false }
            let pair = [UInt8(group >> 8), UInt8(group & 0xff)]
            if tail != nil { tail! += pair } else { head += pair }
            return true
        }
        var index = rest.startIndex
        while index < rest.endIndex {
            let byte = rest[index]
            index += 1
            if let digit = hexValue(byte) {
                value = value << 4 | digit
                guard value <= 0xffff else { return nil }
                sawDigit = true
                continue
            }
            guard byte == UInt8(ascii: ":") else { return nil }
            if !sawDigit {
                guard tail == nil else { return nil }
                tail = []
                continue
            }
            guard index < rest.endIndex, append(value) else { return nil }
            value = 0
            sawDigit = false
        }
        if sawDigit, !append(value) { return nil }
        guard let tail else { return head.count == 16 ? head : nil }
        // "::" must stand for at least one group.
        guard head.count + tail.count < 16 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
