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
        subcommands: [ServeCommand.self, ScenariosCommand.self, ProbeCommand.self, ATSCommand.self, PinsCommand.self,
                      HostsCommand.self, CACommand.self, CertCommand.self, PrepareCommand.self, SimulatorCommand.self]
    )

    static func main() async {
        CLILogging.bootstrap()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
