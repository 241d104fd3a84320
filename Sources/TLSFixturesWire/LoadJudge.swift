import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Decides whether a load was refused (or accepted) by looking at both ends: what the client threw, and what the
/// fixture recorded of the connections the load made. Foundation only, so an in-process fixture and TLSFixturesClient
/// judge alike.
///
/// Two kinds of check:
/// - **The differential check** (`differential(control:scenario:)`), which the `expectRefused("NAME") { url in … }`
///   forms run: the same client loads a fresh fixture of the scenario's control and a fresh fixture of the scenario,
///   each its own, and the refusal counts only when the control was accepted (a request answered) and the scenario
///   refused at the scenario's step (`RefusalExpectation.step`). A client that verifies nothing, a client that does not
///   trust the CA, a refusal for another reason all fail it, saying which half failed.
/// - **The single-fixture checks** (`refused(…)`, `accepted(…)`) on a fixture the test may share: they hold one load to
///   what the fixture saw after a cursor, and fail as *ambiguous* when the window holds connections they cannot tell
///   apart, and as *unproven* when the only evidence is a handshake that completed and closed without a request (a
///   pin, a host-name check and a crash look alike there).
///
/// Apple's error codes are evidence, not a verdict: an Apple load fails only for an error outside the family of the
/// scenario's step (see `judgesAppleErrors`); a code in the family other than the one the scenario file expects is
/// a note of the verdict.
public struct LoadJudge: Sendable {
    /// The scenario's name (`expired`).
    public var scenario: String
    /// Where the load was meant to go (`localhost:9831`), for messages.
    public var target: String
    /// What a refusal for the scenario's own reason shows; nil to check only that the load was refused.
    public var expectation: RefusalExpectation?
    /// Whether thrown `NSURLErrorDomain` errors are Apple's URLSession's, and held to the step's family: true where
    /// Foundation is Apple's, false on Linux, whose FoundationNetworking reports libcurl's errors.
    public var judgesAppleErrors: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(scenario: String, target: String, expectation: RefusalExpectation?,
                judgesAppleErrors: Bool = LoadJudge.isApplePlatform) {
        self.scenario = scenario
        self.target = target
        self.expectation = expectation
        self.judgesAppleErrors = judgesAppleErrors
    }

    /// True where Foundation is Apple's (its URLSession is CFNetwork's), false where it is swift-corelibs-foundation's.
    public static var isApplePlatform: Bool {
        #if canImport(FoundationNetworking)
        return false
        #else
        return true
        #endif
    }

    private var place: String { "\(scenario) at \(target)" }

    /// Whether `error`, thrown by a load, itself says the load made no connection (a name that did not resolve, a
    /// connection refused, a proxy that refused the tunnel, App Transport Security's -1022): nothing to wait for.
    public static func madeNoConnection(_ error: Error) -> Bool { ThrownError(error).provesNoConnection }

    /// Whether the records after `cursor` say how a load went: a request answered after it, or every connection that
    /// carried anything has closed.
    public static func hasSettled(_ records: [ConnectionRecord], after cursor: ConnectionCursor) -> Bool {
        let window = cursor.window(records)
        if window.contains(where: { $0.answeredRequest(after: cursor) }) { return true }
        return window.contains(where: \.carriesEvidence) && window.allSatisfy { $0.endedAt != nil }
    }

    // MARK: The single-fixture checks

