import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures

/// OkHttp with a CertificatePinner, judged by the differential check from the fixtures' own records: the matrix's
/// OkHttp client (Matrix/Clients/OkHttpMatrixClient.java, Debian's libokhttp-java on the JDK) pinning the published
/// `pinned` key and the backup, as `pins --android` prints them, refuses pin-rotated-key and pin-mitm after the
/// handshake while its control `pinned` is answered, and loads pin-reissued. And docs/android.md's instrumented-test
/// helper, run on the JDK against a real `serve` through its proxy, judges the same way.
@Suite("OkHttp and docs/android.md's helper, live: pins refused and accepted, proven from the fixtures' records",
       .enabled(if: MatrixEnvironment.required || OkHttpLoad.installed, OkHttpLoad.skipReason))
struct OkHttpPinningTests {
    static let store = TestEnvironment.suiteStore("OkHttpPinning")

    static func caFile() throws -> String {
        try TestEnvironment.file(try store.ca().certificate.pem, name: "ca.pem")
    }

    /// The published pins, from a `pinned` fixture of this store.
    static func publishedPins() async throws -> [String] {
        let pinned = try await FixtureServer.start("pinned", store: store)
        let pins = ["sha256/" + pinned.pins.pinnedLeaf, "sha256/" + pinned.pins.backup]
        await pinned.stop()
        return pins
    }

