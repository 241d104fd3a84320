import Foundation
import Testing

/// Builds the examples as a user would: a package outside this checkout's own, whose manifest is the README's with its
/// dependency pointed at this checkout by path, one test target per product group as the manifest declares them,
/// Swift 6 language mode (the manifest's tools version) and warnings as errors. It lives in `.build/doc-examples`, at
/// a fixed path, so a second run rebuilds only what changed; the first builds the dependencies (4 to 5 minutes here).
/// `make test` runs this suite in a process of its own, before the others, so that build does not compete with them.
enum DocExamples {
    static let folder = TestEnvironment.packageRoot.appendingPathComponent(".build/doc-examples")
    static let dependencyLine =
        #".package(url: "https://github.com/swift-tls-fixtures/swift-tls-fixtures", branch: "main")"#

    /// The test targets the manifest declares, each with the products it depends on.
    static func testTargets(_ manifest: String) -> [(name: String, products: [String])] {
        manifest.components(separatedBy: ".testTarget(").dropFirst().compactMap { declaration in
            guard let name = declaration.firstMatch(of: /name: "([^"]+)"/)?.output.1 else { return nil }
            let body = declaration.components(separatedBy: "]),").first ?? declaration
            return (String(name), body.matches(of: /\.product\(name: "([^"]+)"/).map { String($0.output.1) })
        }
    }

    /// What the file starts with: the imports the page around the example names (FoundationNetworking for URLSession
    /// on Linux, as the pages say).
    static func imports(_ products: DocExample.Products) -> String {
        let modules = products == .library ? ["TLSFixtures", "TLSFixturesXCTest"]
            : ["TLSFixturesClient", "TLSFixturesClientXCTest"]
        return "import Foundation\n#if canImport(FoundationNetworking)\nimport FoundationNetworking\n#endif\n"
            + "import Testing\nimport XCTest\n" + modules.map { "import \($0)\n" }.joined()
    }

    /// The example as a file of a user's test target.
    static func file(_ example: DocExample, index: Int) throws -> String {
        let code = try example.block().body
        let indented = code.components(separatedBy: "\n").map { $0.isEmpty ? $0 : "    " + $0 }.joined(separator: "\n")
        let body: String
        switch example.context {
        case .xctestMethods: body = "final class Example\(index): XCTestCase {\n\(indented)\n}\n"
        case .suiteMembers: body = "struct Example\(index) {\n\(indented)\n}\n"
        case .fileScope: body = code + "\n"
        case .statements(let prelude): body = "func example\(index)() throws {\n    \(prelude)\n\(indented)\n}\n"
        }
        return imports(example.products) + "\n// \(example.page): \(example.marker)\n" + body
    }

    /// Writes `path` only when its text changed, so an unchanged example is not recompiled.
    static func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if (try? String(contentsOf: url, encoding: .utf8)) != text {
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
    }
}

@Suite("The documentation's Swift examples, built as a user's package", .serialized, .ownThreads)
struct DocExamplesConsumerTests {
    /// Not in the README: a program of the consumer's that starts and stops the whole runner through the public API
    /// (`FixtureRunner`) and reads the dashboard's catalog over HTTP in between. Arguments: a free port base, a store.
    static let runnerProgram = """
        import Foundation
        #if canImport(FoundationNetworking)
        import FoundationNetworking
        #endif
        import TLSFixtures

        var configuration = FixtureRunner.Configuration()
        configuration.portBase = Int(CommandLine.arguments[1]) ?? 0
        configuration.store = .at(URL(fileURLWithPath: CommandLine.arguments[2]))
        configuration.scenarios = ["ats-compliant", "http"]
        configuration.legacyHelper = .none
        let runner = try await FixtureRunner.start(configuration)
        let dashboard = runner.dashboardURL!
        let (catalog, _) = try await URLSession.shared.data(from: dashboard.appendingPathComponent("scenarios.json"))
        print("started \\(dashboard.absoluteString); scenarios.json: \\(catalog.count) bytes")
        await runner.stop()
        print("stopped")

        """

