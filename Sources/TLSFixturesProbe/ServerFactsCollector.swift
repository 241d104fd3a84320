import Foundation
import NIOPosix
import TLSFixturesWire
import TLSFixturesATS
import TLSFixturesOpenSSL
import TLSFixturesServer

/// Learns which protocol versions and suites a server accepts, sslscan-style: for each version, offer everything,
/// note the server's choice, take it out of the offer, and ask again until the server refuses.
///
/// The whole scan — dozens of handshakes — ends within the probe's `timeout` (or its `deadline`, when one is set): a
/// server that answers slowly cannot multiply it. A handshake cut short by the deadline throws `ProbeError.timedOut`
/// rather than passing for a refusal, since the facts would be incomplete.
package struct ServerFactsCollector: Sendable {
    package var probe: TLSProbe

    package init(probe: TLSProbe) { self.probe = probe }

    package func collect(_ target: ProbeTarget) throws -> ServerFacts {
        var probe = self.probe
        if probe.options.deadline == nil {
            probe.options.deadline = ProbeDeadline(try Timeout(seconds: probe.options.timeout, name: "the probe's timeout"))
        }
        func run(_ options: ProbeOptions) throws -> ProbeResult {
            let result = try TLSProbe(options: options).probe(target)
            if result.timedOut { throw ProbeError.timedOut(target.description, result.failure ?? "timed out") }
            return result
        }
        if target.scheme == "http" {
            _ = try run(probe.options)   // Proves something answers there.
            return ServerFacts(scheme: "http", accepted: [:], presentedChain: [], trust: nil)
        }
        var accepted: AcceptedSuites = [:]
        var chain: [CertificateFacts] = []
        var trust: TrustFacts? = nil
        var stapled: OCSPResponseFacts? = nil
        var scts: ServerFacts.SCTCounts? = nil
        var sawAnything = false
        for version in TLSVersion.allCases where version >= .tls1_0 {
            var excluded: [String] = []
            // A server accepts a handful of suites; the bound only guards against a pathological peer.
            for _ in 0..<40 {
                var options = probe.options
                options.minVersion = version
                options.maxVersion = version
                options.sendHTTPRequest = false
                if version == .tls1_3 {
                    let remaining = ["TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256",
                                     "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"].filter { !excluded.contains($0) }
                    if remaining.isEmpty { break }
                    options.tls13Suites = remaining.joined(separator: ":")
                } else {
                    options.ciphers = "ALL:eNULL" + excluded.map { ":!\($0)" }.joined() + ":@SECLEVEL=0"
                }
                let result = try run(options)
                guard result.succeeded, let cipher = result.cipher else { break }
                sawAnything = true
                accepted[version, default: []].append(cipher.iana)
                excluded.append(version == .tls1_3 ? cipher.iana : cipher.openssl)
                if !result.presentedChain.isEmpty && chain.isEmpty {
                    chain = result.presentedChain
                    trust = result.trust
                    scts = result.scts
                }
                if stapled == nil { stapled = result.stapledOCSP }
            }
        }
        if !sawAnything {
            // Nothing negotiated: still report the chain if the server showed one before failing.
            let last = try run(probe.options)
            chain = last.presentedChain
            trust = last.trust
            scts = last.scts
        }
        return ServerFacts(scheme: "https", accepted: accepted, presentedChain: chain, trust: trust, stapledOCSP: stapled,
                           scts: scts)
    }

    package func collect(_ target: ProbeTarget) async throws -> ServerFacts {
        // Dozens of blocking handshakes: on a thread of their own, as TLSProbe.probe's are, not the cooperative pool.
        try await BlockingWork.probe { try self.collect(target) }
    }
}
