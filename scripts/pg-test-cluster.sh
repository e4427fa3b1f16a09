#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests (docs/fleet.md): initdb and pg_ctl in a new
# temporary directory, run by an unprivileged user (`nobody` when started as root, else the
# caller), listening on a Unix socket in that directory only (no TCP), stopped at the end.
#
#   scripts/pg-test-cluster.sh run COMMAND...   start, export P11KEYCHAIN_TEST_POSTGRES
#                                               (a libpq connection string), run COMMAND, stop
#   scripts/pg-test-cluster.sh start            start; print DIR and the connection string
#   scripts/pg-test-cluster.sh stop DIR         stop the cluster in DIR and remove DIR
#   scripts/pg-test-cluster.sh down DIR         stop its server only (an outage)
#   scripts/pg-test-cluster.sh up DIR           start it again
#
# Every step is bounded: pg_ctl waits at most 30 s; the stop is immediate (the data is thrown
# away). The status of `run` is COMMAND's.
set -euo pipefail

bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[[ -x $bin/initdb && -x $bin/pg_ctl ]] || { echo "pg-test-cluster: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
    if [[ $(id -u) == 0 ]]; then setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; else "$@"; fi
}

start() {
    local dir
    dir=$(mktemp -d /tmp/p11keychain-pg.XXXXXX)
    chmod 0755 "$dir"
    mkdir -m 0700 "$dir/data"
    mkdir -m 0755 "$dir/socket"
    [[ $(id -u) == 0 ]] && chown nobody:nogroup "$dir/data" "$dir/socket"
    as_owner "$bin/initdb" -D "$dir/data" -U p11keychain -A trust -E UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; return 1; }
    # No TCP at all; the socket is the owner's only (root passes by its privilege).
    up "$dir"
    echo "$dir"
    echo "host=$dir/socket user=p11keychain dbname=postgres"
}

up() {
    local dir=$1
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/socket/server.log" -w -t 30 start \
        -o "-c listen_addresses='' -c unix_socket_directories='$dir/socket' -c unix_socket_permissions=0700 -c fsync=off" \
        >/dev/null || { cat "$dir/socket/server.log" >&2; return 1; }
}

down() { as_owner "$bin/pg_ctl" -D "$1/data" -m immediate -w -t 30 stop >/dev/null; }

stop() {
    local dir=$1
    [[ -d $dir/data ]] && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    rm -rf -- "$dir"
}

case ${1:-} in
    start) start ;;
    stop) stop "$2" ;;
    up) up "$2" ;;
    down) down "$2" ;;
    run)
        shift
        out=$(start)
        dir=$(sed -n 1p <<<"$out")
        export P11KEYCHAIN_TEST_POSTGRES=$(sed -n 2p <<<"$out")
        trap 'stop "$dir"' EXIT
        status=0
        "$@" || status=$?
        exit "$status"
        ;;
    *) echo "usage: $0 run COMMAND... | start | stop DIR | down DIR | up DIR" >&2; exit 2 ;;
esac
