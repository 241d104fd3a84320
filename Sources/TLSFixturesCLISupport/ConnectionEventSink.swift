import Foundation
import TLSFixturesFleet
import TLSFixturesRunner
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

    /// What `open` made: a sink, or the one line that says why `--connection-log` cannot be written (the CLI's error).
    package enum Opened {
        case sink(ConnectionEventSink)
        case refused(String)
    }

    /// Opens `path` for appending (creating it; what is there is kept), or says in one line, naming the option, why not.
    package static func open(text: Bool, path: String?) -> Opened {
        do {
            return .sink(try ConnectionEventSink(text: text, path: path))
        } catch {
            return .refused(error.line)
        }
    }

    private init(text: Bool, path: String?) throws(Refusal) {
        self.text = text
        guard let path else {
            file = nil
            return
        }
        guard !path.isEmpty else {
            throw Refusal("--connection-log needs a file name, not an empty one; give a file to append to")
        }
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw Refusal("--connection-log \(path) is a directory; give a file to append to")
        }
        if !FileManager.default.fileExists(atPath: url.path) {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw Refusal("--connection-log \(path) cannot be created; give a file in a folder "
                                               + "that exists and you may write to")
            }
        }
        do {
            let handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
            file = handle
        } catch {
            throw Refusal("--connection-log \(path) cannot be opened for writing "
                                           + "(\(error.localizedDescription)); give a file you may write to")
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

    /// Whether requests the proxy refused are wanted: the text log only (`--connection-log`'s lines are each one
    /// fixture connection's record, and a refused proxy request never reached a fixture).
    package var wantsProxyRefusals: Bool { text }

    package func write(_ refusal: ProxyRefusal) {
        guard text else { return }
        let line = refusal.line + "\n"
        lock.lock()
        defer { lock.unlock() }
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension ConnectionEventSink {
    /// Why a `--connection-log` cannot be written; only ever read as `Opened.refused`'s line.
    private struct Refusal: Error {
        var line: String
        init(_ line: String) { self.line = line }
    }
}
