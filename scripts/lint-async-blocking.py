#!/usr/bin/env python3
"""Finds calls that block a thread inside the tests' async code.

Swift Testing runs async tests on the concurrency pool, which has one thread per core: two on the machines this
project's CI uses. A test that blocks one of them (waiting for a child process, sleeping, polling a file) stalls every
other test of the process meanwhile, and when what it waits for needs the pool itself (a fixture or runner served in
this process), it waits for ever. So inside an async function, and inside a `Task { }` or `addTask { }` body, these
are findings:

  subprocess-run  Subprocess.run( / .runUnchecked( / TestEnvironment.tlsFixtures( / TestEnvironment.openssl(:
                  they wait for the child on the calling thread; await Subprocess.runAwaiting( (or
                  TestEnvironment.tlsFixturesAwaiting( / .opensslAwaiting() instead
  process-wait    .wait(timeout: (Subprocess.Running, a semaphore) and waitUntilExit(: await
                  `running.finished(timeout:)`
  sleep           usleep( / sleep( / nanosleep( / Thread.sleep(: await Task.sleep(for:)
  blocking-wait   .wait() not awaited (a DispatchSemaphore, DispatchGroup or NIO future): await the future's get(), or a
                  continuation
  spin            while … { await Task.yield() }: a loop that only yields keeps a pool thread busy; await the event
                  (a continuation) or Task.sleep between looks
  deadline-loop   while Date() < deadline { … } (or ContinuousClock.now): a sleeping task on a busy machine can
                  wake after its deadline, and such a loop then gives up without looking again; await
                  Poll.until(timeout:) { … }, which looks once more after the deadline

A synchronous @Test function is async code too: Swift Testing runs it on the concurrency pool, where it blocks a
thread for as long as it waits (a CI rehearsal found both of the pool's threads held by such tests for a minute at a
time, and nothing else in the process ran). Unless its suite (or the test) carries `.ownThreads`, which runs it on
threads of its own (Tests/TLSFixturesTests/Support/OwnThreads.swift): there it may block. A synchronous function of
the same file that async code calls (by its bare name, or through self or Self) is async code too: it blocks the thread of whoever calls it (a helper of another file is not followed). A body handed to a
thread that is not the pool's is not async code, and is not looked at: offThePool { }, BlockingWork.blockingIO { },
DispatchQueue.global().async { }, Thread.detachNewThread { }. A nested function is part of the function it is
declared in (it runs where that one calls it). Comments and string literals are ignored.

A blocking call that is deliberate says why, on its line or the line above, and the lint accepts it:
  // async-lint: allow process-wait — a defer cannot await; bounded by killGrace, and needs nothing from this process
A waiver without a reason is itself a finding.

Usage: scripts/lint-async-blocking.py [PATH…]   (default: Tests, from the repository root)
Exit status: 0 clean, 1 findings (one line each: FILE:LINE: [rule] what, and the fix), 2 usage errors.
"""
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The Darwin lint's reader of Swift (comments dropped, string contents blanked, lines kept): one reader for both lints.
_spec = importlib.util.spec_from_file_location("lint_darwin", os.path.join(HERE, "lint-darwin.py"))
_darwin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_darwin)

RULES = [
    ("subprocess-run",
     re.compile(r"\b(Subprocess\.run|Subprocess\.runUnchecked|TestEnvironment\.tlsFixtures|TestEnvironment\.openssl)"
                r"\s*\("),
     "{0}( waits for its child on a pool thread: `try await Subprocess.runAwaiting(…)` "
     "(TestEnvironment.tlsFixturesAwaiting / opensslAwaiting)"),
    ("process-wait", re.compile(r"(\.wait\s*\(\s*timeout\s*:|\bwaitUntilExit\s*\()"),
     "`{0}` blocks a pool thread until the process exits: `await running.finished(timeout:)`"),
    ("sleep", re.compile(r"(?<![.\w])((?:Thread\.)?(?:u|nano)?sleep)\s*\("),
     "{0}( holds a pool thread while it sleeps: `try await Task.sleep(for: .milliseconds(…))`"),
    ("blocking-wait", re.compile(r"(\.wait\s*\(\s*\))"),
     "`{0}` blocks a pool thread: await the future (`.get()`) or a continuation"),
    ("deadline-loop", re.compile(r"\bwhile\s+(Date\s*\(\s*\)|ContinuousClock\s*\.\s*now)\s*<"),
     "a loop that ends when `{0}` passes its deadline gives up without looking again, so a task a busy machine woke "
     "late fails on speed: `await Poll.until(timeout:) {{ … }}`, which looks once more after the deadline"),
]
RULE_IDS = {rule_id for rule_id, _, _ in RULES} | {"spin"}

WAIVER = re.compile(r"async-lint:\s*allow\s+([\w-]+(?:\s*,\s*[\w-]+)*)\s*(?:—|--|-|:)\s*\S")
BARE_WAIVER = re.compile(r"async-lint:")