    /// nil when the load was refused as the scenario's refusing clients refuse it; otherwise why not. `records` are the
    /// fixture's records after `cursor` (connections opened since, and older ones that answered a request since).
    public func refused(thrown: Error?, records: [ConnectionRecord],
                        cursor: ConnectionCursor = .start) -> LoadExpectationFailure? {
        let window = cursor.window(records)
        let served = window.filter { $0.answeredRequest(after: cursor) }
        guard let thrown else {
            if let accepted = served.first {
                return .loadSucceeded("the load succeeded: \(accepted.summary), so the client accepted \(place)")
            }
            if let record = window.last {
                return .loadSucceeded("the load succeeded, yet \(place) answered no request (\(record.summary)): "
                    + "the response came from somewhere else (a cache, a mock, another server)")
            }
            return .loadSucceeded("the load succeeded without reaching \(place): the response came from somewhere else "
                + "(a cache, a mock, another server on another port)")
        }
        let error = ThrownError(thrown)
        let evidence = window.filter(\.carriesEvidence)
        if error.provesNoConnection {
            return .neverReached(place: place, error: error, others: evidence)
        }
        if evidence.count > 1 || Set(evidence.map(\.peerHost)).count > 1 {
            return .ambiguous(place: place, records: evidence, error: error)
        }
        if let accepted = served.first {
            return .accepted("the load threw \(error), but the client accepted \(place): \(accepted.summary); the "
                + "failure came after the TLS handshake, so it is no refusal of the server")
        }
        guard let record = evidence.first else {
            return .neverReached(place: place, error: error, others: [])
        }
        if let failure = unreadable(record, error: error) { return failure }
        if record.closedAfterHandshakeWithoutRequest {
            return .unproven(place: place, scenario: scenario, evidence: record, error: error)
        }
        guard let expectation else {
            // No step to hold it to (a control, or a scenario of your own without `expect.refusal`): any refusal
            // during the handshake, by either side, once the server had the ClientHello.
            let during: [RefusalStep] = [.negotiation, .certificate, .clientCertificate]
            if during.contains(where: { $0.isShown(by: record) }) { return nil }
            return .refusedForAnotherReason("the client reached \(place) but \(record.summary), so it did not refuse "
                + "the server during the handshake (it threw \(error))")
        }
        return refusal(of: expectation, shownBy: [record], error: error).failure
    }

    /// nil when the load returned and the fixture answered a request of it after `cursor`; otherwise why not. `value`
    /// is what the load returned: when it is a URL response, its `X-TLS-Fixture-Request` stamp must name one of this
    /// fixture's requests after the cursor (`port` is the fixture's), which proves the answer was this load's.
    public func accepted(thrown: Error?, value: Any? = nil, records: [ConnectionRecord],
                         cursor: ConnectionCursor = .start, port: Int? = nil) -> LoadExpectationFailure? {
        let window = cursor.window(records)
        let served = window.filter { $0.answeredRequest(after: cursor) }
        if let thrown {
            let error = ThrownError(thrown)
            if let record = served.first {
                return .refused("\(place) answered (\(record.summary)), but the load then threw \(error): the client "
                    + "accepted the server and failed after the TLS layer")
            }
            let evidence = window.filter(\.carriesEvidence)
            guard !error.provesNoConnection, let record = evidence.last else {
                return .neverReached(place: place, error: error, others: evidence)
            }
            if let failure = unreadable(record, error: error) { return failure }
            return .refused("the client refused \(place): \(record.summary) (the load threw \(error))")
        }
        if let value, let port {
            switch ResponseStamp.read(value) {
            case .stamped(let stamp):
                return stampedAnswer(stamp, served: served, cursor: cursor, port: port)
            case .unstamped:
                return .loadSucceeded("the load returned a response without the \(ResponseStamp.header) header every "
                    + "fixture answer carries: the response came from somewhere else (a mock, a proxy that answered "
                    + "itself), not from \(place)")
            case .notAResponse:
                break
            }
        }
        guard !served.isEmpty else {
            if let record = window.last {
                return .noRequestServed("the load returned, but \(place) answered no request: \(record.summary)")
            }
            return .loadSucceeded("the load returned without reaching \(place): the response came from somewhere else "
                + "(a cache, a mock, another server on another port)")
        }
        // Nothing says which of several connections was this load's.
        let evidence = window.filter(\.carriesEvidence)
        if served.count > 1 || Set(evidence.map(\.id)).union(served.map(\.id)).count > 1 {
            return .ambiguous(place: place, records: Array(Set(evidence + served)).sorted { $0.id < $1.id },
                              error: nil)
        }
        return nil
    }

    private func stampedAnswer(_ stamp: ResponseStamp, served: [ConnectionRecord], cursor: ConnectionCursor,
                               port: Int) -> LoadExpectationFailure? {
        guard stamp.port == port else {
            return .loadSucceeded("the answer came from the fixture on port \(stamp.port) (\(ResponseStamp.header): "
                + "\(stamp)), not from \(place): the load went to another fixture")
        }
        guard stamp.request > cursor.request else {
            return .loadSucceeded("the answer is request \(stamp.request) of \(place), answered before this check "
                + "began (its cursor is \(cursor)): the client replayed an earlier response (a cache)")
        }
        guard served.contains(where: { $0.id == stamp.connection }) else {
            return .ambiguous(place: place, records: served, error: nil)
        }
        return nil
    }

