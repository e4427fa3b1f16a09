# The module is a guest in other programs' processes: it must load and work
# where no Swift toolchain is installed, and must not pull in the Swift runtime.

test_module_links_no_swift_runtime_or_foundation() {
    ok ldd "$P11KEYCHAIN_MODULE"
    assert_no_line "$RUN_OUT" 'libswift|libFoundation|libdispatch|libicu|libBlocksRuntime' \
        "libraries the module needs (ldd)"
    assert_no_line "$RUN_OUT" 'not found' "libraries the module needs (ldd)"
}

test_module_loads_and_works_with_the_swift_toolchain_hidden() {
    local toolchain script
    [[ $(id -u) == 0 ]] || fail "needs root to hide the toolchain in a mount namespace"
    toolchain=$(swift_toolchain_dir)
    case $toolchain in
    / | /usr | /usr/*) fail "the Swift toolchain is installed in $toolchain, among the system's own files: cannot hide it alone" ;;
    esac
    make_cert nt "/CN=No Toolchain"
    # Inside a private mount namespace an empty tmpfs covers the toolchain; the
    # module then has to manage with the system's libraries alone.
    script='
        set -e
        if [ -n "$TOOLCHAIN" ]; then
            mount -t tmpfs none "$TOOLCHAIN"
            if ls "$TOOLCHAIN"/usr/lib/swift/linux/libswiftCore.so 2>/dev/null; then
                echo "the toolchain is still visible"; exit 1
            fi
            echo "hid $TOOLCHAIN"
        else
            echo "no Swift toolchain on this machine: nothing to hide"
        fi
        if ldd "$M" | grep "not found"; then exit 1; fi
        pkcs11-tool --module "$M" -L
        pkcs11-tool --module "$M" --write-object "$DIR/nt.der" --type cert --label nt
        pkcs11-tool --module "$M" --read-object --type cert --label nt -o "$DIR/nt.read.der"
        cmp "$DIR/nt.der" "$DIR/nt.read.der"
        echo "round trip ok"
    '
    ok env TOOLCHAIN="$toolchain" M="$P11KEYCHAIN_MODULE" DIR="$CERTS" \
        unshare --mount --fork sh -c "$script"
    assert_contains "$RUN_OUT" "token label        : login" "pkcs11-tool -L with the toolchain hidden"
    assert_contains "$RUN_OUT" "round trip ok" "certificate write and read with the toolchain hidden"
}
