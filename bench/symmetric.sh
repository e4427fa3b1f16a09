#!/usr/bin/env bash
# bench/symmetric.sh: secret-key speed through p11keychain and SoftHSM2 beside
# `openssl speed` on the same machine, in one run.
#
# bench/p11symmetric measures, single-threaded, on a fresh token of each module:
# AES-256-GCM on 16 KiB messages (C_EncryptInit + C_Encrypt per message, a fresh
# IV each), HMAC-SHA256 of 64-byte messages (C_SignInit + C_Sign), and ECDH
# P-256 (C_DeriveKey, CKD_NULL, a 32-byte session secret key, destroyed at once
# by C_DestroyObject, both timed). OpenSSL's own rates on the same machine:
# `openssl speed -evp aes-256-gcm -bytes 16384` (one keyed context, EVP updates
# only), the same with -aead (a fresh IV, AAD and tag per message, as PKCS#11
# does, with the key set once), `openssl speed -hmac sha256 -bytes 64` (OpenSSL
# 3.0 spells HMAC that way; it re-initialises one keyed MAC context per message,
# EVP_MAC_init with no new key) and `openssl speed ecdhp256`. So openssl speed
# never pays for setting a key per message; a PKCS#11 module that keeps the
# key's OpenSSL state between C_*Init calls need not either. Rates on both
# sides are per second of CPU time (openssl speed divides by its CPU user time
# unless given -elapsed; p11symmetric by its own user + system time). The
# whole sequence runs BENCH_SYMMETRIC_ROUNDS times, interleaved (openssl,
# p11keychain, SoftHSM2): every rate is the median of its rounds, every ratio
# the median of the rounds' ratios (bench/lib.sh's `paired`). Prints
# a markdown table (also written to bench/results/symmetric.md, the raw lines
# beside it in symmetric.txt) with the ratios and the targets:
# AES-GCM ≥ 0.85×, HMAC ≥ 0.5×, ECDH ≥ 0.7× of openssl speed.
#
# Settings (environment):
#   BENCH_SYMMETRIC_SECONDS=3        seconds per measurement
#   BENCH_SYMMETRIC_ROUNDS=3         rounds; figures are medians of the rounds
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
#   BENCH_SOFTHSM_MODULE=PATH        SoftHSM2 module (found under /usr/lib otherwise)
#   BENCH_ONLY=softhsm2|p11keychain  measure one module only (openssl speed always runs)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${BENCH_SYMMETRIC_SECONDS:-3}
rounds=${BENCH_SYMMETRIC_ROUNDS:-3}
only=${BENCH_ONLY:-}
results=$here/results
build=$here/build
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11symmetric.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/symmetric.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

for cmd in gcc openssl pkcs11-tool softhsm2-util; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done

build_p11symmetric() {
    mkdir -p "$build"
    log "building p11symmetric"
    gcc -O2 -Wall -Wextra -std=gnu11 -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11symmetric" "$here/p11symmetric.c" -ldl
}

# --- measuring ----------------------------------------------------------------

# speed ARGS...: openssl speed -mr ARGS; its output.
speed() {
    log "openssl speed -seconds $seconds $*"
    openssl speed -seconds "$seconds" -mr "$@" 2>/dev/null
}

# openssl_rates ROUND: OpenSSL's rates, recorded in $work/openssl.NAME: MB/s
# for aes-gcm and aes-gcm-aead, ops/s for hmac and ecdh. With -mr,
# "+F:n:name:rate" is bytes per second at the one size asked for;
# "+F5:n:256:rate:..." ECDH ops/s.
openssl_rates() {
    local round=$1 out rate
    out=$(speed -bytes 16384 -evp aes-256-gcm)
    rate=$(grep -E '^\+F:[0-9]+:' <<<"$out" | tail -n 1 | cut -d: -f4)
    [ -n "$rate" ] || fail "could not read openssl speed -evp aes-256-gcm: $(tail -n 3 <<<"$out")"
    echo "openssl round=$round aes-gcm bytes_per_s=$rate" >>"$work/raw.txt"
    add "$work/openssl.aes-gcm" "$round" "$(awk -v r="$rate" 'BEGIN { print r / 1e6 }')"
    out=$(speed -bytes 16384 -aead -evp aes-256-gcm)
    rate=$(grep -E '^\+F:[0-9]+:' <<<"$out" | tail -n 1 | cut -d: -f4)
    [ -n "$rate" ] || fail "could not read openssl speed -aead -evp aes-256-gcm: $(tail -n 3 <<<"$out")"
    echo "openssl round=$round aes-gcm-aead bytes_per_s=$rate" >>"$work/raw.txt"
    add "$work/openssl.aes-gcm-aead" "$round" "$(awk -v r="$rate" 'BEGIN { print r / 1e6 }')"
    out=$(speed -bytes 64 -hmac sha256)
    rate=$(grep -E '^\+F:[0-9]+:' <<<"$out" | tail -n 1 | cut -d: -f4)
    [ -n "$rate" ] || fail "could not read openssl speed -hmac sha256: $(tail -n 3 <<<"$out")"
    echo "openssl round=$round hmac bytes_per_s=$rate" >>"$work/raw.txt"
    add "$work/openssl.hmac" "$round" "$(awk -v r="$rate" 'BEGIN { print r / 64 }')"
    out=$(speed ecdhp256)
    rate=$(grep -E '^\+F5:[0-9]+:256:' <<<"$out" | tail -n 1 | cut -d: -f4)
    [ -n "$rate" ] || fail "could not read openssl speed ecdhp256: $(tail -n 3 <<<"$out")"
    echo "openssl round=$round ecdh ops_per_s=$rate" >>"$work/raw.txt"
    add "$work/openssl.ecdh" "$round" "$rate"
}

