#!/usr/bin/env bash
# A Python with pyca/cryptography's X.509 verifier (cryptography.x509.verification, in cryptography 43 and later) for
# the client matrix's strict RFC 5280 column. Nothing to do when python3 already has it; otherwise .build-matrix/venv is
# made and cryptography installed there from PyPI (Debian's python3-cryptography is too old), never into the system.
set -euo pipefail
cd "$(dirname "$0")/.."
check='import cryptography.x509.verification'
python3 -c "$check" 2>/dev/null && exit 0
venv=.build-matrix/venv
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then exit 0; fi
if ! python3 -c 'import ensurepip' 2>/dev/null; then
  echo "missing: python3-venv (to install pyca/cryptography for the client matrix). Install it with: sudo apt-get install -y python3-venv" >&2
  exit 1
fi
echo "installing: pyca/cryptography into $venv (the client matrix's RFC 5280 verifier)" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'cryptography>=43'
