#!/usr/bin/env bash
# bench/run.sh: p11keychain and SoftHSM2 side by side, in one run.
#
# Builds bench/p11bench and the p11keychain module (release), then, for each
# module on a fresh temporary token, grows the token to each size and measures
# import rate, find by label (hit and miss), module load time and peak RSS of a
# client process, and the wall time of `p11tool --list-all-certs`. Prints a
# markdown table and writes it to bench/results/latest.md (with the raw JSON
# beside it).
#
# Settings (environment):
#   BENCH_SIZES=1000,10000,100000  token sizes, cumulative
#   BENCH_SOFTHSM_MAX=10000        largest size tried on SoftHSM2 (it imports
#                                  ~200 certs/s and scans every object per find)
#   BENCH_P11TOOL_MAX=10000        largest size at which p11tool's listing is timed
#   BENCH_P11TOOL_TIMEOUT=300      seconds before a listing is given up
#   BENCH_LOOKUPS=200              finds per measurement
#   BENCH_CAP_SECONDS=20           time cap per find measurement
#   BENCH_LOAD_RUNS=5              fresh-process loads per size
#   BENCH_ONLY=softhsm2|p11keychain  run one module only
#   BENCH_P11KEYCHAIN_MODULE=PATH  use this .so instead of building one
#   BENCH_SOFTHSM_MODULE=PATH      SoftHSM2 module (found under /usr/lib otherwise)
#   BENCH_BASELINE="fb540ce NAME=PATH ..."  earlier p11keychain builds, measured in
#                                  the same run right after the current one, each on a
#                                  fresh token, and reported in a table beside it: a
#                                  commit (its release module is built once in a git
#                                  worktree under bench/build/baseline/, one build at a
#                                  time) or NAME=PATH of a module built elsewhere
#   BENCH_SIGN=0                   skip the signing-speed section (bench/sign.sh,
#                                  run last with the same module; its settings:
#                                  BENCH_SIGN_SECONDS=2, BENCH_SIGN_ROUNDS=11)
#   BENCH_INSTRUCTIONS=0           skip the instruction counts (bench/instructions.sh:
#                                  an ECDSA signature and an RSA verification under
#                                  callgrind beside openssl speed's, after signing
#                                  with the same module; BENCH_INSTRUCTIONS_SECONDS=2)
#   BENCH_SPLIT=0                  skip the split of an ECDSA signature's time
#                                  (bench/split.sh: OpenSSL's signing call and the
#                                  module's own calls, timed inside the signing
#                                  process; BENCH_SPLIT_ROUNDS=5, BENCH_SPLIT_SECONDS=3)
#   BENCH_SYMMETRIC=0              skip the secret-key section (bench/symmetric.sh:
#                                  AES-GCM, HMAC, ECDH beside openssl speed, run
#                                  after signing with the same module; its
#                                  settings: BENCH_SYMMETRIC_SECONDS=3)
#   BENCH_TRUST=0                  skip the trust-evaluation section (bench/trust.sh:
#                                  SecTrustEvaluateWithError beside X509_verify_cert;
#                                  its settings: BENCH_TRUST_SECONDS=5)
#   BENCH_REMOTE=0                 skip the remote section (bench/remote.sh:
#                                  find and ECDSA through p11-kit server beside
#                                  direct use, both modules; BENCH_REMOTE_*)
#   BENCH_POSTGRES=0               skip the PostgreSQL section (bench/postgres.sh: a
#                                  token in a local PostgreSQL beside SQLite and
#                                  p11-kit remote; BENCH_PG_*)
#   BENCH_SESSION=0                skip the Swift API / session unlock section
#                                  (bench/session.sh, release build of its own)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

sizes=${BENCH_SIZES:-1000,10000,100000}
IFS=, read -r -a size_list <<<"$sizes"
softhsm_max=${BENCH_SOFTHSM_MAX:-10000}
p11tool_max=${BENCH_P11TOOL_MAX:-10000}
p11tool_timeout=${BENCH_P11TOOL_TIMEOUT:-300}
lookups=${BENCH_LOOKUPS:-200}
cap_seconds=${BENCH_CAP_SECONDS:-20}
load_runs=${BENCH_LOAD_RUNS:-5}
only=${BENCH_ONLY:-}

