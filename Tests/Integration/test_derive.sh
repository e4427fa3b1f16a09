# Key derivation: ECDH on token key pairs agreeing with OpenSSL:
# pkcs11-tool --derive -m ECDH1-DERIVE on P-256/384/521 beside `openssl
# pkeyutl -derive`; `openssl pkeyutl -derive` with the token key through the
# libp11 engine; CKD_SHA*_KDF beside `openssl kdf X963KDF`; X25519 and X448
# through p11secret (pkcs11-tool 0.23 derives on Weierstrass curves only);
# the refusals: a point off the curve, a point of another curve, a key
# without CKA_DERIVE; nothing stored by a refused derivation. HKDF
# (CKM_HKDF_DERIVE) beside RFC 5869's vectors and `openssl kdf HKDF`.

source "$IT_DIR/secret_lib.sh"

# peer_key CURVE NAME: an OpenSSL key pair NAME.pem (genpkey CURVE: P-256...,
# X25519, X448) with its public key as DER SubjectPublicKeyInfo in NAME.der.
peer_key() {
    if [[ $1 == X* ]]; then
        openssl genpkey -algorithm "$1" -out "$TEST_TMP/$2.pem"
    else
        openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:$1" -out "$TEST_TMP/$2.pem"
    fi
    openssl pkey -in "$TEST_TMP/$2.pem" -pubout -outform der -out "$TEST_TMP/$2.der"
}

# raw_public NAME BYTES: the last BYTES of NAME.der (the point, or u), in hex.
raw_public() { tail -c "$2" "$TEST_TMP/$1.der" | xxd -p | tr -d '\n'; }

# openssl_z PEER_PEM TOKEN_PUB_PEM: the shared secret OpenSSL computes, in hex.
openssl_z() {
    openssl pkeyutl -derive -inkey "$1" -peerkey "$2" -out "$TEST_TMP/z.openssl" ||
        fail "openssl pkeyutl -derive failed with $(basename "$1") and $(basename "$2")"
    hex_of "$TEST_TMP/z.openssl"
}

# derived_value: the "value" line p11secret derive printed ($RUN_OUT).
derived_value() { awk '$1 == "value" { print $2 }' <<<"$RUN_OUT"; }

test_ecdh_through_pkcs11tool_derive_agrees_with_openssl_pkeyutl_on_each_curve() {
    secret_setup
    local spec curve name id
    for spec in prime256v1:P-256:01 secp384r1:P-384:02 secp521r1:P-521:03; do
        IFS=: read -r curve name id <<<"$spec"
        ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "EC:$curve" --usage-derive --id "$id" --label "ecdh-$curve"
        pubkey_pem "$id" "$TEST_TMP/token-$id.pem"
        peer_key "$name" "peer-$id"
        # pkcs11-tool reads the peer's SubjectPublicKeyInfo and sends its
        # point (CKD_NULL); it writes the derived key's CKA_VALUE.
        ok pk11 --login --pin "$USER_PIN" --derive -m ECDH1-DERIVE --id "$id" \
            -i "$TEST_TMP/peer-$id.der" -o "$TEST_TMP/z-$id"
        assert_eq "$(openssl_z "$TEST_TMP/peer-$id.pem" "$TEST_TMP/token-$id.pem")" "$(hex_of "$TEST_TMP/z-$id")" \
            "pkcs11-tool --derive -m ECDH1-DERIVE on $name, beside openssl pkeyutl -derive"
    done
    # The cofactor variant gives the same on these curves (cofactor 1).
    # (After the others: SoftHSM2 2.6.1 lacks it.)
    ok pk11 --login --pin "$USER_PIN" --derive -m ECDH1-COFACTOR-DERIVE --id 01 \
        -i "$TEST_TMP/peer-01.der" -o "$TEST_TMP/z-01-cofactor"
    assert_same_file "$TEST_TMP/z-01" "$TEST_TMP/z-01-cofactor" "pkcs11-tool --derive -m ECDH1-COFACTOR-DERIVE on P-256"
}

test_openssl_pkeyutl_derives_with_a_token_key_through_the_libp11_engine() {
    secret_setup
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --usage-derive --id 21 --label engine-ecdh
    pubkey_pem 21 "$TEST_TMP/token.pem"
    peer_key P-256 peer
    openssl pkey -in "$TEST_TMP/peer.pem" -pubout -out "$TEST_TMP/peer.pub"
    local conf
    conf=$(engine_conf)
    # OpenSSL's ECDH with the token's private key (C_DeriveKey, CKD_NULL, through libp11).
    ok env OPENSSL_CONF="$conf" openssl pkeyutl -derive -engine pkcs11 -keyform engine \
        -inkey "$(key_url engine-ecdh)" -peerform PEM -peerkey "$TEST_TMP/peer.pub" -out "$TEST_TMP/z.engine"
    assert_eq "$(openssl_z "$TEST_TMP/peer.pem" "$TEST_TMP/token.pem")" "$(hex_of "$TEST_TMP/z.engine")" \
        "openssl pkeyutl -derive -engine pkcs11 with the token key, beside openssl's own ECDH from the peer's side"
}

