import Foundation
import TLSFixturesFleet
import TLSFixturesWire

/// What the runner's proxy may reach: a fixture this runner serves, on its own port, by one of its own names
/// (`ServedFixture.names`: `NAME.fixtures.test`, `NAME.DOMAIN` for each `serve --domain`), and nothing else. Like a DNS
/// record per fixture name pointing at loopback, with a firewall that lets each name through to its fixture's port
/// only: never an open proxy, and a mistyped port is a 403 naming the fixture there rather than a silent tunnel to
/// another scenario.
///
/// `localhost` and IP addresses are refused as well: ATS does not apply to them (README, "Testing ATS: the localhost
/// trap"), so a test that reached a fixture that way through the proxy would pass whatever the server does; they
/// reach the fixtures directly, without the proxy. The README's table of these rules ("The proxy's rules") is what
/// `ProxyPolicyTests` runs.
struct ProxyPolicy: Sendable {
    let fixtures: any FixtureLookup
    /// `fixtures.test` first, then the `--domain`s.
    var domains: [String] { fixtures.fixtureDomains }

    /// The longest DNS name, and label, in octets (RFC 1035 §2.3.4; 253 written without the root's trailing dot).
    static let maximumNameLength = 253
    static let maximumLabelLength = 63

    struct Refusal: Error, Sendable, Equatable {
        /// 400 for a request the proxy cannot parse, 403 for a destination it will not reach.
        var status: Int
        var reason: String
    }

    /// The fixture `authority` (`HOST:PORT`, `[V6]:PORT`) names, or why not.
    func target(authority: String) -> Result<ServedFixture, Refusal> {
        guard let (host, port) = Self.split(authority) else {
            let hint = authority.filter { $0 == ":" }.count > 1 && !authority.hasPrefix("[")
                ? " (an IPv6 address goes in brackets: [::1]:PORT)" : ""
            return .failure(Refusal(status: 400, reason: "\"\(Self.shown(authority))\" is not HOST:PORT\(hint)"))
        }
        return target(host: host, port: port)
    }

    /// `host` as the request gave it (`[::1]` or `::1` for an IPv6 address).
    func target(host rawHost: String, port: Int) -> Result<ServedFixture, Refusal> {
        let host = Self.normalized(rawHost)
        let served = fixtures.servedFixture(onPort: port)
        let asked = "\"\(Self.shown(rawHost))\""
        if Self.isLoopbackOrAddress(host) {
            let example = served.map { "\($0.names[0]):\(port)" } ?? "NAME.\(domains[0]):PORT"
            return .failure(
                Refusal(
                    status: 403,
                    reason: "the proxy reaches fixtures by name only, such as \(example): ATS does not apply to "
                        + "\(asked), so a test through the proxy would pass whatever the server does; "
                        + "\(served?.isCleartext == true ? "http" : "https")://localhost:PORT/ reaches a fixture directly, "
                        + "without the proxy"))
        }
        guard Self.isDNSName(host), domains.contains(where: { host.hasSuffix("." + $0) }) else {
            let names = domains.map { "NAME.\($0)" }.joined(separator: ", ")
            let there = served.map { "; port \(port) is \($0.names[0])" } ?? ""
            return .failure(
                Refusal(
                    status: 403,
                    reason: "this proxy reaches only this runner's fixtures, as \(names) on the fixture's port; "
                        + "\(asked) is none of them\(there)"))
        }
        guard let served else {
            return .failure(
                Refusal(
                    status: 403,
                    reason: "no fixture of this runner listens on port \(port), so the proxy will not connect there "
                        + "(/scenarios.json and GET /api/fixtures list the fixtures' ports)"))
        }
        guard served.names.contains(host) else {
            return .failure(
                Refusal(
                    status: 403,
                    reason: "port \(port) is the \(served.scenario) fixture, which answers as "
                        + "\(served.names.map { "\($0):\(port)" }.joined(separator: " or ")), not as \(asked): "
                        + "the proxy tunnels a name to its own fixture's port only (each scenario has a port of its "
                        + "own; /scenarios.json lists them)"))
        }
        return .success(served)
    }

    /// Lowercased (DNS names are case-insensitive, RFC 4343), without one trailing dot (the root: `name.` is `name`).
    static func normalized(_ host: String) -> String {
        let lowered = host.lowercased()
        return lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }

    /// A name every client resolves to this machine, or an IP address (any: the proxy reaches names only).
    static func isLoopbackOrAddress(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") { return true }  // RFC 6761 §6.3
        if host.contains(":") || host.hasPrefix("[") { return true }  // IPv6, bracketed or not
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count <= 4 && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy(Self.isDigit) }
    }

    /// At most 253 octets, in labels of 1–63 letters, digits, hyphens and underscores (scenario names may hold `_`).
    static func isDNSName(_ host: String) -> Bool {
        guard host.utf8.count <= maximumNameLength else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= maximumLabelLength
                && label.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || isDigit(byte)
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                }
        }
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// What the client sent, for a refusal: control characters escaped, and cut short (a name may be megabytes).
    static func shown(_ text: String) -> String { text.quotedForMessage() }

    /// `host:port` or `[v6]:port`; an unbracketed IPv6 address (`::1:9801`) is not an authority (RFC 3986 §3.2.2).
    static func split(_ authority: String) -> (String, Int)? {
        let host: Substring
        let portText: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]"), authority[authority.index(after: close)...].hasPrefix(":")
            else { return nil }
            host = authority[authority.startIndex...close]
            portText = authority[authority.index(close, offsetBy: 2)...]
        } else {
            guard let colon = authority.lastIndex(of: ":") else { return nil }
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, host != "[]", !portText.isEmpty, portText.utf8.allSatisfy(isDigit),
            let port = Int(portText), (1...65_535).contains(port)
        else { return nil }
        return (String(host), port)
    }
}
