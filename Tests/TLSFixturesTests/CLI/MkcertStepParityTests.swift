import Foundation
import Testing
@testable import TLSFixtures

/// Issue 36, item 14: what mkcert and step users reach for first — durations, a leaf-only PEM, the PKCS#12 password,
/// `cert show` of a .p12, a CSR or standard input, `--format pem`, making a CSR, and Java's cacerts — each checked with
/// the tool its users would check it with (openssl, keytool).
@Suite("cert and ca as mkcert and step users expect", .requires(Tools.openssl), .ownThreads)
struct MkcertStepParityTests {
    static func newStore(_ label: String) throws -> (store: String, folder: String) {
        let folder = TestEnvironment.temporaryDirectory(label).path
        let store = folder + "/store"
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        return (store, folder)
    }

    /// notBefore and notAfter of the certificate `file`, from `cert show --json`.
    static func validity(_ file: String) throws -> (Date, Date) {
        let shown = try TestEnvironment.tlsFixtures(["cert", "show", "--json", file])
        let summaries = try #require(try JSONSerialization.jsonObject(with: shown.stdoutData) as? [[String: Any]])
        let format = ISO8601DateFormatter()
        let start = try #require((summaries.first?["notBefore"] as? String).flatMap { format.date(from: $0) })
        let end = try #require((summaries.first?["notAfter"] as? String).flatMap { format.date(from: $0) })
        return (start, end)
    }

