import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesCLISupport
import TLSFixturesClient
import TLSFixturesRunner

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tls-fixtures serve` with its standard output and standard error in one file, in the order it wrote them, as a
/// terminal shows them.
final class InterleavedServe: @unchecked Sendable {
    let child: StoppableChild
    let log: URL

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        log = TestEnvironment.temporaryDirectory("serve-log").appendingPathComponent("out")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        child = try StoppableChild(TestEnvironment.cli, ["serve"] + arguments, environment: environment,
                                   standardOutput: handle, standardError: handle)
    }

    var text: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    var lines: [String] { text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }

    /// Waits for `needle` to be written (the file is the only channel a child's output has), looking every 50 ms; false
    /// when serve exits or `timeout` passes first. The timeout only detects a hang.
    func waitFor(_ needle: String, timeout: TimeInterval) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if text.contains(needle) { return true }
            if !child.isRunning || Date() >= deadline { return text.contains(needle) }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// For a `defer`: SIGTERM, bounded (`StoppableChild.stopBlocking`).
    func stop() { child.stopBlocking("serve") }
}

/// What `body` threw (nil when it returned) and how long it took.
private func outcome(_ body: @Sendable () async throws -> Void) async -> (error: Error?, took: Duration) {
    let began = ContinuousClock.now
    do {
        try await body()
        return (nil, ContinuousClock.now - began)
    } catch {
        return (error, ContinuousClock.now - began)
    }
}

/// Issue 26, items 1, 2 and 4, and issue 29's lines of `serve`, against a real `serve` on an empty store. A scenario
/// of the test's own, `held` (an RSA-4096 key: made in the background, as a first run makes its slow keys), is held
/// before it is prepared by serve's test-only preparation gate (`TestHooks.preparationGateVariable`) for as long as a
/// file named after it exists: it stays preparing for as long as the test asks about it, whatever this machine's speed.
/// Without the gate it would serve within seconds, and the test would fail.
@Suite("Ready when it says so: serve on an empty store, end to end")
struct FirstRunReadinessTests {
    @Test("the dashboard line first, `wait` for what serves, refused (not reset) while preparing, the client at once",
          .requires(Tools.curl, Tools.openssl))
    func firstRun() async throws {
        let store = TestEnvironment.temporaryDirectory("first-run-ready")
        let base = try ServeEndToEndTests.freePortBase()
        let url = "http://localhost:\(base)"
        let scenarios = TestEnvironment.temporaryDirectory("held-scenario")
        try Data(#"""
            {"name": "held", "group": "custom", "summary": "an RSA-4096 key, held back by the test until it is done",
             "tls": {}, "certificate": {"key": "rsa:4096"}, "expect": {"ats": "allow"}}
            """#.utf8).write(to: scenarios.appendingPathComponent("held.json"))
        let gate = TestEnvironment.temporaryDirectory("preparation-gate")
        try Data().write(to: gate.appendingPathComponent("held"))
        let serve = try InterleavedServe(["ats-compliant", "expired", "held", "--scenarios", scenarios.path,
                                          "--port-base", "\(base)", "--dir", store.path],
                                         environment: [TestHooks.preparationGateVariable: gate.path])
        defer { serve.stop() }

        // `wait` for two named scenarios: exit 0 and one line, once they serve (the runner not listening yet at first).
        // The timeout only detects a hang.
        let named = try await TestEnvironment.tlsFixturesAwaiting(
            ["wait", url, "--scenario", "ats-compliant", "--scenario", "expired", "--timeout", "600"], timeout: 660)
        #expect(named.status == 0 && named.stdout == "\(url): ready: ats-compliant, expired serving\n",
                "\(named.combined)")

        // Item 4: the dashboard's line comes first, before the line about the key made in the background.
        #expect(try await serve.waitFor("held: making the rsa:4096 key", timeout: 300), "\(serve.text)")
        #expect(serve.lines.first?.hasPrefix("Dashboard: \(url)/  (catalog as JSON: ") == true, "\(serve.text)")

        // Item 2: held's port refuses while it is prepared: a real TLS client says "connection refused".
        let catalog = try ScenarioCatalog.withUserScenarios(from: scenarios)
        let port = try #require(catalog.port(of: try catalog.scenario(named: "held"), portBase: base))
        let health = "\(url)/api/health?scenarios=held"
        // The health's status and what it waits for, as curl gets them.
        func asked() async throws -> (status: String, waitingFor: [String]) {
            let answer = try await Subprocess.runAwaiting(["curl", "-sS", "-w", "\n%{http_code}", health])
            let lines = answer.stdout.split(separator: "\n")
            let body = try FixtureAPI.decoder().decode(
                RunnerHealth.self, from: Data(lines.dropLast().joined(separator: "\n").utf8))
            return (String(lines.last ?? ""), body.waitingFor)
        }
        let before = try await asked()
        #expect(before.status == "503" && before.waitingFor == ["held"], "\(before)")
        // Refused because serve holds the port (bound, not listening), not because nobody does: an unbound port
        // refuses too. Asked before any client connects to it.
        #expect(Ports.isBound(port), "held's port is not held while it is prepared")
        let sClient = try await Subprocess.runAwaiting(["openssl", "s_client", "-connect", "127.0.0.1:\(port)"],
                                                       stdin: Data(), timeout: 60)
        // ECONNREFUSED is 111 and ECONNRESET 104 on Linux (asm-generic/errno.h), as s_client prints them.
        #expect(sClient.combined.contains("errno=111") && !sClient.combined.contains("errno=104"),
                "\(sClient.combined)")
        let curl = try await Subprocess.runAwaiting(["curl", "-sS", "-o", "/dev/null", "https://localhost:\(port)/"],
                                                    timeout: 60)
        #expect(curl.status == 7, "curl should fail to connect (7), not in TLS (35): \(curl.combined)")
        // … and it was still preparing and held after both, so both met the port as it is while preparing.
        let after = try await asked()
        #expect(after.status == "503" && after.waitingFor == ["held"], "\(after)")
        #expect(Ports.isBound(port), "held's port was let go while it is prepared")

        // Item 1: `wait` for everything names what it still waits for, and so do the client library and the library's
        // own wait; held stays preparing until the gate opens, so each runs out. 20 s is no speed claim: only a
        // health request slower than the whole wait would change what they say. The three run at once.
        var client = RemoteFixtures(runner: URL(string: url)!, session: "first-run")
        client.startupGrace = 0
        let waiting = client
        async let all = TestEnvironment.tlsFixturesAwaiting(["wait", url, "--timeout", "20"])
        async let clientWait = outcome { _ = try await waiting.waitUntilReady(timeout: 20) }
        async let libraryWait = outcome { _ = try await RunnerReadiness.wait(runner: URL(string: url)!, timeout: 20) }
        let everything = try await all
        #expect(everything.status == 1 && everything.stderr.contains("is not ready after 20 s: still preparing ")
                && everything.stderr.contains("held"), "\(everything.combined)")
        #expect(everything.stderr.split(separator: "\n").count == 1 && everything.stderr.contains("--timeout"),
                "\(everything.stderr)")
        // A runner answered, so starting one there is no fix; where nothing answers, it is.
        #expect(!everything.stderr.contains("start `tls-fixtures serve` there"), "\(everything.stderr)")
        let notYet = await clientWait
        let notReady = try #require(notYet.error as? RemoteFixtureError, "\(String(describing: notYet.error))")
        #expect(notReady.code == .notReady && notReady.reason.contains("still preparing ")
                && notReady.reason.contains("held"), "\(notReady)")
        // It asks until the timeout given, not until one interval before it (a floor: load only lengthens a wait).
        #expect(notYet.took >= .seconds(20), "waitUntilReady gave up early")
        let library = await libraryWait
        #expect(library.error is RunnerError, "\(String(describing: library.error))")
        #expect(library.took >= .seconds(20), "RunnerReadiness.wait (tls-fixtures wait) gave up early")

        let nobody = try await TestEnvironment.tlsFixturesAwaiting(
            ["wait", "http://localhost:\(try Ports.freeRange(count: 1))", "--timeout", "1"])
        #expect(nobody.status == 1 && nobody.stderr.contains("nothing answers there")
                && nobody.stderr.contains("start `tls-fixtures serve` there"), "\(nobody.combined)")
        let never = try await TestEnvironment.tlsFixturesAwaiting(
            ["wait", url, "--scenario", "ssl-v3", "--timeout", "60"])
        #expect(never.status == 1 && never.stderr.contains("ssl-v3 will not be served"), "\(never.combined)")
        let json = try await TestEnvironment.tlsFixturesAwaiting(["wait", url, "--scenario", "expired", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])
        #expect(Set(object.keys) == ["status", "ready", "summary", "waitingFor", "unavailable", "scenarios"],
                "\(object)")
        #expect(object["ready"] as? Bool == true && object["status"] as? String == "ready")

        // The client library: ready for what it needs, and a fixture at its first try (no start-up grace).
        let ready = try await client.waitUntilReady(timeout: 60, scenarios: ["expired"])
        #expect(ready.ready && ready.waitingFor.isEmpty)
        let fixture = try await client.start("expired")
        #expect(Ports.accepts(fixture.port))
        await fixture.stop()

        // Issue 29, item 11: serve says where the CA is, and its proxy line works as printed.
        #expect(try await serve.waitFor("Ctrl-C to stop", timeout: 300), "\(serve.text)")
        #expect(serve.text.contains("CA: \(store.path)/ca/root.pem"), "\(serve.text)")
        let proxyLine = try #require(serve.lines.map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("curl --proxy ") }, "\(serve.text)")
        #expect(!proxyLine.contains("PORT") && proxyLine.contains("--cacert"), "\(proxyLine)")
        let loaded = try await Subprocess.runAwaiting(["sh", "-c", proxyLine], timeout: 60)
        #expect(loaded.status == 0 && loaded.stdout.contains(#""scenario":"ats-compliant""#),
                "\(proxyLine): \(loaded.combined)")

        // Still preparing everywhere a user looks: the catalog document and the dashboard.
        let listed = try JSONDecoder().decode(CatalogDocument.self, from: try await Subprocess.runAwaiting(
            ["curl", "-sSf", "\(url)/scenarios.json"]).stdoutData)
        #expect(listed.scenarios.first { $0.name == "held" }?.status == .preparing, "\(listed.scenarios)")
        let page = try await Subprocess.runAwaiting(["curl", "-sSf", "\(url)/"]).stdout
        #expect(page.contains("preparing"), "the dashboard does not say held is preparing")
        // SIGTERM stops everything without waiting for what is still being prepared (held waits at its gate).
        try #require(await serve.child.stop("serve"), "serve did not stop on SIGTERM while held was preparing")
        #expect(serve.child.terminationStatus == 0, "\(serve.text)")
        #expect(!Ports.accepts(base) && !Ports.accepts(port) && !Ports.isBound(port),
                "serve left its dashboard or held's port bound after SIGTERM")
    }

    @Test("serve --port-base below 1024 says what lives there",
          .enabled(if: getuid() == 0, "binding below 1024 needs root"))
    func privilegedPortBase() async throws {
        // A base below 1024 whose dashboard and `expired` ports are free here.
        let expired = try ScenarioCatalog.builtIn.scenario(named: "expired")
        let offset = try #require(ScenarioCatalog.builtIn.port(of: expired, portBase: 0))
        let base = try #require((600..<900).first { !Ports.accepts($0) && !Ports.accepts($0 + offset) })
        let serve = try InterleavedServe(["expired", "--port-base", "\(base)",
                                          "--dir", TestEnvironment.sharedStoreDirectory.path])
        defer { serve.stop() }
        #expect(try await serve.waitFor("Ctrl-C to stop", timeout: 600), "\(serve.text)")
        #expect(serve.lines.first?.hasPrefix("Dashboard: http://localhost:\(base)/") == true, "\(serve.text)")
        #expect(serve.text.contains("warning: --port-base \(base) puts the dashboard and fixtures on ports \(base)–"),
                "\(serve.text)")
        #expect(serve.text.contains("below 1024 where system services live"), "\(serve.text)")
    }
}

/// docs/ios.md's Xcode pre-action and GitHub Actions step, as written there, run here as far as Linux allows, in `sh`
/// (dash, stricter than macOS's): `serve` started in the background on an empty store, `tls-fixtures wait`, then a
/// TLSFixturesClient call that must succeed at its first try; the pre-action's recorded process id must be `serve`'s,
/// and stopping it must stop the runner (a backgrounded `a || b &` records a shell's instead). The only changes: this
/// build's binary first on PATH, a free port base for 9800 (the scripts get `TLS_FIXTURES_URL`, which `wait` reads as
/// the tests do, and `serve` gets `--port-base`), files in a scratch folder for /tmp's, and a store of its own
/// (`TLS_FIXTURES_CERTS`), into which the RSA-4096 and -8192 keys of the tests' store are copied (made there first,
/// once per run), so the wait is for the first run's every other key and certificate, never for a race with RSA-8192.
@Suite("Ready when it says so: docs/ios.md's pre-action and CI step", .serialized)
struct ReadmeRecipeTests {
    static let readme = (try? Documentation.page("docs/ios.md")) ?? ""

    /// The shell lines of the pre-action block (its comments dropped).
    static var preAction: String {
        let block = readme.components(separatedBy: "# Xcode scheme ▸ Test ▸ Pre-actions").dropFirst().first ?? ""
        // After the rest of the marker's comment line.
        return (block.components(separatedBy: "```").first ?? "").split(separator: "\n").dropFirst().map(String.init)
            .filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }.joined(separator: "\n")
    }

    /// The `run:` lines of the Actions step that starts the runner.
    static var ciStep: String {
        let step = readme.components(separatedBy: "- name: Start the fixtures runner").dropFirst().first ?? ""
        let body = step.components(separatedBy: "- name:").first ?? ""
        return body.split(separator: "\n").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "\n")
    }

    @Test("both recipes serve, wait and hand the tests a runner that answers at once",
          // darwin-lint: allow proc — the check that /proc exists
          .requires(Tools.curl), .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/cmdline")))
    func recipes() async throws {
        #expect(Self.preAction.contains("tls-fixtures wait") && Self.ciStep.contains("tls-fixtures wait"),
                "docs/ios.md's recipes do not wait:\n\(Self.preAction)\n\(Self.ciStep)")
        #expect(Self.preAction.contains("/tmp/tls-fixtures.pid"), "the pre-action records no process id")
        let store = TestEnvironment.temporaryDirectory("readme-recipe-store")
        try await Self.seedSlowKeys(into: store)
        // The pre-action in dash (strict POSIX) and in bash, which is macOS's /bin/sh; the Actions step in bash, as
        // GitHub runs it.
        let runs = [("pre-action in sh", Self.preAction, "sh"), ("pre-action in bash", Self.preAction, "bash"),
                    ("CI step", Self.ciStep, "bash")]
        for (label, recipe, shell) in runs {
            let base = try ServeEndToEndTests.freePortBase()
            let scratch = TestEnvironment.temporaryDirectory("readme-recipe")
            let log = scratch.appendingPathComponent("log")
            let pidFile = scratch.appendingPathComponent("pid")
            let script = recipe
                .replacingOccurrences(of: "tls-fixtures serve", with: "tls-fixtures serve --port-base \(base)")
                .replacingOccurrences(of: "localhost:9800", with: "localhost:\(base)")
                .replacingOccurrences(of: "/tmp/tls-fixtures.log", with: log.path)
                .replacingOccurrences(of: "/tmp/tls-fixtures.pid", with: pidFile.path)
            let environment = [
                "TLS_FIXTURES_URL": "http://localhost:\(base)", "TLS_FIXTURES_CERTS": store.path,
                "PATH": TestEnvironment.productsDirectory.path + ":"
                    + (ProcessInfo.processInfo.environment["PATH"] ?? ""),
            ]
            let ran = try await Self.shell(script, program: shell, environment: environment, in: scratch)
            defer { Self.stopServe(portBase: base) }
            // The pre-action sends everything to its log: Xcode shows nothing of it.
            let output = ran.output + ((try? String(contentsOf: log, encoding: .utf8)) ?? "")
            #expect(ran.status == 0, "\(label) failed:\n\(script)\n\(output)")
            #expect(output.contains("http://localhost:\(base): ready: "), "\(label): \(output)")

            // The first test's first call: no start-up grace to hide a race.
            var client = RemoteFixtures(runner: URL(string: "http://localhost:\(base)")!, session: "recipe")
            client.startupGrace = 0
            let fixture = try await client.start("expired")
            #expect(Ports.accepts(fixture.port), "\(label)")
            await fixture.stop()
            #expect(try await client.waitUntilReady(timeout: 1).ready, "\(label): ready, then not")

            guard recipe == Self.preAction else { continue }
            // The process id it recorded is serve's, and stopping it stops the runner.
            let recorded = try String(contentsOf: pidFile, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let pid = try #require(Int32(recorded), "the pid file holds \(recorded)")
            // darwin-lint: allow proc — the test is enabled where /proc exists only
            let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
                .map { $0.split(separator: 0).map { String(decoding: $0, as: UTF8.self) } } ?? []
            #expect(command.first.map { URL(fileURLWithPath: $0).lastPathComponent } == "tls-fixtures"
                        && command.dropFirst().first == "serve",
                    "the recorded process \(pid) is \(command), not serve")
            kill(pid, SIGTERM)
            var waited = 0
            while Ports.accepts(base) && waited < 600 {   // a hang detector: serve stops in well under a second
                try await Task.sleep(for: .milliseconds(100))
                waited += 1
            }
            #expect(!Ports.accepts(base), "the runner still answers after the recorded process was stopped")
        }
    }

    /// Runs `script` with `program` (`sh`, `bash`) in `directory` and waits for it to exit (Linux: it reads /proc).
    /// Not through Foundation's `Process`: on Linux it learns of an exit from a socket its child inherits, and the
    /// `serve` a recipe leaves running in the background inherits it too, so the shell's exit would never be seen.
    static func shell(_ script: String, program: String = "sh", environment: [String: String], in directory: URL)
        async throws -> (status: Int32, output: String)
    {
        let output = directory.appendingPathComponent("recipe-output")
        // bash first closes every descriptor but standard input, output and error, which it inherited from this test
        // process: the fixtures other tests run meanwhile must not stay listening in the `serve` the recipe leaves
        // running. Then sh runs the recipe.
        let command = #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done "#
            + "2>/dev/null; cd \(ShellWord.quoted(directory.path)) "
            + "&& exec \(program) -c \"$0\" > \(ShellWord.quoted(output.path)) 2>&1"
        // With the test hook naming this process: the `serve` a recipe leaves running stops when this process exits, even
        // killed (one killed mid-run left its recipe's `serve` running, with no parent, minutes later).
        let merged = TestEnvironment.childEnvironment(environment).map { "\($0.key)=\($0.value)" }
        let arguments = ["/bin/bash", "-c", command, script]
        var pid: pid_t = 0
        let spawned = withCStrings(arguments) { argv in
            withCStrings(merged) { envp in posix_spawn(&pid, "/bin/bash", nil, nil, argv, envp) }
        }
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        let child = pid
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var raw: Int32 = 0
                while waitpid(child, &raw, 0) == -1 && errno == EINTR {}
                // WEXITSTATUS, spelt out: Glibc's macro does not reach Swift.
                continuation.resume(returning: (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f))
            }
        }
        return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }

    /// Copies the tests' store's RSA-4096 and -8192 keys into `store`'s keys folder, once they are made.
    static func seedSlowKeys(into store: URL) async throws {
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: store.path)
        let keys = store.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let made = await TestEnvironment.slowScenarioKeyFiles()
        #expect(made.count == 2, "the shared store's slow keys: \(made)")
        for source in made {
            let target = keys.appendingPathComponent(source.lastPathComponent)
            try FileManager.default.copyItem(at: source, to: target)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
        }
    }

    /// Stops the `serve` a recipe left running in the background (by its process id, found by its `--port-base`).
    static func stopServe(portBase: Int) {
        let wanted = ["serve", "--port-base", "\(portBase)"]
        // darwin-lint: allow proc — the test that calls this is enabled where /proc exists only
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                  // darwin-lint: allow proc — as above
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            // The recipes run `tls-fixtures` from PATH, so its first word is the bare name, not this build's path:
            // matching only the path left every recipe's serve running after the test (six such were found).
            guard let first = words.first,
                  first == TestEnvironment.cli || URL(fileURLWithPath: first).lastPathComponent == "tls-fixtures",
                  words.indices.contains(where: { Array(words.dropFirst($0).prefix(3)) == wanted }) else { continue }
            kill(pid, SIGTERM)
        }
    }
}
