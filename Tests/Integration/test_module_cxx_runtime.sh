# The Swift runtime inside the module is C++: GCC's C++ runtime and its support library (the
# unwinder) are linked into the module (scripts/ld-static-libstdcxx.sh, -static-libgcc,
# docs/ARCHITECTURE.md §11.1) so that a C host does not load libstdc++.so.6 or libgcc_s.so.1
# with it, and none of it is exported to the host. A release module only (the test
# command's): debug builds keep the shared libraries.

test_module_does_not_need_libstdcxx() {
    ok readelf -d "$P11KEYCHAIN_MODULE"
    assert_line "$RUN_OUT" 'NEEDED.*libsqlite3' "the module's needed libraries (readelf -d)"
    assert_no_line "$RUN_OUT" 'NEEDED.*libstdc\+\+' "the module's needed libraries (readelf -d)"
}

test_module_exports_no_cxx_symbols() {
    ok nm -D --defined-only "$P11KEYCHAIN_MODULE"
    assert_line "$RUN_OUT" ' T C_GetFunctionList$' "the module's exported symbols"
    assert_no_line "$RUN_OUT" ' _Z' "the module's exported symbols (C++ names)"
}

test_module_works_in_a_host_that_has_libstdcxx_loaded() {
    # A C++ host has its own libstdc++.so.6 in the process: the module's copy stays private.
    make_cert cxx "/CN=Cxx Host"
    ok env LD_PRELOAD=libstdc++.so.6 pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --write-object "$CERTS/cxx.der" --type cert --label cxx
    ok env LD_PRELOAD=libstdc++.so.6 pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --read-object --type cert --label cxx -o "$TEST_TMP/cxx.read.der"
    ok cmp "$CERTS/cxx.der" "$TEST_TMP/cxx.read.der"
}

test_module_does_not_need_libgcc_s() {
    ok readelf -d "$P11KEYCHAIN_MODULE"
    assert_line "$RUN_OUT" 'NEEDED.*libsqlite3' "the module's needed libraries (readelf -d)"
    assert_no_line "$RUN_OUT" 'NEEDED.*libgcc_s' "the module's needed libraries (readelf -d)"
    ok nm -D --defined-only "$P11KEYCHAIN_MODULE"
    assert_no_line "$RUN_OUT" ' _Unwind_' "the module's exported symbols (the unwinder's)"
}

test_module_works_in_a_host_that_has_libgcc_s_loaded() {
    # A host with GCC's shared unwinder in the process: the module's own copy stays private.
    make_cert gccs "/CN=Unwinder Host"
    ok env LD_PRELOAD=libgcc_s.so.1 pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --write-object "$CERTS/gccs.der" --type cert --label gccs
    ok env LD_PRELOAD=libgcc_s.so.1 pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --read-object --type cert --label gccs -o "$TEST_TMP/gccs.read.der"
    ok cmp "$CERTS/gccs.der" "$TEST_TMP/gccs.read.der"
}
