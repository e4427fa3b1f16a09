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
#   scripts/pg-test-cluster.sh standby DIR      a synchronous streaming standby of the cluster
#                                               in DIR (pg_basebackup -R, its own socket
#                                               directory): print its DIR and connection
#                                               string once the primary reports it in sync
#   scripts/pg-test-cluster.sh kill DIR         SIGKILL the server in DIR and its processes
#   scripts/pg-test-cluster.sh promote DIR      promote the standby in DIR to primary
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
    dir=$(new_dir)
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

# new_dir: a temporary directory with data/ and socket/ for the cluster's owner.
new_dir() {
    local dir
    dir=$(mktemp -d /tmp/p11keychain-pg.XXXXXX)
    chmod 0755 "$dir"
    mkdir -m 0700 "$dir/data"
    mkdir -m 0755 "$dir/socket"
    [[ $(id -u) == 0 ]] && chown nobody:nogroup "$dir/data" "$dir/socket"
    echo "$dir"
}

standby() {
    local primary=$1 dir i state
    dir=$(new_dir)
    as_owner "$bin/pg_basebackup" -D "$dir/data" -R -X stream -c fast -h "$primary/socket" -U p11keychain \
        -d "application_name=standby" >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; return 1; }
    chmod 0700 "$dir/data"
    up "$dir"
    # Every commit on the primary now waits until the standby has it.
    as_owner "$bin/psql" -h "$primary/socket" -U p11keychain -d postgres -qtAX \
        -c "ALTER SYSTEM SET synchronous_standby_names = 'standby'" -c "SELECT pg_reload_conf()" >/dev/null
    for i in $(seq 300); do
        state=$(as_owner "$bin/psql" -h "$primary/socket" -U p11keychain -d postgres -qtAX \
            -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")
        [[ $state == sync ]] && break
        sleep 0.1
    done
    [[ $state == sync ]] || { echo "pg-test-cluster: the standby is not in sync ($state)" >&2; return 1; }
    echo "$dir"
    echo "host=$dir/socket user=p11keychain dbname=postgres"
}

# kill_server DIR: SIGKILL the postmaster and every process it started, at once.
kill_server() {
    local pid children
    pid=$(head -n 1 "$1/data/postmaster.pid")
    # Its children, from /proc (no procps needed).
    children=$(grep -l "^PPid:[[:space:]]*$pid\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3 || true)
    kill -9 "$pid" $children 2>/dev/null || true
}

promote() { as_owner "$bin/pg_ctl" -D "$1/data" -w -t 30 promote >/dev/null; }

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
    standby) standby "$2" ;;
    kill) kill_server "$2" ;;
    promote) promote "$2" ;;
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
    *) echo "usage: $0 run COMMAND... | start | stop DIR | down DIR | up DIR | standby DIR | kill DIR | promote DIR" >&2; exit 2 ;;
esac
