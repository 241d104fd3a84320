import Foundation
import TLSFixturesFleet
import TLSFixturesWire

/// Where `serve` writes each connection as it ends: a line of text on standard error (`--log-connections`), and the
/// whole record as one JSON object a line (JSON Lines) appended to a file (`--connection-log FILE`), in the control
/// API's encoding, so a script can `tail -f` it. Told from many event loops at once: one lock orders the writes, so
/// no two lines interleave.
package final class ConnectionEventSink: @unchecked Sendable {
    private let lock = NSLock()
    private let text: Bool
    private let file: FileHandle?
    private let encoder: JSONEncoder = {
        let encoder = FixtureAPI.encoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]   // one line: never .prettyPrinted
        return encoder
    }()

    /// Opens `path` for appending (creating it; what is there is kept). Throws a one-line error naming the option.
    package init(text: Bool, path: String?) throws {
        self.text = text
        guard let path else {
            file = nil
            return
        }
        guard !path.isEmpty else {
            throw ConnectionEventSinkError("--connection-log needs a file name, not an empty one", fix: "give a file to append to")
        }
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ConnectionEventSinkError("--connection-log \(path) is a directory", fix: "give a file to append to")
        }
        if !FileManager.default.fileExists(atPath: url.path) {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw ConnectionEventSinkError("--connection-log \(path) cannot be created",
                                               fix: "give a file in a folder that exists and you may write to")
            }
        }
        do {
            let handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
            file = handle
        } catch {
            throw ConnectionEventSinkError("--connection-log \(path) cannot be opened for writing "
                                           + "(\(error.localizedDescription))", fix: "give a file you may write to")
        }
    }

    deinit { try? file?.close() }

    /// Whether anything is asked for: `serve` tells the fleet only then.
    package var isActive: Bool { text || file != nil }

    package func write(_ event: FleetConnection) {
        let line = text ? event.line + "\n" : nil
        let json = file == nil ? nil : (try? encoder.encode(event)).map { $0 + Data("\n".utf8) }
        lock.lock()
        defer { lock.unlock() }
        if let line { FileHandle.standardError.write(Data(line.utf8)) }
        if let json { try? file?.write(contentsOf: json) }
    }
}

/// A `--connection-log` the sink cannot write to: the reason names the flag (only the CLI opens one), the fix what to
/// give instead.
package struct ConnectionEventSinkError: CodedError {
    package typealias Code = ErrorCode<ConnectionEventSinkError>

    package let code: Code
    package let reason: String
    package let fix: String?

    init(_ reason: String, fix: String) {
        code = .unwritable
        self.reason = reason
        self.fix = fix
    }
}

extension ErrorCode where Owner == ConnectionEventSinkError {
    /// Empty, a folder, or a file this process cannot create or append to.
    package static var unwritable: Self { Self("unwritable") }
}
