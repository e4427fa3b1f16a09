#!/usr/bin/env bash
# bench/sign.sh: signatures per second through p11keychain and SoftHSM2 beside
# `openssl speed` on the same machine, in one run, and the time C_Login takes.
#
# For RSA-2048 (CKM_SHA256_RSA_PKCS) and ECDSA P-256 (CKM_ECDSA_SHA256),
# bench/p11sign signs a 32-byte message for BENCH_SIGN_SECONDS with one thread,
# then two (each thread its own session, the same key), on a fresh token of
# each module; `openssl speed -seconds S rsa2048 ecdsap256` and the same with
# `-multi 2` give OpenSSL's own rates. Prints a markdown table (also written to
# bench/results/sign.md, the raw lines beside it in sign.txt) with the ratios
# and the targets of issue 4: RSA-2048 ≥ 0.9× and ECDSA P-256 ≥ 0.8× of
# openssl speed single-threaded, two threads ≥ 1.8× one, C_Login < 0.5 s.
#
# Settings (environment):
#   BENCH_SIGN_SECONDS=5             seconds per measurement
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
#   BENCH_SOFTHSM_MODULE=PATH        SoftHSM2 module (found under /usr/lib otherwise)
#   BENCH_ONLY=softhsm2|p11keychain  measure one module only (openssl speed always runs)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${BENCH_SIGN_SECONDS:-5}
only=${BENCH_ONLY:-}
results=$here/results
build=$here/build
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11sign.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/sign.sh: %s\n' "$*" >&2; exit 1; }

for cmd in gcc openssl pkcs11-tool softhsm2-util; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done

build_p11sign() {
    mkdir -p "$build"
    log "building p11sign"
    gcc -O2 -Wall -Wextra -std=gnu11 -pthread -o "$build/p11sign" "$here/p11sign.c" -ldl
}

p11keychain_module() {
    if [ -n "${BENCH_P11KEYCHAIN_MODULE:-}" ]; then
        echo "$BENCH_P11KEYCHAIN_MODULE"
        return 0
    fi
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        PATH=$PATH:/opt/swift/usr/bin
    fi
    command -v swift >/dev/null 2>&1 ||
        fail "swift not found: install the toolchain, or set BENCH_P11KEYCHAIN_MODULE or BENCH_ONLY=softhsm2"
    log "building p11keychain (release)"
    (cd "$root" && swift build -c release --product p11keychain-pkcs11) >&2
    echo "$root/.build/release/libp11keychain-pkcs11.so"
}

