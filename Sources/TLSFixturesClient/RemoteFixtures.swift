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
/// `http://localhost:9800` — `tls-fixtures serve`'s dashboard on its default port. A value that cannot be the runner's
/// URL (empty, not a URL, no `http://`, `https://`) is never replaced by the default: every call throws
/// `RemoteFixtureError.invalidRunnerURL` saying what is wrong with it.
///
/// A runner started a moment before the tests (a scheme's pre-action, a CI step) may not listen yet: a request that
/// finds nothing listening ("connection refused") is retried for `startupGrace` before it fails.
public struct RemoteFixtures: Sendable {
    /// The runner's base URL (its dashboard). When `TLS_FIXTURES_URL` or `runner` is not a usable URL this is the
    /// default, unused: every call throws the error that says what is wrong with the value given.
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
    /// How long a request keeps retrying while nothing listens at `runnerURL` (connection refused), for a runner that
    /// is still starting: on an empty store `serve` makes its CA and first keys before it listens (7 s, and 25 s on a
    /// busy machine, were measured). The grace runs from the first refusal after the runner last answered, and is
    /// shared by every `RemoteFixtures` in the process for that URL: when no runner was started, the first call fails
    /// after one grace and later calls at once (until the runner answers), not one grace per test. 0 fails at the
    /// first refusal.
    public var startupGrace: TimeInterval = 30

    private let urlSession: URLSession
    /// Why `runnerURL` is not the URL asked for, when it is not.
    private let invalidRunner: RemoteFixtureError?

    /// `runner` nil: `$TLS_FIXTURES_URL`, else `http://localhost:9800`.
    public init(runner: URL? = nil, session: String? = nil, ttl: Int? = nil) {
        do {
            if let runner {
                runnerURL = try Self.checkedRunnerURL(runner.absoluteString, source: "the runner URL")
            } else {
                runnerURL = try Self.environmentRunnerURL()
            }
            invalidRunner = nil
        } catch {
            runnerURL = FixtureAPI.defaultRunnerURL
            invalidRunner = error
        }
        self.session = session
        self.ttl = ttl
        // The runner is on this machine: no proxy (a session-wide proxy would refuse it), no cache, no cookies.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        urlSession = URLSession(configuration: configuration)
    }

    /// `$TLS_FIXTURES_URL`, else `FixtureAPI.defaultRunnerURL` when it is not set. Throws
    /// `RemoteFixtureError.invalidRunnerURL` naming what is wrong with a value that is set but cannot be the runner's.
    public static func environmentRunnerURL(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RemoteFixtureError) -> URL {
        guard let text = environment[FixtureAPI.environmentVariable] else { return FixtureAPI.defaultRunnerURL }
        return try checkedRunnerURL(text, source: FixtureAPI.environmentVariable)
    }

