import Foundation
import TLSFixturesATS
import TLSFixturesOpenSSL
import TLSFixturesServer
import TLSFixturesWire

/// `tls-fixtures probe`'s text: what was negotiated, the chain as sent, the verify result in words, pins.
package enum ProbeReport {
    package static func text(_ result: ProbeResult, pins: PinOutcome? = nil) -> String {
        var lines: [(String, String)] = [("Target", result.target + (result.connectedTo.map { " (connected to \($0))" } ?? ""))]
        if let failure = result.failure {
            lines.append(("Handshake", "FAILED: \(failure)"))
            if let hint = plainHTTPHint(result) { lines.append(("Hint", hint)) }
        } else if result.protocolName != nil {
            lines.append(("Protocol", result.protocolName ?? "?"))
            if let cipher = result.cipher { lines.append(("Cipher", cipher.openssl == cipher.iana ? cipher.iana : "\(cipher.openssl) (\(cipher.iana))")) }
            if result.unencrypted {
                lines.append(("Encryption", "NONE: a NULL cipher authenticates but does not encrypt; every byte crosses in clear"))
            }
            lines.append(("Key exch.", keyExchange(result)))
            if let alpn = result.alpn { lines.append(("ALPN", alpn)) }
        } else {
            lines.append(("Transport", "plain TCP (http)"))
        }
        var text = table(lines)
        if !result.presentedChain.isEmpty {
            text += "\nChain as sent (\(result.presentedChain.count)):"
            for (index, certificate) in result.presentedChain.enumerated() {
                let key = certificate.curve.map { "\(certificate.keyType) \($0)" } ?? "\(certificate.keyType) \(certificate.keyBits)"
                text += "\n  [\(index)] \(certificate.subject.isEmpty ? "(empty subject)" : certificate.subject)"
                text += "\n      issuer \(certificate.issuer); \(certificate.signatureAlgorithm); \(key); "
                text += "until \(ISO8601DateFormatter().string(from: certificate.notAfter))"
                if index == 0 {
                    let names = (certificate.dnsNames ?? []).map { "DNS:\($0)" } + certificate.ipAddresses.map { "IP:\($0)" }
                    let shown = names.count > 6 ? names.prefix(6).joined(separator: ", ") + ", … (\(names.count))" : names.joined(separator: ", ")
                    text += "\n      SANs \(certificate.dnsNames == nil ? "(none)" : shown); pin sha256/\(certificate.spkiSHA256)"
                }
            }
        }
        var tail: [(String, String)] = []
        if let verification = result.verification {
            tail.append(("Verify", "\(verification.summary)" + (verification.error.map { " (X509 error \($0.code) at depth \($0.depth))" } ?? "")
                         + " — host \(verification.host ?? "none"), "
                         + (verification.verifier ?? "OpenSSL security level \(verification.securityLevel)")))
        }
        if let stapled = result.stapledOCSP { tail.append(("OCSP staple", staple(stapled))) }
        if let verdict = result.defaultClient {
            tail.append(("Default client", defaultClient(verdict, verification: result.verification)))
        }
        if let pins { tail.append(("Pins", pins.description)) }
        if let http = result.http {
            let scenario = (try? JSONDecoder().decode(FixtureResponse.self, from: Data(http.body.utf8)))?.scenario
            tail.append(("HTTP", "\(http.status)" + (scenario.map { ", fixture \"\($0)\"" } ?? "")))
        } else if let stopped = result.httpNotSent {
            tail.append(("HTTP", "not sent: \(stopped)"))
        }
        if !tail.isEmpty { text += "\n" + table(tail) }
        return text
    }

    /// When the server answered the ClientHello with something that is not TLS ("wrong version number": an HTTP
    /// server's 400 page), the port most likely speaks plain HTTP (the dashboard, the `http` scenario).
    static func plainHTTPHint(_ result: ProbeResult) -> String? {
        guard let failure = result.failure, failure.contains("wrong version number") else { return nil }
        var hostPort = result.target
        if let range = hostPort.range(of: "://") { hostPort = String(hostPort[range.upperBound...]) }
        hostPort = String(hostPort.prefix { $0 != "/" })
        return "the server did not answer in TLS: this port probably speaks plain HTTP; use http://\(hostPort)/"
    }

    /// The stapled OCSP answer in words: what it says of the leaf, and whether its issuer signed it.
    static func staple(_ facts: OCSPResponseFacts) -> String {
        guard facts.responseStatus == "successful" else { return "\(facts.responseStatus) (no status in it)" }
        var text = facts.certificateStatus ?? "no answer for this certificate"
        if facts.certificateStatus == "revoked" {
            let details = [facts.revocationReason, facts.revokedAt.map { "since \(ISO8601DateFormatter().string(from: $0))" }].compactMap { $0 }
            if !details.isEmpty { text += " (\(details.joined(separator: ", ")))" }
            text += ": clients that check the staple refuse the certificate, whatever Verify says"
        }
        text += facts.signedByIssuer ? "; signed by the issuer" : "; NOT signed by the issuer, so no client may rely on it"
        return text
    }

    /// What a default client of the linked OpenSSL does with this handshake, and why. The verdict is the handshake's
    /// alone (protocol, cipher, key sizes); a client that verifies, as curl and Python do, then refuses a certificate
    /// that does not verify, inside the handshake: so a completed handshake with a failed `verification` is a refusal.
    static func defaultClient(_ verdict: DefaultClientVerdict, verification: VerifyOutcome? = nil) -> String {
        let library = "the defaults of \(LinkedOpenSSL.versionText)"
        switch verdict.outcome {
        case "completes":
            if let error = verification?.error {
                return "REFUSES the certificate (\(library), verifying as curl and Python do): \(error.text); the "
                    + "protocol and cipher alone would pass"
            }
            return "completes the handshake (\(library))"
        case "refuses":
            return "REFUSES the handshake (\(library)): " + (verdict.reason.map { "\($0) — OpenSSL: " } ?? "") + (verdict.failure ?? "")
        default: return "could not tell: \(verdict.failure ?? "no answer")"
        }
    }

    /// The key exchange in words. No temporary key and no group is static RSA before TLS 1.3; TLS 1.3 always agrees an
    /// ephemeral key, so there it only means the linked OpenSSL could not name the group.
    static func keyExchange(_ result: ProbeResult) -> String {
        if let named = result.keyExchange {
            // The group's own name when it says more than the key's (a hybrid's parts, a curve's TLS name).
            if let group = result.group, KeyExchangeName.display(group: group) != named { return "\(named) (group \(group))" }
            return named
        }
        if result.version == .tls1_3 { return "ephemeral (group not named by the linked OpenSSL)" }
        return "RSA (no ephemeral key: no forward secrecy)"
    }

    static func table(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }
}
