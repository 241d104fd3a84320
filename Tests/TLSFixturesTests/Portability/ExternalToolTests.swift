import Foundation
import Testing

// The tool checks of Support/ExternalTools.swift, on the texts macOS's own tools print (recorded from public
// transcripts of macOS 14–26: /usr/bin/openssl is LibreSSL 3.3.6, /usr/bin/curl is curl 8.7.1 on LibreSSL, the
// Command Line Tools' python3 3.9 links LibreSSL 2.8.3) and Homebrew's. No Mac here: these are the Linux-side check
// that a Mac skips what it must, with the reason, and prefers Homebrew's keg.
@Suite("macOS: the tests' judges are located and identified")
struct ExternalToolTests {
    // MARK: Where each tool is looked for

    @Test("on macOS, Homebrew's keg-only openssl@3 and curl come before PATH (where /usr/bin's are LibreSSL)")
    func homebrewFirstOnDarwin() {
        let environment = ["PATH": "/usr/bin:/bin:/usr/sbin"]
        let installed: Set<String> = ["/usr/bin/openssl", "/opt/homebrew/opt/openssl@3/bin/openssl", "/usr/bin/curl",
                                      "/usr/local/opt/curl/bin/curl", "/usr/bin/python3", "/opt/homebrew/bin/python3"]
        func locate(_ kind: ExternalTool.Kind, _ os: HostOS, _ environment: [String: String] = environment) -> String? {
            ToolLocator.locate(kind, os: os, environment: environment, isExecutable: installed.contains)
        }
        #expect(locate(.openssl, .darwin) == "/opt/homebrew/opt/openssl@3/bin/openssl")
        #expect(locate(.curl, .darwin) == "/usr/local/opt/curl/bin/curl")   // Intel Homebrew
        #expect(locate(.pythonSSL, .darwin) == "/opt/homebrew/bin/python3")
        // Linux: PATH, as before.
        #expect(locate(.openssl, .linux) == "/usr/bin/openssl")
        #expect(locate(.curl, .linux) == "/usr/bin/curl")
        // An explicit choice wins everywhere.
        let chosen = environment.merging(["TLS_FIXTURES_TEST_OPENSSL": "/usr/bin/openssl"]) { $1 }
        #expect(locate(.openssl, .darwin, chosen) == "/usr/bin/openssl")
        // HOMEBREW_PREFIX (a custom prefix) is tried first.
        let custom = ToolLocator.candidates(.openssl, os: .darwin, environment: ["HOMEBREW_PREFIX": "/Users/me/brew"])
        #expect(custom.first == "/Users/me/brew/opt/openssl@3/bin/openssl")
    }

    @Test("ss and setpriv are looked for in /usr/sbin and /sbin too, which a normal user's PATH may lack")
    func sbinOnLinux() {
        let found = ToolLocator.locate(.ss, os: .linux, environment: ["PATH": "/usr/bin"], isExecutable: { $0 == "/usr/sbin/ss" })
        #expect(found == "/usr/sbin/ss")
    }

    // MARK: What each tool is

    @Test("macOS's /usr/bin/openssl (LibreSSL) and OpenSSL 1.1 are refused, with Homebrew's as the fix; OpenSSL 3.x is the judge")
    func opensslIdentity() {
        let libre = ToolIdentity.judge(.openssl, path: "/usr/bin/openssl", versionOutput: "LibreSSL 3.3.6\n", on: .darwin)
        #expect(libre.0 == "LibreSSL 3.3.6")
        #expect(libre.1?.contains("LibreSSL 3.3.6, not OpenSSL") == true && libre.1?.contains("brew install openssl@3") == true, "\(libre.1 ?? "")")
        let old = ToolIdentity.judge(.openssl, path: "/usr/bin/openssl", versionOutput: "OpenSSL 1.1.1w  11 Sep 2023\n", on: .linux)
        #expect(old.1?.contains("OpenSSL 3 or later") == true)
        for good in ["OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)",
                     "OpenSSL 3.6.0 1 Oct 2025 (Library: OpenSSL 3.6.0 1 Oct 2025)"] {
            #expect(ToolIdentity.judge(.openssl, path: "/x/openssl", versionOutput: good, on: .darwin).1 == nil, "\(good)")
        }
        #expect(ToolIdentity.judge(.openssl, path: "/x/openssl", versionOutput: nil, on: .linux).1?.contains("did not say what it is") == true)
    }

