#!/usr/bin/env bash
# Fuzzes the PKCS#11 module through its C ABI for a bounded time: builds the module
# and the driver Tests/Fuzz/ under AddressSanitizer, runs the driver against a temporary store
# with a seed, then checks the store with SQLite's integrity_check. See Tests/Fuzz/README.md.
#
#   scripts/fuzz.sh [SECONDS] [SEED]     default 60 s; the seed defaults to the date
#
# Environment:
#   P11FUZZ_MODULE=PATH   fuzz that module instead, with a driver built without the sanitizer
#                         (e.g. .build/release/libp11keychain-pkcs11.so)
#   P11FUZZ_SKIP=LIST     call families or argument classes to leave out (p11fuzz --list)
#   P11FUZZ_ONLY=LIST     run only these call families
#   P11FUZZ_ITERATIONS=N  stop after iteration N (replays a seed's first N iterations)
#   P11FUZZ_TRACE=1       print every call and its CK_RV
#   P11FUZZ_KEEP=1        keep the temporary store even when the run passed
#   P11FUZZ_HANG_TIMEOUT=S  a call that takes longer is a hang (default 30)
#   P11FUZZ_FRESH_CERTS=1 mutate certificates made now by openssl instead of Tests/Fuzz/certificates
#   P11FUZZ_PENDING=LIST  oracle checks whose defects are known, skipped until their fixes
#                         land (added to P11FUZZ_SKIP; default below); P11FUZZ_PENDING= runs all
#   P11FUZZ_SELFTEST=1    the exfiltration oracle also tracks readable keys: the run must fail
#
# Exit status 0 only when the driver saw no crash, no hang, no sanitizer report, no oracle
# failure (a wrong round trip, a sensitive key's bytes seen: Tests/Fuzz/README.md "Oracles"),
# and every store file passed PRAGMA integrity_check.
#
# Running for hours. `scripts/fuzz.sh 600` is the 10-minute local run; CI runs 60 s. For
# hours, run many 10-minute runs with successive seeds rather than one long one: each gets a
# fresh store (a long run stops making objects at 6000, and the oracles then reuse the keys
# they have), each replays on its own, and a failure stops the loop with its seed:
#
#   seed=$(date +%s); for i in $(seq 0 23); do scripts/fuzz.sh 600 $((seed + i)) || break; done
#
# (four hours; under AddressSanitizer by default, or P11FUZZ_MODULE=.build/release/... for
# about four times the calls per second). One long run works too: scripts/fuzz.sh 14400 SEED.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source scripts/setup.sh
set +e # setup.sh sets -e; a failing run must still reach the integrity check and the report

# Checks of the oracles whose defects are known and whose fixes are pending, by name (a
# defect found by an oracle is listed here until its fix lands, so the run stays green for
# the rest). None today: the six known ones (wrong-key-type, montgomery-usage, wrap-kw-pad,
# hkdf-data-private, gcm-long-iv, rsa-short-ciphertext) are fixed.
pending=${P11FUZZ_PENDING-}
if [[ -n $pending ]]; then
    export P11FUZZ_SKIP=${P11FUZZ_SKIP:+$P11FUZZ_SKIP,}$pending
fi

seconds=${1:-60}
seed=${2:-$(date +%s)}
hang_timeout=${P11FUZZ_HANG_TIMEOUT:-30}
clang=/opt/swift/usr/bin/clang
[[ -x $clang ]] || clang=$(command -v clang || true)
[[ -n $clang ]] || { echo "fuzz: no clang (the Swift toolchain's is /opt/swift/usr/bin/clang)" >&2; exit 2; }

