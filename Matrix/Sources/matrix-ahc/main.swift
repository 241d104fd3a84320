import AsyncHTTPClient
import MatrixTargets
import NIOCore
import NIOSSL

// AsyncHTTPClient as an app would make it: `TLSConfiguration.makeClientConfiguration()` (its default) with the built-in
// CA as the only trust root. `dnsOverride` sends every DNS name to 127.0.0.1 while the request, SNI and the name check
// keep using it, which is what a real lookup would do.
//
// A refused handshake is retried by AHC's connection pool until the connect timeout, then reported with the last
// error: the timeout is 3 s rather than the default 10 s, and eight targets run at once, so a column of refusals does
// not take minutes. Neither changes a verdict.

let (caFile, targets) = MatrixCommandLine.parse()
var tls = TLSConfiguration.makeClientConfiguration()
tls.trustRoots = .file(caFile)
var configuration = HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(3), read: .seconds(10)))
configuration.dnsOverride = Dictionary(targets.filter { !$0.hostIsIPAddress }.map { ($0.host, "127.0.0.1") }, uniquingKeysWith: { a, _ in a })
let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)

@Sendable func fetch(_ target: MatrixTarget) async -> MatrixResult {
    do {
        var request = HTTPClientRequest(url: target.url.absoluteString)
        request.headers.add(name: "Connection", value: "close")
        let response = try await client.execute(request, timeout: .seconds(15))
        _ = try await response.body.collect(upTo: 1 << 20)
        return MatrixResult(id: target.id, accepted: response.status == .ok, detail: "HTTP \(response.status.code)")
    } catch {
        return MatrixResult(id: target.id, accepted: false, detail: MatrixCommandLine.oneLine(String(describing: error)))
    }
}

await withTaskGroup(of: MatrixResult.self) { group in
    var pending = targets[...]
    for _ in 0..<8 { if let target = pending.popFirst() { group.addTask { await fetch(target) } } }
    for await result in group {
        MatrixCommandLine.report(result)
        if let target = pending.popFirst() { group.addTask { await fetch(target) } }
    }
}
// The EventLoopFuture form: main.swift picks it over the async one, and the result is the same.
try? await client.shutdown().get()
