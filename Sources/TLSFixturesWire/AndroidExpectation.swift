import Foundation

/// What an Android app does with a scenario where that differs from iOS or from OpenSSL's verdict (a scenario file's
/// `expect.android`): cleartext, CAs the user installed, TLS versions no config key lowers. The baseline app is
/// docs/android.md's strict one: OkHttp on the platform's Conscrypt, target SDK 35, a release build, and a Network
/// Security Config that trusts the kit's CA bundled as `@raw/tls_fixtures_ca` for `fixtures.test` and nothing more.
///
/// ```json
/// "android": {"outcome": "reject", "step": "certificate",
///             "because": "the interception root is a CA the user installed, which apps targeting API 24+ do not
///                         trust",
///             "fix": "<certificates src=\"user\"/> in the host's trust-anchors (its pins still refuse it)"}
/// ```
///
/// The NSC model's verdict on the scenario's facts must equal `outcome` (a test holds the two together); where a file
/// has no `android`, Android agrees with `expect.verify`.
public struct AndroidExpectation: Codable, Sendable, Hashable {
    /// What the baseline app does.
    public enum Outcome: String, Codable, Sendable, Hashable {
        case accept, reject
    }

    /// What the baseline app does.
    public var outcome: Outcome
    /// Where it stops when it refuses, when that differs from `expect.refusal.step`; nil otherwise.
    public var step: RefusalStep?
    /// Why, with where Android says so (a class or function of AOSP or OkHttp, a page of Android's documentation).
    public var because: String
    /// The change to the app that admits it (a config element, or what no config key does); nil when it is accepted.
    public var fix: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(outcome: Outcome, step: RefusalStep? = nil, because: String, fix: String? = nil) {
        self.outcome = outcome
        self.step = step
        self.because = because
        self.fix = fix
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case outcome, step, because, fix }

    /// Refuses an unknown key, an empty `because` and a `step` on an accepted scenario, one line each.
    public init(from decoder: Decoder) throws {
        let keys = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        if let unknown = keys.first(where: { CodingKeys(rawValue: $0) == nil }) {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "unknown key \"\(unknown)\" (known: \(CodingKeys.allCases.map(\.rawValue).joined(separator: ", ")))"))
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        outcome = try c.decode(Outcome.self, forKey: .outcome)
        step = try c.decodeIfPresent(RefusalStep.self, forKey: .step)
        because = try c.decode(String.self, forKey: .because)
        fix = try c.decodeIfPresent(String.self, forKey: .fix)
        if because.trimmingCharacters(in: .whitespaces).isEmpty {
            throw DecodingError.dataCorruptedError(forKey: .because, in: c,
                                                   debugDescription: "say why Android does this")
        }
        if outcome == .accept && step != nil {
            throw DecodingError.dataCorruptedError(forKey: .step, in: c, debugDescription:
                "an accepted scenario has no refusal step: leave step out")
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
