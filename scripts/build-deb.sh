#!/usr/bin/env bash
# Builds the Debian package of p11keychain with dpkg-deb:
#
#   scripts/build-deb.sh [OUTPUT_DIR]     (default: .build/deb)
#   scripts/build-deb.sh --depends        (also: make deb-depends)
#
# writes OUTPUT_DIR/p11keychain_<VERSION>_<arch>.deb and prints its path; with --depends it
# builds nothing and prints the names of the packages Depends lists, one line, comma-separated
# (what README "Install" lists; Tests/Integration/test_install.sh checks they agree). The
# package holds what `make install PREFIX=/usr` lays out (README "Install"): the module in
# /usr/lib/<multiarch>/pkcs11/, its p11-kit registration in /usr/share/p11-kit/modules/ (so
# every p11-kit client sees the token once the package is installed), the CLI, the man pages
# (compressed, as Debian policy asks), the bash completion and the example configuration,
# and in /usr/share/doc/p11keychain/ the machine-readable copyright file and the changelog
# (conf/deb/copyright, conf/deb/changelog: lintian reports neither missing). The version is
# the VERSION file's. Depends comes from the libraries the two binaries link
# (dpkg-shlibdeps reads each library package's shlibs), plus p11-kit, which loads the module,
# and libkeyutils1, which every binary opens with dlopen when it first uses the session
# keyring (`p11keychain unlock`, C_Login in an unlocked session), so no binary links it.
# libpq5 is Recommends: the module opens it with dlopen for a PostgreSQL token only.
# Neither binary needs the Swift runtime: both link it statically (Package.swift).
#
# Builds the release products first if they are missing (`make` brings them up to date).
# Install with `apt-get install ./p11keychain_<VERSION>_amd64.deb`; remove with
# `apt-get remove p11keychain` (or `dpkg --purge p11keychain`).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PRINT_DEPENDS=false
if [[ ${1:-} == --depends ]]; then
    PRINT_DEPENDS=true
    shift
fi
OUT=${1:-$REPO/.build/deb}

die() {
    echo "build-deb.sh: $*" >&2
    exit 1
}

for tool in dpkg-deb dpkg-shlibdeps dpkg-parsechangelog make gzip strip; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs dpkg-dev)"
done
VERSION=$(tr -d ' \n' <"$REPO/VERSION")
[[ $VERSION =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "VERSION holds '$VERSION', not a Debian version"
changelog_version=$(dpkg-parsechangelog -l "$REPO/conf/deb/changelog" -S Version)
[[ $changelog_version == "$VERSION" ]] ||
    die "conf/deb/changelog's newest entry is $changelog_version, VERSION is $VERSION: add an entry"
ARCH=$(dpkg --print-architecture)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/pkgroot

make -s -C "$REPO" install DESTDIR="$root" PREFIX=/usr >/dev/null
gzip -9n "$root"/usr/share/man/man1/p11keychain.1 "$root"/usr/share/man/man5/p11keychain.conf.5
doc=$root/usr/share/doc/p11keychain
install -m 0644 "$REPO/conf/deb/copyright" "$doc/copyright"
# changelog.gz, not changelog.Debian.gz: the version has no Debian revision, so the package
# is native, and lintian wants a native package's changelog under that name.
gzip -9n -c "$REPO/conf/deb/changelog" >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
# As Debian packages do: no symbol tables beyond the dynamic ones (the module's C_* stay).
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$root"/usr/lib/*/pkcs11/libp11keychain-pkcs11.so "$root"/lib/*/security/pam_p11keychain.so
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/p11keychain" \
    "$root/usr/libexec/p11keychain/pam-helper"

# Depends: dpkg-shlibdeps wants a source tree (debian/control) and the package's root
# (DEBIAN/) to tell the package's own files from the system's.
mkdir -p "$root/DEBIAN" "$work/debian"
printf 'Source: p11keychain\n\nPackage: p11keychain\nArchitecture: any\n' >"$work/debian/control"
mapfile -t binaries < <(find "$root/usr" "$root/lib" -type f \( -name '*.so' -o -path '*/bin/*' -o -path '*/libexec/*' \))
shlibs=$(cd "$work" && dpkg-shlibdeps -O "${binaries[@]}" 2>"$work/shlibdeps.log") ||
    die "dpkg-shlibdeps failed: $(cat "$work/shlibdeps.log")"
depends=${shlibs#shlibs:Depends=}
[[ -n $depends && $depends != "$shlibs" ]] || die "dpkg-shlibdeps printed no dependencies: $shlibs"
[[ $depends == *libkeyutils1* ]] || depends="$depends, libkeyutils1"
depends="$depends, p11-kit"
if $PRINT_DEPENDS; then
    # The names alone, sorted: versions follow the build machine's libraries.
    sed -E 's/ *\([^)]*\)//g; s/, */\n/g' <<<"$depends" | LC_ALL=C sort -u | paste -sd, - | sed 's/,/, /g'
    exit 0
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: p11keychain
Version: $VERSION
Architecture: $ARCH
Maintainer: p11keychain maintainers <maintainers@users.noreply.a-seed-fff723e2.example>
Installed-Size: $installed_size
Depends: $depends
Recommends: libpq5
Section: utils
Priority: optional
Description: SQLite-backed certificate and key store with a PKCS#11 module
 p11keychain keeps certificates, key pairs, secret keys and passwords in one
 SQLite file per token, served three ways over the same items: a PKCS#11 module
 (libp11keychain-pkcs11.so, registered with p11-kit, so p11tool, certtool, NSS,
 OpenSSL's libp11 engine and other PKCS#11 clients see the token), a Swift API
 with Apple Keychain Services semantics, and the p11keychain command, in the
 manner of macOS security(1).
CONTROL
(cd "$root" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"

deb=$OUT/p11keychain_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zgzip --build "$root" "$deb" >/dev/null
echo "$deb"
