import Foundation
import TLSFixturesWire

/// A client's offer — a ClientHello a fixture recorded — measured against what ATS requires of a connection: TLS 1.2 or
/// newer, a suite from ATS's list, forward secrecy (the model's own lists, `ATSCipherSuites`). For an app's own TLS
/// client (NWConnection with its own parameters, a third-party stack), whose offer ATS does not shape: does it offer
/// what an ATS-compliant server accepts, and does it offer anything ATS forbids?
///
/// ```swift
/// let hello = try #require(fixture.connections.last?.clientHello)
/// let judgement = ATSOfferJudgement(hello)
/// #expect(judgement.meetsATS, "\(judgement)")
/// ```
public struct ATSOfferJudgement: Sendable, Codable, Equatable, CustomStringConvertible {
    /// True when the offer is one an ATS client would make: nothing below TLS 1.2, and only ATS suites (so, only
    /// forward-secret ones), at least one of them usable at a version offered.
    public var meetsATS: Bool
    /// What falls short, one line each (empty when `meetsATS`); also notes that do not fail it.
    public var findings: [String]
    /// The highest version offered.
    public var highestVersion: TLSVersion?
    /// Versions offered below TLS 1.2, the ATS minimum.
    public var versionsBelowMinimum: [TLSVersion]
    /// Offered suites on ATS's lists (TLS 1.3's and the forward-secret TLS 1.2 list), in the client's order.
    public var atsSuites: [String]
    /// Offered suites without forward secrecy (RSA key transport): ATS admits these only with
    /// `NSExceptionRequiresForwardSecrecy = NO`.
    public var nonForwardSecretSuites: [String]
    /// Offered suites on no ATS list at all (DHE, 3DES, RC4, CBC with SHA-256, unknown numbers); GREASE and the
    /// signalling values left out.
    public var otherSuites: [String]

    private enum CodingKeys: String, CodingKey {
        case meetsATS, findings, highestVersion, versionsBelowMinimum, atsSuites, nonForwardSecretSuites, otherSuites
    }

    /// Every key, `highestVersion` `null` when no version could be read; decoding takes it absent too.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(meetsATS, forKey: .meetsATS)
        try c.encode(findings, forKey: .findings)
        try c.encode(highestVersion, forKey: .highestVersion)
        try c.encode(versionsBelowMinimum, forKey: .versionsBelowMinimum)
        try c.encode(atsSuites, forKey: .atsSuites)
        try c.encode(nonForwardSecretSuites, forKey: .nonForwardSecretSuites)
        try c.encode(otherSuites, forKey: .otherSuites)
    }

    /// Judges `hello` with the forward-secret list of `cipherSuites` (Apple's current source by default).
    public init(_ hello: ConnectionRecord.ClientHello,
                cipherSuites reading: ATSReadings.CipherSuites = .currentSource) {
        let highest = hello.highestVersion
        highestVersion = highest
        versionsBelowMinimum = (hello.offeredVersions ?? []).filter { $0 < .tls1_2 }
        let offersTLS13 = highest == .tls1_3
        let offersTLS12 = hello.offeredVersions?.contains(.tls1_2) ?? (highest.map { $0 >= .tls1_2 } ?? false)
        let forwardSecret = Set(ATSCipherSuites.forwardSecret(reading))
        let tls13 = Set(ATSCipherSuites.tls13)
        let nonForwardSecret = Set(ATSCipherSuites.nonForwardSecret)
        let suites = hello.cipherSuites.filter { !$0.hasPrefix("GREASE") && !$0.hasSuffix("_SCSV") }
        let ats = suites.filter { forwardSecret.contains($0) || tls13.contains($0) }
        let withoutForwardSecrecy = suites.filter { nonForwardSecret.contains($0) || $0.hasPrefix("TLS_RSA_WITH_") }
        atsSuites = ats
        nonForwardSecretSuites = withoutForwardSecrecy
        otherSuites = suites.filter { !ats.contains($0) && !withoutForwardSecrecy.contains($0) }
        let usable = ats.contains { (offersTLS13 && tls13.contains($0)) || (offersTLS12 && forwardSecret.contains($0)) }

        var findings: [String] = []
        if let highest, highest < .tls1_2 {
            findings.append("it offers at most \(highest): ATS requires TLS 1.2 or newer, so it reaches no "
                + "ATS-compliant server")
        }
        if !versionsBelowMinimum.isEmpty {
            let below = versionsBelowMinimum.map(\.rawValue).joined(separator: ", ")
            findings.append("it also offers \(below), below ATS's TLS 1.2 minimum")
        }
        if !usable {
            let list = reading == .currentSource
                ? "ECDHE with AES-GCM, ChaCha20 or AES-CBC-SHA" : "the 2015 list of ECDHE suites"
            findings.append("it offers no ATS suite at a version it offers (ATS: \(list), or TLS 1.3's)")
        }
        if !nonForwardSecretSuites.isEmpty {
            let named = nonForwardSecretSuites.joined(separator: ", ")
            findings.append("it offers suites without forward secrecy (\(named)), "
                + "which ATS admits only with NSExceptionRequiresForwardSecrecy = NO")
        }
        if !otherSuites.isEmpty {
            findings.append("it offers suites on no ATS list (\(otherSuites.joined(separator: ", ")))")
        }
        meetsATS = findings.isEmpty
        if hello.offeredVersions == nil, let highest, highest >= .tls1_2 {
            findings.append("note: it sent no supported_versions list, so the lowest version it accepts is not in its "
                + "ClientHello")
        }
        self.findings = findings
    }

    public var description: String {
        let verdict = meetsATS ? "meets ATS" : "does not meet ATS"
        return findings.isEmpty ? "the client's offer \(verdict)" : "the client's offer \(verdict): "
            + findings.joined(separator: "; ")
    }
}
