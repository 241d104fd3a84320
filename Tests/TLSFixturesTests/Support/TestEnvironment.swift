import Foundation
@testable import TLSFixtures

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
    /// (`make test-legacy` tests the helper).
    /// `TLS_FIXTURES_TEST_CLI` names another build to run instead (an older checkout's, to show that a new test fails
    /// on the code before the change it tests).
    static var cli: String {
        _ = legacyHelperDisabled
        if let other = ProcessInfo.processInfo.environment["TLS_FIXTURES_TEST_CLI"], !other.isEmpty { return other }
        return productsDirectory.appendingPathComponent("tls-fixtures").path
    }

    private static let legacyHelperDisabled: Void = {
        setenv(LegacyHelper.environmentVariable, "none", 1)
    }()

    /// One store for the tests that only read scenario material, kept between local runs so RSA-4096/8192 keys are
    /// generated once per machine (CI starts empty, which is the cold path).
    static let sharedStoreDirectory = packageRoot.appendingPathComponent(".build/test-certs")
    static var sharedStore: CertificateStore { CertificateStore.at(sharedStoreDirectory) }

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

    /// Runs the CLI as "nobody" (uid 65534) when `asNobody`, else as the current user, with `HOME=/tmp`. Tests of
    /// unreadable and read-only stores need it when they run as root, because root ignores permission bits.
    /// "nobody" may not reach this checkout (a CI clone can sit in a 0700 directory), so a sanitizer's `log_path` under
    /// `.build-*` is swapped for standard error: a report then shows in the output these tests check, and fails them.
    static func tlsFixtures(asNobody: Bool, _ arguments: [String]) throws -> Subprocess.Result {
        var environment = ["HOME": "/tmp"]
        if asNobody {
            for name in ["ASAN_OPTIONS", "TSAN_OPTIONS"] {
                guard let options = ProcessInfo.processInfo.environment[name] else { continue }
                environment[name] = options.split(separator: ":").map { $0.hasPrefix("log_path=") ? "log_path=stderr" : String($0) }
                    .joined(separator: ":")
            }
        }
        let prefix = asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        return try Subprocess.run(prefix + [cli] + arguments, environment: environment, timeout: 120)
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

    /// The README examples call the API with its default store; point that default at the shared test store so
    /// tests never touch the developer's own CA.
    static func useSharedStoreAsDefault() {
        _ = defaultStoreConfigured
    }

    private static let defaultStoreConfigured: Void = {
        setenv(CertificateStore.environmentVariable, sharedStoreDirectory.path, 1)
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
