import Foundation

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
    final class Running {
        let process = Process()
        private let scratch: URL
        private let outURL: URL
        private let errURL: URL

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
            try process.run()
        }

        func wait(timeout: TimeInterval) -> Result {
            let deadline = Date().addingTimeInterval(timeout)
            var timedOut = false
            while process.isRunning {
                if Date() > deadline { timedOut = true; process.terminate(); break }
                usleep(5_000)
            }
            process.waitUntilExit()
            defer { try? FileManager.default.removeItem(at: scratch) }
            let outData = (try? Data(contentsOf: outURL)) ?? Data()
            return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self),
                          timedOut: timedOut, stdoutData: outData)
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
    static func runAwaiting(_ arguments: [String], timeout: TimeInterval = 60) async throws -> Result {
        let running = try launch(arguments)
        let deadline = Date().addingTimeInterval(timeout)
        while running.process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return running.wait(timeout: 0)
    }

    /// Runs exactly `arguments`, no tool check: how `Tools` asks a program what it is.
    static func runUnchecked(_ arguments: [String], timeout: TimeInterval = 60) throws -> Result {
        try Running(arguments, environment: nil, currentDirectory: nil, stdin: nil, checked: false).wait(timeout: timeout)
    }
}
