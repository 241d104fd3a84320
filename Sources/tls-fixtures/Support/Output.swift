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
    init(_ description: String) { self.description = description }
}

/// Seconds options (`--timeout`, `--handshake-timeout`, …): checked in `validate()` against the library's one range
/// (`Timeout`), so `inf`, `nan`, `1e20`, `0` or `-1` get one line naming the option instead of a trap or no limit.
enum SecondsOption {
    static func check(_ seconds: Double, _ option: String) throws -> Timeout {
        do { return try Timeout(seconds: seconds, name: option) } catch let error as InvalidTimeout { throw CLIError(error.description) }
    }
}
