import Foundation

/// A walk over a binary plist's object graph before Foundation reads it, for two shapes that
/// swift-corelibs-foundation (Swift 6.3.1, Linux) cannot survive and that no Info.plist has:
///
/// - a **set** (marker `0xC_`): `PropertyListSerialization.propertyList(from:)` crashes (SIGSEGV) bridging the
///   `NSSet` it made, whatever the set holds — a 48-byte file takes the process down;
/// - **shared references**: objects are stored once and referenced by index, so `[A, A]` with `A = [B, B]` … doubles
///   per level. Foundation bridges (and `ATSPlistValue` converts) every reference as a separate value, so a 350-byte
///   file with 24 levels becomes 2^24 values: minutes of CPU and gigabytes of memory.
///
/// - **deep nesting**: Foundation's binary reader gives up past about 512 levels and then tries the file as XML,
///   reporting "Unexpected character b at line 1", which names the wrong problem.
///
/// Anything this walk does not understand is left to Foundation, which validates the format itself and reports
/// malformed files; the walk only ever refuses the shapes above.
package enum BinaryPlistPrecheck {
    /// Values counted with repetition (a value reached through n references counts n times), which is how many
    /// Foundation and the conversion to `ATSPlistValue` produce, at some 20 µs each in a debug build. A real
    /// Info.plist holds hundreds, a very large one a few thousand; 10 000 stops a doubling chain at its 13th level.
    static let maximumExpandedValues = 10_000
    /// An Info.plist nests a handful of levels (NSAppTransportSecurity ▸ NSExceptionDomains ▸ domain ▸ key); well
    /// below the depth at which Foundation's binary reader gives up.
    static let maximumDepth = 64

    package enum Problem: Equatable, CustomStringConvertible {
        case containsSet
        case expandsTooFar
        case nestsTooDeep

        package var description: String {
            switch self {
            case .containsSet:
                return "the binary plist holds a set, which a property list cannot contain and Foundation cannot read"
            case .expandsTooFar:
                return "the binary plist references its objects so often that it expands to more than "
                    + "\(BinaryPlistPrecheck.maximumExpandedValues) values"
            case .nestsTooDeep:
                return "the binary plist nests arrays or dictionaries more than \(BinaryPlistPrecheck.maximumDepth) levels deep; "
                    + "an Info.plist needs a handful"
            }
        }
    }

    /// nil when nothing is wrong, when `data` is not a binary plist, or when its structure is not one this walk
    /// understands (Foundation then decides).
    package static func problem(in data: Data) -> Problem? {
        let bytes = [UInt8](data)
        guard bytes.count >= 40, bytes.starts(with: Array("bplist0".utf8)) else { return nil }
        // Trailer (last 32 bytes): 6 unused, offset size, reference size, object count, top object, offset table.
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
              let count = integer(bytes, at: trailer + 8, size: 8), let top = integer(bytes, at: trailer + 16, size: 8),
              let table = integer(bytes, at: trailer + 24, size: 8),
              top < count, count <= bytes.count, table <= trailer, table + count * offsetSize <= trailer
        else { return nil }

        var pending = [(object: top, depth: 0)]
        var values = 1
        while let (object, depth) = pending.popLast() {
            guard let start = integer(bytes, at: table + object * offsetSize, size: offsetSize), start < trailer else {
                return nil
            }
            let kind = bytes[start] >> 4
            switch kind {
            case 0xB, 0xC:   // ordered set, set
                return .containsSet
            case 0xA, 0xD:   // array, dictionary (keys, then values)
                if depth >= maximumDepth { return .nestsTooDeep }
                guard let (length, first) = collectionLength(bytes, at: start, end: trailer) else { return nil }
                let references = kind == 0xD ? 2 * length : length
                guard references <= (trailer - first) / referenceSize else { return nil }
                values += references
                if values > maximumExpandedValues { return .expandsTooFar }
                for index in 0..<references {
                    guard let reference = integer(bytes, at: first + index * referenceSize, size: referenceSize),
                          reference < count else { return nil }
                    pending.append((reference, depth + 1))
                }
            default:
                continue
            }
        }
        return nil
    }

    /// A collection's element count (low nibble, or a following integer object when it is 0xF) and where its
    /// references start.
    private static func collectionLength(_ bytes: [UInt8], at start: Int, end: Int) -> (Int, Int)? {
        let nibble = Int(bytes[start] & 0x0F)
        guard nibble == 0x0F else { return (nibble, start + 1) }
        guard start + 1 < end, bytes[start + 1] >> 4 == 0x1 else { return nil }
        let size = 1 << Int(bytes[start + 1] & 0x0F)
        guard size <= 8, let length = integer(bytes, at: start + 2, size: size), start + 2 + size <= end else { return nil }
        return (length, start + 2 + size)
    }

    /// A big-endian unsigned integer of `size` bytes, or nil when it is out of bounds or does not fit an `Int` that
    /// can safely be used in offset arithmetic.
    private static func integer(_ bytes: [UInt8], at position: Int, size: Int) -> Int? {
        guard position >= 0, size >= 1, size <= 8, position <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for byte in bytes[position..<(position + size)] { value = value << 8 | UInt64(byte) }
        return value <= UInt64(Int32.max) ? Int(value) : nil
    }
}
