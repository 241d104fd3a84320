import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This suite's store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
private func descriptorLimitStore() async -> CertificateStore { await TestEnvironment.suiteStoreWithSlowKeys("DescriptorLimit") }

/// macOS starts every process with a soft limit of 256 open files, and refuses (EINVAL) a soft limit above
/// kern.maxfilesperproc even when the hard limit is unlimited, which it is by default. The raise is clamped, checked,
/// and `serve` warns when what is left is too few for what it serves. Checked here with the clamp's arithmetic on
/// macOS's numbers and with `serve` under `ulimit -n 256`, soft only (a Mac's default) and hard (cannot be raised).
@Suite("macOS: the open-file limit is raised within what the OS allows, and a shortfall is reported")
struct DescriptorLimitTests {
    /// An unlimited hard limit (RLIM_INFINITY: all ones on Linux, 2^63 - 1 on Darwin; either is above any cap).
    static let unlimited = UInt64.max

    @Test("the soft limit asked for: the hard limit, capped at 65,536 and at Darwin's kern.maxfilesperproc")
    func target() {
        // A Mac: soft 256, hard unlimited, kern.maxfilesperproc 24,576 (asking for more fails with EINVAL).
        #expect(FileDescriptorLimit.target(current: 256, hard: Self.unlimited, perProcessMaximum: 24_576) == 24_576)
        #expect(FileDescriptorLimit.target(current: 256, hard: 10_240, perProcessMaximum: 24_576) == 10_240)
        // Linux: the hard limit is the whole story.
        #expect(FileDescriptorLimit.target(current: 1_024, hard: 1_048_576, perProcessMaximum: nil) == 65_536)
        #expect(FileDescriptorLimit.target(current: 1_024, hard: 20_000, perProcessMaximum: nil) == 20_000)
        // Nothing to raise.
        #expect(FileDescriptorLimit.target(current: 256, hard: 256, perProcessMaximum: nil) == nil)
        #expect(FileDescriptorLimit.target(current: 65_536, hard: Self.unlimited, perProcessMaximum: nil) == nil)
    }

    @Test("the warning names the limit, why it stayed there, and the ulimit that would do")
    func warning() throws {
        let stuck = DescriptorLimit(current: 256, hard: 256)
        let text = try #require(FileDescriptorLimit.warning(stuck, scenarios: 44, addresses: 2))
        #expect(text.contains("only 256") && text.contains("the hard limit is 256") && text.contains("ulimit -n 1024"), "\(text)")
        #expect(!text.contains("\n"))
        let darwin = DescriptorLimit(current: 200, hard: Self.unlimited, perProcessMaximum: 200)
        #expect(FileDescriptorLimit.warning(darwin, scenarios: 44, addresses: 2)?.contains("kern.maxfilesperproc is 200") == true)
        let failed = DescriptorLimit(current: 256, hard: Self.unlimited, raiseFailure: "EINVAL")
        #expect(FileDescriptorLimit.warning(failed, scenarios: 44, addresses: 2)?.contains("could not be raised") == true)
        // Enough: nothing to say. A few scenarios fit in 256.
        #expect(FileDescriptorLimit.warning(DescriptorLimit(current: 24_576, hard: Self.unlimited), scenarios: 44, addresses: 2) == nil)
        #expect(FileDescriptorLimit.warning(stuck, scenarios: 3, addresses: 2) == nil)
    }

