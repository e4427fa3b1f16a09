#!/usr/bin/env bash
# bench/split.sh: where an ECDSA P-256 signature's time goes through p11keychain, measured
# inside the process that signs: OpenSSL's own signing call, and what the module adds around
# it (C_SignInit, and C_Sign besides that call), in microseconds.
#
# bench/sign.sh's ECDSA target is a ratio of two rates taken in two processes one after the
# other, and on a shared machine single rounds of it swing by 10 % either way. Here the
# figures come from within the processes that sign: bench/sign_timer.so (LD_PRELOAD) times
# every call of OpenSSL that makes a signature (EVP_PKEY_sign in `openssl speed ecdsap256`;
# ECDSA_do_sign in the module, which writes r ‖ s without EVP_PKEY_sign's DER), and
# bench/p11sign --split times every C_SignInit and C_Sign. "OpenSSL's call ÷ whole
# operation" is the share of a signature the module's own work leaves to OpenSSL, in one
# process and the same seconds; "openssl speed's EVP_PKEY_sign ÷ whole operation" pairs the
# two programs of one round, the rate ratio beside openssl speed that these times give. Each
# round measures openssl speed, then p11sign with CKM_ECDSA_SHA256 (the module hashes the 32
# bytes first) and with CKM_ECDSA (the 32 bytes are the digest, as openssl speed signs one),
# one thread each. Every figure is the median of its rounds, every ratio the median of the
# rounds' own ratios. The timing itself (five clock reads per signature through the vDSO)
# adds about 0.1 µs to a p11keychain operation and 0.05 µs to OpenSSL's call.
# Prints a markdown table, also written to bench/results/split.md.
#
# Settings (environment):
#   BENCH_SPLIT_SECONDS=3            seconds per measurement (whole: openssl speed takes no fraction)
#   BENCH_SPLIT_ROUNDS=5             rounds
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${BENCH_SPLIT_SECONDS:-3}
rounds=${BENCH_SPLIT_ROUNDS:-5}
results=$here/results
build=$here/build
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11split.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/split.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

for cmd in gcc openssl pkcs11-tool; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done

# timed OUT COMMAND...: COMMAND run with bench/sign_timer.so; prints the shim's line.
timed() {
    local out=$1
    shift
    : >"$out"
    SIGN_TIMER_OUT=$out LD_PRELOAD=$build/sign_timer.so "$@" >"$out.stdout" 2>"$out.stderr" ||
        fail "$1 failed: $(tail -n 3 "$out.stderr")"
    [ -s "$out" ] || fail "$1 made fewer than 100 signatures through OpenSSL's signing calls"
    cat "$out"
}

# measure ROUND: one round of openssl speed and both mechanisms through the module; sets
# module_call, the OpenSSL function the module signed with.
measure() {
    local round=$1 line timer evp op flag name
    log "round $round: openssl speed -seconds $seconds ecdsap256"
    line=$(timed "$work/openssl.line" openssl speed -seconds "$seconds" ecdsap256)
    add "$work/openssl.evp" "$round" "$(field openssl_us " $line")"
    for name in sha256 raw; do
        flag=()
        [ "$name" = sha256 ] || flag=(--raw)
        log "round $round: p11keychain, ${name}, ${seconds} s"
        timer=$(timed "$work/p11.line" "$build/p11sign" --module "$module" --token login \
            --pin "$pin" --key ecp256 --seconds "$seconds" --split "${flag[@]}")
        evp=$(field openssl_us " $timer")
        module_call=$(field openssl_function " $timer")
        line=$(cat "$work/p11.line.stdout")
        echo "round=$round $line $timer" >>"$work/raw.txt"
        op=$(field op_us "$line")
        add "$work/$name.evp" "$round" "$evp"
        add "$work/$name.init" "$round" "$(field init_us "$line")"
        add "$work/$name.around" "$round" "$(awk -v s="$(field sign_us "$line")" -v e="$evp" 'BEGIN { printf "%.3f", s - e }')"
        add "$work/$name.op" "$round" "$op"
        add "$work/$name.own" "$round" "$(awk -v o="$op" -v e="$evp" 'BEGIN { printf "%.3f", o - e }')"
    done
}

# cells NAME: one table row's two cells, the median of sha256.NAME and raw.NAME.
cells() { echo "$(fmt "$(value "sha256.$1")") | $(fmt "$(value "raw.$1")")"; }

report() {
    local o s r
    o=$(value openssl.evp)
    cat <<EOF
# Where an ECDSA P-256 signature's time goes: p11keychain beside openssl speed

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr); load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end
- p11keychain: $p11k_origin; $(openssl version)
- $rounds rounds of $seconds s; each: openssl speed ecdsap256, then p11sign --split (C_SignInit + C_Sign of 32 bytes, one thread) with each mechanism; OpenSSL's signing call (openssl speed's EVP_PKEY_sign, the module's $module_call) timed by bench/sign_timer.so in both programs; microseconds of wall-clock time per signature, each the median of its rounds
- whole operation: p11sign's loop time over its signatures (C_SignInit + C_Sign + the loop); the module's own time: the whole operation less OpenSSL's call
- ratios: the median of the rounds' own ratios

| per signature | CKM_ECDSA_SHA256 | CKM_ECDSA |
|---|---:|---:|
| EVP_PKEY_sign in openssl speed (µs) | $(fmt "$o") | $(fmt "$o") |
| $module_call in p11sign, inside the module (µs) | $(cells evp) |
| C_SignInit (µs) | $(cells init) |
| C_Sign besides $module_call (µs) | $(cells around) |
| whole operation (µs) | $(cells op) |
| the module's own time (µs) | $(cells own) |
| $module_call in p11sign ÷ EVP_PKEY_sign in openssl speed | $(times "$(pair sha256.evp openssl.evp)") | $(times "$(pair raw.evp openssl.evp)") |
| $module_call ÷ whole operation, same process | $(times "$(pair sha256.evp sha256.op)")$(range sha256.evp sha256.op) | $(times "$(pair raw.evp raw.op)")$(range raw.evp raw.op) |
| EVP_PKEY_sign in openssl speed ÷ whole operation | $(times "$(pair openssl.evp sha256.op)")$(range openssl.evp sha256.op) | $(times "$(pair openssl.evp raw.op)")$(range openssl.evp raw.op) |
EOF
    s=$(pair openssl.evp sha256.op)
    r=$(pair openssl.evp raw.op)
    echo
    echo "The last row is the rate ratio beside openssl speed that these times give (bench/sign.sh's ECDSA target: ≥ 0.95×): $(fmt "$s")× hashing the message in the module, $(fmt "$r")× signing a digest."
}

main() {
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    mkdir -p "$results"
    build_p11sign
    build_sign_timer
    module=$(p11keychain_module)
    [ -f "$module" ] || fail "no module at $module"
    p11k_origin=$(module_origin "$module")
    setup_p11keychain "$module"
    : >"$work/raw.txt"
    # The key pair is generated before any round.
    "$build/p11sign" --module "$module" --token login --pin "$pin" --key ecp256 --seconds 0.1 >/dev/null
    local round
    for ((round = 1; round <= rounds; round++)); do measure "$round"; done
    report | tee "$results/split.md"
    cp "$work/raw.txt" "$results/split.txt"
}

main "$@"
