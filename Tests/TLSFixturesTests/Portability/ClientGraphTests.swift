import Foundation
import Testing

/// scripts/check-client-graph.py (run by `make lint`, before every `make test`) holds TLSFixturesClient to Foundation so
/// an iOS test target can link it. Here the checker itself is tested: it passes this package's own manifest and source
/// layout, and fails each way the client could come to reach OpenSSL or NIO.
@Suite("TLSFixturesClient's dependency graph check", .requires(Tools.python), .ownThreads)
struct ClientGraphTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/check-client-graph.py").path

    /// A `swift package describe --type json` for this package's client side, as SwiftPM 6 writes it.
    static func describe(clientDependencies: [String] = ["TLSFixturesWire"], wireProducts: [String] = []) -> String {
        let wireProductsJSON = wireProducts.isEmpty ? "" : #", "product_dependencies": ["# + wireProducts.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        let clientDependenciesJSON = clientDependencies.map { "\"\($0)\"" }.joined(separator: ",")
        return """
            {"name": "swift-tls-fixtures", "products": [
               {"name": "TLSFixturesClient", "targets": ["TLSFixturesClient"], "type": {"library": ["automatic"]}},
               {"name": "TLSFixturesClientXCTest", "targets": ["TLSFixturesClientXCTest"], "type": {"library": ["automatic"]}}],
             "targets": [
               {"name": "COpenSSL", "module_type": "SystemLibraryTarget", "path": "Sources/COpenSSL"},
               {"name": "TLSFixtures", "module_type": "SwiftTarget", "path": "Sources/TLSFixtures",
                "target_dependencies": ["TLSFixturesWire", "COpenSSL"], "product_dependencies": ["NIOCore"]},
               {"name": "TLSFixturesWire", "module_type": "SwiftTarget", "path": "Sources/TLSFixturesWire"\(wireProductsJSON)},
               {"name": "TLSFixturesClient", "module_type": "SwiftTarget", "path": "Sources/TLSFixturesClient",
                "target_dependencies": [\(clientDependenciesJSON)]},
               {"name": "TLSFixturesClientXCTest", "module_type": "SwiftTarget", "path": "Sources/TLSFixturesClientXCTest",
                "target_dependencies": ["TLSFixturesClient"]}]}
            """
    }

    /// Runs the checker on `describe` over a copy of the client's sources, with `extraSource` added to the client.
    static func check(_ describe: String, extraSource: String? = nil) throws -> Subprocess.Result {
        let root = TestEnvironment.temporaryDirectory("graph")
        for target in ["TLSFixturesWire", "TLSFixturesClient", "TLSFixturesClientXCTest"] {
            try FileManager.default.copyItem(at: TestEnvironment.packageRoot.appendingPathComponent("Sources/\(target)"),
                                             to: root.appendingPathComponent("Sources/\(target)", isDirectory: true)
                                                 .creatingParent())
        }
        if let extraSource {
            try extraSource.write(to: root.appendingPathComponent("Sources/TLSFixturesClient/Extra.swift"), atomically: true, encoding: .utf8)
        }
        let file = root.appendingPathComponent("describe.json")
        try describe.write(to: file, atomically: true, encoding: .utf8)
        return try Subprocess.run([try #require(Tools.python.path), script, "--describe", file.path, "--root", root.path])
    }

    @Test("the client as it is: Foundation only")
    func clean() throws {
        let result = try Self.check(Self.describe())
        #expect(result.status == 0, "\(result.combined)")
        #expect(result.stdout.contains("link Foundation only"))
    }

    @Test("a dependency on the library, on a package product, or an import of NIO fails, naming it")
    func failures() throws {
        let library = try Self.check(Self.describe(clientDependencies: ["TLSFixturesWire", "TLSFixtures"]))
        #expect(library.status == 1 && library.stdout.contains("reaches COpenSSL") && library.stdout.contains("NIOCore"), "\(library.combined)")
        let product = try Self.check(Self.describe(wireProducts: ["Logging"]))
        #expect(product.status == 1 && product.stdout.contains("TLSFixturesWire depends on the package product Logging"), "\(product.combined)")
        let imported = try Self.check(Self.describe(), extraSource: "import Foundation\n@preconcurrency import NIOCore\n")
        #expect(imported.status == 1 && imported.stdout.contains("Extra.swift imports NIOCore"), "\(imported.combined)")
    }
}

private extension URL {
    /// Makes this URL's parent folder and returns the URL.
    func creatingParent() throws -> URL {
        try FileManager.default.createDirectory(at: deletingLastPathComponent(), withIntermediateDirectories: true)
        return self
    }
}
