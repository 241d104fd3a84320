import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures
import TLSFixturesClient

// Issue 26: the README's "Testing an iOS app" as a new user walks it; each test judged from outside — a real runner,
// the CLI's exit status and output, openssl reading what was made.

/// The client library while its runner is starting, and when there is none (issue 26, item 1).
@Suite("TLSFixturesClient waits for a runner that is starting", .serialized)
struct RunnerStartupGraceTests {
    @Test("a request made before serve listens is answered once it does (the README's pre-action race)")
    func lateRunner() async throws {
        let base = try ServeEndToEndTests.freePortBase()
        let url = URL(string: "http://localhost:\(base)")!
        var fixtures = RemoteFixtures(runner: url)
        fixtures.startupGrace = 300
        let client = fixtures
        let ended = NIOLockedValueBox(false)
        let listing = Task {
            defer { ended.withLockedValue { $0 = true } }
            return try await client.fixtures()
        }
        // The client has found nothing listening (and is retrying) before the runner is even started.
        // Two minutes detect a hang: synchronous tests (a client matrix run, a browser) can hold both threads of a
        // two-core pool for a minute, and Poll looks once more after its deadline.
        try await Poll.require("a refused first request", timeout: 120) {
            RemoteFixtures.waitingSince(url) != nil || ended.withLockedValue { $0 }
        }
        if RemoteFixtures.waitingSince(url) == nil {
            // The request ended before any runner started: say how, rather than wait out a grace for nothing.
            let outcome = await listing.result
            Issue.record("the first request ended without a refusal, before serve started: \(outcome)")
            return
        }
        let serve = try ServeEndToEndTests.ServeProcess(["ats-compliant", "--port-base", "\(base)",
                                                         "--dir", TestEnvironment.sharedStore.directory.path])
        defer { serve.kill() }
        let running = try await listing.value
        #expect(running.isEmpty)
        #expect(RemoteFixtures.waitingSince(url) == nil, "an answer did not end the wait")
        // And what it waited for works: a fixture starts on the runner that came up late.
        let fixture = try await client.start("ats-compliant")
        #expect(Ports.accepts(fixture.port))
        await fixture.stop()
    }

    @Test("after the grace: one line naming the URL, the wait and `tls-fixtures serve`; later calls do not wait again",
          .timeLimit(.minutes(1)))
    func graceRunsOut() async throws {
        let port = try Ports.unused()
        let url = URL(string: "http://127.0.0.1:\(port)")!
        var first = RemoteFixtures(runner: url)
        first.startupGrace = 0.5
        let error = try await #require(throws: RemoteFixtureError.self) { try await first.start("expired") }
        #expect(error.code == .runnerUnreachable)
        let text = "\(error)"
        #expect(text.contains(url.absoluteString) && text.contains("tls-fixtures serve"), "\(text)")
        let found = text.range(of: #"for [0-9.]+ s \(the start-up grace"#, options: .regularExpression)
        let waited = try #require(found.map { text[$0] }, "\(text)")
        #expect(Double(waited.split(separator: " ")[1]).map { $0 >= 0.5 } == true, "\(text)")
        #expect(!text.contains("\n"))
        // The grace is the process's, per runner URL: a second value with a far longer one fails at once, not in
        // 300 s (the time limit above stops a test that waits again).
        var second = RemoteFixtures(runner: url)
        second.startupGrace = 300
        await #expect(throws: RemoteFixtureError.runnerUnreachable(url: url, reason: "")) {
            try await second.fixtures()
        }
    }
}

/// `TLS_FIXTURES_URL` and the runner URL: what is wrong with a value is said, never replaced by the default (item 6).
@Suite("TLSFixturesClient: a runner URL that cannot be one is named")
struct RunnerURLTests {
    @Test("each bad value gets one line naming the value and what is wrong with it", arguments: [
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("not a url", "it is not a URL"),
        ("localhost:38076", "it has no http:// in front (write http://localhost:38076)"),
        ("https://localhost:9800", "the runner answers plain HTTP"),
        ("ftp://localhost:9800", "its scheme is ftp, not http"),
        ("http://", "it names no host"),
        ("http://localhost:9800/?x=1", "it has a query or fragment"),
    ])
    func badValues(value: String, problem: String) throws {
        let error = try #require(throws: RemoteFixtureError.self) {
            try RemoteFixtures.environmentRunnerURL(["TLS_FIXTURES_URL": value])
        }
        #expect(error.code == .invalidRunnerURL)
        let text = "\(error)"
        #expect(text.contains("TLS_FIXTURES_URL is \(value.debugDescription)") && text.contains(problem), "\(text)")
        #expect(!"\(error)".contains("\n"))
    }

    @Test("good values and the default")
    func goodValues() throws {
        #expect(try RemoteFixtures.environmentRunnerURL([:]) == URL(string: "http://localhost:9800"))
        for value in ["http://10.0.0.2:9900", "http://[::1]:9900/", "http://localhost:9800/"] {
            #expect(try RemoteFixtures.environmentRunnerURL(["TLS_FIXTURES_URL": value]) == URL(string: value))
        }
    }

    @Test("a call through a bad runner URL throws that error at once, and contacts nothing")
    func callsThrow() async throws {
        let fixtures = RemoteFixtures(runner: URL(string: "https://localhost:9800")!)
        let error = try await #require(throws: RemoteFixtureError.self) { try await fixtures.start("expired") }
        #expect(error.code == .invalidRunnerURL && "\(error)".contains("RemoteFixtures(runner:)"), "\(error)")
    }

    @Test("a program linking TLSFixturesClient alone, with TLS_FIXTURES_URL=\"not a url\", says so")
    func fromTheEnvironment() async throws {
        let check = TestEnvironment.productsDirectory.appendingPathComponent("tls-fixtures-client-check").path
        var environment = ProcessInfo.processInfo.environment
        environment["TLS_FIXTURES_URL"] = "not a url"
        let result = try await Subprocess.runAwaiting([check, "expired"], environment: environment, timeout: 60)
        #expect(result.status == 1)
        let said = #"TLS_FIXTURES_URL is \"not a url\", which cannot be the runner's URL: it is not a URL"#
        #expect(result.stdout.contains(said), "\(result.combined)")
        #expect(!result.stdout.contains("no tls-fixtures runner answers"), "the default was tried: \(result.stdout)")
    }
}

/// What the client gets from a runner: the scenarios it lists, the unknown-name hint, inline scenarios held to the
