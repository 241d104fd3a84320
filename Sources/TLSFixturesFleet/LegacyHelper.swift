import Foundation
import NIOCore
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The legacy helper: this same `tls-fixtures`, built by `make legacy-openssl` against an OpenSSL that still has SSLv3,
/// RC4 and 3DES. A fleet runs it as a separate process for the scenarios the linked OpenSSL cannot serve, so the main
/// process keeps the system's OpenSSL and those scenarios are served by real code, never replaced by something else.
///
/// It has an interface of its own: the fleet starts `HELPER legacy-helper REQUEST` (a hidden subcommand; REQUEST is a
/// `LegacyHelperRequest` as JSON) with a pipe on its standard input and output. The helper opens a fleet of its own
/// for those scenarios, with no front door, and once they serve writes one line of JSON to its standard output, the
/// `CatalogDocument` of what it serves. It serves until its standard input ends: the main fleet closes the pipe to stop
/// the helper, and a main process that dies closes it too, so no helper outlives its runner. (The request is an
/// argument, not a line on the pipe, so the main process never writes to a helper that may have died: SIGPIPE.)
package enum LegacyHelper {
    package static let environmentVariable = "TLS_FIXTURES_LEGACY_HELPER"
    /// Where `make legacy-openssl` puts it, relative to the checkout.
    package static let relativePath = ".build-legacy/bin/tls-fixtures-legacy"
    /// The hidden subcommand that speaks the pipe protocol.
    package static let subcommand = "legacy-helper"

    /// `$TLS_FIXTURES_LEGACY_HELPER` (`none`: no helper), else the helper of the checkout this executable was built in
    /// (found by walking up from it, as `.build/…/tls-fixtures` sits beside `.build-legacy/`); nil when there is none.
    package static func locate(executable: URL? = nil) -> URL? {
        let fileManager = FileManager.default
        if let path = ProcessInfo.processInfo.environment[environmentVariable], !path.isEmpty {
            return path != "none" && fileManager.isExecutableFile(atPath: path) ? URL(fileURLWithPath: path) : nil
        }
        var directory = (executable ?? runningExecutable)?.resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            guard let current = directory else { break }
            let candidate = current.appendingPathComponent(relativePath)
            if fileManager.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = current.deletingLastPathComponent()
        }
        return nil
    }

    /// This process's executable. On Linux from `/proc/self/exe`, not Foundation's `Bundle.main`, which traps when the
    /// executable's folder is one this user may not read (a binary run by another user from a 0700 checkout).
    private static var runningExecutable: URL? {
        #if os(Linux)
        // darwin-lint: allow proc — Linux only
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return URL(fileURLWithPath: path)
        #else
        return Bundle.main.executableURL
        #endif
    }

    /// The helper's side: serves what `request` names (from `catalog`: the built-in one, which the main process asked
    /// from), writes what serves to `output` as one line, and serves until `input` ends; then stops everything and
    /// returns. A fleet that cannot start throws.
    package static func serve(
        _ request: LegacyHelperRequest, input: FileHandle = .standardInput, output: FileHandle = .standardOutput,
        catalog: ScenarioCatalog = .builtIn
    ) async throws {
        var options = FixtureFleet.Options()
        options.portBase = request.portBase
        options.bindAddresses = request.bindAddresses
        options.handshakeTimeout = .nanoseconds(Int64(request.handshakeTimeout * 1e9))
        options.idleTimeout = .nanoseconds(Int64(request.idleTimeout * 1e9))
        // The helper never asks another helper; what it cannot serve either stays unsupported.
        options.legacyHelper = nil
        let fleet = try await FixtureFleet.start(
            try catalog.scenarios(named: request.scenarios), catalog: catalog,
            store: CertificateStore(directory: URL(fileURLWithPath: request.storeDirectory)), options: options)
        do {
            var report = try JSONEncoder().encode(fleet.document())
            report.append(UInt8(ascii: "\n"))
            try output.write(contentsOf: report)
            // Until the main process closes the pipe (or dies), on a thread of its own: it may be days.
            await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
                let reader = Thread {
                    _ = try? input.readToEnd()
                    ended.resume()
                }
                reader.name = "tls-fixtures legacy helper input"
                reader.start()
            }
        } catch {
            await fleet.stop()
            throw error
        }
        await fleet.stop()
    }
}

