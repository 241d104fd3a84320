import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ReliabilitySuite {
    /// Issue 16, item 4: the store used whatever it found. A `--dir` owned by another user, mode 0777, holding that
    /// user's unconstrained CA with a 0644 key was used without a word (`ca show` offered to install it, `serve`
    /// published it); a 0644 `root.key` in your own store stayed so; a symlinked lock file was created through, and a
    /// symlinked `ca/` or `keys/` followed and its target chmod'ed. Each case is refused (or, for your own key, fixed)
    /// with one line.
    @Suite("A store that trusts nothing it did not make", .ownThreads)
    struct StoreTrustSuite {
        static func mode(_ url: URL) -> mode_t? { FileSystem.mode(of: url) }

        /// A store with a CA, made by the CLI as the current user.
        static func madeStore(_ label: String) throws -> URL {
            let store = TestEnvironment.temporaryDirectory(label).appendingPathComponent("store")
            let made = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path])
            #expect(made.status == 0, "\(made.combined)")
            return store
        }

        static func expectRefused(_ result: Subprocess.Result, _ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(result.status == 1, "exit \(result.status): \(result.combined)", sourceLocation: sourceLocation)
            #expect(result.stderr == "Error: \(line)\n", sourceLocation: sourceLocation)
            #expect(!result.stdout.contains("BEGIN CERTIFICATE") && !result.stdout.contains("simctl"),
                    "something was offered from the refused store: \(result.stdout)", sourceLocation: sourceLocation)
        }

        @Test("a store another user owns, writable by all, with their CA and a 0644 key, is refused by every command",
              .enabled(if: TestEnvironment.isRoot && Platform.isLinux, "needs root to make a folder another user owns (setpriv)"))
        func foreignStore() throws {
            let store = TestEnvironment.temporaryDirectory("foreign").appendingPathComponent("store")
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            #expect(chown(store.path, 65534, 65534) == 0)
            let made = try TestEnvironment.tlsFixtures(asNobody: true, ["ca", "init", "--no-name-constraints", "--dir", store.path])
            #expect(made.status == 0, "nobody could not make a CA: \(made.combined)")
            let key = store.appendingPathComponent("ca/root.key")
            #expect(chmod(store.path, 0o777) == 0 && chmod(key.path, 0o644) == 0)
            let keyBefore = try Data(contentsOf: key)

            let line = "refusing \(store.path): it belongs to nobody (uid 65534), not to you, so a CA in it could be anyone's; use a store you own (--dir or TLS_FIXTURES_CERTS)"
            let port = try Ports.unused()
            for command in [["ca", "show"], ["ca", "export", "--out", "-"], ["ca", "init", "--if-missing"], ["prepare", "tls-v1-2"],
                            ["pins"], ["probe", "127.0.0.1:\(port)", "--builtin-ca"], ["serve", "tls-v1-2", "--port-base", "\(port)"]] {
                Self.expectRefused(try TestEnvironment.tlsFixtures(command + ["--dir", store.path]), line)
            }
            #expect(Self.mode(key) == 0o644, "a key in someone else's store was re-permissioned")
            #expect(try Data(contentsOf: key) == keyBefore)
            #expect(throws: PKIError.self) { try CertificateStore(directory: store).existingCA() }
        }

        @Test("your own store, or a folder in it, writable by group or others is refused", arguments: [
            ("", 0o777, "group and others"), ("", 0o770, "its group"), ("ca", 0o707, "others"),
        ])
        func writableStore(folder: String, mode: Int, who: String) throws {
            let store = try Self.madeStore("writable")
            let target = folder.isEmpty ? store : store.appendingPathComponent(folder)
            #expect(chmod(target.path, mode_t(mode)) == 0)
            let line = "refusing \(target.path): it is writable by \(who) (mode 0\(String(mode, radix: 8))), so anyone could have replaced the CA in it; run chmod go-w \(target.path) if everything in it is yours, or use another store (--dir or TLS_FIXTURES_CERTS)"
            Self.expectRefused(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store.path]), line)
            Self.expectRefused(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]), line)
            #expect(Self.mode(target) == mode_t(mode), "a refused folder was re-permissioned")
        }

        @Test("a private key readable by others in your own store is made 0600 with one warning line", arguments: ["ca/root.key", "keys"])
        func readableKey(which: String) throws {
            let store = try Self.madeStore("readablekey")
            #expect(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]).status == 0)
            let key = which == "keys"
                ? try #require(StoreAudit.files(store.appendingPathComponent("keys"), suffix: ".key").first { $0.lastPathComponent.hasPrefix("ecc256.") })
                : store.appendingPathComponent(which)
            #expect(chmod(key.path, 0o644) == 0)
            let result = try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path])
            #expect(result.status == 0, "\(result.combined)")
            #expect(result.stderr == "warning: \(key.path) was readable by others (mode 0644); made it 0600, as a private key must be. If others could read it, replace it\n")
            #expect(Self.mode(key) == 0o600)
            // Fixed once: the next run says nothing.
            #expect(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]).stderr.isEmpty)
        }

        @Test("a symbolic link inside the store is never followed: lock file, ca/, keys/, a certificate")
        func symbolicLinks() throws {
            // A lock file pointing outside: O_CREAT through it used to create the target.
            let lockStore = try Self.madeStore("locklink")
            let outside = TestEnvironment.temporaryDirectory("outside").appendingPathComponent("created-through-the-lock")
            let lock = lockStore.appendingPathComponent("locks/ca-root.lock")
            try? FileManager.default.removeItem(at: lock)
            try FileManager.default.createSymbolicLink(at: lock, withDestinationURL: outside)
            Self.expectRefused(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", lockStore.path]),
                               "refusing \(lock.path): it is a symbolic link, and the store follows none inside it; put the file or folder itself there, or open the store at the folder the link leads to")
            #expect(!FileManager.default.fileExists(atPath: outside.path), "a file was created outside the store through the lock's link")

            // ca/ and keys/ moved elsewhere (0755) and linked back: refused, and the target keeps its mode.
            for folder in ["ca", "keys"] {
                let store = try Self.madeStore("dirlink")
                #expect(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]).status == 0)
                let real = TestEnvironment.temporaryDirectory("elsewhere").appendingPathComponent(folder)
                try FileManager.default.moveItem(at: store.appendingPathComponent(folder), to: real)
                #expect(chmod(real.path, 0o755) == 0)
                try FileManager.default.createSymbolicLink(at: store.appendingPathComponent(folder), withDestinationURL: real)
                let line = "refusing \(store.appendingPathComponent(folder).path): it is a symbolic link, and the store follows none inside it; put the file or folder itself there, or open the store at the folder the link leads to"
                Self.expectRefused(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]), line)
                if folder == "ca" { Self.expectRefused(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store.path]), line) }
                #expect(Self.mode(real) == 0o755, "the link's target \(real.path) was re-permissioned")
            }

            // A certificate file that is a link (to a CA elsewhere): refused rather than served.
            let store = try Self.madeStore("filelink")
            let other = try Self.madeStore("othercaelsewhere")
            let pem = store.appendingPathComponent("ca/root.pem")
            try FileManager.default.removeItem(at: pem)
            try FileManager.default.createSymbolicLink(at: pem, withDestinationURL: other.appendingPathComponent("ca/root.pem"))
            Self.expectRefused(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store.path]),
                               "refusing \(pem.path): it is a symbolic link, and the store follows none inside it; put the file or folder itself there, or open the store at the folder the link leads to")
        }

        /// A folder above the store that anyone may write lets anyone rename the store away and put their own in its
        /// place; with the sticky bit (as /tmp has) only the store's owner may rename it.
        @Test("a store below a folder others can write without the sticky bit is refused, made or found")
        func writableParent() throws {
            let parent = TestEnvironment.temporaryDirectory("openparent").appendingPathComponent("shared")
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            #expect(chmod(parent.path, 0o777) == 0)
            let store = parent.appendingPathComponent("store")
            let line = "refusing \(store.path): the folder above it, \(parent.path), is writable by others (mode 0777) without the sticky bit, so anyone could put their own store in its place; run chmod o-w \(parent.path) (or chmod +t, as /tmp has), or use a store elsewhere (--dir or TLS_FIXTURES_CERTS)"
            // Not made there...
            Self.expectRefused(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path]), line)
            #expect(!FileManager.default.fileExists(atPath: store.path), "the store was made below a folder anyone can write")
            // ...nor used there once it is (made while the folder was safe, then the folder opened up).
            #expect(chmod(parent.path, 0o755) == 0)
            #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path]).status == 0)
            #expect(chmod(parent.path, 0o777) == 0)
            Self.expectRefused(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store.path]), line)
            Self.expectRefused(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]), line)
            // The sticky bit is what makes /tmp safe to keep a store in.
            #expect(chmod(parent.path, 0o1777) == 0)
            let shown = try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store.path])
            #expect(shown.status == 0 && shown.stderr.isEmpty, "\(shown.combined)")
        }

        /// The missing parents the kit makes for a store are checked once made, as the store itself is.
        @Test("the parents the kit makes for a new store are writable by no one else; one someone else made meanwhile is refused")
        func madeParents() throws {
            let base = TestEnvironment.temporaryDirectory("madeparents")
            let store = base.appendingPathComponent("a/b/store")
            let made = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path])
            #expect(made.status == 0, "\(made.combined)")
            for folder in ["a", "a/b"] {
                let mode = try #require(Self.mode(base.appendingPathComponent(folder)))
                #expect(mode & 0o022 == 0, "\(folder) was made writable by others (mode \(String(mode, radix: 8)))")
            }
            #expect(Self.mode(store) == 0o700)
            // The check the kit runs on each folder it made refuses one that someone else made in the meantime.
            let foreign = base.appendingPathComponent("open")
            try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
            #expect(chmod(foreign.path, 0o757) == 0)
            let refusal = #expect(throws: PKIError.self) { try StoreTrust.checkMade(foreign) }
            #expect(refusal?.code == .untrustedStore && refusal?.subject == foreign.path)
            #expect(refusal?.description == "refusing \(foreign.path): it is writable by others (mode 0757), so anyone could have replaced the CA in it; "
                        + "run chmod go-w \(foreign.path) if everything in it is yours, or use another store")
        }

        /// A key others can read that this user cannot make private (it belongs to someone else) is refused, not used.
        @Test("a readable private key that belongs to another user is refused, and left as it is",
              .enabled(if: TestEnvironment.isRoot && Platform.isLinux, "needs root to give a key to another user"))
        func foreignReadableKey() throws {
            let store = try Self.madeStore("foreignkey")
            #expect(try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path]).status == 0)
            let key = try #require(StoreAudit.files(store.appendingPathComponent("keys"), suffix: ".key").first { $0.lastPathComponent.hasPrefix("ecc256.") })
            #expect(chown(key.path, 65534, 65534) == 0 && chmod(key.path, 0o644) == 0)
            let result = try TestEnvironment.tlsFixtures(["prepare", "ecc256", "--dir", store.path])
            #expect(result.status == 1, "\(result.combined)")
            #expect(result.stderr == "Error: refusing \(key.path): this private key is readable by others (mode 0644) and cannot be made private; run chmod 600 \(key.path) as its owner (nobody (uid 65534))\n")
            #expect(Self.mode(key) == 0o644)
        }

        /// A store root prepared for every user of a machine (a CI image): only root could have made its keys
        /// readable, and only so can others use them, so they are used, with one warning per key, not one per read.
        @Test("a key root made readable, in root's store, is used by another user with one warning",
              .enabled(if: TestEnvironment.isRoot && Platform.isLinux, "needs root to prepare a store for another user (setpriv)"))
        func rootMadeReadableKey() throws {
            let store = try Self.madeStore("rootshared")
            #expect(chmod(store.path, 0o755) == 0 && chmod(store.appendingPathComponent("ca").path, 0o755) == 0)
            let key = store.appendingPathComponent("ca/root.key")
            #expect(chmod(key.path, 0o644) == 0)
            let port = try Ports.unused()
            let result = try TestEnvironment.tlsFixtures(asNobody: true, ["probe", "127.0.0.1:\(port)", "--builtin-ca", "--dir", store.path, "--timeout", "2"])
            // It got past the store to the connection (refused: nothing listens there).
            #expect(result.stderr.contains("Error: cannot connect to 127.0.0.1:\(port)"), "\(result.combined)")
            let warnings = result.stderr.split(separator: "\n").filter { $0.contains(key.path) }
            #expect(warnings == ["warning: \(key.path) is readable by others (mode 0644); root made it so, so it is used as it is, but any user here can read this key"])
            #expect(Self.mode(key) == 0o644, "root's key was re-permissioned")
        }

        @Test("the store may itself be reached through a link the user made")
        func linkedRoot() throws {
            let store = try Self.madeStore("linkedroot")
            let link = TestEnvironment.temporaryDirectory("rootlink").appendingPathComponent("store")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: store)
            let shown = try TestEnvironment.tlsFixtures(["ca", "show", "--dir", link.path])
            #expect(shown.status == 0 && shown.stderr.isEmpty, "\(shown.combined)")
        }
    }
}
