import Foundation
import Logging
import NIOConcurrencyHelpers
import TLSFixturesOpenSSL

/// The CAs the store keeps. Roots are made once and never replaced without an explicit `force`, because devices
/// trust them and apps pin them; intermediates are derived from their root and re-made when it changes.
public enum BuiltinAuthority: String, CaseIterable, Sendable, Codable {
    /// The built-in CA: the root users install on simulators and devices.
    case root
    /// root → intermediate (SHA-256), for chains with an intermediate (`intermediate`, `incomplete-chain`, `md5-leaf`).
    case intermediate
    /// root → intermediate signed with SHA-1 (`sha1-intermediate`).
    case sha1Intermediate = "sha1-intermediate"
    /// root → RSA intermediate. Every intermediate is RSA now, so this is `intermediate`'s twin, kept for scenario
    /// files that name it.
    case rsaIntermediate = "rsa-intermediate"
    /// A second root nobody trusts (`untrusted-root`).
    case untrustedRoot = "untrusted-root"
    /// A root standing in for a TLS-intercepting proxy's CA (`pin-mitm`): trusted, but never pinned.
    case interceptionRoot = "interception-root"
    /// The root that issues client certificates (`client-cert-required`).
    case clientCA = "client-ca"

    /// True for the authorities that are self-signed roots (no parent in the store).
    public var isRoot: Bool { parent == nil }

    var parent: BuiltinAuthority? {
        switch self {
        case .intermediate, .sha1Intermediate, .rsaIntermediate: return .root
        default: return nil
        }
    }

    /// Intermediates are RSA: MD5 signatures exist only as md5WithRSAEncryption (the root is EC by default), and the
    /// two-level scenarios share one shape, so `sha1-intermediate` and `md5-leaf` each differ from `intermediate` in
    /// one thing.
    var keySpec: KeySpec { parent == nil ? .ec(.p256) : .rsa(bits: 2048) }

    func profile(rootCommonName: String) -> CertificateProfile {
        switch self {
        case .root:
            return .authority(commonName: rootCommonName, nameConstraints: .localDevelopment)
        case .intermediate:
            return .authority(commonName: "swift-tls-fixtures intermediate", pathLength: 0)
        case .sha1Intermediate:
            return .authority(commonName: "swift-tls-fixtures SHA-1 intermediate", pathLength: 0, digest: .sha1)
        case .rsaIntermediate:
            return .authority(commonName: "swift-tls-fixtures RSA intermediate", pathLength: 0)
        case .untrustedRoot:
            return .authority(commonName: "swift-tls-fixtures untrusted root (never install this)", nameConstraints: .localDevelopment)
        case .interceptionRoot:
            return .authority(commonName: "swift-tls-fixtures interception CA (simulated TLS proxy)", nameConstraints: .localDevelopment)
        case .clientCA:
            return .authority(commonName: "swift-tls-fixtures client CA")
        }
    }
}

/// How `ca init` makes the built-in root.
public struct CAOptions: Sendable, Equatable {
    /// The root's key; default P-256.
    public var key: KeySpec
    /// The root's CN; default `CertificateAuthority.defaultCommonName`.
    public var commonName: String
    /// true constrains the root to test names and loopback (and `permittedDomains`), so a leaked CA cannot vouch for real sites.
    public var nameConstraints: Bool
    /// The root's validity in days from one day ago.
    public var days: Int
    /// DNS subtrees permitted besides the reserved test names (`ca init --domain`): domains of the user's own that
    /// `serve --domain` names fixtures under.
    public var permittedDomains: [String]

    /// The fewest days a new CA may have: its validity starts a day back (for devices whose clocks lag), so one day
    /// would end now and make a CA that is expired as it is made.
    public static let minimumDays = 2

    /// The smallest RSA key a CA may have without `allowWeakKey`: OpenSSL's default security level (2 on Debian,
    /// Ubuntu and Homebrew) refuses a chain whose CA key is smaller ("CA certificate key too weak").
    public static let minimumRSABits = 2048

    /// Make a CA whose key default clients refuse (RSA below `minimumRSABits`), for testing that refusal.
    public var allowWeakKey = false

    /// Refuses options that would make a CA already expired (`expiredCA`), one whose key default clients refuse
    /// (`weakCAKey`, unless `allowWeakKey`), or past the dates a certificate can carry.
    public func check() throws {
        if case .rsa(let bits) = key, bits < CAOptions.minimumRSABits, !allowWeakKey {
            throw PKIError(code: .weakCAKey, subject: "rsa:\(bits)",
                           reason: "a CA with an RSA-\(bits) key would be refused by default OpenSSL clients (curl, Python, "
                             + "Node: \"CA certificate key too weak\") for every certificate it signs",
                           fix: "use rsa:\(CAOptions.minimumRSABits) or larger, or an EC key (the default); set allowWeakKey to "
                             + "make it anyway")
        }
        guard days >= CAOptions.minimumDays else {
            throw PKIError(code: .expiredCA, subject: "\(days)",
                           reason: "a CA of \(days) day\(days == 1 ? "" : "s") would be expired as it is made (its validity starts a day back)",
                           fix: "give at least \(CAOptions.minimumDays) days; 3650 is the default")
        }
        try Validity.days(days).check()
        try Subject(commonName: commonName).check()
    }

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(key: KeySpec = .ec(.p256), commonName: String = CertificateAuthority.defaultCommonName,
                nameConstraints: Bool = true, days: Int = 3650, permittedDomains: [String] = []) {
        self.key = key; self.commonName = commonName; self.nameConstraints = nameConstraints; self.days = days
        self.permittedDomains = permittedDomains
    }
}

/// Who signs a leaf.
public enum LeafIssuer: Sendable, Hashable {
    case authority(BuiltinAuthority)
    case selfSigned
}

