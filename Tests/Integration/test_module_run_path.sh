# The release module carries no run path (scripts/ld-static-libstdcxx.sh drops SwiftPM's
# -rpath=$ORIGIN, docs/ARCHITECTURE.md §11.1): its dependencies are the system's, so a host's
# dlopen neither searches the module's directory for them first nor takes a library planted
# beside the module. A release module only (the test command's): debug builds keep theirs.

test_module_has_no_run_path() {
    ok readelf -d "$P11KEYCHAIN_MODULE"
    assert_line "$RUN_OUT" 'NEEDED.*libsqlite3' "the module's dynamic section (readelf -d)"
    assert_no_line "$RUN_OUT" '\((RUNPATH|RPATH)\)' "the module's dynamic section (readelf -d)"
}

test_a_library_beside_the_module_is_not_loaded_in_its_place() {
    # A copy of the module in a directory that also holds a "libsqlite3.so.0" which is not
    # one: with $ORIGIN in its run path, dlopen would take it and fail.
    local dir=$TEST_TMP/planted
    mkdir -p "$dir"
    cp "$P11KEYCHAIN_MODULE" "$dir/libp11keychain-pkcs11.so"
    printf 'not a library\n' >"$dir/libsqlite3.so.0"
    make_cert planted "/CN=Planted Library"
    ok pkcs11-tool --module "$dir/libp11keychain-pkcs11.so" \
        --write-object "$CERTS/planted.der" --type cert --label planted
    ok pkcs11-tool --module "$dir/libp11keychain-pkcs11.so" --list-objects --type cert
    assert_contains "$RUN_OUT" "planted" "the certificate listed through the copied module"
}
