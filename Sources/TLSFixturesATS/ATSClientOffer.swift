import Foundation
import TLSFixturesWire

/// The cipher-suite lists ATS works with, by IANA name (what the probe reports).
public enum ATSCipherSuites {
    /// TLS 1.3 suites: all forward secret, all offered whenever TLS 1.3 is.
    public static let tls13: [String] = [
        "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
    ]

    /// Apple's current source: ECDHE with AES-GCM, ChaCha20 and AES-CBC-SHA (the CBC SHA256/SHA384 suites dropped).
    public static let forwardSecretCurrentSource: [String] = [
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    ]

    /// The list Apple documented from 2015 (note: no ECDHE_RSA AES_256_CBC_SHA, as documented).
    public static let forwardSecretDocumented2015: [String] = [
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    ]

    /// What `NSExceptionRequiresForwardSecrecy = NO` adds: RSA key exchange with AES.
    public static let nonForwardSecret: [String] = [
        "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_RSA_WITH_AES_256_CBC_SHA256", "TLS_RSA_WITH_AES_256_CBC_SHA",
        "TLS_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA",
    ]

    /// Finite-field DHE with RSA. Not ATS suites; offered only when ATS does not apply, and only under the default
    /// reading `ATSReadings.DHE.offeredWithoutATS`.
    ///
    /// Why they are here at all: scenarios.md says `dhe-only`, `dh1024` and `dh512` are admitted by arbitrary loads,
    /// and the model follows the catalog. Whether Apple's client offers them is uncertain (model rule dhe-without-ats):
    /// Security/protocol/SecProtocolHelper.m puts DHE only in its "legacy" group. A real client would also refuse a
    /// 512-bit group, which `ServerFacts` does not record.
    public static let dheRSA: [String] = [
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256", "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA", "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
    ]

    /// The ATS forward-secret list for a reading.
    public static func forwardSecret(_ reading: ATSReadings.CipherSuites) -> [String] {
        reading == .currentSource ? forwardSecretCurrentSource : forwardSecretDocumented2015
    }

    /// Everything Apple's TLS client offers with ATS out of the way: both ATS lists, RSA key exchange and,
    /// uncertainly, DHE (Apple lists it only in its legacy group; `clientSupported(includingDHE:)` gives the other
    /// reading). RC4, 3DES and NULL are deliberately absent — Apple's client no longer offers them, and the
    /// catalog says no ATS key admits `rc4`, `3des` or `null`.
    public static let clientSupported: [String] = clientSupported(includingDHE: true)

    /// The same, with or without the DHE_RSA suites (`ATSReadings.DHE`).
    public static func clientSupported(includingDHE: Bool) -> [String] {
        var all: [String] = []
        for suite in forwardSecretCurrentSource + forwardSecretDocumented2015 + nonForwardSecret + (includingDHE ? dheRSA : [])
        where !all.contains(suite) {
            all.append(suite)
        }
        return all
    }

    /// Whether an IANA suite name is a finite-field DHE suite.
    static func isDHE(_ suite: String) -> Bool { suite.hasPrefix("TLS_DHE_") }
}

/// What Apple's TLS client would put in its ClientHello for one connection: the protocol range and the
/// suites. The diagnostics hand this to a real OpenSSL client; the evaluator intersects it with what the
/// server accepted.
public struct ATSClientOffer: Sendable, Codable, Equatable, CustomStringConvertible {
    /// The lowest version offered (TLS 1.2 by default; an exception can lower it).
    public var minVersion: TLSVersion
    /// The highest version offered: TLS 1.3 from the iOS 13 profile, TLS 1.2 before.
    public var maxVersion: TLSVersion
    /// IANA names of the suites offered for TLS 1.0–1.2 (the name says 1.2 because that is where most live).
    public var tls12Suites: [String]
    /// IANA names of the TLS 1.3 suites offered (empty when TLS 1.3 is not in range).
    public var tls13Suites: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(minVersion: TLSVersion, maxVersion: TLSVersion, tls12Suites: [String], tls13Suites: [String]) {
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.tls12Suites = tls12Suites
        self.tls13Suites = tls13Suites
    }

    /// The offer for resolved requirements. The profile's floor (TLS 1.2 on iOS 26, as reported) holds whatever
    /// the requirements allow.
    public init(requirements: ATSRequirements, options: ATSEvaluationOptions) {
        let maxVersion = options.profile.maxTLSVersion
        let floor = options.profile.minimumTLSVersionFloor
        if requirements.atsApplies {
            var suites = ATSCipherSuites.forwardSecret(options.readings.cipherSuites)
            if !requirements.requiresForwardSecrecy { suites += ATSCipherSuites.nonForwardSecret }
            self.init(minVersion: max(requirements.minimumTLSVersion, floor), maxVersion: maxVersion, tls12Suites: suites,
                      tls13Suites: maxVersion >= .tls1_3 ? ATSCipherSuites.tls13 : [])
        } else {
            // ATS out of the way: what the client supports at all. It has never offered SSLv3 here.
            let suites = ATSCipherSuites.clientSupported(includingDHE: options.readings.dhe == .offeredWithoutATS)
            self.init(minVersion: max(.tls1_0, floor), maxVersion: maxVersion, tls12Suites: suites,
                      tls13Suites: maxVersion >= .tls1_3 ? ATSCipherSuites.tls13 : [])
        }
    }

    /// Whether a handshake at this version with this suite is something the client would agree to.
    public func admits(version: TLSVersion, suite: String) -> Bool {
        guard version >= minVersion, version <= maxVersion else { return false }
        return version == .tls1_3 ? tls13Suites.contains(suite) : tls12Suites.contains(suite)
    }

    /// `TLSv1.2–TLSv1.3`, or `TLSv1.3 only`.
    public var versionRange: String { minVersion == maxVersion ? "\(minVersion) only" : "\(minVersion)–\(maxVersion)" }

    /// Versions in range, oldest first.
    public var versions: [TLSVersion] { TLSVersion.allCases.filter { $0 >= minVersion && $0 <= maxVersion } }

    public var description: String {
        "\(minVersion)–\(maxVersion), \(tls12Suites.count) TLS 1.0–1.2 suites, \(tls13Suites.count) TLS 1.3 suites"
    }
}
