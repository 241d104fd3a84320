#!/usr/bin/env bash
# Installs what a fresh machine lacks for a group of make targets, or prints the exact command when it cannot.
#   scripts/ensure-deps.sh core     — build and test: OpenSSL headers (pkg-config openssl), openssl, curl, python3, ss
#   scripts/ensure-deps.sh browser  — the dashboard check: chromium and NSS tools (certutil)
#   scripts/ensure-deps.sh bench    — make bench: nginx, wrk (plus openssl, curl, taskset, python3)
#   scripts/ensure-deps.sh matrix-test — make test's reduced client matrix: gnutls-cli (plus python3-venv, see matrix-python.sh)
#   scripts/ensure-deps.sh matrix   — make matrix: every client stack (Java, Go, Node, GnuTLS, NSS tools, unshare)
set -euo pipefail
group=${1:-core}
# nginx and ss live in /usr/sbin, which a normal user's PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }

case "$group" in
  core)
    need_cmd pkg-config pkg-config
    # Without pkg-config the headers cannot be checked: ask for libssl-dev too (a no-op when it is there), so one run
    # installs everything rather than leaving the next build to fail on missing headers.
    if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists openssl 2>/dev/null; then missing+=(libssl-dev); fi
    need_cmd openssl openssl
    need_cmd curl curl
    need_cmd python3 python3
    need_cmd ss iproute2   # the reliability tests read listening sockets with ss
    ;;
  browser)
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
    need_cmd certutil libnss3-tools
    ;;
  bench)
    need_cmd nginx nginx
    need_cmd wrk wrk
    need_cmd openssl openssl
    need_cmd curl curl
    need_cmd taskset util-linux
    need_cmd python3 python3
    ;;
  matrix-test|matrix)
    need_cmd gnutls-cli gnutls-bin
    # pyca/cryptography comes from PyPI into a venv (scripts/matrix-python.sh) when python3 lacks it.
    python3 -c 'import cryptography.x509.verification' 2>/dev/null || python3 -c 'import ensurepip' 2>/dev/null \
      || missing+=(python3-venv)
    if [ "$group" = matrix ]; then
      need_cmd tstclnt libnss3-tools
      need_cmd javac default-jdk-headless   # `java File.java` compiles in memory: it needs the JDK, not just a JRE
      need_cmd go golang-go
      need_cmd node nodejs
      need_cmd unshare util-linux           # URLSession's private mount namespace (scripts/matrix.py)
      [ -f /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
    fi
    ;;
  *) echo "unknown dependency group: $group" >&2; exit 2 ;;
esac

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(uname -s)" = Darwin ]; then
  echo "missing: ${missing[*]}. On macOS: brew install openssl@3 pkg-config curl python3 (and nginx wrk for bench)" >&2
  exit 1
fi
if [[ " ${missing[*]} " == *" chromium "* ]] && grep -qs '^ID=ubuntu' /etc/os-release; then
  # Ubuntu ships Chromium only as a snap; its chromium-browser package is a stub that installs the snap.
  echo "missing: Chromium. On Ubuntu: sudo snap install chromium (and: sudo apt-get install -y libnss3-tools)" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A stale package index is the usual reason an install fails on a fresh machine.
  apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; }
  exit 0
fi
echo "missing: ${missing[*]}. Install them with: sudo apt-get install -y ${missing[*]}" >&2
exit 1
