import Foundation
import NIOCore
import Testing
@testable import TLSFixtures

/// A client that pipelines requests and never reads the answers: Python's `ssl` (or a plain socket) with a 4 KiB
/// receive buffer, sending `GET PATH` a thousand at a time from a thread for `seconds` or until the server closes the
/// connection. It prints how many bytes went out and, if the server closed first, after how many seconds.
enum PipeliningClient {
    static let script = #"""
import socket, ssl, sys, threading, time, os
port, mode, seconds, path = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
if mode == "tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    s = context.wrap_socket(s, server_hostname="localhost")
blob = ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode() * 1000
state = {"sent": 0, "closed": None}
start = time.monotonic()
ended = threading.Event()
def send():
    try:
        while True:
            s.sendall(blob)   # blocks once the server stops reading: that is the point
            state["sent"] += len(blob)
    except OSError:
        state["closed"] = time.monotonic() - start
        ended.set()
threading.Thread(target=send, daemon=True).start()
ended.wait(seconds)
print(state["sent"], "-" if state["closed"] is None else "%.1f" % state["closed"], flush=True)
os._exit(0)
"""#

    struct Outcome {
        var sentBytes: Int
        /// Seconds until the server closed the connection; nil when it stayed open.
        var closedAfter: Double?
    }

    static func start(port: Int, tls: Bool, seconds: Double, path: String) throws -> Subprocess.Running {
        try Subprocess.launch(["python3", "-c", script, "\(port)", tls ? "tls" : "plain", "\(seconds)", path])
    }

    static func outcome(_ result: Subprocess.Result) -> Outcome? {
        let fields = result.stdout.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard fields.count == 2, let sent = Int(fields[0]) else { return nil }
        return Outcome(sentBytes: sent, closedAfter: Double(fields[1]))
    }
}

extension ReliabilitySuite {
    /// Issue 16, item 1: a client that pipelines requests and never reads grew the server without limit (a TLS fixture
    /// 80 MB → 3.7 GB in 75 s, `http` 1.7 GB in 15 s, the dashboard +2.7 GB in 5 s), because every request was
    /// answered at once and the answers queued in memory. The idle timeout is set longer than the run here, so only
    /// back-pressure can bound the growth: resident memory is sampled four times a second and must stay within
    /// `growthBoundMB`. The run stops at the first sample over it, so a server without back-pressure fails in seconds
    /// instead of exhausting the machine.
    @Suite("Back-pressure: a client that pipelines and never reads", .enabled(if: Platform.isLinux, "reads /proc/self"))
    struct BackPressure {
        static let seconds: Double = 8
        /// With back-pressure the server holds one read's worth of requests and 64 KiB of answers per connection:
        /// the growth measured is 0–2 MB. Without it, this debug build grew 5–7 MB a second for a fixture (42–59 MB in
        /// these 8 s; a release build grows faster) and the dashboard passed 64 MB within 3 s. 32 MB sits between
        /// with room on both sides; ASan's quarantine (freed memory it holds back) is added when instrumented.
        static let growthBoundMB = 32 + Bounds.addressSanitizerQuarantineMB

        /// Runs the client against `port` for `seconds` and returns the largest growth seen (MB) and the outcome.
        static func pipeline(to port: Int, tls: Bool, path: String, baseline: ProcessResources) async throws
            -> (growthMB: Int, outcome: PipeliningClient.Outcome?) {
            let client = try PipeliningClient.start(port: port, tls: tls, seconds: seconds, path: path)
            var worst = 0
            let start = Date()
            while client.process.isRunning && Date().timeIntervalSince(start) < seconds + 10 {
                try await Task.sleep(nanoseconds: 250_000_000)
                worst = max(worst, (ProcessResources.now().residentKB - baseline.residentKB) / 1024)
                if worst >= growthBoundMB { client.process.terminate(); break }
            }
            let result = await client.finished(timeout: 10)
            return (worst, PipeliningClient.outcome(result))
        }

        static func expectBounded(_ run: (growthMB: Int, outcome: PipeliningClient.Outcome?), _ what: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(run.growthMB < growthBoundMB,
                    "\(what): resident memory grew by \(run.growthMB) MB or more while one client pipelined without reading",
                    sourceLocation: sourceLocation)
            if run.growthMB < growthBoundMB {
                let outcome = run.outcome
                #expect(outcome != nil, "\(what): the client did not report", sourceLocation: sourceLocation)
                // It really pipelined: far more requests than any bound on queued answers would allow through.
                #expect((outcome?.sentBytes ?? 0) >= 1 << 20, "\(what): the client sent only \(outcome?.sentBytes ?? 0) bytes",
                        sourceLocation: sourceLocation)
            }
        }

        @Test("a TLS fixture and the http fixture stay within the memory bound", arguments: ["ats-compliant", "http"])
        func fixture(scenario: String) async throws {
            // Idle timeout well past the run: only back-pressure may bound memory here.
            let (fixture, baseline) = try await ReliabilityFixtures.startWarm(scenario, handshakeTimeout: .seconds(5), idleTimeout: .seconds(60))
            do {
                let run = try await Self.pipeline(to: fixture.port, tls: scenario != "http", path: "/x", baseline: baseline)
                Self.expectBounded(run, scenario)
                try await ReliabilityFixtures.expectRecovered(fixture, baseline: baseline)
            } catch {
                await fixture.stop()
                throw error
            }
            await fixture.stop()
        }

        /// The idle timeout counts silence both ways; a client that keeps sending kept it from ever firing. Once
        /// back-pressure stops reading from a client that does not read, the connection falls silent and the idle
        /// timeout ends it.
        @Test("a client that pipelines and never reads is closed by the idle timeout")
        func idleTimeoutCloses() async throws {
            let idle = TimeAmount.seconds(2)
            try await withHostileFixture("ats-compliant", idleTimeout: idle) { fixture in
                let client = try PipeliningClient.start(port: fixture.port, tls: true, seconds: 60, path: "/x")
                let outcome = PipeliningClient.outcome(await client.finished(timeout: 90))
                let closed = try #require(outcome?.closedAfter, "still open after 60 s with a 2 s idle timeout")
                // The server first answers until the socket buffers are full (under a second here, 2-5 s under ASan on
                // a loaded machine), then 2 s of silence and a forced close (0.5 s). Without back-pressure it never
                // falls silent, and the client runs its whole 60 s: the bound is far from both.
                #expect(closed < 40, "closed only after \(closed) s")
            }
        }

        /// Holding requests must not lose or reorder them: 10,000 pipelined requests to a client with a 4 KiB receive
        /// buffer (2.4 MB of answers, far more than the socket buffers take, so the server has to stop and wait), read
        /// only after a pause: every answer arrives, in order.
        @Test("requests held while the client does not read are all answered, in order")
        func heldRequestsAnsweredInOrder() async throws {
            let script = #"""
import socket, sys, threading, time, re
port, count = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
requests = b"".join(b"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(count))
requests += b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
threading.Thread(target=lambda: s.sendall(requests), daemon=True).start()
time.sleep(1)
data = bytearray()
s.settimeout(30)
while True:
    chunk = s.recv(1 << 20)
    if not chunk: break
    data += chunk
paths = re.findall(rb'"path":"([^"]*)"', bytes(data))
expected = [b"/%d" % i for i in range(count)] + [b"/last"]
print(len(paths), "in-order" if paths == expected else "out-of-order", len(data))
"""#
            try await withHostileFixture("http", idleTimeout: .seconds(30)) { fixture in
                let result = try await Subprocess.runAwaiting(
                    ["python3", "-c", script, "\(fixture.port)", "10000"], timeout: 60)
                #expect(result.stdout.hasPrefix("10001 in-order "), "\(result.combined)")
            }
        }

        @Test("the dashboard stays within the memory bound (each small request asks for the whole catalog)")
        func dashboard() async throws {
            let store = reliabilityStore
            var configuration = FixtureRunner.Configuration()
            configuration.store = store
            configuration.portBase = try ServeEndToEndTests.freePortBase()
            configuration.idleTimeout = .seconds(60)
            configuration.scenarios = ["ats-compliant", "tls-v1-2", "expired", "http"]
            try await FixtureRunner.withRunner(configuration) { runner in
                let dashboard = try #require(runner.frontDoor).dashboard
                let answer = try await HTTPGet.fetch(port: dashboard.port, path: "/scenarios.json")
                #expect(answer.status == 200 && answer.body.count > 2_000, "an answer much larger than a request: \(answer.body.count) bytes")
                // The baseline is taken once that connection has closed.
                #expect(await settle { dashboard.connectionCount == 0 },
                        "the dashboard still holds \(dashboard.connectionCount)")
                let baseline = ProcessResources.now()
                let run = try await Self.pipeline(to: dashboard.port, tls: false, path: "/scenarios.json", baseline: baseline)
                Self.expectBounded(run, "dashboard")
                let after = try await HTTPGet.fetch(port: dashboard.port, path: "/scenarios.json")
                #expect(after.status == 200, "the dashboard no longer answers")
            }
        }
    }
}

/// A plain-HTTP GET over a raw socket, for the dashboard (status and body).
enum HTTPGet {
    struct Answer { var status: Int; var body: [UInt8] }

    static func fetch(port: Int, path: String, timeout: TimeInterval = 5) async throws -> Answer {
        try await offThePool {
            let connection = try RawConnection(port: port)
            connection.send(Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8))
            let received = connection.readUntilClosed(timeout: timeout).received
            let text = String(decoding: received, as: UTF8.self)
            let status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            let headEnd = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? received.count
            return Answer(status: status, body: Array(received[headEnd...]))
        }
    }
}
