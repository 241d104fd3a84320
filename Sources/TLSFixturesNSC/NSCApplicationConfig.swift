import Foundation

/// The app a config is judged for: what Android takes from the APK besides the config file.
public struct NSCApp: Sendable, Equatable, Codable {
    /// `targetSdkVersion`: the defaults change at 24 (user CAs untrusted) and 28 (cleartext off).
    public var targetSdk: Int
    /// The API level of the device it runs on; the TLS versions the platform speaks depend on it.
    public var deviceAPI: Int
    /// A debuggable build (`android:debuggable`): `<debug-overrides>` applies.
    public var build: NSCBuild
    /// `android:usesCleartextTraffic`; nil when the manifest leaves it out (then it is true below target SDK 28).
    /// Read only when the app names no Network Security Config.
    public var usesCleartextTraffic: Bool?

    /// Memberwise; `deviceAPI` defaults to the target SDK (an app tested on the platform it targets).
    public init(targetSdk: Int = NSCApp.currentTargetSdk, deviceAPI: Int? = nil, build: NSCBuild = .release,
                usesCleartextTraffic: Bool? = nil) {
        self.targetSdk = targetSdk
        self.deviceAPI = deviceAPI ?? targetSdk
        self.build = build
        self.usesCleartextTraffic = usesCleartextTraffic
    }

    /// The target SDK the model assumes when none is given: Android 15, what Google Play requires of new apps and
    /// updates since 31 August 2025.
    public static let currentTargetSdk = 35

    /// The app a manifest describes; `targetSdk` and `build` given here win over the manifest's (a Gradle project
    /// keeps them in build.gradle). Without either, `targetSdkVersion` falls back to `minSdkVersion`, as in
    /// Android.
    public init(manifest: NSCManifest, targetSdk: Int? = nil, deviceAPI: Int? = nil, build: NSCBuild? = nil) {
        let target = targetSdk ?? manifest.targetSdkVersion ?? manifest.minSdkVersion ?? NSCApp.currentTargetSdk
        self.init(targetSdk: target, deviceAPI: deviceAPI,
                  build: build ?? ((manifest.debuggable ?? false) ? .debug : .release),
                  usesCleartextTraffic: manifest.usesCleartextTraffic)
    }

    /// `android:usesCleartextTraffic` as the package parser stores it: the attribute, or `targetSdk < 28` without it.
    public var cleartextFlag: Bool { usesCleartextTraffic ?? (targetSdk < 28) }
}

/// The effective settings for one host: every value resolved through the config's parents and the platform's
/// defaults, debug anchors added.
public struct NSCEffectiveConfig: Sendable, Equatable, Codable {
    /// Whether `http://` to the host is allowed.
    public var cleartextTrafficPermitted: Bool
    /// `hstsEnforced`, resolved (no platform HTTP stack acts on it).
    public var hstsEnforced: Bool
    /// The trust anchors, entries that override pins first (the order Android sorts them in).
    public var trustAnchors: [NSCCertificates]
    /// The pins; empty when none apply.
    public var pinSet: NSCPinSet
    /// Which part of the file decided: `domain-config android.com (line 7)`, `base-config (line 3)`, or `platform
    /// defaults (target SDK 35)`.
    public var origin: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(cleartextTrafficPermitted: Bool, hstsEnforced: Bool, trustAnchors: [NSCCertificates],
                pinSet: NSCPinSet, origin: String) {
        self.cleartextTrafficPermitted = cleartextTrafficPermitted
        self.hstsEnforced = hstsEnforced
        self.trustAnchors = trustAnchors
        self.pinSet = pinSet
        self.origin = origin
    }

    /// The anchor entry a chain ending at a certificate held by `sources` is found under: the first in Android's
    /// order (pin-overriding entries first), nil when no entry holds it.
    public func anchorEntry(holdingAny sources: Set<NSCCertificateSource>) -> NSCCertificates? {
        trustAnchors.first { sources.contains($0.source) }
    }
}

/// An app's Network Security Config resolved as `ApplicationConfig` sees it: the default config and one per domain.
public struct NSCApplicationConfig: Sendable, Equatable, Codable {
    /// For hosts no domain-config matches.
    public var defaultConfig: NSCEffectiveConfig
    /// Every `<domain>` with the config it selects.
    public var domainConfigs: [DomainConfig]
    /// Whether the app names a Network Security Config at all.
    public var hasConfigFile: Bool

