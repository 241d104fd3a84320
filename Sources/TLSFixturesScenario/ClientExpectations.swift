import Foundation

/// A TLS client of the client matrix (`make matrix`, docs/CLIENTS.md), named as scenario files name it.
///
/// Each is run as shipped, with the built-in CA as its only trusted root and nothing else changed, against
/// `https://localhost:PORT/`.
public enum MatrixClient: String, CaseIterable, Codable, Sendable, Hashable, Comparable {
    case openssl
    case curl
    case swiftNIOSSL = "swift-nio-ssl"
    case asyncHTTPClient = "async-http-client"
    case urlsession
    case gnutls
    case nss
    case chromium
    case java
    case okhttp
    case go
    case node
    case pyca

    /// The TLS library or verifier underneath, which is what decides most verdicts.
    public var stack: String {
        switch self {
        case .openssl, .curl, .node: return "OpenSSL"
        case .urlsession: return "OpenSSL (libcurl)"
        case .swiftNIOSSL, .asyncHTTPClient: return "BoringSSL"
        case .chromium: return "BoringSSL + Chrome's verifier"
        case .gnutls: return "GnuTLS"
        case .nss: return "NSS"
        case .java: return "JSSE"
        case .okhttp: return "OkHttp 3.13 on JSSE"
        case .go: return "Go crypto/tls"
        case .pyca: return "pyca/cryptography (RFC 5280)"
        }
    }

    /// What exactly runs.
    public var summary: String {
        switch self {
        case .openssl: return "openssl s_client -verify_return_error -verify_hostname"
        case .curl: return "curl --cacert"
        case .swiftNIOSSL: return "swift-nio-ssl, TLSConfiguration.makeClientConfiguration()"
        case .asyncHTTPClient: return "AsyncHTTPClient with its default TLS configuration"
        case .urlsession: return "URLSession (swift-corelibs-foundation: libcurl + OpenSSL on Linux)"
        case .gnutls: return "gnutls-cli"
        case .nss: return "NSS tstclnt"
        case .chromium: return "headless Chromium"
        case .java: return "JSSE SSLSocket, default PKIX trust manager, HTTPS endpoint identification"
        case .okhttp: return "OkHttp's default ConnectionSpecs and OkHostnameVerifier (Debian's libokhttp-java); a "
            + "CertificatePinner with the published pinned key and the backup on the pinning scenarios"
        case .go: return "Go net/http default client"
        case .node: return "Node https.request"
        case .pyca: return "pyca/cryptography x509.verification (the chain only, not the handshake)"
        }
    }

    public static func < (lhs: MatrixClient, rhs: MatrixClient) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let client = MatrixClient(rawValue: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription:
                "unknown client \"\(text)\" (known: \(MatrixClient.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self = client
    }
}

/// Whether a client completes the request: the handshake, certificate verification for the host, and an HTTP answer.
public enum ClientOutcome: String, Codable, Sendable, Hashable {
    case accept, reject
}

/// Clients whose verdict on a scenario differs from OpenSSL's verify column, and why.
public struct ClientDifference: Codable, Sendable, Hashable {
    /// The clients of the matrix that see it this way (`boringssl`, `gnutls`, …).
    public var clients: [MatrixClient]
    /// What those clients do: accept the connection or refuse it.
    public var outcome: ClientOutcome
    /// Why, in the client's own terms where it has them.
    public var because: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(clients: [MatrixClient], outcome: ClientOutcome, because: String) {
        self.clients = clients; self.outcome = outcome; self.because = because
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case clients, outcome, because }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        clients = try c.decode([MatrixClient].self, forKey: .clients)
        outcome = try c.decode(ClientOutcome.self, forKey: .outcome)
        because = try c.decode(String.self, forKey: .because)
        if clients.isEmpty {
            throw DecodingError.dataCorruptedError(forKey: .clients, in: c, debugDescription: "name at least one client")
        }
        if because.trimmingCharacters(in: .whitespaces).isEmpty {
            throw DecodingError.dataCorruptedError(forKey: .because, in: c, debugDescription: "say why the client differs")
        }
    }
}