    /// A record the judge cannot count either way: an outcome this version cannot read, bytes that were not TLS, a
    /// connection whose handshake is still going on, or one that completed and is still open without a request.
    private func unreadable(_ record: ConnectionRecord, error: ThrownError) -> LoadExpectationFailure? {
        if record.hasUnrecognizedOutcome {
            return .unrecognizedOutcome(place: place, evidence: record, error: error)
        }
        if case .notTLS? = record.outcome { return .notTLS(place: place, evidence: record, error: error) }
        var open = record.outcome == nil
        if case .handshakeCompleted? = record.outcome, record.requestCount == 0 {
            open = !record.closedAfterHandshakeWithoutRequest
        }
        guard open else { return nil }
        return .stillOpen("the client reached \(place) and threw \(error), but the connection is still open: "
            + record.summary)
    }

    // MARK: Holding a refusal to its expectation

    /// Whether `records`, a client's connections to a fixture of the scenario that nobody else used, show it refusing
    /// the scenario at one of its steps, for its reason (`expectation` is required): the step they showed, or why not.
    /// What the client matrix and a report card check of every refusal; `thrown` is what the client reported, if it
    /// reported an error at all.
    public func refusalShown(by records: [ConnectionRecord], thrown: Error? = nil)
        -> Result<RefusalStep, LoadExpectationFailure>
    {
        guard let expectation else { return .failure(.noRefusal(scenario: scenario)) }
        let error = ThrownError(thrown ?? ClientRefused())
        let evidence = records.filter(\.carriesEvidence)
        if let served = evidence.first(where: { $0.requestCount > 0 }) {
            return .failure(.accepted("\(place) answered a request (\(served.summary)): the client accepted it"))
        }
        guard !evidence.isEmpty else { return .failure(.neverReached(place: place, error: error, others: [])) }
        let refusal = refusal(of: expectation, shownBy: evidence, error: error)
        if let failure = refusal.failure { return .failure(failure) }
        return .success(refusal.step ?? expectation.step)
    }

    /// The error of a client that refused without one of its own to report (a command's exit status).
    private struct ClientRefused: Error, CustomStringConvertible {
        var description: String { "the client reported a refusal" }
    }

    /// What a scenario half showed: a failure, or nil with notes.
    struct Refusal {
        var failure: LoadExpectationFailure?
        var notes: [String] = []
        /// The step the evidence showed.
        var step: RefusalStep?
    }

    /// Whether `records` (each carrying evidence) show a refusal at the expectation's step, for its reason.
    func refusal(of expectation: RefusalExpectation, shownBy records: [ConnectionRecord],
                 error: ThrownError) -> Refusal {
        var notes: [String] = []
        let late = expectation.lateCheck != nil
        for record in records where !expectation.steps.contains(where: { $0.isShown(by: record,
                                                                                acceptingLateChecks: late) }) {
            if let failure = unreadable(record, error: error) { return Refusal(failure: failure) }
            return Refusal(failure: wrongStep(record, expectation: expectation, error: error))
        }
        if let lateCheck = expectation.lateCheck, let record = records.first(where: \.closedAfterHandshakeWithoutRequest) {
            notes.append("\(scenario): the client completed the handshake and closed without a request "
                + "(\(record.summary)); counted as the certificate refusal because \(lateCheck.clients) check this "
                + "after the handshake (\(lateCheck.source))")
        }
        if let evidence = records.last(where: { ($0.outcome?.alert ?? $0.alertAfterHandshake) != nil }),
           let alert = evidence.outcome?.alert ?? evidence.alertAfterHandshake, !expectation.alerts.isEmpty,
           !expectation.alerts.contains(alert), !alert.isUnspecificObjection,
           !(expectation.steps.contains(.negotiation) && RefusalStep.negotiationAlerts.contains(alert)) {
            let expected = expectation.alerts.map(\.description).joined(separator: " or ")
            return Refusal(failure: .refusedForAnotherReason("the client refused \(place), but not for "
                + "\(scenario)'s reason: \(evidence.summary); a client refusing \(scenario) for its reason ends with "
                + "\(expected), or an alert that names no reason"))
        }
        let apple = appleCheck(error, step: expectation.step, expected: expectation.apple, evidence: records)
        if let failure = apple.failure { return Refusal(failure: failure) }
        notes += apple.notes
        let shown = expectation.steps.first { step in
            records.allSatisfy { step.isShown(by: $0, acceptingLateChecks: late) }
        }
        return Refusal(failure: nil, notes: notes, step: shown ?? expectation.step)
    }

