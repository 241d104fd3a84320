// swift-tools-version:6.2
// libFuzzer targets for the two parsers that read untrusted user input. Not part of the main package, so
// `swift build` at the top level never sees -sanitize=fuzzer; build and run them with `make fuzz` (see ../Makefile).
import PackageDescription

let package = Package(
    name: "swift-tls-fixtures-fuzz",
    platforms: [.macOS(.v14)],   // as the package it fuzzes (../Package.swift)
    dependencies: [
        .package(name: "swift-tls-fixtures", path: ".."),
    ],
    // Each target is one file exporting `LLVMFuzzerTestOneInput`, with no main.swift and no @main: SwiftPM then
    // compiles it with -parse-as-library, and -sanitize=fuzzer links libFuzzer's own `main`.
    targets: [
        .target(name: "FuzzSupport"),
        .executableTarget(
            name: "FuzzScenarioDecoder",
            dependencies: ["FuzzSupport", .product(name: "TLSFixtures", package: "swift-tls-fixtures")]
        ),
        .executableTarget(
            name: "FuzzATSPlist",
            dependencies: ["FuzzSupport", .product(name: "TLSFixtures", package: "swift-tls-fixtures")]
        ),
    ]
)
