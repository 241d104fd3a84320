// swift-tools-version:6.2
// Apple's URLSession's report card (make apple-report; docs/apple/README.md): a test package that links
// TLSFixturesClient alone, as an app's test target does, run on macOS and in an iOS Simulator.
import PackageDescription

let package = Package(
    name: "AppleReport",
    platforms: [.macOS(.v14), .iOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .testTarget(
            name: "AppleReportTests",
            dependencies: [.product(name: "TLSFixturesClient", package: "swift-tls-fixtures")]
        ),
    ]
)
