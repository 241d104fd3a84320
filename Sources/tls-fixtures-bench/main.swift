// tls-fixtures-bench: the in-process half of `make bench` (scripts/bench/run.py drives it and the peers).
//
//   materials --store DIR --out DIR          prepare the benchmark scenarios; write their certificate and key for the peers
//   serve     --store DIR --scenario NAME    serve one benchmark scenario; prints {"port": …}; exits on SIGTERM/SIGINT
//             [--loops N]                    (NIO event loops; default: NIO's choice)
//   startup   --store DIR --count N          start → first completed handshake, in process, certificates cached
//   spawn-startup --count N --port P --scenario NAME -- CMD…   the same for a spawned peer (openssl s_server, nginx)
//   check     --port P --scenario NAME       one handshake: protocol, cipher, leaf fingerprint, resumed or not
//   idle      --store DIR --count N [NAMES…] resident size of one process holding N idle fixtures
//   load      --port P --scenario NAME --requests N [--keepalive 1]   N requests, one by one (for callgrind)
//   differential --runner URL --store DIR --ca FILE --count N   one differential assertion (expired and its control),
//             through a running serve and in process: median and p90 ms
//   busy-handshake --store DIR --count N     handshake latency, idle and with every preparation lane busy
//
// Every command prints one JSON object on stdout.
import COpenSSL
import Foundation
import NIOCore
import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Arguments {
    var command: String
    var options: [String: String] = [:]
    var positional: [String] = []
    var trailing: [String] = []

    init(_ argv: [String]) throws {
        guard let first = argv.first else { throw BenchError("usage: tls-fixtures-bench COMMAND [options] (see main.swift)") }
        command = first
        var rest = argv.dropFirst()[...]
        while let arg = rest.popFirst() {
            if arg == "--" { trailing = Array(rest); break }
            if arg.hasPrefix("--") {
                guard let value = rest.popFirst() else { throw BenchError("\(arg) needs a value") }
                options[String(arg.dropFirst(2))] = value
            } else {
                positional.append(arg)
            }
        }
    }

    func string(_ name: String) throws -> String {
        guard let value = options[name] else { throw BenchError("--\(name) is required") }
        return value
    }

    func int(_ name: String, default fallback: Int? = nil) throws -> Int {
        guard let text = options[name] else {
            if let fallback { return fallback }
            throw BenchError("--\(name) is required")
        }
        guard let value = Int(text) else { throw BenchError("--\(name) must be a number") }
        return value
    }

    func scenario() throws -> BenchScenario {
        let name = options["scenario"] ?? BenchScenario.tls12.rawValue
        guard let scenario = BenchScenario(rawValue: name) ?? BenchScenario.allCases.first(where: { "\($0)" == name }) else {
            throw BenchError("unknown scenario \(name): \(BenchScenario.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return scenario
    }

    func store() throws -> CertificateStore { CertificateStore.at(URL(fileURLWithPath: try string("store"))) }
}

func emit<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
}

// MARK: Commands

struct MaterialsReport: Encodable {
    /// A scenario's files, and how every peer is configured for it: scripts/bench/run.py and profile.sh take the
    /// protocol and cipher from here, so BenchScenario stays the one definition.
    struct Item: Encodable {
        var scenario: String, certificate: String, key: String, leafSHA256: String
        var label: String, protocolName: String, cipher: String, speed: String
        var nginxProtocols: String, nginxCiphers: String, sServerArgs: [String], clientArgs: [String]
    }
    var items: [Item]
}

func materials(_ args: Arguments) throws {
    let store = try args.store()
    let out = URL(fileURLWithPath: try args.string("out"))
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    var items: [MaterialsReport.Item] = []
    for scenario in BenchScenario.allCases {
        let prepared = try store.prepare(scenario.scenario)
        guard let credential = prepared.credential else { throw BenchError("\(scenario.rawValue) has no certificate") }
        let certificate = out.appendingPathComponent("\(scenario.rawValue).pem")
        let key = out.appendingPathComponent("\(scenario.rawValue).key")
        try Certificate.pem(prepared.chainSent).write(to: certificate)
        _ = FileManager.default.createFile(atPath: key.path, contents: try credential.privateKey.pem, attributes: [.posixPermissions: 0o600])
        items.append(.init(scenario: scenario.rawValue, certificate: certificate.path, key: key.path,
                           leafSHA256: credential.certificate.sha256Fingerprint.hexString,
                           label: "\(scenario.protocolLabel) \(scenario.cipher), \(scenario.keyName)",
                           protocolName: scenario.protocolName, cipher: scenario.cipher, speed: scenario.speedName,
                           nginxProtocols: scenario.protocolName, nginxCiphers: scenario.openSSLCipherString,
                           sServerArgs: [scenario.openSSLVersionFlag, "-cipher", scenario.openSSLCipherString],
                           clientArgs: [scenario.openSSLVersionFlag, "-cipher", scenario.cipher + ":@SECLEVEL=0"]))
    }
    try emit(MaterialsReport(items: items))
}

func serve(_ args: Arguments) async throws {
    if let loops = args.options["loops"].flatMap(Int.init), loops > 0 {
        NIOSingletons.groupLoopCountSuggestion = loops
    }
    let store = try args.store()
    let scenario = try args.scenario()
    let port = try args.int("port", default: 0)
    let fixture = try await FixtureServer.start(scenario.scenario, store: store,
                                                configuration: FixtureConfiguration(bindAddresses: ["127.0.0.1"], port: port))
    struct Ready: Encodable { var port: Int; var pid: Int32; var loops: Int }
    try emit(Ready(port: fixture.port, pid: getpid(), loops: NIOSingletons.groupLoopCountSuggestion))
    // Serves until killed (SIGTERM): callgrind and perf write their data at such an exit too.
    withExtendedLifetime(fixture) { while true { pause() } }
}

struct StartupReport: Encodable {
    var peer: String
    var scenario: String
    /// The very first start in this process (certificates read from disk, NIO started).
    var firstMs: Double?
    var summary: Summary
    var facts: HandshakeFacts
}

func startup(_ args: Arguments) async throws {
    let store = try args.store()
    let scenario = try args.scenario()
    let count = try args.int("count", default: 200)
    let client = try HandshakeClient(scenario: scenario)
    var samples: [UInt64] = []
    var first: Double? = nil
    var facts: HandshakeFacts? = nil
    // 5 warm-up starts are not counted (but the very first is reported apart).
    for index in 0..<(count + 5) {
        let start = monotonicNanos()
        let fixture = try await FixtureServer.start(scenario.scenario, store: store)
        let seen = try client.firstHandshake(port: fixture.port, deadline: Date().addingTimeInterval(10))
        let elapsed = monotonicNanos() - start
        await fixture.stop()
        if index == 0 { first = Double(elapsed) / 1e6 }
        if index >= 5 { samples.append(elapsed) }
        facts = seen
    }
    try emit(StartupReport(peer: "tls-fixtures (in process)", scenario: scenario.rawValue, firstMs: first,
                           summary: Summary(nanos: samples), facts: facts!))
}

func spawnStartup(_ args: Arguments) throws {
    let scenario = try args.scenario()
    let count = try args.int("count", default: 200)
    let port = try args.int("port")
    let peer = args.options["peer"] ?? args.trailing.first ?? "?"
    guard !args.trailing.isEmpty else { throw BenchError("spawn-startup needs -- COMMAND…") }
    let client = try HandshakeClient(scenario: scenario)
    let log = args.options["log"] ?? "/dev/null"
    var samples: [UInt64] = []
    var first: Double? = nil
    var facts: HandshakeFacts? = nil
    for index in 0..<(count + 2) {
        // The port must be free before the next start, or we would time a leftover.
        while let fd = try HandshakeClient.dial(port: port) { close(fd); usleep(1_000) }
        let start = monotonicNanos()
        let pid = try spawnProcess(args.trailing, log: log)
        defer { terminate(pid) }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { throw BenchError("\(peer) exited at once (status \(status)); see \(log)") }
        let seen = try client.firstHandshake(port: port, deadline: Date().addingTimeInterval(10))
        let elapsed = monotonicNanos() - start
        if index == 0 { first = Double(elapsed) / 1e6 }
        if index >= 2 { samples.append(elapsed) }
        facts = seen
    }
    try emit(StartupReport(peer: peer, scenario: scenario.rawValue, firstMs: first, summary: Summary(nanos: samples), facts: facts!))
}

func check(_ args: Arguments) throws {
    let client = try HandshakeClient(scenario: try args.scenario())
    try emit(try client.firstHandshake(port: try args.int("port"), deadline: Date().addingTimeInterval(5)))
}

struct IdleReport: Encodable {
    var fixtures: Int
    var distinctScenarios: Int
    var skipped: [String]
    var baselineRSSKiB: Int?
    var rssKiB: Int?
    var peakRSSKiB: Int?
    var keysGenerated: Int
}

func idle(_ args: Arguments) async throws {
    let store = try args.store()
    let count = try args.int("count", default: 100)
    let catalog = ScenarioCatalog.builtIn
    let names = args.positional.isEmpty ? catalog.scenarios.map(\.name) : args.positional
    var scenarios: [Scenario] = []
    var skipped: [String] = []
    let keysBefore = PrivateKey.generatedCount
    for name in names {
        let scenario = try catalog.scenario(named: name)
        do {
            _ = try store.prepare(scenario)
            scenarios.append(scenario)
        } catch let error as ScenarioUnsupported {
            skipped.append("\(name): \(error.detail)")
        }
    }
    guard !scenarios.isEmpty else { throw BenchError("no servable scenario") }
    // The baseline: NIO running and every certificate loaded, but no fixture.
    let warm = try await FixtureServer.start(scenarios[0], store: store)
    await warm.stop()
    let baseline = residentKiB()
    var fixtures: [FixtureServer] = []
    for index in 0..<count {
        fixtures.append(try await FixtureServer.start(scenarios[index % scenarios.count], store: store))
    }
    try await Task.sleep(nanoseconds: 1_000_000_000)
    let report = IdleReport(fixtures: fixtures.count, distinctScenarios: min(count, scenarios.count), skipped: skipped,
                            baselineRSSKiB: baseline, rssKiB: residentKiB(), peakRSSKiB: residentKiB(field: "VmHWM"),
                            keysGenerated: PrivateKey.generatedCount - keysBefore)
    for fixture in fixtures { await fixture.stop() }
    try emit(report)
}

// MARK: Main

@Sendable func runCommand() async -> Int32 {
    do {
        let args = try Arguments(Array(CommandLine.arguments.dropFirst()))
        switch args.command {
        case "materials": try materials(args)
        case "serve": try await serve(args)
        case "startup": try await startup(args)
        case "spawn-startup": try spawnStartup(args)
        case "check": try check(args)
        case "idle": try await idle(args)
        case "differential": try await differential(args)
        case "busy-handshake": try await busyHandshake(args)
        case "load":
            let client = try HandshakeClient(scenario: try args.scenario())
            let done = try client.requests(port: try args.int("port"), count: try args.int("requests"),
                                           keepAlive: try args.int("keepalive", default: 0) != 0)
            struct Done: Encodable { var requests: Int }
            try emit(Done(requests: done))
        default: throw BenchError("unknown command \(args.command)")
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("tls-fixtures-bench: \(error)\n".utf8))
        return 1
    }
}

// No top-level `await`: an async `main` parks the main thread in libdispatch's sigsuspend loop, which crashes
// valgrind 3.19 (scripts/bench/profile.sh). The main thread waits on a semaphore instead; the task is detached
// because top-level code is main-actor isolated.
nonisolated(unsafe) var exitStatus: Int32 = 0
let finished = DispatchSemaphore(value: 0)
Task.detached { exitStatus = await runCommand(); finished.signal() }
finished.wait()
exit(exitStatus)
