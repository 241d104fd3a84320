import Foundation

// Test logs and apps print `error.localizedDescription`; without `LocalizedError` Foundation turns each of these into
// "The operation could not be completed. (… error 0.)". Each type's `description` is already the one-line message
// naming the problem and the fix.

extension VerifyError: LocalizedError { public var errorDescription: String? { description } }
