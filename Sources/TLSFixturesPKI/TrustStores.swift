import Foundation
import TLSFixturesOpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This machine's trust stores, which `ca install` and `ca uninstall` change (mkcert's `-install`): only ever when one
/// of them is asked for by name, never as a side effect of another command.
///
/// - `system`: the operating system's store on Linux — the PEM goes to `/usr/local/share/ca-certificates/` and
///   `update-ca-certificates` runs (Debian, Ubuntu, Alpine; its hooks also update Java's `cacerts` where
///   ca-certificates-java is installed), or to `/etc/pki/ca-trust/source/anchors/` and `update-ca-trust extract` runs
///   (Fedora, RHEL). OpenSSL, curl, libcurl (FoundationNetworking's URLSession), Python and Node read its bundle.
/// - `nss`: Chromium's `~/.pki/nssdb` (made when missing, as Chromium would) and every Firefox profile's database,
///   through NSS's `certutil`.
/// - `keychain`: the macOS login keychain, through `security add-trusted-cert` (macOS only).
/// - `java`: a Java `cacerts` keystore, through the JDK's `keytool` (what mkcert's `-install` does when `JAVA_HOME` is
///   set): `Environment.javaCacerts`, else `$JAVA_HOME/lib/security/cacerts`, else the one beside the `java` on
///   `PATH`; store password `changeit`, the JDK's default.
///
/// Only this CA's own entries are touched: a file and a nickname carrying its fingerprint. Programs are found on
/// `PATH` (and `/usr/sbin`, `/sbin`) and run through `Environment.run`, the seam tests replace; `Environment.root`
/// moves every system path under another folder, so tests never touch the machine's own stores.
package struct TrustStores: Sendable {
    package enum Store: String, CaseIterable, Sendable, Codable {
        case system, nss, keychain, java
    }

    /// The password of a JDK's `cacerts` (the JDK's default, which mkcert uses too).
    package static let javaStorePassword = "changeit"

    /// What a store is, where, and what happened to the CA there.
    package struct Outcome: Sendable, Codable, Equatable {
        package var store: Store
        /// The file, database or keychain changed (or looked at).
        package var location: String
        /// `installed`, `already installed`, `removed` or `not installed`.
        package var action: String
    }

    /// Where the stores are and how programs run.
    package struct Environment: Sendable {
        /// `/`, or a folder standing in for it: every system path is taken under it (`--trust-root`).
        package var root: URL
        /// The user's home: `~/.pki/nssdb`, Firefox profiles, the login keychain.
        package var home: URL
        /// Whether this is macOS (the keychain exists only there).
        package var isMacOS: Bool
        /// The path of a program, nil when it is not installed.
        package var locate: @Sendable (String) -> String?
        /// Runs a program (a path from `locate`) with arguments.
        package var run: @Sendable (String, [String]) throws -> SimulatorTrust.Tool.Output
        /// The Java keystore to change (`ca install --java --cacerts FILE`); nil: the JDK's own (see `java`).
        package var javaCacerts: URL? = nil
        /// `$JAVA_HOME`, where the JDK's `cacerts` and `keytool` are looked for first.
        package var javaHome: URL? = nil

        package init(root: URL, home: URL, isMacOS: Bool, locate: @escaping @Sendable (String) -> String?,
                     run: @escaping @Sendable (String, [String]) throws -> SimulatorTrust.Tool.Output) {
            self.root = root; self.home = home; self.isMacOS = isMacOS; self.locate = locate; self.run = run
        }

        /// This machine: `/`, `$HOME`, programs from `PATH` plus the sbin folders (a user's PATH often lacks them).
        package static func current(
            root: URL? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
        ) -> Environment {
            #if os(macOS)
            let isMacOS = true
            #else
            let isMacOS = false
            #endif
            let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
            let folders = path + ["/usr/sbin", "/sbin"]
            var found = Environment(
                root: root ?? URL(fileURLWithPath: "/"),
                home: URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()),
                isMacOS: isMacOS,
                locate: { name in
                    folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
                },
                run: { path, arguments in try SimulatorTrust.Tool.launch(path, arguments) })
            found.javaHome = environment["JAVA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            return found
        }

        func path(_ absolute: String) -> URL { root.appendingPathComponent(String(absolute.dropFirst())) }
        var isRealRoot: Bool { root.standardizedFileURL.path == "/" }
    }

    package var environment: Environment

    package init(environment: Environment = .current()) { self.environment = environment }

    // MARK: Install

    /// Adds `certificate` (kept at `pemFile`) to each store; throws `trustStoreUnavailable` for the first one that
    /// cannot be changed, saying why (permission, a missing program), before anything else is tried.
    package func install(_ certificate: Certificate, pemFile: URL, into stores: [Store]) throws -> [Outcome] {
        let plans = try stores.map { try plan($0) }
        var outcomes: [Outcome] = []
        for plan in plans {
            switch plan {
            case .system(let system): outcomes.append(try installSystem(certificate, system))
            case .nss(let certutil, let databases):
                outcomes += try installNSS(certificate, pemFile: pemFile, certutil: certutil, databases: databases)
            case .keychain(let security, let keychain):
                outcomes.append(try installKeychain(pemFile: pemFile, security: security, keychain: keychain))
            case .java(let keytool, let cacerts):
                let listed = try environment.run(keytool, javaArguments(["-list"], certificate, cacerts))
                if listed.status == 0 {
                    outcomes.append(Outcome(store: .java, location: cacerts.path, action: "already installed"))
                    continue
                }
                let importing = ["-importcert", "-noprompt", "-trustcacerts", "-file", pemFile.path]
                try runChecked(keytool, javaArguments(importing, certificate, cacerts))
                outcomes.append(Outcome(store: .java, location: cacerts.path, action: "installed"))
            }
        }
        return outcomes
    }

    /// Takes `certificate` out of each store again (this CA's entries only).
    package func uninstall(_ certificate: Certificate, pemFile: URL, from stores: [Store]) throws -> [Outcome] {
        let plans = try stores.map { try plan($0) }
        var outcomes: [Outcome] = []
        for plan in plans {
            switch plan {
            case .system(let system):
                let file = system.directory.appendingPathComponent(fileName(certificate))
                guard FileManager.default.fileExists(atPath: file.path) else {
                    outcomes.append(Outcome(store: .system, location: file.path, action: "not installed"))
                    continue
                }
                guard unlink(file.path) == 0 else { throw unavailable(.system, file.path, FileSystem.errnoText()) }
                // Debian's documented way to drop a local CA: --fresh rebuilds the links and the bundle without it.
                try runChecked(system.tool, system.arguments + (system.arguments == ["extract"] ? [] : ["--fresh"]))
                try removeFromBundle(certificate, system)
                outcomes.append(Outcome(store: .system, location: file.path, action: "removed"))
            case .nss(let certutil, let databases):
                for database in databases where Self.hasDatabase(database) {
                    let nick = nickname(certificate)
                    let listed = try environment.run(certutil, ["-d", "sql:\(database.path)", "-L", "-n", nick])
                    guard listed.status == 0 else {
                        outcomes.append(Outcome(store: .nss, location: database.path, action: "not installed"))
                        continue
                    }
                    try runChecked(certutil, ["-d", "sql:\(database.path)", "-D", "-n", nick])
                    outcomes.append(Outcome(store: .nss, location: database.path, action: "removed"))
                }
            case .keychain(let security, let keychain):
                // Trust settings first (they outlive the certificate otherwise), then the certificate itself.
                _ = try environment.run(security, ["remove-trusted-cert", pemFile.path])
                let sha1 = Digest.sha1(certificate.der).hexString.uppercased()
                let deleted = try environment.run(security, ["delete-certificate", "-Z", sha1, keychain.path])
                let action = deleted.status == 0 ? "removed" : "not installed"
                outcomes.append(Outcome(store: .keychain, location: keychain.path, action: action))
            case .java(let keytool, let cacerts):
                let listed = try environment.run(keytool, javaArguments(["-list"], certificate, cacerts))
                guard listed.status == 0 else {
                    outcomes.append(Outcome(store: .java, location: cacerts.path, action: "not installed"))
                    continue
                }
                try runChecked(keytool, javaArguments(["-delete"], certificate, cacerts))
                outcomes.append(Outcome(store: .java, location: cacerts.path, action: "removed"))
            }
        }
        return outcomes
    }

    // MARK: Plans

    private struct SystemPlan {
        var directory: URL
        var tool: String
        var arguments: [String]
        /// The bundle the tool writes, which clients read (Debian's `ca-certificates.crt`); nil where not known.
        var bundle: URL? = nil
        /// What the tool needs to exist under a stand-in root (`--trust-root`): folders, then files.
        var skeleton: (folders: [URL], files: [URL]) = ([], [])
    }

    private enum Plan {
        case system(SystemPlan)
        case nss(certutil: String, databases: [URL])
        case keychain(security: String, keychain: URL)
        case java(keytool: String, cacerts: URL)
    }

    /// What changing `store` takes, checked before anything changes: the program, and write access to its folder.
    private func plan(_ store: Store) throws -> Plan {
        switch store {
        case .system:
            guard !environment.isMacOS else {
                throw PKIError(code: .trustStoreUnavailable, subject: "system",
                               reason: "macOS keeps trusted roots in keychains, not in a system folder",
                               fix: "use the keychain store")
            }
            let plan: SystemPlan
            if let tool = environment.locate("update-ca-certificates") {
                let directory = environment.path("/usr/local/share/ca-certificates")
                var arguments: [String] = []
                if !environment.isRealRoot {
                    // Debian's script takes every folder it uses as an option: all of them under the stand-in root.
                    arguments = ["--certsconf", environment.path("/etc/ca-certificates.conf").path,
                                 "--certsdir", environment.path("/usr/share/ca-certificates").path,
                                 "--localcertsdir", directory.path,
                                 "--etccertsdir", environment.path("/etc/ssl/certs").path,
                                 "--hooksdir", environment.path("/etc/ca-certificates/update.d").path]
                }
                plan = SystemPlan(directory: directory, tool: tool, arguments: arguments,
                                  bundle: environment.path("/etc/ssl/certs/ca-certificates.crt"),
                                  skeleton: environment.isRealRoot ? ([], []) : (
                                    ["/etc/ssl/certs", "/usr/share/ca-certificates", "/etc/ca-certificates/update.d"]
                                        .map(environment.path), [environment.path("/etc/ca-certificates.conf")]))
            } else if let tool = environment.locate("update-ca-trust"), environment.isRealRoot {
                let anchors = environment.path("/etc/pki/ca-trust/source/anchors")
                plan = SystemPlan(directory: anchors, tool: tool, arguments: ["extract"])
            } else {
                throw PKIError(code: .trustStoreUnavailable, subject: "system",
                               reason: "neither update-ca-certificates nor update-ca-trust is installed, so there "
                                   + "is no system store to add to",
                               fix: "install the ca-certificates package, or give clients the CA file (curl --cacert, "
                                   + "SSL_CERT_FILE)")
            }
            try requireWritable(plan.directory, store: .system,
                                why: "the system store belongs to root: run it with sudo, naming the store "
                                    + "(sudo changes HOME)")
            return .system(plan)
        case .nss:
            guard let certutil = environment.locate("certutil") else {
                throw PKIError(code: .trustStoreUnavailable, subject: "nss", reason: "NSS's certutil is not installed",
                               fix: "install it (Debian/Ubuntu: apt install libnss3-tools; Fedora: dnf install "
                                   + "nss-tools; macOS: brew install nss)")
            }
            var databases = [environment.home.appendingPathComponent(".pki/nssdb")]
            let firefox = [".mozilla/firefox", "snap/firefox/common/.mozilla/firefox",
                           "Library/Application Support/Firefox/Profiles"]
            for profiles in firefox {
                let folder = environment.home.appendingPathComponent(profiles)
                let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
                databases += entries.sorted().map { folder.appendingPathComponent($0) }.filter(Self.hasDatabase)
            }
            return .nss(certutil: certutil, databases: databases)
        case .keychain:
            guard environment.isMacOS else {
                throw PKIError(code: .trustStoreUnavailable, subject: "keychain",
                               reason: "the keychain store exists on macOS only",
                               fix: "on Linux use the system and nss stores")
            }
            guard let security = environment.locate("security") else {
                throw PKIError(code: .trustStoreUnavailable, subject: "keychain",
                               reason: "/usr/bin/security was not found",
                               fix: "run it on macOS, where it is part of the system")
            }
            let keychain = environment.home.appendingPathComponent("Library/Keychains/login.keychain-db")
            return .keychain(security: security, keychain: keychain)
        case .java:
            let fromHome = environment.javaHome.map { $0.appendingPathComponent("bin/keytool").path }
            guard let keytool = fromHome.flatMap({ FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil })
                    ?? environment.locate("keytool") else {
                throw PKIError(code: .trustStoreUnavailable, subject: "java",
                               reason: "the JDK's keytool is not installed",
                               fix: "install a JDK (Debian/Ubuntu: apt install default-jdk-headless), or set JAVA_HOME")
            }
            let java = environment.javaHome.map { $0.appendingPathComponent("bin/java").path }
                ?? environment.locate("java")
            // The JDK's own: bin/java's folder's sibling lib/security/cacerts (through the alternatives' links).
            let beside = java.map {
                URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent()
                    .deletingLastPathComponent().appendingPathComponent("lib/security/cacerts")
            }
            guard let cacerts = environment.javaCacerts ?? beside, FileManager.default.fileExists(atPath: cacerts.path)
            else {
                let looked = (environment.javaCacerts ?? beside)?.path ?? "JAVA_HOME/lib/security/cacerts"
                throw PKIError(code: .trustStoreUnavailable, subject: "java",
                               reason: "no Java cacerts keystore at \(looked)",
                               fix: "name the keystore (javaCacerts), or set JAVA_HOME to the JDK whose cacerts to "
                                  + "change")
            }
            let target = cacerts.resolvingSymlinksInPath()
            try requireWritable(target.deletingLastPathComponent(), store: .java,
                                why: "the JDK's cacerts belongs to root: run it with sudo, naming the store (sudo "
                                    + "changes HOME)")
            if access(target.path, W_OK) != 0 {
                throw PKIError(code: .trustStoreUnavailable, subject: "java",
                               reason: "cannot write \(target.path) (\(FileSystem.errnoText()))",
                               fix: "run it as a user who may (the JDK's cacerts belongs to root: sudo)")
            }
            return .java(keytool: keytool, cacerts: cacerts)
        }
    }

    private func installSystem(_ certificate: Certificate, _ plan: SystemPlan) throws -> Outcome {
        let file = plan.directory.appendingPathComponent(fileName(certificate))
        let before = try? Data(contentsOf: file)
        let already = before == certificate.pem
        if already {
            try runChecked(plan.tool, plan.arguments)
            return Outcome(store: .system, location: file.path, action: "already installed")
        }
        // The folders this install makes, deepest first: taken back out, with the file, if it fails part-way.
        var made: [URL] = []
        var folder = plan.directory
        while !FileSystem.exists(folder) && folder.path != "/" {
            made.append(folder)
            folder.deleteLastPathComponent()
        }
        // Under a stand-in root the tool's own folders may be missing (an empty --trust-root): made as a fresh system
        // has them, so it does not fail in them ("can't cd to …/etc/ssl/certs").
        for needed in plan.skeleton.folders where !FileSystem.exists(needed) {
            var missing: [URL] = []
            var folder = needed
            while !FileSystem.exists(folder) && folder.path != "/" {
                missing.append(folder)
                folder.deleteLastPathComponent()
            }
            made = missing + made
        }
        var madeFiles: [URL] = []
        do {
            for folder in plan.skeleton.folders { try FileSystem.createMissingDirectory(folder, mode: 0o755) }
            for file in plan.skeleton.files where !FileSystem.exists(file) {
                try FileSystem.writeAtomically(Data(), to: file, mode: 0o644)
                madeFiles.append(file)
            }
            try FileSystem.createMissingDirectory(plan.directory, mode: 0o755)
            do { try FileSystem.writeAtomically(certificate.pem, to: file, mode: 0o644) } catch let error as PKIError {
                throw unavailable(.system, file.path, error.problem ?? error.reason)
            }
            try runChecked(plan.tool, plan.arguments)
        } catch {
            // The tool refused (a half-made root, say): the file it was given would otherwise stay behind and be picked
            // up, unasked, by the next update of that store. Put back what was there: nothing, or the file as it was.
            if let before {
                try? FileSystem.writeAtomically(before, to: file, mode: 0o644)
            } else {
                try? FileManager.default.removeItem(at: file)
            }
            for file in madeFiles { unlink(file.path) }
            // rmdir: only a folder left empty goes; deepest first.
            for folder in made.sorted(by: { $0.path.count > $1.path.count }) { rmdir(folder.path) }
            throw error
        }
        return Outcome(store: .system, location: file.path, action: "installed")
    }

    private func installNSS(_ certificate: Certificate, pemFile: URL, certutil: String,
                            databases: [URL]) throws -> [Outcome] {
        var outcomes: [Outcome] = []
        let nick = nickname(certificate)
        for database in databases {
            if !Self.hasDatabase(database) {
                // A fresh profile has no database, and certutil -A then fails with SEC_ERROR_BAD_DATABASE: make it as
                // Chromium does (no password).
                try FileSystem.createMissingDirectory(database, mode: 0o700)
                try runChecked(certutil, ["-d", "sql:\(database.path)", "-N", "--empty-password"])
            }
            let listed = try environment.run(certutil, ["-d", "sql:\(database.path)", "-L", "-n", nick])
            if listed.status == 0 {
                outcomes.append(Outcome(store: .nss, location: database.path, action: "already installed"))
                continue
            }
            // C,,: a trusted CA for TLS servers only (not for email or code signing).
            try runChecked(certutil, ["-d", "sql:\(database.path)", "-A", "-t", "C,,", "-n", nick, "-i", pemFile.path])
            outcomes.append(Outcome(store: .nss, location: database.path, action: "installed"))
        }
        return outcomes
    }

    private func installKeychain(pemFile: URL, security: String, keychain: URL) throws -> Outcome {
        // The login keychain needs no sudo; macOS asks the user to confirm the trust setting.
        try runChecked(security, ["add-trusted-cert", "-r", "trustRoot", "-k", keychain.path, pemFile.path])
        return Outcome(store: .keychain, location: keychain.path, action: "installed")
    }

    /// Takes this CA out of the system bundle if the tool left it there. Debian's update-ca-certificates writes the
    /// bundle only when it adds a certificate, so with none left (an otherwise empty root) the old bundle, this CA in
    /// it, stays and clients still trust it. Its exact PEM block (the tool copies the file as it was) is removed;
    /// throws when the CA is still in the bundle afterwards, rather than report it removed.
    private func removeFromBundle(_ certificate: Certificate, _ plan: SystemPlan) throws {
        guard let bundle = plan.bundle, let data = try? Data(contentsOf: bundle) else { return }
        let block = String(decoding: certificate.pem, as: UTF8.self)
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains(block) else { return }
        let without = text.replacingOccurrences(of: block.hasSuffix("\n") ? block : block + "\n", with: "")
        do { try FileSystem.writeAtomically(Data(without.utf8), to: bundle, mode: 0o644) } catch let error as PKIError {
            throw unavailable(.system, bundle.path, error.problem ?? error.reason)
        }
        if let again = try? Data(contentsOf: bundle), String(decoding: again, as: UTF8.self).contains(block) {
            throw PKIError(code: .trustStoreUnavailable, subject: "system",
                           reason: "\(bundle.path) still holds the CA after \(plan.tool) ran",
                           fix: "remove its block from the bundle by hand, then run \(plan.tool) --fresh")
        }
    }

    // MARK: Helpers

    /// An NSS database in the SQL format (`cert9.db`), the only one current NSS makes.
    private static func hasDatabase(_ folder: URL) -> Bool {
        FileManager.default.fileExists(atPath: folder.appendingPathComponent("cert9.db").path)
    }

    /// The CA's file in the system store: one name per CA, so a new CA never replaces the file of an old one.
    package func fileName(_ certificate: Certificate) -> String {
        "swift-tls-fixtures-\(certificate.sha256Fingerprint.hexString.prefix(16)).crt"
    }

    /// keytool's arguments for this CA's entry in `cacerts`: its alias (one per CA, as the system store's file name),
    /// the keystore and its password.
    private func javaArguments(_ command: [String], _ certificate: Certificate, _ cacerts: URL) -> [String] {
        command + ["-alias", "swift-tls-fixtures-\(certificate.sha256Fingerprint.hexString.prefix(16))",
                   "-keystore", cacerts.path, "-storepass", Self.javaStorePassword]
    }

    /// The CA's nickname in an NSS database.
    package func nickname(_ certificate: Certificate) -> String {
        "swift-tls-fixtures CA \(certificate.sha256Fingerprint.hexString.prefix(16))"
    }

    private func requireWritable(_ directory: URL, store: Store, why: String) throws {
        var existing = directory
        while !FileSystem.exists(existing) && existing.path != "/" { existing.deleteLastPathComponent() }
        if access(existing.path, W_OK) != 0 {
            throw PKIError(code: .trustStoreUnavailable, subject: store.rawValue,
                           reason: "cannot write \(existing.path) (\(FileSystem.errnoText()))", fix: why)
        }
    }

    private func runChecked(_ tool: String, _ arguments: [String]) throws {
        let output = try environment.run(tool, arguments)
        guard output.status == 0 else {
            let said = output.stderr.split(separator: "\n").first.map(String.init) ?? "no message"
            throw PKIError(code: .trustStoreUnavailable, subject: tool,
                           reason: "`\(([tool] + arguments).joined(separator: " "))` failed (exit \(output.status)): "
                               + said,
                           fix: "nothing else was changed after it; fix what it says and run the command again")
        }
    }

    private func unavailable(_ store: Store, _ path: String, _ problem: String) -> PKIError {
        PKIError(code: .trustStoreUnavailable, subject: store.rawValue, reason: "cannot write \(path): \(problem)",
                 fix: "run it as a user who may (the system store belongs to root: sudo)")
    }
}
