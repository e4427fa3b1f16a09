#!/usr/bin/env bash
# Builds the Debian package of p11keychain with dpkg-deb:
#
#   scripts/build-deb.sh [OUTPUT_DIR]     (default: .build/deb)
#
# writes OUTPUT_DIR/p11keychain_<VERSION>_<arch>.deb and prints its path. The package holds
# what `make install PREFIX=/usr` lays out (README "Install"): the module in
# /usr/lib/<multiarch>/pkcs11/, its p11-kit registration in /usr/share/p11-kit/modules/ (so
# every p11-kit client sees the token once the package is installed), the CLI, the man pages
# (compressed, as Debian policy asks), the bash completion and the example configuration.
# The version is the VERSION file's. Depends comes from the libraries the two binaries link
# (dpkg-shlibdeps reads each library package's shlibs), plus p11-kit, which loads the module.
# Neither binary needs the Swift runtime: both link it statically (Package.swift).
#
# Builds the release products first if they are missing (`make` brings them up to date).
# Install with `apt-get install ./p11keychain_<VERSION>_amd64.deb`; remove with
# `apt-get remove p11keychain` (or `dpkg --purge p11keychain`).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$REPO/.build/deb}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

die() {
    echo "build-deb.sh: $*" >&2
    exit 1
}

for tool in dpkg-deb dpkg-shlibdeps make gzip strip; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs dpkg-dev)"
done
VERSION=$(tr -d ' \n' <"$REPO/VERSION")
[[ $VERSION =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "VERSION holds '$VERSION', not a Debian version"
ARCH=$(dpkg --print-architecture)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/pkgroot

make -s -C "$REPO" install DESTDIR="$root" PREFIX=/usr >/dev/null
gzip -9n "$root"/usr/share/man/man1/p11keychain.1 "$root"/usr/share/man/man5/p11keychain.conf.5
# As Debian packages do: no symbol tables beyond the dynamic ones (the module's C_* stay).
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$root"/usr/lib/*/pkcs11/libp11keychain-pkcs11.so "$root"/lib/*/security/pam_p11keychain.so
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/p11keychain"

# Depends: dpkg-shlibdeps wants a source tree (debian/control) and the package's root
# (DEBIAN/) to tell the package's own files from the system's.
mkdir -p "$root/DEBIAN" "$work/debian"
printf 'Source: p11keychain\n\nPackage: p11keychain\nArchitecture: any\n' >"$work/debian/control"
mapfile -t binaries < <(find "$root/usr" "$root/lib" -type f \( -name '*.so' -o -path '*/bin/*' \))
shlibs=$(cd "$work" && dpkg-shlibdeps -O "${binaries[@]}" 2>"$work/shlibdeps.log") ||
    die "dpkg-shlibdeps failed: $(cat "$work/shlibdeps.log")"
depends=${shlibs#shlibs:Depends=}
[[ -n $depends && $depends != "$shlibs" ]] || die "dpkg-shlibdeps printed no dependencies: $shlibs"
depends="$depends, p11-kit"

installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: p11keychain
Version: $VERSION
Architecture: $ARCH
Maintainer: p11keychain maintainers <maintainers@users.noreply.a-seed-fff723e2.example>
Installed-Size: $installed_size
Depends: $depends
Section: utils
Priority: optional
Description: SQLite-backed certificate and key store with a PKCS#11 module
 p11keychain keeps certificates, key pairs, secret keys and passwords in one SQLite
 file per token, served three ways over the same items: a PKCS#11 module
 (libp11keychain-pkcs11.so, registered with p11-kit, so p11tool, certtool, NSS,
 OpenSSL's libp11 engine and other PKCS#11 clients see the token), a Swift API with
 Apple Keychain Services semantics, and the p11keychain command, in the manner of
 macOS security(1).
CONTROL
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"

deb=$OUT/p11keychain_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zgzip --build "$root" "$deb" >/dev/null
echo "$deb"
