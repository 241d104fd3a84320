import Foundation
import TLSFixturesWire

/// Decides whether a load would be allowed, from the app's policy and what a client observed about the
/// server. It never talks to the network: the facts come from the probe (or a test), so verdicts are
/// reproducible and explainable rule by rule.
public struct ATSEvaluator: Sendable {
    /// The app's `NSAppTransportSecurity` dictionary, parsed; the default policy is an empty one (all
    /// defaults: local hosts are still exempt, so test with a qualified name).
    public var policy: ATSPolicy
    /// The load kind, OS profile, readings and trust override the verdict assumes.
    public var options: ATSEvaluationOptions

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(policy: ATSPolicy = .empty, options: ATSEvaluationOptions = .init()) {
        self.policy = policy
        self.options = options
    }

    /// Requirements for a URL without looking at any server.
    public func requirements(for url: URL) -> ATSRequirements {
        ATSRequirementsResolver(policy: policy, options: options).resolve(url: url)
    }

    /// The client offer those requirements imply.
    public func offer(for url: URL) -> ATSClientOffer {
        ATSClientOffer(requirements: requirements(for: url), options: options)
    }

    /// Would Apple's loader complete a load of `url` from a server with these facts? The verdict names every rule that fails.
    public func evaluate(url: URL, facts: ServerFacts) -> ATSVerdict {
        let requirements = requirements(for: url)
        var verdict = ATSVerdict(allowed: false, violations: [], waived: [], atsApplies: requirements.atsApplies,
                                 exemptionReason: requirements.exemptionReason,
                                 matchedExceptionDomain: requirements.matchedExceptionDomain,
                                 matchedPinnedDomain: requirements.matchedPinnedDomain, notes: requirements.notes,
                                 likelyError: nil, negotiatedVersion: nil, negotiatedSuite: nil,
                                 requirements: requirements, rules: requirements.rules)
        guard let host = ATSHost(url: url) else {
            verdict.violations = [ATSViolation(rule: .invalidURL, message: "invalid URL: \(url.absoluteString) has no host",
                                               likelyError: .badURL)]
            return finish(verdict)
        }
        let scheme = url.scheme?.lowercased() ?? ""
        if scheme != facts.scheme.lowercased() {
            verdict.notes.append("the URL's scheme is \(scheme) but the facts were gathered over \(facts.scheme)")
        }
        if scheme == "http" || scheme == "ws" {
            if requirements.atsApplies { verdict.rules.append(ATSAppliedRule(.httpBlocked)) }
            if !requirements.allowsInsecureHTTPLoads {
                verdict.violations.append(ATSViolation(
                    rule: .scheme,
                    message: "insecure HTTP: \(scheme):// is blocked; ATS requires HTTPS "
                        + "(or NSExceptionAllowsInsecureHTTPLoads in an exception entry for \(host))",
                    likelyError: .appTransportSecurity))
            } else if requirements.matchedPinnedDomain != nil {
                verdict.notes.append("plain HTTP has no certificate, so the NSPinnedDomains entry cannot protect it")
            }
            return finish(verdict)
        }

        let offer = ATSClientOffer(requirements: requirements, options: options)
        let transport = ATSHandshakeCheck(offer: offer, requirements: requirements, options: options)
        switch transport.check(facts.accepted) {
        case .negotiated(let version, let suite):
            verdict.negotiatedVersion = version
            verdict.negotiatedSuite = suite
            if ATSCipherSuites.isDHE(suite) {
                verdict.rules.append(ATSAppliedRule(.dheWithoutATS, reading: options.readings.dhe.rawValue))
                verdict.notes.append("uncertain: \(suite) is a DHE suite, which Apple's source lists only in its \"legacy\" "
                                     + "group; whether URLSession offers DHE with ATS out of the way is not documented "
                                     + "(the other reading refuses it)")
            }
        case .failed(let violations):
            verdict.violations += violations
            if !requirements.atsApplies, options.readings.dhe == .neverOffered,
               facts.accepted.values.joined().contains(where: ATSCipherSuites.isDHE) {
                verdict.rules.append(ATSAppliedRule(.dheWithoutATS, reading: options.readings.dhe.rawValue))
            }
        }
        if options.profile.minimumTLSVersionFloor > .tls1_0 { verdict.rules.append(ATSAppliedRule(.ios26TLS12Floor)) }

        if facts.trust == nil, facts.presentedChain.isEmpty, facts.accepted.values.allSatisfy(\.isEmpty) {
            // No handshake and no certificate: there is nothing more to judge.
            return finish(verdict)
        }

        // Certificate rules: ATS's own (only where ATS applies), then default trust (always).
        var certificate: [ATSViolation] = []
        verdict.rules.append(ATSAppliedRule(.defaultTrust))
        if options.profile.hasIOS13CertificateRules { verdict.rules.append(ATSAppliedRule(.ios13CertificateRules)) }
        if options.profile.hasPublicValidityRule, facts.trust?.anchor == .system {
            verdict.rules.append(ATSAppliedRule(.publicValidity398Days))
        }
        if requirements.atsApplies {
            certificate += ATSCertificateRules().violations(presentedChain: facts.presentedChain, trust: facts.trust,
                                                            requiresForwardSecrecy: requirements.requiresForwardSecrecy)
        } else {
            verdict.notes.append("ATS does not apply, but default trust (chain, dates, host name) still does "
                                 + "unless the app's delegate overrides it")
        }
        certificate += ATSDefaultTrust(profile: options.profile)
            .violations(host: host, presentedChain: facts.presentedChain, trust: facts.trust)
        certificate += ATSCertificateTransparencyCheck(requirements: requirements, profile: options.profile)
            .violations(facts: facts, verdict: &verdict)
        certificate += ATSRevocationCheck().violations(facts: facts, verdict: &verdict)
        certificate = trustFirst(certificate)

        if options.trustOverride { verdict.rules.append(ATSAppliedRule(.trustOverride)) }
        if options.trustOverride, requirements.trustOverrideHonoured {
            verdict.waived = certificate
            if !certificate.isEmpty {
                verdict.notes.append("the app's trust override accepts this certificate; ATS lets it here because "
                                     + (requirements.atsApplies
                                        ? "the exception entry allows insecure HTTP loads" : "ATS does not apply"))
            }
        } else {
            verdict.violations += certificate
            if options.trustOverride, !certificate.isEmpty {
                verdict.notes.append("the app's trust override is not honoured: ATS lets a delegate accept an untrusted "
                                     + "certificate only when the matching exception entry sets "
                                     + "NSExceptionAllowsInsecureHTTPLoads (or ATS does not apply)")
            }
        }
        let pinned = requirements.matchedPinnedDomains.compactMap { policy.pinnedDomains[$0] }
        if !pinned.isEmpty {
            let mismatches = ATSPinnedDomainCheck(entries: pinned)
                .violations(presentedChain: facts.presentedChain, trust: facts.trust)
            verdict.violations += webViewPins(mismatches, verdict: &verdict)
        }
        return finish(verdict)
    }

