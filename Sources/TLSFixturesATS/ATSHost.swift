import Foundation

/// An IPv4 or IPv6 address as bytes, parsed without the C library so the model stays Foundation-only.
///
/// Why bytes rather than text: `::1`, `0:0:0:0:0:0:0:1` and `0::1` are the same address, and CIDR
/// exception keys (iOS 17) and IP SANs have to be compared by value.
public struct ATSIPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// True for a 4-byte (IPv4) address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// Parses IPv4 or IPv6 text (`127.0.0.1`, `::1`, `[::1]`, `fe80::1%en0`: brackets and a zone index are dropped);
    /// nil for anything else.
    public init?(_ text: String) {
        var t = text
        if t.hasPrefix("["), t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        // A zone index (`fe80::1%en0`) names an interface, not part of the address.
        if let percent = t.firstIndex(of: "%") { t = String(t[..<percent]) }
        if let v4 = Self.parseIPv4(t) {
            bytes = v4
        } else if let v6 = Self.parseIPv6(t) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// The address whose bytes these are: 4 for IPv4, 16 for IPv6.
    init(bytes: [UInt8]) {
        precondition(bytes.count == 4 || bytes.count == 16, "an IP address has 4 or 16 bytes")
        self.bytes = bytes
    }

    /// Strict dotted quad: exactly four decimal parts 0–255 (no `127.1` shorthand, which URL hosts never carry).
    static func parseIPv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            out.append(value)
        }
        return out
    }

    static func parseIPv6(_ text: String) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            if part.isEmpty { return [] }
            var out: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(String(piece)) else { return nil }
                    out += v4
                } else {
                    guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16) else { return nil }
                    out += [UInt8(value >> 8), UInt8(value & 0xff)]
                }
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }

    /// Where an address lives, for the iOS 17 rule that only *external* addresses fall under ATS.
    public enum Scope: String, Sendable, Codable {
        /// 127.0.0.0/8, ::1.
        case loopback
        /// 169.254.0.0/16, fe80::/10.
        case linkLocal
        /// 10/8, 172.16/12, 192.168/16, fc00::/7 (unique local). "Local" only when the device reaches the address
        /// directly on its own network, which the model assumes (model rule private-ips-are-local, low confidence).
        case privateNetwork
        /// Everything else, carrier-grade NAT (100.64/10) included.
        case external
    }

    /// Where the address lives, which decides whether iOS 17 exempts it from ATS.
    public var scope: Scope {
        if isIPv4 { return Self.scope(ipv4: bytes) }
        if bytes[..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return .loopback }
        // IPv4-mapped (::ffff:a.b.c.d): the IPv4 address decides.
        if bytes[..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return Self.scope(ipv4: Array(bytes[12...]))
        }
        if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 { return .linkLocal }
        if bytes[0] & 0xfe == 0xfc { return .privateNetwork }
        return .external
    }

    private static func scope(ipv4 b: [UInt8]) -> Scope {
        switch (b[0], b[1]) {
        case (127, _): return .loopback
        case (169, 254): return .linkLocal
        case (10, _), (192, 168): return .privateNetwork
        case (172, 16...31): return .privateNetwork
        default: return .external
        }
    }

    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        // Full form without compression: unambiguous and good enough for messages.
        return stride(from: 0, to: 16, by: 2)
            .map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }
}

/// A CIDR block such as `10.0.0.0/8` or `fd00::/8`: an iOS 17 `NSExceptionDomains` key.
public struct ATSIPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The block's address as written (host bits are compared only up to the prefix).
    public let address: ATSIPAddress
    /// The number of leading bits that must match: 0–32 for IPv4, 0–128 for IPv6.
    public let prefixLength: Int

    /// Reads `ADDRESS/PREFIX` as Apple's ATS parser reads an exception key (`ATSCIDRKey`: `10/8` is 10.0.0.0/8, `/010`
    /// is octal); nil where Apple's parser refuses the text.
    public init?(_ text: String) {
        guard case .success(let reading) = ATSCIDRKey.read(text) else { return nil }
        self = reading.network
    }

    init(address: ATSIPAddress, prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    /// True when `ip` is of the same family and its first `prefixLength` bits equal the block's.
    public func contains(_ ip: ATSIPAddress) -> Bool {
        guard ip.bytes.count == address.bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(ip.bytes, address.bytes) {
            guard remaining > 0 else { return true }
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - bits))
            if a & mask != b & mask { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

/// The host of a URL as ATS classifies it. The class decides which exemptions and which kind of
/// exception key can apply, so it is computed once, up front.
public struct ATSHost: Sendable, Hashable, CustomStringConvertible {
    /// The classes of host ATS tells apart.
    public enum Kind: String, Sendable, Codable {
        /// A dotted DNS name such as `example.com` or `static-rsa.fixtures.test`.
        case qualified
        /// A name without a dot, such as `localhost`: exempt from ATS by default on iOS 10+.
        case unqualified
        /// A multicast-DNS name ending in `.local`: exempt from ATS by default on iOS 10+.
        case local
        /// An IPv4 or IPv6 literal: exempt on iOS 10–16; from iOS 17 exempt only when loopback or local.
        case ipLiteral
    }

    /// Lowercased, without brackets or a trailing dot: the form certificates and pinned-domain keys are compared with.
    public let name: String
    /// Lowercased, without brackets, a trailing dot kept: the form looked up in `NSExceptionDomains`, where
    /// `example.com.` and `example.com` are different keys (NSExceptionDomains page).
    public let exceptionLookupName: String
    /// Which class the host is in.
    public let kind: Kind
    /// The address, when the host is an IP literal.
    public let ip: ATSIPAddress?

    /// Classifies a URL's host as given (brackets, case and a trailing dot allowed).
    public init(_ rawHost: String) {
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        exceptionLookupName = host
        if host.hasSuffix("."), host.count > 1 { host.removeLast() }
        name = host
        if let ip = ATSIPAddress(host) {
            self.ip = ip
            kind = .ipLiteral
        } else {
            self.ip = nil
            if !host.contains(".") {
                kind = .unqualified
            } else if host.hasSuffix(".local") {
                kind = .local
            } else {
                kind = .qualified
            }
        }
    }

    /// The URL's host, or `nil` when it has none (`mailto:`, a relative URL).
    public init?(url: URL) {
        guard let host = url.host, !host.isEmpty else { return nil }
        self.init(host)
    }

    public var description: String { name }
}
