import Foundation
import NIOPosix
import TLSFixturesWire
import TLSFixturesATS
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesServer

/// An OpenSSL client that reports what it negotiated, what it was shown, and why verification failed.
///
/// ```swift
/// let result = try TLSProbe(trusting: [ca.certificate]).probe(ProbeTarget(host: "localhost", port: fixture.port))
/// ```
///
/// One connection: `ProbeSocket` connects and moves bytes, `TLSClientSession` is OpenSSL's side of it,
/// `ProbeHTTPExchange` sends `GET /` and decodes the answer with NIOHTTP1, `ChainVerifier` judges the chain as a
/// standard client would. All of them wait on one `ProbeClock`, so the probe ends by its deadline whatever the server
/// does, and none of them touches the process's signal handling.
public struct TLSProbe: Sendable {
    /// What to offer, whom to trust and how long to wait.
    public var options: ProbeOptions

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(options: ProbeOptions = ProbeOptions()) { self.options = options }

    /// A probe with default options that trusts exactly `roots` (not the system store).
    public init(trusting roots: [Certificate]) {
        var options = ProbeOptions()
        options.trustRoots = roots
        self.init(options: options)
    }

    /// Blocks the calling thread for at most `options.timeout` (or until `options.deadline`), whatever the server does.
    /// Throws when the timeout is out of range or no TCP connection can be made in time; every TLS failure, a timeout
    /// during the handshake or the HTTP answer included, is a result.
    public func probe(_ target: ProbeTarget) throws -> ProbeResult {
        let clock = ProbeClock(timeout: try Timeout(seconds: options.timeout, name: "the probe's timeout"), shared: options.deadline)
        let socket = try ProbeSocket.connect(target, clock: clock)
        var result = ProbeResult(target: target.description, connectedTo: socket.address, presentedChain: [])
        if target.scheme == "http" {
            if options.sendHTTPRequest { result.record(exchange(target).run(over: socket), clock: clock) }
            return result
        }
        let session: TLSClientSession
        do {
            session = try self.session(defaultClient: options.handshake == .defaultClient, target: target)
        } catch {
            result.failure = "client configuration: \(error)"
            return result
        }
        let connection = ProbeTLSConnection(session: session, socket: socket)

        let handshook: Bool
        do {
            result.failure = try connection.handshake()
            handshook = result.failure == nil
        } catch {
            result.failure = "\(clock.timedOut) during the TLS handshake"
            result.timedOut = true
            handshook = false
        }
        if handshook { fill(&result, from: session.negotiated) }
        // The chain is available even when the handshake failed after the Certificate message (TLS 1.2 client auth).
        let chain = session.peerChain
        result.presentedChain = chain.map(\.facts)
        if !chain.isEmpty { judge(chain, stapled: session.stapledOCSP, target: target, into: &result) }
        if !chain.isEmpty, let scts = session.peerSCTs {
            result.scts = ServerFacts.SCTCounts(embedded: scts.embedded, tlsExtension: scts.tlsExtension,
                                                stapledOCSP: scts.stapledOCSP)
        }

        if handshook && options.sendHTTPRequest {
            if let stop = options.beforeHTTPRequest?(result) {
                result.httpNotSent = stop
            } else {
                result.record(exchange(target).run(over: connection), clock: clock)
            }
        }
        if handshook { connection.close() }
        if options.handshake == .defaultClient, !result.timedOut {
            result.defaultClient = DefaultClientVerdict(handshakeFailure: handshook ? nil : result.failure)
        } else if handshook && options.checkDefaultClient {
            result.defaultClient = defaultClientVerdict(target, clock: clock)
        }
        return result
    }

    /// A client session: the probe's permissive one, or a default client's.
    private func session(defaultClient: Bool, target: ProbeTarget) throws -> TLSClientSession {
        let credential = options.clientCredential.map { ($0.certificate, $0.privateKey, $0.intermediates) }
        let context: TLSContext
        if defaultClient {
            context = try TLSContext.client(settings: DefaultClientVerdict.settings, clientCertificate: credential, alpn: ["http/1.1"])
        } else {
            var settings = TLSSettings(minVersion: options.minVersion, maxVersion: options.maxVersion, ciphers: options.ciphers,
                                       tls13Suites: options.tls13Suites, securityLevel: 0)
            if options.minVersion >= .tls1_3 { settings.ciphers = nil }
            context = try TLSContext.client(settings: settings, clientCertificate: credential,
                                            maximumCertificateListBytes: options.maximumCertificateListBytes, alpn: ["http/1.1"])
        }
        // No SNI for an IP address (RFC 6066).
        return try TLSClientSession(context: context, serverName: options.serverName ?? (target.isIPLiteral ? nil : target.host))
    }

