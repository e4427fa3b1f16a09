# `p11keychain register --system --trust` on a machine where the package (or `make install`)
# has put p11keychain.module in p11-kit's own directory: one registration of the library, and
# it is a trust source. p11-kit loads a library once; given the package's p11keychain.module
# and a p11keychain-trust.module it keeps the package's and drops the trust policy, so the
# trust registration takes the package file's name in /etc/pkcs11/modules, which overrides it.
#
# In a private mount namespace: a directory holding a plain p11keychain.module (as the package
# writes it) over /usr/share/p11-kit/modules, an empty /etc/pkcs11; nothing of the machine's
# p11-kit configuration is touched.
# run.sh: alone: it installs into /usr and registers in /etc/pkcs11/modules.

CLI=$(dirname "$P11KEYCHAIN_MODULE")/p11keychain
[[ -x $CLI ]] || CLI=$IT_REPO/.build/debug/p11keychain

test_register_trust_beside_the_packages_registration_makes_one_trust_source() {
    [[ $(id -u) == 0 ]] || fail "needs root for a private mount namespace"
    mkdir -p "$TEST_TMP/package-modules"
    printf 'module: %s\ncritical: no\n' "$P11KEYCHAIN_MODULE" >"$TEST_TMP/package-modules/p11keychain.module"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Packaged Anchor CA" -days 30 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$TEST_TMP/ca.key" -out "$TEST_TMP/ca.pem" 2>/dev/null || fail "openssl could not make the CA"
    ok "$CLI" add-trusted-cert "$TEST_TMP/ca.pem"
    local script='
        set -e
        mount --bind "$PACKAGE_MODULES" /usr/share/p11-kit/modules
        mkdir -p /etc/pkcs11
        mount -t tmpfs none /etc/pkcs11
        "$CLI" register --system --trust --module "$P11KEYCHAIN_MODULE"
        echo "== /etc/pkcs11/modules:"; ls /etc/pkcs11/modules
        for f in /etc/pkcs11/modules/*; do echo "== $f:"; cat "$f"; done
        echo "== p11-kit list-modules:"; p11-kit list-modules | grep -E "^[^ ]"
        echo "== trust list:"; trust list --filter=ca-anchors
    '
    ok env PACKAGE_MODULES="$TEST_TMP/package-modules" CLI="$CLI" unshare --mount --fork bash -c "$script"
    local out=$RUN_OUT
    assert_eq "p11keychain.module" "$(sed -n '/^== \/etc\/pkcs11\/modules:$/{n;p}' <<<"$out")" \
        "the files register --system --trust wrote beside the package's"
    assert_line "$out" '^trust-policy: yes$' "the registration that overrides the package's" "trust-policy"
    assert_eq "1" "$(grep -c "^p11keychain: " <<<"$out")" "p11-kit list-modules: the library registered once"
    grep -qF "    label: Packaged Anchor CA" <<<"$out" ||
        fail "trust list --filter=ca-anchors does not list the keychain's anchor: $(summarize "$out")"
}
