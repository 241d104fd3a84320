import Foundation
import Testing
@testable import TLSFixtures

/// docs/ATS-MODEL.md lists every model rule with its source and confidence; the code is the source of truth for the
/// ids and confidences, so the table is checked against it.
@Suite("ATS documentation agrees with the model")
struct ATSDocsTests {
    static func modelDoc() throws -> String {
        try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/ATS-MODEL.md"), encoding: .utf8)
    }

    @Test("every model rule has one row in docs/ATS-MODEL.md, with the code's confidence", arguments: ATSModelRule.allCases)
    func ruleRow(rule: ATSModelRule) throws {
        let rows = try Self.modelDoc().split(separator: "\n").filter { $0.hasPrefix("| `\(rule.rawValue)` |") }
        try #require(rows.count == 1, "docs/ATS-MODEL.md has \(rows.count) rows for \(rule.rawValue)")
        let row = rows[0]
        let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(cells.last == rule.confidence.rawValue, "\(rule.rawValue): the docs say \(cells.last ?? "?"), the code \(rule.confidence)")
        #expect(cells.count == 4 && !cells[2].isEmpty, "\(rule.rawValue): the row needs a source: \(row)")
    }

    @Test("the table has no row for a rule the code does not know")
    func noStaleRows() throws {
        let known = Set(ATSModelRule.allCases.map(\.rawValue))
        let ids = try Self.modelDoc().split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
        }.filter { $0.contains("-") && !$0.hasPrefix("--") }
        #expect(!ids.isEmpty)
        for id in ids { #expect(known.contains(id), "docs/ATS-MODEL.md lists \(id), which is not an ATSModelRule") }
    }
}
