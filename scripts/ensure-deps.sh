#!/usr/bin/env bash
# Installs what a fresh machine lacks for a group of make targets, or prints the exact command when it cannot.
#   scripts/ensure-deps.sh core     build and run: pkg-config and OpenSSL 3's headers; python3 for the scripts
#   scripts/ensure-deps.sh test     make test: the clients that judge the servers (openssl, curl, Python's ssl),
#                                   ss and setpriv (Linux), the dashboard browser check (Chromium, NSS certutil),
#                                   and on macOS Xcode's XCTest
#   scripts/ensure-deps.sh xctest   make build (every target, the XCTest glue included): on macOS, Xcode's XCTest
#   scripts/ensure-deps.sh browser  the browser check alone
#   scripts/ensure-deps.sh bench    make bench (Linux): nginx, wrk, taskset, openssl, curl, python3
#   scripts/ensure-deps.sh matrix-test  make test's live client matrix: on Linux every client stack (GnuTLS, NSS tools,
#                                   Chromium, Java, OkHttp, Go, Node, unshare, pyca/cryptography's verifier from PyPI into a
#                                   venv by scripts/matrix-python.sh when python3 lacks it); on macOS GnuTLS and pyca
#   scripts/ensure-deps.sh matrix   make matrix (Linux): the same stacks
#
# Each requirement is "required" (the target cannot work without it: a missing one fails it) or "optional" (only
# some tests use it: they are skipped, each saying what is missing, and the target goes on). On Debian/Ubuntu as
# root everything, optional included, is installed with apt-get, so CI runs every test. Elsewhere the exact command
# is printed: apt-get on Debian/Ubuntu, Homebrew on macOS (this script does not run brew for you).
#
# A group is a function `group_NAME` listing its requirements with `need`; add one in the same way.
# Portable to macOS's /bin/bash 3.2: no associative arrays, no ${x,,}, and empty arrays are expanded with ${a[@]+…}.
set -euo pipefail
group=${1:-core}

os=$(uname -s)
# nginx, ss and setpriv live in /usr/sbin or /sbin, which a normal user's PATH may lack. (Tests set it to "".)
PATH="$PATH:${ENSURE_DEPS_SBIN-/usr/sbin:/sbin}"

brew_prefix=""
if [ "$os" = Darwin ] && command -v brew >/dev/null 2>&1; then
  brew_prefix=$(brew --prefix 2>/dev/null || true)
  # Homebrew's OpenSSL is keg-only: pkg-config finds it only through PKG_CONFIG_PATH (the Makefile sets it too).
  PKG_CONFIG_PATH="$brew_prefix/opt/openssl@3/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export PKG_CONFIG_PATH
fi

missing_required=()   # package names for this OS's installer
missing_optional=()
notes=()              # what an optional absence costs, one line each
xctest_missing=""     # macOS: XCTest comes with Xcode, not with the Command Line Tools (not a brew package)

# need required|optional CHECK APT_PACKAGE BREW_PACKAGE [WHAT IT IS FOR]
#   CHECK: a command name; pc:MODULE (pkg-config finds MODULE); keg:NAME/bin/TOOL (Homebrew's keg-only build, macOS);
#          brew-bin:TOOL (a program under Homebrew's prefix, macOS); py-openssl3 (python3's ssl is OpenSSL 3);
#          py3 (python3 3.8 or later); file:PATH (a file a package installs, such as a jar)
#   A package of "-" means the requirement does not apply on that OS.
need() {
  local kind=$1 check=$2 apt=$3 brew=$4 purpose=${5:-}
  local package=$apt
  [ "$os" = Darwin ] && package=$brew
  [ "$package" = "-" ] && return 0
  if satisfied "$check"; then return 0; fi
  if [ "$kind" = required ]; then
    missing_required+=("$package")
  else
    missing_optional+=("$package")
    [ -n "$purpose" ] && notes+=("$package: $purpose")
  fi
  return 0
}

