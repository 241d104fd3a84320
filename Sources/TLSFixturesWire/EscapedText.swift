extension String {
    /// The text with newlines, tabs and other control characters (C0, DEL, C1, U+2028/U+2029) written as escapes
    /// (`\n`, `\u{1b}`), so a message that quotes untrusted input stays one line and cannot move the terminal's cursor.
    package var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: \.needsEscaping) else { return self }
        var out = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            guard scalar.needsEscaping else { out.append(scalar); continue }
            let escape: String
            switch scalar {
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            default: escape = "\\u{\(String(scalar.value, radix: 16))}"
            }
            out.append(contentsOf: escape.unicodeScalars)
        }
        return String(out)
    }

    /// At most `limit` characters of the text, then `…`, with control characters escaped after the cut (so no escape
    /// is split): how a message quotes what a client or a runner sent.
    package func quotedForMessage(limit: Int = 80) -> String {
        (count > limit ? String(prefix(limit)) + "…" : self).escapingControlCharacters
    }
}

private extension Unicode.Scalar {
    var needsEscaping: Bool {
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