    @Test("--not-after 2h and --not-before -1h: durations as step takes them")
    func durations() throws {
        let (store, folder) = try Self.newStore("durations")
        let before = Date()
        let issued = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "short", "--host", "a.test",
                                                      "--not-before", "-1h", "--not-after", "2h", "--cert-file", folder + "/short.pem"])
        #expect(issued.status == 0, "\(issued.combined)")
        let (start, end) = try Self.validity(folder + "/short.pem")
        // Seconds are cut from the dates; a minute either way is generous for a command that takes less.
        #expect(abs(start.timeIntervalSince(before) + 3_600) < 60, "notBefore \(start)")
        #expect(abs(end.timeIntervalSince(before) - 7_200) < 120, "notAfter \(end)")
        // A start alone is a certificate not valid yet, of the usual length (it was one ending before it started).
        #expect(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "later", "--host", "a.test",
                                                 "--not-before", "2050-01-01", "--cert-file", folder + "/later.pem"]).status == 0)
        let (laterStart, laterEnd) = try Self.validity(folder + "/later.pem")
        #expect(laterStart == ISO8601DateFormatter().date(from: "2050-01-01T00:00:00Z") && laterEnd.timeIntervalSince(laterStart) == 397 * 86_400)
        for bad in ["2x", "h", "1h-2m"] {
            CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "bad",
                                                                              "--host", "a.test", "--not-after", bad]),
                                             mentioning: ["--not-after", "duration"])
        }
    }

    @Test("--leaf-file is the certificate alone, --cert-file the chain; --p12-password protects the .p12")
    func leafFileAndPKCS12Password() throws {
        let (store, folder) = try Self.newStore("leaf")
        let issued = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "api", "--host", "a.test",
                                                      "--issuer", "intermediate", "--leaf-file", folder + "/leaf.pem",
                                                      "--cert-file", folder + "/chain.pem", "--p12-file", folder + "/api.p12",
                                                      "--p12-password", "changeit"])
        #expect(issued.status == 0 && issued.stdout.contains("password \"changeit\""), "\(issued.combined)")
        let count = { (file: String) in (try? String(contentsOfFile: file, encoding: .utf8))?.components(separatedBy: "BEGIN CERTIFICATE").count ?? 0 }
        #expect(count(folder + "/leaf.pem") == 2 && count(folder + "/chain.pem") == 3, "one certificate, then two")
        let verify = try TestEnvironment.openssl(["verify", "-CAfile", store + "/ca/root.pem", "-untrusted", folder + "/chain.pem",
                                                  folder + "/leaf.pem"])
        #expect(verify.status == 0, "\(verify.combined)")
        let opened = try TestEnvironment.openssl(["pkcs12", "-in", folder + "/api.p12", "-passin", "pass:changeit", "-nokeys"])
        #expect(opened.status == 0 && opened.stdout.contains("BEGIN CERTIFICATE"), "\(opened.combined)")
        let wrong = try TestEnvironment.openssl(["pkcs12", "-in", folder + "/api.p12", "-passin", "pass:\(PKCS12Export.defaultPassword)",
                                                 "-nokeys"])
        #expect(wrong.status != 0, "the kit's default password opened it too")
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "x", "--host", "a.test",
                                                                          "--p12-password", "changeit"]),
                                         mentioning: ["--p12-password", "--p12-file"])
    }

    @Test("cert show reads a .p12 (trying the usual passwords), a CSR and standard input; --format pem prints PEM")
    func showEverything() throws {
        let (store, folder) = try Self.newStore("show")
        #expect(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "api", "--host", "a.test",
                                                 "--p12-file", folder + "/mkcert.p12", "--p12-password", "changeit",
                                                 "--cert-file", folder + "/api.pem"]).status == 0)
        let p12 = try TestEnvironment.tlsFixtures(["cert", "show", folder + "/mkcert.p12"])
        #expect(p12.status == 0 && p12.stdout.contains("CN=a.test"), "\(p12.combined)")
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "show", "--password", "nope", folder + "/mkcert.p12"]),
                                         mentioning: ["PKCS#12", "password"])
        let pem = try TestEnvironment.tlsFixtures(["cert", "show", "--format", "pem", folder + "/mkcert.p12"])
        #expect(pem.stdoutData == (try Data(contentsOf: URL(fileURLWithPath: folder + "/api.pem"))), "\(pem.stdout)")
        let piped = try Subprocess.run([TestEnvironment.cli, "cert", "show", "-"], stdin: try Data(contentsOf: URL(fileURLWithPath: folder + "/api.pem")))
        #expect(piped.status == 0 && piped.stdout.contains("CN=a.test"), "\(piped.combined)")
        let csr = try TestEnvironment.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                               "-keyout", folder + "/r.key", "-subj", "/CN=r.test", "-addext", "subjectAltName=DNS:r.test",
                                               "-out", folder + "/r.csr"])
        #expect(csr.status == 0, "\(csr.combined)")
        let request = try TestEnvironment.tlsFixtures(["cert", "show", folder + "/r.csr"])
        #expect(request.status == 0 && request.stdout.contains("CN=r.test") && request.stdout.contains("DNS:r.test"), "\(request.combined)")
        let pin = try TestEnvironment.openssl(["pkey", "-in", folder + "/r.key", "-pubout", "-outform", "DER"])
        #expect(request.stdout.contains("sha256/" + Digest.sha256(pin.stdoutData).base64EncodedString()), "\(request.stdout)")
    }

    @Test("cert csr makes a request openssl verifies, with the names asked for, that cert issue --csr signs")
    func makeCSR() throws {
        let (store, folder) = try Self.newStore("csr")
        let made = try TestEnvironment.tlsFixtures(["cert", "csr", "--host", "b.test", "--host", "127.0.0.1", "--out", folder + "/b.csr",
                                                    "--key-out", folder + "/b.key"])
        #expect(made.status == 0, "\(made.combined)")
        let verified = try TestEnvironment.openssl(["req", "-in", folder + "/b.csr", "-noout", "-verify", "-text"])
        #expect(verified.status == 0 && verified.combined.contains("verify OK") && verified.stdout.contains("DNS:b.test")
                && verified.stdout.contains("IP Address:127.0.0.1"), "\(verified.combined)")
        #expect(FileSystem.mode(of: URL(fileURLWithPath: folder + "/b.key")) == 0o600)
        let signed = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "b", "--csr", folder + "/b.csr",
                                                      "--cert-file", folder + "/b.pem"])
        #expect(signed.status == 0, "\(signed.combined)")
        let check = try TestEnvironment.openssl(["x509", "-in", folder + "/b.pem", "-noout", "-pubkey"])
        let key = try TestEnvironment.openssl(["pkey", "-in", folder + "/b.key", "-pubout"])
        #expect(check.stdout == key.stdout && !check.stdout.isEmpty, "signed for another key")
        #expect(try TestEnvironment.openssl(["verify", "-CAfile", store + "/ca/root.pem", folder + "/b.pem"]).status == 0)
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "csr", "--host", "b.test", "--out", folder + "/c.csr"]),
                                         mentioning: ["--key-out"])
    }

    static var keytool: String? {
        ["/usr/bin/keytool", (ProcessInfo.processInfo.environment["JAVA_HOME"] ?? "/nonexistent") + "/bin/keytool"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("ca install --java puts the CA into the cacerts named, as a trusted entry keytool lists; uninstall takes it out",
          .enabled(if: keytool != nil, "needs a JDK's keytool"))
    func javaTrust() throws {
        let (store, folder) = try Self.newStore("java")
        let keytool = try #require(Self.keytool)
        // A keystore of the test's own: never the system's.
        let cacerts = folder + "/cacerts"
        let made = try Subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "other", "-file", store + "/ca/root.pem",
                                       "-keystore", cacerts, "-storepass", "changeit", "-storetype", "PKCS12"], timeout: 60)
        #expect(made.status == 0, "\(made.combined)")
        _ = try Subprocess.run([keytool, "-delete", "-alias", "other", "-keystore", cacerts, "-storepass", "changeit"], timeout: 60)
        let stores = ["--java", "--cacerts", cacerts, "--dir", store]
        let installed = try TestEnvironment.tlsFixtures(["ca", "install"] + stores)
        #expect(installed.status == 0 && installed.stdout.contains("java: installed — \(cacerts)"), "\(installed.combined)")
        let fingerprint = try TestEnvironment.openssl(["x509", "-in", store + "/ca/root.pem", "-noout", "-fingerprint", "-sha256"])
            .stdout.components(separatedBy: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        let listed = try Subprocess.run([keytool, "-list", "-v", "-keystore", cacerts, "-storepass", "changeit"], timeout: 60)
        #expect(listed.stdout.contains("trustedCertEntry") && listed.stdout.contains(fingerprint), "\(listed.stdout.prefix(2000))")
        #expect(try TestEnvironment.tlsFixtures(["ca", "install"] + stores).stdout.contains("java: already installed"))
        let removed = try TestEnvironment.tlsFixtures(["ca", "uninstall"] + stores)
        #expect(removed.status == 0 && removed.stdout.contains("java: removed"), "\(removed.combined)")
        let after = try Subprocess.run([keytool, "-list", "-v", "-keystore", cacerts, "-storepass", "changeit"], timeout: 60)
        #expect(!after.stdout.contains(fingerprint), "still in the keystore")
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "install", "--java", "--cacerts", folder + "/none", "--dir", store]),
                                         mentioning: ["no Java cacerts keystore", folder + "/none"])
    }

    static var java: String? {
        [(ProcessInfo.processInfo.environment["JAVA_HOME"] ?? "/nonexistent") + "/bin/java", "/usr/bin/java"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The JDK's own keystore, copied: the test changes only its copy.
    static var jdkCacerts: URL? {
        guard let java else { return nil }
        let cacerts = URL(fileURLWithPath: java).resolvingSymlinksInPath().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("lib/security/cacerts").resolvingSymlinksInPath()
        return FileManager.default.fileExists(atPath: cacerts.path) ? cacerts : nil
    }

    /// Proof by difference with Java's own TLS stack (JSSE, HttpsURLConnection): the same client, the same fixture,
    /// refused before the CA is installed in its cacerts, served after, refused again once it is uninstalled.
    @Test("a Java client trusts a fixture through the cacerts ca install --java changed, and not before or after",
          .enabled(if: keytool != nil && jdkCacerts != nil, "needs a JDK (java, keytool, lib/security/cacerts)"))
    func javaClientTrusts() async throws {
        let folder = TestEnvironment.temporaryDirectory("java-client")
        let store = CertificateStore(directory: folder.appendingPathComponent("store"))
        _ = try await offThePool { try store.initializeCA() }
        let cacerts = folder.appendingPathComponent("cacerts")
        try FileManager.default.copyItem(at: try #require(Self.jdkCacerts), to: cacerts)
        chmod(cacerts.path, 0o644)
        let client = folder.appendingPathComponent("Fetch.java")
        try Data("""
            import java.net.URL;
            import javax.net.ssl.HttpsURLConnection;
            public class Fetch {
                public static void main(String[] args) throws Exception {
                    try {
                        HttpsURLConnection connection = (HttpsURLConnection) new URL(args[0]).openConnection();
                        connection.setConnectTimeout(10000);
                        connection.setReadTimeout(15000);
                        System.out.println("status " + connection.getResponseCode());
                    } catch (Exception e) {
                        System.out.println("refused " + e);
                        System.exit(1);
                    }
                }
            }
            """.utf8).write(to: client)
        let java = try #require(Self.java)
        let stores = ["--java", "--cacerts", cacerts.path, "--dir", store.directory.path]
        try await withFixture("ats-compliant", store: store) { fixture in
            let fetch = [java, "-Djavax.net.ssl.trustStore=\(cacerts.path)", "-Djavax.net.ssl.trustStorePassword=changeit",
                         client.path, "https://localhost:\(fixture.port)/"]
            let before = try await Subprocess.runAwaiting(fetch, timeout: 120)
            #expect(before.status != 0 && before.stdout.contains("PKIX"), "trusted before the install: \(before.combined)")
            let installed = try await Subprocess.runAwaiting([TestEnvironment.cli, "ca", "install"] + stores)
            #expect(installed.status == 0, "\(installed.combined)")
            let trusted = try await Subprocess.runAwaiting(fetch, timeout: 120)
            #expect(trusted.status == 0 && trusted.stdout.contains("status 200"), "\(trusted.combined)")
            let removed = try await Subprocess.runAwaiting([TestEnvironment.cli, "ca", "uninstall"] + stores)
            #expect(removed.status == 0, "\(removed.combined)")
            let after = try await Subprocess.runAwaiting(fetch, timeout: 120)
            #expect(after.status != 0 && after.stdout.contains("PKIX"), "trusted after the uninstall: \(after.combined)")
        }
    }
}