    private func wrongStep(_ record: ConnectionRecord, expectation: RefusalExpectation,
                           error: ThrownError) -> LoadExpectationFailure {
        let step = expectation.steps.map(\.description).joined(separator: ", or ")
        if record.closedAfterHandshakeWithoutRequest {
            return .refusedForAnotherReason("the client completed the handshake with \(place) and then closed "
                + "without a request (\(record.summary)): it did not refuse the server \(step), where \(scenario)'s "
                + "refusal is; a client that verifies nothing, or one that failed for a reason of its own (it threw "
                + "\(error)), looks like this")
        }
        switch record.outcome {
        case .timedOut?:
            return .refusedForAnotherReason("the client reached \(place) but \(record.summary): it gave up or hung, "
                + "which refuses nothing (it threw \(error)); \(scenario)'s refusal is \(step)")
        case .closedWithoutAlert(let phase)? where phase != .afterServerFlight:
            return .refusedForAnotherReason("the client reached \(place) but \(record.summary), so it never saw the "
                + "server's certificate: it gave up for a reason of its own (it threw \(error))")
        default:
            return .refusedForAnotherReason("the client refused \(place), but not \(step), where \(scenario)'s "
                + "refusal is: \(record.summary) (it threw \(error))")
        }
    }

    /// The `NSURLErrorDomain` codes an Apple load may end with when it refuses at `step`: the TLS and trust errors
    /// (-1200 … -1206, NSURLError.h's "SSL errors"), and -999 (cancelled) for a delegate that cancels the server-trust
    /// challenge, as pinning code does; `beforeConnecting` is -1022 alone.
    public static func appleErrorFamily(for step: RefusalStep) -> ClosedRange<Int>? {
        step == .beforeConnecting ? -1022 ... -1022 : -1206 ... -1200
    }

    private func appleCheck(_ error: ThrownError, step: RefusalStep, expected: RefusalExpectation.AppleExpectation?,
                            evidence: [ConnectionRecord]) -> Refusal {
        guard judgesAppleErrors, error.domain == NSURLErrorDomain else { return Refusal() }
        let family = Self.appleErrorFamily(for: step)!
        let cancelled = error.code == NSURLErrorCancelled && step != .beforeConnecting
        guard family.contains(error.code) || cancelled else {
            let what = evidence.last.map { "; the fixture saw \($0.summary)" } ?? ""
            return Refusal(failure: .refusedForAnotherReason("the client threw \(error), which is not a TLS refusal "
                + "(NSURLErrorDomain \(family.lowerBound)…\(family.upperBound), or -999 for a delegate that "
                + "cancelled the server-trust challenge)\(what)"))
        }
        guard let expected, expected.error.urlErrorCode != error.code else { return Refusal() }
        return Refusal(notes: ["\(scenario): Apple reported \(error) where the scenario file expects "
            + "\(expected); not a failure (a code of the same family), the fixture's record proves the refusal"])
    }

    // MARK: The differential check

    /// One load of the differential check: what it threw and what its own, fresh fixture saw.
    public struct Load: Sendable {
        /// The scenario the fixture serves.
        public var scenario: String
        /// Where the load went (`expired.fixtures.test:9831`).
        public var target: String
        /// What the load threw; nil when it returned.
        public var thrown: Error?
        /// Every record of the fixture (it served nobody else).
        public var records: [ConnectionRecord]

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(scenario: String, target: String, thrown: Error?, records: [ConnectionRecord]) {
            self.scenario = scenario
            self.target = target
            self.thrown = thrown
            self.records = records
        }
    }