    /// Pins a web view applies: all of them under the stricter reading, none under the default one, which the verdict
    /// says at the rule's confidence, naming what the pins would have refused.
    private func webViewPins(_ mismatches: [ATSViolation], verdict: inout ATSVerdict) -> [ATSViolation] {
        guard options.loadKind == .web else { return mismatches }
        let reading = options.readings.webViewPins
        verdict.rules.append(ATSAppliedRule(.webViewPins, reading: reading.rawValue))
        if reading == .enforced {
            verdict.notes.append("web view: NSPinnedDomains applied as for URLSession (the stricter reading; medium "
                                 + "confidence: the default reading is that WebKit's networking process does not apply them)")
            return mismatches
        }
        let outcome = mismatches.first.map { "they would refuse this server (\($0.message))" } ?? "they match this server"
        verdict.notes.append("web view (medium confidence): a WKWebView does not apply NSPinnedDomains; the pins are read "
                             + "from the main bundle of the process that evaluates trust, which is WebKit's networking "
                             + "process, and on iOS 14 to 15.4 WKWebView loaded despite a pin mismatch. Here "
                             + "\(outcome); the stricter reading (ATSReadings.webViewPins = .enforced, --web-view-pins "
                             + "enforced) applies them")
        return []
    }

    /// Trust-chain and host-name problems first: they are what a client hits first, and what decides the
    /// likely error code (an expired certificate reports -1201 even if it is also SHA-1 signed).
    private func trustFirst(_ violations: [ATSViolation]) -> [ATSViolation] {
        let first: Set<ATSRule> = [.trustChain, .hostname, .sanRequired]
        return violations.filter { first.contains($0.rule) } + violations.filter { !first.contains($0.rule) }
    }

    private func finish(_ verdict: ATSVerdict) -> ATSVerdict {
        var verdict = verdict
        verdict.allowed = verdict.violations.isEmpty
        verdict.likelyError = verdict.violations.first?.likelyError
        // Once each, in the order used; the likely error code is itself a model rule (medium confidence).
        var log = ATSRuleLog(verdict.rules)
        if !verdict.allowed { log.add(.likelyErrorCodes) }
        verdict.rules = log.rules
        return verdict
    }
}

