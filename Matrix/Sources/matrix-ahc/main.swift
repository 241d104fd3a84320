import AsyncHTTPClient
import MatrixTargets
import NIOCore
import NIOSSL

// AsyncHTTPClient as an app would make it: `TLSConfiguration.makeClientConfiguration()` (its default) with the built-in
// CA as the only trust root. `dnsOverride` sends the DNS name to 127.0.0.1 while the request, SNI and the name check
// keep using it, which is what a real lookup would do.
//
// A refused handshake is retried by AHC's connection pool until the connect timeout, then reported with the last
// error: the timeout is 3 s rather than the default 10 s, so a refusal does not take ten. It changes no verdict.

let (caFile, target) = MatrixCommandLine.parse()
var tls = TLSConfiguration.makeClientConfiguration()
tls.trustRoots = .file(caFile)
var configuration = HTTPClient.Configuration(tlsConfiguration: tls,
                                             timeout: .init(connect: .seconds(3), read: .seconds(10)))
if !target.hostIsIPAddress { configuration.dnsOverride = [target.host: "127.0.0.1"] }
let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)

let accepted: Bool
let detail: String
do {
    var request = HTTPClientRequest(url: target.url.absoluteString)
    request.headers.add(name: "Connection", value: "close")
    let response = try await client.execute(request, timeout: .seconds(15))
    _ = try await response.body.collect(upTo: 1 << 20)
    (accepted, detail) = (response.status == .ok, "HTTP \(response.status.code)")
} catch {
    (accepted, detail) = (false, String(describing: error))
}
// The EventLoopFuture form: main.swift picks it over the async one, and the result is the same.
try? await client.shutdown().get()
MatrixCommandLine.finish(accepted: accepted, detail: detail)
