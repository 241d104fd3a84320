import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file a person named — a certificate to show or trust, a key, an Info.plist, a scenario file — and says
/// why when it cannot: a folder, a named pipe or `/dev/zero` given by mistake used to be reported as "permission
/// denied". A named pipe is opened without waiting for a writer (`O_NONBLOCK`), so it can never hang the command,
/// and nothing larger than `maximumSize` is read whole into memory.
package enum UserFile {
    /// Far more than any certificate chain, key, Info.plist or scenario file.
    public static let maximumSize = 16 << 20

    package static func read(_ path: String) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: throw UserFileError(path: path, kind: .missing)
            case EACCES, EPERM: throw UserFileError(path: path, kind: .permissionDenied)
            default: throw UserFileError(path: path, kind: .other(String(cString: strerror(errno))))
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw UserFileError(path: path, kind: .other(String(cString: strerror(errno)))) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw UserFileError(path: path, kind: .directory)
        case S_IFIFO: throw UserFileError(path: path, kind: .notRegular("a named pipe (FIFO)"))
        case S_IFCHR, S_IFBLK: throw UserFileError(path: path, kind: .notRegular("a device"))
        case S_IFSOCK: throw UserFileError(path: path, kind: .notRegular("a socket"))
        default: throw UserFileError(path: path, kind: .notRegular("something else"))
        }
        guard info.st_size <= maximumSize else { throw UserFileError(path: path, kind: .tooLarge) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while data.count <= maximumSize {
            let n = buffer.withUnsafeMutableBytes { readBytes(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw UserFileError(path: path, kind: .other(String(cString: strerror(errno))))
            }
            if n == 0 { return data }
            data.append(contentsOf: buffer[0..<n])
        }
        throw UserFileError(path: path, kind: .tooLarge)   // It grew while being read.
    }
}

/// Why a named file cannot be read, in one line that names it.
package struct UserFileError: CodedError {
    package typealias Code = ErrorCode<UserFileError>

    package enum Kind: Sendable, Equatable {
        case missing, permissionDenied, directory, tooLarge
        case notRegular(String)
        case other(String)
    }

    package let code: Code
    package let path: String
    package let kind: Kind

    package init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
        switch kind {
        case .missing: code = .missing
        case .permissionDenied: code = .permissionDenied
        case .directory, .notRegular: code = .notRegular
        case .tooLarge: code = .tooLarge
        case .other: code = .unreadable
        }
    }

    /// The reason alone, for messages that name the file their own way.
    public var problem: String {
        switch kind {
        case .missing: return "no such file"
        case .permissionDenied: return "permission denied"
        case .directory: return "it is a directory, not a file"
        case .notRegular(let kind): return "it is \(kind), not a regular file"
        case .tooLarge: return "it is larger than \(UserFile.maximumSize >> 20) MB, far more than such a file holds"
        case .other(let text): return text
        }
    }

    package var reason: String {
        switch kind {
        case .missing: return "no such file: \(path)"
        case .permissionDenied: return "cannot read \(path): permission denied"
        default: return "cannot read \(path): \(problem)"
        }
    }

    /// The reason says which file and why; what to do about it depends on what the file was for.
    package var fix: String? { nil }
}

extension ErrorCode where Owner == UserFileError {
    package static var missing: Self { Self("missing") }
    package static var permissionDenied: Self { Self("permissionDenied") }
    /// A folder, a named pipe, a device or a socket.
    package static var notRegular: Self { Self("notRegular") }
    package static var tooLarge: Self { Self("tooLarge") }
    package static var unreadable: Self { Self("unreadable") }
}

@inline(__always)
private func readBytes(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