satisfied() {
  case "$1" in
    pc:*) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "${1#pc:}" 2>/dev/null ;;
    keg:*) [ -n "$brew_prefix" ] && [ -x "$brew_prefix/opt/${1#keg:}" ] ;;
    brew-bin:*) [ -n "$brew_prefix" ] && [ -x "$brew_prefix/bin/${1#brew-bin:}" ] ;;
    py3) command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null ;;
    py-pyca-or-venv) command -v python3 >/dev/null 2>&1 && { python3 -c 'import cryptography.x509.verification' 2>/dev/null \
                   || python3 -c 'import ensurepip' 2>/dev/null; } ;;
    ca-bundle) [ -f /etc/ssl/certs/ca-certificates.crt ] ;;
    file:*) [ -f "${1#file:}" ] ;;
    py-openssl3) command -v python3 >/dev/null 2>&1 \
                   && python3 -c 'import ssl, sys; sys.exit(not ssl.OPENSSL_VERSION.startswith("OpenSSL 3"))' 2>/dev/null ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

# The tests, TLSFixturesXCTest and TLSFixturesClientXCTest import XCTest, which ships with Xcode only: with just the
# Command Line Tools selected (`xcode-select --install`) the build stops at "no such module 'XCTest'".
need_xctest() {
  [ "$os" = Darwin ] || return 0
  xcrun --find xctest >/dev/null 2>&1 || xctest_missing=yes
}

group_core() {
  need required pkg-config            pkg-config  pkg-config
  # Without pkg-config the headers cannot be checked: ask for libssl-dev too (a no-op when it is there), so one run
  # installs everything rather than leaving the build to fail on missing headers.
  need required pc:openssl            libssl-dev  openssl@3
  need required py3                   python3     python3    # scripts/lint-darwin.py, make scenarios
}

group_xctest() {
  need_xctest
}

group_browser() {
  need optional chromium              chromium    -  "the dashboard browser check is skipped (on macOS Chrome trusts the Keychain, so it runs on Linux only)"
  need optional certutil              libnss3-tools -  "the dashboard browser check is skipped"
}

group_test() {
  group_core
  need_xctest
  if [ "$os" = Darwin ]; then
    # macOS's own openssl, curl and the Command Line Tools' python3 are LibreSSL builds: the tests judge with
    # Homebrew's (openssl@3 comes with core).
    need optional keg:curl/bin/curl   -  curl     "tests judging with curl are skipped (Apple's curl is LibreSSL and consults the Keychain)"
    need optional brew-bin:python3    -  python3  "tests judging with Python's ssl are skipped (the Command Line Tools' python3 is LibreSSL)"
  else
    need optional openssl             openssl     -  "tests judging with openssl s_client/verify/x509 are skipped"
    need optional curl                curl        -  "tests judging with curl are skipped"
    need optional py-openssl3         python3     -  "tests judging with Python's ssl are skipped"
    need optional ss                  iproute2    -  "the listening-socket checks are skipped"
    need optional setpriv             util-linux  -  "store-permission tests run as root are skipped"
  fi
  group_browser
}

group_bench() {
  if [ "$os" = Darwin ]; then
    echo "make bench and make bench-quick are Linux only (taskset, /proc, Debian's nginx); run them on a Linux machine" >&2
    exit 1
  fi
  need required nginx                 nginx       -
  need required wrk                   wrk         -
  need required openssl               openssl     -
  need required curl                  curl        -
  need required taskset               util-linux  -
  need required python3               python3     -
}

# make test's live client matrix (ClientMatrixTests) judges the fixtures with other TLS stacks: every one it runs is
# required, so a missing stack fails `make test` rather than skipping the check that catches a CA or server regression.
# On Linux that is all thirteen stacks of scripts/matrix.py, each from Debian's packages (pyca/cryptography from PyPI,
# the Swift clients built from Matrix/); on macOS, GnuTLS and pyca (the committed verdicts are Linux's).
group_matrix_test() {
  need required gnutls-cli            gnutls-bin  gnutls
  # pyca/cryptography's verifier: python3 has it, or a venv can be made to install it from PyPI.
  need required py-pyca-or-venv       python3-venv python3
  [ "$os" = Darwin ] && return 0
  need required openssl               openssl     -
  need required curl                  curl        -
  need required tstclnt               libnss3-tools -
  need required certutil              libnss3-tools -
  need required chromium              chromium    -
  need required javac                 default-jdk-headless -   # `java File.java` compiles in memory: the JDK, not a JRE
  need required file:/usr/share/java/okhttp.jar libokhttp-java - # the OkHttp column (with okio, its dependency)
  need required file:/usr/share/java/com.android.json.jar libandroid-json-java - # org.json for docs/android.md's helper
  need required go                    golang-go   -
  need required node                  nodejs      -
  need required unshare               util-linux  -            # URLSession's private mount namespace (matrix.py)
  need required ca-bundle             ca-certificates -
}

