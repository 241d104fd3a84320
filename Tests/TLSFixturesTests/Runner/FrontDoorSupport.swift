import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// A stand-in for the fleet behind the front door: canned answers and a record of what it was asked, so every answer
/// of the front door can be made in memory, the way swift-nio-ssl tests its handler without a socket.
final class FakeFleet: FleetQueries, FleetCommands, FixtureLookup, Sendable {
    struct Calls: Sendable {
        var started: [LeaseRequest] = []
        var renewed: [(id: String, ttl: Int?)] = []
        var stopped: [String] = []
        var sessionsStopped: [String] = []
        var listedSession: [String?] = []
    }

    /// What `startLeased` does: lease `expired` as new456, or throw.
    let startOutcome: NIOLockedValueBox<Result<LeasedFixture, FleetError>>
    let fixtures: NIOLockedValueBox<[LeasedFixture]>
    let served: [Int: ServedFixture]
    let fixtureDomains: [String]
    let calls = NIOLockedValueBox(Calls())
    let catalog = ScenarioCatalog.builtIn
    /// When set, `startLeased` waits at this gate until the test opens it (a start that takes a minute).
    let startGate = NIOLockedValueBox<Gate?>(nil)

    init(
        fixtures: [LeasedFixture] = [FakeFleet.leased("abc123")], served: [Int: ServedFixture] = [:],
        domains: [String] = ["fixtures.test"]
    ) {
        startOutcome = NIOLockedValueBox(.success(Self.leased("new456")))
        self.fixtures = NIOLockedValueBox(fixtures)
        self.served = served
        fixtureDomains = domains
    }

    /// A leased fixture as the fleet gives it.
    static func leased(
        _ id: String, scenario: String = "expired", session: String? = nil, ttl: Int = 300
    ) -> LeasedFixture {
        LeasedFixture(
            id: id, scenario: try! ScenarioCatalog.builtIn.scenario(named: scenario), port: 40_001,
            url: URL(string: "https://localhost:40001/")!,
            qualifiedURL: URL(string: "https://\(scenario).fixtures.test:40001/")!,
            domainURLs: [], pins: FixturePins(leaf: "L", ca: "C", backup: "B", pinnedLeaf: "P"),
            caCertificate: FrontDoorConnection.ca, chain: [], clientCredential: nil, interceptionRoot: nil,
            session: session, ttl: ttl, expiresAt: Date(timeIntervalSince1970: 2_000_000_000))
    }

    var generation: Int { 1 }

    /// Each catalog scenario's status in `document()` (and so in the health the front door makes of it).
    let statuses = NIOLockedValueBox<[(name: String, status: CatalogEntry.Status)]>([("expired", .serving)])
    let stopping = NIOLockedValueBox(false)

    var isStopping: Bool { stopping.withLockedValue { $0 } }

    func document() -> CatalogDocument {
        let entries = statuses.withLockedValue { $0 }.map { name, status in
            CatalogEntry(scenario: try! catalog.scenario(named: name), port: 40_001, status: status)
        }
        return CatalogDocument(dashboard: nil, scenarios: entries)
    }

    func leasedFixture(id: String) throws(FleetError) -> LeasedFixture {
        guard let found = fixtures.withLockedValue({ $0.first { $0.id == id } }) else { throw .noSuchFixture(id) }
        return found
    }

    func leasedFixtures(session: String?) -> [LeasedFixture] {
        calls.withLockedValue { $0.listedSession.append(session) }
        return fixtures.withLockedValue { $0 }.filter { session == nil || $0.session == session }
    }

    func startLeased(_ request: LeaseRequest) async throws(FleetError) -> LeasedFixture {
        calls.withLockedValue { $0.started.append(request) }
        if let gate = startGate.withLockedValue({ $0 }) { await gate.pass() }
        return try startOutcome.withLockedValue { $0 }.get()
    }

    func renewLease(id: String, ttl: Int?) throws(FleetError) -> LeasedFixture {
        calls.withLockedValue { $0.renewed.append((id, ttl)) }
        var found = try leasedFixture(id: id)
        found.ttl = ttl ?? found.ttl
        return found
    }

    func stopLeased(id: String) async -> Bool {
        calls.withLockedValue { $0.stopped.append(id) }
        return fixtures.withLockedValue { $0.contains { $0.id == id } }
    }

    func stopSession(_ session: String) async -> Int {
        calls.withLockedValue { $0.sessionsStopped.append(session) }
        return fixtures.withLockedValue { $0.filter { $0.session == session }.count }
    }

    func servedFixture(onPort port: Int) -> ServedFixture? { served[port] }

    let proxyHops = ProxyHops()

    /// What `connections(of:)` answers for each fixture (absent: the fleet's error for one it does not have), and
    /// what it was asked.
    let connectionLists = NIOLockedValueBox<[FixtureFleet.Key: ConnectionList]>([:])
    let connectionsAsked = NIOLockedValueBox<[(key: FixtureFleet.Key, after: Int, wait: Duration)]>([])
    /// When set, `connections(of:)` waits at this gate (a wait for a connection that has not come yet).
    let connectionsGate = NIOLockedValueBox<Gate?>(nil)

    /// What `recentConnections(last:)` answers.
    let recent = NIOLockedValueBox<[String: ConnectionList]>([:])

    func recentConnections(last limit: Int) -> [String: ConnectionList] {
        recent.withLockedValue { $0 }.mapValues { ConnectionList(connections: Array($0.connections.suffix(limit)), latestID: $0.latestID) }
    }

