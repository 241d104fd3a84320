import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures
import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum TestEnvironment {
    /// The package checkout (this file is Tests/TLSFixturesTests/Support/TestEnvironment.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The folder holding the built products of this test run (also right under `--sanitize` or `--scratch-path`),
    /// and how it was found: from the file this code was loaded from, whichever runner loaded it (see ProductsDirectory).
    static let located: (directory: URL, source: ProductsDirectory.Source) = ProductsDirectory.locate()
    static var productsDirectory: URL { located.directory }

    /// The `tls-fixtures` executable built with the tests. Every CLI the tests start runs without the opt-in legacy
    /// helper (`make legacy-openssl`): what `serve` serves must not depend on whether that build exists in the checkout
    /// (`make test-legacy` tests the helper). Each child gets that in its own environment (`childEnvironment`), never
    /// by changing this process's while other tests read it.
    /// `TLS_FIXTURES_TEST_CLI` names another build to run instead (an older checkout's, to show that a new test fails
    /// on the code before the change it tests).
    static var cli: String {
        if let other = ProcessInfo.processInfo.environment["TLS_FIXTURES_TEST_CLI"], !other.isEmpty { return other }
        return productsDirectory.appendingPathComponent("tls-fixtures").path
    }

    /// What every child process the tests start adds to this process's environment: no legacy helper, and this
    /// process's id, so a `serve` it starts stops when it exits (`TestHooks.parentVariable`): a test process that
    /// crashes leaves no `serve` behind.
    static let childEnvironmentOverrides = [LegacyHelper.environmentVariable: "none",
                                            TestHooks.parentVariable: String(getpid())]

    /// This process's environment plus `childEnvironmentOverrides` plus `extra`: for a `Process` a test starts itself.
    static func childEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(childEnvironmentOverrides) { $1 }.merging(extra) { $1 }
    }

    /// The store of this run that the documentation's examples use as their default store (`TLS_FIXTURES_CERTS`), and
    /// that the Runner suites share. `make test` names a fresh folder for each run in `TLS_FIXTURES_TEST_STORE` and in
    /// `TLS_FIXTURES_CERTS`, so this process never sets either; under a bare `swift test` it is a fresh folder of this
    /// process's (see `useSharedStoreAsDefault`), never the store a developer's own `TLS_FIXTURES_CERTS` names. Nothing
    /// carries over from an earlier run: a store left by another version, or by a failed test, cannot decide this one.
    static let sharedStoreDirectory: URL = {
        if let named = ProcessInfo.processInfo.environment["TLS_FIXTURES_TEST_STORE"], !named.isEmpty {
            return URL(fileURLWithPath: named)
        }
        return runDirectory.appendingPathComponent("shared-store")
    }()
    static var sharedStore: CertificateStore { CertificateStore.at(sharedStoreDirectory) }

    /// A fresh folder for this test process's stores.
    static let runDirectory = temporaryDirectory("run")

    private static let suiteStores = NIOLockedValueBox([String: CertificateStore]())

    /// The store of one suite, made for this run: its CA, keys and leaves are the suite's alone, so no suite's
    /// results depend on what another did to a store.
    static func suiteStore(_ suite: String) -> CertificateStore { suiteStore(suite, seededWith: []) }

    /// `suiteStore(_:)` with the RSA-4096 and RSA-8192 scenario keys (10-60 s to make, far more on a busy machine)
    /// copied in from the shared store, made there once per run, so a suite serving every scenario does not make its
    /// own; they are keys only, every certificate is issued by the suite's own CA.
    ///
    /// Async, and the keys are made on a thread of their own: a test process on 2 cores has 2 cooperative threads, and
    /// tests that waited for these keys synchronously held both, so every other test in the process stood still while
    /// the RSA-8192 key was made (a fleet's 120 s wait for a scenario it had prepared ran out that way in CI).
    static func suiteStoreWithSlowKeys(_ suite: String) async -> CertificateStore {
        let keys = (try? await slowScenarioKeys.value) ?? []
        return suiteStore(suite, seededWith: keys)
    }

    /// The key files of `rsa4096` and `rsa8192` in the shared store, made there on first use (on a thread of their
    /// own); empty when making them failed.
    static func slowScenarioKeyFiles() async -> [URL] { (try? await slowScenarioKeys.value) ?? [] }

    private static func suiteStore(_ suite: String, seededWith keys: [URL]) -> CertificateStore {
        suiteStores.withLockedValue { stores in
            if let store = stores[suite] { return store }
            let directory = runDirectory.appendingPathComponent("suite-\(suite)")
            if !keys.isEmpty {
                let folder = directory.appendingPathComponent("keys")
                try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o700])
                chmod(directory.path, 0o700)
                for key in keys {
                    let target = folder.appendingPathComponent(key.lastPathComponent)
                    try? FileManager.default.copyItem(at: key, to: target)
                    chmod(target.path, 0o600)
                }
            }
            let store = CertificateStore.at(directory)
            stores[suite] = store
            return store
        }
    }

    /// The key files of `rsa4096` and `rsa8192` in the shared store, made there on first use, on a thread of their own
    /// (never a cooperative one).
    private static let slowScenarioKeys = Task<[URL], Error> {
        try await BlockingWork.blockingIO {
            for name in ["rsa4096", "rsa8192"] {
                let spec = try ScenarioCatalog.builtIn.scenario(named: name).certificate?.key ?? .rsa(bits: 2048)
                _ = try sharedStore.key(named: name, spec: spec)
            }
            let keys = sharedStore.directory.appendingPathComponent("keys")
            let names = try FileManager.default.contentsOfDirectory(atPath: keys.path)
                .filter { $0.hasPrefix("rsa4096.") || $0.hasPrefix("rsa8192.") }
            return names.map { keys.appendingPathComponent($0) }
        }
    }

    /// A fresh, empty directory, removed at process exit by the OS's tmp cleaning (never reused). Mode 0755 whatever
    /// the umask: tests use it as a store, and the store refuses a folder others can write (a umask of 002 is common).
    static func temporaryDirectory(_ label: String = "t") -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tls-fixtures-\(label)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, 0o755)
        return url
    }

    /// Runs the CLI.
    @discardableResult
    static func tlsFixtures(_ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 120) throws -> Subprocess.Result {
        try Subprocess.run([cli] + arguments, environment: environment, timeout: timeout)
    }

    /// `tlsFixtures`, awaited: for async tests, which must not hold one of the concurrency pool's threads while the CLI
    /// runs.
    @discardableResult
    static func tlsFixturesAwaiting(_ arguments: [String], environment: [String: String]? = nil,
                                    timeout: TimeInterval = 120) async throws -> Subprocess.Result {
        try await Subprocess.runAwaiting([cli] + arguments, environment: environment, timeout: timeout)
    }

    /// What a CLI run as "nobody" gets beside `childEnvironment`: `HOME=/tmp`, and a sanitizer's `log_path` (under
    /// `.build-*`, which nobody may not reach) swapped for standard error.
    static var nobodyEnvironment: [String: String] {
        var environment = ["HOME": "/tmp"]
        for name in ["ASAN_OPTIONS", "TSAN_OPTIONS"] {
            guard let options = ProcessInfo.processInfo.environment[name] else { continue }
            environment[name] = options.split(separator: ":").map { $0.hasPrefix("log_path=") ? "log_path=stderr" : String($0) }
                .joined(separator: ":")
        }
        return environment
    }

    /// Runs the CLI as "nobody" (uid 65534) when `asNobody`, else as the current user, with `HOME=/tmp`. Tests of
    /// unreadable and read-only stores need it when they run as root, because root ignores permission bits.
    /// "nobody" may not reach this checkout (a CI clone can sit in a 0700 directory), so a sanitizer's `log_path` under
    /// `.build-*` is swapped for standard error: a report then shows in the output these tests check, and fails them.
    static func tlsFixtures(asNobody: Bool, _ arguments: [String]) throws -> Subprocess.Result {
        let environment = asNobody ? nobodyEnvironment : ["HOME": "/tmp"]
        let prefix = asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        return try Subprocess.run(prefix + [cli] + arguments, environment: environment, timeout: 120)
    }

    /// `tlsFixtures(asNobody:_:)`, awaited.
    static func tlsFixturesAwaiting(asNobody: Bool, _ arguments: [String]) async throws -> Subprocess.Result {
        let environment = asNobody ? nobodyEnvironment : ["HOME": "/tmp"]
        let prefix = asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        return try await Subprocess.runAwaiting(prefix + [cli] + arguments, environment: environment, timeout: 120)
    }

    /// `openssl …`, awaited.
    @discardableResult
    static func opensslAwaiting(_ arguments: [String], stdin: Data? = nil) async throws -> Subprocess.Result {
        try await Subprocess.runAwaiting(["openssl"] + arguments, stdin: stdin, timeout: 60)
    }

    /// `openssl …`, the independent judge of what we generate.
    @discardableResult
    static func openssl(_ arguments: [String], stdin: Data? = nil) throws -> Subprocess.Result {
        try Subprocess.run(["openssl"] + arguments, stdin: stdin, timeout: 60)
    }

    /// Writes `data` to a new temporary file and returns its path.
    static func file(_ data: Data, name: String = "f.pem") throws -> String {
        let url = temporaryDirectory("file").appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    static var isRoot: Bool { getuid() == 0 }

    /// Set by .ci/run: CI installs everything the tests use, so every test and every check inside one must run there.
    static let isCI = ProcessInfo.processInfo.environment["TLS_FIXTURES_CI"] == "1"

    /// A check inside a test that this machine cannot make (no `::1`, say). In CI that is a failure naming the reason;
    /// elsewhere a `skipped part:` line, which `make test`'s summary lists with the skipped tests.
    static func skipPart(_ what: String, because reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if isCI {
            Issue.record("CI runs \(what), but it cannot run here: \(reason)", sourceLocation: sourceLocation)
        } else {
            print("skipped part: \(what): \(reason)")
        }
    }

    /// The documentation's examples call the API with its default store; point that default at the shared test store so
    /// tests never touch the developer's own CA. `make test` sets `TLS_FIXTURES_CERTS` to it before the test process
    /// starts, and then this changes nothing. Only a bare `swift test` sets it here, on first use: setenv while other
    /// tests may read the environment, which `make test` avoids.
    static func useSharedStoreAsDefault() {
        _ = defaultStoreConfigured
    }

    private static let defaultStoreConfigured: Void = {
        if ProcessInfo.processInfo.environment[CertificateStore.environmentVariable] != sharedStoreDirectory.path {
            setenv(CertificateStore.environmentVariable, sharedStoreDirectory.path, 1)
        }
    }()
}

