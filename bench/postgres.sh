#!/usr/bin/env bash
# bench/postgres.sh: a token stored in PostgreSQL (docs/fleet.md) beside the same token on
# SQLite and beside p11-kit server + p11-kit-client.so, in one run.
#
# A throwaway local server (scripts/pg-test-cluster.sh: its Unix socket, no TCP; a socket
# saves the TCP stack's few µs per round trip, so remote hosts add at least that much). On
# each token, fresh and initialised the same way: the import rate while it grows to
# BENCH_PG_CERTS certificates and the find-by-label p50 at that size (bench/p11bench), ECDSA
# P-256 signatures per second of wall-clock time (bench/p11sign, one thread: the server's
# part of a call counts, which a rate per second of the client's CPU time would leave out),
# and C_Login's median. The
# PostgreSQL token is measured at the default freshness bound and at `freshness-ms = 0`
# (every use of a held key checks the database); a build that does not know the key says
# so. A server round trip is the latency of `SELECT 1` (pgbench, one connection, prepared).
# The whole sequence runs BENCH_PG_ROUNDS times; each figure is the median of its rounds.
# Targets (default freshness): signing ≥ 0.8× SQLite and ≥ 4× p11-kit remote; find p50 ≤ 3
# round trips; import ≥ 2,000 certificates/s. Prints a markdown table (also written to
# bench/results/postgres.md, the raw lines beside it in postgres.txt).
#
# Settings (environment):
#   BENCH_PG_CERTS=1000              certificates on each token
#   BENCH_PG_LOOKUPS=500             finds per measurement
#   BENCH_PG_SECONDS=3               seconds per signing measurement
#   BENCH_PG_ROUNDS=3                rounds; figures are medians of the rounds
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
certs=${BENCH_PG_CERTS:-1000}
lookups=${BENCH_PG_LOOKUPS:-500}
seconds=${BENCH_PG_SECONDS:-3}
rounds=${BENCH_PG_ROUNDS:-3}
results=$here/results
build=$here/build
client=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11pg.XXXXXX")
chmod 0755 "$work"
cluster=
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    [ -z "$cluster" ] || bash "$root/scripts/pg-test-cluster.sh" stop "$cluster" || true
    rm -rf "$work"
}
trap cleanup EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/postgres.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
for cmd in gcc jq p11-kit pkcs11-tool "$pg_bin/pgbench"; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done
[ -f "$client" ] || fail "$client is missing (Debian package p11-kit-modules)"

mkdir -p "$build" "$results"
log "building p11bench and p11sign"
gcc -O2 -Wall -Wextra -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11bench" "$here/p11bench.c" -lcrypto -ldl -lm
gcc -O2 -Wall -Wextra -std=gnu11 -pthread -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11sign" "$here/p11sign.c" -ldl

module=$(p11keychain_module)
log "starting a PostgreSQL server (scripts/pg-test-cluster.sh)"
out=$(bash "$root/scripts/pg-test-cluster.sh" start)
cluster=$(sed -n 1p <<<"$out")
conninfo=$(sed -n 2p <<<"$out")

# The configurations: "pg" (default freshness) and "pg0" (freshness-ms = 0) name the same
# token, so they measure the same schema; "sqlite" is the default token in its own directory.
printf '[token bench]\nstore = postgresql:%s\n' "$conninfo" >"$work/pg.conf"
printf '[token bench]\nstore = postgresql:%s\nfreshness-ms = 0\n' "$conninfo" >"$work/pg0.conf"
mkdir -p "$work/sqlite" "$work/pgdir"

# use NAME: the environment and token label of configuration NAME.
use() {
    case $1 in
    sqlite | remote) export P11KEYCHAIN_DIR=$work/sqlite P11KEYCHAIN_CONF=/dev/null; label=login ;;
    pg | pg0) export P11KEYCHAIN_DIR=$work/pgdir P11KEYCHAIN_CONF=$work/$1.conf; label=bench ;;
    esac
}

init_token() {
    use "$1"
    pkcs11-tool --module "$module" --token-label "$label" --init-token --label "$label" --so-pin "$so_pin" >/dev/null 2>&1 ||
        fail "$1: C_InitToken failed"
    pkcs11-tool --module "$module" --token-label "$label" --login --login-type so --so-pin "$so_pin" \
        --init-pin --pin "$pin" >/dev/null 2>&1 || fail "$1: C_InitPIN failed"
}

start_server() {
    local sock=$work/remote.sock
    use sqlite
    p11-kit server --foreground --name "$sock" --provider "$module" 'pkcs11:token=login' >"$work/server.out" 2>&1 &
    server_pid=$!
    for _ in $(seq 200); do
        [ -S "$sock" ] && break
        sleep 0.05
    done
    [ -S "$sock" ] || fail "p11-kit server made no socket: $(cat "$work/server.out")"
    export P11_KIT_SERVER_ADDRESS="unix:path=$sock"
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    unset P11_KIT_SERVER_ADDRESS
}

