import Foundation

/// The real `ATSHandshaker`: one OpenSSL handshake per configuration, offering exactly what Apple's loader would
/// under it (versions and IANA suites mapped to the linked OpenSSL's names).
public struct ATSLiveHandshaker: ATSHandshaker {
    public var target: ProbeTarget
    public var probeOptions: ProbeOptions

    public init(target: ProbeTarget, probeOptions: ProbeOptions) {
        self.target = target
        self.probeOptions = probeOptions
    }

    public func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
        var options = probeOptions
        options.minVersion = max(offer.minVersion, .tls1_0)
        options.maxVersion = offer.maxVersion
        options.sendHTTPRequest = false
        let tls12 = offer.minVersion < .tls1_3 ? CipherNames.cipherString(iana: offer.tls12Suites) : nil
        let tls13 = offer.tls13Suites.filter { CipherNames.openSSLName(iana: $0) != nil }
        if offer.maxVersion < .tls1_3 && tls12 == nil {
            return .failure(reason: "none of the offered suites exists in the linked OpenSSL")
        }
        // "!ALL" offers no TLS ≤ 1.2 suite at all when the offer has none.
        options.ciphers = tls12 ?? "!ALL"
        options.tls13Suites = tls13.isEmpty ? nil : tls13.joined(separator: ":")
        if options.minVersion >= .tls1_3 && tls13.isEmpty {
            return .failure(reason: "no TLS 1.3 suite offered")
        }
        do {
            let result = try await TLSProbe(options: options).probe(target)
            guard result.succeeded, let version = result.version, let cipher = result.cipher else {
                return .failure(reason: result.failure ?? "handshake failed")
            }
            return .success(ATSHandshakeSuccess(version: version, suite: cipher.iana, presentedChain: result.presentedChain, trust: result.trust))
        } catch {
            return .failure(reason: "\(error)")
        }
    }
}