# make matrix: every scenario on the same stacks.
group_matrix() {
  if [ "$os" = Darwin ]; then
    echo "make matrix is Linux only (URLSession's column needs a private mount namespace); run it on a Linux machine" >&2
    exit 1
  fi
  group_matrix_test
}

group=${group//-/_}
if ! declare -F "group_$group" >/dev/null; then
  groups=$(declare -F | sed -n 's/^declare -f group_//p' | tr '_\n' '- ')
  echo "unknown dependency group: $group (use one of: ${groups% })" >&2
  exit 2
fi
"group_$group"

count_required=${#missing_required[@]}
count_optional=${#missing_optional[@]}
[ "$count_required" -eq 0 ] && [ "$count_optional" -eq 0 ] && [ -z "$xctest_missing" ] && exit 0

# De-duplicated, in order.
unique() { local seen=" " item; for item in "$@"; do case "$seen" in *" $item "*) ;; *) seen="$seen$item "; printf '%s ' "$item" ;; esac; done; }
required_list=$(unique ${missing_required[@]+"${missing_required[@]}"})
optional_list=$(unique ${missing_optional[@]+"${missing_optional[@]}"})
required_list=${required_list% }
optional_list=${optional_list% }

explain_optional() {
  [ "$count_optional" -eq 0 ] && return 0
  echo "optional, not installed: $optional_list — the tests that need them are skipped, each saying why:" >&2
  local note
  for note in ${notes[@]+"${notes[@]}"}; do echo "  $note" >&2; done
}

if [ "$os" = Darwin ]; then
  if [ -z "$brew_prefix" ]; then
    echo "missing: Homebrew, which provides OpenSSL 3 here. Install it from https://brew.sh, then: brew install openssl@3 pkg-config" >&2
    exit 1
  fi
  explain_optional
  [ -n "$optional_list" ] && echo "  to run them: brew install $optional_list" >&2
  status=0
  if [ "$count_required" -gt 0 ]; then
    echo "missing: $required_list. Install with: brew install $required_list" >&2
    status=1
  fi
  if [ -n "$xctest_missing" ]; then
    echo "missing: XCTest, which the tests import and only Xcode has (not the Command Line Tools)." \
         "Install Xcode 26 or later, then: sudo xcode-select -s /Applications/Xcode.app" >&2
    status=1
  fi
  exit $status
fi

if [[ " $optional_list $required_list " == *" chromium "* ]] && grep -qs '^ID=ubuntu' /etc/os-release; then
  # Ubuntu ships Chromium only as a snap; its chromium-browser package is a stub that installs the snap.
  echo "on Ubuntu, Chromium is a snap (the browser check and the matrix's chromium column need it):" \
    "sudo snap install chromium" >&2
  optional_list=$(echo " $optional_list " | sed 's/ chromium / /; s/^ //; s/ $//')
  if [[ " $required_list " == *" chromium "* ]]; then
    # Required here (make test's matrix): install the rest, then fail, since apt-get cannot install it.
    required_list=$(echo " $required_list " | sed 's/ chromium / /; s/^ //; s/ $//')
    trap 'exit 1' EXIT
  fi
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  all="$required_list${optional_list:+ $optional_list}"
  all=${all# }
  if [ -n "$all" ]; then
    echo "installing: $all" >&2
    export DEBIAN_FRONTEND=noninteractive
    # Another apt-get (a parallel job, unattended-upgrades) may hold the dpkg lock: wait for it rather than fail.
    # A stale package index is the usual reason an install fails on a fresh machine.
    # shellcheck disable=SC2086
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq $all >/dev/null 2>&1 \
      || { apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq $all; }
  fi
  exit 0
fi

explain_optional
[ -n "$optional_list" ] && echo "  to run them: sudo apt-get install -y $optional_list" >&2
if [ "$count_required" -gt 0 ]; then
  echo "missing: $required_list. Install them with: sudo apt-get install -y $required_list" >&2
  exit 1
fi
exit 0
