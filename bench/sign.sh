#!/usr/bin/env bash
# bench/sign.sh: signatures per second through p11keychain and SoftHSM2 beside
# `openssl speed` on the same machine, in one run, RSA-2048 verifications per
# second, and the time C_Login takes.
#
# For RSA-2048 (CKM_SHA256_RSA_PKCS) and ECDSA P-256 (CKM_ECDSA_SHA256),
# bench/p11sign signs a 32-byte message for BENCH_SIGN_SECONDS with one thread,
# then two (each thread its own session, the same key), on a fresh token of
# each module, and verifies one RSA-2048 signature (C_VerifyInit + C_Verify,
# p11sign --verify) with one thread; `openssl speed -seconds S rsa2048 ecdsap256` and the same with
# `-multi 2` give OpenSSL's own rates. The whole sequence runs BENCH_SIGN_ROUNDS
# times, interleaved (each module right after openssl speed with as many
# threads): every rate is the median of its rounds, and every ratio the median
# of the rounds' ratios, because on a shared machine one window can be 10 % off
# and a ratio of two medians pairs figures from different rounds. Many short
# rounds: a neighbour's burst spoils one round, which the median leaves out, and
# the two figures of a ratio are seconds apart.
# Prints a markdown table (also written to bench/results/sign.md, the raw lines
# beside it in sign.txt) with the ratios and the targets: RSA-2048 sign ≥ 0.9×,
# RSA-2048 verify ≥ 0.95× and ECDSA P-256 sign ≥ 0.95× of openssl speed
# single-threaded, two threads ≥ 1.8× one, C_Login < 0.5 s.
#
# Settings (environment):
#   BENCH_SIGN_SECONDS=2             seconds per measurement
#   BENCH_SIGN_ROUNDS=11             rounds; figures are medians of the rounds
#   BENCH_P11KEYCHAIN_MODULE=PATH    use this .so instead of building one (release)
#   BENCH_SOFTHSM_MODULE=PATH        SoftHSM2 module (found under /usr/lib otherwise)
#   BENCH_ONLY=softhsm2|p11keychain  measure one module only (openssl speed always runs)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${BENCH_SIGN_SECONDS:-2}
rounds=${BENCH_SIGN_ROUNDS:-11}
only=${BENCH_ONLY:-}
results=$here/results
build=$here/build
so_pin=12345678
pin=1234
work=$(mktemp -d "${TMPDIR:-/tmp}/p11sign.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/sign.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

for cmd in gcc openssl pkcs11-tool softhsm2-util; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done

# --- measuring ----------------------------------------------------------------

# openssl_rates THREADS ROUND: openssl speed's sign rates, recorded in
# $work/openssl.rsa2048.THREADS and openssl.ecp256.THREADS (ops/s), RSA-2048
# verifications in openssl.rsa2048-verify.THREADS. With -multi, the summed line
# is the one without "Got:" in front; +F2's fifth field is verify/s.
openssl_rates() {
    local threads=$1 round=$2 out rsa rsa_verify ec multi=()
    [ "$threads" = 1 ] || multi=(-multi "$threads")
    log "round $round: openssl speed -seconds $seconds ${multi[*]} rsa2048 ecdsap256"
    out=$(openssl speed -seconds "$seconds" -mr "${multi[@]}" rsa2048 ecdsap256 2>/dev/null)
    printf '%s\n' "$out" | grep -E '^\+F[24]:' | sed "s/^/openssl round=$round threads=$threads /" >>"$work/raw.txt"
    rsa=$(grep -E '^\+F2:[0-9]+:2048:' <<<"$out" | tail -n 1 | cut -d: -f4)
    rsa_verify=$(grep -E '^\+F2:[0-9]+:2048:' <<<"$out" | tail -n 1 | cut -d: -f5)
    ec=$(grep -E '^\+F4:[0-9]+:256:' <<<"$out" | tail -n 1 | cut -d: -f4)
    if [ -z "$rsa" ] || [ -z "$rsa_verify" ] || [ -z "$ec" ]; then
        fail "could not read openssl speed's output: $(tail -n 3 <<<"$out")"
    fi
    add "$work/openssl.rsa2048.$threads" "$round" "$rsa"
    add "$work/openssl.rsa2048-verify.$threads" "$round" "$rsa_verify"
    add "$work/openssl.ecp256.$threads" "$round" "$ec"
}

# measure_module NAME MODULE TOKEN ROUND THREADS: runs p11sign on one module
# with THREADS threads; rates are recorded in $work/NAME.KEY.THREADS (and .cpu,
# .wall), with one thread also its RSA-2048 verifications; C_Login times (first
# round) go to NAME.login.
measure_module() {
    local name=$1 module=$2 token=$3 round=$4 threads=$5 key out
    for key in rsa2048 ecp256; do
        log "round $round: $name: $key, $threads thread(s), ${seconds} s"
        out=$("$build/p11sign" --module "$module" --token "$token" --pin "$pin" \
            --key "$key" --threads "$threads" --seconds "$seconds")
        echo "$name round=$round $out" >>"$work/raw.txt"
        add "$work/$name.$key.$threads" "$round" "$(field user_ops_per_s "$out")"
        add "$work/$name.$key.$threads.cpu" "$round" "$(field cpu_ops_per_s "$out")"
        add "$work/$name.$key.$threads.wall" "$round" "$(field ops_per_s "$out")"
    done
    [ "$threads" = 1 ] || return 0
    log "round $round: $name: rsa2048 verify, 1 thread, ${seconds} s"
    out=$("$build/p11sign" --module "$module" --token "$token" --pin "$pin" \
        --key rsa2048 --threads 1 --seconds "$seconds" --verify)
    echo "$name round=$round $out" >>"$work/raw.txt"
    add "$work/$name.rsa2048-verify.1" "$round" "$(field user_ops_per_s "$out")"
    add "$work/$name.rsa2048-verify.1.cpu" "$round" "$(field cpu_ops_per_s "$out")"
    [ "$round" = 1 ] || return 0
    log "$name: C_Login, 5 times"
    out=$("$build/p11sign" --module "$module" --token "$token" --pin "$pin" --login-runs 5)
    echo "$name $out" >>"$work/raw.txt"
    echo "$(field first_ms "$out") $(field median_ms "$out") $(field max_ms "$out")" >"$work/$name.login"
}

# --- report -------------------------------------------------------------------

# mechanisms: which ECDSA mechanism each module was measured with.
mechanisms() {
    awk '$2 == "round=1" && $4 == "key=ecp256" && $6 == "threads=1" { sub("mechanism=", "", $5); printf "%s%s %s", sep, $1, $5; sep = ", " }' "$work/raw.txt"
}

report() {
    local key label min o k s
    cat <<EOF
# Signing speed: p11keychain, SoftHSM2 and openssl speed

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr); load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the machine skews the figures, two threads most)
- p11keychain: $p11k_origin; SoftHSM2 $(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null || echo '?'); $(openssl version)
- p11sign: C_SignInit + C_Sign of 32 bytes, CKM_SHA256_RSA_PKCS (RSA-2048) and CKM_ECDSA_SHA256 (P-256; CKM_ECDSA of the 32 bytes where a module lacks it: $(mechanisms)), ${seconds} s per measurement; two threads: two sessions, one key, rates summed; RSA-2048 verify: C_VerifyInit + C_Verify of one signature of the 32 bytes, one thread
- $rounds rounds; each runs openssl speed, p11keychain and SoftHSM2 with one thread, then the same with two; every rate is the median of its rounds
- openssl speed -seconds $seconds rsa2048 ecdsap256 (one process), and with -multi 2 (two processes)
- rates are per second of CPU user time on both sides (openssl speed divides by its user time, times(); p11sign by each thread's, getrusage(RUSAGE_THREAD)), so other work on the machine skews them less, and the kernel's part of system calls both make (OpenSSL's random generator calls getpid once per ECDSA signature) counts on neither side; the rows "user + system" give p11sign's rates per second of each thread's whole CPU time beside the same openssl figure; p11sign reads the clock every 16 operations (openssl speed stops on an alarm); two threads and scaling (two threads ÷ one thread) use wall-clock rates, which count the time spent waiting for a lock
- ratio: the median of the rounds' ratios, each the module's rate ÷ openssl speed's in the same round, so that a change in the machine's load between rounds cancels out; in brackets, for the rows with a target, the lowest and the highest round

| measurement | openssl speed | p11keychain | ratio | target | SoftHSM2 | ratio |
|---|---:|---:|---:|---|---:|---:|
EOF
    for key in rsa2048 ecp256; do
        if [ "$key" = rsa2048 ]; then
            label="RSA-2048 sign/s" min=0.9
        else
            label="ECDSA P-256 sign/s" min=0.95
        fi
        row "$label, 1 thread" "$key.1" "$key.1" "$min"
        # The modules' rates per second of user + system CPU time beside openssl's user time.
        row "$label, 1 thread, user + system" "$key.1.cpu" "$key.1"
        # Two threads: wall-clock rates, as openssl speed -multi's children count theirs on a
        # busy machine (their summed rate fell below one process's at load 9 on 2 cores).
        row "$label, 2 threads" "$key.2.wall" "$key.2"
        # Scaling from wall-clock rates: CPU-time rates leave out time spent waiting for a lock.
        o=$(pair "openssl.$key.2" "openssl.$key.1")
        k=$(pair "p11keychain.$key.2.wall" "p11keychain.$key.1.wall")
        s=$(pair "softhsm2.$key.2.wall" "softhsm2.$key.1.wall")
        echo "| $label, scaling 2 ÷ 1 | $(times "$o") | $(times "$k")$(range "p11keychain.$key.2.wall" "p11keychain.$key.1.wall") | | ≥ 1.8×: $(verdict "$k" ">=" 1.8) | $(times "$s") | |"
        # On a busy machine neither scales: the module's scaling beside OpenSSL's own.
        echo "| $label, scaling ÷ openssl's scaling | — | $(times "$(ratio "$k" "$o")") | | | $(times "$(ratio "$s" "$o")") | |"
    done
    row "RSA-2048 verify/s, 1 thread" rsa2048-verify.1 rsa2048-verify.1 0.95
    row "RSA-2048 verify/s, 1 thread, user + system" rsa2048-verify.1.cpu rsa2048-verify.1
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
    local round threads
    for ((round = 1; round <= rounds; round++)); do
        # Each module right after openssl speed, with as many threads: the closer in time, the
        # less the machine's load differs between the two figures of a ratio.
        for threads in 1 2; do
            openssl_rates "$threads" "$round"
            if [ -n "$p11k_module" ]; then
                with_env "${p11k_env[@]}" -- measure_module p11keychain "$p11k_module" login "$round" "$threads"
            fi
            if [ -n "$softhsm" ]; then
                with_env "${softhsm_env[@]}" -- measure_module softhsm2 "$softhsm" bench "$round" "$threads"
            fi
        done
    done
    cp "$work/raw.txt" "$results/sign.txt"
    report | tee "$results/sign.md"
}

main "$@"
