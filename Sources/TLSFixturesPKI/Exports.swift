import Foundation
import TLSFixturesWire
import TLSFixturesOpenSSL

/// File formats iOS and macOS tooling consume.
package enum ExportFormat: String, CaseIterable, Sendable, Codable {
    /// Base64 with BEGIN/END lines: `openssl`, curl, Python, Android.
    case pem
    /// Raw DER, conventionally `.cer`: what Xcode bundles for AFNetworking/Alamofire certificate pinning, and what
    /// Safari and the Settings app install as a profile.
    case der
    /// PKCS#12, conventionally `.p12`, protected with `PKCS12Export.defaultPassword`.
    case p12

    package var fileExtension: String {
        switch self {
        case .pem: return "pem"
        case .der: return "cer"
        case .p12: return "p12"
        }
    }
}


extension Credential {
    /// The identity as a PKCS#12 archive: this certificate, its private key and its intermediates, protected with
    /// `password` — what `SecPKCS12Import` turns into a `SecIdentity` for a `URLSession` client-certificate challenge,
    /// and what curl takes with `--cert-type P12`. The one place a `.p12` with a key is made (`cert issue --out-dir`,
    /// `pins` for a client-certificate scenario and the control API all use it).
    public func pkcs12(friendlyName: String = "swift-tls-fixtures client", password: String = PKCS12Export.defaultPassword) throws -> Data {
        try PKCS12Export.archive(certificate: certificate, key: privateKey, chain: intermediates, friendlyName: friendlyName, password: password)
    }
}

extension Certificate {
    /// The certificate in `format`. PKCS#12 carries only the certificate here (installing a CA's key on a device
    /// would defeat its name constraints); use `PKCS12Export.archive` to include a key on purpose.
    package func exported(as format: ExportFormat) throws -> Data {
        switch format {
        case .pem: return pem
        case .der: return der
        case .p12: return try PKCS12Export.archive(certificate: self, key: nil, friendlyName: commonName ?? subject)
        }
    }
}