/// Certificate Transparency, from the SCTs the client received (embedded, in the TLS extension, in a stapled OCSP
/// response). Apple requires SCTs for a publicly trusted leaf — one whose chain ends in a preinstalled root — issued on
/// or after 2018-10-16 (Security/trust/trustd/SecPolicyServer.c, `SecPolicyCheckSystemTrustedCTRequired`), whatever
/// the dictionary says; iOS 10–12 also honoured `NSRequiresCertificateTransparency = YES` for an exception domain.
/// Which logs signed the SCTs, and whether there are enough (support note 103214), is beyond what the facts show.
struct ATSCertificateTransparencyCheck {
    let requirements: ATSRequirements
    let profile: ATSOSProfile

    /// 2018-10-16T00:00:00Z: SecPolicyServer.c compares the leaf's notBefore with CFAbsoluteTime 561340800.
    static let publicCertificatesCutoff = Date(timeIntervalSince1970: 1_539_648_000)

    /// The likely error: the only published transcript of a CT refusal (Apple developer forums thread 685561,
    /// NSRequiresCertificateTransparency on iOS 9–11) reads -1200 with stream error -9802, as ATS's strict trust
    /// failures do.
    static let likelyError = ATSLikelyError.secure(-9802, "errSSLFatalAlert")

    func violations(facts: ServerFacts, verdict: inout ATSVerdict) -> [ATSViolation] {
        guard let leaf = facts.presentedChain.first ?? facts.trust?.verifiedChain.first else { return [] }
        let counts = facts.scts
        let embedded = max(counts?.embedded ?? 0, leaf.hasEmbeddedSCTs == true ? 1 : 0)
        let delivered = (counts?.tlsExtension ?? 0) + (counts?.stapledOCSP ?? 0)
        let none: String
        switch (leaf.hasEmbeddedSCTs, counts) {
        case (nil, nil):
            none = "the facts record no Signed Certificate Timestamps for the leaf"
        case (_, nil):
            none = "the leaf carries no Signed Certificate Timestamps (none embedded; SCTs sent in the handshake were "
                + "not recorded)"
        default:
            none = "the leaf carries no Signed Certificate Timestamps (none embedded, none in the TLS extension or a "
                + "stapled OCSP response)"
        }
        var found: [ATSViolation] = []
        if requirements.atsApplies, requirements.requiresCertificateTransparency, embedded + delivered == 0 {
            found.append(ATSViolation(
                rule: .certificateTransparency,
                message: "certificate transparency (\(profile)): the entry \"\(requirements.matchedExceptionDomain ?? "")\" sets "
                    + "NSRequiresCertificateTransparency, and \(none)", likelyError: Self.likelyError))
        }
        guard facts.trust?.anchor == .system else { return found }
        let covered = leaf.notBefore >= Self.publicCertificatesCutoff
        guard profile.requiresCertificateTransparencyForPublicCertificates else {
            if profile == .ios10, covered, embedded + delivered == 0 {
                verdict.notes.append("certificate transparency: iOS 12.1.1 and later refuse this publicly trusted leaf, "
                                     + "since \(none); earlier releases of \(profile) accept it")
            }
            return found
        }
        verdict.rules.append(ATSAppliedRule(.certificateTransparencyRequired))
        if !covered {
            verdict.notes.append("certificate transparency: the leaf was issued before 2018-10-16, so Apple's CT requirement "
                                 + "does not cover it")
        } else if embedded + delivered == 0 {
            found.append(ATSViolation(
                rule: .certificateTransparency,
                message: "certificate transparency: the chain ends in a preinstalled (system) root and \(none); Apple's "
                    + "trust evaluation refuses it whatever the Info.plist says (SecTrust: \"Certificate Transparency "
                    + "validation required for this use\", errSecVerifyActionFailed -67825)",
                likelyError: Self.likelyError))
        } else {
            // Without counts (or with an SCT extension OpenSSL could not parse) only the extension's presence is known.
            let counted = counts.map { counts in
                [(counts.embedded, "embedded"), (counts.tlsExtension, "in the TLS extension"),
                 (counts.stapledOCSP, "in the stapled OCSP response")]
                    .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
            } ?? ""
            let sources = counted.isEmpty ? "embedded" : counted
            verdict.notes.append("certificate transparency: the leaf carries SCTs (\(sources)); Apple also requires them "
                                 + "from logs it approves, two or three by the certificate's lifetime (support note "
                                 + "103214), which the model cannot check")
        }
        return found
    }
}

