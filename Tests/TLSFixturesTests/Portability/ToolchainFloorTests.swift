import Foundation
import Testing

/// scripts/check-toolchain-floor.py, which `make lint` runs: the README states the oldest Swift the package builds with,
/// and no manifest SwiftPM would load may need a newer one. Xcode 16 (Swift 6.0–6.1) could not resolve this package
/// while the README promised it, because swift-log 1.16.2's manifest says 6.2. The dependencies here are fixtures: a
/// graph in `swift package show-dependencies --format json`'s shape, and a checkout folder per dependency.
@Suite("macOS: the toolchain floor the README states", .requires(Tools.python), .ownThreads)
struct ToolchainFloorTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/check-toolchain-floor.py").path

    static func run(_ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run([try #require(Tools.python.path), script] + arguments)
    }

    /// A README stating `floor`, and a graph of dependencies (each with its manifests, file name to text, and its own
    /// dependencies), checked by the script.
    struct Dependency {
        var name: String
        var version = "9.9.9"
        var manifests: [String: String]
        var dependencies: [Dependency] = []
    }

    static func check(floor: String, _ dependencies: [Dependency]) throws -> Subprocess.Result {
        let folder = TestEnvironment.temporaryDirectory("floor")
        let readme = folder.appendingPathComponent("README.md")
        try "# x\n\nThe toolchain floor is **Swift \(floor)**: Xcode something.\n"
            .write(to: readme, atomically: true, encoding: .utf8)
        func node(_ dependency: Dependency) throws -> [String: Any] {
            let checkout = folder.appendingPathComponent("checkouts/\(dependency.name)")
            try FileManager.default.createDirectory(at: checkout, withIntermediateDirectories: true)
            for (file, text) in dependency.manifests {
                try text.write(to: checkout.appendingPathComponent(file), atomically: true, encoding: .utf8)
            }
            return ["identity": dependency.name, "name": dependency.name, "url": "https://example.test/\(dependency.name)",
                    "version": dependency.version, "path": checkout.path,
                    "dependencies": try dependency.dependencies.map(node)]
        }
        let graph: [String: Any] = ["identity": "root", "name": "root", "path": folder.path,
                                    "dependencies": try dependencies.map(node)]
        let graphFile = folder.appendingPathComponent("graph.json")
        try JSONSerialization.data(withJSONObject: graph).write(to: graphFile)
        return try run(["--readme", readme.path, "--dependencies-json", graphFile.path])
    }

    static func manifest(_ version: String) -> String {
        "// swift-tools-version:\(version)\nimport PackageDescription\nlet package = Package(name: \"x\")\n"
    }

    @Test("the repository: the README's floor and the first line of each of its three manifests agree")
    func repository() throws {
        let root = TestEnvironment.packageRoot
        let manifests = ["Package.swift", "Matrix/Package.swift", "Fuzz/Package.swift"]
            .flatMap { ["--manifest", root.appendingPathComponent($0).path] }
        let result = try Self.run(["--readme", root.appendingPathComponent("README.md").path] + manifests)
        #expect(result.status == 0 && result.stdout.contains("Swift 6.2: 3 manifest(s)"), "\(result.combined)")
    }

    @Test("a resolved dependency whose manifest needs a newer Swift fails, naming it, its version, the line and the fix")
    func newerDependencyFails() throws {
        // Two levels down, as swift-collections sits under swift-nio: the whole graph is read.
        let result = try Self.check(floor: "6.2", [
            Dependency(name: "direct", manifests: ["Package.swift": Self.manifest("6.1")], dependencies: [
                Dependency(name: "fake-log", version: "1.17.0", manifests: ["Package.swift": Self.manifest("6.3")]),
            ]),
        ])
        #expect(result.status == 1, "\(result.combined)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stdout)")
        #expect(result.stdout.contains("fake-log 1.17.0 needs Swift 6.3 (Package.swift: swift-tools-version:6.3), above the "
                                       + "README's floor, Swift 6.2: pin fake-log"), "\(result.stdout)")
        #expect(!result.stdout.contains("direct"), "\(result.stdout)")
        // The same graph under a floor that reads it passes.
        let raised = try Self.check(floor: "6.3", [Dependency(name: "fake-log",
                                                              manifests: ["Package.swift": Self.manifest("6.3")])])
        #expect(raised.status == 0, "\(raised.combined)")
    }

    /// SwiftPM's choice among Package.swift and Package@swift-*.swift (ManifestLoader.findManifest), and its reading of
    /// the tools-version line: (floor, manifests, within the floor?).
    static let selections: [(String, [String: String], Bool)] = [
        // The exact and the major-only version-specific manifests win.
        ("6.2", ["Package.swift": manifest("6.3"), "Package@swift-6.2.swift": manifest("6.2")], true),
        ("6.2", ["Package.swift": manifest("6.3"), "Package@swift-6.swift": manifest("6.0")], true),
        // swift-collections 1.6.0: Package.swift says 6.2, Package@swift-6.0.swift 6.0. Swift 6.1 finds no key of its
        // own, and Package.swift is too new for it, so the closest older one, 6.0, is read.
        ("6.1", ["Package.swift": manifest("6.2"), "Package@swift-6.0.swift": manifest("6.0")], true),
        ("6.2", ["Package.swift": manifest("6.2"), "Package@swift-6.0.swift": manifest("6.0")], true),
        // A version-specific manifest for a newer Swift is not this floor's.
        ("6.2", ["Package.swift": manifest("6.3"), "Package@swift-6.3.swift": manifest("6.3")], false),
        // The line as SwiftPM reads it: spacing, a terminator, a patch version.
        ("6.2", ["Package.swift": "// swift-tools-version: 6.3;(some comment)\n"], false),
        ("6.2", ["Package.swift": "//swift-tools-version:6.2.1\n"], false),
        ("6.2", ["Package.swift": "// Swift-Tools-Version:6.2\n"], true),
    ]

    @Test("the manifest is chosen as SwiftPM at the floor would choose it", arguments: selections)
    func manifestSelection(floor: String, manifests: [String: String], within: Bool) throws {
        let result = try Self.check(floor: floor, [Dependency(name: "dep", manifests: manifests)])
        #expect(result.status == (within ? 0 : 1), "floor \(floor), \(manifests.keys.sorted()): \(result.combined)")
    }

    @Test("the README states the floor once; the package's own manifests state the same")
    func oneStatement() throws {
        let folder = TestEnvironment.temporaryDirectory("floor-readme")
        let readme = folder.appendingPathComponent("README.md")
        try "no floor here\n".write(to: readme, atomically: true, encoding: .utf8)
        let ours = TestEnvironment.packageRoot.appendingPathComponent("Package.swift").path
        let none = try Self.run(["--readme", readme.path, "--manifest", ours])
        #expect(none.status == 1 && none.stderr.contains("states the toolchain floor 0 ways"), "\(none.combined)")
        try "The toolchain floor is **Swift 6.2**. Later: the toolchain floor is **Swift 6.0**.\n"
            .write(to: readme, atomically: true, encoding: .utf8)
        let two = try Self.run(["--readme", readme.path, "--manifest", ours])
        #expect(two.status == 1 && two.stderr.contains("2 ways (6.0, 6.2)"), "\(two.combined)")

        try "The toolchain floor is **Swift 6.2**.\n".write(to: readme, atomically: true, encoding: .utf8)
        let old = folder.appendingPathComponent("Package.swift")
        try Self.manifest("6.0").write(to: old, atomically: true, encoding: .utf8)
        let stale = try Self.run(["--readme", readme.path, "--manifest", old.path])
        #expect(stale.status == 1, "\(stale.combined)")
        #expect(stale.stdout.contains("swift-tools-version:6.0, but the README's floor is Swift 6.2: make its first line "
                                      + "`// swift-tools-version:6.2`"), "\(stale.combined)")
    }
}
