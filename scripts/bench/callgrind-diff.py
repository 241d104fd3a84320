#!/usr/bin/env python3
"""Per-request cost of each function: (callgrind profile of 2N requests - profile of N requests) / N.

    scripts/bench/callgrind-diff.py bench-out/profile/callgrind.keepalive.{1000,2000}.out 1000 [--inclusive] [--top 40]
"""
import re
import subprocess
import sys


def totals(path, inclusive):
    args = ["callgrind_annotate", "--threshold=100", f"--inclusive={'yes' if inclusive else 'no'}", path]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    result = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.+)$", line)
        if not m or "PROGRAM TOTALS" in line or "file:function" in line:
            continue
        name = m.group(2).strip()
        name = re.sub(r"\s*\[[^\]]*\]$", "", name)
        result[name] = result.get(name, 0) + int(m.group(1).replace(",", ""))
    return result


def main():
    small, large, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    inclusive = "--inclusive" in sys.argv
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 40
    a, b = totals(small, inclusive), totals(large, inclusive)
    diffs = sorted(((b.get(k, 0) - a.get(k, 0)) / n, k) for k in set(a) | set(b))
    diffs.reverse()
    for cost, name in diffs[:top]:
        demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact", name.split(":")[-1]],
                                   capture_output=True, text=True).stdout.strip() if "$s" in name else name
        print(f"{cost:12,.0f}  {demangled[:160]}")


if __name__ == "__main__":
    main()
