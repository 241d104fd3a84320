import Foundation
import NIOCore
import Testing
@testable import TLSFixtures

/// Issue 16, item 2: `--timeout inf|nan|1e20|-inf` trapped ("Double value cannot be converted", SIGILL), `0` meant no
/// limit and `-1` was accepted; `serve --handshake-timeout inf|1e12` and `--idle-timeout 1e300` trapped the same way.
/// Every seconds option now takes 0.001–86400 and says so in one line; the library refuses the same values.
@Suite("Duration options and time limits")
struct DurationOptionTests {
    static let badValues: [(String, String)] = [
        ("inf", "inf"), ("nan", "nan"), ("-inf", "-inf"), ("1e20", "1e+20"), ("1e12", "1000000000000"), ("1e300", "1e+300"),
        ("-1", "-1"), ("0", "0"), ("0.0001", "0.0001"),
    ]

    /// Each command with a seconds option, with the rest of a valid command line.
    static let commands: [(option: String, arguments: [String])] = [
        ("--timeout", ["probe", "127.0.0.1:9"]),
        ("--timeout", ["ats", "check", "https://x.fixtures.test/"]),
        ("--timeout", ["ats", "diagnose", "https://x.fixtures.test/"]),
        ("--timeout", ["ats", "exception", "https://x.fixtures.test/"]),
        ("--handshake-timeout", ["serve", "ats-compliant"]),
        ("--idle-timeout", ["serve", "ats-compliant"]),
        ("--header-timeout", ["serve", "ats-compliant"]),
    ]

    @Test("every seconds option refuses non-finite, zero, negative and huge values with one exact line",
          arguments: commands)
    func refused(option: String, arguments: [String]) throws {
        for (value, shown) in Self.badValues {
            // `--option=value`, so `-inf` and `-1` are read as values, as a user's shell passes them.
            let result = try TestEnvironment.tlsFixtures(arguments + ["\(option)=\(value)"], timeout: 30)
            #expect(result.status == 1, "\(arguments) \(option)=\(value): exit \(result.status): \(result.combined)")
            #expect(result.stderr == "Error: \(option) must be a number of seconds from 0.001 to 86400 (a day), not \(shown)\n",
                    "\(arguments) \(option)=\(value)")
        }
    }

    @Test("the library refuses the same values: Timeout, TLSProbe and FixtureServer")
    func library() async throws {
        for value in [Double.infinity, -.infinity, .nan, 1e20, 0, -1, 86_400.5] {
            #expect(throws: InvalidTimeout.self) { try Timeout(seconds: value) }
            var options = ProbeOptions()
            options.timeout = value
            #expect(throws: InvalidTimeout.self) { try TLSProbe(options: options).probe(ProbeTarget(host: "127.0.0.1", port: 9)) }
        }
        #expect(try Timeout(seconds: 86_400).timeAmount == .seconds(86_400))
        #expect(try Timeout(seconds: 0.001).timeAmount == .milliseconds(1))
        #expect("\(try Timeout(seconds: 1.5))" == "1.5 s")

        for (field, configuration) in [
            ("handshakeTimeout", FixtureConfiguration(handshakeTimeout: .zero)),
            ("handshakeTimeout", FixtureConfiguration(handshakeTimeout: .seconds(-5))),
            ("idleTimeout", FixtureConfiguration(idleTimeout: .hours(25))),
            ("headerTimeout", FixtureConfiguration(headerTimeout: .nanoseconds(1))),
        ] {
            do {
                let fixture = try await FixtureServer.start("ats-compliant", store: TestEnvironment.sharedStore, configuration: configuration)
                await fixture.stop()
                Issue.record("\(field) out of range was accepted")
            } catch let error as InvalidTimeout {
                #expect(error.name == field)
                #expect(error.description.hasPrefix("\(field) must be a number of seconds from 0.001 to 86400"))
            }
        }
    }
}
