#!/usr/bin/env python3
"""Finds Swift that compiles (or works) on Linux only, outside code that Darwin never compiles.

There is no Mac among this project's build machines, yet most of its users build it on one. This lint is the
Linux-side check for the Glibc-isms that once broke the macOS build or would misbehave there:

  spawn-init    posix_spawn_file_actions_t() / posix_spawnattr_t(): optional pointers on Darwin, so `T()` does not
                compile ("missing argument for parameter 'nilLiteral'"); declare `var x: T? = nil` there.
  pthread-init  pthread_*_t(): pthread_t is a pointer on Darwin, and a zeroed mutex/cond is not an initialised one
                there (Glibc's static initialisers happen to be all zeroes; Darwin's carry a signature).
  glibc-module  `Glibc.` qualifications: the module does not exist on Darwin.
  proc          a string literal that starts with /proc: Darwin has no procfs (prose such as "reads /proc" is fine).
  msg-nosignal  MSG_NOSIGNAL: Linux only (Darwin uses the SO_NOSIGPIPE socket option).
  raw-constant  SOCK_STREAM.rawValue and friends: Glibc imports these as enums, Darwin as plain Int32.
  glibc-private __rlimit_resource_t, __sigaction_handler, __environ, __in6_u: Glibc's own spellings.
  stat-time     st_mtim/st_atim/st_ctim: Darwin calls them st_mtimespec/….
  host-lookup   ProcessInfo.processInfo.hostName, Host.current(), NSHost: on Darwin these go through NSHost, which
                resolves the machine's addresses by reverse DNS and blocks (about 35 s a process on GitHub's macOS
                runners, actions/runner-images#14568); Linux's Foundation reads interfaces and never waits. Use
                gethostname().
  available     `#available(macOS 14, …)` at or below the deployment target Package.swift's `platforms` sets: always
                true, so Darwin's compiler warns "unnecessary check for 'macOS'" (and the warning gate fails). Name
                only the platforms whose floor is lower than the API's.

A match is fine inside a branch Darwin never compiles: `#if canImport(Glibc)`, `#if os(Linux)`, the `#else` of
`#if canImport(Darwin)`, and any condition that is false on every Darwin OS (evaluated, not guessed: `&&`, `||`,
`!` and parentheses are understood; an unknown condition such as `compiler(>=6)` is assumed to be true on Darwin).
Comments are ignored, and so are string literals, but for `/proc` (a path is a string) and host-lookup (a string's
interpolation is code).

Some Linux-only code is right as it is because it only runs on Linux (a test suite enabled on Linux alone, a
benchmark that is Linux-only). Say so where it is, with a reason, and the lint accepts it:
  on the line, or the line above:  // darwin-lint: allow proc — read only when running on Linux
  anywhere in the file:            // darwin-lint: file allows proc — every suite here is enabled on Linux only

Usage: scripts/lint-darwin.py [--package Package.swift] [PATH…]
  (default: Sources Tests Fuzz/Sources and the deployment targets of Package.swift, from the repository root)
Exit status: 0 clean, 1 findings (one line each: FILE:LINE: [id] what, and the fix), 2 usage errors.
"""
import os
import re
import sys

RULES = [
    ("spawn-init", re.compile(r"\b(posix_spawn_file_actions_t|posix_spawnattr_t)\s*\(\s*\)"),
     "{0}() does not compile on Darwin, where it is an optional pointer: under `#if canImport(Darwin)` "
     "declare `var x: {0}? = nil`, keep `{0}()` in the `#else`"),
    ("pthread-init", re.compile(r"\b(pthread_(?:\w+_)?t)\s*\(\s*\)"),
     "{0}() is a pointer or a signed struct on Darwin: initialise it with pthread_*_init, "
     "or keep `{0}()` under `#if canImport(Glibc)`"),
    ("glibc-module", re.compile(r"\bGlibc\.(\w+)"),
     "`Glibc.{0}` names a module Darwin does not have: put it under `#if canImport(Glibc)` "
     "(with `Darwin.{0}` in the `#elseif canImport(Darwin)`)"),
    ("proc", re.compile(r'"(/proc)(?:/|")'),   # reads string literals
     "{0} does not exist on Darwin: put it under `#if os(Linux)`, or mark why it only runs on Linux "
     "(`// darwin-lint: allow proc — reason`)"),
    ("msg-nosignal", re.compile(r"\b(MSG_NOSIGNAL)\b"),
     "{0} is Linux only: under `#if canImport(Glibc)`, with SO_NOSIGPIPE on the socket for Darwin"),
    ("raw-constant", re.compile(r"\b((?:SOCK|IPPROTO|SHUT|RLIMIT|MSG)_[A-Z0-9_]+)\.rawValue\b"),
     "{0}.rawValue: Glibc imports {0} as an enum, Darwin as a plain Int32 with no rawValue; "
     "keep it under `#if canImport(Glibc)` and use {0} itself in the Darwin branch"),
    ("glibc-private", re.compile(r"\b(__rlimit\w*|__sigaction\w*|__environ|__in6_u)\b"),
     "{0} is Glibc's private spelling: keep it under `#if canImport(Glibc)`"),
    ("stat-time", re.compile(r"\b(st_[amc]tim)\b"),
     "{0} is Glibc's name; Darwin's is {0}espec: keep it under `#if canImport(Glibc)`"),
    ("host-lookup", re.compile(r"\b((?:ProcessInfo\.)?processInfo\.hostName|Host\.current|NSHost)\b"),
     "{0}: on Darwin, Foundation resolves the machine's name through NSHost, a blocking reverse-DNS lookup (35 s a "
     "process on GitHub's macOS runners): use gethostname()"),
    # Checked against Package.swift's platforms in lint_file (the message is filled in there).
    ("available", re.compile(r"#(?:un)?available\s*\(([^)]*)\)"), ""),
]
RULE_IDS = {rule_id for rule_id, _, _ in RULES}
STRING_RULES = {"proc", "host-lookup"}   # these read string literals too (an interpolation is code)
ANY_RULE = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern, _ in RULES))