    @Test("pin-rotated-key: refused after the handshake, its control pinned answered; without the pinner, accepted")
    func rotatedKey() async throws {
        try #require(OkHttpLoad.installed, "OkHttp's jars or java are missing: scripts/ensure-deps.sh matrix-test")
        let pinning = OkHttpLoad(roots: [try Self.caFile()], pins: try await Self.publishedPins())
        let verdict = try await FixtureServer.expectRefused("pin-rotated-key", store: Self.store, pinning.load)
        #expect(verdict.control == "pinned" && verdict.step == .afterHandshake, "\(verdict)")
        #expect(verdict.refusalEvidence.contains("without sending a request"), "\(verdict)")
        #expect(verdict.controlEvidence.contains("GET / was answered 200"), "\(verdict)")
        // OkHttp's own words for it, as its users see them.
        let failure = await #expect(throws: OkHttpLoad.Refused.self) {
            try await withFixture("pin-rotated-key", store: Self.store) { try await pinning.load($0.url) }
        }
        #expect(failure?.detail.contains("Certificate pinning failure!") == true, "\(String(describing: failure))")
        let unpinned = OkHttpLoad(roots: [try Self.caFile()], pins: nil)
        let accepted = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("pin-rotated-key", store: Self.store, unpinned.load)
        }
        #expect(accepted?.code == .accepted, "\(String(describing: accepted))")
    }

    @Test("pin-mitm: trusting the interception root, the pin refuses it; pin-reissued, on the pinned key, loads")
    func interceptionAndReissue() async throws {
        try #require(OkHttpLoad.installed, "OkHttp's jars or java are missing: scripts/ensure-deps.sh matrix-test")
        let roots = try TestEnvironment.file(try Self.store.authority(.interceptionRoot).certificate.pem,
                                             name: "interception.pem")
        let pins = try await Self.publishedPins()
        let pinning = OkHttpLoad(roots: [try Self.caFile(), roots], pins: pins)
        let verdict = try await FixtureServer.expectRefused("pin-mitm", store: Self.store, pinning.load)
        #expect(verdict.step == .afterHandshake && verdict.refusalEvidence.contains("without sending a request"),
                "\(verdict)")
        try await withFixture("pin-reissued", store: Self.store) { fixture in
            try await fixture.expectAccepted { try await pinning.load(fixture.url) }
        }
    }

    /// docs/android.md's `TlsFixtures` class compiled from the page, with a harness standing in for the Kotlin test:
    /// OkHttp through the runner's proxy to the qualified names, as on an emulator started with -http-proxy.
    @Test("docs/android.md's TlsFixtures, from the page, judges expired and the pins against a real serve")
    func documentedHelper() async throws {
        try #require(OkHttpLoad.installed && OkHttpLoad.androidJSON,
                     "OkHttp, java or org.json (libandroid-json-java) are missing: scripts/ensure-deps.sh matrix-test")
        let page = try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/android.md"),
                              encoding: .utf8)
        let helper = try #require(page.components(separatedBy: "<!-- android-helper TlsFixtures.java -->\n```java\n")
            .dropFirst().first?.components(separatedBy: "\n```").first, "docs/android.md has no helper block")
        let folder = TestEnvironment.temporaryDirectory("android-helper")
        try Data(helper.utf8).write(to: folder.appendingPathComponent("TlsFixtures.java"))
        try Data(Self.harness.utf8).write(to: folder.appendingPathComponent("AndroidExampleHarness.java"))
        let classes = folder.appendingPathComponent("classes").path
        let classPath = (OkHttpLoad.jars + [OkHttpLoad.androidJSONJar]).joined(separator: ":")
        let compiled = try await Subprocess.runAwaiting(["javac", "-d", classes, "-cp", classPath,
                                                         folder.appendingPathComponent("TlsFixtures.java").path,
                                                         folder.appendingPathComponent("AndroidExampleHarness.java").path],
                                                        timeout: 300)
        try #require(compiled.status == 0, "javac: \(compiled.combined)")
        let runner = try await ControlAPIRunner.start(["ats-compliant"], store: Self.store)
        defer { runner.stop() }
        let run = try await Subprocess.runAwaiting(["java", "-cp", classes + ":" + classPath, "AndroidExampleHarness",
                                                    runner.url, "\(runner.base)"], timeout: 300)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(run.status == 0, "\(run.combined)")
        #expect(lines.contains { $0.hasPrefix("PASS expired refused certificate") }, "\(run.combined)")
        #expect(lines.contains { $0.hasPrefix("PASS pin-rotated-key refused afterHandshake") && $0.contains(
            "control pinned accepted") }, "\(run.combined)")
        #expect(lines.contains { $0.hasPrefix("PASS pin-mitm refused afterHandshake") }, "\(run.combined)")
        // The client without pins: the helper fails it, saying it accepted the scenario.
        #expect(lines.contains { $0.hasPrefix("FAIL pin-rotated-key: your client accepted pin-rotated-key") },
                "\(run.combined)")
    }

    /// Stands in for the instrumented test: the app's clients (one trusting the kit's CA, one pinning too, one also
    /// trusting the interception root) through the runner's proxy.
    static let harness = """
        import java.io.ByteArrayInputStream;
        import java.net.InetSocketAddress;
        import java.net.Proxy;
        import java.nio.charset.StandardCharsets;
        import java.security.KeyStore;
        import java.security.cert.Certificate;
        import java.security.cert.CertificateFactory;
        import javax.net.ssl.SSLContext;
        import javax.net.ssl.TrustManager;
        import javax.net.ssl.TrustManagerFactory;
        import javax.net.ssl.X509TrustManager;
        import okhttp3.CertificatePinner;
        import okhttp3.OkHttpClient;
        import okhttp3.Request;
        import org.json.JSONObject;

        public class AndroidExampleHarness {
            public static void main(String[] args) throws Exception {
                TlsFixtures fixtures = new TlsFixtures(args[0], true);
                Proxy proxy = new Proxy(Proxy.Type.HTTP, new InetSocketAddress("localhost", Integer.parseInt(args[1])));
                try {
                    JSONObject pinned = fixtures.start("pinned");
                    JSONObject mitm = fixtures.start("pin-mitm");
                    String ca = pinned.getString("caPEM");
                    JSONObject pins = pinned.getJSONObject("pins");
                    CertificatePinner pinner = new CertificatePinner.Builder().add("*.fixtures.test",
                            "sha256/" + pins.getString("pinnedLeaf"), "sha256/" + pins.getString("backup")).build();
                    OkHttpClient trusting = client(proxy, null, ca);
                    report("expired", fixtures, trusting);
                    report("pin-rotated-key", fixtures, client(proxy, pinner, ca));
                    report("pin-mitm", fixtures, client(proxy, pinner, ca + mitm.getString("interceptionRootPEM")));
                    report("pin-rotated-key", fixtures, trusting);
                } finally {
                    fixtures.stopAll();
                }
            }

            static void report(String scenario, TlsFixtures fixtures, OkHttpClient client) {
                try {
                    System.out.println("PASS " + fixtures.expectRefused(scenario, url ->
                        client.newCall(new Request.Builder().url(url).build()).execute().close()));
                } catch (Throwable e) {
                    System.out.println("FAIL " + scenario + ": " + e.getMessage());
                }
            }

            static OkHttpClient client(Proxy proxy, CertificatePinner pinner, String pem) throws Exception {
                KeyStore roots = KeyStore.getInstance(KeyStore.getDefaultType());
                roots.load(null, null);
                int index = 0;
                for (Certificate certificate : CertificateFactory.getInstance("X.509")
                        .generateCertificates(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)))) {
                    roots.setCertificateEntry("ca" + index++, certificate);
                }
                TrustManagerFactory factory =
                        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                factory.init(roots);
                X509TrustManager trust = (X509TrustManager) factory.getTrustManagers()[0];
                SSLContext context = SSLContext.getInstance("TLS");
                context.init(null, new TrustManager[] {trust}, null);
                OkHttpClient.Builder builder = new OkHttpClient.Builder().proxy(proxy)
                        .sslSocketFactory(context.getSocketFactory(), trust).retryOnConnectionFailure(false);
                if (pinner != null) builder.certificatePinner(pinner);
                return builder.build();
            }
        }
        """
}

