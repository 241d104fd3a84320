import Foundation
@testable import TLSFixtures

enum TestEnvironment {
    /// The package checkout (this file is Tests/TLSFixturesTests/Support/TestEnvironment.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The folder holding the built products of this test run (also right under `--sanitize` or `--scratch-path`).
    static let productsDirectory: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            if url.pathExtension == "xctest" { return url.deletingLastPathComponent() }
            url.deleteLastPathComponent()
        }
        return Bundle.main.bundleURL.deletingLastPathComponent()
    }()

    /// The `tls-fixtures` executable built with the tests.
    static var cli: String { productsDirectory.appendingPathComponent("tls-fixtures").path }

    /// One store for the tests that only read scenario material, kept between local runs so RSA-4096/8192 keys are
    /// generated once per machine (CI starts empty, which is the cold path).
    static let sharedStoreDirectory = packageRoot.appendingPathComponent(".build/test-certs")
    static var sharedStore: CertificateStore { CertificateStore.at(sharedStoreDirectory) }

    /// A fresh, empty directory, removed at process exit by the OS's tmp cleaning (never reused).
    static func temporaryDirectory(_ label: String = "t") -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tls-fixtures-\(label)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs the CLI.
    @discardableResult
    static func tlsFixtures(_ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 120) throws -> Subprocess.Result {
        try Subprocess.run([cli] + arguments, environment: environment, timeout: timeout)
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