results=$here/results
build=$here/build
work=$(mktemp -d "${TMPDIR:-/tmp}/p11bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/run.sh: %s\n' "$*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

# --- tools ------------------------------------------------------------------

# Installs, with apt-get, the Debian packages whose command or files are
# missing. A fresh machine runs this script, so it brings what it needs.
ensure_tools() {
    local missing=() pair cmd pkg
    for pair in gcc:gcc jq:jq timeout:coreutils p11tool:gnutls-bin softhsm2-util:softhsm2; do
        cmd=${pair%%:*} pkg=${pair#*:}
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
    done
    for pkg in libssl-dev libp11-kit-dev libsqlite3-dev; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build_p11bench() {
    mkdir -p "$build"
    log "building p11bench"
    gcc -O2 -Wall -Wextra -std=gnu11 -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11bench" "$here/p11bench.c" -lcrypto -ldl -lm
}

# --- measuring one module -----------------------------------------------------

# Times `p11tool --list-all-certs` once and writes a small JSON record.
# Usage: time_p11tool MODULE OBJECTS OUT.json
time_p11tool() {
    local module=$1 objects=$2 out=$3 start end rc=0 listed
    start=$(date +%s.%N)
    timeout "$p11tool_timeout" p11tool --provider "$module" --list-all-certs \
        </dev/null >"$work/p11tool.out" 2>"$work/p11tool.err" || rc=$?
    end=$(date +%s.%N)
    listed=$(grep -c 'Type: X.509 Certificate' "$work/p11tool.out" || true)
    if [ "$rc" -eq 124 ]; then
        jq -n --argjson n "$objects" --argjson t "$p11tool_timeout" \
            '{objects: $n, timeout_s: $t}' >"$out"
    elif [ "$rc" -ne 0 ]; then
        jq -n --argjson n "$objects" --argjson rc "$rc" --rawfile err "$work/p11tool.err" \
            '{objects: $n, failed: $rc, stderr: $err}' >"$out"
    else
        jq -n --argjson n "$objects" --argjson l "$listed" \
            --argjson s "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')" \
            '{objects: $n, seconds: $s, listed: $l}' >"$out"
    fi
}

# Grows one module's token size by size. p11bench runs once per size (it
# resumes a token that holds its certificates), so that p11tool can list the
# token at exactly that size in between. Sizes above MAX (0: none) are skipped.
# Usage: bench_module NAME MODULE MAX [p11bench options...]
bench_module() {
    local name=$1 module=$2 max=$3 size tag timed_out=0
    shift 3
    for size in "${size_list[@]}"; do
        if [ "$max" -gt 0 ] && [ "$size" -gt "$max" ]; then
            log "$name: $size certificates: not measured (capped at $max)"
            continue
        fi
        tag=$(printf %012d "$size")   # sorts the files in size order
        log "$name: $size certificates"
        "$build/p11bench" --module "$module" "$@" --sizes "$size" \
            --lookups "$lookups" --cap-seconds "$cap_seconds" --load-runs "$load_runs" \
            --out "$work/$name-level-$tag.json" >&2
        # After one listing times out, larger tokens would only take longer.
        if [ "$size" -le "$p11tool_max" ] && [ "$timed_out" -eq 0 ]; then
            log "$name: p11tool --list-all-certs at $size (timeout ${p11tool_timeout} s)"
            time_p11tool "$module" "$size" "$work/$name-p11tool-$tag.json"
            if jq -e 'has("timeout_s")' "$work/$name-p11tool-$tag.json" >/dev/null; then
                timed_out=1
            fi
        fi
    done
    # One JSON per module: p11bench's header fields, every level, the listings.
    jq -n '{levels: [], p11tool: []}' >"$work/$name.json"
    if compgen -G "$work/$name-level-*.json" >/dev/null; then
        jq -s '.[0] + {levels: [.[].levels[]], p11tool: []}' \
            "$work/$name"-level-*.json >"$work/$name.json"
    fi
    if compgen -G "$work/$name-p11tool-*.json" >/dev/null; then
        jq -s '.' "$work/$name"-p11tool-*.json >"$work/$name.p11tool.json"
        jq --slurpfile t "$work/$name.p11tool.json" '.p11tool = $t[0]' \
            "$work/$name.json" >"$work/$name.merged.json"
        mv "$work/$name.merged.json" "$work/$name.json"
    fi
    cp "$work/$name.json" "$results/$name.json"
}

run_softhsm2() {
    local module dir=$work/softhsm2
    module=$(softhsm_module)
    mkdir -p "$dir/tokens"
    printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' \
        "$dir" >"$dir/softhsm2.conf"
    export SOFTHSM2_CONF=$dir/softhsm2.conf
    softhsm2-util --init-token --free --label bench --so-pin 12345678 --pin 1234 >/dev/null
    bench_module softhsm2 "$module" "$softhsm_max" --pin 1234 --slot-label bench
    unset SOFTHSM2_CONF
}

# Usage: run_p11keychain MODULE [NAME]  (NAME: p11keychain, or a baseline's)
run_p11keychain() {
    local module=$1 name=${2:-p11keychain} dir=$work/${2:-p11keychain}
    mkdir -p "$dir/xdg-config" "$dir/xdg-data"
    # A fresh store, and no configuration from this user or machine's home.
    export P11KEYCHAIN_DIR=$dir/store XDG_CONFIG_HOME=$dir/xdg-config XDG_DATA_HOME=$dir/xdg-data
    bench_module "$name" "$module" 0 --slot-label login
    unset P11KEYCHAIN_DIR XDG_CONFIG_HOME XDG_DATA_HOME
}

# --- earlier builds (BENCH_BASELINE) -----------------------------------------------

# The module of one BENCH_BASELINE entry: NAME=PATH as given, or a commit's release
# module, built in a worktree of its own (kept for the next run).
# Usage: baseline_module ENTRY  → prints "NAME PATH"
baseline_module() {
    local entry=$1 commit dir
    if [[ $entry == *=* ]]; then
        [ -f "${entry#*=}" ] || fail "BENCH_BASELINE: no module at ${entry#*=}"
        echo "${entry%%=*} ${entry#*=}"
        return 0
    fi
    commit=$(git -C "$root" rev-parse --short "$entry^{commit}" 2>/dev/null) ||
        fail "BENCH_BASELINE: $entry is neither NAME=PATH nor a commit"
    dir=$build/baseline/$commit
    if [ ! -f "$dir/.build/release/libp11keychain-pkcs11.so" ]; then
        if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
            PATH=$PATH:/opt/swift/usr/bin
        fi
        if [ ! -d "$dir" ]; then
            git -C "$root" worktree add --detach "$dir" "$commit" >&2
        fi
        log "building p11keychain at $commit (release)"
        (cd "$dir" && swift build -c release --product p11keychain-pkcs11) >&2
    fi
    echo "$commit $dir/.build/release/libp11keychain-pkcs11.so"
}

# Measures each baseline like the current module, into results/p11keychain@NAME.json.
run_baselines() {
    local entry name module
    baseline_names=()
    for entry in ${BENCH_BASELINE:-}; do
        read -r name module <<<"$(baseline_module "$entry")"
        rm -f "$results/p11keychain@$name.json"
        run_p11keychain "$module" "p11keychain@$name"
        baseline_names+=("$name")
    done
}

# One table per baseline: the current module beside it (ratio: current ÷ baseline).
report_baselines() {
    local name
    for name in "${baseline_names[@]}"; do
        printf '\n## p11keychain beside the build of %s (same run)\n\n' "$name"
        jq -rn --slurpfile a "$results/p11keychain.json" \
            --slurpfile b "$results/p11keychain@$name.json" --arg sizes "$sizes" \
            --argjson smax 0 --argjson tmax "$p11tool_max" -f "$here/report.jq" |
            awk -v left="p11keychain (current)" -v right="$name" -f "$here/report.awk"
    done
}

# --- report -------------------------------------------------------------------

# Which p11keychain was measured: the commit built, or the prebuilt file given.
p11keychain_origin() {
    if [ -n "${BENCH_P11KEYCHAIN_MODULE:-}" ]; then
        echo "prebuilt module $BENCH_P11KEYCHAIN_MODULE (repository at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    else
        echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo ' (work tree differs)'), release build"
    fi
}

# Prints the markdown report from results/<name>.json (missing = not run).
report() {
    local p11k=$results/p11keychain.json softhsm=$results/softhsm2.json
    local none='{"levels": [], "p11tool": [], "lookups": 0, "not_run": true}'
    [ -f "$p11k" ] || { p11k=$work/none-p11keychain.json; echo "$none" >"$p11k"; }
    [ -f "$softhsm" ] || { softhsm=$work/none-softhsm2.json; echo "$none" >"$softhsm"; }

    cat <<EOF
# p11keychain vs SoftHSM2

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr); load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the machine skews the figures)
- p11keychain: $(p11keychain_origin); SoftHSM2 $(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null || echo '?') (file backend)
- sizes: $sizes, cumulative (SoftHSM2 up to $softhsm_max); $lookups finds per measurement, at most ${cap_seconds} s each (n = samples taken when fewer); $load_runs fresh-process loads per size; p11tool listing up to $p11tool_max certificates, timeout ${p11tool_timeout} s
- import: one C_CreateObject per certificate (class, type, token, label, id, subject, issuer, serial, value); rate over the certificates added to reach that size
- find: C_FindObjectsInit({CKA_CLASS=CKO_CERTIFICATE, CKA_LABEL}) + C_FindObjects until empty + C_FindObjectsFinal, random labels
- load: dlopen → C_GetFunctionList → C_Initialize → C_GetSlotList → C_OpenSession → C_CloseSession → C_Finalize in a fresh process, median; that process also does one find (timed apart), and its peak RSS (VmHWM) is reported
- ratio: p11keychain ÷ SoftHSM2

EOF
    jq -rn --slurpfile a "$p11k" --slurpfile b "$softhsm" --arg sizes "$sizes" \
        --argjson smax "$softhsm_max" --argjson tmax "$p11tool_max" -f "$here/report.jq" |
        awk -f "$here/report.awk"
}

