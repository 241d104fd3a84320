import Foundation

// Test logs and apps print `error.localizedDescription`; without `LocalizedError` Foundation turns every one of these
// into "The operation could not be completed. (TLSFixtures.ScenarioError error 0.)". Each type's `description` is
// already the one-line message naming the problem and the fix.

extension FixtureError: LocalizedError { public var errorDescription: String? { description } }
extension ProbeError: LocalizedError { public var errorDescription: String? { description } }
extension VerifyError: LocalizedError { public var errorDescription: String? { description } }
extension PinFormatError: LocalizedError { public var errorDescription: String? { description } }
extension PKIError: LocalizedError { public var errorDescription: String? { description } }
extension OpenSSLError: LocalizedError { public var errorDescription: String? { description } }
extension UnsupportedByOpenSSL: LocalizedError { public var errorDescription: String? { description } }
extension ScenarioUnsupported: LocalizedError { public var errorDescription: String? { description } }
extension ScenarioError: LocalizedError { public var errorDescription: String? { description } }
extension InvalidTimeout: LocalizedError { public var errorDescription: String? { description } }
extension UserFileError: LocalizedError { public var errorDescription: String? { description } }
extension InvalidHostsAddress: LocalizedError { public var errorDescription: String? { description } }
