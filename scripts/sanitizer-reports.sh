#!/usr/bin/env bash
# After a sanitizer test run: prints every report any process wrote (the test runners and every `tls-fixtures` they
# spawned; the Makefile points the sanitizer's log_path into DIR) and fails if there was one. A report in a child whose
# output a test does not read would otherwise go unnoticed.
#   scripts/sanitizer-reports.sh DIR
set -euo pipefail
dir=$1
shopt -s nullglob
reports=("$dir"/*)
if [ ${#reports[@]} -eq 0 ]; then
  echo "sanitizer: no reports from any process"
  exit 0
fi
for report in "${reports[@]}"; do
  echo "=== $report"
  if command -v swift-demangle >/dev/null 2>&1; then swift-demangle --simplified < "$report"; else cat "$report"; fi
done
echo "sanitizer: ${#reports[@]} report file(s) in $dir" >&2
exit 1
