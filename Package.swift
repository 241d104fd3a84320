// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "swift-tls-fixtures",
    // What the code runs on, not what builds it: the first line is the toolchain floor (Swift 6.2, so Xcode 26, which
    // runs on macOS 15.6 or later; swift-log's manifest needs it, README "On macOS"), for every product alike. macOS 14:
    // Homebrew's openssl@3 bottles (the OpenSSL this package links there) start there, and so does proxyConfigurations.
    // The library links OpenSSL, so it is for macOS test targets and tools; iOS tests reach the same servers through
    // `tls-fixtures serve` on the Mac, with TLSFixturesClient (iOS 15: URLSession's async API).
    platforms: [.macOS(.v14), .iOS(.v15)],
    products: [
        .library(name: "TLSFixtures", targets: ["TLSFixtures"]),
        .library(name: "TLSFixturesXCTest", targets: ["TLSFixturesXCTest"]),
        // For iOS and macOS test targets that cannot link OpenSSL: fixtures from a running `tls-fixtures serve`.
        // Foundation only (FoundationNetworking on Linux); a test holds its dependency graph to that.
        .library(name: "TLSFixturesClient", targets: ["TLSFixturesClient"]),
        .library(name: "TLSFixturesClientXCTest", targets: ["TLSFixturesClientXCTest"]),
        .executable(name: "tls-fixtures", targets: ["tls-fixtures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The only C: OpenSSL's headers plus `static inline` wrappers for the macros Swift cannot import.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // The layers, bottom to top, one target each so the compiler holds every arrow pointing down (README,
        // "Architecture", says why each sits where it does). Only TLSFixturesOpenSSL imports COpenSSL; the ATS model
        // and the wire values link neither OpenSSL nor NIO.
        //
        // Foundation-only values every layer and TLSFixturesClient share: the control API's bodies, pins,
        // expectations, and reading a file a person named.
        .target(name: "TLSFixturesWire"),
        // The ATS model as pure values: a policy, handshake facts in, a verdict out. Live handshakes reach it through
        // `ATSLiveHandshaker`, which the layers above implement.
        .target(name: "TLSFixturesATS", dependencies: ["TLSFixturesWire"]),
        // Android's twin of the ATS model: a Network Security Config (and the manifest's switches) parsed as AOSP's
        // XmlConfigSource parses it, resolved per host, and a server's facts judged against it. Foundation only
        // (FoundationXML's XMLParser on Linux), like the ATS model.
        .target(name: "TLSFixturesNSC", dependencies: ["TLSFixturesWire"]),
        // Small types that each own one OpenSSL object; the only importer of COpenSSL.
        .target(
            name: "TLSFixturesOpenSSL",
            dependencies: [
                "COpenSSL", "TLSFixturesWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // Key specs, certificate profiles, the CA, the store, exports and pins.
        .target(
            name: "TLSFixturesPKI",
            dependencies: [
                "TLSFixturesOpenSSL", "TLSFixturesWire",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Scenario values, the catalog, and a scenario prepared against a store.
        .target(
            name: "TLSFixturesScenario",
            dependencies: [
                "TLSFixturesPKI", "TLSFixturesOpenSSL", "TLSFixturesWire",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The TLS fixture server: NIO plus an OpenSSL connection through memory BIOs.
        .target(
            name: "TLSFixturesServer",
            dependencies: [
                "TLSFixturesScenario", "TLSFixturesPKI", "TLSFixturesOpenSSL", "TLSFixturesWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The OpenSSL client that reports what a server presents, and the facts the ATS model judges.
        .target(
            name: "TLSFixturesProbe",
            dependencies: [
                "TLSFixturesServer", "TLSFixturesATS", "TLSFixturesPKI", "TLSFixturesOpenSSL", "TLSFixturesWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // ProbeHTTPExchange decodes answers with NIOHTTP1's codecs in an EmbeddedChannel.
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // The runner's fleet: every fixture it serves with one state each, leases, domains, ports held for slow
        // scenarios, the legacy helper. No HTTP: NIOHTTP1 is not in its graph (check-layers.py holds that).
        .target(
            name: "TLSFixturesFleet",
            dependencies: [
                "TLSFixturesServer", "TLSFixturesScenario", "TLSFixturesPKI", "TLSFixturesOpenSSL", "TLSFixturesWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `serve`: the front door (dashboard, control API, CONNECT proxy) over the fleet's narrow views, and the one
        // object that composes the two.
        .target(
            name: "TLSFixturesRunner",
            dependencies: [
                "TLSFixturesFleet", "TLSFixturesServer", "TLSFixturesScenario", "TLSFixturesPKI", "TLSFixturesOpenSSL",
                "TLSFixturesWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What users import: every layer, re-exported.
        .target(
            name: "TLSFixtures",
            dependencies: [
                "TLSFixturesWire", "TLSFixturesATS", "TLSFixturesNSC", "TLSFixturesOpenSSL", "TLSFixturesPKI",
                "TLSFixturesScenario", "TLSFixturesServer", "TLSFixturesProbe", "TLSFixturesFleet", "TLSFixturesRunner",
            ]
        ),
        // What only the CLI shows (the startup table, the README's catalog table, pin files, the ATS probe of a catalog
        // scenario): beside the library, not in the umbrella, and a target of its own so the tests can reach it.
        .target(
            name: "TLSFixturesCLISupport",
            dependencies: [
                "TLSFixturesRunner", "TLSFixturesFleet", "TLSFixturesProbe", "TLSFixturesServer", "TLSFixturesScenario",
                "TLSFixturesPKI", "TLSFixturesOpenSSL", "TLSFixturesATS", "TLSFixturesNSC", "TLSFixturesWire",
            ]
        ),
        // XCTest glue lives apart so the library and the CLI never link XCTest.
        .target(
            name: "TLSFixturesXCTest",
            dependencies: ["TLSFixtures"]
        ),
        // The control API's client: no OpenSSL, no NIO, so an iOS test target can link it.
        .target(name: "TLSFixturesClient", dependencies: ["TLSFixturesWire"]),
        // Its XCTest glue, apart so the client never links XCTest.
        .target(name: "TLSFixturesClientXCTest", dependencies: ["TLSFixturesClient"]),
        // A program that links TLSFixturesClient alone and loads a fixture through the runner's proxy with URLSession:
        // what an iOS test does, run by the tests where libcurl trusts the built-in CA.
        .executableTarget(name: "tls-fixtures-client-check", dependencies: ["TLSFixturesClient"]),
        .executableTarget(
            name: "tls-fixtures",
            dependencies: [
                "TLSFixtures", "TLSFixturesCLISupport", "TLSFixturesClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `make bench`: the in-process measurements (scripts/bench/run.py drives it and the peers).
        .executableTarget(
            name: "tls-fixtures-bench",
            dependencies: [
                "TLSFixtures", "TLSFixturesServer", "TLSFixturesOpenSSL", "TLSFixturesClient", "COpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "TLSFixturesTests",
            dependencies: [
                "TLSFixtures", "TLSFixturesCLISupport", "TLSFixturesXCTest", "TLSFixturesClient",
                "TLSFixturesClientXCTest", "tls-fixtures",
                // LoadJudgeTests reach the judge's internals (@testable TLSFixturesWire).
                "TLSFixturesWire",
                // The runner's suites reach the fleet's and the front door's internals (@testable).
                "TLSFixturesFleet", "TLSFixturesRunner",
                // BlockingWorkTests hold the server layer's own pools (BlockingWork).
                "TLSFixturesServer",
                "tls-fixtures-client-check",
                // The OpenSSL owners' tests call OpenSSL directly (the one other importer of COpenSSL).
                "COpenSSL",
                // TLSServerHandlerTests drive the handler through an EmbeddedChannel, as swift-nio-ssl tests NIOSSLHandler.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Saved fuzzer inputs, read from the checkout by FuzzRegressionTests (not resources of the bundle).
            exclude: ["Fuzz/Inputs"]
        ),
    ]
)
