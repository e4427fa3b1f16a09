#!/usr/bin/env bash
# bench/instructions.sh: instructions per ECDSA P-256 signature and per RSA-2048
# verification through p11keychain beside openssl speed's, counted by valgrind's
# callgrind: a figure that, unlike a rate, does not move with the machine's load.
#
# bench/sign.sh's targets are rates per second of CPU time, and on a shared machine
# single rounds of those swing by 10 % either way; this script says how much of a ratio
# is the module's own work. Under callgrind, bench/p11sign signs (C_SignInit + C_Sign,
# CKM_ECDSA_SHA256, 32 bytes) or verifies (C_VerifyInit + C_Verify, CKM_SHA256_RSA_PKCS)
# for BENCH_INSTRUCTIONS_SECONDS, counting only inside those calls; `openssl speed
# ecdsap256` and `rsa2048` run the same way, counting only inside EVP_PKEY_sign and
# EVP_PKEY_verify (what their loops call once per operation). Set-up, key generation,
# C_Login and the programs' timing count on neither side. Each program runs twice, for S
# and for 3 S seconds, and each figure is the difference of the instructions counted over
# the difference of the calls: the cost of one more operation, so that one-time costs
# inside the counted calls (the module's first C_SignInit reads and unseals the key) count
# on neither side either. Prints a markdown table (also written to
# bench/results/instructions.md).
#
# The ratio is openssl's instructions ÷ the module's: the rate ratio the module would have
# if every instruction took as long on both sides.
#
# Settings (environment):
#   BENCH_INSTRUCTIONS_SECONDS=2     S, the seconds of the shorter run under callgrind (which
#                                    runs programs about 50 times slower)
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${BENCH_INSTRUCTIONS_SECONDS:-2}
results=$here/results
build=$here/build
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/instructions.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

for cmd in gcc openssl pkcs11-tool strip; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done
if ! command -v valgrind >/dev/null 2>&1; then
    log "installing valgrind"
    sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq valgrind >/dev/null
fi

# counted NAME OUT FUNCTION... -- COMMAND...: runs COMMAND under callgrind counting only
# inside the FUNCTIONs, and prints "instructions calls" for the first FUNCTION's calls.
counted() {
    local name=$1 out=$2 toggles=()
    shift 2
    local first=$1
    while [ "$1" != -- ]; do toggles+=("--toggle-collect=$1"); shift; done
    shift
    log "$name under callgrind"
    valgrind --tool=callgrind --callgrind-out-file="$out" "${toggles[@]}" "$@" \
        >"$out.stdout" 2>"$out.stderr" || fail "$name failed under callgrind: $(tail -n 3 "$out.stderr")"
    local total calls
    total=$(sed -nE 's/^==[0-9]+== Collected : ([0-9]+)$/\1/p' "$out.stderr")
    calls=$(callgrind_calls "$first" "$out")
    [ -n "$total" ] && [ "$calls" -gt 0 ] || fail "$name: callgrind counted no call of $first"
    echo "$total $calls"
}

# marginal NAME FUNCTION... -- COMMAND...: COMMAND counted for S and for 3 S seconds (the
# word SECONDS in it stands for the number); prints "INSTRUCTIONS_PER_CALL CALLS_SHORT
# CALLS_LONG".
marginal() {
    local name=$1 tag
    tag=$(tr -c 'a-z0-9' _ <<<"$name")
    local length run word out counts=()
    for length in "$seconds" "$((3 * seconds))"; do
        run=()
        for word in "${@:2}"; do
            if [ "$word" = SECONDS ]; then run+=("$length"); else run+=("$word"); fi
        done
        out=$(counted "$name, $length s" "$work/$tag.$length" "${run[@]}")
        counts+=("$out")
    done
    local short=${counts[0]} long=${counts[1]}
    awk -v t1="${short% *}" -v c1="${short#* }" -v t3="${long% *}" -v c3="${long#* }" 'BEGIN {
        if (c3 <= c1) exit 1
        printf "%.0f %d %d", (t3 - t1) / (c3 - c1), c1, c3 }' || fail "$name: the longer run made no more calls"
}

# calls "PER_CALL SHORT LONG": "SHORT / LONG".
calls() { local c=${1#* }; echo "${c% *} / ${c#* }"; }

main() {
    mkdir -p "$results"
    build_p11sign
    local module
    module=$(p11keychain_module)
    [ -f "$module" ] || fail "no module at $module"
    # Valgrind 3.19 (Debian 12) cannot read the DWARF 5 the Swift toolchain writes; a copy
    # without debugging information keeps its symbols, which is all callgrind needs here.
    cp "$module" "$work/module.so"
    strip --strip-debug "$work/module.so"
    setup_p11keychain "$work/module.so"
    local p11=("$build/p11sign" --module "$work/module.so" --token login --pin "$pin" --threads 1 --seconds)
    # The keys are generated before anything is counted.
    "${p11[@]}" 1 --key ecp256 >/dev/null
    "${p11[@]}" 1 --key rsa2048 --verify >/dev/null

    local ec_module ec_openssl verify_module verify_openssl
    ec_module=$(marginal "p11keychain ECDSA P-256 sign" C_Sign C_SignInit -- "${p11[@]}" SECONDS --key ecp256)
    ec_openssl=$(marginal "openssl speed ecdsap256" EVP_PKEY_sign -- openssl speed -seconds SECONDS ecdsap256)
    verify_module=$(marginal "p11keychain RSA-2048 verify" C_Verify C_VerifyInit -- \
        "${p11[@]}" SECONDS --key rsa2048 --verify)
    verify_openssl=$(marginal "openssl speed rsa2048" EVP_PKEY_verify -- openssl speed -seconds SECONDS rsa2048)

    local em eo vm vo
    em=${ec_module%% *} eo=${ec_openssl%% *} vm=${verify_module%% *} vo=${verify_openssl%% *}
    {
        cat <<EOF
# Instructions per operation: p11keychain beside openssl speed

- date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(valgrind --version), callgrind; $(openssl version)
- p11keychain: $(module_origin "$module")
- counted only inside C_SignInit + C_Sign (CKM_ECDSA_SHA256 of 32 bytes) and C_VerifyInit + C_Verify (CKM_SHA256_RSA_PKCS), and inside openssl speed's EVP_PKEY_sign and EVP_PKEY_verify
- instructions per operation: the difference between a $seconds s and a $((3 * seconds)) s run under callgrind, over the difference of their calls of C_Sign, C_Verify, EVP_PKEY_sign and EVP_PKEY_verify (one-time costs cancel)
- ratio: openssl's instructions per operation ÷ the module's

| operation | openssl speed | p11keychain | ratio | calls counted, openssl (short / long run) | p11keychain |
|---|---:|---:|---:|---|---|
| ECDSA P-256 sign | $eo | $em | $(ratio "$eo" "$em")× | $(calls "$ec_openssl") | $(calls "$ec_module") |
| RSA-2048 verify | $vo | $vm | $(ratio "$vo" "$vm")× | $(calls "$verify_openssl") | $(calls "$verify_module") |
EOF
    } | tee "$results/instructions.md"
}

main "$@"
