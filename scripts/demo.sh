#!/usr/bin/env bash
# The main job, on a fresh Debian 12 machine: build p11keychain (release), register the
# PKCS#11 module with p11-kit, store a certificate through the Swift API (Apple's "Storing a
# Certificate in the Keychain" flow, Examples/StoreCertificate), and show it with
# `p11tool --list-all`, which finds the module through p11-kit (no --provider).
#
#   scripts/demo.sh [CERTIFICATE.cer]     default: Examples/sample.cer
#
# The certificate goes into your default keychain (the `login` token under
# ${P11KEYCHAIN_DIR:-${XDG_DATA_HOME:-~/.local/share}/p11keychain}).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source scripts/setup.sh

certificate=${1:-Examples/sample.cer}

echo "== build (release)"
swift build -c release --product p11keychain-pkcs11 2>&1 | tail -n 1
swift build -c release --product store-certificate-example 2>&1 | tail -n 1
swift build -c release --product p11keychain 2>&1 | tail -n 1

echo "== register the module with p11-kit"
scripts/register-module.sh "$root/.build/release/libp11keychain-pkcs11.so"

echo "== store $certificate through the Security API"
.build/release/store-certificate-example "$certificate"

# p11tool finds the module through p11-kit, with no --provider. Debian's p11-kit always
# registers a second token too (p11-kit-trust, "System Trust"), and with more than one token
# p11tool --list-all wants to be told which one: first it shows the tokens it found, then
# the objects of ours.
echo "== p11tool --list-all"
p11tool --list-all 2>&1 | grep -E '^pkcs11:' || true
echo "== p11tool --list-all 'pkcs11:token=login'"
listing=$(p11tool --list-all 'pkcs11:token=login')
echo "$listing"
grep -q 'Label: My Certificate' <<<"$listing" || {
    echo "demo: p11tool does not show \"My Certificate\"" >&2
    exit 1
}
