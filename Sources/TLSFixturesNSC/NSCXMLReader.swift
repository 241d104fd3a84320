import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One element of an XML file as the NSC parsers need it: its name, its attributes, its child elements and the text
/// directly inside it, with the line it starts on for messages.
///
/// Android reads the file aapt2 compiled, not the text: comments and whitespace-only text are gone by then (aapt2's
/// `XmlDom` drops them), so `text` holds only what is left once whitespace-only runs are dropped, and `startsWithText`
/// says whether that text came before the first child element (what `XmlPullParser.next()` returns right after the
/// start tag).
struct NSCXMLElement: Sendable {
    var name: String
    /// Attributes by their name as written (`android:usesCleartextTraffic`, `cleartextTrafficPermitted`).
    var attributes: [String: String]
    var children: [NSCXMLElement]
    /// The element's own text (not its children's), whitespace-only runs dropped, the rest joined.
    var text: String
    /// Whether a run of text with something besides whitespace came before the first child element.
    var startsWithText: Bool
    /// Whether a child element came after such text (`<domain>a.com<x/></domain>`).
    var elementAfterText: Bool
    var line: Int
    /// `xmlns:PREFIX` declarations on this element.
    var namespaces: [String: String] {
        var found: [String: String] = [:]
        for (name, value) in attributes where name.hasPrefix("xmlns:") { found[String(name.dropFirst(6))] = value }
        return found
    }
}

/// Parses XML text into `NSCXMLElement`s with Foundation's `XMLParser` (FoundationXML on Linux). External entities are
/// never resolved: the file is a user's, read to judge it, not to fetch anything.
enum NSCXMLReader {
    /// The document's root element, or the parser's complaint in one line.
    static func root(of data: Data) throws(NSCConfigError) -> NSCXMLElement {
        let builder = Builder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let parsed = parser.parse()
        guard parsed, let root = builder.root else {
            let line = builder.errorLine ?? parser.lineNumber
            let detail = parser.parserError.map { "\(($0 as NSError).localizedDescription)" } ?? "no root element"
            throw NSCConfigError.notXML(line: line, detail: builder.errorText ?? detail)
        }
        return root
    }

    /// Collects the tree as the parser reports it. Used on one thread, synchronously, within `root(of:)`.
    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [NSCXMLElement] = []
        var root: NSCXMLElement?
        var errorLine: Int?
        var errorText: String?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            stack.append(NSCXMLElement(name: elementName, attributes: attributes, children: [], text: "",
                                       startsWithText: false, elementAfterText: false, line: parser.lineNumber))
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?) {
            guard let element = stack.popLast() else { return }
            if stack.isEmpty {
                root = element
            } else {
                let parent = stack.count - 1
                if !stack[parent].text.isEmpty { stack[parent].elementAfterText = true }
                stack[parent].children.append(element)
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { add(string) }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            add(String(decoding: CDATABlock, as: UTF8.self))
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            if errorLine == nil {
                errorLine = parser.lineNumber
                errorText = (parseError as NSError).localizedDescription
            }
        }

        private func add(_ text: String) {
            guard let last = stack.indices.last else { return }
            guard !text.allSatisfy(\.isWhitespace) || !stack[last].text.isEmpty else { return }
            if stack[last].text.isEmpty && stack[last].children.isEmpty { stack[last].startsWithText = true }
            stack[last].text += text
        }
    }
}
