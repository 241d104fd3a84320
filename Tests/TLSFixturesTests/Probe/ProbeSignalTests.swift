import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 14: the probe let OpenSSL write to its socket with a plain `send`, so a server that reset the connection made
/// the kernel raise SIGPIPE, and to survive it the library set SIGPIPE to "ignore" for the whole process — a change its
/// users never asked for. The probe now writes only with `MSG_NOSIGNAL` (Linux) or on an `SO_NOSIGPIPE` socket (Darwin).
///
/// Both checks are Linux's: the first relies on Linux keeping a blocked signal pending even when its action is
/// "ignore", the second reads `/proc`. The process's SIGPIPE action is judged in a fresh CLI process, not in this one:
/// NIO sets it to "ignore" on Linux when it opens its first socket, which other tests running in parallel may do at
/// any moment. On Darwin the
/// probe's sockets carry `SO_NOSIGPIPE` (`ProbeSocket.connect`), which scripts/lint-darwin.py cannot judge.
@Suite("Probe: no SIGPIPE, no process-wide signal change", .requires(Tools.pythonSSL),
       .enabled(if: HostOS.current == .linux, "reads Linux's pending-signal and /proc semantics; Darwin uses SO_NOSIGPIPE"))
struct ProbeSignalTests {
    @Test("a server that resets the connection after the handshake raises no SIGPIPE on the probing thread")
    func resetRaisesNoSignal() async throws {
        #if os(Linux)
        let server = try await ProbeTestServer.start(.resetAfterHandshake)
        defer { server.stop() }
        let roots = try ProbeTestServer.trustRoots
        let target = server.target
        // Several rounds: whether the reset arrives before the request is written, while it is read, or before our
        // close_notify is a race; every round must stay silent.
        let (raised, failures) = try await Self.onOwnThreadWithSIGPIPEBlocked {
            var options = ProbeOptions()
            options.trustRoots = roots
            options.timeout = 5
            return try (0..<5).map { _ in try TLSProbe(options: options).probe(target).failure }
        }
        #expect(!raised, "the probe raised SIGPIPE: a process whose SIGPIPE action is the default would have died")
        for failure in failures {
            // One line, naming what the server did.
            let failure = try #require(failure)
            #expect(!failure.contains("\n"))
            #expect(failure.contains("reset") || failure.contains("closed") || failure.contains("Broken pipe"), "\(failure)")
        }
        #endif
    }

    @Test("tls-fixtures probe, started with SIGPIPE at its default, keeps that default while it probes")
    func cliKeepsDefault() async throws {
        #if os(Linux)
        let server = try await ProbeTestServer.start(.silent)
        defer { server.stop() }
        // The test process ignores SIGPIPE (NIO does) and an ignored signal stays ignored across exec: Python resets it
        // to the default before it becomes the CLI.
        let shim = "import os, signal, sys; signal.signal(signal.SIGPIPE, signal.SIG_DFL); signal.pthread_sigmask(signal.SIG_SETMASK, []); "
            + "os.execv(sys.argv[1], sys.argv[1:])"
        let running = try Subprocess.launch(["python3", "-c", shim, TestEnvironment.cli, "probe", "127.0.0.1:\(server.port)",
                                             "--timeout", "4"])
        let pid = running.process.processIdentifier
        // Sample the CLI's ignored-signal mask (SigIgn) all through its probe, on a thread of its own so a loaded
        // machine cannot make the samples miss the process: samples taken before the exec (python3) do not count.
        let masks: [UInt64] = try await offThePool {
            var masks: [UInt64] = []
            let giveUp = Date().addingTimeInterval(60)
            while Date() < giveUp {
                // darwin-lint: allow proc — this suite runs on Linux only
                let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                let lines = status.split(separator: "\n")
                // Gone, or a zombie nobody has reaped yet: the CLI has finished.
                if lines.isEmpty || lines.contains(where: { $0.hasPrefix("State:") && $0.contains("Z") }) { break }
                if lines.contains(where: { $0.hasPrefix("Name:") && $0.contains("tls-fixtures") }),
                   let ignored = lines.first(where: { $0.hasPrefix("SigIgn:") }),
                   let mask = UInt64(ignored.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespaces), radix: 16) {
                    masks.append(mask)
                }
                usleep(50_000)
            }
            return masks
        }
        let result = await running.finished(timeout: 20)
        #expect(!masks.isEmpty, "no sample of the CLI's signal mask while it ran")
        #expect(masks.allSatisfy { $0 & (1 << (UInt64(SIGPIPE) - 1)) == 0 },
                "the CLI ignored SIGPIPE during its probe: SigIgn \(masks.map { String($0, radix: 16) })")
        #expect(result.status == 2, "\(result.combined)")
        #expect(result.stdout.contains("FAILED: timed out after 4 s during the TLS handshake"), "\(result.combined)")
        #endif
    }

    #if os(Linux)
    /// Runs `body` on a new thread with SIGPIPE blocked there, and says whether a SIGPIPE was left pending for it — a
    /// write on a reset socket raises SIGPIPE at the writing thread, and Linux keeps a blocked signal pending even
    /// when its action is "ignore". The pending signal is taken before the mask is restored.
    static func onOwnThreadWithSIGPIPEBlocked<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> (Bool, T) {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                var block = sigset_t()
                sigemptyset(&block)
                sigaddset(&block, SIGPIPE)
                var previous = sigset_t()
                pthread_sigmask(SIG_BLOCK, &block, &previous)
                let outcome = Result { try body() }
                var pending = sigset_t()
                sigpending(&pending)
                let raised = sigismember(&pending, SIGPIPE) == 1
                if raised {
                    var zero = timespec(tv_sec: 0, tv_nsec: 0)
                    _ = sigtimedwait(&block, nil, &zero)
                }
                pthread_sigmask(SIG_SETMASK, &previous, nil)
                continuation.resume(with: outcome.map { (raised, $0) })
            }
            thread.start()
        }
    }
    #endif
}

/// The Mac-side variant: no /proc, no pending-signal bookkeeping, just a CLI whose SIGPIPE is at its default probing a
/// server that resets the connection after the handshake, several times. A write on the reset socket without
/// `MSG_NOSIGNAL` (Linux) or `SO_NOSIGPIPE` (Darwin) would kill it with SIGPIPE instead of the one-line failure.
@Suite("Probe: a reset kills no probe, on any OS", .requires(Tools.pythonSSL))
struct ProbeResetSurvivalTests {
    @Test("tls-fixtures probe, SIGPIPE at its default, reports a reset as a failure every time instead of dying")
    func cliSurvivesReset() async throws {
        let server = try await ProbeTestServer.start(.resetAfterHandshake)
        defer { server.stop() }
        // The test process ignores SIGPIPE (NIO does), and an ignored signal stays ignored across exec: Python resets it
        // to the default (and unblocks it) before it becomes the CLI.
        let shim = "import os, signal, sys; signal.signal(signal.SIGPIPE, signal.SIG_DFL); "
            + "signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])"
        let roots = try TestEnvironment.file(try ProbeTestServer.trustRoots.reduce(into: Data()) { $0 += $1.pem })
        for round in 1...5 {
            let result = try await Subprocess.runAwaiting(["python3", "-c", shim, TestEnvironment.cli, "probe", "localhost:\(server.port)",
                                             "--ca", roots, "--timeout", "10"], timeout: 60)
            #expect(result.status != SIGPIPE, "round \(round): the CLI died of SIGPIPE: \(result.combined)")
            #expect([1, 2].contains(result.status) && result.stdout.contains("FAILED"), "round \(round): \(result.combined)")
        }
    }
}
