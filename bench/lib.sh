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