    @Test("this process raised its limit as far as it may, and says so truthfully")
    func thisProcess() {
        let limit = FileDescriptorLimit.raiseOnce()
        var now = rlimit()
        #if canImport(Glibc)
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &now)
        #else
        getrlimit(RLIMIT_NOFILE, &now)
        #endif
        #expect(limit.current == UInt64(now.rlim_cur) && limit.hard == UInt64(now.rlim_max))
        // The rule, written out here rather than asked of FileDescriptorLimit: the hard limit, capped at 65,536 and, on
        // Darwin, at kern.maxfilesperproc (read with sysctl below). A process may always raise its soft limit up to its
        // hard limit (setrlimit(2): "an unprivileged process may set only its soft limit to a value in the range from 0
        // up to the hard limit"), so here the raise cannot have failed.
        var wanted = min(UInt64(now.rlim_max), 65_536)
        #if canImport(Darwin)
        var perProcess: Int32 = 0
        var size = MemoryLayout<Int32>.size
        if sysctlbyname("kern.maxfilesperproc", &perProcess, &size, nil, 0) == 0, perProcess > 0 {
            wanted = min(wanted, UInt64(perProcess))
        }
        #endif
        #expect(limit.raiseFailure == nil, "\(limit)")
        #expect(limit.current >= wanted, "soft limit \(limit.current), wanted at least \(wanted): \(limit)")
    }

    /// `tls-fixtures serve` (every scenario) under a bash `ulimit`, until its report is out.
    static func serve(limit: String, _ names: [String] = []) async throws
        -> (stderr: String, limits: String, document: CatalogDocument) {
        let store = await descriptorLimitStore()
        let base = try ServeEndToEndTests.freePortBase()
        let scratch = TestEnvironment.temporaryDirectory("ulimit")
        let out = scratch.appendingPathComponent("out"), err = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let handles = [try FileHandle(forWritingTo: out), try FileHandle(forWritingTo: err)]
        let serve = try StoppableChild(
            "/bin/bash", ["-c", "ulimit \(limit) && exec \"$0\" \"$@\"", TestEnvironment.cli, "serve", "--json",
                          "--port-base", "\(base)", "--dir", store.directory.path] + names,
            standardOutput: handles[0], standardError: handles[1])
        for handle in handles { try? handle.close() }
        defer { serve.stopBlocking("serve under ulimit \(limit)") }
        // A hang detector: a cold store makes an RSA-8192 key first, and may queue behind other tests' keys.
        var document: CatalogDocument? = nil
        await Poll.until(timeout: 600, every: .milliseconds(100)) {
            document = (try? Data(contentsOf: out)).flatMap { try? JSONDecoder().decode(CatalogDocument.self, from: $0) }
            return document != nil || !serve.isRunning
        }
        let stderr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        let served = try #require(document, "serve under ulimit \(limit) did not report: \(stderr)")
        // It serves, whatever the limit: the ats-compliant port answers a real handshake.
        if let port = served.scenarios.first(where: { $0.name == "ats-compliant" })?.port {
            let probe = TLSProbe(trusting: [try store.ca().certificate])
            let result = try await probe.probe(ProbeTarget(host: "localhost", port: port))
            #expect(result.failure == nil && result.http?.status == 200, "under ulimit \(limit): \(result.failure ?? "")")
        }
        let limits = limits(of: serve.processIdentifier)
        // Every scenario it listed is served while it runs: its port takes a connection now (the report lists the
        // catalog's, each `serving`, or `unsupported` where its file requires what the linked OpenSSL lacks).
        for entry in served.scenarios {
            let requires = (try? ScenarioCatalog.builtIn.scenario(named: entry.name))?.expect.handshake?.requires
            if entry.status == .unsupported, requires != nil {
                continue
            }
            #expect(entry.status == .serving,
                    "under ulimit \(limit): \(entry.name) is \(entry.status.rawValue): \(entry.reason ?? "")")
            if let port = entry.port, entry.status == .serving {
                #expect(Ports.accepts(port), "under ulimit \(limit): \(entry.name) does not answer on \(port)")
            }
        }
        return (stderr, limits, served)
    }

    /// The "Max open files" line of a Linux process.
    static func limits(of pid: Int32) -> String {
        #if os(Linux)
        let text = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        #else
        return ""
        #endif
    }

    @Test("serve under `ulimit -Sn 256` (a Mac's default): raised to the hard limit, no warning",
          .enabled(if: FileDescriptorLimit.raiseOnce().hard > 1_024,
                   "shows a raise above 256, which this run's hard limit (\(FileDescriptorLimit.raiseOnce().hard)) does not allow"))
    func softLimit() async throws {
        let (stderr, limits, _) = try await Self.serve(limit: "-Sn 256")
        // Every scenario at 256 files warns (hardLimit shows it), so no warning shows the raise on any OS; Linux also
        // reads the exact soft limit the served process ended with from /proc.
        #expect(!stderr.contains("warning: this process may open only"), "\(stderr)")
        guard HostOS.current == .linux else { return }
        let fields = limits.split(separator: " ", omittingEmptySubsequences: true)
        let soft = fields.count > 4 ? UInt64(fields[3]) : nil
        let hard = fields.count > 4 ? (fields[4] == "unlimited" ? Self.unlimited : UInt64(fields[4])) : nil
        // Raised from 256 to the hard limit, capped at 65,536 (the rule, written out rather than asked of the code).
        let expected = hard.map { min($0, 65_536) }
        #expect(soft != nil && soft == expected, "\(limits)")
    }

    @Test("serve under `ulimit -n 256` (hard): every scenario still served, and one line says the limit is short")
    func hardLimit() async throws {
        let (stderr, _, document) = try await Self.serve(limit: "-n 256")
        // Every scenario of the catalog is in the report (and `serve` checked each one answers).
        #expect(document.scenarios.map(\.name) == ScenarioCatalog.builtIn.names)
        let warnings = stderr.split(separator: "\n").filter { $0.contains("warning: this process may open only 256 files") }
        #expect(warnings.count == 1, "\(stderr)")
        #expect(warnings.first?.contains("ulimit -n") == true)
        // Three scenarios fit in 256: no warning.
        let (few, _, _) = try await Self.serve(limit: "-n 256", ["ats-compliant", "tls-v1-2", "expired"])
        #expect(!few.contains("warning: this process may open only"), "\(few)")
    }

    @Test("too few descriptors to listen at all: a one-line error naming the limit and the fix, not a crash")
    func tooFewToListen() async throws {
        let store = await descriptorLimitStore()
        let base = try ServeEndToEndTests.freePortBase()
        let result = try await Subprocess.runAwaiting(["/bin/bash", "-c", "ulimit -n 48 && exec \"$0\" \"$@\"", TestEnvironment.cli, "serve",
                                         "--port-base", "\(base)", "--dir", store.directory.path],
                                        timeout: 300)
        #expect(result.status == 1 && !result.timedOut, "\(result.combined)")
        // Progress lines (keys made now, or in the background on a cold store) are not part of the error.
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("generating") && !$0.hasPrefix("warning")
            && !$0.contains("in the background (first run only)") }
        #expect(lines.count == 1 && lines.first?.contains("too many open files (this process may open 48)") == true
                && lines.first?.contains("ulimit -n") == true, "\(result.stderr)")
    }
}
