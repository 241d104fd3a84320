import Foundation
import TLSFixturesScenario
import TLSFixturesWire

/// A client given as a command template, the load `tls-fixtures report --client` judges: each run fills in the
/// fixture's `{url}` (`https://localhost:PORT/`), `{qualifiedURL}` (`https://NAME.fixtures.test:PORT/`), `{host}`
/// (`NAME.fixtures.test`), `{port}`, `{scenario}` (`NAME`), `{ca}` (the kit's CA, PEM), `{proxy}` (the runner's proxy,
/// `http://localhost:9800`) and `{resolve}` (`NAME.fixtures.test:PORT:127.0.0.1`, for curl's `--resolve`), and runs it
/// without a shell (words split as a POSIX shell splits them; write `sh -c '…'` for a pipeline). Exit status 0 means
/// the client accepted; anything else, or no exit within `timeout`, that it refused.
package struct CommandLoad: Sendable {
    /// The template's words, as split.
    package let words: [String]
    /// The CA file `{ca}` names.
    package var caFile: String
    /// The runner's URL, `{proxy}`.
    package var proxy: URL
    /// Seconds a run may take before it is stopped and counted a refusal.
    package var timeout: TimeInterval

    package init(template: String, caFile: String, proxy: URL, timeout: TimeInterval = 30) throws {
        words = try Self.split(template)
        guard let first = words.first, !first.isEmpty else {
            throw CommandLoadError(reason: "the client command is empty",
                                   fix: "give a command, e.g. --client 'curl -sS --cacert {ca} {url}'")
        }
        // {scenario} alone says which fixture, not where it listens.
        let known = ["{url}", "{qualifiedURL}", "{host}", "{port}", "{ca}", "{proxy}", "{resolve}"]
        if !words.contains(where: { word in known.contains { word.contains($0) } }) {
            throw CommandLoadError(reason: "the client command names no fixture: it has none of "
                                       + known.joined(separator: ", "),
                                   fix: "put {url} (or {qualifiedURL} with --proxy {proxy}) where the client takes its URL")
        }
        self.caFile = caFile
        self.proxy = proxy
        self.timeout = timeout
    }

    /// What a run said when the client did not accept: its exit status and the first line of its output.
    package struct Refused: CodedError {
        package typealias Code = ErrorCode<Refused>
        package let code = Code("clientRefused")
        package let status: Int32
        package let output: String
        package var reason: String { "exit \(status): \(output)" }
        package var fix: String? { nil }

        package init(status: Int32, output: String) {
            self.status = status
            self.output = output
        }
    }

    /// The words for the fixture at `url` (its qualified URL, `https://NAME.fixtures.test:PORT/`).
    package func arguments(for url: URL) -> [String] {
        let port = url.port.map(String.init) ?? ""
        let host = url.host ?? "localhost"
        let scheme = url.scheme ?? "https"
        let scenario = host.hasSuffix(".\(Scenario.fixturesDomain)")
            ? String(host.dropLast(Scenario.fixturesDomain.count + 1)) : host
        let values = ["{url}": "\(scheme)://localhost:\(port)/", "{qualifiedURL}": url.absoluteString, "{host}": host,
                      "{port}": port, "{scenario}": scenario, "{ca}": caFile, "{proxy}": proxy.absoluteString,
                      "{resolve}": "\(host):\(port):127.0.0.1"]
        return words.map { word in values.reduce(word) { $0.replacingOccurrences(of: $1.key, with: $1.value) } }
    }

    /// Runs the command for `url`; returns `exit 0` and the first line of its output when it exits 0, throws `Refused`
    /// (the status and that line) otherwise.
    package func run(_ url: URL) async throws -> String {
        let arguments = arguments(for: url)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        let exited = ProcessExit()
        process.terminationHandler = { _ in exited.finish() }
        do {
            try process.run()
        } catch {
            try? handle.close()
            throw CommandLoadError(reason: "cannot run \(arguments[0].quotedForMessage()): \(error)",
                                   fix: "give a program on PATH, or its full path")
        }
        try? handle.close()
        let finished = await exited.finished(within: timeout)
        if !finished {
            process.terminate()
            if await !exited.finished(within: 5) { kill(process.processIdentifier, SIGKILL) }
            _ = await exited.finished(within: .infinity)
        }
        let text = String(decoding: (try? Data(contentsOf: output)) ?? Data(), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map(String.init) ?? ""
        guard finished else { throw Refused(status: -1, output: "no exit within \(Int(timeout)) s") }
        guard process.terminationStatus == 0 else {
            throw Refused(status: process.terminationStatus, output: line.quotedForMessage(limit: 300))
        }
        return line.isEmpty ? "exit 0" : "exit 0: " + line.quotedForMessage(limit: 300)
    }

    /// Splits a command line as a POSIX shell splits words: blanks separate, single quotes keep everything, double
    /// quotes keep all but `\"` and `\\`, a backslash keeps the next character.
    package static func split(_ line: String) throws -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                word.append(character)
                escaped = false
                continue
            }
            switch (quote, character) {
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case ("'", _):
                word.append(character)
            case ("\"", "\\"), (nil, "\\"):
                escaped = true
                inWord = true
            case ("\"", _):
                word.append(character)
            case (nil, "'"), (nil, "\""):
                quote = character
                inWord = true
            case (nil, " "), (nil, "\t"), (nil, "\n"):
                if inWord { words.append(word) }
                word = ""
                inWord = false
            default:
                word.append(character)
                inWord = true
            }
        }
        if quote != nil || escaped {
            throw CommandLoadError(reason: "the client command has an unterminated quote or a trailing backslash",
                                   fix: "close every quote, as in a shell")
        }
        if inWord { words.append(word) }
        return words
    }
}

/// A command template that cannot be run, or a report option that names nothing.
package struct CommandLoadError: CodedError {
    package typealias Code = ErrorCode<CommandLoadError>
    package let code = Code("badClient")
    package let reason: String
    package let fix: String?

    package init(reason: String, fix: String) {
        self.reason = reason
        self.fix = fix
    }
}
