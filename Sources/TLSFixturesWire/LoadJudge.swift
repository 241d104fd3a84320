import Foundation

/// Decides whether a load was refused (or accepted) by looking at both ends: what the client threw, and what the
/// fixture recorded of the connections the load made. Foundation only, so an in-process fixture and TLSFixturesClient
/// judge alike.
///
/// A load counts as **refused** only when it threw, a connection from it reached the fixture, and every connection that
/// ended did so without a request being answered; and, when the scenario says what its refusing clients object to
/// (`RefusalExpectation`), the alert and Apple's error code agree with it. It counts as **accepted** when it returned
/// and the fixture answered a request. Anything else is a `LoadExpectationFailure` saying what happened instead.
public struct LoadJudge: Sendable {
    /// The scenario's name (`expired`).
    public var scenario: String
    /// Where the load was meant to go (`localhost:9831`), for messages.
    public var target: String
    /// What a refusal for the scenario's own reason shows; nil to check only that the load was refused.
    public var expectation: RefusalExpectation?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(scenario: String, target: String, expectation: RefusalExpectation?) {
        self.scenario = scenario
        self.target = target
        self.expectation = expectation
    }

    /// nil when the load was refused as the scenario's refusing clients refuse it; otherwise why not.
    /// `records` are the fixture's records of the connections since the load started.
    public func refused(thrown: Error?, records: [ConnectionRecord]) -> LoadExpectationFailure? {
        let place = "\(scenario) at \(target)"
        let served = records.filter { $0.requestCount > 0 }
        if let accepted = served.first {
            if let thrown {
                return .accepted("the load threw \(ThrownError(thrown)), but the client accepted \(place): "
                    + "\(accepted.summary); the failure came after the TLS handshake, so it is no refusal of the "
                    + "server")
            }
            return .loadSucceeded("the load succeeded: \(accepted.summary), so the client accepted \(place)")
        }
        guard let thrown else {
            if let record = records.last {
                return .loadSucceeded("the load succeeded, yet \(place) answered no request (\(record.summary)): "
                    + "the response came from somewhere else (a cache, a mock, another server)")
            }
            return .loadSucceeded("the load succeeded without reaching \(place): the response came from somewhere else "
                + "(a cache, a mock, another server on another port)")
        }
        let error = ThrownError(thrown)
        guard !records.isEmpty else { return .neverReached(place: place, error: error) }
        let ended = records.filter { $0.endedAt != nil }
        if let unknown = ended.last(where: \.hasUnrecognizedOutcome) {
            return .unrecognizedOutcome(place: place, evidence: unknown, error: error)
        }
        if let notTLS = ended.last(where: { $0.outcome?.kind == "notTLS" }), !ended.contains(where: { $0.outcome?.alert != nil }) {
            return .notTLS(place: place, evidence: notTLS, error: error)
        }
        guard let evidence = ended.last(where: { $0.outcome?.alert != nil }) ?? ended.last else {
            return .stillOpen("the client reached \(place) and threw \(error), but the connection is still open: "
                + "\(records.last!.summary)")
        }
        return reasonMismatch(evidence, error: error, place: place)
    }

    /// nil when the load returned and the fixture answered a request of it; otherwise why not.
    public func accepted(thrown: Error?, records: [ConnectionRecord]) -> LoadExpectationFailure? {
        let place = "\(scenario) at \(target)"
        if let served = records.first(where: { $0.requestCount > 0 }) {
            guard let thrown else { return nil }
            return .refused("\(place) answered (\(served.summary)), but the load then threw \(ThrownError(thrown)): "
                + "the client accepted the server and failed after the TLS layer")
        }
        if let thrown {
            let error = ThrownError(thrown)
            guard let record = records.last(where: { $0.outcome?.alert != nil }) ?? records.last else {
                return .neverReached(place: place, error: error)
            }
            if record.outcome?.kind == "notTLS" { return .notTLS(place: place, evidence: record, error: error) }
            if record.hasUnrecognizedOutcome { return .unrecognizedOutcome(place: place, evidence: record, error: error) }
            return .refused("the client refused \(place): \(record.summary) (the load threw \(error))")
        }
        if let record = records.last {
            return .noRequestServed("the load returned, but \(place) answered no request: \(record.summary)")
        }
        return .loadSucceeded("the load returned without reaching \(place): the response came from somewhere else "
            + "(a cache, a mock, another server on another port)")
    }

