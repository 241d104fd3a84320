import Foundation
import Testing
import XCTest

/// The tests find the `tls-fixtures` CLI they spawn next to the test bundle. On macOS argv[0] is `xctest` or
/// `swiftpm-testing-helper` and the bundle is a folder (`X.xctest/Contents/MacOS/X`); these are the Linux-side checks.
@Suite("macOS: the tests find the built CLI under either runner", .ownThreads)
struct ProductsDirectoryTests {
    @Test("macOS's bundle layout and runner paths: the build folder comes from the bundle, never from the runner")
    func macOSLayout() {
        let bundleBinary = "/Users/me/kit/.build/arm64-apple-macosx/debug/swift-tls-fixturesPackageTests.xctest/Contents/MacOS/swift-tls-fixturesPackageTests"
        let debug = "/Users/me/kit/.build/arm64-apple-macosx/debug"
        #expect(ProductsDirectory.folder(containing: bundleBinary)?.path == debug)
        // What argv[0] is under each runner on macOS: neither says where the build is.
        for runner in ["xctest", "/Applications/Xcode.app/Contents/Developer/usr/bin/xctest",
                       "/Applications/Xcode.app/Contents/Developer/usr/libexec/swift/pm/swiftpm-testing-helper"] {
            #expect(ProductsDirectory.folder(containing: runner) == nil, "\(runner)")
            #expect(ProductsDirectory.find(imagePath: bundleBinary, bundlePaths: [], argv0: runner)?.0.path == debug)
        }
        // Without the loaded image (an unusual loader), a loaded .xctest bundle is next; argv[0] comes last.
        let bundle = "/Users/me/kit/.build/arm64-apple-macosx/debug/swift-tls-fixturesPackageTests.xctest"
        let found = ProductsDirectory.find(imagePath: nil, bundlePaths: ["/Applications/Xcode.app/Contents/Developer/usr/bin", bundle], argv0: "xctest")
        #expect(found?.0.path == debug && found?.1 == .xctestBundle)
        #expect(ProductsDirectory.find(imagePath: nil, bundlePaths: [], argv0: "swiftpm-testing-helper") == nil)
        // Sanitizer and custom scratch paths keep their own folder.
        #expect(ProductsDirectory.folder(containing: "/k/.build-asan/x86_64-unknown-linux-gnu/debug/P.xctest")?.path
                == "/k/.build-asan/x86_64-unknown-linux-gnu/debug")
    }

    /// Also what the re-runs below run, under a changed argv[0].
    @Test("this run found the CLI from the file its code was loaded from")
    func theCLIIsFoundFromTheLoadedImage() {
        #expect(TestEnvironment.located.source == .loadedImage, "found from \(TestEnvironment.located.source)")
        #expect(FileManager.default.isExecutableFile(atPath: TestEnvironment.cli), "no CLI at \(TestEnvironment.cli)")
    }

    /// The test executable again, as `exec -a NAME` from another folder: what macOS's runners put in argv[0].
    static func rerun(as name: String, _ arguments: [String]) throws -> Subprocess.Result {
        let executable = try #require(ProductsDirectory.loadedImagePath())
        return try Subprocess.run(["/bin/bash", "-c", "exec -a \"$0\" \"$@\"", name, executable] + arguments,
                                  currentDirectory: TestEnvironment.temporaryDirectory("argv0"), timeout: 120)
    }

    @Test("the same check passes with argv[0] = swiftpm-testing-helper (Swift Testing) and xctest (XCTest), from another folder",
          .enabled(if: HostOS.current == .linux, "re-runs the test executable; on macOS the tests are a bundle that xctest or swiftpm-testing-helper loads"))
    func argv0() throws {
        let swiftTesting = try Self.rerun(as: "swiftpm-testing-helper",
                                          ["--testing-library", "swift-testing", "--filter", "theCLIIsFoundFromTheLoadedImage"])
        #expect(swiftTesting.status == 0 && swiftTesting.combined.contains("Test run with 1 test"), "\(swiftTesting.combined.suffix(2000))")
        let xctest = try Self.rerun(as: "xctest", ["TLSFixturesTests.ProductsDirectoryXCTests"])
        #expect(xctest.status == 0 && xctest.combined.contains("Executed 1 test, with 0 failures"), "\(xctest.combined.suffix(2000))")
    }
}

/// The XCTest side of the same check (run by `argv0` above under the name `xctest`).
final class ProductsDirectoryXCTests: XCTestCase {
    func testTheCLIIsFoundFromTheLoadedImage() {
        XCTAssertEqual(TestEnvironment.located.source, .loadedImage)
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: TestEnvironment.cli), "no CLI at \(TestEnvironment.cli)")
    }
}