    /// The differential check: nil failure when `control` was accepted (a request answered) and `scenario` refused at
    /// the scenario's step, for its reason; the verdict carries what each half showed and any notes.
    public static func differential(control: Load, scenario: Load,
                                    expectation: RefusalExpectation?,
                                    judgesAppleErrors: Bool = isApplePlatform) -> Result<RefusalVerdict, LoadExpectationFailure> {
        let controlJudge = LoadJudge(scenario: control.scenario, target: control.target, expectation: nil,
                                     judgesAppleErrors: judgesAppleErrors)
        let judge = LoadJudge(scenario: scenario.scenario, target: scenario.target, expectation: expectation,
                              judgesAppleErrors: judgesAppleErrors)
        guard let expectation else { return .failure(.noRefusal(scenario: scenario.scenario)) }
        let controlHalf = controlJudge.controlAccepted(control)
        let scenarioHalf = judge.scenarioRefused(scenario, expectation: expectation)
        switch (controlHalf.failure, scenarioHalf.failure) {
        case (nil, nil):
            return .success(RefusalVerdict(
                scenario: scenario.scenario, control: control.scenario, step: scenarioHalf.step ?? expectation.step,
                controlEvidence: controlHalf.evidence, refusalEvidence: scenarioHalf.evidence,
                notes: controlHalf.notes + scenarioHalf.notes))
        case (let controlFailure?, let scenarioFailure):
            var reason = "your client refuses the control too: \(controlFailure.reason)"
            if let scenarioFailure {
                reason += "; and on \(scenario.scenario): \(scenarioFailure.reason)"
            } else {
                reason += "; it did refuse \(scenario.scenario) (\(scenarioHalf.evidence)), but a client that refuses "
                    + "the control proves nothing by refusing the scenario"
            }
            return .failure(LoadExpectationFailure(code: .controlRefused, reason: reason, fix: controlFailure.fix))
        case (nil, let scenarioFailure?):
            let reason = "your client accepted the control \(control.scenario) (\(controlHalf.evidence)), but on "
                + "\(scenario.scenario): \(scenarioFailure.reason)"
            return .failure(LoadExpectationFailure(code: scenarioFailure.code, reason: reason,
                                                   fix: scenarioFailure.fix))
        }
    }

    /// What one half showed: the evidence in words, a failure, notes.
    struct Half {
        var evidence: String
        var failure: LoadExpectationFailure?
        var notes: [String] = []
        var step: RefusalStep?
    }

    private func controlAccepted(_ load: Load) -> Half {
        let evidence = load.records.filter(\.carriesEvidence)
        if let served = evidence.first(where: { $0.requestCount > 0 }) {
            var notes: [String] = []
            if let thrown = load.thrown {
                notes.append("\(scenario): the fixture answered (\(served.summary)), and the load then threw "
                    + "\(ThrownError(thrown)): the client accepted the server and failed after the TLS layer")
            }
            return Half(evidence: served.summary, notes: notes)
        }
        let error = load.thrown.map(ThrownError.init)
        guard let record = evidence.last(where: { $0.outcome?.alert != nil }) ?? evidence.last else {
            if let error {
                return Half(evidence: "never reached", failure: .neverReached(place: place, error: error, others: []))
            }
            return Half(evidence: "never reached", failure: .loadSucceeded("the load returned without reaching "
                + "\(place): the response came from somewhere else (a cache, a mock, another server)"))
        }
        let threw = error.map { " (the load threw \($0))" } ?? ""
        let fix: String?
        switch record.outcome?.alert {
        case .unknownCA?, .certificateUnknown?, .badCertificate?:
            fix = "make the client trust the kit's CA: tls-fixtures ca install --keychain (macOS) or --system (Linux, "
                + "as root); a simulator: tls-fixtures simulator trust; an in-process client: trust "
                + "fixture.caCertificate"
        default:
            fix = record.closedAfterHandshakeWithoutRequest
                ? "the load must send a request (GET the URL it is given) and return what it got" : nil
        }
        return Half(evidence: record.summary, failure: LoadExpectationFailure(code: .refused,
            reason: "\(place): \(record.summary)\(threw)", fix: fix))
    }

