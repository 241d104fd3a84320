import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

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
    /// hold a connection open.
    public var handshakeTimeout: TimeAmount
    /// A connection with no traffic either way for this long is closed (default 60 s).
    public var idleTimeout: TimeAmount
    public var logger: Logger

    public init(bindAddresses: [String]? = nil, port: Int = 0, handshakeTimeout: TimeAmount = .seconds(10),
                idleTimeout: TimeAmount = .seconds(60), logger: Logger? = nil) {
        self.bindAddresses = bindAddresses
        self.port = port
        self.handshakeTimeout = handshakeTimeout
        self.idleTimeout = idleTimeout
        self.logger = logger ?? {
            var logger = Logger(label: "tls-fixtures.server")
            // Per-connection failures are expected in a fixture (that is what they are for): quiet unless asked.
            logger.logLevel = .notice
            return logger
        }()
    }
}

public enum FixtureError: Error, CustomStringConvertible, Sendable, Equatable {
    case portInUse(port: Int, address: String)
    case cannotBind(address: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .portInUse(let port, let address):
            return "port \(port) on \(address) is already in use; stop what listens there (lsof -i :\(port)) or choose other ports (`serve --port-base N`; in code, FixtureConfiguration's port 0 picks a free one)"
        case .cannotBind(let address, let port, let reason):
            return "cannot listen on \(address) port \(port): \(reason)"
        }
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
    public let prepared: PreparedScenario
    public let port: Int
    /// The addresses actually listening.
    public let boundAddresses: [String]
    private let serverChannels: [Channel]
    private let connections: ConnectionTracker
    private let lifecycle = NIOLockedValueBox(Lifecycle.running)

    private enum Lifecycle {
        case running
        case stopping(EventLoopFuture<Void>)
        case stopped
    }

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
    public var scheme: String { scenario.isCleartext ? "http" : "https" }

    /// The certificates the server sends, leaf first.
    public var chain: [Certificate] { prepared.chainSent }
    public var chainDER: [Data] { prepared.chainSent.map(\.der) }
    public var chainPEM: Data { Certificate.pem(prepared.chainSent) }
    /// The built-in CA: trust it in the client under test.
    public var caCertificate: Certificate { prepared.caCertificate }
    /// Every root the scenario assumes a device trusts: the built-in CA, plus for `pin-mitm` the interception CA (the
    /// root a debugging proxy's user installs). Trust these, not `caCertificate` alone, to see `pin-mitm` pass default
    /// trust and fail only on its pins. (The interception CA on its own: `store.authority(.interceptionRoot)`; on the
    /// command line `tls-fixtures ca export --authority interception-root`.)
    public var deviceTrustRoots: [Certificate] { prepared.deviceTrustRoots }
    public var pins: FixturePins { prepared.pins }

    private init(prepared: PreparedScenario, port: Int, boundAddresses: [String], serverChannels: [Channel], connections: ConnectionTracker) {
        self.prepared = prepared; self.port = port; self.boundAddresses = boundAddresses
        self.serverChannels = serverChannels; self.connections = connections
    }

    // MARK: Starting

    /// Starts the built-in scenario `name`.
    public static func start(_ name: String, store: CertificateStore = .resolved(),
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        try await start(try ScenarioCatalog.builtIn.scenario(named: name), store: store, configuration: configuration)
    }

    /// Starts `scenario`; certificates come from `store` (generated on first use, cached after).
    public static func start(_ scenario: Scenario, store: CertificateStore = .resolved(),
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        let prepared = try await prepare(scenario, store: store)
        return try await start(prepared, configuration: configuration)
    }

    /// Prepares off the cooperative thread pool: the first preparation may generate keys (RSA-8192 takes seconds).
    static func prepare(_ scenario: Scenario, store: CertificateStore) async throws -> PreparedScenario {
        try await NIOThreadPool.singleton.runIfActive { try store.prepare(scenario) }
    }

    /// Serves a credential of your own — from `CertificateAuthority.ephemeral()`, say — with `scenario`'s TLS settings
    /// (default `ats-compliant`), using no store and no files. See `PreparedScenario.serving(_:scenario:)`.
    public static func start(serving credential: Credential, scenario: Scenario? = nil,
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        try await start(try PreparedScenario.serving(credential, scenario: scenario), configuration: configuration)
    }

    /// Starts an already prepared scenario (what `serve` uses after preparing everything up front).
    public static func start(_ prepared: PreparedScenario, configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        FileDescriptorLimit.raiseOnce()
        let connections = ConnectionTracker()
        let bootstrap = makeBootstrap(prepared: prepared, configuration: configuration, connections: connections)
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
        return FixtureServer(prepared: prepared, port: port, boundAddresses: addresses, serverChannels: channels, connections: connections)
    }

