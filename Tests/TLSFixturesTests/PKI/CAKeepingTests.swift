import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's `flock`s as a test holds and watches them: a state a test needs ("both writers are waiting") is held by
/// the test and read from the kernel's lock table (`/proc/locks`, Linux), never won in a race.
enum StoreLocks {
    /// Takes `lockFile` (made if missing) exclusively; the descriptor, for `release`.
    static func hold(_ lockFile: URL) throws -> Int32 {
        try FileManager.default.createDirectory(at: lockFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        chmod(lockFile.deletingLastPathComponent().path, 0o700)
        let fd = open(lockFile.path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX) == 0 else { throw POSIXError(.EBADF) }
        return fd
    }

    static func release(_ fd: Int32) { flock(fd, LOCK_UN); close(fd) }

    /// The processes holding (`waiting` false) or waiting for (`waiting` true) `lockFile`'s lock.
    static func processes(_ lockFile: URL, waiting: Bool) -> [Int32] {
        var info = stat()
        guard stat(lockFile.path, &info) == 0,
              // darwin-lint: allow proc — only the tests enabled on Linux call it
              let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return [] }
        return table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            let blocked = fields.count > 1 && fields[1] == "->"
            guard blocked == waiting, fields.contains(where: { $0.hasSuffix(":\(info.st_ino)") }) else { return nil }
            let rest = Array(fields.dropFirst(blocked ? 2 : 1))
            return rest.count > 3 ? Int32(rest[3]) : nil
        }
    }

    /// CPU seconds `pid` has used (`/proc/PID/stat`'s utime and stime): how a test knows a process is deep in key
    /// generation, whatever the machine's speed, rather than in the file work before it.
    static func cpuSeconds(_ pid: Int32) -> Double {
        // darwin-lint: allow proc — only the tests enabled on Linux call it
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.range(of: ") ", options: .backwards) else { return 0 }
        let fields = stat[end.upperBound...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Polls until `condition` holds; false after `seconds` (a hang detector, never what a test decides on).
    static func await(_ seconds: TimeInterval = 120, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        return true
    }
}

/// Issue 36, items 1, 2 and 7: the built-in CA is never lost, never silently replaced, and two writers never both
/// report success for one file.
@Suite("The CA is kept: atomic replacement, no implicit new CA, one writer wins", .ownThreads)
struct CAKeepingTests {
    static func bytes(_ store: String) -> [Data?] {
        ["ca/root.pem", "ca/root.key"].map { try? Data(contentsOf: URL(fileURLWithPath: store).appendingPathComponent($0)) }
    }

    static func newStore(_ label: String) throws -> String {
        let store = TestEnvironment.temporaryDirectory(label).appendingPathComponent("store").path
        let made = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store])
        #expect(made.status == 0, "\(made.combined)")
        return store
    }

    /// What is in `ca/` besides the root and the intermediates: retired CAs, stages, keys set aside.
    static func extras(_ store: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store + "/ca")) ?? []
        return names.filter { !$0.hasSuffix(".pem") && !$0.hasSuffix(".key") }.sorted()
    }

    // MARK: Item 1

    @Test("a refused ca init --force (a 300-character name) leaves the old CA in place, byte for byte")
    func refusedReplacementKeepsTheCA() throws {
        let store = try Self.newStore("keep300")
        let before = Self.bytes(store)
        let result = try TestEnvironment.tlsFixtures(["ca", "init", "--force", "--dir", store, "--name", String(repeating: "x", count: 300)])
        CLIInputTests.expectOneLineError(result, mentioning: ["300 characters", "64"])
        #expect(Self.bytes(store) == before, "the CA changed")
        #expect(Self.extras(store).isEmpty, "left behind: \(Self.extras(store))")
        // The CA is still the store's: a certificate issued now is signed by it, with no new CA made.
        let issued = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "after", "--host", "a.test"])
        #expect(issued.status == 0 && issued.stdout.contains("Keys generated: 1"), "\(issued.combined)")
        #expect(Self.bytes(store) == before, "a new CA was made")
    }

    /// A disk that fills while the new CA is written: a tmpfs of 256 KiB, filled to the last page before the
    /// replacement. Linux, as root (mount).
    @Test("a full disk during ca init --force leaves the old CA the store's CA, byte for byte",
          .enabled(if: Platform.isLinux && TestEnvironment.isRoot, "mounts a tmpfs (Linux, root)"))
    func fullDiskKeepsTheCA() throws {
        let mountPoint = TestEnvironment.temporaryDirectory("tmpfs")
        let mounted = try Subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", mountPoint.path])
        try #require(mounted.status == 0, "cannot mount a tmpfs here: \(mounted.combined)")
        defer { _ = try? Subprocess.run(["umount", mountPoint.path]) }
        let store = mountPoint.appendingPathComponent("store").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let before = Self.bytes(store)
        // Every page taken: the new key's write is the one that fails.
        let filler = mountPoint.appendingPathComponent("filler")
        _ = try Subprocess.run(["dd", "if=/dev/zero", "of=\(filler.path)", "bs=4096"])
        let result = try TestEnvironment.tlsFixtures(["ca", "init", "--force", "--dir", store])
        CLIInputTests.expectOneLineError(result, mentioning: ["No space left on device"])
        #expect(Self.bytes(store) == before, "the CA changed or is gone: \(Self.extras(store))")
        #expect(Self.extras(store).isEmpty, "left behind: \(Self.extras(store))")
        // With room again, the store still has its CA and it is the old one.
        try FileManager.default.removeItem(at: filler)
        let shown = try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store])
        #expect(shown.status == 0, "\(shown.combined)")
        #expect(Self.bytes(store) == before)
    }

    /// Killed while it makes an RSA-8192 key: the test waits until the process holds the CA's lock (the kernel's lock
    /// table says so) and has used half a second of CPU since (the file work around the key takes milliseconds; an
    /// RSA-8192 key, seconds), then kills it. Whenever the kill lands, the store's CA is whole: the old one, or (had it
    /// finished first) the new one with the old one retired.
    @Test("ca init --force killed during key generation leaves the old CA the store's CA, byte for byte",
          .enabled(if: Platform.isLinux, "reads /proc/locks"))
    func killDuringKeyGeneration() throws {
        let store = try Self.newStore("kill")
        let before = Self.bytes(store)
        let run = try Subprocess.launch([TestEnvironment.cli, "ca", "init", "--force", "--key", "rsa:8192", "--dir", store])
        let pid = run.process.processIdentifier
        let lock = URL(fileURLWithPath: store).appendingPathComponent("locks/ca-root.lock")
        #expect(StoreLocks.await { StoreLocks.processes(lock, waiting: false).contains(pid) || !run.process.isRunning })
        let locked = StoreLocks.cpuSeconds(pid)
        #expect(StoreLocks.await { StoreLocks.cpuSeconds(pid) - locked >= 0.5 || !run.process.isRunning })
        kill(pid, SIGKILL)
        let result = run.wait(timeout: 60)
        if result.status == 0 {
            // It finished before the kill: the old CA is retired whole.
            let retired = Self.extras(store).filter { $0.hasPrefix("replaced-") }
            #expect(retired.count == 1)
            let kept = ["root.pem", "root.key"].map { try? Data(contentsOf: URL(fileURLWithPath: "\(store)/ca/\(retired.first ?? "?")/\($0)")) }
            #expect(kept == before, "the old CA was not kept whole")
        } else {
            #expect(Self.bytes(store) == before, "killed mid-replacement, the store's CA changed or is gone")
            let shown = try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store])
            #expect(shown.status == 0, "\(shown.combined)")
            #expect(Self.bytes(store) == before)
        }
    }

    /// The two states a crash inside the swap can leave, made by hand: the new root staged whole but not swapped in
    /// (dropped: the old CA stays), and the key swapped in but not its certificate (finished: the new CA is whole).
    @Test("a swap cut short by a crash is settled by the next command: dropped before the key moved, finished after")
    func crashInsideTheSwap() throws {
        let store = try Self.newStore("settle")
        let before = Self.bytes(store)
        let fresh = try CertificateAuthority.ephemeral(commonName: "the new CA")
        let stage = store + "/ca/.staged-root"
        try FileManager.default.createDirectory(atPath: stage, withIntermediateDirectories: false)
        try fresh.certificate.pem.write(to: URL(fileURLWithPath: stage + "/root.pem"))
        try fresh.privateKey.pem.write(to: URL(fileURLWithPath: stage + "/root.key"))
        chmod(stage + "/root.key", 0o600)
        let dropped = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "x", "--host", "a.test"])
        #expect(dropped.status == 0, "\(dropped.combined)")
        #expect(Self.bytes(store) == before && !FileManager.default.fileExists(atPath: stage), "the old CA did not stay, alone")

        try FileManager.default.createDirectory(atPath: stage, withIntermediateDirectories: false)
        try fresh.certificate.pem.write(to: URL(fileURLWithPath: stage + "/root.pem"))
        try fresh.privateKey.pem.write(to: URL(fileURLWithPath: store + "/ca/root.key"))
        let finished = try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store])
        #expect(finished.status == 0 && finished.stdout.contains("the new CA") && finished.stderr.contains("finished replacing root"),
                "\(finished.combined)")
        #expect(Self.bytes(store) == [fresh.certificate.pem, try fresh.privateKey.pem], "the new CA is not whole")
        #expect(!FileManager.default.fileExists(atPath: stage))
    }

    // MARK: Item 2

    @Test("a store that had a CA never gets a new one implicitly: each command refuses, naming what is left")
    func noImplicitNewCA() throws {
        // The certificate deleted, its key still there.
        let store = try Self.newStore("nopem")
        try FileManager.default.removeItem(atPath: store + "/ca/root.pem")
        let key = try Data(contentsOf: URL(fileURLWithPath: store + "/ca/root.key"))
        for command in [["cert", "issue", "--name", "x", "--host", "a.test"], ["pins"], ["prepare", "tls-v1-2"], ["ca", "show"]] {
            let result = try TestEnvironment.tlsFixtures(command + ["--dir", store])
            CLIInputTests.expectOneLineError(result, mentioning: ["root.pem is missing", store + "/ca/root.key", "ca init --force"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/ca") == ["root.key"], "\(command) changed ca/")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "/ca/root.key")) == key)
        }
        // Only when asked, and then the key left is kept.
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]), mentioning: ["root.pem is missing"])
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--force", "--dir", store]).status == 0)
        let retired = Self.extras(store).filter { $0.hasPrefix("replaced-") }
        #expect(retired.count == 1 && (try? Data(contentsOf: URL(fileURLWithPath: "\(store)/ca/\(retired[0])/root.key"))) == key)

        // Both files gone, a retired CA left: still a store that had one.
        let replaced = try Self.newStore("noca")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--force", "--dir", replaced]).status == 0)
        for file in ["root.pem", "root.key"] { try FileManager.default.removeItem(atPath: "\(replaced)/ca/\(file)") }
        let refused = try TestEnvironment.tlsFixtures(["cert", "issue", "--name", "x", "--host", "a.test", "--dir", replaced])
        CLIInputTests.expectOneLineError(refused, mentioning: ["root.pem is missing", "replaced-"])
        #expect(!FileManager.default.fileExists(atPath: replaced + "/ca/root.pem"))
        // Only a key an older version set aside (root.key.orphaned-…): still a store that had one.
        let orphaned = try Self.newStore("orphaned")
        try FileManager.default.removeItem(atPath: orphaned + "/ca/root.pem")
        let aside = orphaned + "/ca/root.key.orphaned-20260101T000000Z"
        try FileManager.default.moveItem(atPath: orphaned + "/ca/root.key", toPath: aside)
        let refusedOrphan = try TestEnvironment.tlsFixtures(["pins", "--dir", orphaned])
        CLIInputTests.expectOneLineError(refusedOrphan, mentioning: ["root.pem is missing", aside, "ca init --force"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: orphaned + "/ca") == ["root.key.orphaned-20260101T000000Z"])
        // A store that never had one still makes it on first use.
        let fresh = TestEnvironment.temporaryDirectory("fresh").appendingPathComponent("store").path
        let first = try TestEnvironment.tlsFixtures(["cert", "issue", "--name", "x", "--host", "a.test", "--dir", fresh])
        #expect(first.status == 0 && FileManager.default.fileExists(atPath: fresh + "/ca/root.pem"), "\(first.combined)")
    }

    // MARK: Item 7

    @Test("two cert issue --name same with different hosts: one is stored, the other is told and writes nothing",
          .enabled(if: Platform.isLinux, "reads /proc/locks"))
    func concurrentIssuesOfOneName() throws {
        let store = try Self.newStore("same")
        let lock = URL(fileURLWithPath: store).appendingPathComponent("locks/leaf-same.lock")
        let held = try StoreLocks.hold(lock)
        let runs = try ["a.test", "b.test"].map { host in
            try Subprocess.launch([TestEnvironment.cli, "cert", "issue", "--dir", store, "--name", "same", "--host", host])
        }
        // Both have made (or read) the key and wait for the certificate's lock: only now may either write.
        let waiting = StoreLocks.await { StoreLocks.processes(lock, waiting: true).count == 2 }
        StoreLocks.release(held)
        #expect(waiting, "the two did not both reach the certificate's lock")
        let results = runs.map { $0.wait(timeout: 120) }
        let won = results.indices.filter { results[$0].status == 0 }
        #expect(won.count == 1, "\(results.map(\.combined))")
        guard won.count == 1 else { return }
        let lost = results[1 - won[0]]
        CLIInputTests.expectOneLineError(lost, mentioning: ["certs/same.pem was changed by another process", "nothing was written"])
        let stored = try TestEnvironment.tlsFixtures(["cert", "show", store + "/certs/same.pem"])
        #expect(stored.stdout.contains(["a.test", "b.test"][won[0]]) && !stored.stdout.contains(["a.test", "b.test"][1 - won[0]]),
                "\(stored.stdout)")
    }

    @Test("ca init --force while cert issue waits: the certificate is refused, never signed by the replaced CA",
          .enabled(if: Platform.isLinux, "reads /proc/locks"), .requires(Tools.openssl))
    func replacementRacingAnIssue() throws {
        let store = try Self.newStore("race")
        let lock = URL(fileURLWithPath: store).appendingPathComponent("locks/leaf-x.lock")
        let held = try StoreLocks.hold(lock)
        let issue = try Subprocess.launch([TestEnvironment.cli, "cert", "issue", "--dir", store, "--name", "x", "--host", "a.test"])
        // It has loaded the CA and waits to write: the CA is replaced under it.
        let waiting = StoreLocks.await { StoreLocks.processes(lock, waiting: true).count == 1 }
        let replaced = try TestEnvironment.tlsFixtures(["ca", "init", "--force", "--dir", store])
        StoreLocks.release(held)
        #expect(waiting && replaced.status == 0, "\(replaced.combined)")
        let result = issue.wait(timeout: 120)
        CLIInputTests.expectOneLineError(result, mentioning: ["the built-in CA", "was replaced", "nothing was written"])
        #expect(!FileManager.default.fileExists(atPath: store + "/certs/x.pem"), "a leaf was stored")
        // Run again, it is signed by the new CA.
        #expect(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "x", "--host", "a.test"]).status == 0)
        let verify = try TestEnvironment.openssl(["verify", "-CAfile", store + "/ca/root.pem", store + "/certs/x.pem"])
        #expect(verify.status == 0, "\(verify.combined)")
    }
}
