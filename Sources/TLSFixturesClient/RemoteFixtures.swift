import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_exported import TLSFixturesWire

/// A running `tls-fixtures serve`, from a test that cannot start fixtures in its own process — an iOS test target in
/// the Simulator, which cannot link OpenSSL but shares the Mac's loopback. It starts fixtures through the runner's
/// control API; each comes back as a `RemoteFixture` with the same properties as the in-process `FixtureServer`.
///
/// ```swift
/// try await withRemoteFixture("expired") { fixture in   // or RemoteFixtures().start("expired") … await fixture.stop()
///     // connect to fixture.url (or fixture.qualifiedURL through fixture.proxy) and watch your client refuse it
/// }
/// ```
///
/// The runner is `TLS_FIXTURES_URL` when set (a scheme's environment variables reach the test process), else
/// `http://localhost:9800` — `tls-fixtures serve`'s dashboard on its default port.
public struct RemoteFixtures: Sendable {
    /// The runner's base URL (its dashboard).
    public let runnerURL: URL
    /// Tags every fixture this value starts, so `stopSession()` can stop them all (one per test run, say).
    public var session: String?
    /// Lease for fixtures this value starts, in seconds; nil: the runner's default (300). A fixture not renewed or
    /// stopped by then is stopped by the runner, so a test run that crashed leaves nothing behind.
    public var ttl: Int?
    /// How long a start may take: the first start of an RSA-8192 scenario on a new store makes its key (about a minute).
    public var startTimeout: TimeInterval = 300
    /// For everything else.
    public var requestTimeout: TimeInterval = 30

    private let urlSession: URLSession

    /// `runner` nil: `$TLS_FIXTURES_URL`, else `http://localhost:9800`.
    public init(runner: URL? = nil, session: String? = nil, ttl: Int? = nil) {
        runnerURL = runner ?? Self.environmentRunnerURL()
        self.session = session
        self.ttl = ttl
        // The runner is on this machine: no proxy (a session-wide proxy would refuse it), no cache, no cookies.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        urlSession = URLSession(configuration: configuration)
    }

    /// `$TLS_FIXTURES_URL` when it is a URL, else `FixtureAPI.defaultRunnerURL`.
    public static func environmentRunnerURL(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let text = environment[FixtureAPI.environmentVariable], !text.isEmpty, let url = URL(string: text), url.scheme != nil {
            return url
        }
        return FixtureAPI.defaultRunnerURL
    }

    // MARK: Starting

    /// Starts the scenario `name` (a built-in one, or one the runner loaded with `--scenarios`) on a free port.
    public func start(_ name: String, ttl: Int? = nil) async throws -> RemoteFixture {
        try await start(StartFixtureRequest(scenario: .name(name), ttl: ttl ?? self.ttl, session: session))
    }

    /// Starts a scenario given as a scenario file's JSON, written with literals:
    ///
    /// ```swift
    /// try await RemoteFixtures().start(scenario: ["name": "legacy-api", "group": "custom", "summary": "TLS 1.1", "certificate": [:],
    ///     "tls": ["minVersion": "TLSv1.1", "maxVersion": "TLSv1.1", "ciphers": "ECDHE-RSA-AES128-SHA", "securityLevel": 0],
    ///     "expect": ["ats": "block"]])
    /// ```
    ///
    /// The runner holds it to the scenario files' rules; its certificate lives in the runner's memory only.
    public func start(scenario: JSONValue, ttl: Int? = nil) async throws -> RemoteFixture {
        try await start(StartFixtureRequest(scenario: .inline(scenario), ttl: ttl ?? self.ttl, session: session))
    }

    /// The same from a scenario file's bytes.
    public func start(scenarioJSON data: Data, ttl: Int? = nil) async throws -> RemoteFixture {
        let scenario: JSONValue
        do { scenario = try JSONDecoder().decode(JSONValue.self, from: data) } catch {
            throw RemoteFixtureError.invalidScenario("the scenario is not JSON: \(error)")
        }
        return try await start(scenario: scenario, ttl: ttl)
    }

    private func start(_ request: StartFixtureRequest) async throws -> RemoteFixture {
        let body = try FixtureAPI.encoder().encode(request)
        let description: FixtureDescription = try await call("POST", FixtureAPI.fixturesPath, body: body, expecting: 201,
                                                              timeout: startTimeout)
        return RemoteFixture(description, runner: self)
    }

    // MARK: What is running

    /// Fixtures running on the runner: this session's when `session` is set, else every one.
    public func fixtures() async throws -> [FixtureDescription] {
        let query = session.map { "?session=\($0.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? $0)" } ?? ""
        let list: FixtureList = try await call("GET", FixtureAPI.fixturesPath + query, expecting: 200)
        return list.fixtures
    }

