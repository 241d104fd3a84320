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
//   tls-fixtures-client-check SCENARIO [URL-KIND] [--expect refused|accepted] [--without-proxy-environment]
//
// URL-KIND: qualified (default), domain, localhost, wrong-port (the qualified name on a port no fixture has). With
// --expect, the load runs inside `RemoteFixture.expectRefused` or `expectAccepted`, and `judgement` is "passed" or the
// failure's text; exit 0 when it passed. --without-proxy-environment leaves the proxy out, as a new user's test does.
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
    var judgement: String?
}

let arguments = Array(CommandLine.arguments.dropFirst())

// `--report-card FOLDER [FAMILY]`: URLSession's report card over every scenario the runner serves (and each one's
// control), by `localhost` (as the client matrix judged it), written to FOLDER; prints the summary line; exit 0 when
// nothing is unexpected, 3 when something is.
if arguments.first == "--report-card", arguments.count >= 2 {
    do {
        let fixtures = RemoteFixtures(ttl: 120)
        #if os(Linux)
        for (variable, value) in fixtures.proxy.environment { setenv(variable, value, 1) }
        #endif
        let configuration = URLSessionConfiguration.fixtures(through: fixtures.proxy)
        configuration.timeoutIntervalForRequest = 15
        let session = URLSession(configuration: configuration)
        let family: ReportCard.Family = arguments.count > 2 ? .matrix(arguments[2]) : .verifying
        let card = try await fixtures.reportCard(client: "URLSession (FoundationNetworking)", family: family,
                                                 url: .localhost, to: URL(fileURLWithPath: arguments[1])) { url in
            try await session.data(from: url)
        }
        print(card.summaryLine)
        exit(card.counts[.unexpected] == nil ? 0 : 3)
    } catch {
        print("error: \(error)")
        exit(1)
    }
}

guard let name = arguments.first else {
    FileHandle.standardError.write(Data("usage: tls-fixtures-client-check SCENARIO [qualified|domain|localhost]\n".utf8))
    exit(64)
}
let positional = arguments.dropFirst().filter { !$0.hasPrefix("--") && !["refused", "accepted"].contains($0) }
let kind = positional.first ?? "qualified"
let expecting = arguments.firstIndex(of: "--expect").flatMap { arguments.dropFirst($0 + 1).first }
let withProxyEnvironment = !arguments.contains("--without-proxy-environment")
var outcome = Outcome(scenario: name, url: "", loaded: false)
do {
    let fixture = try await RemoteFixtures(ttl: 60).start(name)
    let url: URL
    switch kind {
    case "domain": url = fixture.domainURLs.first ?? fixture.qualifiedURL
    case "localhost": url = fixture.url
    case "wrong-port":
        var components = URLComponents(url: fixture.qualifiedURL, resolvingAgainstBaseURL: false)!
        components.port = fixture.port == 65_535 ? 1 : fixture.port + 1
        url = components.url!
    default: url = fixture.qualifiedURL
    }
    outcome.url = url.absoluteString
    guard let proxy = fixture.proxy else { throw RemoteFixtureError.invalidScenario("the runner names no proxy") }
    #if os(Linux)
    // FoundationNetworking ignores connectionProxyDictionary; the libcurl under it reads the proxy from the environment.
    if withProxyEnvironment {
        for (variable, value) in proxy.environment { setenv(variable, value, 1) }
    }
    #endif
    let configuration = URLSessionConfiguration.fixtures(through: proxy)
    configuration.timeoutIntervalForRequest = 15
    let session = URLSession(configuration: configuration)
    struct Served: Decodable { var scenario: String }
    // The load, noting what it got or threw; rethrown for the expectation to judge.
    let load = { () async throws -> Void in
        do {
            let (data, response) = try await session.data(from: url)
            outcome.status = (response as? HTTPURLResponse)?.statusCode
            outcome.loaded = outcome.status == 200
            outcome.servedScenario = (try? JSONDecoder().decode(Served.self, from: data))?.scenario
        } catch {
            let nsError = error as NSError
            outcome.error = "\(nsError.domain) \(nsError.code): \(nsError.localizedDescription)"
            throw error
        }
    }
    do {
        switch expecting {
        case "refused"?: try await fixture.expectRefused(load)
        case "accepted"?: try await fixture.expectAccepted(load)
        default: try? await load()
        }
        if expecting != nil { outcome.judgement = "passed" }
    } catch {
        outcome.judgement = "\(error)"
    }
    await fixture.stop()
} catch {
    outcome.error = "\(error)"
}
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
print(String(decoding: try encoder.encode(outcome), as: UTF8.self))
exit((expecting == nil ? outcome.loaded : outcome.judgement == "passed") ? 0 : 1)
