import Foundation
import Testing

/// scripts/check-layers.py (run by `make lint`, before every `make test`) holds the rules the targets cannot state on
/// their own: arrows point down, only the OpenSSL owners import COpenSSL, the ATS model is Foundation only. `make lint`
/// runs it on this package (a test cannot: `swift package describe` would wait for the lock `swift test` holds); here
/// it passes a well-formed stack and fails each way a change could break a rule, naming the file or target.
@Suite("The layers' dependency rules", .requires(Tools.python))
struct LayerGraphTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/check-layers.py").path
    static let layers = ["TLSFixturesWire", "TLSFixturesATS", "TLSFixturesOpenSSL", "TLSFixturesPKI", "TLSFixturesScenario",
                         "TLSFixturesServer", "TLSFixturesProbe", "TLSFixturesRunner", "TLSFixtures"]

    /// A package of empty layers in a temporary folder, each depending on the one below, with `sources` written into
    /// it (path → text) and `extraDependencies` added (target → dependencies), then checked.
    static func check(sources: [String: String] = [:], extraDependencies: [String: [String]] = [:],
                      products: [String: [String]] = [:]) throws -> Subprocess.Result {
        let root = TestEnvironment.temporaryDirectory("layers")
        var targets: [String] = []
        for (index, name) in layers.enumerated() {
            let below = index == 0 ? [] : [layers[index - 1]]
            let dependencies = (below + extraDependencies[name, default: []]).map { "\"\($0)\"" }.joined(separator: ",")
            let productList = products[name, default: []].map { "\"\($0)\"" }.joined(separator: ",")
            targets.append(#"{"name": "\#(name)", "module_type": "SwiftTarget", "path": "Sources/\#(name)", "target_dependencies": [\#(dependencies)], "product_dependencies": [\#(productList)]}"#)
            let folder = root.appendingPathComponent("Sources/\(name)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try "import Foundation\n".write(to: folder.appendingPathComponent("Empty.swift"), atomically: true, encoding: .utf8)
        }
        targets.append(#"{"name": "COpenSSL", "module_type": "SystemLibraryTarget", "path": "Sources/COpenSSL"}"#)
        for (path, text) in sources {
            try text.write(to: root.appendingPathComponent(path), atomically: true, encoding: .utf8)
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

        let atsLinksNIO = try Self.check(products: ["TLSFixturesATS": ["NIOCore"]])
        #expect(atsLinksNIO.status == 1 && atsLinksNIO.stdout.contains("depends on the package product NIOCore"), "\(atsLinksNIO.combined)")

        let atsReachesOpenSSL = try Self.check(extraDependencies: ["TLSFixturesATS": ["COpenSSL"]])
        #expect(atsReachesOpenSSL.status == 1 && atsReachesOpenSSL.stdout.contains("TLSFixturesATS: reaches COpenSSL"),
                "\(atsReachesOpenSSL.combined)")
    }
}
