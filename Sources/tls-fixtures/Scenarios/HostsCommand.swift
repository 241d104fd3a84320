import ArgumentParser
import TLSFixtures

struct HostsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hosts",
        abstract: "Print /etc/hosts lines mapping every NAME.fixtures.test to 127.0.0.1.",
        discussion: """
            ATS does not apply to localhost or loopback IP addresses by default (iOS 17 brought only external IP \
            addresses under ATS), so ATS tests must connect by a qualified \
            name. Append these lines to /etc/hosts on the Mac running the simulator:
              tls-fixtures hosts | sudo tee -a /etc/hosts
            """
    )

    @OptionGroup var source: ScenarioSourceOptions

    @Option(help: "IP address the names map to.")
    var address = "127.0.0.1"

    func validate() throws {
        do { try HostsFile.validate(address: address) } catch let error as InvalidHostsAddress { throw CLIError("--address: \(error)") }
    }

    func run() async throws {
        print(try HostsFile.lines(for: try source.catalog().scenarios, address: address), terminator: "")
    }
}
