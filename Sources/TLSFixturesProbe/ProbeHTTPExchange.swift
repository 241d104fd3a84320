import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The probe's one HTTP/1.1 request, `GET /`, and its answer, framed by NIOHTTP1's own codecs rather than by hand: the
/// request is encoded by `HTTPRequestEncoder`, and the bytes the server sends are fed to
/// `ByteToMessageHandler(HTTPResponseDecoder())` in an `EmbeddedChannel`. So a body sized by `Content-Length` or sent
/// in chunks arrives without its framing, interim answers (`103 Early Hints`) are skipped, and the exchange ends at the
/// answer's `.end` — a server that keeps the connection open (keep-alive) is not waited for.
struct ProbeHTTPExchange {
    /// What the `Host` header names.
    var host: String
    /// The largest body kept; a longer one is an error (`bodyTooLarge`), not a truncated answer.
    var maximumBodyBytes: Int

    enum Failure: Error, Equatable {
        /// The deadline passed (`during`: what the probe was doing).
        case timedOut(during: String)
        /// An alert or TLS error instead of an answer, in OpenSSL's words.
        case rejected(String)
        /// The socket failed, or the server closed it in the middle of the answer.
        case broken(String)
        /// The bytes are not an HTTP/1.1 answer (NIOHTTP1's reason).
        case malformed(String)
        /// The body passed `maximumBodyBytes`.
        case bodyTooLarge(limit: Int)
    }

    /// The answer, or nil when the server closed the connection without sending a byte of one.
    func run(over stream: some ProbeByteStream) -> Result<ProbeHTTPResponse?, Failure> {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        do {
            try channel.pipeline.syncOperations.addHandlers([
                HTTPRequestEncoder(), ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)),
            ])
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
            head.headers = ["Host": host, "User-Agent": "tls-fixtures-probe", "Accept": "application/json", "Connection": "close"]
            try channel.writeOutbound(HTTPClientRequestPart.head(head))
            try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        } catch {
            return .failure(.malformed("cannot encode the request: \(error)"))
        }
        var request: [UInt8] = []
        while let part = try? channel.readOutbound(as: ByteBuffer.self) { request += part.readableBytesView }
        do {
            try stream.write(request)
        } catch {
            return .failure(failure(error, during: "sending the HTTP request"))
        }

        var answer = Answer(limit: maximumBodyBytes)
        var receivedAnything = false
        while true {
            let bytes: [UInt8]?
            do {
                bytes = try stream.read()
            } catch {
                return .failure(failure(error, during: "waiting for the HTTP answer"))
            }
            do {
                if let bytes {
                    receivedAnything = true
                    try channel.writeInbound(ByteBuffer(bytes: bytes))
                } else {
                    // The end of the stream ends a body that has neither length nor chunks.
                    channel.pipeline.fireChannelInactive()
                }
                while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
                    if let response = try answer.take(part) { return .success(response) }
                }
            } catch let error as Failure {
                return .failure(error)
            } catch {
                return .failure(.malformed("\(error)"))
            }
            if bytes == nil {
                return receivedAnything
                    ? .failure(.broken("the server closed the connection before the HTTP answer was complete"))
                    : .success(nil)
            }
        }
    }

    private func failure(_ error: ProbeStreamFailure, during: String) -> Failure {
        switch error {
        case .timedOut: return .timedOut(during: during)
        case .tls(let reasons): return .rejected(reasons.isEmpty ? "the TLS session failed, and OpenSSL gave no reason" : reasons.joined(separator: "; "))
        case .socket(let why): return .broken("\(why) \(during)")
        }
    }

    /// The answer as the decoder hands it over: head, body parts, end.
    private struct Answer {
        let limit: Int
        var head: HTTPResponseHead?
        var body: [UInt8] = []

        init(limit: Int) { self.limit = limit }

        /// The whole answer at its `.end`, else nil.
        mutating func take(_ part: HTTPClientResponsePart) throws(Failure) -> ProbeHTTPResponse? {
            switch part {
            case .head(let head):
                self.head = head
            case .body(let buffer):
                guard body.count + buffer.readableBytes <= limit else { throw .bodyTooLarge(limit: limit) }
                body += buffer.readableBytesView
            case .end:
                guard let head else { return nil }
                var headers: [String: String] = [:]
                // Lower-case names, as HTTP/1.1 compares them; a repeated field is joined with commas (RFC 9110, 5.3).
                for (name, value) in head.headers {
                    let key = name.lowercased()
                    headers[key] = headers[key].map { "\($0), \(value)" } ?? value
                }
                return ProbeHTTPResponse(status: Int(head.status.code), headers: headers, body: String(decoding: body, as: UTF8.self))
            }
            return nil
        }
    }
}
