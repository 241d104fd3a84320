import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesWire
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a fixture listens and how long it waits for clients.
public struct FixtureConfiguration: Sendable {
    /// Addresses to listen on. Default: loopback only (127.0.0.1, plus ::1 on the same port when the system has IPv6).
    public var bindAddresses: [String]?
    /// 0 picks a free port.
    public var port: Int
    /// A client must finish the TLS handshake within this (default 10 s): a silent or byte-a-second client cannot
    /// hold a connection open. Like every timeout here, 1 ms to a day (`Timeout`); `start` refuses anything else.
    public var handshakeTimeout: TimeAmount
    /// A connection with no traffic either way for this long is closed (default 60 s).
    public var idleTimeout: TimeAmount
    /// Each request must arrive whole within this of the previous answer, or of the connection's start (behind TLS,
    /// of the handshake's end), default 20 s: the slowloris defence, and the keep-alive timeout between requests.
    public var headerTimeout: TimeAmount
    /// The most connections this fixture holds at once; more are accepted and closed at once. nil (the default): a
    /// quarter of the descriptors the process may open, so one client cannot take the descriptors other fixtures need.
    public var maximumConnections: Int?
    /// Where connection and handshake events go (one line each at debug level); default a logger labelled `tls-fixtures`.
    public var logger: Logger
    /// How many connection records the fixture keeps (`FixtureServer.connections`): the most recent ones, the oldest
    /// dropped first, so memory stays bounded however many clients come. Default 64; 1 to 100,000.
    public var connectionRecordLimit: Int
    /// Fills in the records of connections that came through the runner's CONNECT proxy (which authority the client
    /// asked for); `serve` sets it, nil elsewhere.
    package var connectionAnnotator: ConnectionAnnotator?
    /// Told each connection's record once the connection has closed, on its event loop (so it must be quick): how
    /// `serve --log-connections` and `--connection-log` see every connection as it ends. nil by default.
    package var connectionEnded: (@Sendable (ConnectionRecord) -> Void)?

    /// The most records a fixture may be asked to keep: each is a few KiB at most, so 100,000 stay under a few hundred
    /// MiB.
    public static let maximumConnectionRecordLimit = 100_000

    /// Every limit has its default here; a zero or negative `TimeAmount` is taken as given (the channel closes at once).
    public init(bindAddresses: [String]? = nil, port: Int = 0, handshakeTimeout: TimeAmount = .seconds(10),
                idleTimeout: TimeAmount = .seconds(60), headerTimeout: TimeAmount = .seconds(20),
                maximumConnections: Int? = nil, logger: Logger? = nil, connectionRecordLimit: Int = 64) {
        self.bindAddresses = bindAddresses
        self.port = port
        self.handshakeTimeout = handshakeTimeout
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.maximumConnections = maximumConnections
        self.connectionRecordLimit = connectionRecordLimit
        self.logger = logger ?? {
            var logger = Logger(label: "tls-fixtures.server")
            // Per-connection failures are expected in a fixture (that is what they are for): quiet unless asked.
            logger.logLevel = .notice
            return logger
        }()
    }
}

extension FixtureConfiguration {
    /// Every timeout within `Timeout`'s range (a zero or negative one would close every connection at once, a huge
    /// one keep them forever).
    package func validate() throws {
        _ = try Timeout(handshakeTimeout, name: "handshakeTimeout")
        _ = try Timeout(idleTimeout, name: "idleTimeout")
        _ = try Timeout(headerTimeout, name: "headerTimeout")
        if let maximumConnections, maximumConnections < 1 {
            throw FixtureError.invalidConnectionLimit(maximumConnections)
        }
        if !(1 ... Self.maximumConnectionRecordLimit).contains(connectionRecordLimit) {
            throw FixtureError.invalidRecordLimit(connectionRecordLimit)
        }
    }
}