out=.build/fuzz
mkdir -p "$out"
sources=(Tests/Fuzz/*.c)
cflags=(-std=gnu11 -g -O1 -Wall -Wextra -Werror -ITests/include -Ip11/include -fuse-ld=lld)

if [[ -n ${P11FUZZ_MODULE:-} ]]; then
    module=$P11FUZZ_MODULE
    [[ $module == /* ]] || module=$root/$module
    [[ -f $module ]] || { echo "fuzz: no module $module" >&2; exit 2; }
    driver=$out/p11fuzz
    echo "fuzz: building the driver (no sanitizer) for $module"
    "$clang" "${cflags[@]}" -o "$driver" "${sources[@]}" -ldl -lpthread || exit 2
else
    # The same scratch path as the sanitized ABI tests of scripts/test.sh: built once for both.
    echo "fuzz: building the module under AddressSanitizer"
    swift build --sanitize=address --scratch-path .build/asan --product p11keychain-pkcs11 2>&1 |
        grep -vE '^\[[0-9]+/[0-9]+\]'
    ((PIPESTATUS[0] == 0)) || exit 2
    module=$root/.build/asan/debug/libp11keychain-pkcs11.so
    driver=$out/p11fuzz-asan
    # Linked with the toolchain's clang and -fsanitize=address: the driver carries the same
    # sanitizer runtime the module was built against, loaded first, so no LD_PRELOAD.
    echo "fuzz: building the driver under AddressSanitizer"
    "$clang" "${cflags[@]}" -fsanitize=address -fno-omit-frame-pointer -o "$driver" "${sources[@]}" \
        -ldl -lpthread || exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/p11fuzz.XXXXXX")
store=$tmp/store
mkdir -p "$store" "$tmp/certs" "$tmp/home"
chmod 0700 "$store"

# Real certificates to start the DER mutations from: by default the ones in
# Tests/Fuzz/certificates (EC P-256, an RSA CA, Ed25519, P-384 with a long UTF-8 subject), so
# that a seed replays the same calls anywhere; with P11FUZZ_FRESH_CERTS=1, new ones made now
# with `openssl req -x509` (new keys, serials and dates: more variety, no exact replay).
certs=$root/Tests/Fuzz/certificates
make_cert() {
    local name=$1 subject=$2
    shift 2
    openssl req -x509 -nodes -days 30 -subj "$subject" -keyout "$tmp/certs/$name.key" \
        -out "$tmp/certs/$name.pem" "$@" 2>/dev/null &&
        openssl x509 -in "$tmp/certs/$name.pem" -outform der -out "$tmp/certs/$name.der"
}
if [[ ${P11FUZZ_FRESH_CERTS:-} == 1 ]]; then
    certs=$tmp/certs
    make_cert ec "/CN=fuzz EC/O=p11keychain" -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -addext "subjectAltName=DNS:fuzz.example,IP:127.0.0.1" -addext "keyUsage=digitalSignature"
    make_cert rsa "/CN=fuzz RSA CA" -newkey rsa:2048 -addext "basicConstraints=critical,CA:TRUE" \
        -set_serial 0x7fffffffffffffffffffffff
    make_cert ed25519 "/CN=fuzz Ed25519" -newkey ed25519
    make_cert p384 "/C=FR/O=Société/OU=$(printf 'u%.0s' {1..60})/emailAddress=a@b.c" -newkey ec \
        -pkeyopt ec_paramgen_curve:P-384 -addext "extendedKeyUsage=clientAuth,emailProtection" -utf8
fi
ls "$certs"/*.der >/dev/null 2>&1 || echo "fuzz: warning: no certificate in $certs; DER is random"

# Two tokens: slot 0 (login) and slot 1 (spare).
cat >"$tmp/p11keychain.conf" <<CONF
[token login]
path = $store/login.sqlite3
[token spare]
path = $store/spare.sqlite3
CONF

export P11KEYCHAIN_DIR=$store P11KEYCHAIN_CONF=$tmp/p11keychain.conf HOME=$tmp/home \
    XDG_DATA_HOME=$tmp/home/.local/share XDG_CONFIG_HOME=$tmp/home/.config
unset P11KEYCHAIN_DEBUG
# Swift seeds its hash function per process; the module's dictionaries would then check a
# template's attributes in another order each run, and a replay would see other CK_RVs.
export SWIFT_DETERMINISTIC_HASHING=1
# Leaks are not errors (the module's static Swift runtime stays behind at dlclose, by
# design); every memory error is fatal and ends in abort(), which the driver reports.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:symbolize=1:print_summary=1
[[ -x /opt/swift/usr/bin/llvm-symbolizer ]] && export ASAN_SYMBOLIZER_PATH=/opt/swift/usr/bin/llvm-symbolizer

trace=()
[[ ${P11FUZZ_TRACE:-} == 1 ]] && trace=(--trace)
echo "fuzz: seed $seed, $seconds s, store $store"
timeout -k 10 $((${seconds%.*} + hang_timeout + 120)) "$driver" --module "$module" --seed "$seed" \
    --seconds "$seconds" --certs "$certs" --hang-timeout "$hang_timeout" "${trace[@]}"
status=$?

failed=()
case $status in
0) ;;
3) failed+=("a call hung (watchdog)") ;;
4) failed+=("a forked child crashed or hung") ;;
5) failed+=("an oracle failed: a wrong round trip or a sensitive key's bytes seen (report above)") ;;
124 | 137) failed+=("the driver itself did not finish in time") ;;
*)
    if ((status > 128)); then
        failed+=("the driver crashed: signal $((status - 128)) ($(kill -l $((status - 128)) 2>/dev/null || echo '?'))")
    else
        failed+=("the driver exited with status $status")
    fi
    ;;
esac

checked=0
for db in "$store"/*.sqlite3; do
    [[ -f $db ]] || continue
    checked=$((checked + 1))
    result=$(sqlite3 "$db" 'PRAGMA integrity_check' 2>&1)
    if [[ $result == ok ]]; then
        echo "fuzz: integrity_check $(basename "$db"): ok"
    else
        failed+=("integrity_check of $(basename "$db"): $(head -n 3 <<<"$result" | tr '\n' ' ')")
    fi
done
((checked > 0)) || failed+=("no store file was created in $store")

if ((${#failed[@]} > 0)); then
    echo "fuzz: FAILED (seed $seed): ${failed[*]}"
    echo "fuzz: replay: P11FUZZ_PENDING='' P11FUZZ_SKIP='${P11FUZZ_SKIP:-}' P11FUZZ_ONLY='${P11FUZZ_ONLY:-}' scripts/fuzz.sh $seconds $seed   (store kept in $tmp)"
    exit 1
fi
if [[ ${P11FUZZ_KEEP:-} == 1 ]]; then
    echo "fuzz: store kept in $tmp"
else
    rm -rf --one-file-system -- "$tmp"
fi
echo "fuzz: seed $seed: ok"