/// The matrix's OkHttp client as a load the checks take: one JVM per load, one URL, the roots it trusts and the pins it
/// checks. It returns when the fixture answered 200 and throws `Refused` with OkHttp's own words otherwise.
struct OkHttpLoad: Sendable {
    static let jars = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]
    static let androidJSONJar = "/usr/share/java/com.android.json.jar"
    /// The jars, and a `java` on PATH (looked up, not run: this is read inside async tests).
    static let installed = jars.allSatisfy { FileManager.default.fileExists(atPath: $0) }
        && (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/java")
        }
    static let androidJSON = FileManager.default.fileExists(atPath: androidJSONJar)
    static let skipReason: Comment = "OkHttp (libokhttp-java) or java is not installed: make test installs them"

    /// PEM files of the roots it trusts.
    var roots: [String]
    /// `sha256/…` pins for the host, or nil for no pinner.
    var pins: [String]?

    struct Refused: Error, CustomStringConvertible {
        var detail: String
        var description: String { detail }
    }

    var load: @Sendable (URL) async throws -> Void { { try await self($0) } }

    func callAsFunction(_ url: URL) async throws {
        let folder = TestEnvironment.temporaryDirectory("okhttp")
        let roots = folder.appendingPathComponent("roots.pem")
        try self.roots.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }.reduce(Data(), +).write(to: roots)
        let client = TestEnvironment.packageRoot.appendingPathComponent("Matrix/Clients/OkHttpMatrixClient.java")
        // The matrix client's command line: CA.pem HOST PORT [PINS]; one line out, exit 0 when it read an HTTP 200.
        var arguments = ["java", "-cp", Self.jars.joined(separator: ":"), client.path, roots.path,
                         url.host ?? "localhost", "\(url.port ?? 443)"]
        if let pins { arguments.append(pins.joined(separator: ",")) }
        let result = try await Subprocess.runAwaiting(arguments, timeout: 120)
        let line = result.stdout.split(separator: "\n").first.map(String.init) ?? ""
        guard result.status == 0 || result.status == 1, !line.isEmpty else {
            throw Refused(detail: "the OkHttp client did not run: \(result.combined)")
        }
        if result.status != 0 { throw Refused(detail: line) }
    }
}
