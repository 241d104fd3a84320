import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TLSFixturesClient

// What an iOS test does, as a program that links TLSFixturesClient alone (no OpenSSL, no NIO): start a fixture
// through the runner's control API, load it by its qualified name through the runner's proxy with URLSession, and
// stop it. On Linux the proxy reaches URLSession through `FixtureProxy.environment`, as it would for any Linux program.
// One JSON line out; exit 0 when the load completed with HTTP 200, 1 otherwise.
//
//   tls-fixtures-client-check SCENARIO [URL-KIND]      URL-KIND: qualified (default), domain, localhost
//
// The runner comes from TLS_FIXTURES_URL. The tests run it where libcurl's CA bundle is the built-in CA and /etc/hosts
// names nothing under fixtures.test (a private mount namespace), so a completed load proves the proxy resolved the
// name and the fixture's chain verified for it.

struct Outcome: Encodable {
    var scenario: String
    var url: String
    var loaded: Bool
    var status: Int?
    var servedScenario: String?
    var error: String?
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first else {
    FileHandle.standardError.write(Data("usage: tls-fixtures-client-check SCENARIO [qualified|domain|localhost]\n".utf8))
    exit(64)
}
let kind = arguments.dropFirst().first ?? "qualified"
var outcome = Outcome(scenario: name, url: "", loaded: false)
do {
    let fixture = try await RemoteFixtures(ttl: 60).start(name)
    let url: URL
    switch kind {
    case "domain": url = fixture.domainURLs.first ?? fixture.qualifiedURL
    case "localhost": url = fixture.url
    default: url = fixture.qualifiedURL
    }
    outcome.url = url.absoluteString
    guard let proxy = fixture.proxy else { throw RemoteFixtureError.invalidScenario("the runner names no proxy") }
    #if os(Linux)
    // FoundationNetworking ignores connectionProxyDictionary; the libcurl under it reads the proxy from the environment.
    for (variable, value) in proxy.environment { setenv(variable, value, 1) }
    #endif
    let configuration = URLSessionConfiguration.fixtures(through: proxy)
    configuration.timeoutIntervalForRequest = 15
    let session = URLSession(configuration: configuration)
    do {
        let (data, response) = try await session.data(from: url)
        outcome.status = (response as? HTTPURLResponse)?.statusCode
        outcome.loaded = outcome.status == 200
        struct Served: Decodable { var scenario: String }
        outcome.servedScenario = (try? JSONDecoder().decode(Served.self, from: data))?.scenario
    } catch {
        let nsError = error as NSError
        outcome.error = "\(nsError.domain) \(nsError.code): \(nsError.localizedDescription)"
    }
    await fixture.stop()
} catch {
    outcome.error = "\(error)"
}
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
print(String(decoding: try encoder.encode(outcome), as: UTF8.self))
exit(outcome.loaded ? 0 : 1)