softhsm_module() {
    local m
    for m in "${BENCH_SOFTHSM_MODULE:-}" /usr/lib/*/softhsm/libsofthsm2.so /usr/lib/softhsm/libsofthsm2.so; do
        [ -n "$m" ] && [ -f "$m" ] && { echo "$m"; return 0; }
    done
    fail "libsofthsm2.so not found (set BENCH_SOFTHSM_MODULE)"
}

# --- measuring ----------------------------------------------------------------

# The value of KEY= in a p11sign output line.
field() { sed -nE "s/.*[[:space:]]$1=([^[:space:]]+).*/\\1/p" <<<"$2"; }

# openssl speed's sign rates: "<rsa2048> <ecdsap256>" in ops/s. With -multi,
# the summed line is the one without "Got:" in front.
openssl_rates() {
    local out rsa ec
    out=$(openssl speed -seconds "$seconds" -mr "$@" rsa2048 ecdsap256 2>/dev/null)
    printf '%s\n' "$out" | grep -E '^\+F[24]:' >>"$work/raw.txt"
    rsa=$(grep -E '^\+F2:[0-9]+:2048:' <<<"$out" | tail -n 1 | cut -d: -f4)
    ec=$(grep -E '^\+F4:[0-9]+:256:' <<<"$out" | tail -n 1 | cut -d: -f4)
    if [ -z "$rsa" ] || [ -z "$ec" ]; then
        fail "could not read openssl speed's output: $(tail -n 3 <<<"$out")"
    fi
    echo "$rsa $ec"
}

# Runs p11sign on one module; results go to $work/NAME.KEY.THREADS and NAME.login.
measure_module() {
    local name=$1 module=$2 token=$3 key threads out
    for key in rsa2048 ecp256; do
        for threads in 1 2; do
            log "$name: $key, $threads thread(s), ${seconds} s"
            out=$("$build/p11sign" --module "$module" --token "$token" --pin "$pin" \
                --key "$key" --threads "$threads" --seconds "$seconds")
            echo "$name $out" >>"$work/raw.txt"
            field ops_per_s "$out" >"$work/$name.$key.$threads"
        done
    done
    log "$name: C_Login, 5 times"
    out=$("$build/p11sign" --module "$module" --token "$token" --pin "$pin" --login-runs 5)
    echo "$name $out" >>"$work/raw.txt"
    echo "$(field first_ms "$out") $(field median_ms "$out") $(field max_ms "$out")" >"$work/$name.login"
}

run_p11keychain() {
    local module=$1
    mkdir -p "$work/p11keychain/store" "$work/p11keychain/config" "$work/p11keychain/data"
    export P11KEYCHAIN_DIR=$work/p11keychain/store P11KEYCHAIN_CONF=/dev/null \
        XDG_CONFIG_HOME=$work/p11keychain/config XDG_DATA_HOME=$work/p11keychain/data
    pkcs11-tool --module "$module" --init-token --label login --so-pin "$so_pin" >/dev/null 2>&1 ||
        fail "pkcs11-tool --init-token failed on p11keychain"
    pkcs11-tool --module "$module" --login --login-type so --so-pin "$so_pin" --init-pin --pin "$pin" >/dev/null 2>&1 ||
        fail "pkcs11-tool --init-pin failed on p11keychain"
    measure_module p11keychain "$module" login
    unset P11KEYCHAIN_DIR P11KEYCHAIN_CONF XDG_CONFIG_HOME XDG_DATA_HOME
}

run_softhsm2() {
    local module dir=$work/softhsm2
    module=$(softhsm_module)
    mkdir -p "$dir/tokens"
    printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$dir" >"$dir/softhsm2.conf"
    export SOFTHSM2_CONF=$dir/softhsm2.conf
    softhsm2-util --init-token --free --label bench --so-pin "$so_pin" --pin "$pin" >/dev/null
    measure_module softhsm2 "$module" bench
    unset SOFTHSM2_CONF
}

# --- report -------------------------------------------------------------------

# value NAME KEY THREADS: a module's rate, or empty when it was not measured.
value() { if [ -f "$work/$1.$2.$3" ]; then cat "$work/$1.$2.$3"; fi; }

# fmt N: a rate or ratio for the table.
fmt() {
    [ -n "$1" ] || { echo "—"; return; }
    awk -v v="$1" 'BEGIN { if (v >= 100) printf "%.0f", v; else if (v >= 10) printf "%.1f", v; else printf "%.2f", v }'
}
ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; fi; }
# times N: a ratio for the table ("0.93×").
times() { if [ -n "$1" ]; then echo "$(fmt "$1")×"; else echo "—"; fi; }
# verdict VALUE OP LIMIT: "met" or "NOT met" (empty when there is no value).
verdict() {
    [ -n "$1" ] || return 0
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { ok = (op == ">=") ? v >= l : v < l; print ok ? "met" : "NOT met" }'
}

# mechanisms: which ECDSA mechanism each module was measured with.
mechanisms() {
    awk '$3 == "key=ecp256" && $5 == "threads=1" { sub("mechanism=", "", $4); printf "%s%s %s", sep, $1, $4; sep = ", " }' "$work/raw.txt"
}

report() {
    local o1_rsa o1_ec o2_rsa o2_ec key label o1 o2 k1 k2 s1 s2 min r
    read -r o1_rsa o1_ec <"$work/openssl.1"
    read -r o2_rsa o2_ec <"$work/openssl.2"
    cat <<EOF
# Signing speed: p11keychain, SoftHSM2 and openssl speed

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr); load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the machine skews the figures, two threads most)
- p11keychain: $p11k_origin; SoftHSM2 $(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null || echo '?'); $(openssl version)
- p11sign: C_SignInit + C_Sign of 32 bytes, CKM_SHA256_RSA_PKCS (RSA-2048) and CKM_ECDSA_SHA256 (P-256; CKM_ECDSA of the 32 bytes where a module lacks it: $(mechanisms)), ${seconds} s per figure; two threads: two sessions, one key, rates summed
- openssl speed -seconds $seconds rsa2048 ecdsap256 (one process), and with -multi 2 (two processes)
- ratio: the module's rate ÷ openssl speed's; scaling: two threads ÷ one thread

