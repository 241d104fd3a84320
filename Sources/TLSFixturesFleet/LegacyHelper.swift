import Foundation
import NIOCore
import TLSFixturesWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The legacy helper: this same `tls-fixtures`, built by `make legacy-openssl` against an OpenSSL that still has SSLv3,
/// RC4 and 3DES. `serve` runs it as a separate process for the scenarios the linked OpenSSL cannot serve, so the main
/// process keeps the system's OpenSSL and those scenarios are served by real code, never replaced by something else.
package enum LegacyHelper {
    package static let environmentVariable = "TLS_FIXTURES_LEGACY_HELPER"
    /// Where `make legacy-openssl` puts it, relative to the checkout.
    package static let relativePath = ".build-legacy/bin/tls-fixtures-legacy"

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
}

/// A running helper `serve`: started with `--json --no-dashboard`, read until it reports, stopped with SIGTERM.
final class LegacyHelperProcess: @unchecked Sendable {
    private let process = Process()
    private let output: URL
    private let errors: URL
    let document: CatalogDocument

    /// How the main process's fixtures listen, which the helper's match.
    struct Listening: Sendable {
        var portBase: Int
        var bindAddresses: [String]?
        var handshakeTimeout: TimeAmount
        var idleTimeout: TimeAmount
    }

    /// Starts `helper serve NAMES` on the same port base, store and addresses, and waits (up to `timeout`) for its
    /// report.
    init(helper: URL, names: [String], storeDirectory: URL, listening options: Listening,
         timeout: TimeInterval = 180) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tls-fixtures-legacy-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        output = scratch.appendingPathComponent("out")
        errors = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        var arguments = ["serve"] + names + ["--port-base", "\(options.portBase)", "--dir", storeDirectory.path, "--json",
                                             "--no-dashboard", "--legacy-helper", "none",
                                             "--handshake-timeout", "\(Double(options.handshakeTimeout.nanoseconds) / 1e9)",
                                             "--idle-timeout", "\(Double(options.idleTimeout.nanoseconds) / 1e9)"]
        for address in options.bindAddresses ?? [] { arguments += ["--bind", address] }
        process.executableURL = helper
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        var report: CatalogDocument? = nil
        while Date() < deadline && process.isRunning {
            if let data = try? Data(contentsOf: output), !data.isEmpty, let decoded = try? JSONDecoder().decode(CatalogDocument.self, from: data) {
                report = decoded
                break
            }
            usleep(50_000)
        }
        guard let report else {
            let why = (try? String(contentsOf: errors, encoding: .utf8))?.split(separator: "\n").last.map(String.init)
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            throw LegacyHelperError(helper: helper.path, why: why ?? (process.isRunning ? "no report within \(Int(timeout)) s" : "it exited"))
        }
        document = report
    }

    /// SIGTERM, then up to two seconds for the helper to close its fixtures; SIGKILL after that.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
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
        "rebuild it with `make legacy-openssl`, or serve without it (FixtureFleet.Options.legacyHelper nil)"
    }
}

extension ErrorCode where Owner == LegacyHelperError {
    package static var didNotStart: Self { Self("didNotStart") }
}
