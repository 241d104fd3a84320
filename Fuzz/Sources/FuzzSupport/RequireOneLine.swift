// What every fuzz target asserts about the messages the parsers give people.

/// A message for people is one line with no control characters, whatever the input quoted into it.
public func requireOneLine(_ text: String, _ what: String) {
    let bad = text.unicodeScalars.first { scalar in
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
    precondition(bad == nil, "\(what) is not one line (U+\(String(bad?.value ?? 0, radix: 16))): \(text.debugDescription)")
}