# section SWITCH SCRIPT [alone]: bench/SCRIPT after the store tables, unless the environment
# sets SWITCH to 0; with the module measured above (BENCH_P11KEYCHAIN_MODULE), or with `alone`
# as the script finds its own.
section() {
    local switch=$1 script=$2
    [ "${!switch:-1}" != 0 ] || return 0
    echo
    if [ "${3:-}" = alone ]; then
        bash "$here/$script"
    else
        BENCH_P11KEYCHAIN_MODULE=$p11k_module bash "$here/$script"
    fi
}

main() {
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    ensure_tools
    mkdir -p "$results"
    rm -f "$results/p11keychain.json" "$results/softhsm2.json"
    build_p11bench
    local p11k_module=
    if [ "$only" != softhsm2 ]; then
        p11k_module=$(p11keychain_module)
        [ -f "$p11k_module" ] || fail "no module at $p11k_module"
    fi
    [ "$only" = p11keychain ] || run_softhsm2
    [ -z "$p11k_module" ] || run_p11keychain "$p11k_module"
    baseline_names=()
    [ -z "$p11k_module" ] || [ -z "${BENCH_BASELINE:-}" ] || run_baselines
    { report; report_baselines; } | tee "$results/latest.md"
    # Signing speed and C_Login time, same module, same run.
    section BENCH_SIGN sign.sh
    # Instructions per signature and verification, same module.
    section BENCH_INSTRUCTIONS instructions.sh
    # Where an ECDSA signature's time goes, inside the signing process.
    section BENCH_SPLIT split.sh
    # Secret-key speed, same module, same run.
    section BENCH_SYMMETRIC symmetric.sh
    # Trust evaluation: the Swift face beside OpenSSL's verify loop.
    section BENCH_TRUST trust.sh alone
    # What p11-kit server + p11-kit-client.so add per call.
    section BENCH_REMOTE remote.sh
    # A token stored in PostgreSQL beside SQLite and p11-kit remote.
    section BENCH_POSTGRES postgres.sh
    # The Swift API and C_Login in an unlocked session (its own release build beside it).
    section BENCH_SESSION session.sh alone
}

main "$@"
