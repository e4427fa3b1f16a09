# Java's SunPKCS11 provider (OpenJDK 17, Debian's openjdk-17-jre-headless) against the
# module: keytool -genkeypair / -importkeystore / -list / -delete on the token keystore, and
# a single-file program (tools/Sign.java) that signs with token keys and verifies in
# software. JVM start-up is slow (about a second), so each test launches few JVMs.

# java_setup: the token gets its PINs (keys are private objects) and $JAVA_CONFIG a
# SunPKCS11 configuration naming the module under test.
java_setup() {
    command -v keytool >/dev/null && command -v java >/dev/null ||
        fail "keytool/java not found (install openjdk-17-jre-headless; scripts/setup.sh does)"
    init_pins
    JAVA_CONFIG=$TEST_TMP/sunpkcs11.cfg
    printf 'name = p11keychain\nlibrary = %s\nslotListIndex = 0\n' "$P11KEYCHAIN_MODULE" >"$JAVA_CONFIG"
}

# jkeytool ARGS...: keytool on the token's PKCS11 keystore, logged in with the user PIN.
# English messages whatever the machine's locale, so the tests can read them.
jkeytool() {
    keytool -J-Duser.language=en -keystore NONE -storetype PKCS11 -addprovider SunPKCS11 \
        -providerArg "$JAVA_CONFIG" -storepass "$USER_PIN" "$@"
}

# jimport P12 PASSWORD: keytool -importkeystore of a PKCS#12 file into the token.
jimport() {
    keytool -J-Duser.language=en -importkeystore -noprompt -srckeystore "$1" -srcstoretype PKCS12 \
        -srcstorepass "$2" -destkeystore NONE -deststoretype PKCS11 -addprovider SunPKCS11 \
        -providerArg "$JAVA_CONFIG" -deststorepass "$USER_PIN"
}

# jsign ALIAS...: tools/Sign.java signs $TEST_TMP/data with each alias's key on the token
# and verifies in software; signatures and certificates land in $TEST_TMP/signed.
jsign() {
    mkdir -p "$TEST_TMP/signed"
    [[ -f $TEST_TMP/data ]] || head -c 1000 /dev/urandom >"$TEST_TMP/data"
    java -Duser.language=en "$IT_DIR/tools/Sign.java" "$JAVA_CONFIG" "$USER_PIN" "$TEST_TMP/data" \
        "$TEST_TMP/signed" "$@"
}

# assert_openssl_verifies ALIAS: openssl, outside Java, checks ALIAS's signature of
# $TEST_TMP/data with the public key of the certificate Sign.java read from the token.
assert_openssl_verifies() {
    openssl x509 -inform der -in "$TEST_TMP/signed/$1.der" -noout -pubkey >"$TEST_TMP/$1.pub"
    assert_sha256_signature_verifies "$TEST_TMP/$1.pub" "$TEST_TMP/signed/$1.sig" "$TEST_TMP/data" \
        "openssl's check of the signature Java made with $1"
}

# private_key_ids: the CKA_IDs (hex) of the token's private keys, one a line, sorted.
private_key_ids() {
    local out
    out=$(pk11 --login --pin "$USER_PIN" -O --type privkey 2>&1) ||
        fail "pkcs11-tool -O --type privkey failed: $(summarize "$out")"
    sed -nE 's/^ +ID: +([0-9a-f]+)$/\1/p' <<<"$out" | sort
}

# alias_hex ALIAS: the CKA_ID Java gives an entry (the alias's UTF-8 bytes), in hex.
alias_hex() { printf '%s' "$1" | xxd -p | tr -d '\n'; }

