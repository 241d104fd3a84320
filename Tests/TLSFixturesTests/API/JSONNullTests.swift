import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesFleet

/// docs/cli.md's promise for JSON output, "every key present (`null` when there is nothing)", held per shape that
/// carries a connection record: the key set is the same whether a value is there or not.
@Suite("JSON keys are present, null when there is nothing")
struct JSONNullTests {
    static func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: FixtureAPI.encoder().encode(value)) as? [String: Any])
    }

    static let record = ConnectionRecord(id: 3, acceptedAt: Date(timeIntervalSince1970: 1_780_000_000), peer: "127.0.0.1:1")

    @Test("serve --connection-log's line: port null for a started fixture, fixture null for a catalog one")
    func fleetConnection() throws {
        let catalog = try Self.json(FleetConnection(scenario: "expired", port: 9831, fixture: nil, record: Self.record))
        let started = try Self.json(FleetConnection(scenario: "expired", port: nil, fixture: "54cb4f", record: Self.record))
        #expect(Set(catalog.keys) == ["scenario", "port", "fixture", "record"], "\(catalog)")
        #expect(Set(started.keys) == Set(catalog.keys), "\(started)")
        #expect(catalog["fixture"] is NSNull && catalog["port"] as? Int == 9831)
        #expect(started["port"] is NSNull && started["fixture"] as? String == "54cb4f")
        let record = try #require(catalog["record"] as? [String: Any])
        #expect(record["clientHello"] is NSNull && record["proxy"] is NSNull && record["endedAt"] is NSNull, "\(record)")
    }

    @Test("an ATS judgement of an offer with no readable version says highestVersion null")
    func offerJudgement() throws {
        let hello = ConnectionRecord.ClientHello(serverName: nil, legacyVersion: "0x0909", supportedVersions: [],
                                                 cipherSuites: [], groups: [], signatureAlgorithms: [], alpn: [],
                                                 extensions: [])
        let judgement = ATSOfferJudgement(hello)
        #expect(judgement.highestVersion == nil)
        let encoded = try Self.json(judgement)
        #expect(Set(encoded.keys) == ["meetsATS", "findings", "highestVersion", "versionsBelowMinimum", "atsSuites",
                                      "nonForwardSecretSuites", "otherSuites"], "\(encoded)")
        #expect(encoded["highestVersion"] is NSNull)
        #expect(try FixtureAPI.decoder().decode(ATSOfferJudgement.self, from: FixtureAPI.encoder().encode(judgement)) == judgement)
    }
}
