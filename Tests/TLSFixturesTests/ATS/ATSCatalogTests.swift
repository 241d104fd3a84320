import Foundation
import XCTest
import TLSFixtures

/// Every row of scenarios.md: the evaluator's default verdict must equal the "ATS default" column, and the
/// exception finder must reproduce the "smallest ATS key that admits it" column.
final class ATSCatalogTests: XCTestCase {
    /// The rows' server facts are inputs for the model made from each scenario's file (no server runs here), and the
    /// verdict each must get comes from the same file (`expect.ats`), so a new scenario needs nothing here. Rows still
    /// written by hand are few, and each says why.
    func testCatalogHasEveryRowButClientAuth() {
        let rows = ATSCatalog.rows().map(\.name)
        XCTAssertEqual(Set(rows).count, rows.count, "duplicate rows")
        // "n/a" in the file (client-cert-required): ATS has no verdict on a client certificate, so no row.
        let judged = ScenarioCatalog.builtIn.scenarios.filter { $0.expect.ats != .notApplicable }.map(\.name)
        XCTAssertEqual(Set(rows), Set(judged), "every scenario ATS judges has a row of facts")
        XCTAssertEqual(Set(ATSCatalog.handRows.keys), ["rc4", "3des"], "a row written by hand needs its reason")
    }

    func testDefaultVerdictMatchesCatalog() throws {
        for row in ATSCatalog.rows() {
            let verdict = ATSEvaluator().evaluate(url: row.url, facts: row.facts)
            let declared = try ScenarioCatalog.builtIn.scenario(named: row.name).expect.ats
            XCTAssertEqual(verdict.allowed, declared == .allow, "\(row.name): Scenarios/\(row.name).json says \(declared); \(verdict)")
            XCTAssertTrue(verdict.atsApplies, "\(row.name): ATS must apply to a qualified name")
            if !verdict.allowed {
                XCTAssertNotNil(verdict.likelyError, row.name)
                XCTAssertFalse(verdict.violations.isEmpty, row.name)
            }
        }
    }

    /// The finder, given a row's facts, must find the smallest fix its scenario file declares (`expect.atsFix`), and
    /// what it finds must work when pasted into an Info.plist.
    func testFinderMatchesCatalog() throws {
        for row in ATSCatalog.rows() {
            let fix = try XCTUnwrap(try ScenarioCatalog.builtIn.scenario(named: row.name).expect.atsFix,
                                    "\(row.name): Scenarios/\(row.name).json has no expect.atsFix")
            let finding = ATSExceptionFinder().find(host: row.host, port: 8443, facts: row.facts)
            let label = "\(row.name): the file says \(fix.kind.rawValue), the finder found \(finding.result)"
            let alsoRequires = fix.alsoRequires.map { requirement -> [String] in
                XCTAssertEqual(requirement, "trust-override", "\(row.name): an alsoRequires the test does not know")
                return [ATSExceptionFinder.trustOverrideRequirement]
            } ?? []
            switch fix.kind {
            case .notNeeded:
                XCTAssertEqual(finding.result, .notNeeded, label)
            case .exception:
                let keys = (fix.domainKeys ?? [:]).mapValues { scalar -> ATSPlistValue in
                    switch scalar {
                    case .bool(let value): return .bool(value)
                    case .string(let value): return .string(value)
                    }
                }
                XCTAssertEqual(finding.result, .exception([ATSKey.exceptionDomains: [row.host: .dictionary(keys)]],
                                                          alsoRequires: alsoRequires), label)
                XCTAssertEqual(finding.exceptionDomainKeys, keys, label)
                XCTAssertFalse(finding.usesArbitraryLoads, label)
                XCTAssertEqual(finding.requiresTrustOverride, !alsoRequires.isEmpty, label)
                assertRoundTripAllows(finding, url: row.url, facts: row.facts, label)
            case .arbitraryLoads:
                XCTAssertEqual(finding.result, .exception([ATSKey.allowsArbitraryLoads: true], alsoRequires: alsoRequires), label)
                XCTAssertTrue(finding.usesArbitraryLoads, label)
                XCTAssertNil(finding.exceptionDomainKeys, label)
                assertRoundTripAllows(finding, url: row.url, facts: row.facts, label)
            case .impossible:
                guard case .impossible(let reason) = finding.result else {
                    XCTFail("\(label): expected impossible"); continue
                }
                let mention = try XCTUnwrap(row.impossibleMention, "\(row.name): an impossible row names what is at fault")
                XCTAssertTrue(reason.hasPrefix("no ATS key admits this"), reason)
                XCTAssertTrue(reason.contains(mention), "\(row.name): \(reason)")
                XCTAssertTrue(reason.contains("you need"), reason)
                XCTAssertNil(finding.plistXML)
            }
        }
    }