/// Generated keys and certificates on disk, shared by every process that points at the same directory.
///
/// Layout (documented in `Certs/README.md`):
/// ```
/// ca/      0700  root.pem root.key(0600) and the other built-in authorities
/// keys/    0700  NAME.SPEC.key (0600): leaf keys, kept across re-issues so SPKI pins survive
/// certs/   0700  NAME.pem (leaf + intermediates as served), NAME.json (what it was made from)
/// params/  0700  dh-BITS.pem
/// locks/   0700  one lock file per item
/// ```
/// Guarantees: every write is atomic (temporary file + rename); concurrent processes that "load or create" the same
/// item serialise on a per-item `flock`, so they all end with the same single CA; a leaf is re-issued only when its
/// profile, key or issuer changed or it no longer has the validity its profile intends; nothing is generated twice.
public final class CertificateStore: Sendable {
    /// The store's folder: `ca/`, `certs/`, `keys/`, `exports/` live under it (mode 0700).
    public let directory: URL
    private let cache = NIOLockedValueBox(Cache())
    private let logger = Logger(label: "tls-fixtures.store")

    private struct Cache {
        var authorities: [BuiltinAuthority: CertificateAuthority] = [:]
        var keys: [String: PrivateKey] = [:]
        var credentials: [String: (fingerprint: String, credential: Credential)] = [:]
        var dh: [Int: DHParameters] = [:]
        var warnings: [String] = []
    }

    // MARK: Location

    /// Names the store folder when no folder is given (`resolved()` reads it before the default).
    public static let environmentVariable = "TLS_FIXTURES_CERTS"

