import Foundation

/// The error a blocked load most likely ends with. Apple does not document which code every violation
/// yields, so this is a best estimate, always reported after the rule itself.
///
/// The ATS model decides which one a violation yields (its table is `TLSFixturesATS`'s extension of this type); a
/// scenario's `expect.refusal.apple` states it for the scenario, and a test holds the model to the files. It lives with
/// the wire values so that TLSFixturesClient, which links no ATS model, can read and judge it.
public struct ATSLikelyError: Sendable, Codable, Hashable, CustomStringConvertible {
    /// `NSURLErrorDomain` code, e.g. -1200, -1022, -1202.
    public var urlErrorCode: Int
    /// The code's name, e.g. `NSURLErrorSecureConnectionFailed`.
    public var urlErrorName: String
    /// `_kCFStreamErrorCodeKey` (Secure Transport / ATS code), e.g. -9836, when one is expected.
    public var streamErrorCode: Int?
    /// The stream error's name, e.g. `errSSLProtocol`; nil when none is expected.
    public var streamErrorName: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(urlErrorCode: Int, urlErrorName: String, streamErrorCode: Int? = nil, streamErrorName: String? = nil) {
        self.urlErrorCode = urlErrorCode
        self.urlErrorName = urlErrorName
        self.streamErrorCode = streamErrorCode
        self.streamErrorName = streamErrorName
    }

    public var description: String {
        var text = "NSURLErrorDomain \(urlErrorCode) (\(urlErrorName))"
        if let code = streamErrorCode, let name = streamErrorName { text += ", stream error \(code) (\(name))" }
        return text
    }
}
