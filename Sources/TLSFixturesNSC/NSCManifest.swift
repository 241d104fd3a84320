import Foundation

/// What `AndroidManifest.xml` says that bears on the Network Security Config: whether the app names one, the legacy
/// cleartext switch, whether the build is debuggable, and the SDK levels. Read from the merged manifest (a Gradle
/// project states the SDK levels in `build.gradle`; the merged one, under `build/intermediates`, has them all).
public struct NSCManifest: Sendable, Equatable, Codable {
    /// `android:networkSecurityConfig` on `<application>` (`@xml/network_security_config`); nil when absent.
    public var networkSecurityConfig: String?
    /// `android:usesCleartextTraffic` on `<application>`; nil when absent (the default then depends on the target SDK).
    public var usesCleartextTraffic: Bool?
    /// `android:debuggable` on `<application>` (debug builds set it when they merge the manifest); nil when absent.
    public var debuggable: Bool?
    /// `android:targetSdkVersion` on `<uses-sdk>`; nil when absent.
    public var targetSdkVersion: Int?
    /// `android:minSdkVersion` on `<uses-sdk>`; nil when absent.
    public var minSdkVersion: Int?
    /// What was read but cannot be judged (a value that is a resource reference), one line each.
    public var warnings: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(networkSecurityConfig: String? = nil, usesCleartextTraffic: Bool? = nil, debuggable: Bool? = nil,
                targetSdkVersion: Int? = nil, minSdkVersion: Int? = nil, warnings: [String] = []) {
        self.networkSecurityConfig = networkSecurityConfig
        self.usesCleartextTraffic = usesCleartextTraffic
        self.debuggable = debuggable
        self.targetSdkVersion = targetSdkVersion
        self.minSdkVersion = minSdkVersion
        self.warnings = warnings
    }

    /// The namespace Android's attributes live in, whatever prefix the file binds it to.
    public static let androidNamespace = "http://schemas.android.com/apk/res/android"

    /// Reads a manifest; throws for one that is not XML, whose root is not `<manifest>`, or whose values aapt2 would
    /// refuse (a boolean attribute that is not `true` or `false`, an SDK level that is not a number).
    public static func parse(_ data: Data) throws(NSCConfigError) -> NSCManifest {
        let root = try NSCXMLReader.root(of: data)
        guard root.name == "manifest" else {
            throw NSCConfigError.wrongRoot(line: root.line, found: root.name, expected: "manifest")
        }
        let prefixes = Set(root.namespaces.filter { $0.value == androidNamespace }.keys)
        var manifest = NSCManifest()
        func attribute(_ element: NSCXMLElement, _ name: String) -> String? {
            element.attributes.first { key, _ in
                guard let colon = key.firstIndex(of: ":") else { return false }
                return prefixes.contains(String(key[..<colon])) && key[key.index(after: colon)...] == name
            }?.value
        }
        func boolean(_ element: NSCXMLElement, _ name: String) throws(NSCConfigError) -> Bool? {
            guard let value = attribute(element, name) else { return nil }
            switch value.trimmingCharacters(in: .whitespaces) {
            case "true": return true
            case "false": return false
            case let text where text.hasPrefix("@"):
                manifest.warnings.append("line \(element.line): android:\(name)=\"\(text)\" is a resource this tool "
                                         + "cannot resolve: treated as absent")
                return nil
            default:
                throw NSCConfigError.invalidManifest(line: element.line, "android:\(name)=\"\(value)\" is not true or "
                    + "false", fix: "write true or false: aapt2 refuses anything else for a boolean attribute")
            }
        }
        func level(_ element: NSCXMLElement, _ name: String) throws(NSCConfigError) -> Int? {
            guard let value = attribute(element, name) else { return nil }
            guard let number = Int(value.trimmingCharacters(in: .whitespaces)), number > 0 else {
                throw NSCConfigError.invalidManifest(line: element.line, "android:\(name)=\"\(value)\" is not an API "
                    + "level", fix: "give the number (35), or --target-sdk N for a preview's codename")
            }
            return number
        }
        for element in root.children {
            switch element.name {
            case "application":
                manifest.networkSecurityConfig = attribute(element, "networkSecurityConfig")
                manifest.usesCleartextTraffic = try boolean(element, "usesCleartextTraffic")
                manifest.debuggable = try boolean(element, "debuggable")
            case "uses-sdk":
                manifest.targetSdkVersion = try level(element, "targetSdkVersion")
                manifest.minSdkVersion = try level(element, "minSdkVersion")
            default:
                continue
            }
        }
        if prefixes.isEmpty && root.children.contains(where: { $0.name == "application" }) {
            manifest.warnings.append("line \(root.line): the manifest binds no prefix to \(androidNamespace), so no "
                                     + "android: attribute of it was read")
        }
        return manifest
    }
}