    /// Binds every address of `addresses` on one port (port 0: the one the kernel picks for the first), or none.
    /// Only a family's first address gets the wildcard check: once this server holds 127.0.0.1:P, Linux refuses the
    /// check's own 0.0.0.0:P bind (a false "in use" for `--bind 127.0.0.1 --bind 192.0.2.2`), and nobody else can
    /// take *:P any more.
    static func bind(_ bootstrap: ServerBootstrap, addresses: [String], port: Int) async throws -> [Channel] {
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

    static func bind(_ bootstrap: ServerBootstrap, address: String, port: Int, checkWildcard: Bool = true) async throws -> Channel {
        // Darwin would let this bind share the port with a server on *:port, splitting its clients (WildcardConflict).
        if checkWildcard, WildcardConflict.held(port: port, covering: address) { throw FixtureError.portInUse(port: port, address: address) }
        do {
            return try await bootstrap.bind(host: address, port: port).get()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw FixtureError.portInUse(port: port, address: address)
        } catch let error as IOError where error.errnoCode == EMFILE || error.errnoCode == ENFILE {
            let limit = FileDescriptorLimit.raiseOnce()
            throw FixtureError.cannotBind(address: address, port: port, reason: "too many open files (this process may open "
                + "\(limit.current)); raise the limit before starting (`ulimit -n 4096`) or serve fewer scenarios")
        } catch let error as IOError {
            throw FixtureError.cannotBind(address: address, port: port, reason: String(cString: strerror(error.errnoCode)))
        } catch {
            throw FixtureError.cannotBind(address: address, port: port, reason: "\(error)")
        }
    }

    private static func makeBootstrap(prepared: PreparedScenario, configuration: FixtureConfiguration,
                                      connections: ConnectionTracker) -> ServerBootstrap {
        let logger = configuration.logger
        let handshakeTimeout = configuration.handshakeTimeout
        let idleTimeout = configuration.idleTimeout
        let name = prepared.scenario.name
        // Made once per fixture, not per connection.
        let connectionLogger: Logger = {
            var connectionLogger = logger
            connectionLogger[metadataKey: "scenario"] = "\(name)"
            return connectionLogger
        }()
        let answers = FixtureAnswerCache()
        return ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 1024)
            // A stopped fixture's port can be bound again at once.
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard connections.admit(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(allTimeout: idleTimeout))
                    if let context = prepared.context {
                        try pipeline.addHandler(TLSServerHandler(context: context, handshakeTimeout: handshakeTimeout, logger: connectionLogger))
                    }
                    // NIOHTTP1 parses requests; FixtureResponder writes whole, pre-serialised responses. It answers each
                    // request at once, in order, and closes after a `Connection: close` answer itself, so neither the
                    // pipelining assistant nor the response encoder would do anything but add a hop to every read,
                    // write and flush. Malformed HTTP gets a 400 from the responder's error path, then a close.
                    try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    try pipeline.addHandler(FixtureResponder(scenarioName: name, cache: answers))
                }
            }
    }

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
            await connections.closeAll(within: .seconds(1))
            lifecycle.withLockedValue { $0 = .stopped }
            promise.succeed(())
        }
    }

    /// Open connections right now.
    public var connectionCount: Int { connections.count }
}

/// Remembers live connections so `stop()` can close them, and refuses new ones once stopping.
final class ConnectionTracker: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: Channel] = [:]
        var closed = false
    }
    private let state = NIOLockedValueBox(State())

    func admit(_ channel: Channel) -> Bool {
        let admitted = state.withLockedValue { state -> Bool in
            if state.closed { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { [weak self] _ in
                _ = self?.state.withLockedValue { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return admitted
    }

    var count: Int { state.withLockedValue { $0.channels.count } }

    func closeAll(within limit: TimeAmount) async {
        let channels = state.withLockedValue { state -> [Channel] in
            state.closed = true
            return Array(state.channels.values)
        }
        guard !channels.isEmpty else { return }
        for channel in channels { channel.close(promise: nil) }
        let deadline = NIODeadline.now() + limit
        for channel in channels {
            let remaining = deadline - .now()
            guard remaining > .zero else { break }
            _ = try? await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await channel.closeFuture.get() }
                group.addTask { try await Task.sleep(nanoseconds: UInt64(max(remaining.nanoseconds, 0))) }
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }
}
