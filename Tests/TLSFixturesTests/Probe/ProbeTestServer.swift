import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import TLSFixtures

/// This suite's store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
private var probeStore: CertificateStore { TestEnvironment.suiteStore("Probe") }

/// A real HTTP/1.1 server over TLS (Python's `ssl`, in a subprocess) that behaves as servers the probe meets in the wild
/// do and our own `FixtureServer` does not: chunked answers, interim `103 Early Hints`, connections kept open after the
/// answer, a reset right after the handshake, silence. It serves the `ats-compliant` certificate chain, so a probe
/// trusting `deviceTrustRoots` verifies it.
final class ProbeTestServer {
    enum Mode: String, CaseIterable, Sendable {
        /// `Transfer-Encoding: chunked` (with a chunk extension and a trailer), then the connection stays open.
        case chunked
        /// `103 Early Hints`, then the answer sized by `Content-Length`, then the connection stays open (keep-alive).
        case earlyHintsKeepAlive = "early-hints-keep-alive"
        /// A `Content-Length` of 2 MiB and the body to match, then the connection stays open.
        case oversized
        /// The head and 10 of the 100 bytes it announces, then nothing (the connection stays open).
        case stallsInBody = "stalls-in-body"
        /// Completes the handshake, then resets the connection (SO_LINGER 0) while the probe writes its request.
        case resetAfterHandshake = "reset-after-handshake"
        /// Accepts TCP connections and never sends a byte.
        case silent
    }

    /// The body every answering mode sends (the oversized one aside).
    /// A fixture's JSON answer in shape, so the CLI's report names its scenario only when the body was decoded whole.
    static let body = #"{"scenario":"python-chunked","request":{"method":"GET","path":"/","httpVersion":"HTTP/1.1"}}"#

    let port: Int
    private let running: Subprocess.Running
    private let directory: URL

    private init(port: Int, running: Subprocess.Running, directory: URL) {
        self.port = port
        self.running = running
        self.directory = directory
    }

    /// Starts the server on a random loopback port and waits until it listens (looking every 20 ms, sleeping in
    /// between, and once more after 120 s, which only detects a hang). The chain is made off the pool: making keys on a
    /// cooperative thread stalls every other test of the process meanwhile.
    static func start(_ mode: Mode) async throws -> ProbeTestServer {
        let prepared = try await offThePool { try probeStore.prepare(try ScenarioCatalog.builtIn.scenario(named: "ats-compliant")) }
        guard let credential = prepared.credential else { throw ServerFailed(why: "ats-compliant has no credential") }
        let directory = TestEnvironment.temporaryDirectory("probe-server")
        let chain = directory.appendingPathComponent("chain.pem")
        let key = directory.appendingPathComponent("key.pem")
        let script = directory.appendingPathComponent("server.py")
        let portFile = directory.appendingPathComponent("port")
        try Certificate.pem(prepared.chainSent).write(to: chain)
        try credential.privateKey.pem.write(to: key)
        try Data(pythonServer.utf8).write(to: script)
        let running = try Subprocess.launch(["python3", script.path, mode.rawValue, chain.path, key.path, portFile.path, body])
        let started = Date()
        func listening() -> Int? {
            guard let text = try? String(contentsOf: portFile, encoding: .utf8), text.hasSuffix("\n") else { return nil }
            return Int(text.dropLast())
        }
        await Poll.until(timeout: 120) { listening() != nil || !running.process.isRunning }
        if let port = listening() { return ProbeTestServer(port: port, running: running, directory: directory) }
        let exitedByItself = !running.process.isRunning
        kill(running.process.processIdentifier, SIGKILL)
        let result = await running.finished(timeout: 5)
        let how = exitedByItself ? "it exited with status \(result.status)" : "no port after 120 s, killed"
        let left = FileManager.default.fileExists(atPath: directory.path) ? "" : "; its folder was removed meanwhile"
        let waited = Int(Date().timeIntervalSince(started))
        throw ServerFailed(why: "the Python server did not start (\(how), \(waited) s\(left)): "
            + (result.combined.isEmpty ? "no output" : result.combined))
    }

    /// The trust the probe needs for this server's chain.
    static var trustRoots: [Certificate] {
        get throws {
            try probeStore.prepare(try ScenarioCatalog.builtIn.scenario(named: "ats-compliant")).deviceTrustRoots
        }
    }

    var target: ProbeTarget { ProbeTarget(host: "localhost", port: port, connectAddress: "127.0.0.1") }

    /// SIGKILL: a child started from a test thread inherits that thread's blocked signals, SIGTERM among them.
    func stop() {
        kill(running.process.processIdentifier, SIGKILL)
        _ = running.wait(timeout: 10)
    }

    struct ServerFailed: Error, CustomStringConvertible {
        let why: String
        var description: String { why }
    }

    /// One thread per connection; connections that are "left open" are kept referenced until the process ends.
    private static let pythonServer = #"""
    import os, signal, socket, ssl, struct, sys, threading, time
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    mode, chain, key, port_file, body = sys.argv[1:6]
    body = body.encode()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain, key)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    kept = []

    def read_head(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
        return data

    def serve(raw):
        kept.append(raw)
        if mode == "silent":
            return
        try:
            conn = context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            return
        kept.append(conn)
        if mode == "reset-after-handshake":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return
        if read_head(conn) is None:
            return
        if mode == "chunked":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            thirds = [body[:10], body[10:40], body[40:]]
            chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in thirds)
            conn.sendall(head)
            conn.sendall(chunks)
            conn.sendall(b"0\r\nX-Trailer: done\r\n\r\n")
        elif mode == "early-hints-keep-alive":
            conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        elif mode == "oversized":
            size = 2 * 1024 * 1024
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
            try:
                conn.sendall(b"A" * size)
            except OSError:
                pass
        elif mode == "stalls-in-body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"B" * 10)
        time.sleep(3600)

    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(port_file + ".tmp", port_file)
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve, args=(raw,), daemon=True).start()
    """#
}
