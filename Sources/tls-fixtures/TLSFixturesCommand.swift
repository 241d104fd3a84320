import ArgumentParser
import TLSFixtures

@main
struct TLSFixturesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls-fixtures",
        abstract: "Deliberately weak or broken TLS servers on localhost, for testing certificate pinning and App Transport Security.",
        discussion: """
            Every scenario (TLS 1.0, no forward secrecy, SHA-1 or 1024-bit certificates, self-signed, wrong host, \
            expired, …) is a real OpenSSL server with certificates from a built-in CA that you install once on \
            your simulators and devices.

            Certificates live in one store per user (--dir, else $TLS_FIXTURES_CERTS, else \
            \(CertificateStore.defaultDirectory.path)), shared with the TLSFixtures library in your tests.
            """,
        version: "\(TLSFixturesVersion.current) (linked with \(LinkedOpenSSL.versionText))",
        subcommands: [ServeCommand.self, ScenariosCommand.self, ProbeCommand.self, ATSCommand.self, NSCCommand.self,
                      PinsCommand.self, HostsCommand.self, CACommand.self, CertCommand.self, PrepareCommand.self,
                      WaitCommand.self, ConnectionsCommand.self, ReportCommand.self, SimulatorCommand.self,
                      LegacyHelperCommand.self]
    )

    static func main() async {
        // First, before anything touches OpenSSL: no exit-time clean-up racing keys still generating (see its comment).
        OpenSSLRuntime.initializeWithoutExitCleanup()
        CLILogging.bootstrap()
        // Kept for the error path: its store is the one the printed fix commands must name.
        var parsed: ParsableCommand? = nil
        do {
            var command = try parseAsRoot()
            parsed = command
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // Library errors speak the library's language; the CLI's line names the flag (FlagHints).
            if let line = FlagHints.line(for: error, store: (parsed as? StoreCommand)?.storeOptions) {
                fail(CLIError(line), code: JSONError.code(of: error))
            }
            if exitCode(for: error) == .validationFailure {
                // A bad option value: the parser's own line (which names the valid values), without the usage text it
                // would add, as every other bad input gets one line. Six or more values come as a list: made one line.
                let message = message(for: error).replacingOccurrences(of: ":\n  - ", with: ": ").replacingOccurrences(of: "\n  - ", with: ", ")
                Output.error("Error: \(message)")
                JSONError.printIfAsked(message: message, code: "usage", exitCode: ExitCode.validationFailure.rawValue)
                exit(withError: ExitCode.validationFailure)
            }
            fail(error, code: JSONError.code(of: error))
        }
    }

    /// Exits with `error` as ArgumentParser would (one line on standard error, its exit status), and with `--json` the
    /// same error as JSON on standard output too, where a script reading the command's JSON looks.
    private static func fail(_ error: any Error, code: String) -> Never {
        let status = exitCode(for: error)
        // An ExitCode is a verdict (probe's 2–5) whose JSON report is already printed, not an error to report.
        if status != .success && !(error is ExitCode) {
            JSONError.printIfAsked(message: message(for: error), code: code, exitCode: status.rawValue)
        }
        exit(withError: error)
    }
}
