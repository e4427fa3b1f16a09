# Apple keychain items seen through PKCS#11: a generic and an internet
# password are data objects whose Apple attributes are the documented vendor
# attributes (p11/include/p11keychain.h, README "Apple keychain attributes on
# Linux"); the token sets the dates and keeps them read-only, and an item whose
# access control needs the PIN for each use never shows its value here.

# build_p11items: tools/p11items.c, in $TEST_TMP.
build_p11items() {
    P11ITEMS=$TEST_TMP/p11items
    gcc "${IT_TOOL_CFLAGS[@]}" -o "$P11ITEMS" "$IT_DIR/tools/p11items.c" -ldl ||
        fail "tools/p11items.c did not compile"
}

# items ARGS...: p11items on the module, logged in; output in $RUN_OUT.
items() { ok "$P11ITEMS" "$P11KEYCHAIN_MODULE" "$USER_PIN" "$@"; }

test_pkcs11tool_lists_generic_and_internet_passwords_as_data_objects() {
    init_pins
    build_p11items
    items generic com.example.api alice gen-secret
    items internet www.example.com bob inet-secret
    ok pk11 --login --pin "$USER_PIN" --list-objects --type data
    assert_eq 2 "$(grep -c '^Data object' <<<"$RUN_OUT" || true)" "data objects pkcs11-tool lists"
    assert_line "$RUN_OUT" "label: +'alice'" "the generic password's label" 'label'
    assert_line "$RUN_OUT" "application: +'com.example.api'" "the generic password's service" 'application'
    assert_line "$RUN_OUT" "application: +'www.example.com'" "the internet password's server" 'application'
    # Private: nothing shows without a login.
    ok pk11 --list-objects --type data
    assert_not_contains "$RUN_OUT" "Data object" "data objects listed without a login"
    ok pk11 --login --pin "$USER_PIN" --read-object --type data --label bob -o "$TEST_TMP/secret"
    assert_eq inet-secret "$(cat "$TEST_TMP/secret")" "the internet password's value read by pkcs11-tool"
}

test_the_documented_vendor_attributes_read_back_with_dates_set_by_the_token() {
    init_pins
    build_p11items
    local before
    before=$(($(date +%s) * 1000 - 1000))
    items internet www.example.com bob inet-secret
    items show bob
    local shown=$RUN_OUT
    for line in item-class=inet account=bob application=www.example.com accessible=cku \
        access-group=group.example synchronizable=TRUE protocol=htps port=443 path=/login \
        authentication-type=form security-domain=realm value=inet-secret access-control=absent; do
        assert_line "$shown" "^$line\$" "attribute $line" "${line%%=*}="
    done
    local created modified
    created=$(sed -n 's/^creation-date=//p' <<<"$shown")
    modified=$(sed -n 's/^modification-date=//p' <<<"$shown")
    ((created >= before && created <= before + 60000)) || fail "creation date $created is not about now ($before)"
    assert_eq "$created" "$modified" "modification date of a new item"
    items set-date bob
    assert_eq "rv=0x10" "$RUN_OUT" "C_SetAttributeValue of the creation date (CKR_ATTRIBUTE_READ_ONLY)"
}

test_the_same_internet_password_twice_is_refused_but_a_generic_one_for_the_server_is_not() {
    init_pins
    build_p11items
    items internet www.example.com bob one
    refused "$P11ITEMS" "$P11KEYCHAIN_MODULE" "$USER_PIN" internet www.example.com bob two
    assert_contains "$RUN_OUT" "failed C_CreateObject" "a second identical internet password"
    items generic www.example.com bob three
}

test_a_password_needing_the_pin_for_each_use_reads_as_sensitive() {
    init_pins
    build_p11items
    items generic com.example.vault protected-carol vault-secret
    items show protected-carol
    assert_line "$RUN_OUT" '^value=sensitive$' "the value of an item with user-presence access control" 'value='
    assert_line "$RUN_OUT" '^access-control=1$' "the stored access control flags" 'access-control='
    refused pk11 --login --pin "$USER_PIN" --read-object --type data --label protected-carol -o "$TEST_TMP/secret"
    [[ ! -s $TEST_TMP/secret ]] || fail "pkcs11-tool wrote the protected value"
}

test_the_cli_finds_a_synchronizable_password_that_a_pkcs11_application_stored() {
    init_pins
    build_p11items
    local cli dir
    for dir in "$(dirname "$P11KEYCHAIN_MODULE")" "$IT_REPO/.build/debug"; do
        [[ -x $dir/p11keychain ]] && { cli=$dir/p11keychain; break; }
    done
    [[ -n ${cli:-} ]] || fail "p11keychain not found beside the module or in the debug build"
    # p11items stores it with CKA_P11K_SYNCHRONIZABLE TRUE: Apple's query rule (only items
    # that are not synchronizable) is the SecItem calls', not the command line's.
    items generic com.example.sync alice sync-secret
    ok "$cli" find-generic-password -s com.example.sync -a alice -w --pin "$USER_PIN"
    assert_eq sync-secret "$RUN_OUT" "the password find-generic-password prints"
    ok "$cli" delete-generic-password -s com.example.sync --pin "$USER_PIN"
    ok pk11 --login --pin "$USER_PIN" --list-objects --type data
    assert_not_contains "$RUN_OUT" "Data object" "data objects left after delete-generic-password"
}
