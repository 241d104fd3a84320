import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MatrixTargets

// URLSession with an ephemeral default configuration and no delegate: what an app's networking code does. On Linux it
// is swift-corelibs-foundation over libcurl and the system OpenSSL, and it trusts what libcurl's CA bundle holds — the
// matrix runs it where that bundle is the built-in CA (see Matrix/Clients/load.py).

let (_, target) = MatrixCommandLine.parse()
let configuration = URLSessionConfiguration.ephemeral
configuration.timeoutIntervalForRequest = 15
let session = URLSession(configuration: configuration)

do {
    let (data, response) = try await session.data(from: target.url)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    MatrixCommandLine.finish(accepted: status == 200, detail: "HTTP \(status), \(data.count) bytes")
} catch {
    let nsError = error as NSError
    MatrixCommandLine.finish(accepted: false,
                             detail: "\(nsError.domain) \(nsError.code): \(nsError.localizedDescription)")
}