    /// The per-user default, shared by the CLI and by tests in any package so they all use the one CA a developer
    /// installed: `~/Library/Application Support/swift-tls-fixtures` on macOS,
    /// `${XDG_DATA_HOME:-~/.local/share}/swift-tls-fixtures` elsewhere.
    public static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let home = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory())
        #if os(macOS)
        return home.appendingPathComponent("Library/Application Support/swift-tls-fixtures")
        #else
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("swift-tls-fixtures")
        }
        return home.appendingPathComponent(".local/share/swift-tls-fixtures")
        #endif
    }

    /// `explicit` (the `--dir` option), else `$TLS_FIXTURES_CERTS`, else `defaultDirectory`.
    public static func resolveDirectory(explicit: String? = nil) -> URL {
        if let explicit, !explicit.isEmpty { return URL(fileURLWithPath: explicit).standardizedFileURL }
        if let fromEnvironment = ProcessInfo.processInfo.environment[environmentVariable], !fromEnvironment.isEmpty {
            return URL(fileURLWithPath: fromEnvironment).standardizedFileURL
        }
        return defaultDirectory
    }

    private static let instances = NIOLockedValueBox([String: CertificateStore]())

    /// One instance per directory per process, so every fixture shares the in-memory cache.
    public static func at(_ directory: URL) -> CertificateStore {
        let key = directory.standardizedFileURL.path
        return instances.withLockedValue { instances in
            if let existing = instances[key] { return existing }
            let store = CertificateStore(directory: directory)
            instances[key] = store
            return store
        }
    }

    /// The store the resolution rule picks (`--dir`, `TLS_FIXTURES_CERTS`, default).
    public static func resolved(explicit: String? = nil) -> CertificateStore { at(resolveDirectory(explicit: explicit)) }

    /// Creates nothing until something is needed.
    public init(directory: URL) {
        self.directory = directory.standardizedFileURL
    }

    // MARK: Counters

    private static let issued = NIOLockedValueBox(0)
    /// Certificates this process has signed (leaves and authorities).
    public static var issuedCount: Int { issued.withLockedValue { $0 } }

    private let counts = NIOLockedValueBox((keys: 0, certificates: 0))
    /// Keys this store instance generated (unlike `PrivateKey.generatedCount`, not moved by other stores' work).
    public var keysGenerated: Int { counts.withLockedValue { $0.keys } }
    /// Certificates this store instance signed.
    public var certificatesIssued: Int { counts.withLockedValue { $0.certificates } }

    private func generate(_ spec: KeySpec) throws -> PrivateKey {
        let key = try spec.generate()
        counts.withLockedValue { $0.keys += 1 }
        return key
    }

    private func countIssued() {
        CertificateStore.issued.withLockedValue { $0 += 1 }
        counts.withLockedValue { $0.certificates += 1 }
    }

    /// Problems found and repaired (a damaged leaf re-issued, a damaged key moved aside), each naming its path.
    public var warnings: [String] { cache.withLockedValue { $0.warnings } }

    private func warn(_ message: String) {
        logger.warning("\(message)")
        cache.withLockedValue { $0.warnings.append(message) }
    }

    // MARK: Paths

    var caDirectory: URL { directory.appendingPathComponent("ca") }
    var keysDirectory: URL { directory.appendingPathComponent("keys") }
    var certsDirectory: URL { directory.appendingPathComponent("certs") }
    var paramsDirectory: URL { directory.appendingPathComponent("params") }
    var locksDirectory: URL { directory.appendingPathComponent("locks") }

    /// Where the authority's certificate lives in the store (`ca/NAME.pem`), whether or not it exists yet.
    public func certificatePath(_ authority: BuiltinAuthority) -> URL { caDirectory.appendingPathComponent("\(authority.rawValue).pem") }
    package func keyPath(_ authority: BuiltinAuthority) -> URL { caDirectory.appendingPathComponent("\(authority.rawValue).key") }
    package func keyPath(name: String, spec: KeySpec) -> URL { keysDirectory.appendingPathComponent("\(name).\(spec.slug).key") }
    /// Where a leaf named `name` lives in the store (`certs/NAME.pem`), whether or not it exists yet.
    public func leafPath(_ name: String) -> URL { certsDirectory.appendingPathComponent("\(name).pem") }
    func leafRecordPath(_ name: String) -> URL { certsDirectory.appendingPathComponent("\(name).json") }

    /// Checks the store (`StoreTrust`) and makes what is missing of it: the root, `subdirectory` and `locks/`.
    private func prepare(_ subdirectory: URL) throws {
        try FileSystem.ensureStoreRoot(directory, mode: 0o700)
        try FileSystem.ensureStoreSubdirectory(subdirectory, mode: 0o700)
        try FileSystem.ensureStoreSubdirectory(locksDirectory, mode: 0o700)
    }

    /// Reads one of the store's files after checking the store and the folder it is in (`StoreTrust`): reads happen
    /// without a lock too (`existingCA`, a read-only store), so they check for themselves. nil when missing.
    func read(_ file: URL, privateKey: Bool = false) throws -> Data? {
        try StoreTrust.checkRoot(directory)
        let folder = file.deletingLastPathComponent()
        if folder.standardizedFileURL.path != directory.path { try StoreTrust.checkInside(folder) }
        return try FileSystem.readStoreFile(file, privateKey: privateKey, warn: warnOnce)
    }

    /// `warn`, once per message in this process: the checks of a file run every time it is read, and a command may
    /// open the same folder as more than one store (`probe --builtin-ca` did, and said the same line twice).
    private func warnOnce(_ message: String) {
        guard CertificateStore.fileWarningsSaid.withLockedValue({ $0.insert(message).inserted }) else { return }
        warn(message)
    }
    private static let fileWarningsSaid = NIOLockedValueBox(Set<String>())

    private func locked<T>(_ item: String, in subdirectory: URL, _ body: () throws -> T) throws -> T {
        var bodyStarted = false
        do {
            try prepare(subdirectory)
            return try FileSystem.withExclusiveLock(locksDirectory.appendingPathComponent("\(item).lock")) {
                bodyStarted = true
                return try body()
            }
        } catch let lockError as PKIError where !bodyStarted && isReadOnly && !lockError.refusesTheStore {
            // A store nobody can write (a prepared store baked into a CI image, a read-only mount) cannot change
            // under us, so reading it needs no lock. If something would have to be written, the reason it cannot
            // be (read-only, permission denied) is the error worth reporting.
            do { return try body() } catch { throw lockError }
        }
    }

    /// True when this process cannot write to the store's directory at all.
    private var isReadOnly: Bool {
        FileSystem.exists(directory) && access(directory.path, W_OK) != 0
    }

    /// Refuses an output path (an export, `cert issue --out-dir`) inside the store, through symbolic links too: its files
    /// are the kit's own, and `ca export --out STORE/ca/root.key --force` wrote the CA's certificate over its key.
    public func requireOutside(_ destination: URL) throws {
        let target = FileSystem.resolved(destination.standardizedFileURL).path
        let store = FileSystem.resolved(directory).path
        if target == store || target.hasPrefix(store.hasSuffix("/") ? store : store + "/") {
            throw PKIError.insideStore(path: destination.path, store: directory.path)
        }
    }

    /// Names become file names, so they are held to a safe alphabet (no `/`, no `..`).
    package static func validate(name: String) throws {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789-_.")
        guard !name.isEmpty, name.count <= 80, !name.hasPrefix("."), !name.contains(".."),
              name.unicodeScalars.allSatisfy(allowed.contains) else {
            throw PKIError.invalidName(name, "use 1–80 lowercase letters, digits, '-', '_' or '.', not starting with '.'")
        }
    }

    /// Names the store answers to itself, whatever enters it: a built-in authority or `self` (what `issuer` names, so
    /// a certificate called so could never be chosen as one) and `ca` (`exports/ca.cer`, the built-in CA's file for
    /// app bundles). No certificate, key or scenario may take one; with each, what it stands for.
    public static let reservedNames: [String: String] = {
        var names = ["self": "the issuer name of a self-signed certificate",
                     "ca": "the built-in CA's own file, exports/ca.cer, that apps bundle"]
        for id in BuiltinAuthority.allCases {
            names[id.rawValue] = "the built-in \(id.rawValue) authority's issuer name"
        }
        return names
    }()

    /// Throws `reservedName` when `name` is one of `reservedNames`.
    public static func requireUnreserved(_ name: String) throws {
        guard let role = reservedNames[name] else { return }
        throw PKIError(code: .reservedName, subject: name, reason: "\"\(name)\" is reserved: it is \(role)",
                       fix: "choose another name")
    }

    /// Throws `authorityKey` when `key` is the key of one of the store's authorities: a certificate on it would hand a
    /// server (or anyone given the leaf's key file) the key that signs everything the store's CAs sign.
    package func requireNotAuthorityKey(spki pin: String) throws {
        for id in BuiltinAuthority.allCases {
            guard let data = try? read(keyPath(id), privateKey: true), let theirs = try? PrivateKey(pem: data),
                  (try? theirs.spkiSHA256) == pin else { continue }
            let whose = id == .root ? "built-in CA's" : "\(id.rawValue) authority's"
            throw PKIError(code: .authorityKey, subject: keyPath(id).path,
                           reason: "that key is the \(whose) own (\(keyPath(id).path)): a certificate on it would give "
                              + "its holder the key that signs for the store",
                           fix: "use a key of its own: leave the key to the store, or give another")
        }
    }

    // MARK: The built-in CA

    /// The built-in CA if one exists; throws if it exists but is damaged.
    public func existingCA() throws -> CertificateAuthority? {
        if let cached = cache.withLockedValue({ $0.authorities[.root] }) { return cached }
        // Unlocked (a look must not create a store at a mistyped --dir), so it must not repair either; but a pair that
        // does not match, or a key alone, may be a replacement half done by another process (`install`): looked at
        // again under the lock, which waits for it to finish (or finishes it, after a crash).
        let root: CertificateAuthority?
        if FileSystem.exists(stagePath(.root)) && !isReadOnly {
            // A stage left by a stopped process: settled (finished or dropped) under the lock before anything else.
            root = try locked("ca-root", in: caDirectory) { try loadRoot(.root) }
        } else {
            do { root = try loadRoot(.root, settling: false) } catch let error as PKIError
                where [.keyMismatch, .caMissing].contains(error.code) && !isReadOnly {
                root = try locked("ca-root", in: caDirectory) { try loadRoot(.root) }
            }
        }
        guard let root else { return nil }
        cache.withLockedValue { $0.authorities[.root] = root }
        return root
    }

    /// What `initializeCA` does when a CA already exists.
    public enum ExistingCAPolicy: Sendable {
        /// Throw `PKIError.caExists` (the default: devices trust it and apps pin it).
        case refuse
        /// Return the existing CA unchanged (`ca init --if-missing`).
        case keep
        /// Make a new CA and keep the old one in a new `ca/replaced-DATE/` (`replaced-DATE-2/`, … when one was retired
        /// in the same second; never deleted or overwritten); everything it signed is re-issued on next use
        /// (`ca init --force`). The new CA is made and written in full before it takes the old one's place by rename,
        /// so a failure or a kill on the way leaves the old one the store's CA.
        case replace
    }

    /// Creates the built-in CA. The existence check and the creation happen under one cross-process lock, so
    /// concurrent callers with `.keep` all end with the same single CA. Returns the CA and whether it was created.
    @discardableResult
    public func initializeCA(_ options: CAOptions = CAOptions(), ifExists policy: ExistingCAPolicy = .refuse) throws -> (ca: CertificateAuthority, created: Bool) {
        try options.check()
        let outcome = try locked("ca-root", in: caDirectory) { () throws -> (CertificateAuthority, Bool) in
            let existing: CertificateAuthority?
            do { existing = try loadRoot(.root) } catch where policy == .replace { existing = nil }
            if let existing {
                switch policy {
                case .refuse: throw PKIError.caExists(path: directory.path, fingerprint: existing.certificate.sha256Fingerprint.colonHex)
                case .keep: return (existing, false)
                case .replace: break
                }
            }
            let replacing = policy == .replace
                && (FileSystem.exists(certificatePath(.root)) || FileSystem.exists(keyPath(.root)))
            return (try createRoot(.root, options: options, retiring: replacing), true)
        }
        cache.withLockedValue { cache in
            if outcome.1 { cache = Cache(warnings: cache.warnings) }
            cache.authorities[.root] = outcome.0
        }
        return outcome
    }

    /// The built-in CA, created with default options on first use (what tests and `serve` call).
    public func ca() throws -> CertificateAuthority { try authority(.root) }

    /// Any built-in authority, created on first use.
    public func authority(_ id: BuiltinAuthority) throws -> CertificateAuthority {
        if let cached = cache.withLockedValue({ $0.authorities[id] }) { return cached }
        let made: CertificateAuthority
        if let parentID = id.parent {
            made = try loadOrCreateIntermediate(id, parent: try authority(parentID))
        } else {
            made = try locked("ca-\(id.rawValue)", in: caDirectory) {
                if let existing = try loadRoot(id) { return existing }
                // Made on first use only in a store that never had one: where it had, replacing it is the user's call.
                if id == .root { try requireNoTraceOfRoot() }
                return try createRoot(id, options: CAOptions())
            }
        }
        cache.withLockedValue { $0.authorities[id] = made }
        return made
    }

    /// The `ca/replaced-…/` folder that keeps `certificate`, a root this store had: where `initializeCA(ifExists:
    /// .replace)` put it. nil when no folder holds it.
    public func retiredFolder(of certificate: Certificate) -> URL? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: caDirectory.path)) ?? [])
            .filter { $0.hasPrefix("replaced-") }
        for name in names.sorted().reversed() {
            let folder = caDirectory.appendingPathComponent(name)
            if let data = try? read(folder.appendingPathComponent("root.pem")),
               (try? Certificate(pem: data)) == certificate {
                return folder
            }
        }
        return nil
    }

    /// Where a new root is written in full before it takes the old one's place (`install`).
    private func stagePath(_ id: BuiltinAuthority) -> URL {
        caDirectory.appendingPathComponent(".staged-\(id.rawValue)")
    }

    /// Writes a new root beside the old one and swaps it in by rename. The key and certificate go to `ca/.staged-ID/`
    /// first, so a failure (a full disk) or a kill up to there leaves the old root as it was, byte for byte. The old
    /// files are linked into `retired` before the swap, so they never lack a name; the key's rename, then the
    /// certificate's, make the swap, and `settleStage` finishes one a crash cut between the two.
    private func install(_ id: BuiltinAuthority, key: PrivateKey, certificate: Certificate,
                         retiring retired: URL?) throws {
        let stage = stagePath(id)
        let stagedKey = stage.appendingPathComponent(keyPath(id).lastPathComponent)
        let stagedCertificate = stage.appendingPathComponent(certificatePath(id).lastPathComponent)
        FileSystem.removeStage(stage)
        do {
            try FileSystem.makeDirectory(stage, mode: 0o700)
            try FileSystem.writeAtomically(try key.pem, to: stagedKey, mode: 0o600)
            try FileSystem.writeAtomically(certificate.pem, to: stagedCertificate, mode: 0o644)
        } catch {
            FileSystem.removeStage(stage)
            throw error
        }
        // For a rollback; a key that cannot be read is still kept, by its link in `retired`.
        let oldKey = try? read(keyPath(id), privateKey: true)
        var kept: [URL] = []
        do {
            if let retired {
                for file in [certificatePath(id), keyPath(id)] where FileSystem.exists(file) {
                    let copy = retired.appendingPathComponent(file.lastPathComponent)
                    try FileSystem.keep(file, at: copy)
                    kept.append(copy)
                }
            }
            try FileSystem.replace(keyPath(id), with: stagedKey)
        } catch {
            for copy in kept { unlink(copy.path) }
            if let retired { rmdir(retired.path) }
            FileSystem.removeStage(stage)
            throw error
        }
        do {
            try FileSystem.replace(certificatePath(id), with: stagedCertificate)
        } catch {
            // The old key goes back (the old certificate never left), and the copies are dropped: nothing changed.
            if let oldKey {
                try? FileSystem.writeAtomically(oldKey, to: keyPath(id), mode: 0o600)
            } else {
                unlink(keyPath(id).path)
            }
            // (A key that could not be read stays in `retired`, its copies kept.)
            if oldKey == nil { kept.removeAll() }
            for copy in kept { unlink(copy.path) }
            if let retired { rmdir(retired.path) }
            FileSystem.removeStage(stage)
            throw error
        }
        FileSystem.removeStage(stage)
    }

    /// A stage left by a process that stopped inside `install`: when its key was already swapped in, the certificate
    /// that goes with it is put beside it (the swap finished); otherwise the new root never took the old one's place,
    /// and the stage is dropped. Only under the authority's lock.
    private func settleStage(_ id: BuiltinAuthority) {
        let stage = stagePath(id)
        guard FileSystem.exists(stage) else { return }
        let stagedCertificate = stage.appendingPathComponent(certificatePath(id).lastPathComponent)
        if !FileSystem.exists(stage.appendingPathComponent(keyPath(id).lastPathComponent)),
           let data = try? read(stagedCertificate), let certificate = try? Certificate(pem: data),
           let keyData = try? read(keyPath(id), privateKey: true), let key = try? PrivateKey(pem: keyData),
           key.matches(certificate), (try? FileSystem.replace(certificatePath(id), with: stagedCertificate)) != nil {
            warn("finished replacing \(id.rawValue) in \(caDirectory.path), which a stopped process had begun")
        }
        FileSystem.removeStage(stage)
    }

    /// A new, empty `ca/replaced-DATE[-N]/` for the CA being replaced. It is new (made with `mkdir`, so a second
    /// retirement in the same second gets `-2`), so nothing in it can be overwritten.
    private func makeRetirementFolder() throws -> URL {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        return try FileSystem.makeNewDirectory(in: caDirectory, named: "replaced-\(stamp)", mode: 0o700)
    }

    /// Moves what the old root signed (the intermediates) beside it once the new root is in place: they are re-made
    /// under the new root on first use. A file that cannot be moved is said, not fatal: a stale intermediate is
    /// re-issued anyway, as its signature no longer verifies.
    private func retireDerivedAuthorities(into retired: URL) {
        for id in BuiltinAuthority.allCases where id.parent == .root {
            for file in [certificatePath(id), keyPath(id)] where FileSystem.exists(file) {
                do { try FileSystem.move(file, to: retired.appendingPathComponent(file.lastPathComponent)) } catch {
                    warn("\(error)")
                }
            }
        }
    }

    /// What shows that the store had a root once: its key without its certificate, a key set aside
    /// (`root.key.orphaned-…`), a retired CA (`replaced-…/`) or a swap cut short (`.staged-root/`). Throws `caMissing`
    /// naming them; nothing when the store never had one.
    private func requireNoTraceOfRoot() throws {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: caDirectory.path)) ?? []).sorted()
        let traces = names.filter { name in
            name == "root.key" || name.hasPrefix("root.key.") || name.hasPrefix("root.pem.")
                || name.hasPrefix("replaced-") || name == ".staged-root"
        }
        guard !traces.isEmpty else { return }
        throw PKIError.caMissing(path: certificatePath(.root).path,
                                 traces: traces.map { caDirectory.appendingPathComponent($0).path })
    }

    /// `settling` (finishing a swap a crash cut short: `settleStage`) only under the authority's lock.
    private func loadRoot(_ id: BuiltinAuthority, settling: Bool = true) throws -> CertificateAuthority? {
        if settling { settleStage(id) }
        let certificateFile = certificatePath(id)
        let keyFile = keyPath(id)
        let certificateData = try read(certificateFile)
        let keyData = try read(keyFile, privateKey: true)
        let fix = id == .root
            ? "restore it from a backup, or replace the CA with initializeCA(ifExists: .replace) (devices that trust the old one must then trust the new one)"
            : "restore it from a backup, or move it away to have a new \(id.rawValue) made"
        let code: PKIError.Code = id == .root ? .damagedCA : .damaged
        switch (certificateData, keyData) {
        case (nil, nil):
            return nil
        case (nil, .some) where id == .root:
            // A root is written whole before it is swapped in (`install`), so a key alone is a certificate lost (or a
            // swap in progress, looked at without the lock): never a reason to make a new CA over it.
            throw PKIError.caMissing(path: certificateFile.path, traces: [keyFile.path])
        case (nil, .some):
            // The scenarios' other roots are the kit's to re-make: the key is set aside (never deleted), under lock.
            if settling { FileSystem.moveAside(keyFile, reason: "orphaned") }
            return nil
        case (.some, nil):
            throw PKIError.damaged(path: keyFile.path, problem: "missing, but \(certificateFile.lastPathComponent) exists", fix: fix, code: code)
        case let (.some(certificateData), .some(keyData)):
            let certificate: Certificate
            let key: PrivateKey
            do { certificate = try Certificate(pem: certificateData) } catch {
                throw PKIError.damaged(path: certificateFile.path, problem: "\(error)", fix: fix, code: code)
            }
            do { key = try PrivateKey(pem: keyData) } catch {
                throw PKIError.damaged(path: keyFile.path, problem: "\(error)", fix: fix, code: code)
            }
            guard key.matches(certificate) else { throw PKIError.keyMismatch(path: keyFile.path) }
            let authority = CertificateAuthority(certificate: certificate, privateKey: key)
            let name = id == .root ? "the built-in CA" : "the \(id.rawValue) CA"
            if let warning = authority.expiryWarning(name: name, store: directory.path) { warnOnce(warning) }
            if let warning = authority.weakKeyWarning(name: name, store: directory.path) { warnOnce(warning) }
            return authority
        }
    }

    /// Makes a root in memory, then installs it (`install`); `retiring`: the files in place are the old root's, kept in
    /// a new `replaced-…/` with what it signed.
    private func createRoot(_ id: BuiltinAuthority, options: CAOptions,
                            retiring: Bool = false) throws -> CertificateAuthority {
        var profile = id.profile(rootCommonName: options.commonName)
        if id == .root {
            profile.validity = .days(options.days)
            profile.nameConstraints = options.nameConstraints ? .localDevelopment(addingDNSSubtrees: options.permittedDomains) : nil
        }
        try profile.subject.check()
        let key = try generate(id == .root ? options.key : id.keySpec)
        let certificate = try profile.sign(subjectKey: key, issuer: nil)
        countIssued()
        let retired = retiring ? try makeRetirementFolder() : nil
        do { try install(id, key: key, certificate: certificate, retiring: retired) } catch {
            if let retired { rmdir(retired.path) }
            throw error
        }
        if let retired { retireDerivedAuthorities(into: retired) }
        logger.info("created \(id.rawValue) \(certificate.subject) in \(caDirectory.path)")
        return CertificateAuthority(certificate: certificate, privateKey: key)
    }

    private func loadOrCreateIntermediate(_ id: BuiltinAuthority, parent: CertificateAuthority) throws -> CertificateAuthority {
        try locked("ca-\(id.rawValue)", in: caDirectory) {
            let certificateFile = certificatePath(id)
            let keyFile = keyPath(id)
            var key: PrivateKey? = nil
            if let keyData = try read(keyFile, privateKey: true) {
                key = try? PrivateKey(pem: keyData)
                if key == nil { warn("\(keyFile.path) is damaged; it was moved aside and a new \(id.rawValue) key made"); FileSystem.moveAside(keyFile, reason: "damaged") }
                else if let existing = key, !id.keySpec.matches(existing) {
                    // Made by a version that used another key type: nothing pins an intermediate, so it is simply
                    // re-made (the old key is kept beside it).
                    logger.info("\(id.rawValue) key is not \(id.keySpec); making a new one")
                    FileSystem.moveAside(keyFile, reason: "superseded")
                    key = nil
                }
            }
            if let key, let data = try read(certificateFile) {
                if let made = usableIntermediate(id, certificate: data, key: key, parent: parent) { return made }
                if (try? Certificate(pem: data)) == nil {
                    warn("\(certificateFile.path) is damaged; a new \(id.rawValue) is issued (it is not a root, so nothing pins it)")
                }
            }
            let subjectKey = try key ?? generate(id.keySpec)
            if key == nil { try FileSystem.writeAtomically(try subjectKey.pem, to: keyFile, mode: 0o600) }
            let issued = try parent.issue(id.profile(rootCommonName: ""), key: subjectKey)
            countIssued()
            try FileSystem.writeAtomically(issued.certificate.pem, to: certificateFile, mode: 0o644)
            return CertificateAuthority(certificate: issued.certificate, privateKey: subjectKey,
                                        chainToRoot: [issued.certificate] + parent.chainToRoot, root: parent.root)
        }
    }

    /// The stored intermediate when it is still good: signed by `parent`, for `key`, of the right key type, unexpired.
    private func usableIntermediate(_ id: BuiltinAuthority, certificate data: Data, key: PrivateKey,
                                    parent: CertificateAuthority) -> CertificateAuthority? {
        guard id.keySpec.matches(key), let certificate = try? Certificate(pem: data),
              certificate.issuer == parent.certificate.subject,
              verifySignature(certificate, by: parent.certificate), key.matches(certificate),
              certificate.notAfter > Date() else { return nil }
        return CertificateAuthority(certificate: certificate, privateKey: key,
                                    chainToRoot: [certificate] + parent.chainToRoot, root: parent.root)
    }

    /// The authority as it is on disk, nil when it would have to be made (or re-made): reads only, writes nothing.
    package func existingAuthority(_ id: BuiltinAuthority) throws -> CertificateAuthority? {
        if let cached = cache.withLockedValue({ $0.authorities[id] }) { return cached }
        if id == .root { return try existingCA() }
        guard let parentID = id.parent else { return try loadRoot(id, settling: false) }
        guard let parent = try existingAuthority(parentID),
              let keyData = try read(keyPath(id), privateKey: true), let key = try? PrivateKey(pem: keyData),
              let certificate = try read(certificatePath(id)) else { return nil }
        return usableIntermediate(id, certificate: certificate, key: key, parent: parent)
    }

    private func verifySignature(_ certificate: Certificate, by issuer: Certificate) -> Bool {
        certificate.isSigned(by: issuer)
    }

    // MARK: Keys

    /// The key called `name` of kind `spec`, generated once and then reused — across re-issued certificates too,
    /// which is what keeps SPKI pins valid. A damaged key file is moved aside (never deleted) and reported.
    public func key(named name: String, spec: KeySpec) throws -> PrivateKey {
        try CertificateStore.validate(name: name)
        let cacheKey = "\(name).\(spec.slug)"
        if let cached = cache.withLockedValue({ $0.keys[cacheKey] }) { return cached }
        let path = keyPath(name: name, spec: spec)
        let key = try locked("key-\(cacheKey)", in: keysDirectory) { () throws -> PrivateKey in
            if let data = try read(path, privateKey: true) {
                if let key = try? PrivateKey(pem: data), spec.matches(key) { return key }
                let aside = FileSystem.moveAside(path, reason: "damaged")
                warn("\(path.path) is not a readable \(spec) key; moved it to \(aside?.lastPathComponent ?? "?") and generated a new one")
            }
            let key = try generate(spec)
            try FileSystem.writeAtomically(try key.pem, to: path, mode: 0o600)
            return key
        }
        cache.withLockedValue { $0.keys[cacheKey] = key }
        return key
    }

    /// The types of the keys the store keeps under `name` (`keys/NAME.SPEC.key`), in file-name order.
    package func storedKeySpecs(named name: String) -> [KeySpec] {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: keysDirectory.path)) ?? []).sorted()
        return files.compactMap { file in
            guard file.hasPrefix("\(name)."), file.hasSuffix(".key") else { return nil }
            let slug = file.dropFirst(name.count + 1).dropLast(4)
            return KeySpec(slug.replacingOccurrences(of: "-", with: ":"))
        }
    }

    /// Whether the key already exists on disk (so using it generates nothing).
    public func hasKey(named name: String, spec: KeySpec) -> Bool {
        FileSystem.exists(keyPath(name: name, spec: spec))
    }

    // MARK: Leaves

    /// What a leaf was made from, stored beside it; a leaf is reused only while this is unchanged.
    struct LeafRecord: Codable {
        var fingerprint: String
        var keyFile: String
        var issuer: String
        var issuedAt: Date
    }

    /// The certificate `name` made from `profile` for the key `keyName`/`keySpec`, signed by `issuer`. Re-issued only
    /// when one of those changed, the file is damaged, or it no longer has the validity the profile intends
    /// (and, for valid certificates, when fewer than 30 days remain).
    public func credential(named name: String, profile: CertificateProfile, keyName: String, keySpec: KeySpec,
                           issuer: LeafIssuer, now: Date = Date()) throws -> Credential {
        try CertificateStore.validate(name: name)
        let signer: CertificateAuthority? = try {
            if case .authority(let id) = issuer { return try authority(id) }
            return nil
        }()
        return try credential(named: name, profile: profile, key: try self.key(named: keyName, spec: keySpec),
                              keyFile: keyPath(name: keyName, spec: keySpec).lastPathComponent, signer: signer, now: now)
    }

    /// The certificate `name` made from `profile` for `key`, signed by `signer` (a CA of the store's or the user's own;
    /// nil: self-signed). `keyFile` is recorded beside it, to say where its key is. With `refusingConcurrentChange`
    /// (a certificate a person names: `cert issue`), one written by another process while this one waited is kept and
    /// this call throws `concurrentChange`; without it (a scenario's leaf, made the same way by every runner but for
    /// the revocation URLs of its port base), the last writer's stays, and each runner serves what it made.
    package func credential(named name: String, profile: CertificateProfile, key: PrivateKey, keyFile: String,
                            signer: CertificateAuthority?, now: Date = Date(),
                            refusingConcurrentChange: Bool = false) throws -> Credential {
        try CertificateStore.validate(name: name)
        let fingerprint = try leafFingerprint(profile: profile, key: key, signer: signer)
        if let cached = cache.withLockedValue({ $0.credentials[name] }), cached.fingerprint == fingerprint,
           isStillFit(cached.credential.certificate, profile: profile, now: now) {
            return cached.credential
        }
        // What the store held before this call waited for the lock: a different certificate written in between was
        // another writer's, which a person's named certificate must not silently replace.
        let recordBefore = refusingConcurrentChange ? try read(leafRecordPath(name)) : nil
        let credential = try locked("leaf-\(name)", in: certsDirectory) { () throws -> Credential in
            if let reused = try reusableLeaf(name: name, fingerprint: fingerprint, key: key, signer: signer, profile: profile, now: now) {
                return reused
            }
            if refusingConcurrentChange, try read(leafRecordPath(name)) != recordBefore {
                throw PKIError.concurrentChange(path: leafPath(name).path)
            }
            return try whileRootStands(signer) { () throws -> Credential in
                let made: Credential
                if let signer {
                    made = try signer.issue(profile, key: key)
                } else {
                    made = try CertificateAuthority.selfSigned(profile, key: key)
                }
                countIssued()
                try FileSystem.writeAtomically(made.chainPEM, to: leafPath(name), mode: 0o644)
                let record = LeafRecord(fingerprint: fingerprint, keyFile: keyFile,
                                        issuer: signer.map { $0.certificate.subject } ?? "self", issuedAt: now)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.dateEncodingStrategy = .iso8601
                // The record is written last: it is the commit marker that says the PEM beside it is complete.
                try FileSystem.writeAtomically(try encoder.encode(record), to: leafRecordPath(name), mode: 0o644)
                return made
            }
        }
        cache.withLockedValue { $0.credentials[name] = (fingerprint, credential) }
        return credential
    }

    /// Runs `body` (signing and storing a leaf) holding the root's lock shared, so `initializeCA(ifExists: .replace)`
    /// waits for it, once it has checked that `signer`, when it chains to the built-in CA this process loaded, still
    /// chains to the store's CA: one replaced since is refused (`caReplaced`) rather than sign a leaf nothing trusts.
    private func whileRootStands<T>(_ signer: CertificateAuthority?, _ body: () throws -> T) throws -> T {
        guard let signer, let loaded = cache.withLockedValue({ $0.authorities[.root] }),
              signer.root == loaded.certificate else { return try body() }
        func check() throws -> T {
            guard let data = try read(certificatePath(.root)),
                  (try? Certificate(pem: data)) == loaded.certificate else {
                // Forgotten, so that making it again in this process (a long-running serve) reads the new CA.
                cache.withLockedValue { $0 = Cache(warnings: $0.warnings) }
                throw PKIError.caReplaced(store: directory.path)
            }
            return try body()
        }
        var locked = false
        do {
            return try FileSystem.withSharedLock(locksDirectory.appendingPathComponent("ca-root.lock")) {
                locked = true
                return try check()
            }
        } catch let error as PKIError where !locked && error.code == .storeUnavailable && isReadOnly {
            return try check()   // nothing replaces the CA of a store nobody can write
        }
    }

    /// The certificate `credential(named:…)` would return without writing anything — the stored one, unchanged — or
    /// nil when it would make (or re-make) something: a key, an authority, the certificate. Reads only, so a command
    /// can check its other outputs before the store changes. `key` nil: the key named `keyName` as stored; `signer`
    /// nil: self-signed (the caller has found the signer without making it: `existingAuthority`).
    package func reusableCredential(named name: String, profile: CertificateProfile, keyName: String, keySpec: KeySpec,
                                    key given: PrivateKey? = nil, signer: CertificateAuthority?, now: Date = Date()) throws -> Credential? {
        try CertificateStore.validate(name: name)
        guard let key = try given ?? existingKey(named: keyName, spec: keySpec) else { return nil }
        let fingerprint = try leafFingerprint(profile: profile, key: key, signer: signer)
        if let cached = cache.withLockedValue({ $0.credentials[name] }), cached.fingerprint == fingerprint,
           isStillFit(cached.credential.certificate, profile: profile, now: now) {
            return cached.credential
        }
        return try reusableLeaf(name: name, fingerprint: fingerprint, key: key, signer: signer, profile: profile, now: now)
    }

    /// The key as stored, nil when it would have to be made: reads only.
    package func existingKey(named name: String, spec: KeySpec) throws -> PrivateKey? {
        try CertificateStore.validate(name: name)
        if let cached = cache.withLockedValue({ $0.keys["\(name).\(spec.slug)"] }) { return cached }
        guard let data = try read(keyPath(name: name, spec: spec), privateKey: true),
              let key = try? PrivateKey(pem: data), spec.matches(key) else { return nil }
        return key
    }

    /// A CA certificate issued into the store (`CertificateRequest.isCA`, `cert issue --ca --name NAME`), with its key,
    /// to sign with: the user's own CA, kept beside the built-in ones. Throws `notAnAuthority` when there is no such
    /// certificate, it is not a CA, or its key is missing.
    package func storedAuthority(named name: String) throws -> CertificateAuthority {
        try CertificateStore.validate(name: name)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let pem = try read(leafPath(name)), let recordData = try read(leafRecordPath(name)),
              let record = try? decoder.decode(LeafRecord.self, from: recordData) else {
            throw PKIError(code: .notAnAuthority, subject: name, reason: "no certificate named \"\(name)\" in \(certsDirectory.path)",
                           fix: "make one first with CertificateRequest.isCA (`cert issue --ca --name \(name)`), or use a built-in authority")
        }
        let chain = try Certificate.all(pem: pem)
        guard record.keyFile.hasSuffix(".key"), !record.keyFile.contains("/"),
              let keyData = try read(keysDirectory.appendingPathComponent(record.keyFile), privateKey: true),
              let key = try? PrivateKey(pem: keyData) else {
            throw PKIError(code: .notAnAuthority, subject: name, reason: "the store has no key for \"\(name)\" (it was made with a key of the caller's own)",
                           fix: "sign with its certificate and key files instead (`cert issue --issuer-cert FILE --issuer-key FILE`)")
        }
        // The root above it: the chain's self-signed end, else the store's authority that signed the chain's last certificate.
        var root: Certificate? = nil
        if let last = chain.last, !last.isSelfSigned {
            for id in BuiltinAuthority.allCases where id.isRoot {
                if let authority = try existingAuthority(id), last.issuer == authority.certificate.subject,
                   last.isSigned(by: authority.certificate) {
                    root = authority.certificate
                    break
                }
            }
        }
        return try CertificateAuthority(chain: chain, privateKey: key, root: root)
    }

    private func reusableLeaf(name: String, fingerprint: String, key: PrivateKey, signer: CertificateAuthority?,
                              profile: CertificateProfile, now: Date) throws -> Credential? {
        guard let recordData = try read(leafRecordPath(name)) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let record = try? decoder.decode(LeafRecord.self, from: recordData) else {
            warn("\(leafRecordPath(name).path) is damaged; re-issuing \(name)")
            return nil
        }
        guard record.fingerprint == fingerprint else { return nil }
        guard let pem = try read(leafPath(name)) else { return nil }
        guard let chain = try? Certificate.all(pem: pem), let leaf = chain.first, key.matches(leaf) else {
            warn("\(leafPath(name).path) is damaged or does not match its key; re-issuing \(name)")
            return nil
        }
        guard isStillFit(leaf, profile: profile, now: now) else { return nil }
        return Credential(certificate: leaf, privateKey: key, intermediates: Array(chain.dropFirst()),
                          root: signer?.root ?? leaf)
    }

    private func isStillFit(_ certificate: Certificate, profile: CertificateProfile, now: Date) -> Bool {
        let actual = ValidityState(notBefore: certificate.notBefore, notAfter: certificate.notAfter, now: now)
        guard actual == profile.validity.intendedState(now: now) else { return false }
        if actual == .valid {
            let (_, intendedEnd) = profile.validity.resolve(now: now)
            let margin = min(30 * 86_400, intendedEnd.timeIntervalSince(now) / 2)
            return certificate.notAfter.timeIntervalSince(now) >= margin
        }
        return true
    }

    private func leafFingerprint(profile: CertificateProfile, key: PrivateKey, signer: CertificateAuthority?) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var material = try encoder.encode(profile)
        material.append(contentsOf: Array("|\(try key.spkiSHA256)|\(signer?.certificate.sha256Fingerprint.hexString ?? "self")|v1".utf8))
        return Digest.sha256(material).hexString
    }

    // MARK: DH parameters

    /// DH sizes served with a published group (RFC 2409 group 2, RFC 7919 ffdhe2048): nothing to generate.
    static let namedDHGroupBits: Set<Int> = [1024, 2048]

    /// Whether DH parameters of `bits` are ready without generating anything: a named group, or made and kept before.
    public func hasDHParameters(bits: Int) -> Bool {
        Self.namedDHGroupBits.contains(bits) || FileSystem.exists(paramsDirectory.appendingPathComponent("dh-\(bits).pem"))
    }

    /// 1024 bits: RFC 2409 group 2; 2048 bits: RFC 7919 ffdhe2048 (nothing to generate). Other sizes: generated once
    /// and kept in `params/`.
    package func dhParameters(bits: Int) throws -> DHParameters {
        if let cached = cache.withLockedValue({ $0.dh[bits] }) { return cached }
        let parameters: DHParameters
        if bits == 1024 {
            parameters = try DHParameters.rfc2409Group2()
        } else if bits == 2048 {
            parameters = try DHParameters.ffdhe2048()
        } else {
            let path = paramsDirectory.appendingPathComponent("dh-\(bits).pem")
            parameters = try locked("dh-\(bits)", in: paramsDirectory) {
                if let data = try read(path), let existing = try? DHParameters(pem: data), existing.bits == bits {
                    return existing
                }
                let fresh = try DHParameters.generate(bits: bits)
                try FileSystem.writeAtomically(try fresh.pem, to: path, mode: 0o644)
                return fresh
            }
        }
        cache.withLockedValue { $0.dh[bits] = parameters }
        return parameters
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