    @Test("Apple's curl (LibreSSL, the Keychain) is refused; curl on OpenSSL 3 is the judge, also in a multi-TLS build")
    func curlIdentity() {
        let apple = "curl 8.7.1 (x86_64-apple-darwin25.0) libcurl/8.7.1 (SecureTransport) LibreSSL/3.3.6 zlib/1.2.12 nghttp2/1.68.1"
        #expect(ToolIdentity.curlDefaultTLSBackend(apple) == "LibreSSL/3.3.6")
        let refused = ToolIdentity.judge(.curl, path: "/usr/bin/curl", versionOutput: apple, on: .darwin).1
        #expect(refused?.contains("LibreSSL") == true && refused?.contains("Keychain") == true && refused?.contains("brew install curl") == true,
                "\(refused ?? "")")
        let homebrew = "curl 8.16.0 (aarch64-apple-darwin24.6.0) libcurl/8.16.0 OpenSSL/3.6.0 zlib/1.2.12 brotli/1.1.0 libssh2/1.11.1 nghttp2/1.67.1"
        #expect(ToolIdentity.judge(.curl, path: "/opt/homebrew/opt/curl/bin/curl", versionOutput: homebrew, on: .darwin).1 == nil)
        let debian = "curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1 OpenSSL/3.0.19 zlib/1.2.13 brotli/1.0.9 zstd/1.5.4"
        #expect(ToolIdentity.judge(.curl, path: "/usr/bin/curl", versionOutput: debian, on: .linux).1 == nil)
        // A build with several TLS libraries puts the ones it does not use by default in parentheses.
        #expect(ToolIdentity.curlDefaultTLSBackend("curl 8.5.0 (x) libcurl/8.5.0 (OpenSSL/3.2.0) GnuTLS/3.8.3") == "GnuTLS/3.8.3")
        #expect(ToolIdentity.judge(.curl, path: "/x/curl", versionOutput: "curl 8.5.0 (x) libcurl/8.5.0 GnuTLS/3.8.3", on: .linux).1 != nil)
    }

    @Test("the Command Line Tools' python3 (LibreSSL) is refused for Python's ssl, but runs scripts")
    func pythonIdentity() {
        let tools = "Python 3.9.6 | LibreSSL 2.8.3"
        let refused = ToolIdentity.judge(.pythonSSL, path: "/usr/bin/python3", versionOutput: tools, on: .darwin).1
        #expect(refused?.contains("LibreSSL 2.8.3") == true && refused?.contains("brew install python3") == true, "\(refused ?? "")")
        #expect(ToolIdentity.judge(.python, path: "/usr/bin/python3", versionOutput: tools, on: .darwin).1 == nil)
        let homebrew = "Python 3.13.7 | OpenSSL 3.5.2 5 Aug 2025"
        #expect(ToolIdentity.judge(.pythonSSL, path: "/opt/homebrew/bin/python3", versionOutput: homebrew, on: .darwin).1 == nil)
        #expect(ToolIdentity.judge(.python, path: "/usr/bin/python3", versionOutput: "Python 3.6.15 | OpenSSL 1.1.1", on: .linux).1 != nil)
    }

    @Test("on macOS the NSS browser check, ss and setpriv are skipped with the reason, whatever is installed")
    func linuxOnlyTools() {
        #expect(Tools.probe(.chromium, os: .darwin, environment: [:]).problem?.contains("Keychain") == true)
        #expect(Tools.probe(.ss, os: .darwin, environment: [:]).problem?.contains("Linux only") == true)
        #expect(Tools.probe(.setpriv, os: .darwin, environment: [:]).problem?.contains("Linux only") == true)
        let missing = Tools.probe(.openssl, os: .darwin, environment: ["PATH": "/nonexistent", "HOMEBREW_PREFIX": "/nonexistent"])
        #expect(missing.path == nil && missing.problem?.contains("brew install openssl@3") == true, "\(missing)")
    }

    @Test("a real program that says it is LibreSSL is refused, and the trait turns that into a skip with the reason")
    func fakeLibreSSL() throws {
        let folder = TestEnvironment.temporaryDirectory("fake-openssl")
        let fake = folder.appendingPathComponent("openssl")
        try "#!/bin/sh\necho 'LibreSSL 3.3.6'\n".write(to: fake, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        let tool = Tools.probe(.openssl, os: .darwin, environment: ["TLS_FIXTURES_TEST_OPENSSL": fake.path])
        #expect(tool.path == fake.path && tool.identity == "LibreSSL 3.3.6" && !tool.isUsable, "\(tool)")
        // What a test that forgot its trait gets instead of a run with the wrong judge.
        #expect(ExternalToolUnavailable(tool: tool).description.contains(".requires(Tools.openssl)"))
    }

    @Test("this machine's judges are what the suite assumes (they are installed by `make test` on Linux)")
    func thisMachine() throws {
        for tool in [Tools.openssl, Tools.curl, Tools.pythonSSL] where tool.path != nil {
            #expect(tool.identity != nil, "\(tool)")
        }
        #if os(Linux)
        // `make test` installs these on Debian; a machine without them skips the tests that use them, and says why.
        if let identity = Tools.openssl.identity { #expect(identity.hasPrefix("OpenSSL 3") == Tools.openssl.isUsable) }
        #endif
    }
}