extension Expectations {
    /// What every client does unless `clients` says otherwise: accept when OpenSSL verifies the chain for
    /// `localhost`, reject when it does not. Nil for a scenario without TLS.
    public var defaultClientOutcome: ClientOutcome? {
        verify.map { $0 == "ok" ? .accept : .reject }
    }

    /// What `client` is expected to make of the scenario, and why when it differs from the default.
    public func outcome(for client: MatrixClient) -> (outcome: ClientOutcome, because: String?)? {
        if let difference = clients?.first(where: { $0.clients.contains(client) }) {
            return (difference.outcome, difference.because)
        }
        return defaultClientOutcome.map { ($0, nil) }
    }

    /// What tables and documents say of a scenario with TLS whose file has no `expect.clients` yet: a new scenario is
    /// served and tested before `make matrix` (Linux only) has run every client stack on it.
    public static let notJudgedByClientMatrix = "not yet judged by the client matrix"

    /// Whether the client matrix has judged it: `expect.clients` is there (`[]` when every client agrees with `verify`).
    /// A scenario without TLS has nothing to judge and counts as judged.
    public var isJudgedByClientMatrix: Bool { clients != nil || defaultClientOutcome == nil }

    /// `expect.clients` in a few words for tables: `accept: swift-nio-ssl, java; reject: go`, `—` when every client
    /// agrees with `verify`, or `notJudgedByClientMatrix`.
    public var clientDifferencesSummary: String {
        guard isJudgedByClientMatrix else { return Self.notJudgedByClientMatrix }
        guard let clients, !clients.isEmpty else { return "—" }
        return [ClientOutcome.accept, .reject].compactMap { outcome in
            let names = clients.filter { $0.outcome == outcome }.flatMap(\.clients).sorted().map(\.rawValue)
            return names.isEmpty ? nil : "\(outcome.rawValue): \(names.joined(separator: ", "))"
        }.joined(separator: "; ")
    }

    /// Rules `clients` must follow: each client at most once, and only where it really differs from the default.
    func validateClients(codingPath: [CodingKey]) throws {
        guard let clients else { return }
        func fail(_ message: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: codingPath + [CodingKeys.clients], debugDescription: message))
        }
        guard let standard = defaultClientOutcome else {
            throw fail("a scenario without \"verify\" (no TLS) has no client verdicts")
        }
        var seen: Set<MatrixClient> = []
        for difference in clients {
            if difference.outcome == standard {
                throw fail("\(difference.clients.map(\.rawValue).joined(separator: ", ")) \(difference.outcome.rawValue) as OpenSSL's verify result (\(verify ?? "")) already says: list only clients that differ")
            }
            for client in difference.clients where !seen.insert(client).inserted {
                throw fail("\(client.rawValue) is listed twice")
            }
        }
    }
}

extension Scenario {
    /// Why the client matrix has not judged this scenario, when it has not: it cannot (the matrix's clients present no
    /// client certificate; the linked OpenSSL lacks what it needs) or nobody has run `make matrix` on it yet. Nil when
    /// judged. One text for the scenario table, the dashboard and `/scenarios.json`.
    public var clientMatrixNotJudged: String? {
        guard !expect.isJudgedByClientMatrix else { return nil }
        if tls?.clientAuth == .required {
            return "not judged by the client matrix: its clients present no client certificate"
        }
        if let needs = expect.handshake?.requires {
            return "not judged by the client matrix: it needs \(needs), which Debian's and Homebrew's OpenSSL lack"
        }
        return Expectations.notJudgedByClientMatrix
    }

    /// `expect.clients` in a few words for tables, or why the matrix has not judged it (`clientMatrixNotJudged`).
    public var clientDifferencesSummary: String { clientMatrixNotJudged ?? expect.clientDifferencesSummary }
}
