import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner

/// Stands in for the fixtures: each connection the proxy makes is a channel of the test's, on the client's loop (a
/// tunnel's two ends share one), which the test reads and writes as the fixture would.
final class InMemoryConnector: FixtureConnector {
    let loop: NIOAsyncTestingEventLoop
    private let made = NIOLockedValueBox<[NIOAsyncTestingChannel]>([])

    init(loop: NIOAsyncTestingEventLoop) { self.loop = loop }

    /// The fixture's ends, in the order the proxy connected.
    var channels: [NIOAsyncTestingChannel] { made.withLockedValue { $0 } }

    func connect(
        to fixture: ServedFixture, on eventLoop: EventLoop,
        initializer: @escaping @Sendable (Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<Channel> {
        let channel = NIOAsyncTestingChannel(loop: loop)
        made.withLockedValue { $0.append(channel) }
        let address = try! SocketAddress(ipAddress: fixture.address, port: fixture.port)
        return initializer(channel).flatMap { channel.connect(to: address) }.map { channel }
    }
}

/// The proxy with its connector injected (issue 37): a working CONNECT tunnel and a working forward, in memory, where
/// before only its refusals could be tested without a real `serve`. And back-pressure on the answers of every room.
@Suite("The runner's proxy and read flow, in an EmbeddedChannel")
struct ProxyInMemoryTests {
    static let served: [Int: ServedFixture] = [
        40_001: ServedFixture(scenario: "expired", port: 40_001, isCleartext: false, address: "127.0.0.1"),
        40_043: ServedFixture(scenario: "http", port: 40_043, isCleartext: true, address: "127.0.0.1"),
    ]

    static func text(_ buffer: ByteBuffer) -> String { String(buffer: buffer) }

    /// The next bytes written to `channel`; "" and an issue (the channel closed, so nothing waits for ever) when none
    /// come within 30 s, a bound only a hang reaches.
    static func written(_ channel: NIOAsyncTestingChannel, _ what: String) async -> String {
        let timer = Task {
            try await Task.sleep(for: .seconds(30))
            Issue.record("\(what): nothing was written within 30 s")
            try await channel.close()
        }
        defer { timer.cancel() }
        return (try? await channel.waitForOutboundWrite(as: ByteBuffer.self)).map(Self.text) ?? ""
    }

    /// A front door whose proxy connects to fixtures in memory (`connector` holds their channels), after `request`
    /// came in from the client.
    static func proxied(_ request: String) async throws
        -> (client: NIOAsyncTestingChannel, connector: InMemoryConnector, door: FrontDoorConnection)
    {
        let client = NIOAsyncTestingChannel()
        let connector = InMemoryConnector(loop: client.testingEventLoop)
        let door = try await FrontDoorConnection.open(
            FakeFleet(served: Self.served), connector: connector, channel: client)
        try await client.writeInbound(ByteBuffer(string: request))
        return (client, connector, door)
    }

    @Test("CONNECT: 200 in raw bytes, early bytes and both directions through the tunnel, the HTTP handlers gone")
    func tunnel() async throws {
        // A client that does not wait for the 200 before its ClientHello: those bytes belong to the tunnel.
        let (client, connector, door) = try await Self.proxied(
            "CONNECT expired.fixtures.test:40001 HTTP/1.1\r\nHost: expired.fixtures.test:40001\r\n\r\n"
                + "\u{16}\u{03}\u{01}hello")
        #expect(await Self.written(client, "the 200") == "HTTP/1.1 200 Connection established\r\n\r\n")
        let fixture = try #require(connector.channels.first, "the proxy did not connect")
        #expect(connector.channels.count == 1)
        let early = await Self.written(fixture, "the bytes sent before the 200, at the fixture")
        #expect(early == "\u{16}\u{03}\u{01}hello", "the bytes sent before the 200 were lost")
        try await client.writeInbound(ByteBuffer(string: "more from the client"))
        #expect(await Self.written(fixture, "the client's bytes") == "more from the client")
        try await fixture.writeInbound(ByteBuffer(string: "from the fixture"))
        #expect(await Self.written(client, "the fixture's bytes") == "from the fixture")
        // Nothing reads HTTP any more on the client's side; the tunnel's end reads the bytes.
        let left = try await client.testingEventLoop.executeInContext { () -> [String] in
            let pipeline = client.pipeline.syncOperations
            var present: [String] = []
            if (try? pipeline.handler(type: RunnerRequestRouter.self)) != nil { present.append("router") }
            if (try? pipeline.handler(type: RequestFlow.self)) != nil { present.append("flow") }
            if (try? pipeline.handler(type: ProxyHandler.self)) != nil { present.append("proxy") }
            if (try? pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)) != nil {
                present.append("decoder")
            }
            if (try? pipeline.handler(type: TunnelHandler.self)) == nil { present.append("no tunnel") }
            return present
        }
        #expect(left.isEmpty, "\(left)")
        // The fixture hangs up: so does the client's end.
        try await fixture.close()
        #expect(await !door.isOpen, "the client's end outlived the fixture's")
    }

    @Test("GET http://…: forwarded to the cleartext fixture in origin form, its answer written back, the client kept")
    func forward() async throws {
        let (_, connector, door) = try await Self.proxied(
            "GET http://http.fixtures.test:40043/path?q=1 HTTP/1.1\r\nHost: http.fixtures.test:40043\r\n"
                + "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n")
        let fixture = try #require(connector.channels.first, "the proxy did not connect")
        var request = ""
        while !request.contains("\r\n\r\n") {
            let more = await Self.written(fixture, "the forwarded request")
            if more.isEmpty { break }
            request += more
        }
        #expect(request.hasPrefix("GET /path?q=1 HTTP/1.1\r\n"), "\(request)")
        #expect(request.contains("Connection: close") && !request.contains("Proxy-Connection"), "\(request)")
        #expect(request.contains("Host: http.fixtures.test:40043"), "\(request)")
        try await fixture.writeInbound(
            ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Fixture: http\r\nConnection: close\r\n\r\nhello"))
        let answer = try await door.answer()
        #expect(answer.status == 200 && answer.text == "hello", "\(answer.status) \(answer.text)")
        #expect(answer.header("X-Fixture") == "http" && answer.header("Connection") == nil, "\(answer.headers)")
        #expect(await door.isOpen, "a forwarded answer closed the client's connection")
        // And the next request on the same connection is served too.
        #expect(try await door.send("GET", "/api/fixtures").status == 200)
    }

    @Test("every answer waits while the client does not read: the API's too, and requests are held, not queued up")
    func backPressureOnEveryAnswer() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        let channel = door.channel
        channel.isWritable = false
        try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelWritabilityChanged() }
        let request = "GET /api/fixtures HTTP/1.1\r\nHost: localhost:9800\r\n\r\n"
        try await channel.writeInbound(ByteBuffer(string: request + request + "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        await channel.testingEventLoop.run()
        #expect(fleet.calls.withLockedValue { $0.listedSession.count } == 0, "an API request went on unread answers")
        #expect(try await channel.readOutbound(as: IOData.self) == nil, "an answer was written to a client not reading")
        channel.isWritable = true
        try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelWritabilityChanged() }
        #expect(try await door.answer().status == 200)
        #expect(try await door.answer().status == 200)
        #expect(try await door.answer().status == 200, "the dashboard's answer, last, in order")
        #expect(fleet.calls.withLockedValue { $0.listedSession.count } == 2)
    }
}
