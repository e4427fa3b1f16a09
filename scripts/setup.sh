#!/usr/bin/env bash
# Installs what building and testing p11keychain needs on Debian 12, and nothing when it is
# all there already. Run as root (CI does); other users get sudo.
set -euo pipefail

packages=(
    # build
    gcc make pkg-config libsqlite3-dev libssl-dev libp11-kit-dev
    # GCC's static C++ runtime, linked into the release module (scripts/ld-static-libstdcxx.sh)
    libstdc++-12-dev
    # the real tools the tests and the demo drive
    p11-kit gnutls-bin opensc openssl sqlite3 util-linux
    # OpenSSL's PKCS#11 engine (libp11) for openssl req/s_server with token keys; xxd for the raw scans
    libengine-pkcs11-openssl xxd
    # SoftHSM2, measured beside p11keychain by the benchmark (jq reads its JSON)
    softhsm2 jq
    # AES-GCM checked independently of OpenSSL's command line (Tests/Integration/secret_lib.sh)
    python3 python3-cryptography
    # the clients tested with token keys (test_ssh.sh, test_curl.sh, test_gnutls.sh; gnutls-bin above)
    openssh-client openssh-server curl
    # p11-kit server / p11-kit-client.so, the remote-token recipe (network namespaces, ssh -R)
    # and the shipped systemd units (systemd-analyze, systemd-socket-activate)
    p11-kit-modules iproute2 systemd
    # NSS, Java (SunPKCS11; the JRE's module image has jdk.compiler, so `java Sign.java` runs
    # without a JDK) and a venv for python-pkcs11 from PyPI (Tests/Integration/test_{nss,java,python}.sh;
    # certutil -M and vfychain also for test_nss_trust.sh)
    libnss3-tools openjdk-17-jre-headless python3-venv
    # make install / the .deb (dpkg-architecture, dpkg-shlibdeps, lintian) and the man page checks
    dpkg-dev lintian man-db groff-base
    # the session keyring `p11keychain unlock` uses (libkeyutils) and the keyctl tool its tests drive
    libkeyutils-dev keyutils
    # the PAM module (pam/, libpam) and the pamtester its test drives (test_pam.sh)
    libpam0g-dev pamtester
    # the PostgreSQL engine (libpq) and the throwaway servers its tests start (docs/fleet.md)
    libpq-dev postgresql
)

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [[ $(id -u) == 0 ]] || sudo=sudo
    # Another apt (unattended-upgrades on a fresh machine) may hold the dpkg lock: wait for it
    # rather than fail at once (apt 1.9.11+ waits up to the timeout, in seconds).
    lock_wait=(-o DPkg::Lock::Timeout=600)
    $sudo apt-get "${lock_wait[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get "${lock_wait[@]}" install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

# The Swift toolchain: /opt/swift on the project's machines.
if ! command -v swift >/dev/null 2>&1; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
        [[ -x $candidate/swift ]] && export PATH="$candidate:$PATH" && break
    done
fi
command -v swift >/dev/null 2>&1 || { echo "setup: no Swift toolchain found (install Swift 6.x)" >&2; exit 1; }
