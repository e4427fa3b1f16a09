# A store another user made or may write is refused, and the tools show why
#: pkcs11-tool gets CKR_TOKEN_NOT_PRESENT with the reason in
# the trace, p11tool lists no token and the trace names the file and the fix, the
# CLI prints the reason. A store with a planted trigger is refused the same way,
# and the trigger never runs.

# traced CMD...: runs CMD with the module's trace on (standard error).
traced() {
    run env P11KEYCHAIN_DEBUG=1 "$@"
}

test_a_store_others_may_write_or_own_is_refused_with_the_reason() {
    make_cert keep "/CN=Kept In A Loose Store"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --write-object "$CERTS/keep.der" --type cert --label keep
    local db
    db=$(store_file)

    chmod 0666 "$db"
    traced pkcs11-tool --module "$P11KEYCHAIN_MODULE" --slot 0 -O
    [[ $RUN_STATUS != 0 ]] || fail "pkcs11-tool -O on a 0666 store succeeded: $(summarize "$RUN_OUT")"
    assert_contains "$RUN_OUT" "CKR_TOKEN_NOT_PRESENT" "pkcs11-tool -O on a 0666 store"
    assert_contains "$RUN_OUT" "$db is writable by its group and others" "pkcs11-tool's trace on a 0666 store"
    assert_contains "$RUN_OUT" "chmod go-w $db" "pkcs11-tool's trace on a 0666 store"
    traced p11tool --provider "$P11KEYCHAIN_MODULE" --list-all "pkcs11:"
    assert_contains "$RUN_OUT" "$db is writable by its group and others" "p11tool's trace on a 0666 store"

    chmod 0600 "$db"
    [[ $(id -u) == 0 ]] || fail "needs root to give the store to another user"
    chown nobody "$db"
    traced pkcs11-tool --module "$P11KEYCHAIN_MODULE" --slot 0 -O
    assert_contains "$RUN_OUT" "CKR_TOKEN_NOT_PRESENT" "pkcs11-tool -O on a store owned by nobody"
    assert_contains "$RUN_OUT" "$db belongs to uid $(id -u nobody)" "pkcs11-tool's trace on a store owned by nobody"
    local cli=${P11KEYCHAIN_CLI:-$(dirname "$P11KEYCHAIN_MODULE")/p11keychain}
    [[ -x $cli ]] || cli=$IT_REPO/.build/debug/p11keychain
    run "$cli" dump-keychain
    [[ $RUN_STATUS != 0 ]] || fail "p11keychain dump-keychain on a store owned by nobody succeeded: $(summarize "$RUN_OUT")"
    assert_contains "$RUN_OUT" "belongs to uid $(id -u nobody)" "p11keychain dump-keychain on a store owned by nobody"

    # Given back, it is used as before: nothing was lost.
    chown root "$db"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -O --type cert
    assert_line "$RUN_OUT" '^ +label: +keep$' "certificate after the store was given back" 'label'
}

test_a_planted_trigger_is_refused_and_never_runs() {
    make_cert first "/CN=Before The Trigger"
    make_cert second "/CN=After The Trigger"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --write-object "$CERTS/first.der" --type cert --label first
    local db
    db=$(store_file)
    ok sqlite3 "$db" "CREATE TABLE copies (attributes BLOB); CREATE TRIGGER copy AFTER INSERT ON objects BEGIN INSERT INTO copies VALUES (new.attributes); END;"
    traced pkcs11-tool --module "$P11KEYCHAIN_MODULE" --slot 0 --write-object "$CERTS/second.der" --type cert --label second
    [[ $RUN_STATUS != 0 ]] || fail "a write to a store with a planted trigger succeeded"
    assert_contains "$RUN_OUT" "holds trigger 'copy'" "pkcs11-tool's trace on a store with a planted trigger"
    ok sqlite3 "$db" "SELECT count(*) FROM copies"
    assert_eq 0 "$RUN_OUT" "rows the planted trigger copied"
}
