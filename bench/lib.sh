# Shared by the bench scripts (sourced): where the two modules under test are, their fresh
# tokens, and the arithmetic of the reports. The sourcing script defines `log`, `fail`, `$root`
# (the repository) and, for the tokens, `$work` (its scratch directory), `$so_pin` and `$pin`.

# p11keychain_module: $BENCH_P11KEYCHAIN_MODULE, else a release build made here.
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

# softhsm_module: $BENCH_SOFTHSM_MODULE, else Debian's libsofthsm2.so.
softhsm_module() {
    local m
    for m in "${BENCH_SOFTHSM_MODULE:-}" /usr/lib/*/softhsm/libsofthsm2.so /usr/lib/softhsm/libsofthsm2.so; do
        [ -n "$m" ] && [ -f "$m" ] && { echo "$m"; return 0; }
    done
    fail "libsofthsm2.so not found (set BENCH_SOFTHSM_MODULE)"
}

# build_p11sign: bench/p11sign built into $build (the sourcing script's build directory).
build_p11sign() {
    mkdir -p "$build"
    log "building p11sign"
    gcc -O2 -Wall -Wextra -std=gnu11 -pthread -I"$root/Tests/include" -I"$root/p11/include" -o "$build/p11sign" "$root/bench/p11sign.c" -ldl
}

# build_sign_timer: bench/sign_timer.so (the OpenSSL call that makes each signature timed in
# the process that loads it) built into $build.
build_sign_timer() {
    mkdir -p "$build"
    log "building sign_timer.so"
    gcc -O2 -Wall -Wextra -shared -fPIC -o "$build/sign_timer.so" "$root/bench/sign_timer.c" -ldl
}

# module_origin MODULE: where the measured module came from, for a report's header: the
# module BENCH_P11KEYCHAIN_MODULE named, or this commit's release build.
module_origin() {
    local head
    head=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none)
    if [ -n "${BENCH_P11KEYCHAIN_MODULE:-}" ]; then
        echo "module $1 (repository at $head)"
    else
        echo "commit $head, release build"
    fi
}

# setup_p11keychain MODULE: a fresh p11keychain token "login" with PINs under $work; exports
# its environment.
setup_p11keychain() {
    local module=$1
    mkdir -p "$work/p11keychain/store" "$work/p11keychain/config" "$work/p11keychain/data"
    export P11KEYCHAIN_DIR=$work/p11keychain/store P11KEYCHAIN_CONF=/dev/null \
        XDG_CONFIG_HOME=$work/p11keychain/config XDG_DATA_HOME=$work/p11keychain/data
    pkcs11-tool --module "$module" --init-token --label login --so-pin "$so_pin" >/dev/null 2>&1 ||
        fail "pkcs11-tool --init-token failed on p11keychain"
    pkcs11-tool --module "$module" --login --login-type so --so-pin "$so_pin" --init-pin --pin "$pin" >/dev/null 2>&1 ||
        fail "pkcs11-tool --init-pin failed on p11keychain"
}

# setup_softhsm2: a fresh SoftHSM2 token "bench" under $work; exports SOFTHSM2_CONF.
setup_softhsm2() {
    local dir=$work/softhsm2
    mkdir -p "$dir/tokens"
    printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$dir" >"$dir/softhsm2.conf"
    export SOFTHSM2_CONF=$dir/softhsm2.conf
    softhsm2-util --init-token --free --label bench --so-pin "$so_pin" --pin "$pin" >/dev/null
}

# with_env NAME=VALUE... -- FUNCTION ARGS...: runs a function of the script with those
# variables exported, and unsets them afterwards.
with_env() {
    local assignments=() name
    while [ "$1" != -- ]; do assignments+=("$1"); shift; done
    shift
    for name in "${assignments[@]}"; do export "${name?}"; done
    "$@"
    for name in "${assignments[@]}"; do unset "${name%%=*}"; done
}

# field KEY LINE: the value of KEY= in a measuring program's output line.
field() { sed -nE "s/.*[[:space:]]$1=([^[:space:]]+).*/\\1/p" <<<"$2"; }

# --- rounds -------------------------------------------------------------------------------
# A measurement repeated in rounds keeps one line per round in its file, "ROUND VALUE"; a
# round that measured nothing has no line.

# add FILE ROUND VALUE: records one round's value (nothing when VALUE is empty).
add() { if [ -n "$3" ]; then echo "$2 $3" >>"$1"; fi; }

# median FILE: the median of FILE's values, or empty when it has none.
median() {
    [ -s "$1" ] || return 0
    awk '{ print $2 }' "$1" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# round_ratios A B: for every round measured in both files, A's value ÷ B's, one a line.
round_ratios() {
    [ -s "$1" ] && [ -s "$2" ] || return 0
    awk 'NR == FNR { b[$1] = $2; next } ($1 in b) && b[$1] > 0 { printf "%.4f\n", $2 / b[$1] }' "$2" "$1"
}

# paired A B: the median of the rounds' ratios A ÷ B, to four decimals (empty when no round
# measured both). A round's two figures are taken close together (seconds apart in sign.sh),
# so a change in the machine's load between rounds cancels, which a ratio of the two medians
# does not do.
paired() {
    round_ratios "$1" "$2" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.4f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# spread A B: the lowest and highest of the rounds' ratios A ÷ B, "0.93–1.02" (empty when no
# round measured both).
spread() {
    round_ratios "$1" "$2" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.2f–%.2f", v[1], v[NR] }'
}

# The same for files under the script's $work, named relative to it: value FILE, the median
# of its rounds; pair A B, the median of the rounds' ratios A ÷ B; range A B, their lowest
# and highest in brackets (" (0.93–1.02)"), or nothing.
value() { median "$work/$1"; }
pair() { paired "$work/$1" "$work/$2"; }
range() {
    local r
    r=$(spread "$work/$1" "$work/$2")
    if [ -n "$r" ]; then echo " ($r)"; fi
}

# row LABEL NAME BASE [LIMIT]: a table row of the modules' rates (files p11keychain.NAME and
# softhsm2.NAME under $work) beside openssl speed's (openssl.BASE), each ratio the median of
# the rounds' ratios; with LIMIT, a target (p11keychain's ratio ≥ LIMIT) and its range.
row() {
    local label=$1 name=$2 base=$3 min=${4:-} r target= spread=
    r=$(pair "p11keychain.$name" "openssl.$base")
    if [ -n "$min" ]; then
        target="≥ ${min}×: $(verdict "$r" ">=" "$min")"
        spread=$(range "p11keychain.$name" "openssl.$base")
    fi
    echo "| $label | $(fmt "$(value "openssl.$base")") | $(fmt "$(value "p11keychain.$name")") | $(times "$r")$spread | $target | $(fmt "$(value "softhsm2.$name")") | $(times "$(pair "softhsm2.$name" "openssl.$base")") |"
}

# callgrind_calls FUNCTION FILE: how many calls of FUNCTION callgrind's output FILE records.
# Callgrind names a function once, "fn=(ID) NAME" or "cfn=(ID) NAME", then by its ID alone;
# the "calls=COUNT ..." line after a "cfn=" line counts the calls from one site.
callgrind_calls() {
    awk -v name="$1" '
        /^c?fn=\(/ {
            id = $1
            sub(/^c?fn=/, "", id)
            if (NF > 1) { n = $0; sub(/^[^ ]+ /, "", n); names[id] = n }
            callee = (/^cfn=/) ? names[id] : ""
            next
        }
        /^calls=/ { if (callee == name) { c = $1; sub(/^calls=/, "", c); sum += c } callee = ""; next }
        END { print sum + 0 }' "$2"
}

# --- report helpers ---------------------------------------------------------------------

# fmt N: a rate, time or ratio for a table: no decimals from 100, one from 10, else two (three
# below 0.1); "—" when there is no value.
fmt() {
    [ -n "$1" ] || { echo "—"; return; }
    awk -v v="$1" 'BEGIN { if (v >= 100) printf "%.0f", v; else if (v >= 10) printf "%.1f", v; else if (v >= 0.1 || v == 0) printf "%.2f", v; else printf "%.3f", v }'
}

# ratio A B: A ÷ B to four decimals (empty when either is missing). Tables round it through
# `fmt`; `verdict` judges the four decimals, not the rounding.
ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; fi; }

# times N: a ratio for a table ("0.93×").
times() { if [ -n "$1" ]; then echo "$(fmt "$1")×"; else echo "—"; fi; }

# verdict VALUE OP LIMIT (OP: >=, <= or <): "met" or "NOT met" (empty when there is no value).
# Where the table's rounding would show the value on the other side of the limit, the value
# follows to three decimals: 0.9476 is "NOT met (0.948)" beside a ratio shown as 0.95×.
verdict() {
    [ -n "$1" ] || return 0
    awk -v v="$1" -v shown="$(fmt "$1")" -v op="$2" -v l="$3" '
        function meets(x) { return op == ">=" ? x >= l : op == "<=" ? x <= l : x < l }
        BEGIN { printf "%s%s\n", meets(v) ? "met" : "NOT met", meets(v) != meets(shown + 0) ? sprintf(" (%.3f)", v) : "" }'
}
