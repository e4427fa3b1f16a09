#!/usr/bin/env bash
# bench/remote.sh: what p11-kit's RPC adds per call, for p11keychain and SoftHSM2
# behind the same `p11-kit server`, in one run.
#
# For each module, on a fresh token "login" holding BENCH_REMOTE_CERTS
# certificates and one ECDSA P-256 key: find-by-label latency (p50 of
# bench/p11bench's hits) and ECDSA P-256 signatures per second of wall-clock time (bench/p11sign,
# one thread) directly, then through `p11-kit server` + p11-kit-client.so on a
# Unix socket. Through the RPC p11sign falls back to CKM_ECDSA over the same
# 32 bytes (p11-kit 0.24 does not carry CKM_ECDSA_SHA256). The remote cost per
# operation is remote minus direct (for signing: 1/rate_remote - 1/rate_direct);
# the target is p11keychain's cost ≤ 1.1× SoftHSM2's. Every figure is
# the median of BENCH_REMOTE_ROUNDS rounds (the added costs are taken
# within each round, then their median). Prints a markdown table (also
# written to bench/results/remote.md, the raw lines beside it in remote.txt).
#
# Settings (environment):
#   BENCH_REMOTE_CERTS=20            certificates on each token (SoftHSM2 scans
#                                    every object per find: at 1000 its 20 ms
#                                    find swamps the RPC's ~0.1 ms in noise)
#   BENCH_REMOTE_LOOKUPS=500         finds per measurement
#   BENCH_REMOTE_SECONDS=3           seconds per signing measurement
#   BENCH_REMOTE_ROUNDS=3            rounds; figures are medians of the rounds
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
#   BENCH_SOFTHSM_MODULE=PATH        SoftHSM2 module (found under /usr/lib otherwise)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
certs=${BENCH_REMOTE_CERTS:-20}
lookups=${BENCH_REMOTE_LOOKUPS:-500}
seconds=${BENCH_REMOTE_SECONDS:-3}
rounds=${BENCH_REMOTE_ROUNDS:-3}
results=$here/results
build=$here/build
client=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11remote.XXXXXX")
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/remote.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

for cmd in gcc jq p11-kit pkcs11-tool softhsm2-util; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done
[ -f "$client" ] || fail "$client is missing (Debian package p11-kit-modules)"

mkdir -p "$build" "$results"
log "building p11bench and p11sign"
gcc -O2 -Wall -Wextra -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11bench" "$here/p11bench.c" -lcrypto -ldl -lm
gcc -O2 -Wall -Wextra -std=gnu11 -pthread -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11sign" "$here/p11sign.c" -ldl

# fresh_token NAME MODULE: an empty token "login" with PINs for NAME.
fresh_token() {
    local dir=$work/$1
    mkdir -p "$dir"
    if [ "$1" = softhsm2 ]; then
        mkdir -p "$dir/tokens"
        printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' \
            "$dir" >"$dir/softhsm2.conf"
        export SOFTHSM2_CONF=$dir/softhsm2.conf
        softhsm2-util --init-token --free --label login --so-pin "$so_pin" --pin "$pin" >/dev/null
    else
        export P11KEYCHAIN_DIR=$dir P11KEYCHAIN_CONF=/dev/null
        pkcs11-tool --module "$2" --init-token --label login --so-pin "$so_pin" >/dev/null 2>&1
        pkcs11-tool --module "$2" --token-label login --login --login-type so --so-pin "$so_pin" \
            --init-pin --pin "$pin" >/dev/null 2>&1
    fi
}

start_server() {
    local sock=$work/$1.sock
    p11-kit server --foreground --name "$sock" --provider "$2" 'pkcs11:token=login' >"$work/$1.server" 2>&1 &
    server_pid=$!
    local i
    for i in $(seq 200); do
        [ -S "$sock" ] && break
        sleep 0.05
    done
    [ -S "$sock" ] || fail "p11-kit server for $1 made no socket: $(cat "$work/$1.server")"
    export P11_KIT_SERVER_ADDRESS="unix:path=$sock"
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    unset P11_KIT_SERVER_ADDRESS
}

