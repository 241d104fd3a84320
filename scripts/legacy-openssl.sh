#!/usr/bin/env bash
# `make legacy-openssl`: an OpenSSL that still has SSLv3, RC4 and 3DES, and the tls-fixtures helper linked against it.
#
# Debian's and Homebrew's OpenSSL are built without SSLv3 and the weak TLS suites, so the ssl-v3, rc4 and 3des scenarios
# are "unsupported by the linked OpenSSL". This builds upstream OpenSSL from the source package Debian publishes, with
# enable-ssl3 enable-ssl3-method enable-weak-ssl-ciphers, into .build-legacy/openssl (nothing outside the checkout is
# touched), then builds the tls-fixtures CLI against it into .build-legacy/swift. The result,
# .build-legacy/bin/tls-fixtures-legacy, is an ordinary tls-fixtures: `serve` runs it as a separate helper process for
# exactly those three scenarios, so the main process keeps the system's OpenSSL.
#
# Trust chain of the download, as apt's: Debian's signed InRelease (checked with gpgv against the archive keyring when
# both are present) → the SHA-256 of Sources.xz → the SHA-256 of openssl_VERSION.orig.tar.gz listed there.
# LEGACY_OPENSSL_VERSION picks another upstream version listed in the index; DEBIAN_MIRROR another mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/.build-legacy
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${DEBIAN_SUITE:-bookworm}
mkdir -p "$out/download" "$out/src" "$out/bin"
started=$(date +%s)
say() { echo "legacy-openssl: $*" >&2; }
fail() { say "$*"; exit 1; }

for tool in curl xz tar make perl pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || fail "needs $tool (sudo apt-get install -y curl xz-utils tar make perl pkg-config)"
done
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || fail "needs a C compiler (sudo apt-get install -y gcc)"

sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi; }

# 1. The index: InRelease (signed) names the SHA-256 of main/source/Sources.xz.
cd "$out/download"
curl -fsS -m 120 -o InRelease "$mirror/dists/$suite/InRelease" || fail "cannot download $mirror/dists/$suite/InRelease"
curl -fsS -m 300 -o Sources.xz "$mirror/dists/$suite/main/source/Sources.xz" || fail "cannot download the source index"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if command -v gpgv >/dev/null 2>&1 && [ -r "$keyring" ]; then
  gpgv --keyring "$keyring" InRelease >/dev/null 2>&1 || fail "InRelease does not carry a valid Debian archive signature"
  say "InRelease signature verified with $keyring"
else
  say "warning: gpgv or $keyring missing: InRelease's signature is not checked (the checksums still are)"
fi
index_sum=$(awk '/^SHA256:/{s=1;next} /^[^ ]/{s=0} s && $3=="main/source/Sources.xz"{print $1}' InRelease)
[ -n "$index_sum" ] || fail "InRelease lists no SHA-256 for main/source/Sources.xz"
[ "$(sha256 Sources.xz)" = "$index_sum" ] || fail "Sources.xz does not match the SHA-256 in InRelease"

# 2. The openssl source package's entry: its version and the SHA-256 of the upstream tarball.
# awk stops at the end of the entry; xz then dies of SIGPIPE, which is expected (hence the `|| true`).
entry=$( (xz -dc Sources.xz || true) | awk '/^Package: openssl$/{p=1} p && /^$/{exit} p')
[ -n "$entry" ] || fail "the index lists no openssl source package"
version=${LEGACY_OPENSSL_VERSION:-$(printf '%s\n' "$entry" | awk '/^Version:/{print $2}' | sed 's/-.*//')}
tarball=openssl_$version.orig.tar.gz
want=$(printf '%s\n' "$entry" | awk -v f="$tarball" '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && $3==f{print $1}')
[ -n "$want" ] || fail "the index lists no $tarball (LEGACY_OPENSSL_VERSION=$version is not the packaged version)"
if [ ! -f "$tarball" ] || [ "$(sha256 "$tarball")" != "$want" ]; then
  say "downloading $tarball"
  curl -fsS -m 900 -o "$tarball.part" "$mirror/pool/main/o/openssl/$tarball" || fail "cannot download $tarball"
  mv "$tarball.part" "$tarball"
fi
[ "$(sha256 "$tarball")" = "$want" ] || fail "$tarball does not match the SHA-256 in Debian's index ($want)"
say "$tarball: SHA-256 $want matches Debian's index"

# 3. OpenSSL with the legacy protocol and suites, installed under .build-legacy/openssl. The rpath makes its own
# `openssl` load its own libssl (the system's has the same soname). RC4 lives in OpenSSL 3's legacy provider, which
# this build installs in lib/ossl-modules; the helper loads it for the contexts that need it, never globally.
prefix=$out/openssl
src=$out/src/openssl-$version
options=(--prefix="$prefix" --openssldir="$prefix/ssl" --libdir=lib shared "-Wl,-rpath,$prefix/lib"
         enable-ssl3 enable-ssl3-method enable-weak-ssl-ciphers no-tests)
stamp=$prefix/.built-$version-$(printf '%s\n' "${options[@]}" | cksum | cut -d' ' -f1)
log=$out/build.log
if [ ! -f "$stamp" ]; then
  rm -rf "$src" "$prefix"
  tar -xzf "$tarball" -C "$out/src"
  cd "$src"
  say "configuring OpenSSL $version (enable-ssl3 enable-ssl3-method enable-weak-ssl-ciphers); log: $log"
  ./config "${options[@]}" >"$log" 2>&1 || { tail -20 "$log" >&2; fail "OpenSSL's configure failed (see $log)"; }
  jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
  say "building OpenSSL with $jobs jobs (about 10 minutes on 2 idle cores)"
  make -j"$jobs" build_sw >>"$log" 2>&1 || { tail -20 "$log" >&2; fail "building OpenSSL failed (see $log)"; }
  make install_sw install_ssldirs >>"$log" 2>&1 || { tail -20 "$log" >&2; fail "installing OpenSSL failed (see $log)"; }
  touch "$stamp"
fi
"$prefix/bin/openssl" version | grep -q "Library: OpenSSL $version" || fail "$prefix/bin/openssl does not load its own libssl"
built_openssl=$(date +%s)

# 4. tls-fixtures against it: SwiftPM finds OpenSSL through pkg-config; the rpath makes the helper load this libssl and
# never the system's (both are libssl.so.3).
cd "$root"
say "building the tls-fixtures helper against $prefix"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" swift build -c release --product tls-fixtures --scratch-path "$out/swift" \
  -Xlinker -rpath -Xlinker "$prefix/lib" >>"$log" 2>&1 || { tail -30 "$log" >&2; fail "building the helper failed (see $log)"; }
cp "$out/swift/release/tls-fixtures" "$out/bin/tls-fixtures-legacy"
linked=$("$out/bin/tls-fixtures-legacy" --version 2>/dev/null | tr -d '\n' || true)
case "$linked" in
  *"$version"*) ;;
  *) fail "the helper does not report OpenSSL $version (it says: $linked); check that $prefix/lib comes first" ;;
esac
done_at=$(date +%s)
say "done: $out/bin/tls-fixtures-legacy ($linked)"
say "times: OpenSSL $((built_openssl - started)) s, helper $((done_at - built_openssl)) s, total $((done_at - started)) s"
