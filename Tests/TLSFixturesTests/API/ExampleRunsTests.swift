import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesClient

/// The documentation's refusal examples run twice more, each in a private mount namespace where /etc/hosts names only
/// localhost and URLSession routes through the runner's proxy (`FixtureProxy.environment`): once with the system's
/// trust store replaced by the kit's CA, where every example must pass, and once with the system's own, where every
/// one must fail on the control half for the untrusted CA and say how to trust it. In the main run (no namespace) they
/// must fail on the control half too (`ExampleExpectation`). So a new user's first green run proves the set-up.
@Suite("Documentation examples: green once the CA is trusted, red before", .serialized)
struct ExampleRunsTests {
    static let xctestCases = ["TLSFixturesTests.MacReadmeExample", "TLSFixturesTests.IOSReadmeExample",
                              "TLSFixturesTests.ReportCardExample"]
    static let swiftTestingSuites = "MacSwiftTestingExampleTests|RemoteSwiftTestingExampleTests"

    /// The test executable, in the namespace, as `xctest` (XCTest cases) or with Swift Testing's filter.
    static func rerun(_ arguments: [String], trusting ca: String?, environment: [String: String]) async throws
        -> Subprocess.Result
    {
        let executable = try #require(ProductsDirectory.loadedImagePath())
        let hosts = try TestEnvironment.file(Data("127.0.0.1\tlocalhost\n::1\tlocalhost\n".utf8), name: "hosts")
        let prefix = getuid() == 0 ? ["unshare", "--mount"] : ["unshare", "--mount", "--map-root-user"]
        let bundle = ca.map { "mount --bind '\($0)' /etc/ssl/certs/ca-certificates.crt && " } ?? ""
        let script = "mount --bind '\(hosts)' /etc/hosts && \(bundle)exec -a xctest \"$@\""
        return try await Subprocess.runAwaiting(prefix + ["bash", "-c", script, "sh", executable] + arguments,
                                                environment: environment, timeout: 300)
    }

    @Test("each refusal example passes with the CA trusted and the proxy set, and fails for the CA without it",
          .requires(Tools.curl), .enabled(if: ProxyEndToEndTests.namespace == nil,
                                          Comment(rawValue: ProxyEndToEndTests.namespace ?? "")))
    func trustedAndNot() async throws {
        let runner = try await ControlAPIRunner.start(["ats-compliant", "expired", "pin-rotated-key", "pinned"])
        defer { runner.stop() }
        let ca = try TestEnvironment.file(try CertificateStore.resolved().ca().certificate.pem, name: "ca.pem")
        #expect(try runner.store.ca().certificate.pem == CertificateStore.resolved().ca().certificate.pem,
                "the runner and the in-process examples must share one CA")
        var environment = FixtureProxy(host: "localhost", port: runner.base).environment
        environment["TLS_FIXTURES_URL"] = runner.url
        for (trust, expected) in [(ca as String?, ExampleExpectation.pass), (nil, .untrustedCA)] {
            environment[ExampleExpectation.variable] = expected.rawValue
            for name in Self.xctestCases {
                let run = try await Self.rerun([name], trusting: trust, environment: environment)
                #expect(run.status == 0 && run.combined.contains("Executed 1 test, with 0 failures"),
                        "\(name), \(expected): \(run.combined.suffix(3000))")
            }
            let run = try await Self.rerun(["--testing-library", "swift-testing", "--filter", Self.swiftTestingSuites],
                                           trusting: trust, environment: environment)
            #expect(run.status == 0 && run.combined.contains("Test run with 2 tests in 2 suites passed"),
                    "Swift Testing examples, \(expected): \(run.combined.suffix(3000))")
        }
    }
}
