#!/usr/bin/env bash
# make apple-report: Apple's URLSession's report card on this Mac and in an iOS Simulator, written to docs/apple/
# (docs/apple/README.md says what they are for and how to commit them). Needs Xcode; trusts the kit's CA in the login
# keychain (macOS asks for your password) and in the simulator it boots.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(uname -s)" = Darwin ] || { echo "make apple-report runs on a Mac with Xcode (it drives URLSession and a simulator)" >&2; exit 1; }
out="$PWD/docs/apple"
base=${APPLE_REPORT_PORT_BASE:-29800}
swift build --product tls-fixtures
cli="$(swift build --show-bin-path)/tls-fixtures"
"$cli" serve --port-base "$base" > .build/apple-report-serve.log 2>&1 &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT
"$cli" wait "http://localhost:$base" --timeout 900
"$cli" ca install --keychain
export TLS_FIXTURES_URL="http://localhost:$base" TLS_FIXTURES_APPLE_REPORT_DIR="$out"
export TLS_FIXTURES_XCODE="$(xcodebuild -version | tr '\n' ' ')"
# macOS: URLSession with the login keychain's trust.
swift test --package-path AppleReport
# The iOS Simulator: a booted one, or the first available iPhone, with the CA trusted there.
udid=${SIMULATOR:-$(xcrun simctl list devices booted -j | python3 -c 'import json,sys; d=[x for r in json.load(sys.stdin)["devices"].values() for x in r]; print(d[0]["udid"] if d else "")')}
if [ -z "$udid" ]; then
  udid=$(xcrun simctl list devices available -j | python3 -c 'import json,sys; d=[x for r in json.load(sys.stdin)["devices"].values() for x in r if x["name"].startswith("iPhone")]; print(d[0]["udid"])')
  xcrun simctl boot "$udid"
  xcrun simctl bootstatus "$udid" -b
fi
"$cli" simulator trust --device "$udid"
(cd AppleReport && TEST_RUNNER_TLS_FIXTURES_URL="$TLS_FIXTURES_URL" TEST_RUNNER_TLS_FIXTURES_APPLE_REPORT_DIR="$out" \
  TEST_RUNNER_TLS_FIXTURES_XCODE="$TLS_FIXTURES_XCODE" \
  xcodebuild test -scheme AppleReport -destination "platform=iOS Simulator,id=$udid")
echo "cards written to $out: commit them, and where make test names a disagreement, write the observed code into the scenario file with the card as its source"