# The start of a function (or initializer) declaration: what follows its parameter list says whether it is async.
DECLARATION = re.compile(r"\b(?:func\s+[^\s(<]+|init[?!]?)\s*(?:<[^{}]*?>)?\s*\(")
# Bodies that run async whatever encloses them.
ASYNC_CLOSURE = re.compile(r"\b(?:Task(?:\.detached)?|addTask(?:UnlessCancelled)?)\s*(?:\([^{}]*\))?\s*\{")
# Bodies handed to a thread of their own (or Dispatch's), never the pool's.
OFF_POOL = re.compile(r"\b(?:offThePool|BlockingWork\.blockingIO|DispatchQueue\.global\([^()]*\)\.async|"
                      r"Thread\.detachNewThread|Thread)\s*(?:\([^{}]*\))?\s*\{")
# A block holding nothing but a yield; a spin when the line that opens it is a `while`.
YIELD_ONLY = re.compile(r"\{\s*(?:try\s+)?await\s+Task\.yield\(\)\s*\}")


# A type that may carry a @Suite attribute, and the attribute itself.
TYPE_DECLARATION = re.compile(r"\b(?:struct|class|enum|actor|extension)\s+[\w.]+[^{;]*\{")
SUITE_ATTRIBUTE = re.compile(r"@Suite\b\s*(\()?")
TEST_ATTRIBUTE = re.compile(r"@Test\b\s*(\()?")
OWN_THREADS = re.compile(r"\.ownThreads\b")


def attribute_arguments(code, match):
    """The text of an attribute's argument list (empty without one)."""
    if not match.group(1):
        return ""
    return code[match.end(1) - 1:matching(code, match.end(1) - 1)]


def own_threads_ranges(code):
    """The bodies of types whose @Suite attribute carries `.ownThreads` (nested types inherit it: it is recursive)."""
    ranges = []
    for suite in SUITE_ATTRIBUTE.finditer(code):
        if not OWN_THREADS.search(attribute_arguments(code, suite)):
            continue
        declaration = TYPE_DECLARATION.search(code, suite.end())
        if declaration:
            ranges.append((declaration.end() - 1, matching(code, declaration.end() - 1)))
    return ranges


def test_attribute(code, declaration_start):
    """The @Test attribute of the function declared at `declaration_start`, or None: only attributes (and the
    blank space between them) may stand between the two."""
    head = code[max(0, declaration_start - 2000):declaration_start]
    found = None
    for match in TEST_ATTRIBUTE.finditer(head):
        end = matching(head, match.end(1) - 1) if match.group(1) else match.end()
        between = head[end:]
        # Other attributes (@available(…), @MainActor) and modifiers may follow; nothing else may.
        if re.fullmatch(r"(?:\s|@\w+(?:\([^()]*\))?|\b(?:static|private|fileprivate|internal|public|"
                        r"nonisolated|mutating|final)\b)*", between):
            found = (match, head)
    return found


def matching(code, opening):
    """The index just past the bracket that closes the one at `opening` (or the end of the text)."""
    pairs = {"(": ")", "{": "}", "[": "]", "<": ">"}
    close, depth = pairs[code[opening]], 0
    for index in range(opening, len(code)):
        if code[index] == code[opening]:
            depth += 1
        elif code[index] == close:
            depth -= 1
            if depth == 0:
                return index + 1
    return len(code)


def declarations(code):
    """Every function and initializer with a body: (name, body start, body end, async)."""
    found = []
    for match in DECLARATION.finditer(code):
        after = matching(code, match.end() - 1)
        # Effects, return type and where clause, up to the body; a requirement without a body ends at its line.
        head = re.match(r"[^{};]*?(?=\{)", code[after:after + 400])
        if not head or "\n\n" in head.group(0):
            continue
        effects = re.split(r"->|\bwhere\b", head.group(0))[0]
        name = re.match(r"(?:func\s+)?([^\s(<]+)", match.group(0)).group(1)
        body = after + head.end()
        found.append((name, body, matching(code, body), bool(re.search(r"\basync\b", effects)), match.start()))
    return found


def regions(code):
    """The character ranges of async code, and of bodies that run off the pool. Async code is an async function's
    body, a Task's or addTask's, and the body of a synchronous function of the same file that async code calls (by
    its bare name, or through self or Self), with what it calls in turn: it blocks where it is called."""
    functions = declarations(code)
    own = own_threads_ranges(code)
    sync_tests = set()
    for name, start, end, is_async, declared in functions:
        if is_async or inside(declared, own):
            continue
        attribute = test_attribute(code, declared)
        if attribute and not OWN_THREADS.search(attribute_arguments(attribute[1], attribute[0])):
            sync_tests.add((start, end))
    functions = [(name, start, end, is_async or (start, end) in sync_tests)
                 for name, start, end, is_async, _ in functions]
    async_ranges = [(start, end) for _, start, end, is_async in functions if is_async]
    for match in ASYNC_CLOSURE.finditer(code):
        async_ranges.append((match.end() - 1, matching(code, match.end() - 1)))
    off_pool = [(match.end() - 1, matching(code, match.end() - 1)) for match in OFF_POOL.finditer(code)]
    reached = {}   # a synchronous function's body range -> the line-less reason it counts as async code
    changed = True
    while changed:
        changed = False
        for name, start, end, is_async in functions:
            if is_async or (start, end) in reached or inside(start, async_ranges):
                continue
            call = re.compile(r"(?<![\w.])(?:(?:self|Self)\.)?" + re.escape(name) + r"\s*\(")
            for found in call.finditer(code):
                before = code[max(0, found.start() - 6):found.start()]
                if before.rstrip().endswith("func") or not inside(found.start(), async_ranges) \
                        or inside(found.start(), off_pool) or start <= found.start() < end:
                    continue
                reached[(start, end)] = (name, found.start())
                async_ranges.append((start, end))
                changed = True
                break
    return async_ranges, off_pool, reached, sync_tests


