import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesWire

/// `/etc/hosts` lines that make every `NAME.fixtures.test` resolve to loopback.
package enum HostsFile {
    /// `address` must be an IP address: users pipe these lines to `sudo tee -a /etc/hosts`, so anything else (a space,
    /// a second name, a newline and another line) would be written into their hosts file as given.
    public static func lines(for scenarios: [Scenario], address: String = "127.0.0.1") throws -> String {
        try validate(address: address)
        var text = "# swift-tls-fixtures: ATS tests must use these names (localhost is exempt from ATS)\n"
        for scenario in scenarios {
            for host in scenario.fixtureHosts { text += "\(address)\t\(host)\n" }
        }
        return text
    }

    package static func validate(address: String) throws {
        guard IPAddress.parse(address) != nil else { throw InvalidHostsAddress(address: address) }
    }
}

/// An address for the hosts file that is not an IP address.
package struct InvalidHostsAddress: CodedError {
    package typealias Code = ErrorCode<InvalidHostsAddress>

    package var code: Code { .notAnIPAddress }
    package let address: String

    package init(address: String) { self.address = address }

    package var reason: String { "\"\(address.escapingControlCharacters)\" is not an IP address" }
    package var fix: String? { "the hosts file maps the names to one, such as 127.0.0.1 or ::1" }
}

extension ErrorCode where Owner == InvalidHostsAddress {
    package static var notAnIPAddress: Self { Self("notAnIPAddress") }
}