/// What the main fleet asks the legacy helper to serve, and how (its own fixtures' settings, which the helper's match).
package struct LegacyHelperRequest: Codable, Sendable, Equatable {
    /// Built-in scenario names.
    package var scenarios: [String]
    /// The main process's store, so the helper's leaves come from the same CA.
    package var storeDirectory: String
    package var portBase: Int
    package var bindAddresses: [String]?
    /// Seconds.
    package var handshakeTimeout: Double
    /// Seconds.
    package var idleTimeout: Double

    /// The request as the subcommand's argument gives it.
    package init(json: String) throws {
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(json.utf8))
        } catch {
            throw LegacyHelperError(helper: "this process", why: "its argument is not a LegacyHelperRequest: \(error)")
        }
    }

    package init(
        scenarios: [String], storeDirectory: String, portBase: Int, bindAddresses: [String]?,
        handshakeTimeout: Double, idleTimeout: Double
    ) {
        self.scenarios = scenarios; self.storeDirectory = storeDirectory; self.portBase = portBase
        self.bindAddresses = bindAddresses; self.handshakeTimeout = handshakeTimeout; self.idleTimeout = idleTimeout
    }
}

/// A running helper: started with its request on a pipe, read until it reports, stopped by closing that pipe.
final class LegacyHelperProcess: @unchecked Sendable {
    // Unchecked: every field is set once in `init`; `Process` and `FileHandle` are safe to use from any thread.
    private let process: Process
    private let input: FileHandle
    let document: CatalogDocument

    private init(process: Process, input: FileHandle, document: CatalogDocument) {
        self.process = process; self.input = input; self.document = document
    }

    /// Starts `helper legacy-helper`, writes `request`, and waits (up to `timeout`) for its report, on a thread of its
    /// own (it blocks).
    static func start(helper: URL, request: LegacyHelperRequest, timeout: TimeInterval = 180) async throws
        -> LegacyHelperProcess
    {
        try await BlockingWork.blockingIO {
            try LegacyHelperProcess.launch(helper: helper, request: request, timeout: timeout)
        }
    }

    private static func launch(helper: URL, request: LegacyHelperRequest, timeout: TimeInterval) throws
        -> LegacyHelperProcess
    {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        let failed = { (why: String) in LegacyHelperError(helper: helper.path, why: why) }
        // Its standard error goes to a file nobody must drain (a pipe would fill and stall the helper), read here only
        // when it fails; the name is gone at once, the open handles keep it.
        let errorsPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("tls-fixtures-legacy-\(UUID().uuidString.prefix(8)).err").path
        guard FileManager.default.createFile(atPath: errorsPath, contents: nil),
            let errorsOut = FileHandle(forWritingAtPath: errorsPath), let errors = FileHandle(forReadingAtPath: errorsPath)
        else { throw failed("cannot make a file for its standard error in \(errorsPath)") }
        try? FileManager.default.removeItem(atPath: errorsPath)
        defer {
            try? errorsOut.close()
            try? errors.close()
        }
        process.executableURL = helper
        process.arguments = [LegacyHelper.subcommand, String(decoding: try JSONEncoder().encode(request), as: UTF8.self)]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errorsOut
        do { try process.run() } catch { throw failed("\(error)") }
        let deadline = Date().addingTimeInterval(timeout)
        let reply = readReply(output.fileHandleForReading.fileDescriptor, until: deadline)
        guard let reply, let document = try? JSONDecoder().decode(CatalogDocument.self, from: Data(reply.utf8)) else {
            // Its last line on standard error says why, when it wrote one.
            let exited = Date() < deadline
            try? input.fileHandleForWriting.close()
            stop(process)
            let said = String(decoding: (try? errors.readToEnd()) ?? Data(), as: UTF8.self)
            let why = said.split(separator: "\n").last.map(String.init)
            throw failed(why ?? (exited ? "it exited" : "no report within \(Int(timeout)) s"))
        }
        return LegacyHelperProcess(process: process, input: input.fileHandleForWriting, document: document)
    }

    /// The first line on `descriptor`, or nil when none came by `deadline` (or the helper closed it first).
    private static func readReply(_ descriptor: Int32, until deadline: Date) -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 200)
            if ready < 0 && errno != EINTR { return nil }
            guard ready > 0 else { continue }
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { return nil }
            bytes += buffer[..<count]
            if let end = bytes.firstIndex(of: UInt8(ascii: "\n")) { return String(decoding: bytes[..<end], as: UTF8.self) }
        }
        return nil
    }

    /// Closes the helper's standard input, which stops it; it has two seconds to close its fixtures, then SIGKILL.
    func stop() async {
        try? input.close()
        let process = process
        try? await BlockingWork.blockingIO { Self.stop(process) }
    }

    private static func stop(_ process: Process) {
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

package struct LegacyHelperError: CodedError {
    package typealias Code = ErrorCode<LegacyHelperError>

    package var code: Code { .didNotStart }
    package let helper: String
    /// What went wrong, in the helper's last line when it wrote one.
    package let why: String

    package init(helper: String, why: String) {
        self.helper = helper
        self.why = why
    }

    package var reason: String { "the legacy helper \(helper) did not start: \(why)" }
    package var fix: String? {
        "rebuild it with `make legacy-openssl`, or serve without it (FixtureRunner.Configuration.legacyHelper .none)"
    }
}

extension ErrorCode where Owner == LegacyHelperError {
    package static var didNotStart: Self { Self("didNotStart") }
}