# Every Darwin OS a Swift package can target: a branch is compiled on Darwin when its condition can be true on one.
DARWIN_OSES = ["macOS", "iOS", "tvOS", "watchOS", "visionOS"]
DARWIN_MODULES = {"Darwin", "Security", "Foundation", "Dispatch", "CoreFoundation", "ObjectiveC", "os", "XCTest",
                  "Testing", "Network", "SystemConfiguration"}
LINUX_ONLY_MODULES = {"Glibc", "Musl", "Android", "Bionic", "WASILibc", "WinSDK", "ucrt", "CRT"}

LINE_WAIVER = re.compile(r"darwin-lint:\s*allow\s+([\w-]+(?:\s*,\s*[\w-]+)*)\s*(?:—|--|-|:)\s*\S")
FILE_WAIVER = re.compile(r"darwin-lint:\s*file\s+allows\s+([\w-]+(?:\s*,\s*[\w-]+)*)\s*(?:—|--|-|:)\s*\S")
BARE_WAIVER = re.compile(r"darwin-lint:")


class ConditionError(Exception):
    pass


def evaluate(condition, darwin_os):
    """Evaluates a `#if` condition on one Darwin OS: True, False, or None (unknown, e.g. `compiler(>=6)`)."""
    tokens = re.findall(r"\|\||&&|!|\(|\)|[A-Za-z_][A-Za-z0-9_]*\s*\([^()]*\)|[A-Za-z_][A-Za-z0-9_]*", condition)
    position = 0

    def peek():
        return tokens[position] if position < len(tokens) else None

    def take():
        nonlocal position
        position += 1
        return tokens[position - 1]

    def atom(token):
        match = re.fullmatch(r"([A-Za-z_]\w*)\s*\((.*)\)", token)
        if not match:
            return {"true": True, "false": False}.get(token)   # a custom flag (DEBUG): unknown
        name, argument = match.group(1), match.group(2).strip()
        if name == "os":
            return argument == darwin_os or (argument == "Darwin")
        if name == "canImport":
            module = argument.split(".")[0].split(",")[0].strip()
            if module in LINUX_ONLY_MODULES:
                return False
            if module in DARWIN_MODULES:
                return True
            return None
        return None   # compiler(), swift(), arch(), targetEnvironment(), hasFeature() …

    def primary():
        token = take() if peek() is not None else None
        if token is None:
            raise ConditionError(condition)
        if token == "!":
            value = primary()
            return None if value is None else not value
        if token == "(":
            value = disjunction()
            if take() != ")":
                raise ConditionError(condition)
            return value
        return atom(token)

    def conjunction():
        value = primary()
        while peek() == "&&":
            take()
            right = primary()
            value = False if value is False or right is False else (None if value is None or right is None else True)
        return value

    def disjunction():
        value = conjunction()
        while peek() == "||":
            take()
            right = conjunction()
            value = True if value is True or right is True else (None if value is None or right is None else False)
        return value

    result = disjunction()
    if position != len(tokens):
        raise ConditionError(condition)
    return result


def never_on_darwin(condition):
    return all(evaluate(condition, system) is False for system in DARWIN_OSES)


def always_on_darwin(condition):
    return all(evaluate(condition, system) is True for system in DARWIN_OSES)


CODE_STOP = re.compile(r'//|/\*|#*"|\n')
BLOCK_STOP = re.compile(r"/\*|\*/|\n")