/// Why a fixture could not start listening: the port is taken, or the address cannot be bound on this host.
public struct FixtureError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<FixtureError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<FixtureError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when the reason says it all.
    public let fix: String?
    /// The port the error is about, when it is about one.
    public let port: Int?
    /// The address the error is about, when it is about one.
    public let address: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Code, reason: String, fix: String? = nil, port: Int? = nil, address: String? = nil) {
        self.code = code
        self.reason = reason
        self.fix = fix
        self.port = port
        self.address = address
    }

    /// Something listens on `port` at `address` already.
    public static func portInUse(port: Int, address: String) -> FixtureError {
        FixtureError(code: .portInUse, reason: "port \(port) on \(address) is already in use (lsof -i :\(port) shows by what)",
                     fix: "stop what listens there, or choose another port (FixtureConfiguration's port 0 picks a free one; "
                        + "FixtureRunner.Configuration.portBase moves them all)", port: port, address: address)
    }

    /// `address` is not one of this machine's (EADDRNOTAVAIL).
    public static func addressNotAvailable(address: String, port: Int) -> FixtureError {
        FixtureError(code: .addressNotAvailable, reason: "cannot listen on \(address) port \(port): \(String(cString: strerror(EADDRNOTAVAIL)))",
                     fix: "bind an address of this machine (127.0.0.1, ::1, or one its interfaces have; "
                        + "FixtureConfiguration.bindAddresses nil means loopback)", port: port, address: address)
    }

    /// `address` port `port` cannot be listened on, for `reason`.
    public static func cannotBind(address: String, port: Int, reason: String) -> FixtureError {
        FixtureError(code: .cannotBind, reason: "cannot listen on \(address) port \(port): \(reason)", port: port, address: address)
    }

    /// Binding `address`:`port` failed for want of a descriptor (EMFILE, ENFILE): the limit and how to raise it.
    package static func tooManyOpenFiles(address: String, port: Int) -> FixtureError {
        let limit = FileDescriptorLimit.raiseOnce()
        return cannotBind(address: address, port: port, reason: "too many open files (this process may open "
            + "\(limit.current)); raise the limit before starting (`ulimit -n 4096`) or serve fewer scenarios")
    }

    /// A connection limit below 1.
    public static func invalidConnectionLimit(_ limit: Int) -> FixtureError {
        FixtureError(code: .invalidConnectionLimit, reason: "maximumConnections must be at least 1, not \(limit)",
                     fix: "nil chooses a quarter of the descriptor limit")
    }

    /// A record limit outside 1…`FixtureConfiguration.maximumConnectionRecordLimit`.
    public static func invalidRecordLimit(_ limit: Int) -> FixtureError {
        FixtureError(code: .invalidRecordLimit, reason: "connectionRecordLimit must be 1 to "
                        + "\(FixtureConfiguration.maximumConnectionRecordLimit), not \(limit)",
                     fix: "the default, 64, keeps the last 64 connections")
    }
}

/// A running fixture: a real TLS (or plain HTTP) server for one scenario, on loopback.
///
/// ```swift
/// let fixture = try await FixtureServer.start("expired")
/// // connect to fixture.url (https://localhost:PORT/) and watch your client refuse it
/// await fixture.stop()
/// ```
///
/// Stop it on every path: `withFixture` does that for a block, `startFixture` in an `XCTestCase` at teardown.
/// (`defer { Task { await fixture.stop() } }` does not: the test can end, and the process exit, before that task runs.)
public final class FixtureServer: Sendable {
    /// The scenario with its certificates, keys and pins, as prepared from the store before listening.
    public let prepared: PreparedScenario
    /// The TCP port it listens on: the one asked for, or the one the kernel chose for port 0.
    public let port: Int
    /// The addresses actually listening.
    public let boundAddresses: [String]
    private let serverChannels: [Channel]
    private let tracker: ConnectionTracker
    /// What the fixture saw of each connection (the most recent `FixtureConfiguration.connectionRecordLimit`).
    package let log: ConnectionLog
    private let lifecycle = NIOLockedValueBox(Lifecycle.running)
    /// The OCSP responder and CRL endpoint this fixture started for its own leaf (in-process revocation scenarios).
    package let revocationServices: RevocationServices?

    private enum Lifecycle {
        case running
        case stopping(EventLoopFuture<Void>)
        case stopped
    }

    /// The scenario served (the catalog's, or the one you passed in).
    public var scenario: Scenario { prepared.scenario }
    /// `https://localhost:PORT/` (or `http://` for the cleartext scenario). Fine for pinning tests; for ATS tests use
    /// `qualifiedURL`, because ATS does not apply to `localhost` by default.
    public var url: URL { URL(string: "\(scheme)://\(Self.urlHost(listeningOn: boundAddresses)):\(port)/")! }