test_java_keytool_genkeypair_stores_rsa_and_ec_entries_that_list() {
    java_setup
    ok jkeytool -genkeypair -alias rsa-key -keyalg RSA -keysize 2048 -dname "CN=Java RSA" -validity 30
    ok jkeytool -genkeypair -alias ec-key -keyalg EC -groupname secp256r1 -dname "CN=Java EC" -validity 30
    ok jkeytool -list
    assert_contains "$RUN_OUT" "Your keystore contains 2 entries" "keytool -list after two -genkeypair"
    assert_line "$RUN_OUT" '^rsa-key, PrivateKeyEntry' "keytool -list entry rsa-key" 'Entry'
    assert_line "$RUN_OUT" '^ec-key, PrivateKeyEntry' "keytool -list entry ec-key" 'Entry'
    # One private key per entry, with the alias as CKA_ID: no orphan, no duplicate.
    assert_eq "$(printf '%s\n' "$(alias_hex ec-key)" "$(alias_hex rsa-key)" | sort)" "$(private_key_ids)" \
        "CKA_IDs of the token's private keys"
    # The certificate keytool wrote is stored, and its serial number is the DER INTEGER the
    # certificate carries (Java sent only the INTEGER's content bytes).
    ok pk11 --read-object --type cert --label rsa-key -o "$TEST_TMP/rsa.der"
    ok pk11 -O --type cert
    assert_line "$RUN_OUT" "^ +serial: +$(openssl x509 -inform der -in "$TEST_TMP/rsa.der" -noout -serial | cut -d= -f2)\$" \
        "serial of the certificate keytool stored, as pkcs11-tool reads it" 'serial:'
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --list-all-certs "pkcs11:token=$TOKEN_LABEL"
    assert_contains "$RUN_OUT" "Label: rsa-key" "p11tool's listing of the certificates keytool stored"
    assert_contains "$RUN_OUT" "Label: ec-key" "p11tool's listing of the certificates keytool stored"
}

test_java_signs_with_a_key_keytool_generated_and_software_verifies() {
    java_setup
    ok jkeytool -genkeypair -alias signer -keyalg EC -groupname secp256r1 -dname "CN=Java Signer" -validity 30
    ok jsign signer
    assert_line "$RUN_OUT" '^signed signer SHA256withECDSA with SunPKCS11-p11keychain, .* verified in software by SunEC$' \
        "Sign.java with the generated EC key" '^(signed|failed)'
    assert_openssl_verifies signer
}

test_java_keytool_importkeystore_copies_a_pkcs12_chain_that_then_signs() {
    java_setup
    # A CA and an RSA end-entity certificate it issued, in one PKCS#12 with the key.
    openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=Java Test CA" -days 30 \
        -addext basicConstraints=critical,CA:TRUE -keyout "$CERTS/ca.key" -out "$CERTS/ca.pem" 2>/dev/null
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=Imported Leaf" -keyout "$CERTS/leaf.key" \
        -out "$CERTS/leaf.csr" 2>/dev/null
    openssl x509 -req -in "$CERTS/leaf.csr" -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca.key" -set_serial 0x8f01 \
        -days 30 -out "$CERTS/leaf.pem" 2>/dev/null
    ok openssl pkcs12 -export -in "$CERTS/leaf.pem" -inkey "$CERTS/leaf.key" -certfile "$CERTS/ca.pem" \
        -name imported -passout pass:p12secret -out "$TEST_TMP/leaf.p12"

    ok jimport "$TEST_TMP/leaf.p12" p12secret
    assert_contains "$RUN_OUT" "1 entries successfully imported, 0 entries failed or cancelled" \
        "keytool -importkeystore of a PKCS#12 identity"
    # The end-entity certificate, byte for byte, under the alias; the CA certificate beside it.
    openssl x509 -in "$CERTS/leaf.pem" -outform der -out "$CERTS/leaf.der"
    ok pk11 --read-object --type cert --label imported -o "$TEST_TMP/leaf.read"
    assert_same_file "$CERTS/leaf.der" "$TEST_TMP/leaf.read" "certificate keytool imported"
    ok pk11 -O --type cert
    assert_contains "$RUN_OUT" "DN: CN=Java Test CA" "pkcs11-tool -O after importing a chain"
    assert_eq "$(alias_hex imported)" "$(private_key_ids)" "CKA_IDs of the token's private keys"

    ok jsign imported
    assert_line "$RUN_OUT" '^aliases: \[imported\]$' "aliases Sign.java sees" '^aliases'
    assert_line "$RUN_OUT" '^signed imported SHA256withRSA with SunPKCS11-p11keychain, 256 bytes, verified in software by SunRsaSign$' \
        "Sign.java with the imported RSA key" '^(signed|failed)'
    assert_openssl_verifies imported
}

