# libkeyutils is opened with dlopen when the session keyring is first used
# (KeychainCore/Keyutils.swift, docs/ARCHITECTURE.md §11.1), not linked: a host that loads the
# module and never uses the keyring does not load it. The keyring itself still works
# (test_session_unlock.sh drives it end to end).

test_module_does_not_need_libkeyutils() {
    ok readelf -d "$P11KEYCHAIN_MODULE"
    assert_line "$RUN_OUT" 'NEEDED.*libsqlite3' "the module's needed libraries (readelf -d)"
    assert_no_line "$RUN_OUT" 'NEEDED.*libkeyutils' "the module's needed libraries (readelf -d)"
}

test_a_host_that_lists_objects_does_not_load_libkeyutils() {
    make_cert keyring "/CN=No Keyring"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --write-object "$CERTS/keyring.der" --type cert --label keyring
    # LD_DEBUG=files names every library the dynamic loader brings in.
    ok env LD_DEBUG=files pkcs11-tool --module "$P11KEYCHAIN_MODULE" --list-objects --type cert
    assert_contains "$RUN_OUT" "keyring" "the certificate listed"
    assert_not_contains "$RUN_OUT" "libkeyutils" "the libraries loaded (LD_DEBUG=files)"
}
