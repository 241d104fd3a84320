import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// curl as the load a refusal test judges: a real TLS client (OpenSSL's verifier, libcurl's host-name and pin checks)
/// run as a child process, awaited without holding a thread. It returns what URLSession's `data(from:)` returns, the
/// body and an `HTTPURLResponse` with the headers curl received (so the judge can read a fixture's answer stamp), and
/// throws, on failure, the error libcurl's users see through FoundationNetworking: an `NSURLErrorDomain` code for
/// curl's exit status, with curl's own words.
struct CurlLoad: Sendable {
    /// `--cacert`: the roots it trusts (nil: the system's).
    var trusting: [String] = []
    /// `-k`: verifies nothing.
    var insecure = false
    /// `--proxy`.
    var proxy: String?
    /// `--pinnedpubkey sha256//…`: libcurl checks it once the handshake has completed.
    var pinnedKey: String?
    /// `--resolve NAME:PORT:127.0.0.1` for every load: reach a qualified name without /etc/hosts.
    var resolveToLoopback = false

    /// The roots in one PEM file, as `--cacert` takes them.
    static func bundle(_ pems: [Data]) throws -> String {
        try TestEnvironment.file(pems.reduce(Data(), +), name: "roots.pem")
    }

    /// The load as the checks take it.
    var load: @Sendable (URL) async throws -> (Data, URLResponse) { { try await self($0) } }

    func callAsFunction(_ url: URL) async throws -> (Data, URLResponse) {
        let scratch = TestEnvironment.temporaryDirectory("curl")
        let headers = scratch.appendingPathComponent("headers").path
        var arguments = ["curl", "-sS", "--max-time", "60", "-D", headers]
        for root in trusting { arguments += ["--cacert", root] }
        if insecure { arguments.append("-k") }
        if let proxy { arguments += ["--proxy", proxy] } else { arguments += ["--noproxy", "*"] }
        if let pinnedKey { arguments += ["--pinnedpubkey", "sha256//" + pinnedKey] }
        if resolveToLoopback, let host = url.host, let port = url.port {
            arguments += ["--resolve", "\(host):\(port):127.0.0.1"]
        }
        let result = try await Subprocess.runAwaiting(arguments + [url.absoluteString], timeout: 90)
        guard result.status == 0 else { throw Self.error(status: result.status, stderr: result.stderr) }
        let head = (try? String(contentsOfFile: headers, encoding: .utf8)) ?? ""
        return (result.stdoutData, Self.response(url: url, head: head))
    }

    /// The last response head curl wrote (a proxy's `200 Connection established` comes first).
    static func response(url: URL, head: String) -> HTTPURLResponse {
        let blocks = head.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n")
            .filter { $0.hasPrefix("HTTP/") }
        let lines = (blocks.last ?? "").split(separator: "\n").map(String.init)
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)!
    }

    /// curl's exit status as FoundationNetworking reports libcurl's errors (libcurl-errors(3)).
    static func error(status: Int32, stderr: String) -> NSError {
        let words = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        let code: Int
        switch status {
        case 6: code = NSURLErrorCannotFindHost
        case 7: code = NSURLErrorCannotConnectToHost
        case 28: code = NSURLErrorTimedOut
        case 35: code = NSURLErrorSecureConnectionFailed
        case 60: code = NSURLErrorServerCertificateUntrusted
        default: code = NSURLErrorUnknown
        }
        return NSError(domain: NSURLErrorDomain, code: code,
                       userInfo: [NSLocalizedDescriptionKey: "curl \(status): \(words)"])
    }
}
