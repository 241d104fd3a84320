import ArgumentParser
import Foundation
import Logging
import TLSFixtures

enum Output {
    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// Log lines as a CLI user wants them: `warning: …` on standard error, nothing else.
/// `TLS_FIXTURES_LOG=debug|info|notice|warning|error` changes the threshold (default: notice).
enum CLILogging {
    static func bootstrap() {
        let level = ProcessInfo.processInfo.environment["TLS_FIXTURES_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .notice
        LoggingSystem.bootstrap { label in
            var handler = PlainStderrLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

struct PlainStderrLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let prefix = event.level >= .warning ? "\(event.level): " : ""
        Output.error(prefix + event.message.description)
    }
}

/// A one-line error for the user: what is wrong and what to do. (ArgumentParser's `ValidationError` would append
/// the whole usage text.)
struct CLIError: Error, CustomStringConvertible {
    let description: String
    /// The code of the library error this line words for the CLI, which `--json` reports; nil for the CLI's own.
    let code: String?
    init(_ description: String, code: String? = nil) { self.description = description; self.code = code }
}

/// Seconds options (`--timeout`, `--handshake-timeout`, …): checked in `validate()` against the library's one range
/// (`Timeout`), so `inf`, `nan`, `1e20`, `0` or `-1` get one line naming the option instead of a trap or no limit.
enum SecondsOption {
    /// Seconds as the user would type them: `31`, not `31.0`; `0.5` as it is.
    static func text(_ seconds: Double) -> String {
        seconds.isFinite && seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : "\(seconds)"
    }

    static func check(_ seconds: Double, _ option: String) throws -> Timeout {
        do { return try Timeout(seconds: seconds, name: option) } catch let error as InvalidTimeout { throw CLIError(error.description) }
    }
}

/// `--port-base` (`serve`'s, and `pins`', whose revocation leaves name `serve`'s OCSP responder and CRL): a TCP port
/// that leaves every port the catalog puts above it (the scenarios' and the responder's) at most 65535.
enum PortBaseOption {
    static func check(_ portBase: Int, catalog: ScenarioCatalog) throws {
        guard (1...65_535).contains(portBase) else { throw CLIError("--port-base must be a TCP port (1–65535)") }
        let highest = catalog.highestPort(portBase: portBase)
        if highest > 65_535 {
            throw CLIError("--port-base \(portBase) puts ports above 65535 (the scenarios' and the OCSP responder's, up to "
                           + "base + \(highest - portBase)); use a base of at most \(65_535 - (highest - portBase))")
        }
    }
}

/// An error as `--json` prints it on standard output: `{"error": {"message": …, "code": …, "exitCode": …}}`, the one
/// shape every command's failure has (docs/cli.md, "JSON output"). The plain line still goes to standard error.
enum JSONError {
    struct Body: Encodable {
        var message: String
        /// The library error's code (`fileExists`, `noCA`, …), `usage` for a bad option, `error` otherwise.
        var code: String
        var exitCode: Int32
    }

    /// Whether the command line asked for JSON (every `--json` is a flag of the command that runs).
    static var asked: Bool { CommandLine.arguments.dropFirst().contains("--json") }

    static func printIfAsked(message: String, code: String, exitCode: Int32) {
        guard asked else { return }
        try? Output.json(["error": Body(message: message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message,
                                        code: code, exitCode: exitCode)])
    }

    /// The stable code of a library error, when it has one.
    static func code(of error: any Error) -> String {
        if let error = error as? CLIError { return error.code ?? "error" }
        if let error = error as? any CodedError { return "\(error.code)" }
        return "error"
    }
}
