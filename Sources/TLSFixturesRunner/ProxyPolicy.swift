import Foundation
import TLSFixturesFleet
import TLSFixturesWire

/// What the runner's proxy may reach: only ports of fixtures this runner serves, named as a client would name them
/// (`NAME.fixtures.test`, `NAME.DOMAIN` for each `serve --domain`, `localhost`, a loopback address). Like a wildcard
/// DNS record for those names that points at loopback, with a firewall that lets through only fixture ports — never an
/// open proxy.
struct ProxyPolicy: Sendable {
    let fixtures: any FixtureLookup
    /// `fixtures.test` first, then the `--domain`s.
    var domains: [String] { fixtures.fixtureDomains }

    struct Refusal: Error, Sendable, Equatable {
        /// 400 for a request the proxy cannot parse, 403 for a destination it will not reach.
        var status: Int
        var reason: String
    }

    /// The fixture `authority` (`HOST:PORT`, `[V6]:PORT`) names, or why not.
    func target(authority: String) -> Result<ServedFixture, Refusal> {
        guard let (host, port) = Self.split(authority) else {
            return .failure(Refusal(status: 400, reason: "\"\(authority.escapingControlCharacters)\" is not HOST:PORT"))
        }
        return target(host: host, port: port)
    }

    func target(host rawHost: String, port: Int) -> Result<ServedFixture, Refusal> {
        let host = rawHost.lowercased()
        guard isFixtureHost(host) else {
            let names = domains.map { "NAME.\($0)" }.joined(separator: ", ")
            return .failure(Refusal(status: 403, reason: "this proxy reaches only this runner's fixtures, as \(names), localhost or 127.0.0.1; "
                                    + "\"\(rawHost.escapingControlCharacters)\" is none of them"))
        }
        guard let entry = fixtures.servedFixture(onPort: port) else {
            return .failure(Refusal(status: 403, reason: "no fixture of this runner listens on port \(port), so the proxy will not connect there "
                                    + "(/scenarios.json and GET /api/fixtures list the fixtures' ports)"))
        }
        return .success(entry)
    }

    func isFixtureHost(_ host: String) -> Bool {
        if ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host) { return true }
        return domains.contains { domain in
            guard host.hasSuffix("." + domain) else { return false }
            // A DNS name (labels of letters, digits and hyphens) under it, nothing stranger.
            let name = host.dropLast(domain.count + 1)
            return !name.isEmpty && name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
                !label.isEmpty && label.count <= 63 && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
            }
        }
    }

    /// `host:port` or `[v6]:port`.
    static func split(_ authority: String) -> (String, Int)? {
        let host: Substring
        let portText: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]"), authority[authority.index(after: close)...].hasPrefix(":") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            portText = authority[authority.index(close, offsetBy: 2)...]
        } else {
            guard let colon = authority.lastIndex(of: ":") else { return nil }
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (1...65_535).contains(port) else { return nil }
        return (String(host), port)
    }
}