/// Writes exported material to the user's files, never replacing a different file without `force`.
///
/// Every destination is checked before anything is written (the folder can be written to, no different file would be
/// replaced), so a refusal leaves every file as it was. Errors name the path and say `outputUnavailable`, never the
/// store's code: the store is not what failed.
package enum ExportWriter {
    package struct Written: Sendable, Codable, Equatable {
        package var path: String
        package var kind: String
    }

    /// What goes into one file.
    package enum Content: String, Sendable, CaseIterable {
        /// The certificate chain as served, leaf first (PEM).
        case chainPEM
        /// The leaf alone (PEM): what mkcert writes and step writes without `--bundle`, for servers that take the
        /// chain in a file of its own.
        case leafPEM
        /// The private key (PEM, PKCS#8), 0600.
        case key
        /// The leaf alone (DER, `.cer`).
        case certificateDER
        /// Leaf, key and chain (PKCS#12), 0600.
        case pkcs12
        /// The key then the chain in one PEM file (what nginx, HAProxy and `curl --cert` accept), 0600.
        case bundle

        var needsKey: Bool { self == .key || self == .pkcs12 || self == .bundle }

        var kind: String {
            switch self {
            case .chainPEM: return "certificate chain (PEM)"
            case .leafPEM: return "certificate (PEM, without the chain)"
            case .key: return "private key (PEM, PKCS#8)"
            case .certificateDER: return "certificate (DER)"
            case .pkcs12: return "PKCS#12 (password \"\(PKCS12Export.defaultPassword)\")"
            case .bundle: return "private key and certificate chain (PEM)"
            }
        }

        var mode: mode_t { needsKey ? 0o600 : 0o644 }
    }

    /// One file to write.
    package struct Destination: Sendable, Equatable {
        package var url: URL
        package var content: Content
        /// The folder may be made when missing: a folder the user named as a folder (`--out-dir`). A file's folder
        /// must exist, so a mistyped path is refused rather than made.
        package var makesFolder: Bool
        package init(_ url: URL, _ content: Content, makesFolder: Bool = false) {
            self.url = url; self.content = content; self.makesFolder = makesFolder
        }
    }

    /// A chain (leaf first) and, when there is one, the leaf's key.
    package struct Material: Sendable {
        package var chain: [Certificate]
        package var key: PrivateKey?
        package var name: String
        /// What protects a `.p12` (mkcert's is `changeit`; the kit's `PKCS12Export.defaultPassword`).
        package var password: String
        package init(chain: [Certificate], key: PrivateKey?, name: String,
                     password: String = PKCS12Export.defaultPassword) {
            self.chain = chain; self.key = key; self.name = name; self.password = password
        }
        package init(_ credential: Credential, name: String, password: String = PKCS12Export.defaultPassword) {
            self.init(chain: credential.chain, key: credential.privateKey, name: name, password: password)
        }

        func data(_ content: Content) throws -> Data {
            switch content {
            case .chainPEM: return Certificate.pem(chain)
            case .leafPEM: return chain[0].pem
            case .certificateDER: return chain[0].der
            case .key: return try requiredKey(content).pem
            case .pkcs12:
                return try PKCS12Export.archive(certificate: chain[0], key: try requiredKey(content), chain: Array(chain.dropFirst()),
                                                friendlyName: name, password: password)
            case .bundle: return try requiredKey(content).pem + Certificate.pem(chain)
            }
        }

        /// What `content` is, in words, with this material's PKCS#12 password.
        func kind(_ content: Content) -> String {
            content == .pkcs12 ? "PKCS#12 (password \"\(password)\")" : content.kind
        }

        private func requiredKey(_ content: Content) throws -> PrivateKey {
            guard let key else {
                throw PKIError(code: .invalidRequest, reason: "there is no private key to write as \(content.kind)",
                               fix: "a certificate signed from a CSR has its key with whoever made the CSR: ask only for the certificate")
            }
            return key
        }
    }

    /// `NAME.pem` (chain as served), `NAME.key` (0600), `NAME.cer` (DER leaf), `NAME.p12` (leaf + key + chain) in `directory`.
    package static func destinations(name: String, in directory: URL, withKey: Bool = true) -> [Destination] {
        let all: [(String, Content)] = [("pem", .chainPEM), ("key", .key), ("cer", .certificateDER), ("p12", .pkcs12)]
        return all.filter { withKey || !$0.1.needsKey }.map {
            Destination(directory.appendingPathComponent("\(name).\($0.0)"), $0.1, makesFolder: true)
        }
    }

    /// Refuses a destination whose folder cannot be made or written (a file where a folder should be, a folder this
    /// process may not write to, a read-only file system), before anything is made.
    package static func checkWritable(_ destinations: [Destination]) throws {
        for destination in destinations where !destination.makesFolder {
            try checkFolderExists(destination.url.deletingLastPathComponent())
        }
        for folder in Set(destinations.map { $0.url.deletingLastPathComponent().standardizedFileURL.path }) {
            try checkWritable(folder: URL(fileURLWithPath: folder))
        }
        for destination in destinations {
            var info = stat()
            if stat(destination.url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                throw PKIError.outputUnavailable(path: destination.url.path, problem: "it is a folder")
            }
        }
    }

    /// Refuses a file's folder that does not exist: a mistyped path is said, not made (as root it could be anywhere).
    package static func checkFolderExists(_ folder: URL) throws {
        guard !FileSystem.exists(folder) else { return }
        throw PKIError.outputUnavailable(path: folder.path, problem: "no such folder",
                                         fix: "make it first (mkdir -p \(folder.path)), or write to a folder that exists")
    }

    /// `folder`, or the nearest folder above it that exists when it does not: a folder this process can write to.
    package static func checkWritable(folder: URL) throws {
        var existing = folder
        while !FileSystem.exists(existing) && existing.path != "/" { existing.deleteLastPathComponent() }
        var info = stat()
        guard stat(existing.path, &info) == 0 else {
            throw PKIError.outputUnavailable(path: folder.path, problem: "cannot inspect \(existing.path): \(FileSystem.errnoText())")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw PKIError.outputUnavailable(path: folder.path, problem: "\(existing.path) is a file, not a folder")
        }
        if access(existing.path, W_OK) != 0 {
            throw PKIError.outputUnavailable(path: folder.path, problem: "\(existing.path) is not writable (\(FileSystem.errnoText()))")
        }
    }

    /// Throws `fileExists` when writing `material` would replace a file with different content, unless `force`.
    /// `material` nil stands for material not made yet (a new certificate, a new key): it differs from any file there.
    package static func checkReplaceable(_ material: Material?, _ destinations: [Destination], force: Bool) throws {
        guard !force else { return }
        for destination in destinations {
            if try !isUnchanged(destination, material) { throw PKIError.fileExists(destination.url.path) }
        }
    }

    /// True when the file is missing or already holds this content. A `.p12` embeds random salts, so it differs on
    /// every write even for the same material: it counts as unchanged when it opens to the same certificate and key.
    private static func isUnchanged(_ destination: Destination, _ material: Material?) throws -> Bool {
        guard let existing = try readOutput(destination.url) else { return true }
        guard let material else { return false }
        if destination.content == .pkcs12 {
            guard let contents = PKCS12Export.contents(existing, password: material.password) else {
                return false
            }
            let keyPin = try material.key?.spkiSHA256
            return contents.certificate == material.chain[0] && contents.keyPin == keyPin
        }
        return existing == (try material.data(destination.content))
    }

    /// Writes `material` to every destination, after checking them all (`checkWritable`, `checkReplaceable`).
    /// An unchanged file is left as it is (its `Written.kind` says so).
    package static func write(_ material: Material, to destinations: [Destination], force: Bool) throws -> [Written] {
        try checkWritable(destinations)
        try checkReplaceable(material, destinations, force: force)
        let contents = try destinations.map { (destination: $0, data: try material.data($0.content)) }
        var written: [Written] = []
        for (destination, data) in contents {
            if !force, try isUnchanged(destination, material), FileSystem.exists(destination.url) {
                let kind = material.kind(destination.content) + ", unchanged"
                written.append(Written(path: destination.url.path, kind: kind))
                continue
            }
            try asOutput(destination.url) {
                try FileSystem.createMissingDirectory(destination.url.deletingLastPathComponent(), mode: 0o755)
                try FileSystem.writeAtomically(data, to: destination.url, mode: destination.content.mode)
            }
            written.append(Written(path: destination.url.path, kind: material.kind(destination.content)))
        }
        return written
    }

    /// `NAME.pem`, `NAME.key`, `NAME.cer` and `NAME.p12` in `directory`.
    package static func write(_ credential: Credential, name: String, to directory: URL, force: Bool) throws -> [Written] {
        try write(Material(credential, name: name), to: destinations(name: name, in: directory), force: force)
    }

    /// One certificate in one format (or any one file, with `mode`).
    package static func write(_ data: Data, to url: URL, mode: mode_t = 0o644, force: Bool) throws {
        try checkReplaceable(path: url, data: data, force: force)
        try asOutput(url) {
            try FileSystem.createMissingDirectory(url.deletingLastPathComponent(), mode: 0o755)
            try FileSystem.writeAtomically(data, to: url, mode: mode)
        }
    }

    /// What `write(_:to:mode:force:)` checks first: the folder exists and can be written, and no different file is
    /// there unless `force`.
    package static func checkReplaceable(path url: URL, data: Data, force: Bool) throws {
        try checkFolderExists(url.deletingLastPathComponent())
        try checkWritable(folder: url.deletingLastPathComponent())
        if !force, let existing = try readOutput(url), existing != data {
            throw PKIError.fileExists(url.path)
        }
    }

    private static func readOutput(_ url: URL) throws -> Data? {
        try asOutput(url) { try FileSystem.read(url) }
    }

    /// The file system's errors about a user's file, as `outputUnavailable` naming that file.
    private static func asOutput<T>(_ url: URL, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as PKIError where error.code == .storeUnavailable {
            throw PKIError.outputUnavailable(path: url.path, problem: error.problem ?? error.reason)
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