/// What Apple's clients do about revocation, from what the probe saw: the leaf's OCSP and CRL pointers, a TLS Feature
/// extension, and a stapled response. Only a stapled "revoked" signed by the issuer blocks (default trust honours it);
/// the rest is said in notes, because by default nothing is fetched.
struct ATSRevocationCheck {
    func violations(facts: ServerFacts, verdict: inout ATSVerdict) -> [ATSViolation] {
        guard let leaf = facts.presentedChain.first else { return [] }
        let ocsp = leaf.ocspURLs ?? []
        let crl = leaf.crlURLs ?? []
        let mustStaple = leaf.mustStaple == true
        guard !ocsp.isEmpty || !crl.isEmpty || mustStaple || facts.stapledOCSP != nil else { return [] }
        verdict.rules.append(ATSAppliedRule(.revocationNotFetched))
        var found: [ATSViolation] = []
        if !ocsp.isEmpty || !crl.isEmpty {
            let named = (ocsp.map { "OCSP \($0)" } + crl.map { "CRL \($0)" }).joined(separator: ", ")
            verdict.notes.append("revocation: the leaf names \(named); neither ATS nor default trust asks them for a non-EV "
                                 + "certificate (a revocation policy such as Alamofire's RevocationTrustEvaluator would ask the OCSP "
                                 + "responder, never the CRL)")
        }
        if let staple = facts.stapledOCSP {
            verdict.rules.append(ATSAppliedRule(.stapledOCSPHonoured))
            if staple.certificateStatus == "revoked", staple.signedByIssuer {
                found.append(ATSViolation(
                    rule: .revocation,
                    message: "revoked: the server stapled an OCSP response, signed by the issuer, saying the leaf is revoked"
                        + (staple.revocationReason.map { " (\($0))" } ?? "") + "; ATS checks no revocation, but default trust "
                        + "honours a stapled response",
                    likelyError: .untrusted()))
            } else if staple.certificateStatus == "revoked" {
                verdict.notes.append("revocation: the stapled response says revoked but is not signed by the leaf's issuer, "
                                     + "so trust does not use it")
            }
        }
        if mustStaple {
            verdict.rules.append(ATSAppliedRule(.tlsFeatureIgnored))
            if facts.stapledOCSP == nil {
                verdict.notes.append("revocation: the leaf asks for a stapled OCSP response (TLS Feature, must-staple) and the server "
                                     + "sent none; Apple's clients do not enforce it (Firefox and GnuTLS refuse the connection)")
            }
        }
        return found
    }
}

/// Whether a handshake can happen: some (version, suite) the server accepted that the offer contains.
/// When none, it explains why in ATS terms (version, forward secrecy, or suite list).
struct ATSHandshakeCheck {
    enum Outcome {
        case negotiated(TLSVersion, String)
        case failed([ATSViolation])
    }

    let offer: ATSClientOffer
    let requirements: ATSRequirements
    let options: ATSEvaluationOptions