    /// A domain and its resolved config.
    public struct DomainConfig: Sendable, Equatable, Codable {
        /// The `<domain>`.
        public var domain: NSCDomain
        /// Its config, resolved.
        public var config: NSCEffectiveConfig
    }

    /// Resolves `document` for `app`; nil `document` is an app without a Network Security Config
    /// (`ManifestConfigSource`'s default source, which reads `android:usesCleartextTraffic`).
    public init(document: NSCDocument?, app: NSCApp) {
        let platform = Level(entry: NSCConfigEntry(cleartextTrafficPermitted: document == nil
                                                        ? app.cleartextFlag : app.targetSdk < 28,
                                                    hstsEnforced: false,
                                                    trustAnchors: Self.platformAnchors(app)),
                             origin: "platform defaults (target SDK \(app.targetSdk))")
        hasConfigFile = document != nil
        guard let document else {
            defaultConfig = platform.resolved(below: [])
            domainConfigs = []
            return
        }
        let debugAnchors = app.build == .debug ? document.debugOverrides?.trustAnchors : nil
        func withDebug(_ level: Level) -> Level {
            // addDebugAnchorsIfNeeded: only to a level that states anchors of its own; the rest inherit them.
            guard let debugAnchors, let own = level.entry.trustAnchors else { return level }
            var changed = level
            changed.entry.trustAnchors = own + debugAnchors
            return changed
        }
        let platformLevel = withDebug(platform)
        var chain = [platformLevel]
        if let base = document.base {
            chain.append(withDebug(Level(entry: base, origin: "base-config (line \(base.line))")))
        }
        defaultConfig = Self.resolve(chain)
        var configs: [DomainConfig] = []
        func add(_ entry: NSCConfigEntry, parents: [Level]) {
            let origin = "domain-config \(entry.domains.map(\.name).joined(separator: ", ")) (line \(entry.line))"
            let levels = parents + [withDebug(Level(entry: entry, origin: origin))]
            let config = Self.resolve(levels)
            for domain in entry.domains { configs.append(DomainConfig(domain: domain, config: config)) }
            for child in entry.children { add(child, parents: levels) }
        }
        for entry in document.domainConfigs { add(entry, parents: chain) }
        domainConfigs = configs
    }

    /// `getDefaultBuilder`: the system store, and the user store too for apps targeting API 23 or lower.
    static func platformAnchors(_ app: NSCApp) -> [NSCCertificates] {
        [NSCCertificates(.system)] + (app.targetSdk <= 23 ? [NSCCertificates(.user)] : [])
    }

    /// One config level and where it comes from.
    struct Level: Sendable {
        var entry: NSCConfigEntry
        var origin: String

        func resolved(below parents: [Level]) -> NSCEffectiveConfig {
            NSCApplicationConfig.resolve(parents + [self])
        }
    }

    /// A `Builder.build()`: each value from the nearest level that sets it, the pin-overriding anchors first.
    static func resolve(_ levels: [Level]) -> NSCEffectiveConfig {
        let nearest = Array(levels.reversed())
        let anchors = nearest.lazy.compactMap(\.entry.trustAnchors).first ?? []
        return NSCEffectiveConfig(
            cleartextTrafficPermitted: nearest.lazy.compactMap(\.entry.cleartextTrafficPermitted).first ?? true,
            hstsEnforced: nearest.lazy.compactMap(\.entry.hstsEnforced).first ?? false,
            trustAnchors: anchors.filter(\.overridePins) + anchors.filter { !$0.overridePins },
            pinSet: nearest.lazy.compactMap(\.entry.pinSet).first ?? NSCPinSet(pins: []),
            origin: levels.last?.origin ?? "platform defaults")
    }

    /// `getConfigForHostname`: the host lowercased and its trailing dot dropped; an exact `<domain>` wins, then the
    /// longest one that includes subdomains and of which the host is a subdomain; else the default config.
    public func config(forHost host: String) -> (config: NSCEffectiveConfig, domain: NSCDomain?) {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty else { return (defaultConfig, nil) }
        if let exact = domainConfigs.first(where: { $0.domain.name == name }) { return (exact.config, exact.domain) }
        let best = domainConfigs
            .filter { $0.domain.includeSubdomains && name.hasSuffix("." + $0.domain.name) }
            .max { $0.domain.name.count < $1.domain.name.count }
        return best.map { ($0.config, $0.domain) } ?? (defaultConfig, nil)
    }
}
