#!/usr/bin/env bash
# Runs the integration tests: every function test_* in Tests/Integration/test_*.sh,
# each in its own bash process with a fresh store, against the built module
# ($P11KEYCHAIN_MODULE, default .build/debug/libp11keychain-pkcs11.so).
#
#   bash Tests/Integration/run.sh [SUBSTRING]   only tests whose name or file name
#                                               contains SUBSTRING
#
# Prints "PASS name (T s)" or "FAIL name (T s): reason" per test and ends with
# "N passed, M failed"; exits non-zero if any test failed. Each test's full
# output is kept in .build/integration/logs/<name>.log; the tail of a failed
# test's log also goes to stderr. Several tests need root (mounts, other users,
# /etc/pkcs11): run them as root, in CI or a container.
#
# Files run IT_JOBS at a time (default 2), the tests of one file one after another; a
# file's lines are printed when it ends. A file that changes what every process on the
# machine sees (/etc/pkcs11, /etc/pam.d, an installed package, users), or that times
# something in tenths of a second, says so with a line "# run.sh: alone" and runs after
# the others, by itself.
set -u

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IT_TEST_TIMEOUT=${IT_TEST_TIMEOUT:-600}
# PINs at the floor of their cost, as scripts/test.sh sets it (full_pin_cost in lib.sh undoes it).
export P11KEYCHAIN_PIN_ITERATIONS=${P11KEYCHAIN_PIN_ITERATIONS:-1000}
IT_JOBS=${IT_JOBS:-2}
[[ $IT_JOBS =~ ^[1-9][0-9]*$ ]] || { echo "IT_JOBS must be a number from 1, not '$IT_JOBS'" >&2; exit 2; }
LOGS=$IT_BUILD/logs
RESULTS=$IT_BUILD/results

# test_functions FILE: the test functions of FILE, in the order they are written.
test_functions() {
    sed -nE 's/^(test_[A-Za-z0-9_]+)[[:space:]]*\(\)[[:space:]]*\{?.*$/\1/p' "$1"
}

report() {
    if [[ $1 == PASS ]]; then
        echo "PASS $2 ($((SECONDS - started)) s)"
    else
        echo "FAIL $2 ($((SECONDS - started)) s): $3"
        sed 's/^/    /' "$4" | tail -n 15 >&2
    fi
}

# run_one FILE FUNCTION: runs one test in a fresh bash process, under a timeout.
run_one() {
    local file=$1 name=$2 log=$LOGS/$2.log reason_file status reason started=$SECONDS
    reason_file=$(mktemp)
    IT_REASON_FILE=$reason_file timeout -k 10 "$IT_TEST_TIMEOUT" \
        bash -c 'source "$1" && source "$2" && it_run_test "$3"' it-test \
        "$IT_DIR/lib.sh" "$file" "$name" </dev/null >"$log" 2>&1
    status=$?
    reason=$(head -n 1 "$reason_file")
    rm -f "$reason_file"
    if [[ $status == 0 && -z $reason ]]; then
        report PASS "$name"
        return
    fi
    if [[ $status == 124 || $status == 137 ]] && [[ -z $reason || $reason == *"status 143"* ]]; then
        reason="timed out after ${IT_TEST_TIMEOUT}s (last output: $(summarize "$(tail -n 5 "$log")"))"
    elif [[ -z $reason ]]; then
        reason="test exited with $(describe_status "$status") without saying why (see $log)"
    fi
    report FAIL "$name" "$reason" "$log"
}

# run_file FILE FILTER: the tests of FILE that FILTER selects, one after another.
run_file() {
    local file=$1 filter=$2 name
    for name in $(test_functions "$file"); do
        [[ -z $filter || $name == *"$filter"* || $(basename "$file") == *"$filter"* ]] || continue
        run_one "$file" "$name"
    done
}

# start_file FILE FILTER: run_file in the background, its lines into $RESULTS/FILE.
start_file() {
    local out=$RESULTS/$(basename "$1" .sh)
    run_file "$1" "$2" >"$out.out" 2>"$out.err" &
    running[$!]=$out
    began[$!]=$SECONDS
}

# finish_one: waits for a background file to end and prints its lines.
finish_one() {
    local pid out
    wait -n -p pid "${!running[@]}"
    out=${running[$pid]}
    cat "$out.out"
    cat "$out.err" >&2
    [[ ! -s $out.out ]] || echo "-- $(basename "$out").sh: $((SECONDS - began[$pid])) s"
    unset "running[$pid]" "began[$pid]"
}

main() {
    local filter=${1:-} file build_error= passed failed
    local -a shared=() alone=()
    local -A running=() began=()
    # A stopped run stops its files too (background jobs of a script ignore SIGINT).
    trap 'kill "${!running[@]}" 2>/dev/null; exit 130' INT TERM
    mkdir -p "$LOGS"
    rm -rf "$RESULTS"
    mkdir -p "$RESULTS"
    # A helper that does not compile fails every test through it_run_test.
    if ! build_error=$(build_p11drive 2>&1); then
        rm -f "$P11DRIVE" # never run a stale helper
        echo "p11drive did not compile: $build_error" >&2
    fi
    for file in "$IT_DIR"/test_*.sh; do
        if grep -q '^# run.sh: alone' "$file"; then alone+=("$file"); else shared+=("$file"); fi
    done
    for file in "${shared[@]}"; do
        ((${#running[@]} < IT_JOBS)) || finish_one
        start_file "$file" "$filter"
    done
    while ((${#running[@]} > 0)); do finish_one; done
    for file in "${alone[@]}"; do
        start_file "$file" "$filter"
        finish_one
    done
    passed=$(cat "$RESULTS"/*.out 2>/dev/null | grep -c '^PASS ')
    failed=$(cat "$RESULTS"/*.out 2>/dev/null | grep -c '^FAIL ')
    echo "$passed passed, $failed failed"
    ((failed == 0 && passed > 0))
}

main "$@"
