# Shared by the bench scripts (sourced): where the two modules under test are.
# The sourcing script defines `log`, `fail` and `$root` (the repository).

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
