import Foundation
import Testing

/// scripts/ensure-deps.sh, run with `uname` faked: what a new Mac (Homebrew, no ss, no Chromium) and a Debian machine
/// (as a user, and as root) get. Every program the script may call is a stub or a link in one folder, and PATH is
/// that folder alone, so nothing on this machine leaks in.
@Suite("macOS: make's dependency check on a faked Mac and Debian", .requires(Tools.python))
struct EnsureDepsTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/ensure-deps.sh").path

    /// A machine made of stubs: `os` for uname, `uid` for id, an optional Homebrew prefix and a record of apt-get calls.
    final class FakeMachine {
        let root = TestEnvironment.temporaryDirectory("fake-machine")
        var bin: URL { root.appendingPathComponent("bin") }
        var brewPrefix: URL { root.appendingPathComponent("homebrew") }
        var aptLog: URL { root.appendingPathComponent("apt-get.log") }
        /// Where pkg-config looks (its built-in folders are switched off).
        var pcFolder: URL { root.appendingPathComponent("pkgconfig") }

        init(os: String, uid: Int = 1000, homebrew: Bool = false, xcode: Bool = true, commands: [String] = []) throws {
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: pcFolder, withIntermediateDirectories: true)
            try stub("uname", "echo \(os)")
            try stub("id", "echo \(uid)")
            try stub("apt-get", "echo \"$@\" >> '\(aptLog.path)'")
            // Full Xcode's XCTest, or only the Command Line Tools (which lack it).
            if os == "Darwin" {
                try stub("xcrun", xcode ? "[ \"$*\" = '--find xctest' ] && echo /Applications/Xcode.app/xctest"
                                        : "echo 'xcrun: error: unable to find utility \"xctest\"' >&2; exit 72")
            }
            if homebrew {
                try FileManager.default.createDirectory(at: brewPrefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
                try stub("brew", "[ \"$1\" = --prefix ] && echo '\(brewPrefix.path)'")
            }
            // What every run needs from the real machine.
            for name in ["bash", "sed", "tr", "grep", "cat"] + commands { try link(name) }
        }

        func stub(_ name: String, _ body: String, in folder: URL? = nil) throws {
            let file = (folder ?? bin).appendingPathComponent(name)
            try "#!/bin/sh\n\(body)\n".write(to: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
        }

        /// A link to this machine's program (python3 to the interpreter itself: pyenv's shim needs its own PATH).
        func link(_ name: String) throws {
            let target: String
            if name == "python3" {
                let path = try #require(Tools.python.path)
                target = try Subprocess.run([path, "-c", "import sys; print(sys.executable)"]).stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            } else {
                target = try #require(EnsureDepsTests.locate(name), "\(name) is not on this machine")
            }
            try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent(name).path, withDestinationPath: target)
        }

        /// An OpenSSL .pc file where pkg-config will find it: Homebrew's keg, or the system's folder.
        func installOpenSSLPC(inKeg: Bool) throws {
            let folder = inKeg ? brewPrefix.appendingPathComponent("opt/openssl@3/lib/pkgconfig") : pcFolder
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try "Name: OpenSSL\nDescription: test\nVersion: 3.6.0\nLibs: -lssl -lcrypto\nCflags:\n"
                .write(to: folder.appendingPathComponent("openssl.pc"), atomically: true, encoding: .utf8)
        }

        func run(_ group: String) throws -> Subprocess.Result {
            // /bin/bash by path: the script's `#!/usr/bin/env bash` would need env on PATH, and PATH is the stubs.
            try Subprocess.run(["/bin/bash", script, group], environment: [
                "PATH": bin.path, "ENSURE_DEPS_SBIN": "", "PKG_CONFIG_LIBDIR": pcFolder.path, "PKG_CONFIG_PATH": "",
            ], timeout: 30)
        }

        var aptCalls: [String] { ((try? String(contentsOf: aptLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
    }

    static let systemFolders = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]

    /// Where this machine keeps a program: this process's PATH first, then the system's folders, then Homebrew's
    /// (Apple silicon's /opt/homebrew, Intel's /usr/local), where a Mac has pkg-config even when a test runner's PATH
    /// (Xcode's, say) leaves them out.
    static func locate(_ name: String, path: String? = ProcessInfo.processInfo.environment["PATH"],
                       systemFolders: [String] = EnsureDepsTests.systemFolders,
                       homebrewPrefixes: [String] = ["/opt/homebrew", "/usr/local"]) -> String? {
        let folders = (path ?? "").split(separator: ":").map(String.init) + systemFolders + homebrewPrefixes.map { "\($0)/bin" }
        return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("pkg-config is found through PATH, and through a Homebrew prefix that PATH lacks (a fake prefix)")
    func locatesThroughPathAndHomebrew() throws {
        let machine = try FakeMachine(os: "Darwin")
        let prefix = machine.root.appendingPathComponent("opt-homebrew")
        try FileManager.default.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
        try machine.stub("pkg-config", "exit 0", in: prefix.appendingPathComponent("bin"))
        // A Mac: not on PATH, not in a system folder; only Homebrew's prefix has it.
        #expect(Self.locate("pkg-config", path: "/nonexistent", systemFolders: [], homebrewPrefixes: [prefix.path])
                == prefix.appendingPathComponent("bin/pkg-config").path)
        #expect(Self.locate("pkg-config", path: "/nonexistent", systemFolders: [], homebrewPrefixes: []) == nil)
        // PATH comes first: the same name in a folder on PATH wins over the prefix.
        try machine.stub("pkg-config", "exit 0")
        #expect(Self.locate("pkg-config", path: machine.bin.path, systemFolders: [], homebrewPrefixes: [prefix.path])
                == machine.bin.appendingPathComponent("pkg-config").path)
    }

    @Test("a Mac with only the Command Line Tools: make test stops, saying XCTest needs Xcode and how to select it")
    func macWithoutXcode() throws {
        let mac = try FakeMachine(os: "Darwin", homebrew: true, xcode: false, commands: ["pkg-config", "python3"])
        try mac.installOpenSSLPC(inKeg: true)
        // Building and serving need no XCTest.
        let core = try mac.run("core")
        #expect(core.status == 0 && core.stderr.isEmpty, "\(core.combined)")
        let test = try mac.run("test")
        #expect(test.status == 1, "\(test.combined)")
        #expect(test.stderr.contains("XCTest") && test.stderr.contains("sudo xcode-select -s /Applications/Xcode.app"),
                "\(test.stderr)")
        // make build compiles the XCTest glue too.
        let build = try mac.run("xctest")
        #expect(build.status == 1 && build.stderr.contains("sudo xcode-select -s /Applications/Xcode.app"), "\(build.combined)")
        #expect(mac.aptCalls.isEmpty)
    }

    @Test("a new Mac with Homebrew's openssl@3 and pkg-config: make test goes on without ss, Chromium or certutil, naming what each missing tool skips")
    func macWithHomebrew() throws {
        let mac = try FakeMachine(os: "Darwin", homebrew: true, commands: ["pkg-config", "python3"])
        try mac.installOpenSSLPC(inKeg: true)
        let core = try mac.run("core")
        #expect(core.status == 0 && core.stderr.isEmpty, "\(core.combined)")
        let test = try mac.run("test")
        #expect(test.status == 0, "\(test.combined)")
        // Homebrew's curl and python3 are advised (the tests judge with them), nothing from apt, no ss, no Chromium.
        #expect(test.stderr.contains("brew install curl python3"), "\(test.stderr)")
        #expect(test.stderr.contains("Keychain") && test.stderr.contains("LibreSSL"), "\(test.stderr)")
        for absent in ["apt-get", "iproute2", "chromium", "libnss3-tools", "util-linux"] {
            #expect(!test.stderr.contains(absent), "\(absent) advised on macOS: \(test.stderr)")
        }
        #expect(mac.aptCalls.isEmpty)
        // With Homebrew's curl and python3 as well, nothing is left to say.
        try FileManager.default.createDirectory(at: mac.brewPrefix.appendingPathComponent("opt/curl/bin"), withIntermediateDirectories: true)
        try mac.stub("curl", "exit 0", in: mac.brewPrefix.appendingPathComponent("opt/curl/bin"))
        try mac.stub("python3", "exit 0", in: mac.brewPrefix.appendingPathComponent("bin"))
        let complete = try mac.run("test")
        #expect(complete.status == 0 && complete.stderr.isEmpty, "\(complete.combined)")
    }

    @Test("a Mac without openssl@3, pkg-config or Homebrew is told the exact brew command, and the target stops")
    func macMissingRequirements() throws {
        let noKeg = try FakeMachine(os: "Darwin", homebrew: true, commands: ["pkg-config", "python3"])
        let result = try noKeg.run("core")
        #expect(result.status == 1 && result.stderr.contains("brew install openssl@3"), "\(result.combined)")

        let noPkgConfig = try FakeMachine(os: "Darwin", homebrew: true, commands: ["python3"])
        try noPkgConfig.installOpenSSLPC(inKeg: true)
        let second = try noPkgConfig.run("core")
        #expect(second.status == 1 && second.stderr.contains("brew install pkg-config openssl@3"), "\(second.combined)")

        let noHomebrew = try FakeMachine(os: "Darwin", commands: ["python3"])
        let third = try noHomebrew.run("core")
        #expect(third.status == 1 && third.stderr.contains("https://brew.sh") && third.stderr.contains("brew install openssl@3 pkg-config"),
                "\(third.combined)")
        #expect(noHomebrew.aptCalls.isEmpty)
    }

    @Test("the README's brew lines are what the script asks a bare Mac for, required and optional")
    func readmeMatches() throws {
        let section = try #require(try Documentation.section("## Install", in: "README.md"))
        let brewLines = section.split(separator: "\n").filter { $0.hasPrefix("brew install ") }
            .map { Set($0.dropFirst("brew install ".count).prefix { $0 != "#" }.split(separator: " ").map(String.init)) }
        #expect(brewLines.count == 2, "\(brewLines)")
        // A Mac with Homebrew and python3 but none of the packages: what is required stops make, what is optional not.
        let mac = try FakeMachine(os: "Darwin", homebrew: true, commands: ["python3"])
        let result = try mac.run("test")
        func packages(after marker: String) -> Set<String> {
            guard let line = result.stderr.split(separator: "\n").first(where: { $0.contains(marker) }),
                  let range = line.range(of: marker) else { return [] }
            return Set(line[range.upperBound...].split(separator: " ").map(String.init))
        }
        #expect(result.status == 1)
        #expect(packages(after: "Install with: brew install ") == brewLines.first, "\(result.stderr)")
        #expect(packages(after: "to run them: brew install ") == brewLines.last, "\(result.stderr)")
    }

    @Test("make bench on a Mac says it is Linux only")
    func benchOnMac() throws {
        let mac = try FakeMachine(os: "Darwin", homebrew: true, commands: ["pkg-config", "python3"])
        let result = try mac.run("bench")
        #expect(result.status == 1 && result.stderr.contains("Linux only"), "\(result.combined)")
    }

    @Test("Debian as a user: optional tools are advised with the apt-get line and the target goes on; a missing header stops it")
    func debianUser() throws {
        let debian = try FakeMachine(os: "Linux", commands: ["pkg-config", "python3"])
        try debian.installOpenSSLPC(inKeg: false)
        let result = try debian.run("test")
        #expect(result.status == 0, "\(result.combined)")
        #expect(result.stderr.contains("sudo apt-get install -y openssl curl iproute2 util-linux chromium libnss3-tools"), "\(result.stderr)")
        #expect(result.stderr.contains("the dashboard browser check is skipped"), "\(result.stderr)")
        #expect(debian.aptCalls.isEmpty, "a user's run must not call apt-get")

        let bare = try FakeMachine(os: "Linux", commands: ["python3"])
        let missing = try bare.run("core")
        #expect(missing.status == 1 && missing.stderr.contains("sudo apt-get install -y pkg-config libssl-dev"), "\(missing.combined)")
    }

    @Test("Debian as root (CI): everything, optional tools included, is installed, waiting for another apt's lock")
    func debianRoot() throws {
        let ci = try FakeMachine(os: "Linux", uid: 0, commands: ["pkg-config", "python3"])
        try ci.installOpenSSLPC(inKeg: false)
        let result = try ci.run("test")
        #expect(result.status == 0, "\(result.combined)")
        let call = try #require(ci.aptCalls.first, "apt-get was not called: \(result.combined)")
        #expect(call == "-o DPkg::Lock::Timeout=600 install -y -qq openssl curl iproute2 util-linux chromium libnss3-tools", "\(call)")
    }

    @Test("an unknown group is refused, naming the groups there are")
    func unknownGroup() throws {
        let machine = try FakeMachine(os: "Linux")
        let result = try machine.run("everything")
        #expect(result.status == 2 && result.stderr.contains("use one of: bench browser core matrix matrix-test test xctest"), "\(result.combined)")
    }
}
