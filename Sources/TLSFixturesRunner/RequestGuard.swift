import Foundation
import NIOCore
import NIOHTTP1
import TLSFixturesWire

/// What the front door lets in, as pure functions of a request's head and where it came from: which room a request is
/// for, and why one is refused before any room sees it. No channel, no state: each rule is tested alone
/// (`RequestGuardTests`), and the router asks in one place (`check`).
enum RequestGuard {
    /// The room a request is for.
    enum Room: Equatable, Sendable {
        case dashboard, api
        /// `CONNECT HOST:PORT`.
        case connect
        /// `GET http://HOST:PORT/…` (absolute form).
        case forward

        var isProxy: Bool { self == .connect || self == .forward }
    }

    /// What this port serves, as the guard needs it.
    struct Port: Equatable, Sendable {
        var controlAPI: Bool
        var proxy: Bool
        var dashboard: Bool
        /// Where the proxy is when it is not here.
        var proxyElsewhere: Int?
        var allowRemoteClients: Bool
    }

    /// A refusal: its status, its one line, and whether the connection closes after it.
    struct Refusal: Equatable, Sendable {
        var status: HTTPResponseStatus
        var reason: String
        var closing: Bool
    }

    /// The room a head is for, by its method and target.
    static func room(_ head: HTTPRequestHead) -> Room {
        if head.method == .CONNECT { return .connect }
        let uri = head.uri.lowercased()
        if uri.hasPrefix("http://") || uri.hasPrefix("https://") { return .forward }
        if uri == "/api" || uri.hasPrefix("/api/") || uri.hasPrefix("/api?") { return .api }
        return .dashboard
    }

    /// The refusal a head gets as it arrives, before its body: a bad `Host`, or a room this port does not serve.
    static func checkHead(_ head: HTTPRequestHead, on port: Port) -> Refusal? {
        if let problem = hostProblem(head) { return Refusal(status: .badRequest, reason: problem, closing: true) }
        switch room(head) {
        case .dashboard where !port.dashboard:
            return Refusal(
                status: .notFound,
                reason: "this is the proxy port of tls-fixtures serve: send CONNECT NAME.fixtures.test:PORT (or GET "
                    + "http://http.fixtures.test:PORT/); the dashboard and the control API are on the dashboard's "
                    + "port", closing: false)
        default:
            return nil
        }
    }

    /// The refusal a whole request gets before its room answers: a client not on this machine, a room this port does
    /// not serve, a request a web page could make. `peer`: the client's address; `localPort`: this listener's.
    static func check(_ head: HTTPRequestHead, peer: SocketAddress?, localPort: Int?, on port: Port) -> Refusal? {
        let room = room(head)
        guard room != .dashboard else { return nil }
        if !port.allowRemoteClients && !isLoopback(peer) {
            // A phone or another machine using the proxy: the likeliest refusal nobody would otherwise see.
            return Refusal(
                status: .forbidden,
                reason: "the control API and the proxy answer clients on this machine only "
                    + "(`serve --allow-remote-clients` lets others in)", closing: true)
        }
        if room.isProxy && !port.proxy {
            let hint = port.proxyElsewhere.map { "; the proxy listens on port \($0)" } ?? ""
            return Refusal(status: .methodNotAllowed, reason: "this port does not proxy\(hint)", closing: true)
        }
        if room == .api {
            guard port.controlAPI else {
                return Refusal(
                    status: .notFound,
                    reason: "this port serves the proxy only; the control API is on the dashboard's port",
                    closing: false)
            }
            if let problem = crossSiteProblem(head, localPort: localPort, allowRemote: port.allowRemoteClients) {
                return Refusal(status: .forbidden, reason: problem, closing: false)
            }
        }
        return nil
    }

    /// The refusal of a body that has grown past `FixtureAPI.maximumBodyBytes` with `count` bytes.
    static func bodyProblem(count: Int) -> Refusal? {
        guard count > FixtureAPI.maximumBodyBytes else { return nil }
        return Refusal(
            status: .payloadTooLarge, reason: "the body is over \(FixtureAPI.maximumBodyBytes) bytes", closing: true)
    }

    /// RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message that
    /// lacks a Host header field and to any request message that contains more than one Host header field line or a
    /// Host header field with an invalid field value." Which of two would count is what request smuggling plays on.
    static func hostProblem(_ head: HTTPRequestHead) -> String? {
        let hosts = head.headers["Host"]
        if hosts.count > 1 {
            return "the request has \(hosts.count) Host headers; send one (RFC 9112 §3.2)"
        }
        guard let host = hosts.first else {
            guard head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1) else { return nil }
            return "an HTTP/1.1 request needs a Host header, such as Host: localhost:PORT (RFC 9112 §3.2)"
        }
        // uri-host [":" port] (RFC 3986 §3.2.2): unreserved, percent-encoded, sub-delims, ":" and an IPv6 literal's
        // brackets. Empty is allowed, for a target without an authority.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%!$&'()*+,;=:[]".utf8)
        guard host.utf8.allSatisfy(allowed.contains) else {
            return "Host \"\(ProxyPolicy.shown(host))\" is not HOST[:PORT] (RFC 9112 §3.2)"
        }
        return nil
    }

    /// A request a web page in the user's browser could make: refused, so no site can start or stop fixtures.
    static func crossSiteProblem(_ head: HTTPRequestHead, localPort: Int?, allowRemote: Bool) -> String? {
        let port = localPort.map { ":\($0)" } ?? ""
        if let origin = head.headers.first(name: "Origin")?.lowercased(),
            !["http://localhost\(port)", "http://127.0.0.1\(port)", "http://[::1]\(port)"].contains(origin)
        {
            return "a request from the web page \(origin) is refused: only the dashboard itself and programs may use "
                + "the control API"
        }
        guard !allowRemote, let host = head.headers.first(name: "Host")?.lowercased() else { return nil }
        let name =
            host.hasPrefix("[") ? String(host.prefix { $0 != "]" }) + "]" : String(host.split(separator: ":").first ?? "")
        if !["localhost", "127.0.0.1", "[::1]"].contains(name) {
            return "Host \"\(host)\" is not this machine's loopback name: the control API answers "
                + "http://localhost:PORT (a name that resolves here by DNS could be any site's)"
        }
        return nil
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }

    /// The parameters of `uri`'s query, in order, each value percent-decoded; an empty value stays (`scenarios=` is a
    /// mistake to name, not to ignore). The one query parser of the front door.
    static func query(_ uri: String) -> [(name: String, value: String)] {
        guard let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
        return query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let value = parts.count == 2 ? parts[1] : ""
            return (parts[0], value.removingPercentEncoding ?? value)
        }
    }

    /// `uri` without its query.
    static func path(_ uri: String) -> String {
        String(uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }
}
