#!/usr/bin/env bash
# bench/session.sh: the Swift API's speed on generic passwords and C_Login in a session
# `p11keychain unlock` unlocked, in one run.
#
# secitem-bench (bench/SecItemBench) grows a fresh keychain to each size with SecItemAdd
# (one generic password per call) and times SecItemCopyMatching by service + account
# returning the data, random existing items, at each size. bench/p11sign --login-runs
# times C_Login through the module: cold (no session unlock: the PBKDF2 check, 600,000
# rounds), then with no PIN (the protected authentication path) in a session keyring of its
# own after `p11keychain unlock`. Prints a
# markdown table with the targets (add ≥ 2,000/s, copy p50 ≤ 50 µs at 100k, an LAContext
# holding the PIN as kSecUseAuthenticationContext adding ≤ 5 µs to a copy, unlocked C_Login
# ≤ 5 ms), also written to bench/results/session.md (raw lines in session.txt).
#
# Settings (environment):
#   BENCH_SESSION_SIZES=1000,10000,100000  keychain sizes, cumulative
#   BENCH_SESSION_LOOKUPS=2000             SecItemCopyMatching calls per size
#   BENCH_SESSION_LOGINS=9                 C_Login calls per measurement (median)
#   BENCH_P11KEYCHAIN_MODULE=PATH          module to use (its directory must hold the release
#                                          p11keychain and secitem-bench too); else built here
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
sizes=${BENCH_SESSION_SIZES:-1000,10000,100000}
lookups=${BENCH_SESSION_LOOKUPS:-2000}
logins=${BENCH_SESSION_LOGINS:-9}
results=$here/results
build=$here/build
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11session.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/session.sh: %s\n' "$*" >&2; exit 1; }

for cmd in gcc keyctl; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done

if [ -n "${BENCH_P11KEYCHAIN_MODULE:-}" ]; then
    module=$BENCH_P11KEYCHAIN_MODULE
else
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then PATH=$PATH:/opt/swift/usr/bin; fi
    log "building the module, p11keychain and secitem-bench (release)"
    (cd "$root" && swift build -c release --product p11keychain-pkcs11 &&
        swift build -c release --product p11keychain && swift build -c release --product secitem-bench) >&2
    module=$root/.build/release/libp11keychain-pkcs11.so
fi
bin=$(dirname "$module")
for tool in p11keychain secitem-bench; do
    [ -x "$bin/$tool" ] || fail "no $tool beside the module in $bin (swift build -c release --product $tool)"
done
mkdir -p "$build" "$results"
build_p11sign

# A fresh store with both PINs, and no configuration from this machine's home.
mkdir -p "$work/store" "$work/config" "$work/data"
export P11KEYCHAIN_DIR=$work/store P11KEYCHAIN_CONF=/dev/null \
    XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data
# The cold login is measured at the default PIN cost, whatever the caller's environment sets.
unset P11KEYCHAIN_PIN_ITERATIONS
printf '%s\n' "$pin" >"$work/pin"
"$bin/p11keychain" init --so-pin "$so_pin" --pin-file "$work/pin" >/dev/null

log "SecItemAdd / SecItemCopyMatching at $sizes ($lookups lookups per size)"
"$bin/secitem-bench" --pin "$pin" --sizes "$sizes" --lookups "$lookups" | tee "$work/secitem.txt" >&2

log "C_Login cold, $logins times"
cold=$("$build/p11sign" --module "$module" --token login --pin "$pin" --login-runs "$logins")
log "C_Login in a session unlocked by p11keychain unlock, $logins times"
warm=$(keyctl session - bash -c '
    "$1/p11keychain" unlock --pin-file "$2" >/dev/null &&
        "$3" --module "$4" --token login --pin "" --login-runs "$5"' \
    session "$bin" "$work/pin" "$build/p11sign" "$module" "$logins")
{
    cat "$work/secitem.txt"
    echo "cold $cold"
    echo "unlocked $warm"
} >"$results/session.txt"

{
    echo "# The Swift API and session unlock"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- p11keychain: commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none), release build"
    echo "- SecItemAdd: one generic password per call (service, account, 33-byte data), rate over the items added to reach that size; SecItemCopyMatching: service + account, kSecReturnData, $lookups random items per size"
    echo
    echo "| items | SecItemAdd /s | target ≥ 2000 | SecItemCopyMatching p50 µs | p90 µs | target p50 ≤ 50 (100k) |"
    echo "|---|---|---|---|---|---|"
    while read -r line; do
        items=$(field items "$line")
        add=$(field add_per_s "$line")
        p50=$(field copy_p50_us "$line")
        p90=$(field copy_p90_us "$line")
        echo "| $items | $add | $(verdict "$add" ">=" 2000) | $p50 | $p90 | $(verdict "$p50" "<=" 50) |"
    done <"$work/secitem.txt"
    echo
    echo "| items | copy CPU p50 µs | with an LAContext holding the PIN: CPU p50 µs | wall p50 µs | added CPU µs | target ≤ 5 |"
    echo "|---|---|---|---|---|---|"
    while read -r line; do
        items=$(field items "$line")
        cpu=$(field copy_cpu_p50_us "$line")
        ctx_cpu=$(field ctx_cpu_p50_us "$line")
        added=$(awk -v a="$ctx_cpu" -v b="$cpu" 'BEGIN { printf "%.1f", a - b }')
        echo "| $items | $cpu | $ctx_cpu | $(field ctx_p50_us "$line") | $added | $(verdict "$added" "<=" 5) |"
    done <"$work/secitem.txt"
    echo
    echo "| C_Login ($logins runs) | median ms | first ms | slowest ms | target |"
    echo "|---|---|---|---|---|"
    echo "| cold (PBKDF2) | $(field median_ms "$cold") | $(field first_ms "$cold") | $(field max_ms "$cold") | ≈ 180 by design |"
    echo "| unlocked session | $(field median_ms "$warm") | $(field first_ms "$warm") | $(field max_ms "$warm") | ≤ 5: $(verdict "$(field median_ms "$warm")" "<=" 5) |"
} | tee "$results/session.md"
