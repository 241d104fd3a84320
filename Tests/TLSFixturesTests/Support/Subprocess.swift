import Foundation
import Testing
@testable import TLSFixturesCLISupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs real programs (openssl, curl, python3, our CLI) and captures what they print. A bare tool name (`openssl`,
/// `curl`, `python3`, …) runs the program `Tools` located and checked (Homebrew's keg first on macOS); a tool that
/// failed its check is not run at all: the test fails with the reason, so it cannot judge with the wrong program.
struct Subprocess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var timedOut: Bool
        var stdoutData: Data
        var combined: String { stdout + stderr }
    }

    /// A started child whose input and output are temporary files rather than pipes, so a chatty child can never block
    /// on a full pipe, and a process short of descriptors gets an error rather than Foundation's trap in `Pipe()`. The
    /// parent's copies are closed once the child has its own: a running child holds no descriptor here.
    final class Running: @unchecked Sendable {
        let process = Process()
        private let scratch: URL
        private let outURL: URL
        private let errURL: URL
        /// Resumed by the process's termination handler: how an async test waits without holding a thread.
        private let termination = Termination()
        /// How long a child has to exit after SIGTERM before it gets SIGKILL (a hung `serve` must not hang the test).
        static let killGrace: TimeInterval = 10

        init(_ arguments: [String], environment: [String: String]?, currentDirectory: URL?, stdin: Data?,
             checked: Bool = true) throws {
            var arguments = arguments
            var environment = environment
            if checked, let command = arguments.first, !command.contains("/"), let tool = Tools.forCommand(command) {
                guard tool.isUsable, let path = tool.path else { throw ExternalToolUnavailable(tool: tool) }
                arguments[0] = path
            }
            if checked, HostOS.current == .darwin {
                // Shell pipelines in tests (`sh -c "openssl … | …"`) find the same programs.
                environment = (environment ?? [:]).merging(["PATH": Tools.searchPath(base: environment?["PATH"])]) { $1 }
            }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
            process.environment = TestEnvironment.childEnvironment(environment ?? [:])
            if let currentDirectory { process.currentDirectoryURL = currentDirectory }
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("subprocess-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            outURL = scratch.appendingPathComponent("out")
            errURL = scratch.appendingPathComponent("err")
            _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
            _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
            let inURL = scratch.appendingPathComponent("in")
            try (stdin ?? Data()).write(to: inURL)
            let handles = [try FileHandle(forReadingFrom: inURL), try FileHandle(forWritingTo: outURL), try FileHandle(forWritingTo: errURL)]
            defer { for handle in handles { try? handle.close() } }
            process.standardInput = handles[0]
            process.standardOutput = handles[1]
            process.standardError = handles[2]
            let termination = termination
            process.terminationHandler = { _ in termination.finish() }
            try process.run()
        }

        /// Waits for the child to exit, up to `timeout`; past it, SIGTERM, and SIGKILL `killGrace` later. Blocks the
        /// calling thread: for synchronous tests. An async test awaits `finished(timeout:)`.
        func wait(timeout: TimeInterval) -> Result {
            var timedOut = false
            if !termination.wait(until: Date().addingTimeInterval(timeout)) {
                timedOut = true
                stop()
                if !termination.wait(until: Date().addingTimeInterval(Self.killGrace)) {
                    kill(process.processIdentifier, SIGKILL)
                    _ = termination.wait(until: Date().addingTimeInterval(Self.killGrace))
                }
            }
            return collect(timedOut: timedOut)
        }

        /// The same, awaited: no thread waits while the child runs.
        func finished(timeout: TimeInterval) async -> Result {
            var timedOut = false
            if await !termination.finished(within: timeout) {
                timedOut = true
                stop()
                if await !termination.finished(within: Self.killGrace) {
                    kill(process.processIdentifier, SIGKILL)
                    _ = await termination.finished(within: Self.killGrace)
                }
            }
            return collect(timedOut: timedOut)
        }

        /// SIGTERM, if it still runs.
        func stop() {
            if process.isRunning { process.terminate() }
        }

        /// For a `defer`, which cannot await: SIGTERM and the exit waited for on this thread, `StoppableChild.stopBound`
        /// at most, then SIGKILL and a failed test. What it waits for is another process's exit, which needs nothing
        /// from this one.
        func stopBlocking(_ what: String = "the child", sourceLocation: SourceLocation = #_sourceLocation) {
            guard !termination.isFinished else { return }
            kill(process.processIdentifier, SIGTERM)
            if termination.wait(until: Date().addingTimeInterval(StoppableChild.stopBound)) { return }
            kill(process.processIdentifier, SIGKILL)
            Issue.record("\(what) did not exit within \(Int(StoppableChild.stopBound)) s of SIGTERM: killed",
                         sourceLocation: sourceLocation)
        }

        /// The child's output and status. Foundation on Linux learns of an exit through a descriptor the child
        /// inherits, so a grandchild left holding it (a `serve` a shell put in the background) hides even a SIGKILLed
        /// child's exit: then the status is -1 and standard error says so, rather than the test waiting for ever (or
        /// Foundation trapping when asked the status of a process it thinks runs).
        private func collect(timedOut: Bool) -> Result {
            defer { try? FileManager.default.removeItem(at: scratch) }
            let outData = (try? Data(contentsOf: outURL)) ?? Data()
            var errors = String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
            let exited = termination.isFinished
            if !exited {
                errors += "\n(Subprocess: no exit seen after SIGKILL; a process it started still holds its output)"
            }
            return Result(status: exited ? process.terminationStatus : -1,
                          stdout: String(decoding: outData, as: UTF8.self), stderr: errors, timedOut: timedOut,
                          stdoutData: outData)
        }
    }

    static func launch(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
                       currentDirectory: URL? = nil) throws -> Running {
        try Running(arguments, environment: environment, currentDirectory: currentDirectory, stdin: stdin)
    }

    @discardableResult
    static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
                    currentDirectory: URL? = nil, timeout: TimeInterval = 60) throws -> Result {
        try launch(arguments, stdin: stdin, environment: environment, currentDirectory: currentDirectory).wait(timeout: timeout)
    }

    /// `run` for a test whose own process serves what the command talks to (an in-process runner): it waits by
    /// sleeping, not by holding one of the concurrency pool's threads, which on two cores are two, and which the
    /// runner's own async work (a control API start, say) needs while the command waits for its answer.
    @discardableResult
    static func runAwaiting(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
                            currentDirectory: URL? = nil, timeout: TimeInterval = 60) async throws -> Result {
        try await launch(arguments, stdin: stdin, environment: environment, currentDirectory: currentDirectory)
            .finished(timeout: timeout)
    }

    /// Runs exactly `arguments`, no tool check: how `Tools` asks a program what it is.
    static func runUnchecked(_ arguments: [String], timeout: TimeInterval = 60) throws -> Result {
        try Running(arguments, environment: nil, currentDirectory: nil, stdin: nil, checked: false).wait(timeout: timeout)
    }
}

