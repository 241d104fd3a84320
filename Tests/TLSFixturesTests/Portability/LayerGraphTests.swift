import Foundation
import Testing

/// scripts/check-layers.py (run by `make lint`, before every `make test`) holds the rules the targets cannot state on
/// their own: arrows point down, every target imports exactly what it declares, only the OpenSSL owners import
/// COpenSSL, the ATS model is Foundation only. `make lint` runs it on this package (a test cannot: `swift package
/// describe` would wait for the lock `swift test` holds); here it passes a well-formed stack and fails each way a change
/// could break a rule, naming the file or target.
@Suite("The layers' dependency rules", .requires(Tools.python), .ownThreads)
struct LayerGraphTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/check-layers.py").path
    static let layers = ["TLSFixturesWire", "TLSFixturesATS", "TLSFixturesNSC", "TLSFixturesOpenSSL", "TLSFixturesPKI",
                         "TLSFixturesScenario", "TLSFixturesServer", "TLSFixturesProbe", "TLSFixturesFleet",
                         "TLSFixturesRunner", "TLSFixtures"]

    /// A package of layers in a temporary folder, each depending on the one below and importing it, with `sources`
    /// written into it (path → text) and `extraDependencies` added (target → dependencies), then checked.
    /// `extraTargets` are more targets (JSON objects) beside the stack.
    static func check(sources: [String: String] = [:], extraDependencies: [String: [String]] = [:],
                      products: [String: [String]] = [:], extraTargets: [String] = []) throws -> Subprocess.Result {
        let root = TestEnvironment.temporaryDirectory("layers")
        var targets: [String] = []
        for (index, name) in layers.enumerated() {
            let below = index == 0 ? [] : [layers[index - 1]]
            let dependencies = (below + extraDependencies[name, default: []]).map { "\"\($0)\"" }.joined(separator: ",")
            let productList = products[name, default: []].map { "\"\($0)\"" }.joined(separator: ",")
            targets.append(#"{"name": "\#(name)", "module_type": "SwiftTarget", "path": "Sources/\#(name)", "target_dependencies": [\#(dependencies)], "product_dependencies": [\#(productList)]}"#)
            let folder = root.appendingPathComponent("Sources/\(name)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let imports = ["Foundation"] + below
            try imports.map { "import \($0)\n" }.joined().write(to: folder.appendingPathComponent("Layer.swift"), atomically: true, encoding: .utf8)
        }
        targets.append(#"{"name": "COpenSSL", "module_type": "SystemLibraryTarget", "path": "Sources/COpenSSL"}"#)
        targets += extraTargets
        for (path, text) in sources {
            let file = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        let file = root.appendingPathComponent("describe.json")
        try #"{"name": "swift-tls-fixtures", "products": [], "targets": [\#(targets.joined(separator: ","))]}"#
            .write(to: file, atomically: true, encoding: .utf8)
        return try Subprocess.run([try #require(Tools.python.path), script, "--describe", file.path, "--root", root.path])
    }

    @Test("a well-formed stack passes; each broken rule fails, naming what broke it")
    func rules() throws {
        let clean = try Self.check()
        #expect(clean.status == 0, "\(clean.combined)")

        let upward = try Self.check(extraDependencies: ["TLSFixturesPKI": ["TLSFixturesProbe"]])
        #expect(upward.status == 1 && upward.stdout.contains("TLSFixturesPKI depends on TLSFixturesProbe, which is not below it"),
                "\(upward.combined)")

        let rawOpenSSL = try Self.check(sources: ["Sources/TLSFixturesPKI/Raw.swift": "import COpenSSL\n"])
        #expect(rawOpenSSL.status == 1 && rawOpenSSL.stdout.contains("Sources/TLSFixturesPKI/Raw.swift imports COpenSSL"),
                "\(rawOpenSSL.combined)")

        let atsImportsNIO = try Self.check(sources: ["Sources/TLSFixturesATS/Loop.swift": "@preconcurrency import NIOCore\n"])
        #expect(atsImportsNIO.status == 1 && atsImportsNIO.stdout.contains("Loop.swift imports NIOCore; it must be Foundation only"),
                "\(atsImportsNIO.combined)")

        let httpSource = ["Sources/TLSFixturesFleet/Status.swift": "import TLSFixturesProbe\nimport NIOHTTP1\n"]
        let fleetSpeaksHTTP = try Self.check(sources: httpSource, products: ["TLSFixturesFleet": ["NIOHTTP1"]])
        #expect(fleetSpeaksHTTP.status == 1
                && fleetSpeaksHTTP.stdout.contains("TLSFixturesFleet depends on NIOHTTP1: the fleet knows no HTTP"),
                "\(fleetSpeaksHTTP.combined)")

        let atsLinksNIO = try Self.check(products: ["TLSFixturesATS": ["NIOCore"]])
        #expect(atsLinksNIO.status == 1 && atsLinksNIO.stdout.contains("depends on the package product NIOCore"), "\(atsLinksNIO.combined)")

        let atsReachesOpenSSL = try Self.check(extraDependencies: ["TLSFixturesATS": ["COpenSSL"]])
        #expect(atsReachesOpenSSL.status == 1 && atsReachesOpenSSL.stdout.contains("TLSFixturesATS: reaches COpenSSL"),
                "\(atsReachesOpenSSL.combined)")
    }

    /// Issue 23: TLSFixturesPKI imported Logging without declaring swift-log, and built only because SwiftPM happened
    /// to build Logging first for another target; TLSFixturesScenario declared TLSFixturesATS and imported nothing of it.
    @Test("imports match declarations: an undeclared import fails, and so does a declaration nothing imports")
    func importsMatchDeclarations() throws {
        // The same fixture as the issue found: PKI imports a dependency's module that only Server declares.
        let undeclared = try Self.check(sources: ["Sources/TLSFixturesPKI/Store.swift": "import Foundation\nimport Logging\n",
                                                  "Sources/TLSFixturesServer/Log.swift": "import Logging\n"],
                                        products: ["TLSFixturesServer": ["Logging"]])
        #expect(undeclared.status == 1 && undeclared.stdout.contains(
            "TLSFixturesPKI: Sources/TLSFixturesPKI/Store.swift imports Logging (a module of a package dependency), "
            + "which TLSFixturesPKI does not declare"), "\(undeclared.combined)")
        #expect(undeclared.stdout.split(separator: "\n").count == 1, "\(undeclared.stdout)")

        // A layer two floors down is reachable through the one below, but importing it needs its own declaration.
        let transitive = try Self.check(sources: ["Sources/TLSFixturesServer/Wire.swift": "import TLSFixturesWire\n"])
        #expect(transitive.status == 1 && transitive.stdout.contains(
            "TLSFixturesServer: Sources/TLSFixturesServer/Wire.swift imports TLSFixturesWire (a target of this "
            + "package)"),
                "\(transitive.combined)")

        let unused = try Self.check(extraDependencies: ["TLSFixturesScenario": ["TLSFixturesATS"]])
        #expect(unused.status == 1 && unused.stdout.contains(
            "TLSFixturesScenario: declares TLSFixturesATS but no file of it imports it"), "\(unused.combined)")

        // Declared and imported passes; an executable a test target runs is declared without an import; a Python script
        // in a Swift string is not Swift.
        let tests = #"{"name": "Tests", "type": "test", "module_type": "SwiftTarget", "path": "Tests/Tests", "#
            + #""target_dependencies": ["TLSFixtures", "tool"], "product_dependencies": ["NIOCore"]}"#
        let tool = #"{"name": "tool", "type": "executable", "module_type": "SwiftTarget", "path": "Sources/tool", "#
            + #""target_dependencies": ["TLSFixtures"]}"#
        let clean = try Self.check(sources: [
            "Tests/Tests/T.swift": "import Testing\n@testable import TLSFixtures\nimport NIOCore\n"
                + "let s = \"\"\"\nimport socket\n\"\"\"\n",
            "Sources/tool/main.swift": "import TLSFixtures\n",
        ], extraTargets: [tests, tool])
        #expect(clean.status == 0, "\(clean.combined)")
    }

    /// CONTRIBUTING.md's Architecture table is the graph as declared: a row that names a dependency the manifest does
    /// not have, or leaves one out, fails `make lint`, and so does a CONTRIBUTING.md whose table is gone.
    @Test("CONTRIBUTING.md's Architecture table states each target's dependencies as declared")
    func architectureStatesTheGraph() throws {
        func guide(_ scenarioRow: String) -> String {
            "# x\n\n## Architecture\n\n| Layer | Target | Job | Why | Depends on |\n|---|---|---|---|---|\n"
                + "| Server | `TLSFixturesServer` | j | w | Scenario |\n"
                + "| Scenario | `TLSFixturesScenario` | j | w | \(scenarioRow) |\n"
                + "| Umbrella | `TLSFixtures` | j | w | every layer above |\n\n## Next\n"
        }
        let more = "import TLSFixturesWire\nimport Logging\n"
        let right = try Self.check(sources: ["CONTRIBUTING.md": guide("PKI, Wire; Logging"),
                                             "Sources/TLSFixturesScenario/More.swift": more],
                                   extraDependencies: ["TLSFixturesScenario": ["TLSFixturesWire"]],
                                   products: ["TLSFixturesScenario": ["Logging"]])
        #expect(right.status == 0, "\(right.combined)")
        let wrong = try Self.check(sources: ["CONTRIBUTING.md": guide("PKI, ATS"),
                                             "Sources/TLSFixturesScenario/More.swift": more],
                                   extraDependencies: ["TLSFixturesScenario": ["TLSFixturesWire"]],
                                   products: ["TLSFixturesScenario": ["Logging"]])
        #expect(wrong.status == 1 && wrong.stdout.contains(
            "CONTRIBUTING.md, Architecture: TLSFixturesScenario's dependencies are Logging, TLSFixturesPKI, "
            + "TLSFixturesWire (the table lacks Logging, TLSFixturesWire) (the table adds TLSFixturesATS)"), "\(wrong.combined)")
        let moved = try Self.check(sources: ["CONTRIBUTING.md": "# x\n\n## Layers\n\nelsewhere\n",
                                             "Sources/TLSFixturesScenario/More.swift": more],
                                   extraDependencies: ["TLSFixturesScenario": ["TLSFixturesWire"]],
                                   products: ["TLSFixturesScenario": ["Logging"]])
        #expect(moved.status == 1 && moved.stdout.contains("CONTRIBUTING.md has no \"## Architecture\" section"),
                "\(moved.combined)")
    }
}
