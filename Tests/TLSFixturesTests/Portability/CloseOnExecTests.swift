import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Linux only: it reads the child's descriptors in /proc. On Darwin the helper sets FD_CLOEXEC with fcntl.
#if os(Linux)
/// A process started with posix_spawn or fork and exec gets every descriptor not marked close-on-exec. The kit's own
/// sockets (the refusing OCSP port, the wildcard probe, the probe's connections) come from `closeOnExecStreamSocket`,
/// so a helper an app or test starts cannot keep them open after their owner closed them.
@Suite("Sockets the kit opens are not inherited by child processes")
struct CloseOnExecTests {
    /// The `socket:[INODE]` names of the descriptors process `pid` holds.
    static func sockets(of pid: Int32) -> Set<String> {
        let folder = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return Set(entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)") }
            .filter { $0.hasPrefix("socket:") })
    }

    /// The `socket:[INODE]` name of this process's descriptor `fd`.
    static func name(of fd: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
    }

    @Test("closeOnExecStreamSocket is close-on-exec and a child does not get it; a plain socket() is inherited (the control)")
    func notInherited() throws {
        let guarded = closeOnExecStreamSocket(AF_INET)
        let plain = socket(AF_INET, streamSocketType, 0)
        defer { close(guarded); close(plain) }
        #expect(guarded >= 0 && plain >= 0)
        #expect(fcntl(guarded, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(plain, F_GETFD) & FD_CLOEXEC == 0)

        // posix_spawn with no file actions, as a program that spawns helpers would: every descriptor not marked
        // close-on-exec goes to the child. (Foundation's Process closes the others itself.)
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("5"), nil]
        defer { for argument in argv { free(argument) } }
        let noEnvironment: [UnsafeMutablePointer<CChar>?] = [nil]
        #expect(posix_spawn(&pid, "/bin/sleep", nil, nil, argv, noEnvironment) == 0)
        defer { kill(pid, SIGKILL); var status: Int32 = 0; waitpid(pid, &status, 0) }
        let inherited = Self.sockets(of: pid)
        let guardedName = try #require(Self.name(of: guarded)), plainName = try #require(Self.name(of: plain))
        #expect(!inherited.contains(guardedName), "the child holds the close-on-exec socket: \(inherited)")
        #expect(inherited.contains(plainName), "the control was not inherited either, so this test shows nothing: \(inherited)")
    }
}
#endif