    /// scenarios.md: validity-826-days "depends on anchor: user root allow, app anchor block".
    func testValidity826DaysDependsOnAnchor() throws {
        let row = try XCTUnwrap(ATSCatalog.rows().first { $0.name == "validity-826-days" })
        var facts = row.facts
        facts.trust?.anchor = .appSupplied
        let verdict = ATSEvaluator().evaluate(url: row.url, facts: facts)
        XCTAssertFalse(verdict.allowed)
        XCTAssertEqual(verdict.violations.map(\.rule), [.validityPeriod])
    }

    /// scenarios.md: ssl-v3, rc4, 3des, null are "unsupported by the linked OpenSSL: report it" — the
    /// probe then completes no handshake at all, and the finder must say so rather than guess.
    func testUnsupportedScenarioIsReportedAsNoHandshake() {
        for name in ["ssl-v3", "rc4", "3des", "null"] {
            let facts = ServerFacts(scheme: "https", accepted: [:], presentedChain: [], trust: nil)
            let verdict = ATSEvaluator().evaluate(url: ATSFactsKit.url("https://\(name).fixtures.test/"), facts: facts)
            XCTAssertEqual(verdict.violations.map(\.rule), [.handshake], name)
            let finding = ATSExceptionFinder().find(host: "\(name).fixtures.test", facts: facts)
            guard case .impossible(let reason) = finding.result else { XCTFail(name); continue }
            XCTAssertTrue(reason.contains("linked OpenSSL"), reason)
        }
    }

    /// The localhost trap (ats-reference.md): every certificate-only row that fails by name passes by
    /// `localhost` only if trust still holds, and the verdict always says ATS did not apply.
    func testLocalhostTrapIsReported() throws {
        let row = try XCTUnwrap(ATSCatalog.rows().first { $0.name == "tls-v1-0" })
        let verdict = ATSEvaluator().evaluate(url: ATSFactsKit.url("https://localhost:8443/"), facts: row.facts)
        XCTAssertTrue(verdict.allowed)
        XCTAssertFalse(verdict.atsApplies)
        XCTAssertEqual(verdict.exemptionReason, "localhost is an unqualified name: ATS does not apply by default")
        XCTAssertTrue(verdict.notes.contains { $0.contains("localhost trap") })
        let finding = ATSExceptionFinder().find(host: "localhost", port: 8443, facts: row.facts)
        XCTAssertEqual(finding.result, .notNeeded)
        XCTAssertTrue(finding.notes.contains { $0.contains("localhost trap") })
    }

    /// The finder's alternative strategy prefers per-domain keys to switching ATS off everywhere.
    func testDomainScopedStrategyForLegacyEverything() throws {
        let row = try XCTUnwrap(ATSCatalog.rows().first { $0.name == "legacy-everything" })
        let finding = ATSExceptionFinder(strategy: .domainScopedFirst).find(host: row.host, port: 8443, facts: row.facts)
        XCTAssertEqual(finding.result, .exception([ATSKey.exceptionDomains: [row.host: [
            ATSKey.exceptionMinimumTLSVersion: "TLSv1.0",
            ATSKey.exceptionRequiresForwardSecrecy: false,
            ATSKey.exceptionAllowsInsecureHTTPLoads: true,
        ]]], alsoRequires: [ATSExceptionFinder.trustOverrideRequirement]))
        assertRoundTripAllows(finding, url: row.url, facts: row.facts, row.name)
    }

    /// The error Apple's loader most likely ends with, as each blocked scenario's file states it (`expect.refusal.apple`:
    /// -1022 http, -9836 protocol version, -9824 no common suite, -9883…-9885 ATS's certificate rules, and -1202 with
    /// the reason underneath for trust failures — -9814 expired, -9813 unknown root, -9843 wrong host — as public logs
    /// show them, each file citing its source): the model must predict exactly that, and no blocked scenario may leave
    /// it out. One table, the files.
    func testLikelyErrorCodes() throws {
        var compared = 0
        for row in ATSCatalog.rows() {
            let verdict = ATSEvaluator().evaluate(url: row.url, facts: row.facts)
            guard !verdict.allowed else { continue }
            let scenario = try ScenarioCatalog.builtIn.scenario(named: row.name)
            let declared = try XCTUnwrap(scenario.expect.refusal?.apple?.error,
                                         "\(row.name): ATS blocks it, but Scenarios/\(row.name).json has no expect.refusal.apple")
            XCTAssertEqual(verdict.likelyError, declared, "\(row.name): the model's likely error differs from its file's")
            compared += 1
        }
        XCTAssertGreaterThan(compared, 25)
    }
}