def code_lines(text):
    """The file's lines with comments removed, twice: with string literals, and with their contents blanked (so a
    word in a string is not code). Line numbers stay right."""
    out, buffer = [], []
    code_out, code_buffer = [], []

    def end_line():
        nonlocal buffer, code_buffer
        out.append("".join(buffer))
        code_out.append("".join(code_buffer))
        buffer, code_buffer = [], []

    def keep(piece, in_string=False):
        buffer.append(piece)
        code_buffer.append(" " * len(piece) if in_string else piece)

    i, n = 0, len(text)
    state = "code"      # code | line-comment | block-comment | string
    depth = 0           # nesting of /* */
    closing = ""        # what ends the current string: " or \"\"\" followed by the raw string's #s
    escapes = True
    while i < n:
        if state == "code":
            match = CODE_STOP.search(text, i)
            if not match:
                keep(text[i:])
                break
            keep(text[i:match.start()])
            token, i = match.group(0), match.end()
            if token == "\n":
                end_line()
            elif token == "//":
                end = text.find("\n", i)
                i = n if end < 0 else end
            elif token == "/*":
                state, depth = "block-comment", 1
            else:   # a string opens: #…" — multi-line when two more quotes follow
                hashes = token[:-1]
                if text.startswith('""', i):
                    closing, i = '"""' + hashes, i + 2
                    keep(token + '""')
                else:
                    closing = '"' + hashes
                    keep(token)
                escapes = not hashes
                state = "string"
        elif state == "block-comment":
            match = BLOCK_STOP.search(text, i)
            if not match:
                break
            i = match.end()
            if match.group(0) == "\n":
                end_line()
            elif match.group(0) == "/*":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    state = "code"
        else:
            stop = re.compile(("\\\\.|" if escapes else "") + re.escape(closing) + "|\n", re.S)
            match = stop.search(text, i)
            if not match:
                keep(text[i:], in_string=True)
                break
            keep(text[i:match.start()], in_string=True)
            token, i = match.group(0), match.end()
            if token == "\n":
                end_line()
                if closing.startswith('"""'):
                    continue
                state = "code"   # an unterminated single-line string: recover at the line's end
            elif token == closing:
                keep(token)
                state = "code"
            else:   # an escape: kept, and never a closing quote
                keep(token if token[1] != "\n" else "", in_string=True)
                if token[1] == "\n":
                    end_line()
    end_line()
    return list(zip(out, code_out))


# The package's deployment targets, from Package.swift's `platforms:` (main() reads them; --package names another).
DEPLOYMENT_TARGETS = {}
PLATFORM = re.compile(r"\.(macOS|iOS|tvOS|watchOS|visionOS|macCatalyst)\s*\(\s*"
                      r"(?:\.v(\d+)(?:_(\d+))?|\"(\d+)(?:\.(\d+))?[^\"]*\")")
AVAILABILITY_ALIASES = {"OSX": "macOS", "OSXApplicationExtension": "macOS", "iOSApplicationExtension": "iOS",
                        "macOSApplicationExtension": "macOS", "macCatalystApplicationExtension": "macCatalyst"}


def deployment_targets(package_swift):
    with open(package_swift, encoding="utf-8") as handle:
        text = handle.read()
    start = text.find("platforms:")
    if start < 0:
        return {}
    section = text[start:text.find("]", start)]
    return {name: (int(major or q_major), int(minor or q_minor or 0))
            for name, major, minor, q_major, q_minor in PLATFORM.findall(section)}


def available_message(arguments):
    """A finding for `#available(arguments)` naming each platform whose version the deployment target already meets."""
    useless = []
    for platform, version in re.findall(r"\b([A-Za-z]+)\s+(\d+(?:\.\d+)*)", arguments):
        platform = AVAILABILITY_ALIASES.get(platform, platform)
        parts = [int(part) for part in version.split(".")] + [0]
        target = DEPLOYMENT_TARGETS.get(platform)
        if target and (parts[0], parts[1]) <= target:
            useless.append(f"{platform} {version}")
    if not useless:
        return None
    floors = ", ".join(f"{p.split()[0]} {'.'.join(map(str, DEPLOYMENT_TARGETS[p.split()[0]]))}" for p in useless)
    return (f"#available({', '.join(useless)}, …) is always true: Package.swift's platforms deploy to {floors} already, "
            "so Darwin's compiler warns \"unnecessary check\"; drop " + ", ".join(p.split()[0] for p in useless)
            + " from the check (`*` covers it)")


