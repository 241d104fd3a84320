import Foundation

/// What a client that refuses a scenario shows when it refuses for the scenario's own reason (a scenario file's
/// `expect.refusal`): so that a refusal test fails when the client refused for another one — an untrusted CA refusing
/// `expired`, a version mismatch refusing `wrong-host`.
///
/// ```json
/// "refusal": {"alerts": ["certificate_expired"],
///             "apple": {"urlErrorCode": -1201, "urlErrorName": "NSURLErrorServerCertificateHasBadDate",
///                       "streamErrorCode": -9814, "streamErrorName": "errSSLCertExpired"}}
/// ```
public struct RefusalExpectation: Codable, Sendable, Hashable {
    /// The alerts that end a refused handshake for this reason, either way: the one an OpenSSL-family client sends for
    /// the scenario's verify error (OpenSSL's `ssl_x509err2alert` table: `certificate_expired` for an expired leaf,
    /// `unknown_ca` for an unknown issuer), or the one the server sends when it cannot agree (`protocol_version`,
    /// `handshake_failure`). An alert that names no reason (`TLSAlert.isUnspecificObjection`: `bad_certificate`,
    /// `certificate_unknown`, `user_canceled`) is consistent with any.
    public var alerts: [TLSAlert]
    /// What Apple's URLSession reports when it refuses: the ATS model's likely error for the scenario (a test holds the
    /// model to it). nil when Apple's loader does not refuse the scenario.
    public var apple: ATSLikelyError?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(alerts: [TLSAlert], apple: ATSLikelyError? = nil) {
        self.alerts = alerts
        self.apple = apple
    }

    enum CodingKeys: String, CodingKey { case alerts, apple }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        alerts = try c.decodeIfPresent([TLSAlert].self, forKey: .alerts) ?? []
        apple = try c.decodeIfPresent(ATSLikelyError.self, forKey: .apple)
        if alerts.isEmpty && apple == nil {
            throw DecodingError.dataCorruptedError(forKey: .alerts, in: c, debugDescription:
                "a refusal names its alerts, Apple's error, or both: leave \"refusal\" out when it says nothing")
        }
    }

    /// Writes `alerts` as names (`"certificate_expired"`), as scenario files spell them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if !alerts.isEmpty { try c.encode(alerts.map(\.name), forKey: .alerts) }
        try c.encodeIfPresent(apple, forKey: .apple)
    }
}