    /// Writes the consumer package (the README's manifest, its dependency by path, every example in the test target
    /// its products need, and `RunnerConsumer`) and builds it; a second call rebuilds only what changed.
    static func build() throws -> Subprocess.Result {
        let manifest = try DocExample.readmeManifest()
        #expect(manifest.contains(DocExamples.dependencyLine), "the README's manifest names the package otherwise")
        // The dependency by path, through a link named as the package is, so `package: "swift-tls-fixtures"` holds.
        let link = DocExamples.folder.appendingPathComponent("swift-tls-fixtures")
        try FileManager.default.createDirectory(at: DocExamples.folder, withIntermediateDirectories: true)
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) != TestEnvironment.packageRoot.path {
            try? FileManager.default.removeItem(at: link)
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: TestEnvironment.packageRoot)
        }
        let consumer = DocExamples.folder.appendingPathComponent("consumer")
        let runnerTarget = """
                .executableTarget(name: "RunnerConsumer", dependencies: [
                    .product(name: "TLSFixtures", package: "swift-tls-fixtures"),
                ]),

            """
        try DocExamples.write(
            manifest.replacingOccurrences(of: DocExamples.dependencyLine,
                                          with: #".package(path: "../swift-tls-fixtures")"#)
                .replacingOccurrences(of: "    targets: [\n", with: "    targets: [\n" + runnerTarget),
            to: consumer.appendingPathComponent("Package.swift"))
        try DocExamples.write(runnerProgram, to: consumer.appendingPathComponent("Sources/RunnerConsumer/main.swift"))

        let targets = DocExamples.testTargets(manifest)
        #expect(targets.count == 2, "\(targets)")
        var written = Set<String>()
        for (index, example) in DocExample.all.enumerated() {
            // The target that links the example's products, as the manifest's comment lines say.
            let target = try #require(targets.first { $0.products.contains(example.products.rawValue) },
                                      "no test target of the README's manifest links \(example.products.rawValue)")
            let path = "Tests/\(target.name)/\(example.marker).swift"
            try DocExamples.write(try DocExamples.file(example, index: index),
                                  to: consumer.appendingPathComponent(path))
            written.insert(path)
        }
        // Examples removed from the documentation leave no file behind.
        for target in targets {
            let folder = consumer.appendingPathComponent("Tests/\(target.name)")
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            where !written.contains("Tests/\(target.name)/\(name)") {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(name))
            }
        }
        return try Subprocess.run(
            ["swift", "build", "--build-tests", "--package-path", consumer.path,
             "--scratch-path", DocExamples.folder.appendingPathComponent("scratch").path,
             "-Xswiftc", "-warnings-as-errors"],
            timeout: 3600)   // a hang detector: the first build takes minutes
    }

    @Test("the README's manifest and every example build outside the checkout, in Swift 6 mode, without warnings")
    func consumerBuilds() throws {
        let built = try Self.build()
        #expect(built.status == 0 && !built.timedOut, "the documentation's examples do not build:\n\(built.combined)")
    }

    /// Issue 37's "must show": a package outside the checkout starts the whole runner in one call and stops it in one.
    @Test("a package outside the checkout starts and stops the whole runner through the public API")
    func consumerRunsTheRunner() throws {
        let built = try Self.build()
        try #require(built.status == 0 && !built.timedOut, "the consumer does not build:\n\(built.combined)")
        let program = DocExamples.folder.appendingPathComponent("scratch/debug/RunnerConsumer").path
        let base = try ServeEndToEndTests.freePortBase()
        let ran = try Subprocess.run([program, "\(base)", TestEnvironment.sharedStore.directory.path], timeout: 600)
        #expect(ran.status == 0 && !ran.timedOut, "\(ran.combined)")
        #expect(ran.stdout.contains("started http://localhost:\(base)/; scenarios.json: "), "\(ran.combined)")
        #expect(ran.stdout.hasSuffix("stopped\n"), "\(ran.combined)")
        for port in [base, base + 1] { #expect(!Ports.accepts(port), "port \(port) listens after the program ended") }
    }
}
