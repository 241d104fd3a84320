import Foundation
import Testing

/// `defer { Task { await fixture.stop() } }` stops a fixture some time after the scope ends, if ever: the test (or the
/// process) can finish first and leave it listening. Tests and every example a user copies stop fixtures in scope —
/// `withFixture`, `startFixture`'s teardown, or an explicit `await fixture.stop()`.
@Suite("Fixtures are stopped in scope")
struct StructuredStopTests {
    /// Code lines only: a comment may name the pattern to warn against it.
    static func offenders(in root: URL, extensions: [String]) throws -> [String] {
        let folder = root.lastPathComponent
        guard let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        var found: [String] = []
        for case let file as URL in files where extensions.contains(file.pathExtension) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                let isDocExample = code.hasPrefix("/// ") && !code.contains("does not")
                guard !code.hasPrefix("//") || isDocExample else { continue }
                if code.range(of: #"defer\s*\{\s*Task\s*\{[^}]*\.stop\(\)"#, options: .regularExpression) != nil {
                    found.append("\(folder)/\(file.lastPathComponent):\(number + 1)")
                }
            }
        }
        return found
    }

    @Test("no test, source example or documentation example stops a fixture from an unstructured task")
    func noDeferredTaskStops() throws {
        let root = TestEnvironment.packageRoot
        #expect(try Self.offenders(in: root.appendingPathComponent("Tests"), extensions: ["swift"]).filter { !$0.contains("StructuredStopTests") } == [])
        #expect(try Self.offenders(in: root.appendingPathComponent("Sources"), extensions: ["swift"]) == [])
        for page in try Documentation.pages() {
            #expect(!page.text.contains("defer { Task"), "\(page.path)")
        }
        // The check itself finds the pattern (it would otherwise pass on anything).
        let sample = TestEnvironment.temporaryDirectory("structured-stop")
        try "let f = try await FixtureServer.start(\"x\")\n        defer { Task { await f.stop() } }\n"
            .write(to: sample.appendingPathComponent("Sample.swift"), atomically: true, encoding: .utf8)
        #expect(try Self.offenders(in: sample, extensions: ["swift"]).count == 1)
    }
}
