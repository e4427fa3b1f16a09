# A store the process may read but not write is served read-only
# (CKF_WRITE_PROTECTED): reads work, writes fail with a clear CK_RV, the host
# process keeps running and the store is left exactly as it was.
#
# Root ignores file permissions, so the module runs as user nobody here.

# as_nobody CMD...: CMD as user nobody, with the test's environment.
as_nobody() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}

# store_fingerprint: names, modes and contents of the store's files.
store_fingerprint() {
    (cd "$STORE" && find . -printf '%p %m %s\n' | sort && find . -type f -exec sha256sum {} + | sort)
}

# make_store_read_only: gives the store to nobody, then takes its write permission away.
make_store_read_only() {
    chown -R nobody:nogroup "$STORE"
    find "$STORE" -type f -exec chmod 0400 {} +
    chmod 0500 "$STORE"
}

test_read_only_store_is_served_write_protected_and_left_intact() {
    [[ $(id -u) == 0 ]] || fail "needs root to run the module as user nobody"
    local before bin=$TEST_TMP/bin out=$TEST_TMP/out
    # Everything nobody runs or reads must be reachable by nobody.
    chmod 0755 "$TEST_TMP" "$CERTS"
    mkdir -m 0755 "$bin"
    mkdir -m 0777 "$out"
    cp "$P11KEYCHAIN_MODULE" "$bin/module.so"
    cp "$P11DRIVE" "$bin/p11drive"
    export P11KEYCHAIN_MODULE=$bin/module.so

    make_cert ro "/CN=Read Only"
    make_cert extra "/CN=Never Written"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --write-object "$CERTS/ro.der" --type cert --label ro
    ok "$bin/p11drive" import --count 3 --prefix R
    make_store_read_only
    before=$(store_fingerprint)

    ok as_nobody pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L
    assert_line "$RUN_OUT" '^ +token label +: login$' "pkcs11-tool -L on a read-only store" 'token label'
    assert_line "$RUN_OUT" '^ +token flags +:.*readonly' "token flags (CKF_WRITE_PROTECTED) on a read-only store" \
        'token flags'

    ok as_nobody pkcs11-tool --module "$P11KEYCHAIN_MODULE" --read-object --type cert --label ro -o "$out/ro.der"
    assert_same_file "$CERTS/ro.der" "$out/ro.der" "certificate read from a read-only store"
    ok as_nobody "$bin/p11drive" count
    assert_eq 4 "$RUN_OUT" "certificates listed from a read-only store"

    # A read-write session on a write-protected token: CKR_TOKEN_WRITE_PROTECTED.
    refused as_nobody pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --write-object "$CERTS/extra.der" --type cert --label extra
    assert_contains "$RUN_OUT" "CKR_TOKEN_WRITE_PROTECTED" "pkcs11-tool --write-object on a read-only store"
    refused as_nobody "$bin/p11drive" import --count 1 --prefix X
    assert_contains "$RUN_OUT" "CKR_TOKEN_WRITE_PROTECTED" "C_OpenSession(CKF_RW_SESSION) on a read-only store"
    refused as_nobody pkcs11-tool --module "$P11KEYCHAIN_MODULE" --delete-object --type cert --label ro
    assert_contains "$RUN_OUT" "CKR_TOKEN_WRITE_PROTECTED" "pkcs11-tool --delete-object on a read-only store"

    assert_eq "$before" "$(store_fingerprint)" "store files before and after the refused writes"
    assert_integrity
    # Counted as nobody: root refuses a store another uid owns.
    ok as_nobody "$bin/p11drive" count
    assert_eq 4 "$RUN_OUT" "certificates in the store afterwards"
}

test_missing_store_directory_that_cannot_be_created_fails_cleanly() {
    [[ $(id -u) == 0 ]] || fail "needs root to run the module as user nobody"
    local parent=$TEST_TMP/locked bin=$TEST_TMP/bin
    chmod 0755 "$TEST_TMP" "$CERTS"
    mkdir -m 0755 "$bin" "$parent" # owned by root: nobody cannot create the store in it
    cp "$P11KEYCHAIN_MODULE" "$bin/module.so"
    export P11KEYCHAIN_MODULE=$bin/module.so P11KEYCHAIN_DIR=$parent/store

    # Loading must not crash the host; the module may offer no token or a
    # read-only empty one, but never pretend a write worked.
    run as_nobody pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L
    ((RUN_STATUS < 128)) || fail "pkcs11-tool -L with an uncreatable store was $(describe_status "$RUN_STATUS")"
    make_cert nostore "/CN=No Store"
    refused as_nobody pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --write-object "$CERTS/nostore.der" --type cert --label nostore
    [[ ! -e $parent/store ]] || fail "the store directory $parent/store appeared although nobody may not create it"
}