test_java_keytool_delete_removes_the_key_and_its_certificate() {
    java_setup
    ok jkeytool -genkeypair -alias doomed -keyalg EC -groupname secp256r1 -dname "CN=Doomed" -validity 30
    ok jkeytool -delete -alias doomed
    ok jkeytool -list
    assert_contains "$RUN_OUT" "Your keystore contains 0 entries" "keytool -list after -delete"
    ok pk11 --login --pin "$USER_PIN" -O
    assert_not_contains "$RUN_OUT" "Object;" "objects left on the token after keytool -delete"
}

test_java_import_retried_after_a_refused_certificate_leaves_one_key_that_signs() {
    java_setup
    # Two self-signed certificates with one issuer name and serial but other keys: the token
    # holds the first, so the second (in a PKCS#12) is refused as a duplicate.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Clash" -set_serial 7 \
        -days 30 -keyout "$CERTS/first.key" -out "$CERTS/first.pem" 2>/dev/null
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Clash" -set_serial 7 \
        -days 30 -keyout "$CERTS/second.key" -out "$CERTS/second.pem" 2>/dev/null
    ok openssl pkcs12 -export -in "$CERTS/second.pem" -inkey "$CERTS/second.key" -name clash \
        -passout pass:p12secret -out "$TEST_TMP/second.p12"
    ok pk11 --write-object "$CERTS/first.pem" --type cert --label first

    # What the JDK does: it writes the key (CKA_ID = the alias), the certificate is refused,
    # keytool reports the entry as failed (and still exits 0), and the key stays.
    ok jimport "$TEST_TMP/second.p12" p12secret
    assert_contains "$RUN_OUT" "0 entries successfully imported, 1 entries failed or cancelled" \
        "keytool -importkeystore of a certificate the token refuses"
    assert_contains "$RUN_OUT" "CKR_ATTRIBUTE_VALUE_INVALID" "the error keytool reports"
    assert_eq "$(alias_hex clash)" "$(private_key_ids)" "private keys after the failed import"
    # The JDK lists only keys that have a certificate: the key is invisible to keytool.
    ok jkeytool -list
    assert_contains "$RUN_OUT" "Your keystore contains 0 entries" "keytool -list after the failed import"

    # A retry writes the same key again: the module keeps one.
    ok jimport "$TEST_TMP/second.p12" p12secret
    assert_contains "$RUN_OUT" "1 entries failed or cancelled" "keytool -importkeystore retried"
    assert_eq "$(alias_hex clash)" "$(private_key_ids)" "private keys after the second failed import"

    # Once the conflicting certificate is gone, the retry succeeds and the entry works.
    ok pk11 --delete-object --type cert --label first
    ok jimport "$TEST_TMP/second.p12" p12secret
    assert_contains "$RUN_OUT" "1 entries successfully imported, 0 entries failed or cancelled" \
        "keytool -importkeystore once the conflicting certificate is deleted"
    assert_eq "$(alias_hex clash)" "$(private_key_ids)" "private keys after the successful import"
    ok jsign clash
    assert_line "$RUN_OUT" '^signed clash SHA256withECDSA with SunPKCS11-p11keychain, .* verified in software by SunEC$' \
        "Sign.java with the key of the retried import" '^(signed|failed)'
    assert_openssl_verifies clash
}
