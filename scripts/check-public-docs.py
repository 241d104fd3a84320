#!/usr/bin/env python3
"""Every public or open declaration a user of `import TLSFixtures` (or TLSFixturesClient) sees carries a `///` doc
comment. Lists the ones without, one `path:line: name` a line, and exits 1; exits 0 when there are none.

Scope: the library targets and the client targets under Sources/, not the executables (tls-fixtures, the bench and
client-check tools) and not `*.generated.swift`. Protocol witnesses (`description`, `==`, `init(from:)`, …) take their
documentation from the protocol and need none. Attributes (`@discardableResult`, `@available`, …) and `#if` lines may
sit between the comment and the declaration.

Usage: check-public-docs.py [--root DIR] [FILE_OR_DIR ...]
"""
import os
import re
import sys

EXECUTABLES = {"tls-fixtures", "tls-fixtures-bench", "tls-fixtures-client-check"}
DECL = re.compile(r"^(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:(?:nonisolated|final|static|class|indirect|override|mutating|"
                  r"convenience|required|lazy)\s+)*(public|open)\s+(.*)$")
KIND = re.compile(r"^(?:(?:static|class|final|override|mutating|nonisolated|convenience|required|indirect|lazy|"
                  r"private\(set\)|internal\(set\)|package\(set\)|fileprivate\(set\))\s+)*"
                  r"(func|var|let|init[?!]?|subscript|struct|class|enum|actor|protocol|typealias|case|associatedtype|"
                  r"extension|import|macro)\b\s*([^\s(<:={]*)")
WITNESSES = {"description", "debugDescription", "errorDescription", "failureReason", "recoverySuggestion", "helpAnchor",
             "encode", "hash", "hashValue", "rawValue", "id", "makeIterator", "next", "==", "<", "<=", ">", ">=",
             "~=", "allCases", "localizedDescription", "errorUserInfo", "errorCode", "errorDomain"}
WITNESS_INITS = re.compile(r"^init[?!]?\s*\((from decoder|rawValue|stringLiteral|integerLiteral|arrayLiteral|"
                           r"dictionaryLiteral|extendedGraphemeClusterLiteral|unicodeScalarLiteral|"
                           r"booleanLiteral|floatLiteral|nilLiteral)\b")
FIX = ("fix: write a `///` comment above each (what the name does not say: units, format, what nil means, when it "
       "throws), or make it `package` if only this package's modules and tests use it")


def swift_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in EXECUTABLES)
            for name in sorted(files):
                if name.endswith(".swift") and not name.endswith(".generated.swift"):
                    yield os.path.join(folder, name)


def findings(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    in_block_comment = False
    for index, line in enumerate(lines):
        text = line.strip()
        if in_block_comment:
            in_block_comment = "*/" not in text
            continue
        if text.startswith("/*") and "*/" not in text:
            in_block_comment = True
            continue
        match = DECL.match(text)
        if not match:
            continue
        rest = match.group(2)
        kind = KIND.match(rest)
        if not kind:
            continue
        keyword, name = kind.group(1), kind.group(2)
        if keyword in ("extension", "import"):
            continue
        if keyword.startswith("init"):
            if WITNESS_INITS.match(rest):
                continue
            name = "init"
        if keyword == "func" and name in WITNESSES or keyword in ("var", "let") and name in WITNESSES:
            continue
        if keyword == "func" and re.search(r"\bfunc\s*(==|<=?|>=?|~=)\s*\(", rest):
            continue
        above = index - 1
        while above >= 0 and (lines[above].strip().startswith("@") or lines[above].strip().startswith("#")):
            above -= 1
        previous = lines[above].strip() if above >= 0 else ""
        if previous.startswith("///") or previous.endswith("*/"):
            continue
        yield index + 1, name or keyword


def main(argv):
    root = "."
    targets = []
    args = iter(argv)
    for arg in args:
        if arg == "--root":
            root = next(args)
        else:
            targets.append(arg)
    if not targets:
        targets = [os.path.join(root, "Sources")]
    count = 0
    for path in swift_files(targets):
        for line, name in findings(path):
            print(f"{os.path.relpath(path, root)}:{line}: {name}")
            count += 1
    if count:
        print(f"{count} public declaration(s) without a doc comment; {FIX}")
        return 1
    print("check-public-docs: every public declaration of the library has a doc comment")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