def inside(position, ranges):
    return any(start <= position < end for start, end in ranges)


def lint_file(path, display=None):
    display = display or path
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    lines = _darwin.code_lines(text)
    code = "\n".join(code for _, code in lines)
    raw_lines = text.split("\n")
    starts, position = [], 0
    for _, line_code in lines:
        starts.append(position)
        position += len(line_code) + 1

    def line_of(offset):
        low, high = 0, len(starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low + 1

    # A waiver is a comment: what is left of a line once its comments are removed (string literals kept) has none.
    comments = [raw if BARE_WAIVER.search(raw) and not BARE_WAIVER.search(kept) else ""
                for raw, (kept, _) in zip(raw_lines, lines)]

    def waived(rule_id, number):
        for candidate in (number, number - 1):
            if 1 <= candidate <= len(comments):
                match = WAIVER.search(comments[candidate - 1])
                if match and rule_id in [part.strip() for part in match.group(1).split(",")]:
                    return True
        return False

    findings = []
    for number, raw in enumerate(comments, 1):
        if BARE_WAIVER.search(raw) and not WAIVER.search(raw):
            findings.append(f"{display}:{number}: [waiver] an async-lint waiver names its rule and says why: "
                            "`// async-lint: allow RULE — reason`")
        for match in WAIVER.finditer(raw):
            for rule_id in (part.strip() for part in match.group(1).split(",")):
                if rule_id not in RULE_IDS:
                    findings.append(f"{display}:{number}: [waiver] no rule `{rule_id}` (rules: "
                                    f"{', '.join(sorted(RULE_IDS))})")
    async_ranges, off_pool, reached, sync_tests = regions(code)

    def report(rule_id, offset, message):
        if not inside(offset, async_ranges) or inside(offset, off_pool):
            return
        number = line_of(offset)
        if waived(rule_id, number):
            return
        # When the call is async code only because async code calls the function it is in, say where.
        callers = [(start, caller) for (start, end), caller in reached.items() if start <= offset < end]
        if callers and not any(start <= offset < end for start, end in async_ranges
                               if (start, end) not in reached):
            name, at = max(callers)[1]
            message += f" (in `{name}`, which async code calls at line {line_of(at)})"
        if any(start <= offset < end for start, end in sync_tests):
            message += (" — a synchronous test runs on the concurrency pool too: make it async and await, or give "
                        "its suite `.ownThreads` (Support/OwnThreads.swift)")
        findings.append(f"{display}:{number}: [{rule_id}] {message}")

    for rule_id, pattern, message in RULES:
        for match in pattern.finditer(code):
            if rule_id == "blocking-wait" or match.group(1).startswith(".wait"):
                # `await x.wait()` is an async function of that name (ShutdownSignal's, say), not a blocking one.
                statement = code[max(code.rfind("\n", 0, match.start()), code.rfind(";", 0, match.start())) + 1:
                                 match.start()]
                if re.search(r"\bawait\b", statement):
                    continue
            report(rule_id, match.start(), message.format(re.sub(r"\s+", "", match.group(1))))
    for match in YIELD_ONLY.finditer(code):
        opening_line = code[code.rfind("\n", 0, match.start()) + 1:match.start()]
        if not re.match(r"\s*while\b", opening_line):
            continue
        report("spin", match.start(), "a loop that only awaits Task.yield() keeps a pool thread busy: await the event "
                                      "(a continuation), or Task.sleep between looks")
    return findings


def main(arguments):
    if any(argument.startswith("-") for argument in arguments):
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    if not arguments:
        os.chdir(os.path.dirname(HERE))
        arguments = ["Tests"]
    missing = [path for path in arguments if not os.path.exists(path)]
    if missing:
        print(f"lint-async-blocking: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    findings = [finding for path in _darwin.swift_files(arguments) for finding in lint_file(path)]
    for finding in findings:
        print(finding)
    if findings:
        print(f"lint-async-blocking: {len(findings)} blocking call(s) in async test code (see the fix on each line; "
              "a deliberate one gets `// async-lint: allow RULE — reason`)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
