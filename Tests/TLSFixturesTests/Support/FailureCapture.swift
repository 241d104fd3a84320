import Foundation
import NIOConcurrencyHelpers
import Testing
import TLSFixturesWire
import XCTest

/// An XCTest case that can take the failures its own assertions record, instead of failing: how a test checks that
/// `XCTAssertRefused` and `XCTAssertAccepted` really fail when they should (deleting their `XCTFail` must fail a test).
/// While `capturing` is set, every failure recorded on this case is kept in `captured`; otherwise XCTest has it.
class FailureCapturingTestCase: XCTestCase {
    private let box = NIOLockedValueBox<(capturing: Bool, captured: [String])>((false, []))

    /// Whether failures are taken rather than recorded.
    var capturing: Bool {
        get { box.withLockedValue { $0.capturing } }
        set { box.withLockedValue { $0.capturing = newValue } }
    }

    /// The failures taken so far, in order.
    var captured: [String] { box.withLockedValue { $0.captured } }

    /// The failures `body` records, taken (none reaches XCTest).
    func failures(of body: () async -> Void) async -> [String] {
        box.withLockedValue { $0 = (true, []) }
        await body()
        return box.withLockedValue { state in
            defer { state = (false, []) }
            return state.captured
        }
    }

    private func take(_ description: String) -> Bool {
        box.withLockedValue { state in
            guard state.capturing else { return false }
            state.captured.append(description)
            return true
        }
    }

    #if canImport(FoundationNetworking)
    // swift-corelibs-xctest routes every XCTFail and XCTAssert through this.
    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int,
                                expected: Bool) {
        if !take(description) {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }
    #else
    // Apple's XCTest routes them through `record(_:)`.
    override func record(_ issue: XCTIssue) {
        if !take(issue.compactDescription) { super.record(issue) }
    }
    #endif
}

/// What a documentation example that proves a refusal by difference must do in this run. Such an example passes only
/// where the client trusts the kit's CA (and, for names under fixtures.test on Linux, routes through the runner's
/// proxy), and must fail on the control half everywhere else: that failure is what a new user sees before setting up.
/// `ExampleRuns` re-runs the examples in a private mount namespace where libcurl trusts the CA, with
/// `TLS_FIXTURES_EXAMPLE_EXPECT` saying which outcome is due; without it, in this process on Linux, libcurl trusts only
/// the system's roots, so the control half must fail. On a Mac the CA may be in the Keychain: either outcome is right.
enum ExampleExpectation: String {
    /// The example passes: the CA is trusted and the fixtures are reached.
    case pass
    /// The example fails on the control half, for any reason.
    case controlRefused
    /// The example fails on the control half because the client does not trust the CA, and says how to fix it.
    case untrustedCA

    static let variable = "TLS_FIXTURES_EXAMPLE_EXPECT"

    static var current: ExampleExpectation? {
        if let named = ProcessInfo.processInfo.environment[variable] { return ExampleExpectation(rawValue: named) }
        return HostOS.current == .linux ? .controlRefused : nil
    }

    /// What a failure on the control half says.
    static let controlRefusedText = "your client refuses the control too"

    /// nil when `failures` (the example's, in order) are what this run expects; otherwise what is wrong. `signature`
    /// is what its failure says when it fails for not reaching or trusting (an example with its own wording).
    static func problem(with failures: [String], expected: ExampleExpectation? = current,
                        signature: String = controlRefusedText) -> String? {
        let all = failures.joined(separator: "\n")
        switch expected {
        case .pass?:
            return failures.isEmpty ? nil : "the example was due to pass: \(all)"
        case .controlRefused?:
            return failures.count == 1 && all.contains(signature) ? nil
                : "the example was due to fail on the control half, once: \(failures.isEmpty ? "it passed" : all)"
        case .untrustedCA?:
            return failures.count == 1 && all.contains("your client refuses the control too")
                && all.contains("unknown_ca(48)") && all.contains("tls-fixtures ca install") ? nil
                : "the example was due to fail on the control half for the untrusted CA: "
                    + (failures.isEmpty ? "it passed" : all)
        case nil:
            return failures.isEmpty || (failures.count == 1 && all.contains(signature))
                ? nil : "the example failed other than on the control half: \(all)"
        }
    }
}

/// A case whose test methods are documentation examples: their failures are taken while they run, and held to
/// `ExampleExpectation` in teardown.
class DocumentationExampleTestCase: FailureCapturingTestCase {
    /// What the example's failure says when it fails for not reaching or not trusting the fixtures.
    class var failureSignature: String { ExampleExpectation.controlRefusedText }

    override func setUp() async throws {
        try await super.setUp()
        capturing = true
    }

    override func tearDown() async throws {
        let failures = captured
        capturing = false
        if let problem = ExampleExpectation.problem(with: failures, signature: Self.failureSignature) {
            XCTFail(problem)
        }
        try await super.tearDown()
    }
}

/// A Swift Testing suite whose tests are documentation examples: what they throw is taken and held to
/// `ExampleExpectation` (the XCTest side is `DocumentationExampleTestCase`).
struct HoldsExampleOutcome: SuiteTrait, TestTrait, TestScoping {
    /// Applied to each test of the suite, where what the test throws passes through the scope.
    var isRecursive: Bool { true }

    func provideScope(for test: Testing.Test, testCase: Testing.Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        guard !test.isSuite else { return try await function() }
        var failures: [String] = []
        do {
            try await function()
        } catch let failure as LoadExpectationFailure {
            failures.append(failure.description)
        }
        if let problem = ExampleExpectation.problem(with: failures) { Issue.record(Comment(rawValue: problem)) }
    }
}