test_ecdh_with_the_x963_kdfs_agrees_with_openssl_kdf() {
    secret_setup
    local public z shared kdf len expected
    ok secret keypair p256 kdf-key
    public=$(awk '$1 == "public" { print $2 }' <<<"$RUN_OUT")
    assert_eq 130 "${#public}" "hex digits of the uncompressed P-256 point p11secret read (CKA_EC_POINT)"
    printf '%s' "$public" | xxd -r -p | cat <(printf '3059301306072a8648ce3d020106082a8648ce3d030107034200' | xxd -r -p) - >"$TEST_TMP/token.der"
    openssl pkey -pubin -inform der -in "$TEST_TMP/token.der" -out "$TEST_TMP/token.pem" ||
        fail "openssl could not read the token's P-256 point as a public key"
    peer_key P-256 peer
    z=$(openssl_z "$TEST_TMP/peer.pem" "$TEST_TMP/token.pem")
    ok secret derive ecdh kdf-key "$(raw_public peer 65)" z-null 32 kdf=null
    assert_eq "$z" "$(derived_value)" "C_DeriveKey (ECDH, CKD_NULL) beside openssl pkeyutl -derive"
    shared=$(random_hex 20)
    for kdf in SHA1:48 SHA224:28 SHA256:32 SHA384:64 SHA512:80; do
        len=${kdf#*:}
        kdf=${kdf%%:*}
        expected=$(openssl kdf -keylen "$len" -binary -kdfopt "digest:$kdf" -kdfopt "hexsecret:$z" -kdfopt "hexinfo:$shared" X963KDF | xxd -p | tr -d '\n')
        ok secret derive ecdh kdf-key "$(raw_public peer 65)" "z-$kdf" "$len" "kdf=${kdf,,}" shared="$shared"
        assert_eq "$expected" "$(derived_value)" "C_DeriveKey (ECDH, CKD_${kdf}_KDF, $len bytes, shared data) beside openssl kdf X963KDF"
    done
}

test_x25519_and_x448_derive_agrees_with_openssl() {
    secret_setup
    local spec curve name bytes prefix public
    for spec in x25519:X25519:32:302a300506032b656e032100 x448:X448:56:3042300506032b656f033900; do
        IFS=: read -r curve name bytes prefix <<<"$spec"
        ok secret keypair "$curve" "$curve-key"
        public=$(awk '$1 == "public" { print $2 }' <<<"$RUN_OUT")
        assert_eq $((bytes * 2)) "${#public}" "hex digits of the $name public key (CKA_EC_POINT, RFC 7748 u)"
        printf '%s%s' "$prefix" "$public" | xxd -r -p >"$TEST_TMP/$curve-token.der"
        openssl pkey -pubin -inform der -in "$TEST_TMP/$curve-token.der" -out "$TEST_TMP/$curve-token.pem" ||
            fail "openssl could not read the token's $name public key"
        peer_key "$name" "$curve-peer"
        ok secret derive ecdh "$curve-key" "$(raw_public "$curve-peer" "$bytes")" "$curve-z" "$bytes"
        assert_eq "$(openssl_z "$TEST_TMP/$curve-peer.pem" "$TEST_TMP/$curve-token.pem")" "$(derived_value)" \
            "C_DeriveKey (ECDH, $name) beside openssl pkeyutl -derive"
    done
}

test_ecdh_with_a_bad_point_or_a_key_without_derive_is_refused_and_stores_nothing() {
    secret_setup
    local point bad other before
    ok secret keypair p256 good
    peer_key P-256 peer
    point=$(raw_public peer 65)
    # The last byte of y changed: the point is not on the curve.
    bad=${point:0:128}$(printf '%02x' $(((0x${point:128:2} + 1) % 256)))
    before=$(pk11 --login --pin "$USER_PIN" -O --type secrkey 2>&1 | grep -c '^Secret Key Object' || true)
    refused secret derive ecdh good "$bad" off-curve 32 token=1
    assert_line "$RUN_OUT" 'C_DeriveKey returned (CKR_DOMAIN_PARAMS_INVALID|CKR_ARGUMENTS_BAD)' "C_DeriveKey (ECDH) with a point off the curve"
    # A P-384 point for a P-256 key.
    peer_key P-384 peer384
    other=$(raw_public peer384 97)
    refused secret derive ecdh good "$other" other-curve 32 token=1
    assert_line "$RUN_OUT" 'C_DeriveKey returned (CKR_DOMAIN_PARAMS_INVALID|CKR_ARGUMENTS_BAD)' "C_DeriveKey (ECDH) of a P-256 key with a P-384 point"
    # A key pair generated for signing only (pkcs11-tool's EC default: no CKA_DERIVE).
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --usage-sign --id 09 --label sign-only
    refused secret derive ecdh sign-only "$point" not-permitted 32 token=1
    assert_contains "$RUN_OUT" "C_DeriveKey returned CKR_KEY_FUNCTION_NOT_PERMITTED" "C_DeriveKey with a key whose CKA_DERIVE is FALSE"
    assert_eq "$before" "$(pk11 --login --pin "$USER_PIN" -O --type secrkey 2>&1 | grep -c '^Secret Key Object' || true)" \
        "secret keys on the token after three refused derivations"
}

# openssl_hkdf DIGEST LENGTH KEY_HEX [-kdfopt OPT]...: HKDF by `openssl kdf`, in hex.
openssl_hkdf() {
    local digest=$1 len=$2 key=$3
    shift 3
    openssl kdf -keylen "$len" -binary -kdfopt "digest:$digest" -kdfopt "hexkey:$key" "$@" HKDF | xxd -p | tr -d '\n'
}

test_hkdf_derive_agrees_with_rfc5869_and_openssl_kdf() {
    secret_setup
    # RFC 5869 A.1 (SHA-256, salt and info) and A.3 (no salt, no info).
    local ikm=0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b
    ok secret create ikm generic "$ikm" private=1 derive=1
    ok secret hkdf ikm okm-a1 42 prf=sha256 salt=000102030405060708090a0b0c info=f0f1f2f3f4f5f6f7f8f9
    assert_eq 3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865 "$(derived_value)" \
        "C_DeriveKey (CKM_HKDF_DERIVE) of RFC 5869 test case A.1"
    ok secret hkdf ikm okm-a3 42 prf=sha256
    assert_eq 8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8 "$(derived_value)" \
        "C_DeriveKey (CKM_HKDF_DERIVE, CKF_HKDF_SALT_NULL) of RFC 5869 test case A.3"

    local key salt info prf
    key=$(random_hex 40)
    salt=$(random_hex 16)
    info=$(random_hex 24)
    ok secret create base generic "$key" private=1 derive=1
    for prf in SHA1 SHA256 SHA384 SHA512; do
        ok secret hkdf base "okm-$prf" 100 "prf=${prf,,}" salt="$salt" info="$info"
        assert_eq "$(openssl_hkdf "$prf" 100 "$key" -kdfopt "hexsalt:$salt" -kdfopt "hexinfo:$info")" "$(derived_value)" \
            "C_DeriveKey (CKM_HKDF_DERIVE, $prf, 100 bytes) beside openssl kdf HKDF"
    done
    # Extract only (the PRK), expand only, and the salt taken from a key.
    ok secret hkdf base prk 32 salt="$salt" expand=0
    assert_eq "$(openssl_hkdf SHA256 32 "$key" -kdfopt mode:EXTRACT_ONLY -kdfopt "hexsalt:$salt")" "$(derived_value)" \
        "C_DeriveKey (CKM_HKDF_DERIVE, extract only) beside openssl kdf -kdfopt mode:EXTRACT_ONLY"
    ok secret hkdf base expanded 64 info="$info" extract=0
    assert_eq "$(openssl_hkdf SHA256 64 "$key" -kdfopt mode:EXPAND_ONLY -kdfopt "hexinfo:$info")" "$(derived_value)" \
        "C_DeriveKey (CKM_HKDF_DERIVE, expand only) beside openssl kdf -kdfopt mode:EXPAND_ONLY"
    ok secret create salt-key generic "$salt" private=1 derive=1
    ok secret hkdf base from-salt-key 48 salt=key:salt-key info="$info"
    assert_eq "$(openssl_hkdf SHA256 48 "$key" -kdfopt "hexsalt:$salt" -kdfopt "hexinfo:$info")" "$(derived_value)" \
        "C_DeriveKey (CKM_HKDF_DERIVE, CKF_HKDF_SALT_KEY) beside openssl kdf HKDF"
    # Neither extract nor expand: the spec's CKR_MECHANISM_PARAM_INVALID.
    refused secret hkdf base nothing 32 extract=0 expand=0
    assert_contains "$RUN_OUT" "C_DeriveKey returned CKR_MECHANISM_PARAM_INVALID" "CKM_HKDF_DERIVE with bExtract and bExpand FALSE"
    # More than 255 blocks (RFC 5869 §2.3) is refused.
    refused secret hkdf base too-long $((255 * 32 + 1))
    assert_contains "$RUN_OUT" "C_DeriveKey returned CKR_" "CKM_HKDF_DERIVE of 8161 bytes with SHA-256"
    # A base key without CKA_DERIVE.
    ok secret create no-derive generic "$key" private=1 derive=0 sign=1
    refused secret hkdf no-derive refused 32
    assert_contains "$RUN_OUT" "C_DeriveKey returned CKR_KEY_FUNCTION_NOT_PERMITTED" "CKM_HKDF_DERIVE from a key whose CKA_DERIVE is FALSE"
}