    /// `text` as the runner's base URL, or the error saying why it cannot be: the runner's dashboard and control API
    /// are plain HTTP at a host (and port), as `serve`'s first line prints them.
    static func checkedRunnerURL(_ text: String, source: String) throws(RemoteFixtureError) -> URL {
        func invalid(_ problem: String) -> RemoteFixtureError {
            .invalidRunnerURL(source: source, value: text, problem: problem)
        }
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw invalid("it is empty") }
        guard !text.contains(where: \.isWhitespace), let components = URLComponents(string: text),
              let url = URL(string: text) else {
            throw invalid("it is not a URL")
        }
        let scheme = components.scheme?.lowercased()
        if scheme == "https" {
            throw invalid("the runner answers plain HTTP (TLS is the fixtures' business, not its dashboard's), "
                          + "so https:// cannot reach it")
        }
        guard scheme == "http" else {
            // "localhost:9800" parses as the scheme "localhost" with the path "9800".
            if scheme == nil || components.host == nil {
                throw invalid("it has no http:// in front (write http://\(text))")
            }
            throw invalid("its scheme is \(scheme ?? ""), not http")
        }
        guard let host = components.host, !host.isEmpty else { throw invalid("it names no host") }
        if components.query != nil || components.fragment != nil {
            throw invalid("it has a query or fragment; give the runner's base URL alone")
        }
        return url
    }

    /// When this process first found nothing listening at `runner` since it last answered: nil while it answers.
    package static func waitingSince(_ runner: URL) -> Date? {
        refusals.value[runner.absoluteString]?.since
    }

    /// Nothing listening at a runner URL, for every `RemoteFixtures` in the process: since when (the first refusal
    /// after its last answer), and whether a grace has run out on it since, after which calls no longer wait.
    private struct Refusal { var since: Date; var gaveUp = false }
    private static let refusals = Locked<[String: Refusal]>([:])

    /// The runner's CA certificate, PEM (its dashboard's `/ca.pem`): what a client under test must trust.
    public func caCertificatePEM() async throws -> Data {
        let (data, status) = try await send("GET", "/ca.pem")
        guard status == 200, data.starts(with: Data("-----BEGIN".utf8)) else {
            throw RemoteFixtureError.unexpectedAnswer(url: endpoint("/ca.pem"), status: status,
                                                      detail: "not a PEM certificate")
        }
        return data
    }

    /// The runner's proxy, on the runner's own port: it resolves `NAME.fixtures.test` to the runner's fixtures (a
    /// runner started with `serve --domain` resolves more: `RemoteFixture.proxy` lists them).
    public var proxy: FixtureProxy { FixtureProxy(host: runnerURL.host ?? "localhost", port: runnerURL.port ?? 9800) }

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

    /// The scenarios the runner serves on its catalog ports, as its dashboard lists them (`/scenarios.json`): each
    /// with its state (`preparing` while a first run still makes its key). `serve` with no names serves the whole
    /// catalog; `start` takes any catalog scenario's name, listed here or not.
    public func scenarios() async throws -> [ListedScenario] {
        struct Catalog: Decodable { var scenarios: [ListedScenario] }
        let catalog: Catalog = try await call("GET", Self.catalogPath, expecting: 200)
        return catalog.scenarios
    }

    /// Where the runner lists its scenarios.
    static let catalogPath = "/scenarios.json"

    // MARK: Readiness

    /// Waits until the runner is ready — its control API answers and no scenario it serves is still being prepared
    /// (`RunnerHealth` says exactly) — and returns its health: what `tls-fixtures wait` does, for a test's `setUp` or
    /// a suite's first test. `scenarios`: wait for these alone, each to serve. A runner that does not listen yet is
    /// waited for too, within the same `timeout` (not `startupGrace`). Throws `RemoteFixtureError.notReady` naming
    /// what is not ready when `timeout` passes, or at once when a scenario named will never serve.
    @discardableResult
    public func waitUntilReady(timeout: TimeInterval = 300, scenarios: [String] = []) async throws -> RunnerHealth {
        let allowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#,"))
        let query = scenarios.isEmpty ? "" : "?scenarios=" + scenarios.map {
            $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0
        }.joined(separator: ",")
        let path = FixtureAPI.healthPath + query
        let deadline = Date().addingTimeInterval(timeout)
        var last = "nothing answered yet"
        while true {
            do {
                let (data, status) = try await send("GET", path, timeout: min(requestTimeout, max(timeout, 1)),
                                                    retryingRefused: false)
                guard status == 200 || status == 503,
                      let health = try? FixtureAPI.decoder().decode(RunnerHealth.self, from: data) else {
                    throw failure(status: status, data: data, path: path)
                }
                if health.ready { return health }
                if health.status == .unavailable || health.status == .stopping {
                    throw RemoteFixtureError.notReady(url: runnerURL, what: health.summary, waited: nil)
                }
                last = health.summary
            } catch let error as RemoteFixtureError where error.code == .runnerUnreachable {
                last = "nothing answers there (\(error.reason))"
            }
            // A fifth of a second between questions, as for a runner that is starting; the last at the deadline.
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw RemoteFixtureError.notReady(url: runnerURL, what: last, waited: timeout) }
            try await Task.sleep(nanoseconds: UInt64(min(0.2, left) * 1_000_000_000))
        }
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

    /// `retryingRefused`: retry "connection refused" for `startupGrace` (false: throw `runnerUnreachable` at once).
    func send(_ method: String, _ path: String, body: Data? = nil, timeout: TimeInterval? = nil,
              retryingRefused: Bool = true) async throws -> (Data, Int) {
        if let invalidRunner { throw invalidRunner }
        var request = URLRequest(url: endpoint(path))
        request.httpMethod = method
        request.timeoutInterval = timeout ?? requestTimeout
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let key = runnerURL.absoluteString
        while true {
            do {
                let (data, response) = try await urlSession.data(for: request)
                Self.refusals.update { $0[key] = nil }
                return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
            } catch {
                guard retryingRefused, Self.isRefused(error) else {
                    throw RemoteFixtureError.runnerUnreachable(url: runnerURL, reason: Self.reason(error))
                }
                let now = Date()
                let grace = startupGrace
                // Under the lock: the refusal's start, and whether this call is past its grace (or another's was).
                let (left, waited) = Self.refusals.update { refusals -> (TimeInterval, TimeInterval) in
                    var refusal = refusals[key] ?? Refusal(since: now)
                    let left = refusal.gaveUp ? 0 : refusal.since.addingTimeInterval(grace).timeIntervalSince(now)
                    if left <= 0 { refusal.gaveUp = true }
                    refusals[key] = refusal
                    return (left, now.timeIntervalSince(refusal.since))
                }
                guard left > 0 else {
                    throw RemoteFixtureError.runnerUnreachable(url: runnerURL, reason: Self.reason(error),
                                                               waited: waited)
                }
                // A runner that is starting listens within seconds; a fifth of one between tries costs it nothing.
                try await Task.sleep(nanoseconds: UInt64(min(left, 0.2) * 1_000_000_000))
            }
        }
    }

    /// Nothing listens at the URL (ECONNREFUSED): URLSession's "could not connect to the server" on Apple platforms
    /// and in FoundationNetworking (libcurl's CURLE_COULDNT_CONNECT) alike.
    private static func isRefused(_ error: Error) -> Bool {
        let nsError = error as NSError
        return nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorCannotConnectToHost
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

    /// Nothing answered at `url`, for `reason` (URLSession's words); `waited`: how long nothing has listened there,
    /// when that was waited out (`RemoteFixtures.startupGrace`).
    public static func runnerUnreachable(url: URL, reason: String, waited: TimeInterval? = nil) -> RemoteFixtureError {
        let wait = waited.map {
            " and nothing has listened there for \(Self.seconds($0)) (the start-up grace, RemoteFixtures.startupGrace)"
        } ?? ""
        return RemoteFixtureError(code: .runnerUnreachable,
                                  reason: "no tls-fixtures runner answers at \(url.absoluteString) (\(reason))\(wait)",
                                  fix: "start one with `tls-fixtures serve` (a scheme's Test pre-action or a CI step), or set "
                                     + "\(FixtureAPI.environmentVariable) to where it runs")
    }

    /// `value`, given as the runner's URL by `source` (`TLS_FIXTURES_URL`, or `RemoteFixtures(runner:)`), cannot be
    /// one: `problem` says why.
    public static func invalidRunnerURL(source: String, value: String, problem: String) -> RemoteFixtureError {
        let quoted = value.debugDescription
        let standard = FixtureAPI.defaultRunnerURL.absoluteString
        let fix = source == FixtureAPI.environmentVariable
            ? "set it to the runner's dashboard URL as `tls-fixtures serve` prints it (\(standard), or "
                + "http://localhost:BASE with --port-base BASE), or unset it for \(standard)"
            : "give RemoteFixtures(runner:) the runner's dashboard URL, such as \(standard)"
        return RemoteFixtureError(code: .invalidRunnerURL,
                                  reason: "\(source) is \(quoted), which cannot be the runner's URL: \(problem)", fix: fix)
    }

    private static func seconds(_ interval: TimeInterval) -> String {
        String(format: "%.1f s", interval)
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

    /// The runner at `url` is not ready: `what` (its health's summary, or why nothing answered); `waited`: the seconds
    /// waited, or nil when waiting cannot help (a scenario asked for will never serve).
    public static func notReady(url: URL, what: String, waited: TimeInterval?) -> RemoteFixtureError {
        let after = waited.map { " after \(Self.seconds($0))" } ?? ""
        return RemoteFixtureError(
            code: .notReady, reason: "the tls-fixtures runner at \(url.absoluteString) is not ready\(after): \(what)",
            fix: waited == nil
                ? "wait for scenarios it serves (RemoteFixtures().scenarios() lists them), or serve the one you need"
                : "wait longer (waitUntilReady(timeout:); a first run makes an RSA-8192 key, about a minute), or start "
                    + "`tls-fixtures serve` there")
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
    /// Nothing answered at the runner's URL (after `RemoteFixtures.startupGrace`, when nothing listened there).
    public static var runnerUnreachable: Self { Self("runnerUnreachable") }
    /// `TLS_FIXTURES_URL` (or the URL given) cannot be the runner's: empty, not a URL, not `http://HOST:PORT`.
    public static var invalidRunnerURL: Self { Self("invalidRunnerURL") }
    /// The runner answered with an API error (`400` naming the field, `404`, `429`, …): see ``apiError``.
    public static var refused: Self { Self("refused") }
    /// Something answered that is not the control API (another program on that port, an old runner).
    public static var unexpectedAnswer: Self { Self("unexpectedAnswer") }
    /// The scenario given is not one (not JSON, or a fixture without what the call needs).
    public static var invalidScenario: Self { Self("invalidScenario") }
    /// `waitUntilReady` ran out of time, or asked about a scenario the runner will never serve.
    public static var notReady: Self { Self("notReady") }
    /// `stopSession()` on a `RemoteFixtures` without a session.
    public static var noSession: Self { Self("noSession") }
}
