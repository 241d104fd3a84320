import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MatrixTargets

// URLSession with an ephemeral default configuration and no delegate: what an app's networking code does. On Linux it
// is swift-corelibs-foundation over libcurl and the system OpenSSL, and it trusts what libcurl's CA bundle holds — the
// matrix driver runs it where that bundle is the built-in CA (see scripts/matrix.py).

let (_, targets) = MatrixCommandLine.parse()
let configuration = URLSessionConfiguration.ephemeral
configuration.timeoutIntervalForRequest = 15
let session = URLSession(configuration: configuration)

for target in targets {
    do {
        let (data, response) = try await session.data(from: target.url)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        MatrixCommandLine.report(MatrixResult(id: target.id, accepted: status == 200, detail: "HTTP \(status), \(data.count) bytes"))
    } catch {
        let nsError = error as NSError
        MatrixCommandLine.report(MatrixResult(id: target.id, accepted: false, detail: MatrixCommandLine.oneLine(
            "\(nsError.domain) \(nsError.code): \(nsError.localizedDescription)")))
    }
}
