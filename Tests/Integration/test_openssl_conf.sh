# The module's OpenSSL work runs in a library context of its own
# (ARCHITECTURE.md §6.9): no host OpenSSL configuration or provider order reaches it. A host
# (here pkcs11-tool) whose OPENSSL_CONF activates only the null provider, ahead of and
# instead of the default one, leaves OpenSSL's default context unable to hash, derive
# or sign; the module must still log in (PBKDF2), sign and generate keys, and the
# signature must verify. pkcs11-tool itself needs no OpenSSL algorithm for these.
# Before the fix C_Login failed with CKR_DEVICE_ERROR under this configuration.

# write_null_provider_conf FILE: a configuration whose default context holds the
# null provider alone.
write_null_provider_conf() {
    cat >"$1" <<'CONF'
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
null = null_sect
[null_sect]
activate = 1
CONF
}

test_module_logs_in_signs_and_generates_keys_under_a_host_openssl_conf_without_the_default_provider() {
    local conf=$TEST_TMP/null-only.cnf
    write_null_provider_conf "$conf"
    # The configuration is hostile indeed: OpenSSL itself cannot hash under it.
    refused env OPENSSL_CONF="$conf" openssl dgst -sha256 "$conf"

    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 01 --label before
    printf '0123456789abcdef0123456789abcdef' >"$TEST_TMP/hash.bin"

    note "C_Login, C_Sign and C_GenerateKeyPair under OPENSSL_CONF=null-only"
    ok env OPENSSL_CONF="$conf" pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
        --login --pin "$USER_PIN" --sign --mechanism ECDSA --id 01 \
        --input-file "$TEST_TMP/hash.bin" --output-file "$TEST_TMP/sig.bin" --signature-format openssl
    ok env OPENSSL_CONF="$conf" pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
        --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 02 --label during
    assert_contains "$RUN_OUT" "Key pair generated" "key generation under the hostile configuration"
    ok env OPENSSL_CONF="$conf" pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
        --login --pin "$USER_PIN" --sign --mechanism ECDSA --id 02 \
        --input-file "$TEST_TMP/hash.bin" --output-file "$TEST_TMP/sig2.bin" --signature-format openssl

    note "the signatures verify (OpenSSL in its normal configuration)"
    pubkey_pem 01 "$TEST_TMP/pub1.pem"
    ok openssl pkeyutl -verify -pubin -inkey "$TEST_TMP/pub1.pem" \
        -in "$TEST_TMP/hash.bin" -sigfile "$TEST_TMP/sig.bin"
    pubkey_pem 02 "$TEST_TMP/pub2.pem"
    ok openssl pkeyutl -verify -pubin -inkey "$TEST_TMP/pub2.pem" \
        -in "$TEST_TMP/hash.bin" -sigfile "$TEST_TMP/sig2.bin"
}

test_module_signs_with_rsa_under_a_host_openssl_conf_without_the_default_provider() {
    local conf=$TEST_TMP/null-only.cnf
    write_null_provider_conf "$conf"
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type rsa:2048 --id 03 --label rsa
    printf 'a message signed under a hostile configuration' >"$TEST_TMP/message.bin"
    ok env OPENSSL_CONF="$conf" pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
        --login --pin "$USER_PIN" --sign --mechanism SHA256-RSA-PKCS --id 03 \
        --input-file "$TEST_TMP/message.bin" --output-file "$TEST_TMP/sig.bin"
    ok pk11 --read-object --type pubkey --id 03 --output-file "$TEST_TMP/pub.der"
    ok openssl dgst -sha256 -keyform DER -verify "$TEST_TMP/pub.der" -signature "$TEST_TMP/sig.bin" \
        "$TEST_TMP/message.bin"
}