# grow NAME: the token to $certs certificates; prints the import rate (certificates/s).
grow() {
    use "$1"
    "$build/p11bench" --module "$module" --pin "$pin" --slot-label "$label" --sizes "$certs" \
        --lookups 10 --load-runs 1 --out "$work/$1-grow.json" >&2
    jq '.levels[-1].import.certs_per_s' "$work/$1-grow.json"
}

# find_p50 NAME MODULE: p50 of find-by-label hits (µs); the token holds its certificates.
find_p50() {
    use "$1"
    "$build/p11bench" --module "$2" --pin "$pin" --slot-label "$label" --sizes "$certs" \
        --lookups "$lookups" --cap-seconds 30 --load-runs 1 --out "$work/$1-find.json" >&2 2>"$work/find.err" ||
        { echo n/a; return 0; }
    jq '.levels[-1].find_hit.p50_us' "$work/$1-find.json"
}

sign_rate() {
    use "$1"
    "$build/p11sign" --module "$2" --token "$label" --pin "$pin" --key ecp256 --seconds "$seconds" 2>"$work/sign.err" |
        sed -nE 's/.* ops_per_s=([0-9.]+).*/\1/p' | grep . || echo "n/a"
}

login_ms() {
    use "$1"
    "$build/p11sign" --module "$module" --token "$label" --pin "$pin" --login-runs 5 2>/dev/null |
        sed -nE 's/.*median_ms=([0-9.]+).*/\1/p' | grep . || echo n/a
}

round_trip_us() {
    echo 'SELECT 1;' >"$work/select1.sql"
    "$pg_bin/pgbench" -n -M prepared -c 1 -T 2 -f "$work/select1.sql" "$conninfo" 2>/dev/null |
        sed -nE 's/^latency average = ([0-9.]+) ms.*/\1/p' | awk '{ printf "%.1f\n", $1 * 1000 }'
}

median() { { grep -v 'n/a' || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "n/a" }'; }

raw=$results/postgres.txt
: >"$raw"
init_token sqlite
init_token pg
log "growing both tokens to $certs certificates"
echo "sqlite import_per_s $(grow sqlite)" >>"$raw"
echo "pg import_per_s $(grow pg)" >>"$raw"
# One key pair on each token, made before the clock starts.
use sqlite && "$build/p11sign" --module "$module" --token login --pin "$pin" --key ecp256 --seconds 0.2 >/dev/null
use pg && "$build/p11sign" --module "$module" --token bench --pin "$pin" --key ecp256 --seconds 0.2 >/dev/null
for round in $(seq "$rounds"); do
    log "round $round of $rounds"
    {
        echo "server round_trip_us $(round_trip_us)"
        for name in sqlite pg pg0; do
            echo "$name find_p50_us $(find_p50 "$name" "$module")"
            echo "$name sign_per_s $(sign_rate "$name" "$module")"
            echo "$name login_ms $(login_ms "$name")"
        done
        start_server
        echo "remote find_p50_us $(find_p50 remote "$client")"
        echo "remote sign_per_s $(sign_rate remote "$client")"
        stop_server
    } >>"$raw"
done

fig() { awk -v n="$1" -v m="$2" '$1 == n && $2 == m { print $3 }' "$raw" | median; }
num() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "n/a" || v == "") print "n/a"; else printf f, v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

rt=$(fig server round_trip_us)
table=$results/postgres.md
{
    echo "### A token in PostgreSQL beside SQLite and p11-kit remote ($certs certificates, medians of $rounds rounds)"
    echo
    echo "- server: PostgreSQL $("$pg_bin/postgres" --version | awk '{ print $3 }'), local, Unix socket (pg-test-cluster.sh, fsync off); round trip (SELECT 1, pgbench): $rt µs"
    echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| token | import (/s) | find p50 (µs) | ECDSA P-256 (/s) | C_Login (ms) |"
    echo "|---|---:|---:|---:|---:|"
    for name in sqlite pg pg0 remote; do
        case $name in
        sqlite) title="SQLite" ;;
        pg) title="PostgreSQL, default freshness" ;;
        pg0) title="PostgreSQL, freshness-ms = 0" ;;
        remote) title="p11-kit remote (SQLite token behind p11-kit server)" ;;
        esac
        echo "| $title | $(num "$(fig "$name" import_per_s)" %.0f) | $(num "$(fig "$name" find_p50_us)" %.1f)" \
            "| $(num "$(fig "$name" sign_per_s)" %.0f) | $(num "$(fig "$name" login_ms)" %.1f) |"
    done
    echo
    echo "Targets (default freshness):"
    echo "- signing ≥ 0.8× SQLite: $(ratio "$(fig pg sign_per_s)" "$(fig sqlite sign_per_s)")×"
    echo "- signing ≥ 4× p11-kit remote: $(ratio "$(fig pg sign_per_s)" "$(fig remote sign_per_s)")×"
    echo "- find p50 ≤ 3 round trips: $(ratio "$(fig pg find_p50_us)" "$rt") round trips"
    echo "- import ≥ 2,000/s: $(num "$(fig pg import_per_s)" %.0f)/s"
    if [ "$(fig pg0 sign_per_s)" = n/a ]; then
        echo "- freshness-ms = 0: this build does not know the key (the token did not load); at the default it checks every use"
    fi
} >"$table"
cat "$table"