/// A child a test starts and stops itself (`serve`, which runs until it is told to stop), its output going where the
/// test says. Its exit is awaited through the termination handler, and stopping it never waits for ever: a child that
/// has not exited `stopBound` seconds after SIGTERM gets SIGKILL, and the test fails saying so, rather than hanging the
/// whole test process (in CI, a 90-minute time-out instead of a red test).
final class StoppableChild: @unchecked Sendable {
    let process = Process()
    private let termination = Termination()
    /// How long a child has to exit after SIGTERM: `serve` stops in well under a second, so only a hang reaches it.
    static let stopBound: TimeInterval = 30

    /// Starts `executable` with `arguments`, in this process's environment for children
    /// (`TestEnvironment.childEnvironment`) plus `environment`.
    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], standardOutput: FileHandle,
         standardError: FileHandle) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = TestEnvironment.childEnvironment(environment)
        process.standardOutput = standardOutput
        process.standardError = standardError
        let termination = termination
        process.terminationHandler = { _ in termination.finish() }
        try process.run()
    }

    var processIdentifier: Int32 { process.processIdentifier }
    var isRunning: Bool { !termination.isFinished }
    /// The exit status, or the signal that ended it; nil while it runs (Foundation traps when asked then).
    var terminationStatus: Int32? { termination.isFinished ? process.terminationStatus : nil }

    /// Whether it exits within `seconds`; holds no thread meanwhile.
    func exited(within seconds: TimeInterval) async -> Bool { await termination.finished(within: seconds) }

    /// SIGTERM, and its exit awaited; past `stopBound`, SIGKILL and a failed test. Whether it stopped on SIGTERM.
    @discardableResult
    func stop(_ what: String = "the child", sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        guard isRunning else { return true }
        kill(process.processIdentifier, SIGTERM)
        if await termination.finished(within: Self.stopBound) { return true }
        forceKill(what, sourceLocation: sourceLocation)
        _ = await termination.finished(within: Self.stopBound)
        return false
    }

    /// `stop()` for a `defer`, which cannot await: it blocks the calling thread until the child exits, `stopBound` at
    /// most (then SIGKILL and a failed test). What it waits for is another process's exit, which needs nothing from
    /// this one, and a child that stops as it should takes well under a second.
    func stopBlocking(_ what: String = "the child", sourceLocation: SourceLocation = #_sourceLocation) {
        guard isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if termination.wait(until: Date().addingTimeInterval(Self.stopBound)) { return }
        forceKill(what, sourceLocation: sourceLocation)
        _ = termination.wait(until: Date().addingTimeInterval(Self.stopBound))
    }

    private func forceKill(_ what: String, sourceLocation: SourceLocation) {
        kill(process.processIdentifier, SIGKILL)
        let pid = process.processIdentifier
        Issue.record("\(what) (process \(pid)) did not exit within \(Int(Self.stopBound)) s of SIGTERM: killed",
                     sourceLocation: sourceLocation)
    }
}

/// A child's exit: the library's `ProcessExit` (the report card's command loads wait on it too).
typealias Termination = ProcessExit
