import COpenSSL
import Foundation
import TLSFixtures
import TLSFixturesClient
import TLSFixturesOpenSSL
import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A verifying HTTPS client in a few lines of OpenSSL: the load the differential benchmark judges. It trusts one CA file,
/// checks the URL's host name, sends `GET /` and reads the answer; anything else throws. Blocking, like a test's curl.
final class VerifyingClient: @unchecked Sendable {
    private let ctx: OpaquePointer

    init(caFile: String) throws {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw BenchError("SSL_CTX_new failed") }
        self.ctx = ctx
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else { throw BenchError("cannot load \(caFile)") }
    }

    deinit { SSL_CTX_free(ctx) }

    struct Refused: Error, CustomStringConvertible { var description: String }

    /// `GET /` of `url` (its port on 127.0.0.1, its host as SNI and verified name); the status line.
    func get(_ url: URL) throws -> String {
        guard let port = url.port, let fd = try HandshakeClient.dial(port: port) else {
            throw Refused(description: "nothing listens at \(url)")
        }
        defer { close(fd) }
        guard let ssl = SSL_new(ctx) else { throw BenchError("SSL_new failed") }
        defer { SSL_free(ssl) }
        let host = url.host ?? "localhost"
        _ = shim_SSL_set_tlsext_host_name(ssl, host)
        _ = SSL_set1_host(ssl, host)
        SSL_set_fd(ssl, fd)
        guard SSL_connect(ssl) == 1 else {
            throw Refused(description: "handshake refused: verify result \(SSL_get_verify_result(ssl))")
        }
        let request = "GET / HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n"
        _ = request.withCString { SSL_write(ssl, $0, Int32(strlen($0))) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var answer = Data()
        while true {
            let count = SSL_read(ssl, &buffer, Int32(buffer.count))
            if count <= 0 { break }
            answer.append(contentsOf: buffer[0..<Int(count)])
        }
        _ = SSL_shutdown(ssl)
        let text = String(decoding: answer, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200") else { throw Refused(description: "no answer") }
        return String(text.prefix { $0 != "\r" })
    }
}

struct DifferentialReport: Encodable {
    struct Summary: Encodable { var count: Int; var medianMs: Double; var p90Ms: Double }
    /// Through a running `serve`'s control API (`RemoteFixtures.expectRefused`): two leased fixtures started, two loads,
    /// both fixtures' records read, the judgement, both stopped.
    var remote: Summary
    /// In process (`FixtureServer.expectRefused`): the same without HTTP.
    var inProcess: Summary
    var verdict: String
}

func summary(_ samples: [Double]) -> DifferentialReport.Summary {
    let sorted = samples.sorted()
    return .init(count: sorted.count, medianMs: sorted[sorted.count / 2],
                 p90Ms: sorted[min(sorted.count - 1, sorted.count * 9 / 10)])
}

/// `differential --runner URL --store DIR --ca FILE --count N`: one differential assertion (expired against its
/// control) timed N times on a warm runner, and N times in process.
func differential(_ args: Arguments) async throws {
    let count = try args.int("count", default: 30)
    let client = try VerifyingClient(caFile: try args.string("ca"))
    let fixtures = RemoteFixtures(runner: URL(string: try args.string("runner"))!)
    let store = try args.store()
    let load: @Sendable (URL) async throws -> String = { url in try client.get(url) }
    var verdict = ""
    // Warm: the scenario's and the control's certificates exist, and the first start of each is paid.
    verdict = try await fixtures.expectRefused("expired", url: .localhost, load).description
    _ = try await FixtureServer.expectRefused("expired", store: store, load)
    var remote: [Double] = []
    var local: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<count {
        let started = clock.now
        _ = try await fixtures.expectRefused("expired", url: .localhost, load)
        remote.append(Double((clock.now - started).components.attoseconds) / 1e15
                      + Double((clock.now - started).components.seconds) * 1000)
    }
    for _ in 0..<count {
        let started = clock.now
        _ = try await FixtureServer.expectRefused("expired", store: store, load)
        local.append(Double((clock.now - started).components.attoseconds) / 1e15
                     + Double((clock.now - started).components.seconds) * 1000)
    }
    try emit(DifferentialReport(remote: summary(remote), inProcess: summary(local), verdict: verdict))
}

struct BusyReport: Encodable {
    /// Handshakes to an in-process fixture while every preparation lane burns CPU.
    var busy: DifferentialReport.Summary
    /// The same with nothing else running.
    var idle: DifferentialReport.Summary
    /// Jobs queued on the lanes, and the most the process's CPU budget ran at once.
    var jobs: Int
    var mostRunning: Int
}

/// `busy-handshake --store DIR --count N`: the latency of a fixture's handshake, idle and with every preparation lane
/// of the process busy making RSA-3072 keys (the CPU budget's effect).
func busyHandshake(_ args: Arguments) async throws {
    let count = try args.int("count", default: 30)
    let store = try args.store()
    let fixture = try await FixtureServer.start(BenchScenario.tls12.scenario, store: store)
    let client = try HandshakeClient(scenario: .tls12)
    func measure() throws -> DifferentialReport.Summary {
        var samples: [Double] = []
        for _ in 0..<count {
            let started = DispatchTime.now()
            guard let fd = try HandshakeClient.dial(port: fixture.port), try client.handshake(fd: fd) != nil else {
                throw BenchError("no handshake")
            }
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6)
        }
        return summary(samples)
    }
    let idle = try measure()
    let stop = UnsafeAtomicFlag()
    var jobs: [Task<Void, Never>] = []
    let lanes: [BlockingWork.Lane] = [.quick, .slow, .everyCore, .requested(slow: false), .requested(slow: true)]
    for lane in lanes {
        for _ in 0..<4 {
            jobs.append(Task {
                while !stop.isSet {
                    _ = try? await BlockingWork.prepare(lane) { try PrivateKey.generateRSA(bits: 3072) }
                }
            })
        }
    }
    try await Task.sleep(for: .milliseconds(500))
    let busy = try await Task.detached { try measure() }.value
    stop.set()
    for job in jobs { await job.value }
    await fixture.stop()
    try emit(BusyReport(busy: busy, idle: idle, jobs: jobs.count, mostRunning: CPUBudget.shared.usage.most))
}

/// A flag set once, read from many tasks.
final class UnsafeAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