| measurement | openssl speed | p11keychain | ratio | target | SoftHSM2 | ratio |
|---|---:|---:|---:|---|---:|---:|
EOF
    for key in rsa2048 ecp256; do
        if [ "$key" = rsa2048 ]; then
            label="RSA-2048 sign/s" o1=$o1_rsa o2=$o2_rsa min=0.9
        else
            label="ECDSA P-256 sign/s" o1=$o1_ec o2=$o2_ec min=0.8
        fi
        k1=$(value p11keychain "$key" 1) k2=$(value p11keychain "$key" 2)
        s1=$(value softhsm2 "$key" 1) s2=$(value softhsm2 "$key" 2)
        r=$(ratio "$k1" "$o1")
        echo "| $label, 1 thread | $(fmt "$o1") | $(fmt "$k1") | $(times "$r") | ≥ ${min}×: $(verdict "$r" ">=" "$min") | $(fmt "$s1") | $(times "$(ratio "$s1" "$o1")") |"
        echo "| $label, 2 threads | $(fmt "$o2") | $(fmt "$k2") | $(times "$(ratio "$k2" "$o2")") | | $(fmt "$s2") | $(times "$(ratio "$s2" "$o2")") |"
        r=$(ratio "$k2" "$k1")
        echo "| $label, scaling 2 ÷ 1 | $(times "$(ratio "$o2" "$o1")") | $(times "$r") | | ≥ 1.8×: $(verdict "$r" ">=" 1.8) | $(times "$(ratio "$s2" "$s1")") | |"
        # On a busy machine neither scales: the module's scaling beside OpenSSL's own.
        echo "| $label, scaling ÷ openssl's scaling | — | $(times "$(ratio "$r" "$(ratio "$o2" "$o1")")") | | | $(times "$(ratio "$(ratio "$s2" "$s1")" "$(ratio "$o2" "$o1")")") | |"
    done
    local kf km kx sf sm sx
    if [ -f "$work/p11keychain.login" ]; then read -r kf km kx <"$work/p11keychain.login"; fi
    if [ -f "$work/softhsm2.login" ]; then read -r sf sm sx <"$work/softhsm2.login"; fi
    echo "| C_Login (ms), first of 5 | — | $(fmt "${kf:-}") | | < 500: $(verdict "${kf:-}" "<" 500) | $(fmt "${sf:-}") | |"
    echo "| C_Login (ms), median of 5 | — | $(fmt "${km:-}") | | < 500: $(verdict "${km:-}" "<" 500) | $(fmt "${sm:-}") | |"
    echo "| C_Login (ms), slowest of 5 | — | $(fmt "${kx:-}") | | < 500: $(verdict "${kx:-}" "<" 500) | $(fmt "${sx:-}") | |"
}

main() {
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    mkdir -p "$results"
    : >"$work/raw.txt"
    build_p11sign
    local p11k_module=
    p11k_origin="not measured"
    if [ "$only" != softhsm2 ]; then
        p11k_module=$(p11keychain_module)
        [ -f "$p11k_module" ] || fail "no module at $p11k_module"
        if [ -n "${BENCH_P11KEYCHAIN_MODULE:-}" ]; then
            p11k_origin="module $p11k_module (repository at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))"
        else
            p11k_origin="commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none), release build"
        fi
    fi
    log "openssl speed -seconds $seconds rsa2048 ecdsap256"
    openssl_rates >"$work/openssl.1"
    log "openssl speed -seconds $seconds -multi 2 rsa2048 ecdsap256"
    openssl_rates -multi 2 >"$work/openssl.2"
    [ -z "$p11k_module" ] || run_p11keychain "$p11k_module"
    [ "$only" = p11keychain ] || run_softhsm2
    cp "$work/raw.txt" "$results/sign.txt"
    report | tee "$results/sign.md"
}

main "$@"