    private func scenarioRefused(_ load: Load, expectation: RefusalExpectation) -> Half {
        let evidence = load.records.filter(\.carriesEvidence)
        if let served = evidence.first(where: { $0.requestCount > 0 }) {
            return Half(evidence: served.summary, failure: .accepted("your client accepted \(place) (\(served.summary))"
                + ": \(Self.acceptedMeans(expectation.step))"))
        }
        guard let thrown = load.thrown else {
            return Half(evidence: evidence.last?.summary ?? "never reached",
                        failure: .loadSucceeded("the load returned without an answer from \(place): the response came "
                            + "from somewhere else (a cache, a mock, another server)"))
        }
        let error = ThrownError(thrown)
        if Set(evidence.map(\.peerHost)).count > 1 {
            return Half(evidence: "", failure: .ambiguous(place: place, records: evidence, error: error))
        }
        if expectation.step == .beforeConnecting {
            guard evidence.isEmpty else {
                return Half(evidence: evidence.last!.summary, failure: .refusedForAnotherReason("the client "
                    + "connected to \(place) (\(evidence.last!.summary)), but \(scenario)'s refusal is "
                    + "\(expectation.step)"))
            }
            guard error.domain == NSURLErrorDomain, error.code == NSURLErrorAppTransportSecurityRequiresSecureConnection
            else {
                return Half(evidence: "no connection", failure: .refusedForAnotherReason("the client threw \(error) "
                    + "without connecting to \(place); only App Transport Security's -1022 proves a refusal of an "
                    + "http:// URL before connecting (Apple platforms; FoundationNetworking has no ATS)"))
            }
            return Half(evidence: "no connection: the client threw \(error)")
        }
        if evidence.isEmpty {
            return Half(evidence: "never reached", failure: .neverReached(place: place, error: error, others: []))
        }
        let refusal = refusal(of: expectation, shownBy: evidence, error: error)
        let shown = evidence.last(where: { $0.outcome?.alert != nil }) ?? evidence.last!
        return Half(evidence: shown.summary, failure: refusal.failure, notes: refusal.notes, step: refusal.step)
    }

    /// What accepting a scenario means, by its step: the sentence after "your client accepted expired (…):".
    static func acceptedMeans(_ step: RefusalStep) -> String {
        switch step {
        case .beforeConnecting: return "the load was not refused before connecting (App Transport Security refuses "
            + "http:// on Apple platforms only)"
        case .negotiation: return "it agreed to the version or suite this scenario offers"
        case .certificate: return "it does not verify what this scenario's certificate breaks"
        case .clientCertificate: return "it sent a client certificate the fixture accepted"
        case .afterHandshake: return "no pin was checked"
        }
    }
}

/// What a differential check saw when it passed: each half's evidence, and notes that are not failures (an Apple
/// error code other than the scenario file's, a refusal counted by the scenario's `lateCheck`).
public struct RefusalVerdict: Sendable, Hashable, CustomStringConvertible {
    /// The scenario refused.
    public var scenario: String
    /// Its control, accepted.
    public var control: String
    /// The step the refusal was seen at (one of the scenario's `steps`).
    public var step: RefusalStep
    /// What the control's fixture saw (`the handshake completed (…) and GET / was answered 200`).
    public var controlEvidence: String
    /// What the scenario's fixture saw (`the client sent certificate_expired(45) after the server's certificate: …`).
    public var refusalEvidence: String
    /// What is worth knowing and is not a failure.
    public var notes: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(scenario: String, control: String, step: RefusalStep, controlEvidence: String,
                refusalEvidence: String, notes: [String] = []) {
        self.scenario = scenario
        self.control = control
        self.step = step
        self.controlEvidence = controlEvidence
        self.refusalEvidence = refusalEvidence
        self.notes = notes
    }

    /// `expired refused at the certificate (…): …; control ats-compliant accepted: …`, then the notes.
    public var description: String {
        var text = "\(scenario) refused \(step): \(refusalEvidence); its control \(control) accepted: "
            + controlEvidence
        for note in notes { text += "\nnote: \(note)" }
        return text
    }
}

