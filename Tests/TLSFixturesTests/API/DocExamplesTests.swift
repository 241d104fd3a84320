import Foundation
import Testing
import TLSFixtures
import TLSFixturesCLISupport

/// A Swift example the documentation shows: the region of a test between `// README: MARKER begin` and `… end`, shown
/// on one page without the test type's indentation, and how a user's file holds it (what the page says around it).
struct DocExample: CustomStringConvertible, Sendable {
    /// What surrounds the example in a user's file.
    enum Context: Sendable {
        /// Methods of an `XCTestCase` subclass.
        case xctestMethods
        /// Members of a Swift Testing suite type (a `struct`): the example has a stored property.
        case suiteMembers
        /// Declarations at file scope.
        case fileScope
        /// Statements in a throwing function, after `prelude`.
        case statements(prelude: String)
    }

    /// Which of the README manifest's products the example's target links.
    enum Products: String, Sendable {
        case library = "TLSFixtures"
        case client = "TLSFixturesClient"
    }

    var marker: String
    /// The test file, under Tests/TLSFixturesTests/.
    var file: String
    /// The page that shows it: the one place it appears.
    var page: String
    var context: Context
    var products: Products
    var description: String { marker }

    /// Every example the documentation shows. Adding an example to a page means adding it here, with its context.
    static let all: [DocExample] = [
        DocExample(marker: "xctest-example", file: "API/XCTestHelperTests.swift", page: "README.md",
                   context: .xctestMethods, products: .library),
        DocExample(marker: "remote-xctest-example", file: "API/RemoteReadmeExampleTests.swift", page: "README.md",
                   context: .xctestMethods, products: .client),
        DocExample(marker: "swift-testing-example", file: "API/WithFixtureTests.swift", page: "docs/macos.md",
                   context: .fileScope, products: .library),
        DocExample(marker: "ephemeral-example", file: "API/NewUserFrictionTests.swift", page: "docs/macos.md",
                   context: .fileScope, products: .library),
        DocExample(marker: "name-clash-example", file: "API/NewUserFrictionTests.swift", page: "docs/macos.md",
                   context: .fileScope, products: .library),
        DocExample(marker: "runner-example", file: "Runner/FixtureRunnerTests.swift", page: "docs/macos.md",
                   context: .suiteMembers, products: .library),
        DocExample(marker: "coded-error-example", file: "API/CodedErrorTests.swift", page: "docs/macos.md",
                   context: .statements(prelude: "let store = CertificateStore.resolved()"), products: .library),
        DocExample(marker: "remote-swift-testing-example", file: "API/RemoteReadmeExampleTests.swift",
                   page: "docs/ios.md", context: .suiteMembers, products: .client),
        DocExample(marker: "report-card-example", file: "API/RemoteReadmeExampleTests.swift",
                   page: "docs/report-card.md", context: .xctestMethods, products: .client),
    ]

    /// The README's manifest: the one Swift block that is no test's region.
    static func readmeManifest() throws -> String {
        let blocks = Documentation.codeBlocks(in: try Documentation.page("README.md"), page: "README.md")
        return try #require(blocks.first { $0.language == "swift" && $0.body.hasPrefix("// swift-tools-version:") },
                            "the README shows no Package.swift").body
    }

    /// The test's region, without the indentation its lines share.
    func region() throws -> String {
        let source = try String(
            contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Tests/TLSFixturesTests/\(file)"),
            encoding: .utf8)
        let lines = source.components(separatedBy: "\n")
        let begin = try #require(lines.firstIndex { $0.contains("README: \(marker) begin") }, "\(file): no region")
        let end = try #require(lines.firstIndex { $0.contains("README: \(marker) end") }, "\(file): no region end")
        let body = lines[(begin + 1)..<end]
        let indent = body.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map { $0.prefix { $0 == " " }.count }.min() ?? 0
        return body.map { String($0.dropFirst(min(indent, $0.prefix { $0 == " " }.count))) }.joined(separator: "\n")
    }

    /// The documentation's code block that shows it: the one Swift block containing the region.
    func block() throws -> Documentation.CodeBlock {
        let region = try region()
        let blocks = try Documentation.pages().flatMap { Documentation.codeBlocks(in: $0.text, page: $0.path) }
            .filter { $0.language == "swift" && $0.body.contains(region) }
        return try #require(blocks.first, "no page shows \(marker)")
    }
}

