"""What check-client-graph.py and check-layers.py share: reading the package's graph and reporting problems."""
import argparse
import json
import subprocess
from pathlib import Path


def run(name, description, problems, clean_message):
    """Parses --describe/--root, reads `swift package describe --type json` (or the saved file), prints one line per
    problem `problems(describe, root)` finds (or `clean_message`), and returns the exit status."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--describe", help="a saved `swift package describe --type json` (default: run it)")
    parser.add_argument("--root", default=".", help="the package checkout (default: .)")
    args = parser.parse_args()
    root = Path(args.root)
    if args.describe:
        text = Path(args.describe).read_text(encoding="utf-8")
    else:
        completed = subprocess.run(["swift", "package", "--package-path", str(root), "describe", "--type", "json"],
                                   capture_output=True, text=True)
        if completed.returncode != 0:
            print(f"{name}: `swift package describe` failed: {completed.stderr.strip().splitlines()[-1:]}")
            return 1
        text = completed.stdout
    found = problems(json.loads(text[text.index("{"):]), root)
    for problem in found:
        print(f"{name}: {problem}")
    if not found:
        print(f"{name}: {clean_message}")
    return 1 if found else 0