/// A thrown error as a test author reads it: `NSURLErrorDomain -1003 (A server with the specified hostname could not be
/// found.)`, or a Swift error's own description.
struct ThrownError: CustomStringConvertible {
    let domain: String
    let code: Int
    let text: String

    init(_ error: Error) {
        let bridged = error as NSError
        domain = bridged.domain
        code = bridged.code
        text = domain.hasPrefix("NS") || domain.hasPrefix("kCF")
            ? bridged.localizedDescription : String(describing: error)
    }

    var description: String {
        domain.hasPrefix("NS") || domain.hasPrefix("kCF") ? "\(domain) \(code) (\(text))" : text
    }

    /// libcurl (FoundationNetworking) says "CONNECT tunnel failed, response 403"; CFNetwork reports a proxy's refusal
    /// of a CONNECT as kCFErrorHTTPSProxyConnectionFailure (310, CFNetworkErrors.h).
    var isProxyRefusal: Bool {
        (text.contains("CONNECT") && text.contains("response 4")) || (domain == "kCFErrorDomainCFNetwork" && code == 310)
    }

    /// Whether the error itself says the load made no TLS connection to anything: a name that did not resolve, a
    /// connection refused, a proxy that refused the tunnel, App Transport Security refusing before connecting. Records
    /// that arrived meanwhile are then another client's.
    var provesNoConnection: Bool {
        if isProxyRefusal { return true }
        switch (domain, code) {
        case (NSURLErrorDomain, NSURLErrorCannotFindHost), (NSURLErrorDomain, NSURLErrorDNSLookupFailed),
             (NSURLErrorDomain, NSURLErrorCannotConnectToHost),
             (NSURLErrorDomain, NSURLErrorAppTransportSecurityRequiresSecureConnection),
             (NSPOSIXErrorDomain, 61), (NSPOSIXErrorDomain, 111):
            return true
        default:
            return false
        }
    }

    /// Why a load that threw this may not have reached the fixture, and what to change.
    var neverReachedHint: String {
        if isProxyRefusal {
            return "the runner's proxy refused the CONNECT (\(text)): it tunnels to a fixture by that fixture's own "
                + "name and port only; load fixture.qualifiedURL as given (a mistyped port, localhost or an address is "
                + "refused: the runner's log names the fixture on that port)"
        }
        switch (domain, code) {
        case (NSURLErrorDomain, NSURLErrorCannotFindHost), (NSURLErrorDomain, NSURLErrorDNSLookupFailed):
            return "the host name did not resolve: map it to 127.0.0.1 (/etc/hosts, a simulator's host), or send the "
                + "load through the runner's proxy (FoundationNetworking on Linux ignores connectionProxyDictionary: "
                + "set FixtureProxy.environment)"
        case (NSURLErrorDomain, NSURLErrorCannotConnectToHost), (NSPOSIXErrorDomain, 61), (NSPOSIXErrorDomain, 111):
            return "nothing accepted the connection there: check the port (fixture.port) and that the fixture is "
                + "still running"
        case (NSURLErrorDomain, NSURLErrorTimedOut):
            return "the load timed out before any connection reached the fixture"
        case (NSURLErrorDomain, NSURLErrorAppTransportSecurityRequiresSecureConnection):
            return "App Transport Security blocked the load before connecting (an http:// URL)"
        case (NSURLErrorDomain, NSURLErrorCancelled):
            return "the load was cancelled before it connected"
        case (NSURLErrorDomain, -1206 ... -1200):
            return "a TLS error came from a server that is not this fixture: another server on that port, or a proxy"
        default:
            return "check the URL (fixture.url, or fixture.qualifiedURL with its host mapped to 127.0.0.1)"
        }
    }
}

extension ConnectionRecord {
    /// Whether its outcome is one this version does not know (`Outcome.unrecognized`).
    var hasUnrecognizedOutcome: Bool {
        if case .unrecognized? = outcome { return true }
        return false
    }

    /// The peer's address without its port (`127.0.0.1`, `::1`): one client machine, whatever its source ports.
    var peerHost: String {
        if peer.hasPrefix("["), let end = peer.firstIndex(of: "]") { return String(peer[peer.index(after: peer.startIndex)..<end]) }
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}
