import Foundation
import Testing

/// `Ports.freeRange` beside another test process (a CI run beside another, a worktree's suite beside a rehearsal):
/// ranges come from blocks of ports claimed with `flock`, and each process keeps its claims until it exits.
@Suite("Ports.freeRange beside another process's claims")
struct FreeRangeTests {
    /// A port's failure message names who holds each socket on it: this process, or another by pid and command line.
    @Test("HeldPort names the process that holds a socket on the port", .enabled(if: Platform.isLinux, "reads /proc"))
    func socketOwnersNamed() async throws {
        let port = try Ports.unused()
        let python = try BackgroundProcess(["python3", "-c", Self.listenOn, "\(port)"])
        #expect(await python.waitForOutput("listening\n", timeout: 120), "the listening process: \(python.stderr)")
        let foreign = Ports.held(port).sockets
        await python.stop()
        #expect(foreign.contains("state A") && foreign.contains("held by pid ") && foreign.contains("python3"),
                "\(foreign)")
    }

    static let listenOn = """
        import signal, socket, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        s = socket.socket()
        s.bind(("127.0.0.1", int(sys.argv[1])))
        s.listen(1)
        print("listening", flush=True)
        time.sleep(900)
        """

    /// Another process holds 50 blocks straight ahead of where the next range would start: more than the search
    /// crossed before it gave up (50 ranges of 101 ports), which failed a CI run beside another.
    @Test("a range is found past another process's claims, and touches none of them")
    func stepsOverForeignClaims() async throws {
        let ahead = Ports.blocksAhead(50)
        let holder = try BackgroundProcess(["python3", "-c", Self.holdClaims] + ahead.map(Ports.claimFile))
        #expect(await holder.waitForOutput("held\n", timeout: 120), "the claiming process: \(holder.stderr)")
        // It says which it holds. The rest of the 50 a third process holds (another suite beside this one: a CI run
        // beside another saw 17), so all 50 are someone else's either way; only the helper's stay held while this
        // test looks.
        let held = Set(holder.stdout.split(separator: "\n").compactMap { Int($0) })
        let found = Result { try Ports.freeRange(count: 101) }
        await holder.stop()
        let base = try found.get()
        let touched = Ports.blocks(touching: base..<(base + 101))
        #expect(held.isDisjoint(with: touched), "the range \(base)-\(base + 100) touches blocks the other process claims")
    }

    /// Claims each file it is given that it can (an exclusive, non-blocking flock), prints each one's first port, then
    /// "held", and keeps the claims until it is stopped (SIGTERM as the default action has it, whatever the test
    /// process's threads ignore or block).
    static let holdClaims = """
        import fcntl, os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        claims = []
        for path in sys.argv[1:]:
            f = open(path, "a")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                claims.append(f)
                print(os.path.basename(path).removeprefix("ports-"))
            except OSError:
                f.close()
        print("held", flush=True)
        time.sleep(900)
        """
}