    func connections(of key: FixtureFleet.Key, after cursor: ConnectionCursor, wait: Duration) async throws(FleetError)
        -> ConnectionList
    {
        connectionsAsked.withLockedValue { $0.append((key, cursor.connection, wait)) }
        if let gate = connectionsGate.withLockedValue({ $0 }) { await gate.pass() }
        guard let list = connectionLists.withLockedValue({ $0[key] }) else {
            switch key {
            case .leased(let id): throw .noSuchFixture(id)
            case .catalog(let name): throw .noSuchScenario(name, inCatalog: catalog.names.contains(name))
            }
        }
        return list
    }
}

/// A door a task waits at until the test opens it; `entered` says when a task has arrived.
final class Gate: Sendable {
    let entered: AsyncStream<Void>
    private let arrival: AsyncStream<Void>.Continuation
    private let state = NIOLockedValueBox<(waiting: [CheckedContinuation<Void, Never>], open: Bool)>(([], false))

    init() { (entered, arrival) = AsyncStream<Void>.makeStream() }

    func pass() async {
        arrival.yield()
        await withCheckedContinuation { continuation in
            let open = state.withLockedValue { state -> Bool in
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// One runner connection in a `NIOAsyncTestingChannel`, with the pipeline `RunnerListener` gives a real one (the
/// decoder, the router, the dashboard): raw request bytes in, raw answer bytes out.
struct FrontDoorConnection {
    let channel: NIOAsyncTestingChannel
    static let proxy = ProxyEndpoint(port: 9800, domains: ["fixtures.test"])

    /// `controlAPI`, `proxy`, `dashboard`: which rooms this port has (a proxy-only port has neither the API nor the
    /// dashboard). `client`: the peer's address.
    static func open(
        _ fleet: FakeFleet, controlAPI: Bool = true, proxy: Bool = true, proxyElsewhere: Int? = nil,
        dashboard: Bool = true,
        client: String = "127.0.0.1", allowRemoteClients: Bool = false,
        proxyRefused: (@Sendable (ProxyRefusal) -> Void)? = nil, connector: (any FixtureConnector)? = nil,
        channel: NIOAsyncTestingChannel = NIOAsyncTestingChannel()
    ) async throws -> FrontDoorConnection {
        let addresses = FrontDoorAddresses.Box()
        addresses.set(FrontDoorAddresses(dashboard: "http://localhost:9800/", proxy: Self.proxy))
        let services = RunnerServices(
            controlAPI: controlAPI ? ControlAPI(fleet: fleet, proxy: { addresses.value.proxy }) : nil,
            proxy: proxy ? ProxyPolicy(fixtures: fleet) : nil, proxyElsewhere: proxyElsewhere,
            allowRemoteClients: allowRemoteClients, proxyRefused: proxyRefused,
            connector: connector ?? SocketConnector())
        let content = dashboard ? try DashboardContent(fleet: fleet, ca: Self.ca, addresses: addresses) : nil
        try await channel.testingEventLoop.executeInContext {
            try RunnerHTTPPipeline.configure(channel, services: services, dashboard: content)
        }
        channel.localAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 9800)
        try await channel.connect(to: try SocketAddress(ipAddress: client, port: 50_000))
        return FrontDoorConnection(channel: channel)
    }

    static let ca = try! CertificateAuthority.ephemeral().certificate

    struct Answer {
        var status: Int
        var headers: [(String, String)]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        var error: APIError? { try? JSONDecoder().decode(APIError.self, from: body) }
        func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
            try FixtureAPI.decoder().decode(T.self, from: body)
        }
    }

    /// Sends `method path` (with `body` as JSON unless `contentType` says otherwise) and reads one whole answer.
    func send(
        _ method: String, _ path: String, body: String? = nil, contentType: String? = "application/json",
        headers: [String] = ["Host: localhost:9800"], head: Bool = false
    ) async throws -> Answer {
        var request = "\(method) \(path) HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined()
        if let body {
            if let contentType { request += "Content-Type: \(contentType)\r\n" }
            request += "Content-Length: \(body.utf8.count)\r\n\r\n" + body
        } else {
            request += "\r\n"
        }
        return try await exchange(ByteBuffer(string: request), head: head || method == "HEAD")
    }

    /// Writes `bytes` and reads until one answer has arrived whole (its head and `Content-Length` bytes of body).
    func exchange(_ bytes: ByteBuffer, head: Bool = false) async throws -> Answer {
        try await channel.writeInbound(bytes)
        return try await answer(head: head)
    }

    /// Reads until one answer has arrived whole.
    func answer(head: Bool = false) async throws -> Answer {
        var received = Data()
        while true {
            if let answer = Self.parse(received, head: head) { return answer }
            guard case .byteBuffer(let part) = try await channel.waitForOutboundWrite(as: IOData.self) else { continue }
            received.append(contentsOf: part.readableBytesView)
        }
    }

    static func parse(_ data: Data, head: Bool) -> Answer? {
        guard let end = data.firstRange(of: Data("\r\n\r\n".utf8)) else { return nil }
        let lines = String(decoding: data[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = head ? 0 : headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        let body = data[end.upperBound...]
        guard body.count >= length else { return nil }
        return Answer(status: status, headers: headers, body: Data(body.prefix(length)))
    }

    /// Whether the connection is still open once everything queued on its loop has run.
    var isOpen: Bool {
        get async {
            await channel.testingEventLoop.run()
            return channel.isActive
        }
    }
}
