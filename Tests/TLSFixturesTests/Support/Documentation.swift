import Foundation

/// The user documentation as the tests read it: the README, CONTRIBUTING.md and the pages in docs/. The one place that
/// knows where each text lives, so a test follows a section when it moves to another page.
enum Documentation {
    /// Every page, README first: the README, CONTRIBUTING.md, then docs/*.md by name.
    static var pagePaths: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(
            atPath: TestEnvironment.packageRoot.appendingPathComponent("docs").path)) ?? []
        return ["README.md", "CONTRIBUTING.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }

    /// A page's text, by its path from the checkout's root (`README.md`, `docs/ios.md`).
    static func page(_ path: String) throws -> String {
        try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every page with its path.
    static func pages() throws -> [(path: String, text: String)] {
        try pagePaths.map { ($0, try page($0)) }
    }

    /// The section of `path` that starts at the line `heading` (such as `## Install`), up to the next heading of the
    /// same level or a higher one; nil when the page has no such line.
    static func section(_ heading: String, in path: String) throws -> String? {
        let lines = try page(path).components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: heading) else { return nil }
        let level = heading.prefix { $0 == "#" }.count
        let end = lines[(start + 1)...].firstIndex { line in
            let hashes = line.prefix { $0 == "#" }.count
            return hashes > 0 && hashes <= level && line.dropFirst(hashes).hasPrefix(" ")
        } ?? lines.endIndex
        return lines[start..<end].joined(separator: "\n")
    }

    /// A fenced code block: its language (` ```swift ` → `swift`), its lines between the fences, and where it starts.
    struct CodeBlock {
        var language: String
        var body: String
        var page: String
        var line: Int
    }

    /// The fenced code blocks of a page, in order.
    static func codeBlocks(in text: String, page: String) -> [CodeBlock] {
        var blocks: [CodeBlock] = []
        var open: (language: String, line: Int, lines: [String])?
        for (number, line) in text.components(separatedBy: "\n").enumerated() {
            guard line.hasPrefix("```") else {
                open?.lines.append(line)
                continue
            }
            if let block = open {
                blocks.append(CodeBlock(language: block.language, body: block.lines.joined(separator: "\n"),
                                        page: page, line: block.line))
                open = nil
            } else {
                open = (String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces), number + 1, [])
            }
        }
        return blocks
    }

    /// The words of `text` with runs of white space as one space, so a phrase is found across a line break.
    static func flattened(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }
}

extension Documentation {
    /// The anchor GitHub gives a heading: lowercased, every character but letters, digits, spaces and hyphens dropped,
    /// spaces made hyphens (`## 1. Start the runner, and wait` → `1-start-the-runner-and-wait`).
    static func anchor(_ heading: String) -> String {
        let text = heading.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
        return String(text.compactMap { character -> Character? in
            if character == " " { return "-" }
            let kept = character.isLetter || character.isNumber || character == "-" || character == "_"
            return kept ? character : nil
        })
    }

    /// The anchors of a page's headings (outside code blocks).
    static func anchors(in text: String) -> Set<String> {
        var inCode = false
        var found = Set<String>()
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") { inCode.toggle() }
            if !inCode && line.hasPrefix("#") { found.insert(anchor(line)) }
        }
        return found
    }
}
