import Foundation

extension Scenario {
    /// What a browser that verifies certificates makes of the scenario at `https://localhost:PORT/`: Chromium as the
    /// client matrix runs it (the built-in CA its only extra root, no client certificate). The dashboard's live column
    /// holds the visiting browser to it, so "loaded" and "blocked" read as expected or not; derived here, from the
    /// scenario file, so the page and `/scenarios.json` say the same.
    public struct BrowserExpectation: Codable, Sendable, Hashable {
        /// Whether a verifying browser loads it.
        public var outcome: ClientOutcome
        /// Why, in a few words.
        public var because: String
        /// The certificate fails verification (`expect.verify` is not `ok`) and no client of the client matrix accepts
        /// it: a browser that loads it is not verifying certificates (`--ignore-certificate-errors`, an "accept anyway"
        /// click, a TLS-intercepting proxy or antivirus).
        public var noVerifyingClientAccepts: Bool

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(outcome: ClientOutcome, because: String, noVerifyingClientAccepts: Bool) {
            self.outcome = outcome; self.because = because; self.noVerifyingClientAccepts = noVerifyingClientAccepts
        }
    }

    /// What a verifying browser makes of it; nil for a TLS scenario the client matrix has not judged and whose
    /// verdict the file cannot tell (none today: an unjudged file still has `expect.verify`).
    public var browserExpectation: BrowserExpectation? {
        if isCleartext {
            return BrowserExpectation(outcome: .accept, because: "plain HTTP: there is no certificate to verify",
                                      noVerifyingClientAccepts: false)
        }
        if tls?.clientAuth == .required {
            return BrowserExpectation(
                outcome: .reject, because: "the server requires a client certificate, and the browser presents none",
                noVerifyingClientAccepts: false)
        }
        guard let chromium = expect.outcome(for: .chromium) else { return nil }
        let everyClientRejects = expect.isJudgedByClientMatrix
            && MatrixClient.allCases.allSatisfy { expect.outcome(for: $0)?.outcome == .reject }
        let because: String
        if let differs = chromium.because {
            because = "Chromium differs from OpenSSL here: \(differs)"
        } else if expect.verify == "ok" {
            because = "the chain verifies with the built-in CA"
        } else {
            because = "the certificate fails verification: \(expect.verify ?? "")"
        }
        let judged = expect.isJudgedByClientMatrix ? "" : " (\(clientMatrixNotJudged ?? ""): OpenSSL's verdict)"
        return BrowserExpectation(
            outcome: chromium.outcome, because: because + judged,
            noVerifyingClientAccepts: everyClientRejects && expect.verify != "ok")
    }
}