    /// A second connection, handshake only, with a default client's settings: proven, not inferred from the facts.
    private func defaultClientVerdict(_ target: ProbeTarget, clock: ProbeClock) -> DefaultClientVerdict {
        let socket: ProbeSocket
        let session: TLSClientSession
        do {
            socket = try ProbeSocket.connect(target, clock: clock)
            session = try self.session(defaultClient: true, target: target)
        } catch {
            return DefaultClientVerdict(outcome: "unknown", failure: "a second connection could not be made: \(error)")
        }
        let connection = ProbeTLSConnection(session: session, socket: socket)
        do {
            let failure = try connection.handshake()
            if failure == nil { connection.close() }
            return DefaultClientVerdict(handshakeFailure: failure)
        } catch {
            return DefaultClientVerdict(outcome: "unknown", failure: "\(clock.timedOut) during the second handshake")
        }
    }

    /// The same, off the cooperative thread pool, on a thread of its own (`BlockingWork.probe`): a probe may wait out its
    /// timeouts, and no other work in the process waits for it; at most `BlockingWork.maximumProbes` run at once.
    public func probe(_ target: ProbeTarget) async throws -> ProbeResult {
        try await BlockingWork.probe { try self.probe(target) }
    }

    private func exchange(_ target: ProbeTarget) -> ProbeHTTPExchange {
        ProbeHTTPExchange(host: target.host, maximumBodyBytes: options.maximumHTTPBodyBytes)
    }

    private func fill(_ result: inout ProbeResult, from negotiated: TLSClientSession.Negotiated) {
        result.protocolName = negotiated.protocolName
        result.version = negotiated.version
        result.cipher = negotiated.cipher.map { HandshakeDetails.Cipher(openssl: $0.openssl, iana: $0.iana) }
        result.group = negotiated.group
        result.keyExchange = KeyExchangeName.summary(temporaryKey: negotiated.temporaryKey, group: negotiated.group)
        result.alpn = negotiated.alpn
    }

    /// Verification as a standard client would judge the chain, trust facts for the ATS model, and the stapled response.
    private func judge(_ chain: [Certificate], stapled: Data?, target: ProbeTarget, into result: inout ProbeResult) {
        // The name checked is the one sent as SNI (`--servername`), as curl and s_client -verify_hostname do.
        let name = options.serverName ?? target.host
        if options.trustRoots == nil, let platform = options.systemTrust {
            (result.verification, result.trust) = PlatformTrust.outcome(platform, chain: result.presentedChain, host: name,
                                                                        anchor: options.anchorKind)
        } else {
            result.verification = ChainVerifier.verify(chain: chain, roots: options.trustRoots, host: name, securityLevel: 2, purpose: true)
            result.trust = ChainVerifier.trust(chain: chain, roots: options.trustRoots, anchor: options.anchorKind)
        }
        if let stapled, let leaf = chain.first {
            // The issuer the response must be signed by: from the verified path, else from what was sent or trusted.
            let verified = ChainVerifier.verifiedChain(chain: chain, roots: options.trustRoots)
            let issuer = verified.count > 1 ? verified[1]
                : (Array(chain.dropFirst()) + (options.trustRoots ?? [])).first { $0.subject == leaf.issuer }
            result.stapledOCSP = OCSPResponseReader.facts(der: stapled, certificate: leaf, issuer: issuer)
        }
    }
}

extension ProbeResult {
    /// Keeps the HTTP answer, or says in one line why there is none.
    fileprivate mutating func record(_ outcome: Result<ProbeHTTPResponse?, ProbeHTTPExchange.Failure>, clock: ProbeClock) {
        switch outcome {
        case .success(let response):
            http = response
        case .failure(.rejected(let reason)):
            // In TLS 1.3 the client finishes first, so a server that rejects the session (no client certificate, say)
            // answers with an alert only after the handshake has succeeded on the client's side.
            failure = "the server rejected the session after the handshake: \(reason)"
        case .failure(.timedOut(let during)):
            failure = "\(clock.timedOut) \(during)"
            timedOut = true
        case .failure(.broken(let why)):
            failure = why
        case .failure(.malformed(let why)):
            failure = "the answer is not HTTP/1.1: \(why)"
        case .failure(.bodyTooLarge(let limit)):
            failure = "the HTTP answer's body is over \(limit) bytes, the probe's limit (ProbeOptions.maximumHTTPBodyBytes)"
        }
    }
}