# measure_module NAME MODULE TOKEN ROUND: p11symmetric on one module; rates
# are recorded in $work/NAME.aes-gcm (MB/s), NAME.hmac and NAME.ecdh (ops/s).
measure_module() {
    local name=$1 module=$2 token=$3 round=$4 bench out
    for bench in aes-gcm hmac-sha256 ecdh-p256; do
        log "round $round: $name: $bench, ${seconds} s"
        if ! out=$("$build/p11symmetric" --module "$module" --token "$token" --pin "$pin" \
            --bench "$bench" --seconds "$seconds" 2>&1); then
            echo "$name round=$round bench=$bench FAILED: $out" >>"$work/raw.txt"
            log "$name: $bench failed: $out"
            continue
        fi
        echo "$name round=$round $out" >>"$work/raw.txt"
        case $bench in
        aes-gcm) add "$work/$name.aes-gcm" "$round" "$(field mb_per_s "$out")" ;;
        hmac-sha256) add "$work/$name.hmac" "$round" "$(field ops_per_s "$out")" ;;
        ecdh-p256) add "$work/$name.ecdh" "$round" "$(field ops_per_s "$out")" ;;
        esac
    done
}

# --- report -------------------------------------------------------------------

report() {
    cat <<EOF
# Secret-key speed: p11keychain, SoftHSM2 and openssl speed

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr); load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the machine skews the figures)
- p11keychain: $p11k_origin; SoftHSM2 $(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null || echo '?'); $(openssl version)
- p11symmetric, one thread, ${seconds} s per measurement, token keys generated on a fresh token: AES-256-GCM = C_EncryptInit (fresh 12-byte IV, 128-bit tag) + C_Encrypt of 16384 bytes; HMAC-SHA256 = C_SignInit + C_Sign of 64 bytes; ECDH P-256 = C_DeriveKey (CKD_NULL, 32-byte session key) + C_DestroyObject of the derived key
- openssl speed -seconds $seconds: -bytes 16384 -evp aes-256-gcm (one keyed context, EVP updates), -bytes 16384 -aead -evp aes-256-gcm (IV, AAD and tag per message, key set once), -bytes 64 -hmac sha256 (one keyed MAC context re-initialised per message), ecdhp256
- rates are per second of CPU time, on both sides: openssl speed divides by its CPU user time, p11symmetric by its process's CPU time (user + system); wall-clock rates on a shared machine count the time the scheduler gives to others
- $rounds rounds, each running openssl speed, then p11keychain, then SoftHSM2; every rate is the median of its rounds
- ratio = module ÷ openssl speed (-evp for AES-GCM): the median of the rounds' ratios, each of two figures from the same round, so that a change in the machine's load between rounds cancels out; in brackets, for the rows with a target, the lowest and the highest round

| measurement | openssl speed | p11keychain | ratio | target | SoftHSM2 | ratio |
|---|---:|---:|---:|---|---:|---:|
EOF
    row "AES-256-GCM, 16 KiB messages, MB/s" aes-gcm aes-gcm 0.85
    row "AES-256-GCM, beside openssl speed -aead, MB/s" aes-gcm aes-gcm-aead
    row "HMAC-SHA256, 64-byte messages, ops/s" hmac hmac 0.5
    row "ECDH P-256 derives/s (derived key destroyed each time)" ecdh ecdh 0.7
    if grep -q FAILED "$work/raw.txt"; then
        echo
        echo "Failed measurements (— above):"
        grep FAILED "$work/raw.txt" | sort -u -t' ' -k1,1 -k3,3 | sed 's/^/- /'
    fi
}

main() {
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    mkdir -p "$results"
    : >"$work/raw.txt"
    build_p11symmetric
    local p11k_module=
    p11k_origin="not measured"
    if [ "$only" != softhsm2 ]; then
        p11k_module=$(p11keychain_module)
        [ -f "$p11k_module" ] || fail "no module at $p11k_module"
        p11k_origin=$(module_origin "$p11k_module")
    fi
    local softhsm=
    [ "$only" = p11keychain ] || softhsm=$(softhsm_module)
    local p11k_env=() softhsm_env=()
    if [ -n "$p11k_module" ]; then
        setup_p11keychain "$p11k_module"
        p11k_env=(P11KEYCHAIN_DIR="$P11KEYCHAIN_DIR" P11KEYCHAIN_CONF=/dev/null
            XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME")
        unset P11KEYCHAIN_DIR P11KEYCHAIN_CONF XDG_CONFIG_HOME XDG_DATA_HOME
    fi
    if [ -n "$softhsm" ]; then
        setup_softhsm2
        softhsm_env=(SOFTHSM2_CONF="$SOFTHSM2_CONF")
        unset SOFTHSM2_CONF
    fi
    local round
    for ((round = 1; round <= rounds; round++)); do
        openssl_rates "$round"
        if [ -n "$p11k_module" ]; then
            with_env "${p11k_env[@]}" -- measure_module p11keychain "$p11k_module" login "$round"
        fi
        if [ -n "$softhsm" ]; then
            with_env "${softhsm_env[@]}" -- measure_module softhsm2 "$softhsm" bench "$round"
        fi
    done
    cp "$work/raw.txt" "$results/symmetric.txt"
    report | tee "$results/symmetric.md"
}

main "$@"
