import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This suite's store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
private var wildcardStore: CertificateStore { TestEnvironment.suiteStore("WildcardConflict") }

/// On Darwin a fixture binding 127.0.0.1:P with SO_REUSEADDR succeeds while another server holds *:P, and each then
/// gets part of the clients. Linux refuses that bind; the fixture now refuses it on both. The decision is checked with
/// BSD's answers as data, and the probe itself against real sockets here.
@Suite("macOS: a port shared with a server on every address is reported in use, as on Linux")
struct WildcardConflictTests {
    @Test("the wildcard of each family is what is probed; wildcards and port 0 are not probed at all")
    func decision() {
        #expect(WildcardConflict.wildcard(covering: "127.0.0.1") == "0.0.0.0")
        #expect(WildcardConflict.wildcard(covering: "127.0.0.2") == "0.0.0.0")
        #expect(WildcardConflict.wildcard(covering: "::1") == "::")
        #expect(WildcardConflict.wildcard(covering: "0.0.0.0") == nil && WildcardConflict.wildcard(covering: "::") == nil)

        // BSD's answers to the probe (a throwaway socket with SO_REUSEADDR binding the wildcard):
        // another socket on *:P → EADDRINUSE: the split case, reported in use.
        var probed: [String] = []
        #expect(WildcardConflict.held(port: 9801, covering: "127.0.0.1") { address, _ in probed.append(address); return EADDRINUSE })
        #expect(probed == ["0.0.0.0"])
        // Only TIME_WAIT leftovers or sockets on other specific addresses → the bind succeeds: no conflict.
        #expect(!WildcardConflict.held(port: 9801, covering: "::1") { _, _ in 0 })
        // Another error (no IPv6 here) is not a conflict either: the real bind decides.
        #expect(!WildcardConflict.held(port: 9801, covering: "::1") { _, _ in EADDRNOTAVAIL })
        // Nothing to probe.
        #expect(!WildcardConflict.held(port: 0, covering: "127.0.0.1") { _, _ in Issue.record("probed port 0"); return EADDRINUSE })
        #expect(!WildcardConflict.held(port: 9801, covering: "0.0.0.0") { _, _ in Issue.record("probed a wildcard"); return EADDRINUSE })
    }

    /// A listening TCP socket with SO_REUSEADDR (as servers set it) on `address`:`port`; its descriptor.
    static func listen(_ address: String, _ port: Int) throws -> Int32 {
        let v6 = address.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, streamSocketType, 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var ok: Bool
        if v6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, address, &socketAddress.sin6_addr)
            ok = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
            }
        } else {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, address, &socketAddress.sin_addr)
            ok = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }
        ok = ok && Glibc_or_Darwin_listen(fd) == 0
        guard ok else { closeDescriptor(fd); throw POSIXError(.EADDRINUSE) }
        return fd
    }

    @Test("the probe finds a real server on *:P, and nothing once it is gone")
    func realWildcardListener() throws {
        let port = try Ports.unused()
        let other = try Self.listen("0.0.0.0", port)
        #expect(WildcardConflict.held(port: port, covering: "127.0.0.1"), "a server on 0.0.0.0:\(port) was not seen")
        closeDescriptor(other)
        #expect(!WildcardConflict.held(port: port, covering: "127.0.0.1"))
        if Ports.hasIPv6Loopback {
            let v6 = try Self.listen("::", port)
            #expect(WildcardConflict.held(port: port, covering: "::1"))
            #expect(!WildcardConflict.held(port: port, covering: "127.0.0.1"), "an IPv6-only server does not hold 0.0.0.0")
            closeDescriptor(v6)
        } else {
            TestEnvironment.skipPart("the [::] wildcard check", because: "this machine has no usable ::1")
        }
    }

    @Test("a fixture on a port a server holds on every address fails with 'port in use', and holds nothing")
    func fixtureRefuses() async throws {
        let port = try Ports.unused()
        let other = try Self.listen("0.0.0.0", port)
        defer { closeDescriptor(other) }
        await #expect {
            try await FixtureServer.start("ats-compliant", store: wildcardStore,
                                          configuration: FixtureConfiguration(port: port))
        } throws: { error in
            let error = error as? FixtureError
            return error?.code == .portInUse && error?.port == port && error?.address == "127.0.0.1"
        }
    }

    @Test("HeldPort: a running fixture is not released, a stopped one is, even when a new listener has its port")
    func heldPort() async throws {
        let fixture = try await FixtureServer.start("ats-compliant", store: wildcardStore)
        let held = Ports.held(fixture.port)
        #expect(!held.released, "a running fixture counts as released")
        if Ports.listeners(fixture.port) != nil { #expect(held.listeners?.isEmpty == false, "/proc shows no listener on \(fixture.port)") }
        await fixture.stop()
        #expect(held.released && held.reusable, "its sockets: \(held.sockets)")
        // Another server on the same port, as another test's fixture would be: still released, since its socket is new.
        let other = try Self.listen("127.0.0.1", fixture.port)
        defer { closeDescriptor(other) }
        #expect(Ports.accepts(fixture.port))
        if held.listeners?.isEmpty == false { #expect(held.released && held.reusable, "its sockets: \(held.sockets)") }
    }

    @Test("a stopped fixture's port is free again at once: its TIME_WAIT connections are no conflict")
    func timeWaitIsNoConflict() async throws {
        let first = try await FixtureServer.start("ats-compliant", store: wildcardStore)
        let port = first.port
        // Plain HTTP to the TLS port: the fixture refuses and closes first, the client then closes quietly, which
        // leaves the fixture's side of the connection in TIME_WAIT.
        let client = try RawConnection(port: port)
        client.send(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        let outcome = client.readUntilClosed(timeout: 10)
        client.close()
        #expect(outcome.closedAfter != nil && !outcome.reset, "the fixture did not close the connection")
        await first.stop()
        if Tools.ss.isUsable {   // the case this is about: the fixture's port has a connection in TIME_WAIT
            let waiting = try await Subprocess.runAwaiting(
                ["ss", "-H", "-tan", "state", "time-wait", "sport", "= :\(port)"]).stdout
            #expect(!waiting.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "no TIME_WAIT connection on \(port)")
        }
        #expect(!WildcardConflict.held(port: port, covering: "127.0.0.1"))
        let again = try await FixtureServer.start("ats-compliant", store: wildcardStore,
                                                  configuration: FixtureConfiguration(port: port))
        #expect(again.port == port)
        await again.stop()
    }
}

@inline(__always) private func Glibc_or_Darwin_listen(_ fd: Int32) -> Int32 { listen(fd, 16) }
