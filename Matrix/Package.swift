// swift-tools-version:6.2
// The Swift clients of the client matrix (`make matrix`, and the reduced set in `make test`): BoringSSL through
// swift-nio-ssl and AsyncHTTPClient, and FoundationNetworking's URLSession. A package of its own, built into
// .build-matrix, so the library and its users never depend on swift-nio-ssl or AsyncHTTPClient. It does not depend on
// swift-tls-fixtures either: the clients must judge the fixtures with nothing of ours in between.
import PackageDescription

let package = Package(
    name: "tls-fixtures-matrix-clients",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
    ],
    targets: [
        // The target list in, one JSON line per target out: the protocol every matrix client speaks.
        .target(name: "MatrixTargets"),
        // A small swift-nio-ssl client: TLSConfiguration.makeClientConfiguration() with the CA as its only root.
        .executableTarget(
            name: "matrix-nio-ssl",
            dependencies: [
                "MatrixTargets",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // AsyncHTTPClient with its default TLS configuration, the CA as its only root.
        .executableTarget(
            name: "matrix-ahc",
            dependencies: [
                "MatrixTargets",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // URLSession.shared (libcurl and the system OpenSSL on Linux).
        .executableTarget(name: "matrix-urlsession", dependencies: ["MatrixTargets"]),
    ]
)
