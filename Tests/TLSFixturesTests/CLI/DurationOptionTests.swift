import Foundation
import NIOCore
import Testing
@testable import TLSFixtures

/// This suite's store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
private var durationStore: CertificateStore { TestEnvironment.suiteStore("DurationOption") }

/// Issue 16, item 2: `--timeout inf|nan|1e20|-inf` trapped ("Double value cannot be converted", SIGILL), `0` meant no
/// limit and `-1` was accepted; `serve --handshake-timeout inf|1e12` and `--idle-timeout 1e300` trapped the same way.
/// Every seconds option now takes 0.001–86400 and says so in one line; the library refuses the same values.
@Suite("Duration options and time limits", .ownThreads)
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
                let fixture = try await FixtureServer.start("ats-compliant", store: durationStore,
                                                            configuration: configuration)
                await fixture.stop()
                Issue.record("\(field) out of range was accepted")
            } catch let error as InvalidTimeout {
                #expect(error.name == field)
                #expect(error.description.hasPrefix("\(field) must be a number of seconds from 0.001 to 86400"))
            }
        }
    }

    /// Days are durations too: `ca init --days 9223372036854775807` and `cert issue --not-before -9223372036854775807`
    /// trapped converting the date to time_t, and `--days 999999999` signed a certificate valid for 2.7 million
    /// years. Every number of days reaches at most 100 years either way, every date 1950–9999, with one line.
    @Test("every number of days or date has a range, with one exact line: ca init, cert issue and scenario files")
    func days() throws {
        let store = TestEnvironment.temporaryDirectory("days").appendingPathComponent("store")
        for value in ["36526", "999999999", "9223372036854775807"] {
            let result = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path, "--days=\(value)"])
            #expect(result.status == 1 && result.stderr == "Error: --days is at most 36525 (100 years), not \(value)\n", "\(result.combined)")
        }
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("ca/root.key").path), "a CA was made")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path]).status == 0)
        let out = TestEnvironment.temporaryDirectory("daysout").path
        let issue = ["cert", "issue", "--dir", store.path, "--name", "d", "--host", "a.test", "--key", "ec:p256", "--out-dir", out, "--force"]
        for (option, line) in [
            ("--days=9223372036854775807", "--days is at most 36525 (100 years), not 9223372036854775807"),
            ("--not-before=-9223372036854775807", "--not-before of -9223372036854775807 days from now is more than 100 years away (at most 36525 days either way)"),
            ("--not-after=36526", "--not-after of 36526 days from now is more than 100 years away (at most 36525 days either way)"),
            ("--not-after=1949-12-31", "--not-after 1949-12-31T00:00:00Z is outside the dates a certificate can carry (1950-01-01 to 9999-12-31)"),
        ] {
            let result = try TestEnvironment.tlsFixtures(issue + [option])
            #expect(result.status == 1 && result.stderr == "Error: \(line)\n", "\(option): \(result.combined)")
        }
        // The edges are accepted, and the certificate carries them (read back by openssl, not by our own code).
        let edge = try TestEnvironment.tlsFixtures(issue + ["--not-before=1950-01-01", "--not-after=9999-12-31"])
        #expect(edge.status == 0, "\(edge.combined)")
        let dates = try Subprocess.run(["openssl", "x509", "-noout", "-dates", "-in", "\(out)/d.pem"])
        #expect(dates.stdout.contains("notBefore=Jan  1 00:00:00 1950 GMT") && dates.stdout.contains("notAfter=Dec 31 00:00:00 9999 GMT"), "\(dates.combined)")

        let folder = TestEnvironment.temporaryDirectory("daysscenario")
        try Data(#"{"name": "a", "group": "custom", "summary": "x", "expect": {"ats": "allow"}, "certificate": {"validity": {"notBefore": -1, "notAfter": 100000}}}"#.utf8)
            .write(to: folder.appendingPathComponent("a.json"))
        let listed = try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", folder.path])
        #expect(listed.status == 1 && listed.stderr == "Error: \(folder.path)/a.json: at certificate.validity: notAfter of 100000 days from now is more than 100 years away (at most 36525 days either way)\n",
                "\(listed.combined)")

        // The library refuses the same, before signing: Int.min days must not trap on the way either.
        #expect(throws: PKIError.self) { try Validity.days(Int.min).check() }
        var request = CertificateRequest(name: "far")
        request.hosts = ["a.test"]
        request.validity = Validity(notBefore: .daysFromNow(-1), notAfter: .daysFromNow(Int.max))
        let far = #expect(throws: PKIError.self) { try CertificateStore(directory: store).issue(request) }
        #expect(far?.code == .invalidValidity)
        #expect(far?.description == "notAfter of \(Int.max) days from now is more than 100 years away (at most 36525 days either way)")
    }
}
