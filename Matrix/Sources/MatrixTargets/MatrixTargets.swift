import Foundation

/// One handshake the matrix asks for: connect to 127.0.0.1 (or ::1) on `port`, and judge the server as `host`.
public struct MatrixTarget: Sendable {
    /// Echoed back, so the driver can match answers to questions.
    public var id: String
    /// The name the client verifies (and sends as SNI when it is a DNS name).
    public var host: String
    public var port: Int

    /// Whether `host` is an IP literal (no SNI; the certificate must name the address).
    public var hostIsIPAddress: Bool { host.contains(":") || host.split(separator: ".").allSatisfy { Int($0) != nil } }

    /// `https://HOST:PORT/`, with IPv6 literals in brackets.
    public var url: URL { URL(string: "https://\(host.contains(":") ? "[\(host)]" : host):\(port)/")! }
}

/// What a client made of one target: accepted (verified, and an HTTP 200 read) or its own error text.
public struct MatrixResult: Codable, Sendable {
    public var id: String
    public var accepted: Bool
    public var detail: String

    public init(id: String, accepted: Bool, detail: String) { self.id = id; self.accepted = accepted; self.detail = detail }
}

/// The command line every Swift matrix client takes: `CLIENT CA.pem TARGETS` where TARGETS has one
/// `ID<TAB>HOST<TAB>PORT` line per target. Results go to standard output, one JSON object a line, in order.
public enum MatrixCommandLine {
    public static func parse() -> (caFile: String, targets: [MatrixTarget]) {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let text = try? String(contentsOfFile: arguments[2], encoding: .utf8) else {
            FileHandle.standardError.write(Data("usage: \(arguments.first ?? "client") CA.pem TARGETS (one ID<TAB>HOST<TAB>PORT line each)\n".utf8))
            exit(64)
        }
        var targets: [MatrixTarget] = []
        for line in text.split(separator: "\n") where !line.isEmpty {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3, let port = Int(fields[2]) else {
                FileHandle.standardError.write(Data("bad target line: \(line)\n".utf8))
                exit(64)
            }
            targets.append(MatrixTarget(id: fields[0], host: fields[1], port: port))
        }
        return (arguments[1], targets)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Prints one result line and flushes it, so a driver that times out still has every earlier answer.
    public static func report(_ result: MatrixResult) {
        var line = (try? encoder.encode(result)) ?? Data("{}".utf8)
        line.append(0x0A)
        FileHandle.standardOutput.write(line)
    }

    /// One line of text: errors can span lines, a table cell cannot. BoringSSL's errors also name the source file
    /// that raised them (` at /path/to/checkouts/…/handshake.cc:320`), which says nothing about the server.
    public static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            .replacing(#/ at /[^ \]]*:\d+/#, with: "")
    }
}

extension MatrixCommandLine {
    /// The client cannot run at all (its CA file is unreadable): a harness failure, never a verdict on any target.
    public static func fail(_ reason: String) -> Never {
        FileHandle.standardError.write(Data((oneLine(reason) + "\n").utf8))
        exit(2)
    }
}
