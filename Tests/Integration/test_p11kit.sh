# Registration with p11-kit through scripts/register-module.sh (which runs
# `p11keychain register`): once registered, p11-kit and its clients find the
# token with no --provider.
# The store is passed to the module through P11KEYCHAIN_DIR in the environment
# of each p11-kit client, which loads the module in-process.
# run.sh: alone: it registers the module in /etc/pkcs11/modules, which every p11-kit client reads.

REGISTER=$IT_REPO/scripts/register-module.sh
SYSTEM_MODULES=/etc/pkcs11/modules
MODULE_FILE_NAME=p11keychain.module

# module_block: the lines p11-kit list-modules prints for module "p11keychain".
module_block() {
    awk '/^[^ \t]/ { inside = ($1 == "p11keychain:") } inside' <<<"$RUN_OUT"
}

# store_one_certificate LABEL: a certificate in the token, written directly.
store_one_certificate() {
    make_cert "$1" "/CN=$1"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --write-object "$CERTS/$1.der" --type cert --label "$1"
}

test_system_registration_makes_p11kit_and_plain_p11tool_find_the_token() {
    local module
    protect_etc_pkcs11
    module=$(readlink -f "$P11KEYCHAIN_MODULE")
    store_one_certificate "p11kit-cert"

    ok "$REGISTER" --system "$P11KEYCHAIN_MODULE"
    [[ -f $SYSTEM_MODULES/$MODULE_FILE_NAME ]] ||
        fail "register-module.sh --system did not write $SYSTEM_MODULES/$MODULE_FILE_NAME: $(summarize "$RUN_OUT")"
    local content
    content=$(cat "$SYSTEM_MODULES/$MODULE_FILE_NAME")
    assert_line "$content" "^module: $module\$" "module line of $MODULE_FILE_NAME" 'module'
    assert_line "$content" '^critical: no$' "critical line of $MODULE_FILE_NAME" 'critical'

    ok p11-kit list-modules
    assert_line "$RUN_OUT" "^p11keychain: $module\$" "p11-kit list-modules after registration" 'p11keychain'
    assert_line "$(module_block)" '^ +token: login$' "token of module p11keychain in p11-kit list-modules" 'token'

    ok p11tool --list-tokens
    assert_contains "$RUN_OUT" "token=login" "p11tool --list-tokens with no --provider"
    # With more than one token (p11-kit-trust is usually there) p11tool asks
    # which one; naming it by URL still needs no --provider.
    ok p11tool --batch --list-all "pkcs11:token=login"
    assert_line "$RUN_OUT" 'token=login;.*object=p11kit-cert;type=cert' \
        "p11tool --list-all with no --provider lists the token's certificate" 'p11kit-cert|token=login'
}

test_unregistering_removes_the_module_from_p11kit() {
    protect_etc_pkcs11
    ok "$REGISTER" --system "$P11KEYCHAIN_MODULE"
    ok "$REGISTER" --unregister --system
    [[ ! -e $SYSTEM_MODULES/$MODULE_FILE_NAME ]] ||
        fail "register-module.sh --unregister --system left $SYSTEM_MODULES/$MODULE_FILE_NAME in place"
    ok p11-kit list-modules
    assert_no_line "$RUN_OUT" '^p11keychain:' "p11-kit list-modules after unregistering"
    # A second unregister has nothing to do and says so without failing.
    ok "$REGISTER" --unregister --system
}

test_user_registration_is_the_default_for_other_users() {
    [[ $(id -u) == 0 ]] || fail "needs root to run as user nobody"
    local home=$TEST_TMP/nobody-home bin=$TEST_TMP/bin file module system_before
    # The machine may already have a system registration (scripts/demo.sh makes one): the
    # user's registration must leave it exactly as it was.
    system_before=$(cat "$SYSTEM_MODULES/$MODULE_FILE_NAME" 2>/dev/null || echo absent)
    chmod 0755 "$TEST_TMP"
    mkdir -m 0755 "$bin"
    mkdir -m 0700 "$home"
    chown nobody:nogroup "$home" "$STORE"
    cp "$P11KEYCHAIN_MODULE" "$bin/libp11keychain-pkcs11.so"
    # The script runs `p11keychain register`: the one beside the module, as in a build directory.
    cp "${P11KEYCHAIN_CLI:-$(dirname "$P11KEYCHAIN_MODULE")/p11keychain}" "$bin/p11keychain"
    module=$bin/libp11keychain-pkcs11.so
    file=$home/.config/pkcs11/modules/$MODULE_FILE_NAME
    # The clone may live in a directory nobody cannot enter (a 0700 home): nobody runs a
    # copy of the script from a directory it can read.
    mkdir -m 0755 "$bin/scripts"
    install -m 0755 "$REGISTER" "$bin/scripts/register-module.sh"

    # No scope given: a user who is not root registers for themselves only.
    ok setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        env HOME="$home" XDG_CONFIG_HOME="$home/.config" "$bin/scripts/register-module.sh" "$module"
    [[ -f $file ]] || fail "register-module.sh run by nobody did not write $file: $(summarize "$RUN_OUT")"
    assert_line "$(cat "$file")" "^module: $module\$" "module line of the user's $MODULE_FILE_NAME" 'module'
    [[ $(cat "$SYSTEM_MODULES/$MODULE_FILE_NAME" 2>/dev/null || echo absent) == "$system_before" ]] ||
        fail "a user registration must not touch $SYSTEM_MODULES"

    ok setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        env HOME="$home" XDG_CONFIG_HOME="$home/.config" p11-kit list-modules
    assert_line "$RUN_OUT" "^p11keychain: $module\$" "p11-kit list-modules run by the user" 'p11keychain'
    assert_line "$(module_block)" '^ +token: login$' "token of module p11keychain for the user" 'token'
}

test_registering_a_missing_module_fails_and_writes_nothing() {
    local dir=$TEST_TMP/home/.config/pkcs11/modules
    refused "$REGISTER" --user "$TEST_TMP/no-such-module.so"
    assert_contains "$RUN_OUT" "no-such-module.so" "error message of register-module.sh"
    [[ ! -e $dir/$MODULE_FILE_NAME ]] || fail "register-module.sh wrote $dir/$MODULE_FILE_NAME for a missing module"
}
