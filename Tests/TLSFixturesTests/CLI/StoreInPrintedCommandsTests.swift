import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures
import TLSFixturesClient

// Issue 26: the README's "Testing an iOS app" as a new user walks it; each test judged from outside — a real runner,
// the CLI's exit status and output, openssl reading what was made.

/// `simulator trust` without xcrun or a booted simulator changes nothing; printed commands name the store in use (10).
@Suite("simulator trust checks first; printed commands keep --dir", .ownThreads)
struct StoreInPrintedCommandsTests {
    /// Every file under `directory` with its bytes.
    static func snapshot(_ directory: URL) -> [String: Data] {
        let paths = FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String] ?? []
        return Dictionary(uniqueKeysWithValues: paths.compactMap { path in
            (try? Data(contentsOf: directory.appendingPathComponent(path))).map { (path, $0) }
        })
    }

    @Test("no xcrun: a store that did not exist still does not; one that did is byte for byte the same")
    func noXcrunChangesNothing() throws {
        let empty = ["PATH": TestEnvironment.temporaryDirectory("no-xcrun").path]
        let absent = TestEnvironment.temporaryDirectory("sim-absent").appendingPathComponent("store")
        let first = try TestEnvironment.tlsFixtures(["simulator", "trust", "--dir", absent.path], environment: empty)
        CLIInputTests.expectOneLineError(first, mentioning: ["xcrun was not found on PATH"])
        #expect(!FileManager.default.fileExists(atPath: absent.path), "a failed trust made a store")

        let existing = TestEnvironment.temporaryDirectory("sim-existing").appendingPathComponent("store")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", existing.path]).status == 0)
        let before = Self.snapshot(existing)
        let again = try TestEnvironment.tlsFixtures(["simulator", "trust", "--dir", existing.path], environment: empty)
        CLIInputTests.expectOneLineError(again, mentioning: ["xcrun was not found on PATH"])
        #expect(Self.snapshot(existing) == before)

        // Nothing booted: also nothing made.
        let shutDown = #"{"devices": {"r": [{"udid": "B-2", "name": "iPhone SE", "state": "Shutdown"}]}}"#
        let idle = try SimulatorTrustTests.FakeXcrun(devices: shutDown)
        CLIInputTests.expectOneLineError(try idle.run(["trust", "--dir", absent.path]),
                                         mentioning: ["no simulator is booted"])
        #expect(!FileManager.default.fileExists(atPath: absent.path), "a trust with nothing booted made a store")
    }

    @Test("fix lines and trust instructions name the --dir the user gave")
    func printedCommandsKeepTheStore() throws {
        let store = TestEnvironment.temporaryDirectory("dir-hints").appendingPathComponent("my store").path
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store]),
                                         mentioning: ["`tls-fixtures ca init --dir '\(store)'`"])
        let made = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store])
        #expect(made.status == 0, "\(made.combined)")
        #expect(made.stdout.contains("ca export --format der --out ca.cer --dir '\(store)'"), "\(made.stdout)")
    }
}