    /// The host to put in a URL for a server listening on these addresses: `localhost` when it listens on loopback or
    /// on every interface (the default), otherwise the first address itself — a fixture bound to `127.0.0.2` alone
    /// is not reachable as `localhost`.
    public static func urlHost(listeningOn addresses: [String]?) -> String {
        guard let addresses, let first = addresses.first,
              !addresses.contains(where: { ["127.0.0.1", "::1", "localhost", "0.0.0.0", "::"].contains($0) }) else {
            return "localhost"
        }
        return first.contains(":") ? "[\(first)]" : first
    }
    /// `https://NAME.fixtures.test:PORT/`: what an ATS test must connect to (map the name to 127.0.0.1 first).
    public var qualifiedURL: URL { URL(string: "\(scheme)://\(scenario.qualifiedHost):\(port)/")! }
    /// `http` for the cleartext scenario, else `https`: the scheme of `url` and `qualifiedURL`.
    public var scheme: String { scenario.isCleartext ? "http" : "https" }

    /// The certificates the server sends, leaf first.
    public var chain: [Certificate] { prepared.chainSent }
    /// The certificates the server sends, leaf first, DER; empty for plain HTTP.
    public var chainDER: [Data] { prepared.chainSent.map(\.der) }
    /// The same chain as concatenated PEM, ready to write to a file a client reads.
    public var chainPEM: Data { Certificate.pem(prepared.chainSent) }
    /// The built-in CA: trust it in the client under test.
    public var caCertificate: Certificate { prepared.caCertificate }
    /// Every root the scenario assumes a device trusts: the built-in CA, plus for `pin-mitm` the interception CA (the
    /// root a debugging proxy's user installs). Trust these, not `caCertificate` alone, to see `pin-mitm` pass default
    /// trust and fail only on its pins. (The interception CA on its own: `store.authority(.interceptionRoot)`; on the
    /// command line `tls-fixtures ca export --authority interception-root`.)
    public var deviceTrustRoots: [Certificate] { prepared.deviceTrustRoots }
    /// SPKI pins (base64 SHA-256) of this leaf, the CA, a backup key no server uses, and the published `pinned` leaf.
    public var pins: FixturePins { prepared.pins }

    private init(prepared: PreparedScenario, port: Int, boundAddresses: [String], serverChannels: [Channel],
                 tracker: ConnectionTracker, log: ConnectionLog, revocationServices: RevocationServices?) {
        self.prepared = prepared; self.port = port; self.boundAddresses = boundAddresses
        self.serverChannels = serverChannels; self.tracker = tracker; self.log = log
        self.revocationServices = revocationServices
    }

    // MARK: Starting

    /// Starts the built-in scenario `name`.
    public static func start(_ name: String, store: CertificateStore = .resolved(),
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        try await start(try ScenarioCatalog.builtIn.scenario(named: name), store: store, configuration: configuration)
    }

    /// Starts `scenario`; certificates come from `store` (generated on first use, cached after). A revocation scenario
    /// gets its own OCSP responder and CRL endpoint (and, for `ocsp-unreachable`, a port that refuses) on ports the
    /// system picks; its leaf names them, and `stop()` stops them.
    public static func start(_ scenario: Scenario, store: CertificateStore = .resolved(),
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        guard scenario.needsRevocationServices, let plan = scenario.certificate?.revocation else {
            return try await start(try await prepare(scenario, store: store), configuration: configuration)
        }
        let services = try await RevocationServices.start(bindAddresses: configuration.bindAddresses, responderPort: 0, refusingPort: 0,
                                                          responder: plan.needsResponder, refusing: plan.needsRefusingPort)
        do {
            let prepared = try await prepare(scenario, store: store, revocationEndpoints: services.endpoints)
            if let record = prepared.revocation { services.registry.register(record) }
            return try await start(prepared, configuration: configuration, revocationServices: services)
        } catch {
            await services.stop()
            throw error
        }
    }

    /// Prepares off the cooperative thread pool: the first preparation may generate keys (RSA-8192 takes seconds), and
    /// one that does runs in `BlockingWork`'s slow lane, so it holds up no quick one.
    static func prepare(_ scenario: Scenario, store: CertificateStore,
                        revocationEndpoints: RevocationEndpoints = .serveDefault) async throws -> PreparedScenario {
        try await BlockingWork.prepare(.preparing(scenario, in: store, quick: .quick, slow: .slow)) {
            try store.prepare(scenario, revocationEndpoints: revocationEndpoints)
        }
    }

    /// Serves a credential of your own — from `CertificateAuthority.ephemeral()`, say — with `scenario`'s TLS settings
    /// (default `ats-compliant`), using no store and no files. See `PreparedScenario.serving(_:scenario:)`.
    public static func start(serving credential: Credential, scenario: Scenario? = nil,
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        try await start(try PreparedScenario.serving(credential, scenario: scenario), configuration: configuration)
    }

