import Foundation

/// How a client that refuses a scenario refuses it (a scenario file's `expect.refusal`): which scenario the same client
/// must accept (the control), where it stops, and what it says. `LoadJudge` holds a refusal to it, so that a refusal
/// test fails when the client refused for another reason — an untrusted CA refusing `expired`, a host-name check
/// refusing a pin scenario, a client that verifies nothing.
///
/// ```json
/// "refusal": {"control": "ats-compliant", "step": "certificate", "alerts": ["certificate_expired"],
///             "apple": {"urlErrorCode": -1201, "urlErrorName": "NSURLErrorServerCertificateHasBadDate",
///                       "source": null}}
/// ```
public struct RefusalExpectation: Codable, Sendable, Hashable {
    /// The scenario that differs from this one only in its defect (`ats-compliant` for most, `pinned` for the pin
    /// scenarios, `intermediate` for the two-level chains): a client that refuses this scenario for its reason accepts
    /// that one. Every control is a scenario every client of the matrix accepts.
    public var control: String
    /// Where a refusing client stops: one step, or for a scenario that breaks more than one thing (a combination, or a
    /// certificate some clients cannot even be offered) each step a refusing client may stop at, the usual one first.
    /// JSON: `"step": "certificate"` or `"step": ["negotiation", "certificate"]`.
    public var steps: [RefusalStep]
    /// The usual step (the first of `steps`).
    public var step: RefusalStep { steps[0] }
    /// The alerts that end a refused handshake for this reason, either way: the one an OpenSSL-family client sends for
    /// the scenario's verify error (OpenSSL's `ssl_x509err2alert` table: `certificate_expired` for an expired leaf,
    /// `unknown_ca` for an unknown issuer), or the one the server sends when it cannot agree (`protocol_version`,
    /// `handshake_failure`). An alert that names no reason (`TLSAlert.isUnspecificObjection`: `bad_certificate`,
    /// `certificate_unknown`, `internal_error`, `user_canceled`) is consistent with any. Empty: any alert.
    public var alerts: [TLSAlert]
    /// Client families known to check this scenario's defect only once the handshake has completed, so that they
    /// refuse it after the handshake without a request (libcurl checks the host name after `SSL_connect`); nil when
    /// every client stops at `step`.
    public var lateCheck: LateCheck?
    /// What Apple's URLSession is expected to report, with where that expectation comes from. Only reported, never a
    /// failure on its own: `LoadJudge` fails an Apple load only for an error outside the family of the step (a
    /// host-name lookup failing where a certificate refusal was expected), or, for `beforeConnecting`, for anything
    /// but -1022.
    public var apple: AppleExpectation?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(control: String, step: RefusalStep, alsoAt others: [RefusalStep] = [], alerts: [TLSAlert] = [],
                lateCheck: LateCheck? = nil, apple: AppleExpectation? = nil) {
        self.control = control
        self.steps = [step] + others.filter { $0 != step }
        self.alerts = alerts
        self.lateCheck = lateCheck
        self.apple = apple
    }

    /// Clients that check the defect after the handshake, and the source that says so.
    public struct LateCheck: Codable, Sendable, Hashable {
        /// Which clients, in words (`libcurl: curl, and URLSession on Linux (FoundationNetworking)`).
        public var clients: String
        /// Where this is documented or seen: a file and function of the client's source, a document.
        public var source: String

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(clients: String, source: String) {
            self.clients = clients
            self.source = source
        }
    }

    /// What Apple's loader reports when it refuses the scenario, and why anyone expects it.
    public struct AppleExpectation: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The `NSURLErrorDomain` code and the stream error underneath.
        public var error: ATSLikelyError
        /// An Apple document, a forum answer by Apple staff, Apple's open-source code, or an observed run (OS and
        /// version); nil for an expectation nobody has sourced yet, which is reported as a guess.
        public var source: String?

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(error: ATSLikelyError, source: String? = nil) {
            self.error = error
            self.source = source
        }

        private enum CodingKeys: String, CodingKey {
            case urlErrorCode, urlErrorName, streamErrorCode, streamErrorName, source
        }

        /// The error's keys flat beside `source`, as scenario files write them.
        public init(from decoder: Decoder) throws {
            error = try ATSLikelyError(from: decoder)
            source = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .source)
        }

        /// The error's keys flat, then `source` (`null` for a guess).
        public func encode(to encoder: Encoder) throws {
            try error.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(source, forKey: .source)
        }

        /// `NSURLErrorDomain -1201 (NSURLErrorServerCertificateHasBadDate) (source: …)`, or `(… a guess: no source)`.
        public var description: String {
            "\(error) (" + (source.map { "source: \($0)" } ?? "a guess: no source") + ")"
        }
    }

    enum CodingKeys: String, CodingKey { case control, step, alerts, lateCheck, apple }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let control = try c.decodeIfPresent(String.self, forKey: .control) else {
            throw DecodingError.keyNotFound(CodingKeys.control, .init(codingPath: c.codingPath, debugDescription:
                "a refusal names its control: the scenario a client refusing this one accepts (\"ats-compliant\", "
                    + "\"pinned\" for pin scenarios), which the differential check loads beside it"))
        }
        let known = RefusalStep.allCases.map(\.rawValue).joined(separator: ", ")
        let steps: [RefusalStep]
        if let one = try? c.decodeIfPresent(RefusalStep.self, forKey: .step) {
            steps = [one]
        } else if let several = try? c.decodeIfPresent([RefusalStep].self, forKey: .step), !several.isEmpty,
                  Set(several).count == several.count {
            steps = several
        } else if c.contains(.step) {
            throw DecodingError.dataCorruptedError(forKey: .step, in: c, debugDescription:
                "a step is one of \(known), or a list of different ones")
        } else {
            throw DecodingError.keyNotFound(CodingKeys.step, .init(codingPath: c.codingPath, debugDescription:
                "a refusal names its step, where a refusing client stops: one of \(known)"))
        }
        self.control = control
        self.steps = steps
        alerts = try c.decodeIfPresent([TLSAlert].self, forKey: .alerts) ?? []
        lateCheck = try c.decodeIfPresent(LateCheck.self, forKey: .lateCheck)
        apple = try c.decodeIfPresent(AppleExpectation.self, forKey: .apple)
        if lateCheck != nil && !steps.contains(.certificate) {
            throw DecodingError.dataCorruptedError(forKey: .lateCheck, in: c, debugDescription:
                "lateCheck widens the certificate step to a close after the handshake; step \(step.rawValue) "
                    + "has no use for it")
        }
    }

    /// Writes `alerts` as names (`"certificate_expired"`), as scenario files spell them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(control, forKey: .control)
        if steps.count == 1 { try c.encode(step, forKey: .step) } else { try c.encode(steps, forKey: .step) }
        if !alerts.isEmpty { try c.encode(alerts.map(\.name), forKey: .alerts) }
        try c.encodeIfPresent(lateCheck, forKey: .lateCheck)
        try c.encodeIfPresent(apple, forKey: .apple)
    }
}