/// Where the build put the products of this test run (the `tls-fixtures` CLI next to the test bundle).
///
/// Not from argv[0] or `Bundle.main`: on macOS the tests are a bundle (`…/debug/X.xctest/Contents/MacOS/X`) loaded by
/// `xctest` (XCTest) or `swiftpm-testing-helper` (Swift Testing), whose own folders are Xcode's, not the build's. The
/// file this code was loaded from is the bundle's binary under either runner (dladdr on `#dsohandle`); on Linux the
/// tests are an executable, for which glibc's dladdr answers argv[0], so there it is `/proc/self/exe`.
enum ProductsDirectory {
    enum Source: String, Sendable { case loadedImage, xctestBundle, arguments, buildFolder }

    static func locate() -> (URL, Source) {
        find(imagePath: loadedImagePath(), bundlePaths: Bundle.allBundles.map(\.bundlePath), argv0: CommandLine.arguments.first)
            ?? (TestEnvironment.packageRoot.appendingPathComponent(".build/debug"), .buildFolder)
    }

    /// The first answer of: the loaded image, a loaded `.xctest` bundle, argv[0]; each must lie inside an `.xctest`.
    static func find(imagePath: String?, bundlePaths: [String], argv0: String?) -> (URL, Source)? {
        if let imagePath, let folder = folder(containing: imagePath) { return (folder, .loadedImage) }
        for bundle in bundlePaths { if let folder = folder(containing: bundle) { return (folder, .xctestBundle) } }
        if let argv0, let folder = folder(containing: argv0) { return (folder, .arguments) }
        return nil
    }

    /// The folder that holds the `.xctest` that `path` is (or is inside of); nil when it is in none.
    static func folder(containing path: String) -> URL? {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        while url.path != "/" && !url.path.isEmpty {
            if url.pathExtension == "xctest" { return url.deletingLastPathComponent() }
            url.deleteLastPathComponent()
        }
        return nil
    }

    /// The file this test code was loaded from.
    static func loadedImagePath() -> String? {
        #if os(Linux)
        return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #else
        var info = Dl_info()
        guard dladdr(#dsohandle, &info) != 0, let name = info.dli_fname else { return nil }
        return String(cString: name)
        #endif
    }
}