    /// Starts an already prepared scenario (what `serve` uses after preparing everything up front). A revocation
    /// scenario's leaf names the responder it was prepared for: `serve` runs those itself (`RevocationServices`);
    /// `revocationServices` given here are stopped with the fixture.
    package static func start(_ prepared: PreparedScenario, configuration: FixtureConfiguration = FixtureConfiguration(),
                             revocationServices: RevocationServices? = nil) async throws -> FixtureServer {
        try configuration.validate()
        FileDescriptorLimit.raiseOnce()
        let connections = ConnectionTracker(limit: configuration.maximumConnections ?? ListenerLimits.automaticConnectionCap(),
                                            label: "scenario \(prepared.scenario.name)", logger: configuration.logger)
        let log = ConnectionLog(capacity: configuration.connectionRecordLimit)
        let bootstrap = makeBootstrap(prepared: prepared, configuration: configuration, connections: connections,
                                      log: log)
        var channels: [Channel] = []
        var addresses: [String] = []
        do {
            if let explicit = configuration.bindAddresses, !explicit.isEmpty {
                channels = try await bind(bootstrap, addresses: explicit, port: configuration.port)
                addresses = explicit
            } else {
                let v4 = try await bind(bootstrap, address: "127.0.0.1", port: configuration.port)
                channels.append(v4)
                addresses.append("127.0.0.1")
                // ::1 on the same port, so "localhost" works whichever address a client tries first. Best effort:
                // a system without IPv6, or another program on that v6 port, leaves the fixture on 127.0.0.1 alone.
                if let v6 = try? await bind(bootstrap, address: "::1", port: v4.localAddress?.port ?? 0) {
                    channels.append(v6)
                    addresses.append("::1")
                }
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        let port = channels.first?.localAddress?.port ?? configuration.port
        configuration.logger.debug("serving \(prepared.scenario.name) on port \(port)")
        return FixtureServer(prepared: prepared, port: port, boundAddresses: addresses, serverChannels: channels,
                             tracker: connections, log: log, revocationServices: revocationServices)
    }

    /// Binds every address of `addresses` on one port (port 0: the one the kernel picks for the first), or none.
    /// Only a family's first address gets the wildcard check: once this server holds 127.0.0.1:P, Linux refuses the
    /// check's own 0.0.0.0:P bind (a false "in use" for `--bind 127.0.0.1 --bind 192.0.2.2`), and nobody else can
    /// take *:P any more.
    package static func bind(_ bootstrap: ServerBootstrap, addresses: [String], port: Int) async throws -> [Channel] {
        var channels: [Channel] = []
        var bound: [String] = []
        var port = port
        do {
            for address in addresses {
                let familyBound = bound.contains { $0.contains(":") == address.contains(":") }
                let channel = try await bind(bootstrap, address: address, port: port, checkWildcard: !familyBound)
                channels.append(channel)
                bound.append(address)
                port = channel.localAddress?.port ?? port
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        return channels
    }

    package static func bind(_ bootstrap: ServerBootstrap, address: String, port: Int, checkWildcard: Bool = true) async throws -> Channel {
        // Darwin would let this bind share the port with a server on *:port, splitting its clients (WildcardConflict).
        if checkWildcard, WildcardConflict.held(port: port, covering: address) { throw FixtureError.portInUse(port: port, address: address) }
        do {
            return try await bootstrap.bind(host: address, port: port).get()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw FixtureError.portInUse(port: port, address: address)
        } catch let error as IOError where error.errnoCode == EMFILE || error.errnoCode == ENFILE {
            throw FixtureError.tooManyOpenFiles(address: address, port: port)
        } catch let error as IOError where error.errnoCode == EADDRNOTAVAIL {
            throw FixtureError.addressNotAvailable(address: address, port: port)
        } catch let error as IOError {
            throw FixtureError.cannotBind(address: address, port: port, reason: String(cString: strerror(error.errnoCode)))
        } catch {
            throw FixtureError.cannotBind(address: address, port: port, reason: "\(error)")
        }
    }

    private static func makeBootstrap(prepared: PreparedScenario, configuration: FixtureConfiguration,
                                      connections: ConnectionTracker, log: ConnectionLog) -> ServerBootstrap {
        let annotator = configuration.connectionAnnotator
        let ended = configuration.connectionEnded
        let logger = configuration.logger
        let handshakeTimeout = configuration.handshakeTimeout
        let idleTimeout = configuration.idleTimeout
        let headerTimeout = configuration.headerTimeout
        let name = prepared.scenario.name
        // Made once per fixture, not per connection.
        let connectionLogger: Logger = {
            var connectionLogger = logger
            connectionLogger[metadataKey: "scenario"] = "\(name)"
            return connectionLogger
        }()
        let answers = FixtureAnswerCache()
        let acceptLabel = "scenario \(name)"
        return ListenerLimits.bootstrap(label: acceptLabel, logger: logger, backlog: 1024, connections: connections) { channel in
            let pipeline = channel.pipeline.syncOperations
            let recorder = ConnectionRecorder(log: log, peer: channel.remoteAddress, annotator: annotator,
                                              ended: ended)
            try pipeline.addHandler(IdleStateHandler(allTimeout: idleTimeout))
            if let context = prepared.context {
                try pipeline.addHandler(TLSServerHandler(context: context, handshakeTimeout: handshakeTimeout,
                                                         logger: connectionLogger, recorder: recorder))
            } else {
                recorder.conclude(.cleartext)
                channel.closeFuture.assumeIsolated().whenComplete { _ in recorder.close(outcomeIfNone: .cleartext) }
            }
            // NIOHTTP1 parses requests; FixtureResponder writes whole, pre-serialised responses. It answers each
            // request at once, in order, and closes after a `Connection: close` answer itself, so neither the
            // pipelining assistant nor the response encoder would do anything but add a hop to every read,
            // write and flush. Malformed HTTP gets a 400 from the responder's error path, then a close.
            try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
            try pipeline.addHandler(HTTPRequestDeadlineHandler(timeout: headerTimeout, startsAfterHandshake: prepared.context != nil,
                                                               logger: connectionLogger))
            // Requests wait here, and reading stops, while the client does not read its answers.
            try pipeline.addHandler(HTTPBackPressureHandler())
            try pipeline.addHandler(FixtureResponder(scenarioName: name, cache: answers, recorder: recorder))
        }
    }

    /// Answers a connection may have queued before it stops answering and reading (NIO's defaults: 32 KiB / 64 KiB).
    static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 32 * 1024, high: 64 * 1024)

    // MARK: Stopping

    /// Stops listening, closes every connection (with close_notify) and frees the port. Safe to call more than once
    /// and from several tasks at once: every caller returns when the fixture has stopped.
    public func stop() async {
        let eventLoop = serverChannels.first?.eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        let promise = eventLoop.makePromise(of: Void.self)
        enum Action { case stop, wait(EventLoopFuture<Void>), done }
        let action: Action = lifecycle.withLockedValue { state in
            switch state {
            case .running:
                state = .stopping(promise.futureResult)
                return .stop
            case .stopping(let future):
                return .wait(future)
            case .stopped:
                return .done
            }
        }
        switch action {
        case .done:
            promise.succeed(())
        case .wait(let future):
            promise.succeed(())
            try? await future.get()
        case .stop:
            for channel in serverChannels { try? await channel.close() }
            await tracker.closeAll(within: .seconds(1))
            await revocationServices?.stop()
            lifecycle.withLockedValue { $0 = .stopped }
            promise.succeed(())
        }
    }

    /// Open connections right now.
    public var connectionCount: Int { tracker.count }
}

/// The codes of `FixtureError`.
extension ErrorCode where Owner == FixtureError {
    /// Something already listens on the port (`port` and `address` say where).
    public static var portInUse: Self { Self("portInUse") }
    /// The address cannot be listened on for another reason: not an address of this host, out of descriptors, …
    public static var cannotBind: Self { Self("cannotBind") }
    /// The address to listen on is not one of this machine's.
    public static var addressNotAvailable: Self { Self("addressNotAvailable") }
    /// `FixtureConfiguration.maximumConnections` below 1.
    public static var invalidConnectionLimit: Self { Self("invalidConnectionLimit") }
    /// `FixtureConfiguration.connectionRecordLimit` outside 1…100,000.
    public static var invalidRecordLimit: Self { Self("invalidRecordLimit") }
}

extension BlockingWork.Lane {
    /// Where preparing `scenario` from `store` runs: `nothingToMake` when it generates nothing, `slow` when it makes a
    /// slow key or group (`CertificateStore.slowWork(preparing:)`), `quick` otherwise.
    package static func preparing(_ scenario: Scenario, in store: CertificateStore,
                                  storage: PreparationStorage = .store, quick: Self, slow: Self) -> Self {
        if store.makesNothing(preparing: scenario, storage: storage) { return .nothingToMake }
        return store.slowWork(preparing: scenario, storage: storage) == nil ? quick : slow
    }
}
