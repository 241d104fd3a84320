#!/usr/bin/env bash
# `make test-legacy`: ssl-v3, rc4 and 3des served through the legacy helper, judged by the legacy OpenSSL's own s_client
# (a client the project did not write), with the system's clients as the control that must be refused.
#
# Starts `tls-fixtures serve ssl-v3 rc4 3des ats-compliant` from .build/debug with the helper of .build-legacy: the main
# process serves ats-compliant itself and hands the other three to the helper. Prints one line per check; exits 1 if
# any failed. Needs `make legacy-openssl` first (the make target does it).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
helper=$root/.build-legacy/bin/tls-fixtures-legacy
legacy_openssl=$root/.build-legacy/openssl/bin/openssl
cli=$root/.build/debug/tls-fixtures
for tool in "$helper" "$legacy_openssl" "$cli"; do
  [ -x "$tool" ] || { echo "test-legacy: $tool is missing: run make legacy-openssl (and swift build)" >&2; exit 1; }
done

scratch=$(mktemp -d)
serve_pid=
cleanup() { [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT
failures=0
check() {  # check NAME CONDITION-EXIT-STATUS DETAIL
  if [ "$2" = 0 ]; then echo "PASS  $1"; else echo "FAIL  $1: $3"; failures=$((failures + 1)); fi
}

# A base whose dashboard, scenario ports and revocation ports are all free.
base=$(python3 - <<'EOF'
import random, socket
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); return True
    except OSError:
        return False
    finally:
        s.close()
for _ in range(50):
    base = random.randint(30000, 38000)
    if all(free(base + offset) for offset in range(0, 100)):
        print(base); break
EOF
)
[ -n "$base" ] || { echo "test-legacy: no free range of ports" >&2; exit 1; }

"$cli" serve ssl-v3 rc4 3des ats-compliant --port-base "$base" --dir "$scratch/store" --json --legacy-helper "$helper" \
  >"$scratch/out" 2>"$scratch/err" &
serve_pid=$!
for _ in $(seq 1 600); do
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$scratch/out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.2
done
report=$(python3 - "$scratch/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for entry in doc["scenarios"]:
    print(entry["name"], entry["status"], entry.get("port"), entry.get("servedBy") or "-")
EOF
) || { echo "test-legacy: serve did not report: $(tail -3 "$scratch/err")" >&2; exit 1; }
echo "$report" | sed 's/^/      /'
version=$("$legacy_openssl" version | sed 's/^OpenSSL \([^ ]*\).*/\1/')
for name in ssl-v3 rc4 3des; do
  line=$(echo "$report" | grep "^$name ")
  echo "$line" | grep -q " serving .* the legacy helper, linked with OpenSSL $version"
  check "$name is served by the helper linked with OpenSSL $version" $? "$line"
done
echo "$report" | grep -q "^ats-compliant serving [0-9]* -$"
check "ats-compliant is served by the main process" $? "$(echo "$report" | grep ats-compliant)"

port() { echo "$report" | awk -v n="$1" '$1 == n { print $3 }'; }
ca=$scratch/store/ca/root.pem
request=$'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'

# legacy_client NAME PROTOCOL_FLAG CIPHER [EXTRA…]: the legacy OpenSSL's s_client; prints its transcript.
legacy_client() {
  local name=$1 protocol=$2 cipher=$3; shift 3
  printf '%s' "$request" | "$legacy_openssl" s_client -connect "localhost:$(port "$name")" -servername localhost \
    -CAfile "$ca" "$protocol" -cipher "$cipher" -ign_eof "$@" 2>&1
}

out=$(legacy_client ssl-v3 -ssl3 'AES128-SHA:@SECLEVEL=0')
echo "$out" | grep -q "Protocol  : SSLv3" && echo "$out" | grep -q '"protocol":"SSLv3"' && echo "$out" | grep -q '"scenario":"ssl-v3"'
check "ssl-v3: the legacy s_client negotiates SSLv3 and the fixture's answer says SSLv3" $? "$(echo "$out" | grep -E 'Protocol|Cipher|error' | head -3)"

out=$(legacy_client rc4 -tls1_2 'RC4:@SECLEVEL=0' -provider legacy -provider default)
echo "$out" | grep -q "Cipher is ECDHE-RSA-RC4-SHA" && echo "$out" | grep -q '"scenario":"rc4"'
check "rc4: the legacy s_client negotiates ECDHE-RSA-RC4-SHA" $? "$(echo "$out" | grep -E 'Cipher|error' | head -3)"

out=$(legacy_client 3des -tls1_2 '3DES:@SECLEVEL=0')
echo "$out" | grep -q "Cipher is ECDHE-RSA-DES-CBC3-SHA" && echo "$out" | grep -q '"scenario":"3des"'
check "3des: the legacy s_client negotiates ECDHE-RSA-DES-CBC3-SHA" $? "$(echo "$out" | grep -E 'Cipher|error' | head -3)"

# The system's clients, which lack these protocols and suites, are refused by the same servers; the control, served by
# the same serve from the same store, is accepted by that curl, so a refusal is not everything being refused.
curl -fsS --max-time 10 --cacert "$ca" "https://localhost:$(port ats-compliant)/" >/dev/null 2>"$scratch/curl.err"
check "ats-compliant (the control): the system's curl loads it" $? "$(head -1 "$scratch/curl.err")"
for name in ssl-v3 rc4 3des; do
  curl -sS --max-time 10 --cacert "$ca" "https://localhost:$(port "$name")/" >/dev/null 2>"$scratch/curl.err"
  status=$?
  [ "$status" -ne 0 ]
  check "$name: the system's curl is refused (exit $status)" $? "curl connected"
done

# SIGTERM stops the main process and, with it, the helper: every port is free again.
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null; serve_pid=
sleep 0.5
left=0
for name in ssl-v3 rc4 3des ats-compliant; do
  (exec 3<>"/dev/tcp/127.0.0.1/$(port "$name")") 2>/dev/null && left=$((left + 1))
done
[ "$left" = 0 ]
check "after SIGTERM nothing listens (main process and helper)" $? "$left ports still answer"

echo
if [ "$failures" = 0 ]; then echo "test-legacy: all checks passed"; else echo "test-legacy: $failures failed"; exit 1; fi