# find_p50 MODULE OUT: p50 of find-by-label hits on the token (which already
# holds the certificates: p11bench resumes it and imports nothing).
find_p50() {
    "$build/p11bench" --module "$1" --pin "$pin" --slot-label login --sizes "$certs" \
        --lookups "$lookups" --cap-seconds 30 --load-runs 1 --out "$2" >&2
    jq '.levels[-1].find_hit.p50_us' "$2"
}

sign_rate() {
    "$build/p11sign" --module "$1" --token login --pin "$pin" --key ecp256 --seconds "$seconds" |
        sed -nE 's/.* ops_per_s=([0-9.]+).*/\1/p'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

p11k=$(p11keychain_module)
softhsm=$(softhsm_module)
raw=$results/remote.txt
: >"$raw"
for name in p11keychain softhsm2; do
    module=$p11k
    [ "$name" = softhsm2 ] && module=$softhsm
    log "$name: fresh token with $certs certificates and an ECDSA P-256 key"
    fresh_token "$name" "$module"
    "$build/p11bench" --module "$module" --pin "$pin" --slot-label login --sizes "$certs" \
        --lookups 10 --load-runs 1 --out "$work/$name-grow.json" >&2
    "$build/p11sign" --module "$module" --token login --pin "$pin" --key ecp256 --seconds 0.2 >/dev/null
    for round in $(seq "$rounds"); do
        log "$name: round $round of $rounds"
        fd=$(find_p50 "$module" "$work/$name-df.json")
        sd=$(sign_rate "$module")
        start_server "$name" "$module"
        fr=$(find_p50 "$client" "$work/$name-rf.json")
        sr=$(sign_rate "$client")
        stop_server
        # The added cost is taken within a round, so that a busy moment of the
        # machine does not pair one round's direct figure with another's remote.
        {
            echo "$name direct find_p50_us $fd"
            echo "$name remote find_p50_us $fr"
            echo "$name added find_us $(awk -v a="$fd" -v b="$fr" 'BEGIN { print b - a }')"
            echo "$name direct sign_per_s $sd"
            echo "$name remote sign_per_s $sr"
            echo "$name added sign_us $(awk -v a="$sd" -v b="$sr" 'BEGIN { print 1e6 / b - 1e6 / a }')"
        } >>"$raw"
    done
done

fig() { awk -v n="$1" -v w="$2" -v m="$3" '$1 == n && $2 == w && $3 == m { print $4 }' "$raw" | median; }

table=$results/remote.md
{
    echo "### Through p11-kit server + p11-kit-client.so ($certs certificates, medians of $rounds rounds)"
    echo
    echo "| module | find p50 direct (µs) | find p50 remote (µs) | find: added (µs) | ECDSA P-256 direct (/s) | remote (/s) | sign: added per op (µs) |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for name in p11keychain softhsm2; do
        fd=$(fig "$name" direct find_p50_us) fr=$(fig "$name" remote find_p50_us)
        sd=$(fig "$name" direct sign_per_s) sr=$(fig "$name" remote sign_per_s)
        fa=$(fig "$name" added find_us) sa=$(fig "$name" added sign_us)
        awk -v n="$name" -v fd="$fd" -v fr="$fr" -v fa="$fa" -v sd="$sd" -v sr="$sr" -v sa="$sa" 'BEGIN {
            printf "| %s | %.1f | %.1f | %.1f | %.0f | %.0f | %.1f |\n", n, fd, fr, fa, sd, sr, sa }'
    done
    echo
    awk -v fa="$(fig p11keychain added find_us)" -v fb="$(fig softhsm2 added find_us)" \
        -v sa="$(fig p11keychain added sign_us)" -v sb="$(fig softhsm2 added sign_us)" 'BEGIN {
        printf "Added cost, p11keychain ÷ SoftHSM2 (target ≤ 1.1×): find %.2f×, sign %.2f×\n", fa / fb, sa / sb }'
} >"$table"
cat "$table"
