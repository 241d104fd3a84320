import Foundation
import TLSFixturesPKI

/// Where to connect: `host` is what the certificate must name and what SNI carries; `connectAddress` (curl's
/// `--resolve`) overrides where the TCP connection actually goes.
public struct ProbeTarget: Sendable, Equatable, CustomStringConvertible {
    /// The name the certificate must match and SNI carries (a DNS name or an IP literal).
    public var host: String
    /// The TCP port.
    public var port: Int
    /// Where to connect instead of resolving `host` (an IP address or another name); nil resolves `host`.
    public var connectAddress: String?
    /// `https` (TLS, then `GET /`) or `http` (the request in cleartext, no TLS).
    public var scheme: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(host: String, port: Int, connectAddress: String? = nil, scheme: String = "https") {
        self.host = host; self.port = port; self.connectAddress = connectAddress; self.scheme = scheme
    }

    /// Parses `HOST:PORT`, `[::1]:PORT` or a URL (`https://host:port/…`, default port 443/80).
    public init(parsing text: String) throws {
        if text.contains("://") {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["https", "http"].contains(scheme) else {
                throw ProbeError.invalidTarget(text, "use https://HOST[:PORT]/ or http://…")
            }
            guard let host = url.host, !host.isEmpty else { throw ProbeError.invalidTarget(text, "the URL has no host") }
            self.init(host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: url.port ?? (scheme == "https" ? 443 : 80), scheme: scheme)
            return
        }
        let host: Substring, port: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(after: close)...].dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            throw ProbeError.invalidTarget(text, "use HOST:PORT or a URL")
        }
        guard !host.isEmpty, let number = Int(port), (1...65_535).contains(number) else {
            throw ProbeError.invalidTarget(text, "use HOST:PORT with a port from 1 to 65535")
        }
        self.init(host: String(host), port: number)
    }

    /// Applies curl-style `HOST:PORT:ADDRESS` entries that match this target.
    public mutating func apply(resolve entries: [String]) throws {
        for entry in entries {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let port = Int(parts[1]), !parts[0].isEmpty, !parts[2].isEmpty else {
                throw ProbeError.invalidTarget(entry, "a resolve entry is curl-style HOST:PORT:ADDRESS, e.g. ats-compliant.fixtures.test:9801:127.0.0.1")
            }
            if parts[0].lowercased() == host.lowercased() && port == self.port {
                connectAddress = parts[2].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            }
        }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    /// True when `host` is an IPv4 or IPv6 literal: then no SNI is sent.
    public var isIPLiteral: Bool { IPAddress.parse(host) != nil }
}
