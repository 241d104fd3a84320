import Foundation
import Testing
@testable import TLSFixtures

/// `tls-fixtures simulator trust|untrust` with a fake `xcrun` first on PATH: no Mac here, so the fake records every
/// invocation and answers `simctl list -j devices` as simctl does (its JSON shape: runtimes → devices with udid, name,
/// state), and the tests read back exactly what the real simctl would have been asked to do.
@Suite("simulator trust through a fake xcrun", .ownThreads)
struct SimulatorTrustTests {
    /// A folder with an `xcrun` script, its log and its answers.
    struct FakeXcrun {
        let directory = TestEnvironment.temporaryDirectory("xcrun")
        var log: URL { directory.appendingPathComponent("log") }
        var added: URL { directory.appendingPathComponent("added.pem") }

        init(devices: String, keychainStatus: Int = 0, keychainError: String = "") throws {
            try Data(devices.utf8).write(to: directory.appendingPathComponent("devices.json"))
            let script = """
                #!/bin/sh
                printf '%s\\n' "$*" >> '\(log.path)'
                if [ "$1 $2" = "simctl list" ]; then cat '\(directory.path)/devices.json'; exit 0; fi
                if [ "$1 $2" = "simctl keychain" ]; then
                  [ "$4" = add-root-cert ] && cp "$5" '\(added.path)'
                  [ -n '\(keychainError)' ] && echo '\(keychainError)' >&2
                  exit \(keychainStatus)
                fi
                echo "fake xcrun: unexpected $*" >&2; exit 99
                """
            let path = directory.appendingPathComponent("xcrun").path
            try Data(script.utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o755)
        }

        var calls: [String] { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

        func run(_ arguments: [String]) throws -> Subprocess.Result {
            try TestEnvironment.tlsFixtures(["simulator"] + arguments, environment: ["PATH": "\(directory.path):/usr/bin:/bin"])
        }
    }

    static let devices = """
        {"devices": {
          "com.apple.CoreSimulator.SimRuntime.iOS-17-5": [
            {"udid": "AAAA-1111", "name": "iPhone 15", "state": "Booted", "isAvailable": true},
            {"udid": "BBBB-2222", "name": "iPhone SE (3rd generation)", "state": "Shutdown", "isAvailable": true}],
          "com.apple.CoreSimulator.SimRuntime.iOS-18-0": [
            {"udid": "CCCC-3333", "name": "iPad Air", "state": "Booted", "isAvailable": true}]
        }}
        """

    var store: CertificateStore { TestEnvironment.suiteStore("SimulatorTrust") }

    @Test("trust adds the store's CA to every booted simulator, by UDID; untrust resets their keychains")
    func trustAndUntrustBooted() throws {
        let xcrun = try FakeXcrun(devices: Self.devices)
        let trust = try xcrun.run(["trust", "--dir", store.directory.path])
        #expect(trust.status == 0, "\(trust.combined)")
        let root = store.certificatePath(.root).path
        #expect(xcrun.calls == ["simctl list -j devices",
                                "simctl keychain AAAA-1111 add-root-cert \(root)",
                                "simctl keychain CCCC-3333 add-root-cert \(root)"])
        #expect(try Data(contentsOf: xcrun.added) == (try store.ca().certificate.pem))
        #expect(trust.stdout.contains("iPhone 15") && trust.stdout.contains("iPad Air") && !trust.stdout.contains("iPhone SE"))

        let one = try FakeXcrun(devices: Self.devices)
        #expect(try one.run(["trust", "--dir", store.directory.path, "--device", "cccc-3333"]).status == 0)
        #expect(one.calls.last == "simctl keychain CCCC-3333 add-root-cert \(root)" && one.calls.count == 2)

        let reset = try FakeXcrun(devices: Self.devices)
        let untrust = try reset.run(["untrust"])
        #expect(untrust.status == 0, "\(untrust.combined)")
        #expect(reset.calls == ["simctl list -j devices", "simctl keychain AAAA-1111 reset", "simctl keychain CCCC-3333 reset"])
    }

    @Test("one-line errors: no xcrun, nothing booted, an unknown or shut-down UDID, simctl failing")
    func errors() throws {
        func expectError(_ result: Subprocess.Result, _ says: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(result.status != 0, sourceLocation: sourceLocation)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && result.stderr.contains(says), "\(result.stderr)", sourceLocation: sourceLocation)
        }
        let noXcrun = try TestEnvironment.tlsFixtures(["simulator", "trust", "--dir", store.directory.path],
                                                      environment: ["PATH": TestEnvironment.temporaryDirectory("empty").path])
        expectError(noXcrun, "xcrun was not found on PATH")

        let shutDown = #"{"devices": {"r": [{"udid": "BBBB-2222", "name": "iPhone SE", "state": "Shutdown"}]}}"#
        let idle = try FakeXcrun(devices: shutDown)
        expectError(try idle.run(["trust", "--dir", store.directory.path]), "no simulator is booted")
        expectError(try idle.run(["trust", "--dir", store.directory.path, "--device", "BBBB-2222"]), "boot it first")
        expectError(try idle.run(["untrust", "--device", "ZZZZ-9999"]), "no simulator has the UDID ZZZZ-9999")
        #expect(idle.calls.allSatisfy { $0 == "simctl list -j devices" }, "simctl keychain ran for no booted simulator")

        let cltOnly = try FakeXcrun(devices: Self.devices, keychainStatus: 72, keychainError: "xcrun: error: unable to find utility simctl")
        expectError(try cltOnly.run(["trust", "--dir", store.directory.path]), "xcode-select -s /Applications/Xcode.app")
    }
}
