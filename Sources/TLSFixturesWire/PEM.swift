import Foundation

/// PEM text without OpenSSL: the DER inside each `-----BEGIN LABEL-----` block, in order.
public enum PEM {
    /// Every `label` block's DER (`CERTIFICATE` by default), in order. Text outside blocks is ignored; a block whose
    /// base64 does not decode throws, naming it.
    public static func blocks(in text: String, label: String = "CERTIFICATE") throws -> [Data] {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        var found: [Data] = []
        var remainder = Substring(text)
        while let start = remainder.range(of: begin) {
            guard let stop = remainder.range(of: end, range: start.upperBound..<remainder.endIndex) else {
                throw PEMError(.unterminated, "a \(label) block has no END line")
            }
            let base64 = remainder[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(base64)) else {
                throw PEMError(.notBase64, "block \(found.count + 1) (\(label)) is not base64")
            }
            found.append(der)
            remainder = remainder[stop.upperBound...]
        }
        return found
    }

    /// DER as a PEM block, 64 characters a line.
    public static func encode(_ der: Data, label: String = "CERTIFICATE") -> String {
        let base64 = der.base64EncodedString()
        var lines: [Substring] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let next = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(base64[index..<next])
            index = next
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }
}

/// A PEM text that cannot be read: no `BEGIN`/`END` pair of the expected label, or base64 that does not decode.
public struct PEMError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<PEMError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<PEMError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// Nothing to add: the reason names the block at fault.
    public var fix: String? { nil }

    package init(_ code: Code, _ problem: String) {
        self.code = code
        reason = "PEM: " + problem
    }
}

/// The codes of `PEMError`.
extension ErrorCode where Owner == PEMError {
    /// A `BEGIN` line without its `END` line.
    public static var unterminated: Self { Self("unterminated") }
    /// A block whose body is not base64.
    public static var notBase64: Self { Self("notBase64") }
}