def lint_file(path, display=None):
    display = display or path
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    raw_lines = text.split("\n")
    lines = code_lines(text)   # (with strings, code only)
    findings = []

    file_allowed = set()
    for raw in raw_lines:
        match = FILE_WAIVER.search(raw)
        if match:
            file_allowed |= {part.strip() for part in match.group(1).split(",")}
    for number, raw in enumerate(raw_lines, 1):
        if BARE_WAIVER.search(raw) and not (LINE_WAIVER.search(raw) or FILE_WAIVER.search(raw)):
            findings.append(f"{display}:{number}: [waiver] a darwin-lint waiver needs a rule id and a reason: "
                            "`// darwin-lint: allow proc — why this only runs on Linux`")
        for waiver in (LINE_WAIVER, FILE_WAIVER):
            match = waiver.search(raw)
            if match:
                for rule_id in (part.strip() for part in match.group(1).split(",")):
                    if rule_id not in RULE_IDS:
                        findings.append(f"{display}:{number}: [waiver] unknown rule \"{rule_id}\": use one of "
                                        + ", ".join(sorted(RULE_IDS)))

    # Each frame: [this branch is never compiled on Darwin, an earlier branch always is].
    stack = []
    for number, (line, code) in enumerate(lines, 1):
        stripped = code.strip()
        if not stripped.startswith("#") and not ANY_RULE.search(line):
            continue
        directive = re.match(r"#(if|elseif|else|endif)\b(.*)", stripped)
        if directive:
            kind, condition = directive.group(1), directive.group(2).strip()
            try:
                if kind == "if":
                    stack.append([never_on_darwin(condition), always_on_darwin(condition)])
                elif kind == "elseif":
                    if not stack:
                        raise ConditionError("#elseif without #if")
                    frame = stack[-1]
                    frame[0] = frame[1] or never_on_darwin(condition)
                    frame[1] = frame[1] or always_on_darwin(condition)
                elif kind == "else":
                    if not stack:
                        raise ConditionError("#else without #if")
                    frame = stack[-1]
                    frame[0] = frame[1]
                    frame[1] = True
                else:
                    if not stack:
                        raise ConditionError("#endif without #if")
                    stack.pop()
            except ConditionError as error:
                findings.append(f"{display}:{number}: [condition] cannot read `{stripped}` ({error}); "
                                "simplify the condition so the lint can tell which OS compiles it")
                if kind == "if":
                    stack.append([False, False])
            continue
        if any(frame[0] for frame in stack):
            continue
        for rule_id, pattern, message in RULES:
            if rule_id in file_allowed:
                continue
            match = pattern.search(line if rule_id in STRING_RULES else code)   # one finding per rule and line
            if match:
                text = available_message(match.group(1)) if rule_id == "available" else message.format(match.group(1))
                if not text:
                    continue
                nearby = raw_lines[number - 1] + ("\n" + raw_lines[number - 2] if number >= 2 else "")
                waived = any(rule_id in [part.strip() for part in waiver.group(1).split(",")]
                             for waiver in LINE_WAIVER.finditer(nearby))
                if not waived:
                    findings.append(f"{display}:{number}: [{rule_id}] " + text)
    if stack:
        findings.append(f"{display}:{len(lines)}: [condition] #if without #endif")
    return findings


def swift_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        if not os.path.isdir(path):
            raise FileNotFoundError(path)
        for root, directories, files in os.walk(path):
            directories[:] = sorted(d for d in directories if not d.startswith("."))
            for name in sorted(files):
                if name.endswith(".swift"):
                    yield os.path.join(root, name)


def main(arguments):
    if any(argument in ("-h", "--help") for argument in arguments):
        print(__doc__)
        return 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    package_swift = os.path.join(root, "Package.swift")
    if "--package" in arguments:
        at = arguments.index("--package")
        if at + 1 >= len(arguments):
            print("lint-darwin: --package needs a Package.swift", file=sys.stderr)
            return 2
        package_swift = arguments[at + 1]
        arguments = arguments[:at] + arguments[at + 2:]
    try:
        DEPLOYMENT_TARGETS.update(deployment_targets(package_swift))
    except OSError as error:
        print(f"lint-darwin: cannot read the deployment targets: {error}", file=sys.stderr)
        return 2
    paths = arguments or [os.path.join(root, part) for part in ("Sources", "Tests", "Fuzz/Sources")]
    findings, count = [], 0
    try:
        for path in swift_files(paths):
            count += 1
            shown = os.path.relpath(path, root) if path.startswith(root + os.sep) else path
            findings += lint_file(path, shown)
    except FileNotFoundError as error:
        print(f"lint-darwin: no such file or directory: {error}", file=sys.stderr)
        return 2
    for finding in findings:
        print(finding)
    if findings:
        print(f"lint-darwin: {len(findings)} finding(s) in {count} Swift file(s): each would break or misbehave "
              "on macOS (see scripts/lint-darwin.py for the rules)", file=sys.stderr)
        return 1
    print(f"lint-darwin: {count} Swift file(s), nothing Linux-only outside Linux-only code")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
