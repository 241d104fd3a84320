import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import TLSFixtures

/// The header timeout on the embedded loop's clock: a client that is slow to send is cut off, a client waiting for a
/// slow answer (a control-API request that makes an RSA-8192 key) is not.
@Suite("HTTPRequestDeadlineHandler in an EmbeddedChannel", .ownThreads)
struct HTTPRequestDeadlineHandlerTests {
    static let timeout = TimeAmount.seconds(20)

    func makeChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            HTTPRequestDeadlineHandler(timeout: Self.timeout, startsAfterHandshake: false, logger: Logger(label: "test")))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    func sendRequest(_ channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: "/api/fixtures")))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        while try channel.readInbound(as: HTTPServerRequestPart.self) != nil {}
    }

    @Test("a request that never arrives whole is cut off at the timeout")
    func slowClient() throws {
        let channel = try makeChannel()
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        channel.embeddedEventLoop.advanceTime(by: Self.timeout - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2))
        #expect(!channel.isActive, "a request still incomplete after the header timeout keeps its connection")
    }

    @Test("while an answer is owed the clock does not run; after it is flushed, it does")
    func slowAnswer() throws {
        let channel = try makeChannel()
        try sendRequest(channel)
        channel.embeddedEventLoop.advanceTime(by: Self.timeout * 3)
        #expect(channel.isActive, "the connection was closed while the server still owed its answer")

        try channel.writeOutbound(ByteBuffer(string: "HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n"))
        channel.embeddedEventLoop.advanceTime(by: Self.timeout - .milliseconds(1))
        #expect(channel.isActive, "the next request's time ran from the request, not from the answer")
        channel.embeddedEventLoop.advanceTime(by: Self.timeout)
        #expect(!channel.isActive, "an idle keep-alive connection outlived the header timeout after its answer")
    }
}