    func check(_ accepted: AcceptedSuites) -> Outcome {
        let spoken = accepted.filter { !$0.value.isEmpty }
        guard !spoken.isEmpty else {
            return .failed([ATSViolation(rule: .handshake,
                                         message: "handshake: the server completed no TLS handshake with the probe "
                                            + "(if the scenario is unsupported by the linked OpenSSL, nothing can be tested)",
                                         likelyError: .secure(-9806, "errSSLClosedAbort"))])
        }
        // The newest version wins, as in any TLS negotiation; the server's suite order stands in for its preference.
        for version in spoken.keys.sorted(by: >) {
            if let suite = spoken[version]!.first(where: { offer.admits(version: version, suite: $0) }) {
                return .negotiated(version, suite)
            }
        }

        var violations: [ATSViolation] = []
        let versions = spoken.keys.sorted()
        let inRange = versions.filter { $0 >= offer.minVersion && $0 <= offer.maxVersion }
        let who = requirements.atsApplies ? "ATS requires" : "Apple's TLS client supports"
        if inRange.isEmpty {
            let message: String
            let floor = options.profile.minimumTLSVersionFloor
            let allowedByKeys = requirements.atsApplies ? requirements.minimumTLSVersion : .tls1_0
            if let newest = versions.last, newest < offer.minVersion, floor > allowedByKeys, newest < floor {
                message = "minimum TLS version: server speaks at most \(newest); \(options.profile) refuses anything below "
                    + "\(floor) whatever the exception (reported by OWASP MASTG, not documented by Apple)"
            } else if let newest = versions.last, newest < offer.minVersion {
                message = "minimum TLS version: server speaks at most \(newest), \(who) \(offer.minVersion)"
                    + (requirements.atsApplies ? "" : " and later")
            } else {
                message = "TLS version: server speaks only \(versions.map(\.description).joined(separator: ", ")), "
                    + "\(options.profile) supports at most \(offer.maxVersion)"
            }
            violations.append(ATSViolation(rule: .tlsVersion, message: message,
                                           likelyError: .secure(-9836, "errSSLPeerProtocolVersion")))
        }
        // Suites judged at the versions that could be spoken, or at all versions when none can (so a server
        // that is both too old and non-forward-secret hears about both).
        let judged = inRange.isEmpty ? versions : inRange
        let suites = judged.flatMap { version in spoken[version]!.map { (version, $0) } }
        let admittedIgnoringVersion = suites.contains { version, suite in
            version == .tls1_3 ? offer.tls13Suites.contains(suite) : offer.tls12Suites.contains(suite)
        }
        if !admittedIgnoringVersion {
            let list = Array(Set(suites.map(\.1))).sorted()
            let shown = list.prefix(4).joined(separator: ", ") + (list.count > 4 ? ", …" : "")
            let at = judged.map(\.description).joined(separator: "/")
            if requirements.atsApplies, requirements.requiresForwardSecrecy,
               suites.contains(where: { ATSCipherSuites.nonForwardSecret.contains($0.1) }) {
                violations.append(ATSViolation(
                    rule: .forwardSecrecy,
                    message: "forward secrecy: server accepts only suites without forward secrecy at \(at) (\(shown)); "
                        + "ATS requires ECDHE (NSExceptionRequiresForwardSecrecy = NO admits RSA key exchange)",
                    likelyError: .secure(-9824, "errSSLPeerHandshakeFail")))
            } else {
                let listName = requirements.atsApplies ? "ATS's cipher suites" : "the suites Apple's TLS client offers"
                violations.append(ATSViolation(
                    rule: .cipherSuite,
                    message: "cipher suite: none of the server's suites at \(at) (\(shown)) is among \(listName)",
                    likelyError: .secure(-9824, "errSSLPeerHandshakeFail")))
            }
        }
        if violations.isEmpty {
            // Every version could be spoken and every suite is known, just never together.
            violations.append(ATSViolation(rule: .cipherSuite,
                                           message: "cipher suite: the server accepts no offered suite at an offered version",
                                           likelyError: .secure(-9824, "errSSLPeerHandshakeFail")))
        }
        return .failed(violations)
    }
}

/// `NSPinnedDomains` for the entries that match a host: the leaf's SPKI must be in the leaf lists; some CA's SPKI in
/// the verified chain must be in the CA lists; both when both are given. As in Security/OSX/sec/Security/SecPolicy.c
/// (`parseNSPinnedDomains`), the identities of every matching entry are pooled per kind. Pinning never waives anything.
struct ATSPinnedDomainCheck {
    let entries: [ATSPinnedDomain]

    init(entries: [ATSPinnedDomain]) {
        self.entries = entries
    }

    init(entry: ATSPinnedDomain) {
        self.init(entries: [entry])
    }

    func violations(presentedChain: [CertificateFacts], trust: TrustFacts?) -> [ATSViolation] {
        let chain = ATSChainView(presented: presentedChain, trust: trust).certificates
        let code = ATSLikelyError.secure(-9802, "errSSLFatalAlert")
        var found: [ATSViolation] = []
        let leafEntries = entries.filter { $0.leafIdentities != nil }
        if !leafEntries.isEmpty {
            let leafPins = leafEntries.flatMap { $0.leafIdentities ?? [] }
            let leaf = presentedChain.first ?? chain.first
            if leaf.map({ leafPins.contains($0.spkiSHA256) }) != true {
                found.append(ATSViolation(rule: .pinning,
                                          message: "pinning: the leaf's SPKI (\(leaf?.spkiSHA256 ?? "none")) is not in "
                                            + "NSPinnedLeafIdentities of \(Self.names(leafEntries))", likelyError: code))
            }
        }
        let caEntries = entries.filter { $0.caIdentities != nil }
        if !caEntries.isEmpty {
            let caPins = caEntries.flatMap { $0.caIdentities ?? [] }
            let cas = chain.dropFirst()
            if !cas.contains(where: { caPins.contains($0.spkiSHA256) }) {
                found.append(ATSViolation(rule: .pinning,
                                          message: "pinning: no CA in the verified chain has an SPKI listed in "
                                            + "NSPinnedCAIdentities of \(Self.names(caEntries))", likelyError: code))
            }
        }
        return found
    }

    private static func names(_ entries: [ATSPinnedDomain]) -> String {
        entries.map { "\"\($0.key)\"" }.joined(separator: " or ")
    }
}
