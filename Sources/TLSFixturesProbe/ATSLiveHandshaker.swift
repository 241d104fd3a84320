import Foundation
import TLSFixturesATS
import TLSFixturesOpenSSL

/// The real `ATSHandshaker`: one OpenSSL handshake per configuration, offering exactly what Apple's loader would
/// under it (versions and IANA suites mapped to the linked OpenSSL's names), then one request: nscurl's PASS
/// means the *load* completed, and a server can refuse it after a handshake that looked complete (a TLS 1.3
/// server that wants a client certificate answers only after the client has finished).
package struct ATSLiveHandshaker: ATSHandshaker {
    package var target: ProbeTarget
    package var probeOptions: ProbeOptions

    package init(target: ProbeTarget, probeOptions: ProbeOptions) {
        self.target = target
        self.probeOptions = probeOptions
    }

    package func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
        var options = probeOptions
        options.minVersion = max(offer.minVersion, .tls1_0)
        options.maxVersion = offer.maxVersion
        options.sendHTTPRequest = true
        let tls12 = offer.minVersion < .tls1_3 ? CipherNames.cipherString(iana: offer.tls12Suites) : nil
        let tls13 = offer.tls13Suites.filter { CipherNames.openSSLName(iana: $0) != nil }
        if offer.maxVersion < .tls1_3 && tls12 == nil {
            return .failure(reason: "none of the offered suites exists in the linked OpenSSL", kind: .other)
        }
        // "!ALL" offers no TLS ≤ 1.2 suite at all when the offer has none.
        options.ciphers = tls12 ?? "!ALL"
        options.tls13Suites = tls13.isEmpty ? nil : tls13.joined(separator: ":")
        if options.minVersion >= .tls1_3 && tls13.isEmpty {
            return .failure(reason: "no TLS 1.3 suite offered", kind: .other)
        }
        do {
            let result = try await TLSProbe(options: options).probe(target)
            guard result.succeeded, let version = result.version, let cipher = result.cipher else {
                let reason = result.failure ?? "handshake failed"
                // A handshake that failed after the server's Certificate message (the chain arrived) failed over the
                // client's certificate, not over versions or suites.
                let afterCertificate = result.version == nil && !result.presentedChain.isEmpty
                return .failure(reason: reason, kind: ATSHandshakeFailureKind(classifying: reason, afterServerCertificate: afterCertificate))
            }
            return .success(ATSHandshakeSuccess(version: version, suite: cipher.iana, presentedChain: result.presentedChain,
                                                trust: result.trust, scts: result.scts))
        } catch {
            return .failure(reason: "\(error)", kind: .cannotConnect)
        }
    }
}
