import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the store accepts on disk, as ssh's StrictModes does for `~/.ssh`: a CA found in a folder someone else could
/// write is not the user's CA, whoever made it, so it must never be offered for installation or served.
///
/// - The store's folder (reached through a symbolic link the user made, if so) and every folder in it belong to this
///   user or to root and are writable by nobody else. Anyone who pre-creates a folder in a shared temporary directory
///   could otherwise have their own CA trusted.
/// - Inside the store nothing is followed: a folder, key, certificate or lock file that is a symbolic link is
///   refused (`O_NOFOLLOW`, `lstat`), so the store never reads, creates or re-permissions anything outside itself.
/// - A private key readable by others is made private (0600) when it is the user's, with a warning; used with a warning
///   when root made it so (a store prepared for every user of a CI image); otherwise refused.
package enum StoreTrust {
    /// The store's own folder, which may be reached through a symbolic link (checked at its target).
    static func checkRoot(_ url: URL) throws {
        try checkAncestors(of: url)
        var info = stat()
        guard stat(url.path, &info) == 0 else { return }   // Missing: it will be made, by us.
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw PKIError.storeUnavailable(path: url.path, problem: "it exists and is not a directory")
        }
        try checkOwnerAndMode(info, url)
    }

    /// The folders above the store: one that others may write without the sticky bit (as /tmp has) lets anyone rename
    /// the store away and put their own in its place, link and all, so the store is refused there as ssh refuses a
    /// `~/.ssh` below such a folder. Group-writable parents are left alone: shared project folders often are, and
    /// their group is people the user chose.
    static func checkAncestors(of url: URL) throws {
        var folder = url.deletingLastPathComponent()
        while true {
            var info = stat()
            if stat(folder.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
                && info.st_mode & 0o002 != 0 && info.st_mode & 0o1000 == 0 {   // 0o1000: the sticky bit (S_ISVTX)
                throw PKIError.untrustedStore(path: url.path, problem: "the folder above it, \(folder.path), is writable by others (mode \(octal(info.st_mode))) without the sticky bit, so anyone could put their own store in its place",
                                              fix: "run chmod o-w \(folder.path) (or chmod +t, as /tmp has), or use a store elsewhere")
            }
            let parent = folder.deletingLastPathComponent()
            if parent.path == folder.path || folder.path == "/" { return }
            folder = parent
        }
    }

    /// A folder the kit made for the store (the store or one of its missing parents), checked after `mkdir`: when it
    /// turns out to exist already (someone made it between our look and our `mkdir`), it must pass as the store does.
    package static func checkMade(_ url: URL) throws {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            throw PKIError.storeUnavailable(path: url.path, problem: "cannot inspect it: \(FileSystem.errnoText())")
        }
        if (info.st_mode & S_IFMT) == S_IFLNK { throw symbolicLink(url) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw PKIError.storeUnavailable(path: url.path, problem: "it exists and is not a directory")
        }
        try checkOwnerAndMode(info, url)
    }

    /// A folder inside the store (`ca/`, `keys/`, `locks/`, …): never a symbolic link. Returns false when missing.
    @discardableResult
    static func checkInside(_ url: URL) throws -> Bool {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            if errno == ENOENT { return false }
            throw PKIError.storeUnavailable(path: url.path, problem: "cannot inspect it: \(FileSystem.errnoText())")
        }
        if (info.st_mode & S_IFMT) == S_IFLNK { throw symbolicLink(url) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw PKIError.storeUnavailable(path: url.path, problem: "it exists and is not a directory")
        }
        try checkOwnerAndMode(info, url)
        return true
    }

    static func checkOwnerAndMode(_ info: stat, _ url: URL) throws {
        if info.st_uid != geteuid() && info.st_uid != 0 {
            throw PKIError.untrustedStore(path: url.path, problem: "it belongs to \(userName(info.st_uid)), not to you, so a CA in it could be anyone's",
                                          fix: "use a store you own")
        }
        if info.st_mode & 0o022 != 0 {
            let who = info.st_mode & 0o020 != 0 ? (info.st_mode & 0o002 != 0 ? "group and others" : "its group") : "others"
            throw PKIError.untrustedStore(path: url.path, problem: "it is writable by \(who) (mode \(octal(info.st_mode))), so anyone could have replaced the CA in it",
                                          fix: "run chmod go-w \(url.path) if everything in it is yours, or use another store")
        }
    }

    static func symbolicLink(_ url: URL) -> PKIError {
        .untrustedStore(path: url.path, problem: "it is a symbolic link, and the store follows none inside it",
                        fix: "put the file or folder itself there, or open the store at the folder the link leads to", code: .untrustedStoreFile)
    }

    /// Checks an open store file (`fd`, opened with `O_NOFOLLOW`): a regular file; a private key readable by others is
    /// made 0600 when it is this user's (`warn` says so) and refused otherwise.
    static func checkFile(_ fd: Int32, _ url: URL, privateKey: Bool, warn: (String) -> Void) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw PKIError.storeUnavailable(path: url.path, problem: "cannot inspect it: \(FileSystem.errnoText())")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw PKIError.untrustedStore(path: url.path, problem: "it is not a regular file", fix: "move it out of the store", code: .untrustedStoreFile)
        }
        guard privateKey, info.st_mode & 0o077 != 0 else { return }
        if info.st_uid == geteuid() && fchmod(fd, 0o600) == 0 {
            warn("\(url.path) was readable by others (mode \(octal(info.st_mode))); made it 0600, as a private key must be. If others could read it, replace it")
            return
        }
        if info.st_uid == 0 && geteuid() != 0 {
            // A store root prepared for other users (a CI image): only root could have made it so, and only while
            // others can read it can they use it. Said once per file, then used.
            warn("\(url.path) is readable by others (mode \(octal(info.st_mode))); root made it so, so it is used as it is, but any user here can read this key")
            return
        }
        throw PKIError.untrustedStore(path: url.path, problem: "this private key is readable by others (mode \(octal(info.st_mode))) and cannot be made private",
                                      fix: "run chmod 600 \(url.path) as its owner (\(userName(info.st_uid)))", code: .untrustedStoreFile)
    }

    static func octal(_ mode: mode_t) -> String { "0" + String(mode & 0o7777, radix: 8) }

    static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "\(String(cString: name)) (uid \(uid))"
    }
}