@Suite("The documentation's Swift examples are the tests' code, each shown once", .ownThreads)
struct DocExamplesTests {
    @Test("each example is its test's region, shown on its page and nowhere else", arguments: DocExample.all)
    func shownOnceWhereExpected(example: DocExample) throws {
        let region = try example.region()
        let pages = try Documentation.pages()
        let shown = pages.map { page in (page.path, page.text.components(separatedBy: region).count - 1) }
            .filter { $0.1 > 0 }
        #expect(shown.map(\.0) == [example.page] && shown.first?.1 == 1,
                "\(example.marker) from \(example.file): shown \(shown), not once in \(example.page):\n\(region)")
    }

    @Test("every Swift block in the documentation is a tested example or the README's manifest")
    func noUntestedSwift() throws {
        let regions = try DocExample.all.map { try $0.region() }
        var untested: [String] = []
        for page in try Documentation.pages() {
            for block in Documentation.codeBlocks(in: page.text, page: page.path) where block.language == "swift" {
                let isManifest = page.path == "README.md" && block.body.hasPrefix("// swift-tools-version:")
                if !isManifest && !regions.contains(where: { block.body.contains($0) }) {
                    untested.append("\(page.path):\(block.line)")
                }
            }
        }
        #expect(untested == [], "Swift blocks copied from no test (add a region and a DocExample): \(untested)")
        #expect(try DocExample.readmeManifest().contains(".product(name: \"TLSFixturesClient\""))
    }

    /// The split moved sections between pages: every link from one page to another, or to a heading, still lands.
    @Test("every relative link in the documentation names a file that exists, and a heading there when it has #")
    func linksLand() throws {
        let root = TestEnvironment.packageRoot
        var broken: [String] = []
        for page in try Documentation.pages() where page.path != "docs/CLIENTS.md" {
            let folder = root.appendingPathComponent(page.path).deletingLastPathComponent()
            for link in page.text.matches(of: /\]\(([^)\s]+)\)/).map({ String($0.output.1) })
            where !link.contains("://") && !link.hasPrefix("mailto:") {
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target = parts[0].isEmpty ? root.appendingPathComponent(page.path)
                    : folder.appendingPathComponent(parts[0]).standardizedFileURL
                guard FileManager.default.fileExists(atPath: target.path) else {
                    broken.append("\(page.path): \(link) (no such file)")
                    continue
                }
                if parts.count == 2, target.pathExtension == "md",
                   !Documentation.anchors(in: try String(contentsOf: target, encoding: .utf8)).contains(parts[1]) {
                    broken.append("\(page.path): \(link) (no such heading)")
                }
            }
        }
        #expect(broken == [], "\(broken)")
    }

    @Test("the scenario table in docs/scenarios.md is the catalog's (stale: run `make scenarios`)")
    func tableMatchesCatalog() throws {
        let page = try Documentation.page("docs/scenarios.md")
        let begin = try #require(page.range(of: "<!-- scenario-table begin -->\n"))
        let end = try #require(page.range(of: "\n<!-- scenario-table end -->"))
        #expect(String(page[begin.upperBound..<end.lowerBound]) == CatalogMarkdown.table(ScenarioCatalog.builtIn),
                "docs/scenarios.md's scenario table is stale: run `make scenarios`")
    }

    /// The README lists the scenarios by group, naming a few of each: every group it names is a group, and every
    /// scenario it names is in that group of the catalog.
    @Test("the README's scenario groups name real groups and scenarios")
    func readmeGroups() throws {
        let section = try #require(try Documentation.section("## The scenarios", in: "README.md"))
        let catalog = ScenarioCatalog.builtIn
        var named = 0
        for item in section.components(separatedBy: "\n- ").dropFirst() {
            let groups = item.matches(of: /\*\*([a-z ]+)\*\*/).map { String($0.output.1) }
            #expect(!groups.isEmpty && groups.allSatisfy { ScenarioGroup(rawValue: $0) != nil }, "\(item)")
            let names = item.matches(of: /`([a-z0-9-]+)`/).map { String($0.output.1) }
            for name in names {
                let group = try? catalog.scenario(named: name).group.rawValue
                #expect(group.map(groups.contains) == true, "\(name) is not a scenario of \(groups)")
                named += 1
            }
        }
        #expect(named > 30, "only \(named) scenarios named")
    }

    /// docs/macos.md quotes what Xcode says when it finds no OpenSSL headers: the compiler's first error for
    /// COpenSSL's header, which is its first `#include`.
    @Test("the missing-header error the docs quote is the compiler's first for COpenSSL without OpenSSL")
    func missingHeaderQuote() throws {
        let shim = TestEnvironment.packageRoot.appendingPathComponent("Sources/COpenSSL/shim.h").path
        // No include path at all: what a Mac without Homebrew's OpenSSL gives it (its SDK has no openssl/).
        let compiled = try Subprocess.run(["clang", "-fsyntax-only", "-nostdinc", "-x", "c", shim])
        let error = try #require(compiled.stderr.firstMatch(of: /'(openssl\/[a-z0-9_]+\.h)' file not found/),
                                 "\(compiled.combined)")
        let page = Documentation.flattened(try Documentation.page("docs/macos.md"))
        #expect(page.contains("`'\(error.output.1)' file not found`"), "docs/macos.md does not quote \(error.output.0)")
        #expect(!page.contains("'openssl/ssl.h' file not found"))
    }
}
