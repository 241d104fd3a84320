import Foundation

/// The one load a matrix client makes: connect to 127.0.0.1 (or the address itself) on `port`, and judge the server as
/// `host`.
public struct MatrixTarget: Sendable {
    /// The name the client verifies (and sends as SNI when it is a DNS name).
    public var host: String
    public var port: Int

    /// Whether `host` is an IP literal (no SNI; the certificate must name the address).
    public var hostIsIPAddress: Bool { host.contains(":") || host.split(separator: ".").allSatisfy { Int($0) != nil } }

    /// `https://HOST:PORT/`, with IPv6 literals in brackets.
    public var url: URL { URL(string: "https://\(host.contains(":") ? "[\(host)]" : host):\(port)/")! }
}

/// The command line every matrix client takes, the shape `tls-fixtures report --client` runs:
/// `CLIENT CA.pem HOST PORT`. It loads `https://HOST:PORT/` once and prints one line, the client's own words (`HTTP
/// 200`, or its error); the exit status is the verdict: 0 accepted (verified, and an HTTP 200 read), 1 refused, 2 could
/// not run at all.
public enum MatrixCommandLine {
    public static func parse() -> (caFile: String, target: MatrixTarget) {
        let arguments = CommandLine.arguments
        guard arguments.count == 4, let port = Int(arguments[3]) else {
            FileHandle.standardError.write(Data("usage: \(arguments.first ?? "client") CA.pem HOST PORT\n".utf8))
            exit(64)
        }
        return (arguments[1], MatrixTarget(host: arguments[2], port: port))
    }

    /// Prints the client's words and exits with its verdict.
    public static func finish(accepted: Bool, detail: String) -> Never {
        FileHandle.standardOutput.write(Data((oneLine(detail) + "\n").utf8))
        exit(accepted ? 0 : 1)
    }

    /// One line of text: errors can span lines, a table cell cannot. BoringSSL's errors also name the source file
    /// that raised them (` at /path/to/checkouts/…/handshake.cc:320`), which says nothing about the server.
    public static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            .replacing(#/ at /[^ \]]*:\d+/#, with: "")
    }

    /// The client cannot run at all (its CA file is unreadable): a harness failure, never a verdict on the server.
    public static func fail(_ reason: String) -> Never {
        FileHandle.standardError.write(Data((oneLine(reason) + "\n").utf8))
        exit(2)
    }
}
