import Foundation
import Testing
@testable import TLSFixtures

/// Issue 29, item 13: `make install` and `make uninstall` follow the GNU conventions (PREFIX, BINDIR, DESTDIR), install
/// a CLI that runs from anywhere, and remove exactly what they installed. Run with this test run's own (debug) build
/// products (SKIP_BUILD=1 PRODUCTS=…): a release build takes minutes, and `swift test` must not start a build of its own.
@Suite("make install and make uninstall", .ownThreads)
struct MakeInstallTests {
    /// Install what this test run built, without building.
    static var installed: [String] { ["SKIP_BUILD=1", "PRODUCTS=\(TestEnvironment.productsDirectory.path)"] }

    static func make(_ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run(["make", "-C", TestEnvironment.packageRoot.path, "--no-print-directory"] + arguments, timeout: 120)
    }

    @Test("DESTDIR + PREFIX: one executable in DESTDIR/PREFIX/bin that runs anywhere; uninstall removes it and nothing else")
    func stagedInstall() throws {
        let staging = TestEnvironment.temporaryDirectory("destdir")
        let neighbour = staging.appendingPathComponent("opt/tf/bin/other-tool")
        try FileManager.default.createDirectory(at: neighbour.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("#!/bin/sh\n".utf8).write(to: neighbour)
        let installed = try Self.make(["install", "PREFIX=/opt/tf", "DESTDIR=\(staging.path)"] + Self.installed)
        #expect(installed.status == 0, "\(installed.combined)")
        let binary = staging.appendingPathComponent("opt/tf/bin/tls-fixtures")
        #expect(FileSystem.mode(of: binary) == 0o755)
        // Nothing outside DESTDIR/PREFIX: the staging folder holds only what was put there.
        let everything = try FileManager.default.subpathsOfDirectory(atPath: staging.path).sorted()
        #expect(everything == ["opt", "opt/tf", "opt/tf/bin", "opt/tf/bin/other-tool", "opt/tf/bin/tls-fixtures"], "\(everything)")
        // It runs on its own, from another folder, with what it embeds (the catalog).
        let version = try Subprocess.run([binary.path, "--version"], currentDirectory: staging, timeout: 60)
        #expect(version.status == 0 && version.stdout.contains("linked with OpenSSL"), "\(version.combined)")
        let list = try Subprocess.run([binary.path, "scenarios", "list"], currentDirectory: staging, timeout: 60)
        #expect(list.status == 0 && list.stdout.contains("ats-compliant"))
        let removed = try Self.make(["uninstall", "PREFIX=/opt/tf", "DESTDIR=\(staging.path)"])
        #expect(removed.status == 0 && !FileManager.default.fileExists(atPath: binary.path), "\(removed.combined)")
        #expect(FileManager.default.fileExists(atPath: neighbour.path), "uninstall removed a file it did not install")
    }

    @Test("PREFIX alone (a user's ~/.local) needs no root; BINDIR overrides the folder")
    func prefixAndBindir() throws {
        let home = TestEnvironment.temporaryDirectory("prefix")
        let installed = try Self.make(["install", "PREFIX=\(home.path)/.local"] + Self.installed)
        #expect(installed.status == 0 && FileManager.default.isExecutableFile(atPath: "\(home.path)/.local/bin/tls-fixtures"), "\(installed.combined)")
        let custom = try Self.make(["install", "BINDIR=\(home.path)/tools"] + Self.installed)
        #expect(custom.status == 0 && FileManager.default.isExecutableFile(atPath: "\(home.path)/tools/tls-fixtures"), "\(custom.combined)")
        #expect(try Self.make(["uninstall", "PREFIX=\(home.path)/.local"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: "\(home.path)/.local/bin/tls-fixtures"))
    }

    /// `sudo make install` (a PREFIX only root may write: /usr/local/bin on an Apple silicon Mac) builds as the user
    /// who ran sudo, so .build and SwiftPM's caches stay theirs; as anyone else nothing changes.
    @Test("under sudo the build runs as the user who ran sudo, and only the copy as root (dry run)")
    func sudoBuildsAsTheUser() throws {
        let plan = try Self.make(["-n", "install", "SUDO_USER=someone"]).stdout
        let lines = plan.split(separator: "\n").map(String.init)
        let build = try #require(lines.first { $0.contains("swift build -c release --product tls-fixtures") },
                                 "\(plan)")
        let copy = try #require(lines.first { $0.hasPrefix("install -m 0755") }, "\(plan)")
        if TestEnvironment.isRoot {
            #expect(build.contains("sudo -H -u someone env PATH=\"$PATH\" swift build -c release"), "\(build)")
            #expect(copy.contains("sudo -H -u someone env PATH=\"$PATH\" swift build -c release --show-bin-path"),
                    "the products folder is asked of the user's build: \(copy)")
            #expect(!copy.hasPrefix("sudo"), "the copy itself runs as root: \(copy)")
        } else {
            #expect(!plan.contains("sudo -H -u"), "not root: nothing to hand back to a user: \(plan)")
        }
        let asRoot = try Self.make(["-n", "install", "SUDO_USER=root"]).stdout
        #expect(!asRoot.contains("sudo -H -u"), "root's own sudo: \(asRoot)")
    }

    @Test("by default make install builds the release configuration into /usr/local/bin (dry run)")
    func defaults() throws {
        let plan = try Self.make(["-n", "install"]).stdout
        #expect(plan.contains("swift build -c release --product tls-fixtures"), "\(plan)")
        #expect(plan.contains("\"/usr/local/bin/tls-fixtures\""), "\(plan)")
    }
}
