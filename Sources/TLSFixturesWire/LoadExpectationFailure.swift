import Foundation

/// Why a load was not refused (or not accepted) as a test expected, in the test author's terms: what the client threw,
/// and what the fixture saw. Thrown by `expectRefused` and `expectAccepted`; a Swift Testing test fails with its
/// `description`, and the XCTest helpers report it at the call.
public struct LoadExpectationFailure: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<LoadExpectationFailure>`: new ones may be added.
    public typealias Code = ErrorCode<LoadExpectationFailure>

    /// What kind of failure this is.
    public let code: Code
    /// What happened instead, one line.
    public let reason: String
    /// What to do about it; nil when the reason says it all.
    public let fix: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Code, reason: String, fix: String? = nil) {
        self.code = code
        self.reason = reason
        self.fix = fix
    }

    /// No connection from the load reached the fixture; `error` is what the load threw. `others` are records that
    /// arrived meanwhile and are not the load's (its error says it made no connection): another client's.
    static func neverReached(place: String, error: ThrownError, others: [ConnectionRecord]) -> LoadExpectationFailure {
        var reason = "the client never reached \(place) (the load threw \(error))"
        if !others.isEmpty {
            reason += "; meanwhile another client's connection\(others.count == 1 ? "" : "s") arrived, not counted: "
                + Self.list(others)
        }
        return LoadExpectationFailure(code: .neverReached, reason: reason, fix: error.neverReachedHint)
    }

    /// The window holds connections the check cannot tell apart: another client of a shared fixture, or a client that
    /// connected more than once.
    static func ambiguous(place: String, records: [ConnectionRecord], error: ThrownError?) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .ambiguous,
                               reason: "\(records.count) connections reached \(place) while the load ran, and nothing "
                                   + "says which was this load's: " + list(records)
                                   + (error.map { " (the load threw \($0))" } ?? ""),
                               fix: "give the check a fixture nobody else uses: the differential form "
                                   + "expectRefused(\"NAME\") { url in … } starts fresh ones of its own")
    }

    /// The only evidence is a handshake that completed and closed without a request, which a pin check, a host-name
    /// check, a client that verifies nothing and a crash all leave.
    static func unproven(place: String, scenario: String, evidence: ConnectionRecord,
                         error: ThrownError) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .unproven,
                               reason: "the client completed the handshake with \(place) and closed without a request "
                                   + "(\(evidence.summary)); on its own that proves no refusal: a pin check, a host-name "
                                   + "check, a client that verifies nothing and one that failed for its own reason "
                                   + "(it threw \(error)) all look like this",
                               fix: "use the differential form, expectRefused(\"\(scenario)\") { url in … }, which "
                                   + "also loads the scenario's control and tells them apart")
    }

    /// The differential check of `scenario`, which states no refusal: a control, or a scenario without
    /// `expect.refusal`.
    public static func noRefusal(scenario: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .noRefusal,
                               reason: "\(scenario) states no refusal: every verifying client accepts it (a control), "
                                   + "or its scenario file has no expect.refusal",
                               fix: "expect a refusal of a scenario that has one (tls-fixtures scenarios list), and "
                                   + "check \(scenario) with expectAccepted")
    }

    /// `#3 from 127.0.0.1:52114: the client sent …; #4 …`, at most five.
    static func list(_ records: [ConnectionRecord]) -> String {
        var items = records.prefix(5).map { "#\($0.id) from \($0.peer): \($0.summary)" }
        if records.count > 5 { items.append("and \(records.count - 5) more") }
        return items.joined(separator: "; ")
    }

    /// The load reached the fixture but spoke something other than TLS to it (plain HTTP to a TLS port): it neither
    /// refused nor accepted the server's TLS.
    static func notTLS(place: String, evidence: ConnectionRecord, error: ThrownError) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .notTLS,
                               reason: "the client reached \(place) but did not speak TLS to it: \(evidence.summary); "
                                   + "so it refused nothing (the load threw \(error))",
                               fix: "load the fixture's https:// URL (fixture.url or fixture.qualifiedURL), not an "
                                   + "http:// one")
    }

    /// The fixture recorded an outcome this version does not know (`Outcome.unrecognized`): a newer runner. Judging it
    /// either way could pass a test for the wrong reason.
    static func unrecognizedOutcome(place: String, evidence: ConnectionRecord, error: ThrownError?) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .unrecognizedOutcome,
                               reason: "the client reached \(place), and the fixture recorded \(evidence.summary)"
                                   + (error.map { " (the load threw \($0))" } ?? ""),
                               fix: "use the same swift-tls-fixtures version for the runner (tls-fixtures --version) and "
                                   + "the package your tests link")
    }

    static func accepted(_ reason: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .accepted, reason: reason)
    }

    static func loadSucceeded(_ reason: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .loadSucceeded, reason: reason)
    }

    static func refusedForAnotherReason(_ reason: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .refusedForAnotherReason, reason: reason)
    }

    static func stillOpen(_ reason: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .stillOpen, reason: reason,
                               fix: "close the client's connections (invalidate the URLSession) before the check ends")
    }

    static func refused(_ reason: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .refused, reason: reason)
    }

    static func noRequestServed(_ reason: String) -> LoadExpectationFailure {
        LoadExpectationFailure(code: .noRequestServed, reason: reason)
    }
}

/// The codes of `LoadExpectationFailure`.
extension ErrorCode where Owner == LoadExpectationFailure {
    /// No connection from the load reached the fixture (a DNS failure, a wrong port, a proxy that refused).
    public static var neverReached: Self { Self("neverReached") }
    /// Expected refused: the fixture answered a request, so the client accepted it, and the load failed later.
    public static var accepted: Self { Self("accepted") }
    /// Expected refused: the load did not throw.
    public static var loadSucceeded: Self { Self("loadSucceeded") }
    /// Expected refused: refused, but not as the scenario's refusing clients refuse it (another alert, another Apple
    /// code, or a close before the server's certificate).
    public static var refusedForAnotherReason: Self { Self("refusedForAnotherReason") }
    /// The load reached the fixture but sent something that is not TLS (plain HTTP to a TLS port), so it neither refused
    /// nor accepted the server.
    public static var notTLS: Self { Self("notTLS") }
    /// The fixture recorded an outcome this version of the package does not know: the runner is newer than the client.
    public static var unrecognizedOutcome: Self { Self("unrecognizedOutcome") }
    /// Expected refused: the connection from the load is still open, so how it ends is not known yet.
    public static var stillOpen: Self { Self("stillOpen") }
    /// Expected accepted: the client refused the fixture (or failed after it answered).
    public static var refused: Self { Self("refused") }
    /// Expected accepted: the load returned, but the fixture answered no request of it.
    public static var noRequestServed: Self { Self("noRequestServed") }
    /// Connections the check cannot tell apart arrived while the load ran (another client of a shared fixture).
    public static var ambiguous: Self { Self("ambiguous") }
    /// Expected refused: the only evidence is a handshake that completed and closed without a request, which proves no
    /// refusal on its own (use the differential form).
    public static var unproven: Self { Self("unproven") }
    /// The differential check: the client refused the scenario's control too, so its refusal of the scenario proves
    /// nothing (an untrusted CA, a client that sends no request).
    public static var controlRefused: Self { Self("controlRefused") }
    /// The differential check: the scenario states no refusal (a control, or a scenario without `expect.refusal`).
    public static var noRefusal: Self { Self("noRefusal") }
}
