import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures
import TLSFixturesClient

// Issue 26: the README's "Testing an iOS app" as a new user walks it; each test judged from outside — a real runner,
// the CLI's exit status and output, openssl reading what was made.

/// `serve --domain` and `pins --domain`, for TrustKit (items 5 and 9).
@Suite("--domain: 10000-sans keeps its names, and pins for a name TrustKit accepts", .serialized)
struct DomainPathTests {
    static let domain = "fixtures.example.com"

    /// A new store whose CA permits `domain`, made by the CLI as the README says.
    static func domainStore() async throws -> URL {
        let directory = TestEnvironment.temporaryDirectory("domain-path").appendingPathComponent("store")
        let made = try await TestEnvironment.tlsFixturesAwaiting(
            ["ca", "init", "--domain", domain, "--dir", directory.path])
        #expect(made.status == 0, "\(made.combined)")
        return directory
    }

    /// The DNS names of a certificate, as openssl prints them.
    static func dnsNames(_ pem: Data) async throws -> [String] {
        let file = try TestEnvironment.file(pem, name: "leaf.pem")
        let text = try await TestEnvironment.opensslAwaiting(
            ["x509", "-in", file, "-noout", "-ext", "subjectAltName"]).stdout
        return text.components(separatedBy: CharacterSet(charactersIn: ", \n")).filter { $0.hasPrefix("DNS:") }
            .map { String($0.dropFirst(4)) }
    }

    @Test("10000-sans with a domain: still 10,000 names (its summary's count, the limit), NAME.DOMAIN among them",
          .requires(Tools.openssl))
    func tenThousandNamesWithADomain() async throws {
        let store = CertificateStore.at(try await Self.domainStore())
        let scenario = try ScenarioCatalog.builtIn.scenario(named: "10000-sans")
        let prepared = try store.prepare(scenario, domains: [Self.domain])
        let names = try await Self.dnsNames(try #require(prepared.credential).certificate.pem)
        #expect(names.count == 10_000 && Set(names).count == 10_000)
        #expect(names.contains("10000-sans.\(Self.domain)") && names.contains("10000-sans.fixtures.test"))
        #expect(names.contains("localhost"))

        // serve, as the README's TrustKit recipe runs it: it starts, and the scenario serves with its domain URL.
        let base = try ServeEndToEndTests.freePortBase()
        let serve = try ServeEndToEndTests.ServeProcess(["10000-sans", "--domain", Self.domain, "--port-base", "\(base)",
                                                         "--dir", store.directory.path, "--json"])
        defer { serve.kill() }
        let document = try #require(try await serve.document(
            timeout: 600), "serve --domain did not start: \(serve.errors)")
        let entry = try #require(document.scenarios.first { $0.name == "10000-sans" })
        #expect(entry.status == .serving, "\(entry)")
        #expect(entry.domainURLs?.first?.hasPrefix("https://10000-sans.\(Self.domain):") == true)
    }

    @Test("a scenario whose own names leave no room for NAME.DOMAIN: one line naming it, from the library and the CLI")
    func namesThatDoNotFit() async throws {
        let folder = TestEnvironment.temporaryDirectory("big-scenario")
        let hosts = (1...9_998).map { "\"h\($0).big.test\"" }.joined(separator: ",")
        let json = #"{"name": "big", "group": "custom", "summary": "s", "tls": {}, "#
            + #""certificate": {"extraHosts": [\#(hosts)]}, "expect": {"ats": "allow"}}"#
        try Data(json.utf8).write(to: folder.appendingPathComponent("big.json"))
        let scenario = try ScenarioCatalog.decode(Data(json.utf8), source: "big.json")

        let store = CertificateStore.at(try await Self.domainStore())
        let error = try #require(throws: ScenarioError.self) { try store.prepare(scenario, domains: [Self.domain]) }
        #expect(error.code == .domainNamesDoNotFit && error.name == "big")
        let text = "\(error)"
        #expect(text.contains("scenario \"big\" cannot also name big.\(Self.domain)"), "\(text)")
        #expect(text.contains("10001 subject alternative names"), "\(text)")

        let base = try ServeEndToEndTests.freePortBase()
        let served = try await TestEnvironment.tlsFixturesAwaiting(
            ["serve", "big", "--scenarios", folder.path, "--domain",
            Self.domain, "--port-base", "\(base)", "--dir", store.directory.path])
        CLIInputTests.expectOneLineError(served, mentioning: ["scenario \"big\"", "big.\(Self.domain)",
                                                              "without --domain"])
    }

    @Test("pins --domain: TrustKit and NSPinnedDomains for NAME.DOMAIN, the leaf that names it, the same key pin",
          .requires(Tools.openssl))
    func pinsForADomain() async throws {
        let store = try await Self.domainStore()
        let plain = try await TestEnvironment.tlsFixturesAwaiting(["pins", "pinned", "--dir", store.path])
        #expect(plain.status == 0, "\(plain.combined)")
        // Without a domain there is no TrustKit block (TrustKit would refuse a .test name at its start): the output says
        // how to get one TrustKit takes.
        #expect(plain.stdout.contains("TrustKit refuses pinned.fixtures.test"), "\(plain.stdout)")
        #expect(!plain.stdout.contains("kTSKPinnedDomains"), "a TrustKit configuration for a .test name: \(plain.stdout)")
        #expect(plain.stdout.contains("pins pinned --domain DOMAIN --dir \(store.path)"), "\(plain.stdout)")

        let pins = try await TestEnvironment.tlsFixturesAwaiting(
            ["pins", "pinned", "--domain", Self.domain, "--dir", store.path])
        #expect(pins.status == 0, "\(pins.combined)")
        #expect(pins.stdout.contains("\"pinned.\(Self.domain)\": ["), "kTSKPinnedDomains' key: \(pins.stdout)")
        #expect(pins.stdout.contains("<key>pinned.\(Self.domain)</key>"), "NSPinnedDomains: \(pins.stdout)")
        #expect(!pins.stdout.contains("pinned.fixtures.test") && !pins.stdout.contains("TrustKit refuses"),
                "\(pins.stdout)")
        // The .cer it wrote is the leaf that names NAME.DOMAIN (what serve --domain sends), on the same key.
        let cer = URL(fileURLWithPath: store.path).appendingPathComponent("exports/pinned.cer").path
        let text = try await TestEnvironment.opensslAwaiting(["x509", "-inform", "der", "-in", cer, "-noout",
                                                "-ext", "subjectAltName"])
        #expect(text.stdout.contains("DNS:pinned.\(Self.domain)"), "\(text.combined)")
        func leafPin(_ output: String) -> String? {
            output.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("leaf") }
                .map { String($0.split(separator: " ").last ?? "") }
        }
        #expect(leafPin(plain.stdout) != nil && leafPin(plain.stdout) == leafPin(pins.stdout))

        // A CA that does not permit the domain: the way out names this store.
        let other = TestEnvironment.temporaryDirectory("pins-other").appendingPathComponent("store with space").path
        let refused = try await TestEnvironment.tlsFixturesAwaiting(
            ["pins", "pinned", "--domain", Self.domain, "--dir", other])
        CLIInputTests.expectOneLineError(refused,
                                         mentioning: ["ca init --force --domain \(Self.domain) --dir '\(other)'"])
    }
}