    /// Whether a refusal that reached the fixture was for the scenario's reason.
    private func reasonMismatch(_ evidence: ConnectionRecord, error: ThrownError,
                                place: String) -> LoadExpectationFailure? {
        let gaveUpEarly: Bool
        switch evidence.outcome {
        case .closedWithoutAlert(let phase)?, .timedOut(let phase)?: gaveUpEarly = phase != .afterServerFlight
        default: gaveUpEarly = false
        }
        if gaveUpEarly {
            return .refusedForAnotherReason("the client reached \(place) but \(evidence.summary), so it never saw the "
                + "server's certificate: it gave up for a reason of its own (it threw \(error))")
        }
        guard let expectation else { return nil }
        let alert = evidence.outcome?.alert ?? evidence.alertAfterHandshake
        if let alert, !expectation.alerts.isEmpty, !expectation.alerts.contains(alert), !alert.isUnspecificObjection {
            let expected = expectation.alerts.map(\.description).joined(separator: " or ")
            return .refusedForAnotherReason("the client refused \(place), but not for \(scenario)'s reason: "
                + "\(evidence.summary); a client refusing \(scenario) for its reason ends with \(expected)")
        }
        #if !canImport(FoundationNetworking)
        // Apple's codes; FoundationNetworking reports libcurl's errors, which the scenario files do not state.
        if let apple = expectation.apple, error.domain == "NSURLErrorDomain", (-1206 ... -1200).contains(error.code),
           error.code != apple.urlErrorCode {
            return .refusedForAnotherReason("the client refused \(place) with \(error), but \(scenario)'s refusal is "
                + "\(apple): it objected to something else (\(evidence.summary))")
        }
        #endif
        return nil
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

    /// Why a load that threw this may not have reached the fixture, and what to change.
    var neverReachedHint: String {
        // libcurl (FoundationNetworking) says "CONNECT tunnel failed, response 403"; CFNetwork reports a proxy's
        // refusal of a CONNECT as kCFErrorHTTPSProxyConnectionFailure (310, CFNetworkErrors.h).
        let curlProxyRefusal = text.contains("CONNECT") && text.contains("response 4")
        if curlProxyRefusal || (domain == "kCFErrorDomainCFNetwork" && code == 310) {
            return "the runner's proxy refused the CONNECT (\(text)): it tunnels to a fixture by that fixture's own "
                + "name and port only; load fixture.qualifiedURL as given (a mistyped port, localhost or an address is "
                + "refused: the runner's log names the fixture on that port)"
        }
        switch (domain, code) {
        case ("NSURLErrorDomain", -1003):
            return "the host name did not resolve: map it to 127.0.0.1 (/etc/hosts, a simulator's host), or send the "
                + "load "
                + "through the runner's proxy (FoundationNetworking on Linux ignores connectionProxyDictionary: set "
                + "FixtureProxy.environment)"
        case ("NSURLErrorDomain", -1004), ("NSPOSIXErrorDomain", 61), ("NSPOSIXErrorDomain", 111):
            return "nothing accepted the connection there: check the port (fixture.port) and that the fixture is "
                + "still running"
        case ("NSURLErrorDomain", -1001):
            return "the load timed out before any connection reached the fixture"
        case ("NSURLErrorDomain", -1022):
            return "App Transport Security blocked the load before connecting (an http:// URL)"
        case ("NSURLErrorDomain", -999):
            return "the load was cancelled before it connected"
        case ("NSURLErrorDomain", -1206 ... -1200):
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
}