    /// Stops everything this `session` started (what a test run's last teardown calls); how many. Throws
    /// `RemoteFixtureError.noSession` without a session.
    @discardableResult
    public func stopSession() async throws -> Int {
        guard let session else { throw RemoteFixtureError.noSession }
        let stopped: SessionStopped = try await call("DELETE", "\(FixtureAPI.sessionsPath)/\(session)", expecting: 200)
        return stopped.stopped
    }

    // MARK: Requests

    struct Empty: Decodable {}

    func call<T: Decodable>(_ method: String, _ path: String, body: Data? = nil, expecting expected: Int,
                            timeout: TimeInterval? = nil) async throws -> T {
        let (data, status) = try await send(method, path, body: body, timeout: timeout)
        guard status == expected else { throw failure(status: status, data: data, path: path) }
        do {
            return try FixtureAPI.decoder().decode(T.self, from: data)
        } catch {
            throw RemoteFixtureError.unexpectedAnswer(url: endpoint(path), status: status, detail: "\(error)")
        }
    }

    func send(_ method: String, _ path: String, body: Data? = nil, timeout: TimeInterval? = nil) async throws -> (Data, Int) {
        var request = URLRequest(url: endpoint(path))
        request.httpMethod = method
        request.timeoutInterval = timeout ?? requestTimeout
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        do {
            let (data, response) = try await urlSession.data(for: request)
            return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
        } catch {
            throw RemoteFixtureError.runnerUnreachable(url: runnerURL, reason: Self.reason(error))
        }
    }

    func endpoint(_ path: String) -> URL {
        var base = runnerURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + path) ?? runnerURL
    }

    private func failure(status: Int, data: Data, path: String) -> RemoteFixtureError {
        if let api = try? JSONDecoder().decode(APIError.self, from: data) {
            return .refused(status: status, error: api)
        }
        let text = String(decoding: data.prefix(200), as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        return .unexpectedAnswer(url: endpoint(path), status: status, detail: text.isEmpty ? "no body" : text)
    }

    private static func reason(_ error: Error) -> String {
        let nsError = error as NSError
        return "\(nsError.localizedDescription) (\(nsError.domain) \(nsError.code))"
    }
}

/// Why a remote fixture could not be had, in one line with the way out.
public struct RemoteFixtureError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<RemoteFixtureError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<RemoteFixtureError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when the reason says it all.
    public let fix: String?
    /// The HTTP status the runner answered with, when it answered.
    public let status: Int?
    /// The runner's own error, for `refused`: its message and the request field it names.
    public let apiError: APIError?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Code, reason: String, fix: String? = nil, status: Int? = nil, apiError: APIError? = nil) {
        self.code = code
        self.reason = reason
        self.fix = fix
        self.status = status
        self.apiError = apiError
    }

    /// Nothing answered at `url`, for `reason` (URLSession's words).
    public static func runnerUnreachable(url: URL, reason: String) -> RemoteFixtureError {
        RemoteFixtureError(code: .runnerUnreachable, reason: "no tls-fixtures runner answers at \(url.absoluteString) (\(reason))",
                           fix: "start one with `tls-fixtures serve` (a scheme's Test pre-action or a CI step), or set "
                              + "\(FixtureAPI.environmentVariable) to where it runs")
    }

    /// The runner answered `status` with its API error `error`.
    public static func refused(status: Int, error: APIError) -> RemoteFixtureError {
        RemoteFixtureError(code: .refused, reason: "the runner refused (\(status)): \(error.error)", status: status, apiError: error)
    }

    /// `url` answered `status` with something that is not the control API; `detail` quotes it.
    public static func unexpectedAnswer(url: URL, status: Int, detail: String) -> RemoteFixtureError {
        RemoteFixtureError(code: .unexpectedAnswer,
                           reason: "\(url.absoluteString) answered \(status) with something that is not the tls-fixtures control API (\(detail))",
                           fix: "is another program on that port, or a tls-fixtures too old to have the API?", status: status)
    }

    /// The scenario given cannot be used: `why`.
    public static func invalidScenario(_ why: String) -> RemoteFixtureError {
        RemoteFixtureError(code: .invalidScenario, reason: why)
    }

    /// `stopSession()` without a session.
    public static let noSession = RemoteFixtureError(code: .noSession, reason: "this RemoteFixtures has no session",
                                                     fix: "set `session` before starting fixtures to stop them together")
}

/// The codes of `RemoteFixtureError`.
extension ErrorCode where Owner == RemoteFixtureError {
    /// Nothing answered at the runner's URL.
    public static var runnerUnreachable: Self { Self("runnerUnreachable") }
    /// The runner answered with an API error (`400` naming the field, `404`, `429`, …): see ``apiError``.
    public static var refused: Self { Self("refused") }
    /// Something answered that is not the control API (another program on that port, an old runner).
    public static var unexpectedAnswer: Self { Self("unexpectedAnswer") }
    /// The scenario given is not one (not JSON, or a fixture without what the call needs).
    public static var invalidScenario: Self { Self("invalidScenario") }
    /// `stopSession()` on a `RemoteFixtures` without a session.
    public static var noSession: Self { Self("noSession") }
}
