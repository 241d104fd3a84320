import TLSFixturesATS
import TLSFixturesOpenSSL

// What the OpenSSL owner's verdict means to the probe's callers: a standard client's verify result, and the trust
// facts the ATS model judges. The owner does not know those types exist.
extension ChainVerifier {
    /// As a client at OpenSSL auth level `securityLevel` would judge the chain for `host`.
    static func verify(chain: [Certificate], roots: [Certificate]?, host: String?, securityLevel: Int, purpose: Bool) -> VerifyOutcome {
        let (failure, _) = run(chain: chain, roots: roots, host: host, securityLevel: securityLevel, purpose: purpose)
        return VerifyOutcome(host: host, securityLevel: securityLevel, error: failure.map(VerifyError.init))
    }

    /// Chain building, signatures and dates only, for the ATS model.
    static func trust(chain: [Certificate], roots: [Certificate]?, anchor: TrustAnchorKind) -> TrustFacts {
        let (failure, verified) = run(chain: chain, roots: roots, host: nil, securityLevel: 0, purpose: false)
        return TrustFacts(chainError: failure.map(VerifyError.init), verifiedChain: verified.map(\.facts), anchor: anchor)
    }

    /// The path OpenSSL builds from the leaf to a root (possibly partial), leaf first.
    static func verifiedChain(chain: [Certificate], roots: [Certificate]?) -> [Certificate] {
        run(chain: chain, roots: roots, host: nil, securityLevel: 0, purpose: false).1
    }
}

extension VerifyError {
    init(_ failure: ChainVerifier.Failure) { self.init(code: failure.code, text: failure.text, depth: failure.depth) }
}
