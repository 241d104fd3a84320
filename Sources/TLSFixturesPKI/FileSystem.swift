import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// POSIX file operations the store needs and Foundation does not offer: exclusive advisory locks, writes that are
/// atomic and carry an exact mode, and directories with an exact mode.
package enum FileSystem {
    /// Runs `body` holding an exclusive `flock` on `lockFile`. `flock` locks belong to the open file description,
    /// so they exclude other processes *and* other threads of this process (each call opens its own descriptor).
    /// The lock file is never followed if it is a symbolic link (`O_NOFOLLOW`): `O_CREAT` through a link would create
    /// a file wherever it points.
    static func withExclusiveLock<T>(_ lockFile: URL, _ body: () throws -> T) throws -> T {
        try withLock(lockFile, LOCK_EX, body)
    }

    /// `withExclusiveLock`, but shared: holders exclude only an exclusive holder (one that replaces what they read).
    static func withSharedLock<T>(_ lockFile: URL, _ body: () throws -> T) throws -> T {
        try withLock(lockFile, LOCK_SH, body)
    }

    private static func withLock<T>(_ lockFile: URL, _ operation: Int32, _ body: () throws -> T) throws -> T {
        let fd = open(lockFile.path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP { throw StoreTrust.symbolicLink(lockFile) }
            throw PKIError.storeUnavailable(path: lockFile.deletingLastPathComponent().path, problem: errnoText())
        }
        defer { close(fd) }
        try StoreTrust.checkFile(fd, lockFile, privateKey: false, warn: { _ in })
        while flock(fd, operation) != 0 {
            if errno != EINTR { throw PKIError.storeUnavailable(path: lockFile.path, problem: "cannot lock: \(errnoText())") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// Writes to a temporary file beside `url`, flushes it to disk, then renames it over `url`: a reader sees the old
    /// file or the new one, never half of either, even if this process dies midway.
    package static func writeAtomically(_ data: Data, to url: URL, mode: mode_t) throws {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let fd = open(temporary.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw PKIError.storeUnavailable(path: directory.path, problem: "cannot write \(url.lastPathComponent): \(errnoText())") }
        var failure: String? = nil
        // The umask must not widen or narrow a key file's mode.
        if fchmod(fd, mode) != 0 { failure = errnoText() }
        data.withUnsafeBytes { raw in
            var offset = 0
            while failure == nil && offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; failure = errnoText() } else { offset += n }
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = errnoText() }
        close(fd)
        if failure == nil && rename(temporary.path, url.path) != 0 { failure = errnoText() }
        if let failure {
            unlink(temporary.path)
            throw PKIError.storeUnavailable(path: directory.path, problem: "cannot write \(url.lastPathComponent): \(failure)")
        }
    }

    /// The store's own folder: checked (`StoreTrust.checkRoot`: ours or root's, writable by nobody else), created with
    /// its parents when missing, and tightened to `mode` when it is ours (a store left 0755 by an older tool).
    package static func ensureStoreRoot(_ url: URL, mode: mode_t) throws {
        try StoreTrust.checkRoot(url)
        if FileManager.default.fileExists(atPath: url.path) {
            try ensure(url, mode: mode, exists: true)
            return
        }
        // Each folder made here (parents at 0755, the store at `mode`) is checked once made: one that appeared in the
        // meantime is someone else's until shown otherwise.
        try createMissingDirectory(url, mode: mode, check: StoreTrust.checkMade)
        chmod(url.path, mode)   // mkdir's mode passes through the umask
    }

    /// A folder inside the store (`ca/`, `keys/`, …): never a symbolic link (`StoreTrust.checkInside`), so it is never
    /// followed nor its target re-permissioned; created when missing, tightened to `mode` when ours.
    package static func ensureStoreSubdirectory(_ url: URL, mode: mode_t) throws {
        try ensure(url, mode: mode, exists: try StoreTrust.checkInside(url))
    }

    private static func ensure(_ url: URL, mode: mode_t, exists: Bool) throws {
        if exists {
            var info = stat()
            if lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR && (info.st_mode & 0o777) != mode
                && info.st_uid == geteuid() {
                chmod(url.path, mode)
            }
            return
        }
        try createMissingDirectory(url, mode: mode)
        chmod(url.path, mode)   // mkdir's mode passes through the umask
    }

    /// For the user's folders (export destinations, a store's parents): creates `url` and its parents with `mode` when
    /// missing and never changes the permissions of one that exists — `--out ~/ca.cer` must not re-permission `~`.
    /// `check` runs on each folder this call made (or found made by someone else between its look and its `mkdir`).
    static func createMissingDirectory(_ url: URL, mode: mode_t, check: ((URL) throws -> Void)? = nil) throws {
        var info = stat()
        if stat(url.path, &info) == 0 { return }
        let parent = url.deletingLastPathComponent()
        if parent.path != url.path && parent.path != "/" { try createMissingDirectory(parent, mode: 0o755, check: check) }
        if mkdir(url.path, mode) != 0 && errno != EEXIST {
            throw PKIError.storeUnavailable(path: url.path, problem: errnoText())
        }
        try check?(url)
    }

    static func exists(_ url: URL) -> Bool { access(url.path, F_OK) == 0 }

    /// `url` with every symbolic link in its existing part resolved (`realpath` of the deepest existing folder, then
    /// the rest as written): where a write to it would really land.
    static func resolved(_ url: URL) -> URL {
        var existing = url
        var rest: [String] = []
        while existing.path != "/" && !exists(existing) {
            rest.insert(existing.lastPathComponent, at: 0)
            existing.deleteLastPathComponent()
        }
        guard let real = realpath(existing.path, nil) else { return url }
        defer { free(real) }
        return rest.reduce(URL(fileURLWithPath: String(cString: real))) { $0.appendingPathComponent($1) }
    }

    /// Reads a file of the store: never through a symbolic link (`O_NOFOLLOW`), only a regular file, and a private key
    /// only when others cannot read it (see `StoreTrust.checkFile`). nil when missing.
    static func readStoreFile(_ url: URL, privateKey: Bool, warn: (String) -> Void) throws -> Data? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw StoreTrust.symbolicLink(url) }
            if errno == EACCES || errno == EPERM {
                throw PKIError.storeFileUnreadable(path: url.path, problem: errnoText())
            }
            throw PKIError.storeUnavailable(path: url.path, problem: "cannot read it: \(errnoText())")
        }
        defer { close(fd) }
        try StoreTrust.checkFile(fd, url, privateKey: privateKey, warn: warn)
        return try readAll(fd, url)
    }

    /// Reads a whole file, turning "missing" into nil and anything else into a one-line error naming the path.
    static func read(_ url: URL) throws -> Data? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw PKIError.storeUnavailable(path: url.path, problem: "cannot read it: \(errnoText())")
        }
        defer { close(fd) }
        return try readAll(fd, url)
    }

    private static func readAll(_ fd: Int32, _ url: URL) throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc_or_Darwin_read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw PKIError.storeUnavailable(path: url.path, problem: "cannot read it: \(errnoText())")
            }
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return data
    }

    /// Moves a damaged or replaced file aside instead of deleting it: the house rule is never to lose a key. The new
    /// name is one nothing has (`-2`, `-3`, … after the stamp when needed), so an earlier file moved aside in the same
    /// second is never overwritten.
    @discardableResult
    static func moveAside(_ url: URL, reason: String) -> URL? {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let base = "\(url.lastPathComponent).\(reason)-\(stamp)-\(getpid())"
        for attempt in 1...1_000 {
            let target = url.deletingLastPathComponent().appendingPathComponent(attempt == 1 ? base : "\(base)-\(attempt)")
            switch renameWithoutReplacing(url, to: target) {
            case 0: return target
            case EEXIST: continue
            default: return nil
            }
        }
        return nil
    }

    /// Renames `source` to `target`, which must not exist; throws with both paths otherwise.
    static func move(_ source: URL, to target: URL) throws {
        let code = renameWithoutReplacing(source, to: target)
        guard code == 0 else {
            throw PKIError.storeUnavailable(path: source.deletingLastPathComponent().path,
                                            problem: "cannot move \(source.lastPathComponent) to \(target.path): \(errnoText(code))")
        }
    }

    /// `rename` that refuses to replace an existing target: a hard link (which fails with EEXIST when the name is
    /// taken), then the old name removed. Returns 0 or the errno. File systems without hard links fall back to a
    /// check and a rename, which callers make safe by holding the store's lock.
    private static func renameWithoutReplacing(_ source: URL, to target: URL) -> Int32 {
        if link(source.path, target.path) == 0 {
            unlink(source.path)
            return 0
        }
        let code = errno
        guard code == EPERM || code == EXDEV || code == ENOTSUP || code == EOPNOTSUPP || code == EMLINK else { return code }
        if exists(target) { return EEXIST }
        return rename(source.path, target.path) == 0 ? 0 : errno
    }

    /// Makes `url` (its parent exists) with exactly `mode`; fails if anything is there already.
    static func makeDirectory(_ url: URL, mode: mode_t) throws {
        guard mkdir(url.path, mode) == 0 else {
            throw PKIError.storeUnavailable(path: url.path, problem: "cannot create it: \(errnoText())")
        }
        chmod(url.path, mode)   // mkdir's mode passes through the umask
    }

    /// Gives `source` a second name, `target` (which must not exist): a hard link, or a copy with the same bytes and
    /// mode where the file system has no links. `source` stays where it is.
    static func keep(_ source: URL, at target: URL) throws {
        if link(source.path, target.path) == 0 { return }
        guard let data = try read(source), let mode = mode(of: source), !exists(target) else {
            throw PKIError.storeUnavailable(path: target.deletingLastPathComponent().path,
                                            problem: "cannot keep \(source.lastPathComponent) there: \(errnoText())")
        }
        try writeAtomically(data, to: target, mode: mode)
    }

    /// Renames `source` over `target`, replacing it in one step (`rename`): a reader sees the old file or the new one.
    static func replace(_ target: URL, with source: URL) throws {
        guard rename(source.path, target.path) == 0 else {
            throw PKIError.storeUnavailable(path: target.deletingLastPathComponent().path,
                                            problem: "cannot move \(source.path) to \(target.lastPathComponent): "
                                                + errnoText())
        }
    }

    /// Removes a staging folder of the store's own making and the regular files in it; never follows a link.
    static func removeStage(_ url: URL) {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] {
            unlink(url.appendingPathComponent(name).path)
        }
        rmdir(url.path)
    }

    /// Creates a directory that did not exist before: `name`, else `name-2`, `name-3`, … (`mkdir` fails on an existing
    /// name, so two processes, or two calls in the same second, never share one).
    static func makeNewDirectory(in parent: URL, named name: String, mode: mode_t) throws -> URL {
        for attempt in 1...1_000 {
            let candidate = parent.appendingPathComponent(attempt == 1 ? name : "\(name)-\(attempt)")
            if mkdir(candidate.path, mode) == 0 {
                chmod(candidate.path, mode)   // mkdir's mode passes through the umask
                return candidate
            }
            if errno != EEXIST { throw PKIError.storeUnavailable(path: candidate.path, problem: "cannot create it: \(errnoText())") }
        }
        throw PKIError.storeUnavailable(path: parent.path, problem: "1,000 folders named \(name) already exist")
    }

    package static func mode(of url: URL) -> mode_t? {
        var info = stat()
        return stat(url.path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
}

@inline(__always)
private func Glibc_or_Darwin_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}
