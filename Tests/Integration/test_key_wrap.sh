# Key wrapping: pkcs11-tool --wrap/--unwrap with AES key wrap
# (RFC 3394) agreeing with the RFC's vector and `openssl enc -id-aes256-wrap`;
# AES key wrap with padding (RFC 5649, CKM_AES_KEY_WRAP_KWP and _PAD) through
# p11secret and pkcs11-tool; RSA-OAEP wrapping of an AES key under a token RSA
# key, both ways with OpenSSL; the refusals: a non-extractable key, a
# wrapping key without CKA_WRAP, garbage to unwrap. An unwrapped key then
# decrypts what the original encrypted.

source "$IT_DIR/secret_lib.sh"

# secret_key_count: the secret keys pkcs11-tool -O lists after login.
secret_key_count() {
    local out
    out=$(pk11 --login --pin "$USER_PIN" -O --type secrkey 2>&1) || fail "pkcs11-tool -O --type secrkey failed: $(summarize "$out")"
    grep -c '^Secret Key Object' <<<"$out" || true
}

# same_key_decrypts ORIGINAL_ID COPY_ID: what the key ORIGINAL_ID encrypts
# (AES-CBC-PAD, pkcs11-tool), the key COPY_ID decrypts to the same bytes.
same_key_decrypts() {
    local iv pt=$TEST_TMP/same-$1-$2
    iv=$(random_hex 16)
    head -c 777 /dev/urandom >"$pt"
    ok pk11 --login --pin "$USER_PIN" --encrypt -m AES-CBC-PAD --id "$1" --iv "$iv" -i "$pt" -o "$pt.ct"
    ok pk11 --login --pin "$USER_PIN" --decrypt -m AES-CBC-PAD --id "$2" --iv "$iv" -i "$pt.ct" -o "$pt.back"
    assert_same_file "$pt" "$pt.back" "key $2 decrypting what key $1 encrypted"
}

test_aes_key_wrap_through_pkcs11tool_matches_rfc3394_and_openssl_and_round_trips() {
    secret_setup
    # RFC 3394 §4.6: 256 bits of key data with a 256-bit KEK.
    local kek=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
    local key=00112233445566778899aabbccddeeff000102030405060708090a0b0c0d0e0f
    local wrapped=28c9f404c4b810f4cbccb35cfb87f8263f5786e2d80ed326cbc7f0e71a99f43bfb988b9b7a02dd21
    hex_to_file "$kek" "$TEST_TMP/kek.bin"
    hex_to_file "$key" "$TEST_TMP/key.bin"
    write_secret "$TEST_TMP/kek.bin" AES:32 01 kek
    write_secret "$TEST_TMP/key.bin" AES:32 02 target
    ok pk11 --login --pin "$USER_PIN" --wrap -m AES-KEY-WRAP --id 01 --application-id 02 -o "$TEST_TMP/wrapped"
    assert_eq "$wrapped" "$(hex_of "$TEST_TMP/wrapped")" "pkcs11-tool --wrap -m AES-KEY-WRAP of RFC 3394's §4.6 key"
    ok openssl enc -id-aes256-wrap -K "$kek" -iv A6A6A6A6A6A6A6A6 -in "$TEST_TMP/key.bin" -out "$TEST_TMP/wrapped.openssl"
    assert_same_file "$TEST_TMP/wrapped.openssl" "$TEST_TMP/wrapped" "pkcs11-tool --wrap beside openssl enc -id-aes256-wrap"

    # Unwrapped as a new key (pkcs11-tool: not extractable, no CKA_VALUE_LEN
    # with "AES:0"), it decrypts what the original encrypted.
    ok pk11 --login --pin "$USER_PIN" --unwrap -m AES-KEY-WRAP --id 01 -i "$TEST_TMP/wrapped" \
        --key-type AES:0 --application-label unwrapped --application-id 03
    assert_contains "$RUN_OUT" "Key unwrapped" "pkcs11-tool --unwrap -m AES-KEY-WRAP"
    same_key_decrypts 02 03
    same_key_decrypts 03 02
    # PKCS#11 3.0 §4.9: an unwrapped key was never local, and was once in the clear.
    ok secret info unwrapped
    assert_contains "$RUN_OUT" "local 0" "CKA_LOCAL of an unwrapped key"
    assert_contains "$RUN_OUT" "always-sensitive 0" "CKA_ALWAYS_SENSITIVE of an unwrapped key"
    assert_contains "$RUN_OUT" "never-extractable 0" "CKA_NEVER_EXTRACTABLE of an unwrapped key"
    local info=$RUN_OUT

    # The other way: a key OpenSSL wrapped unwraps to its value.
    local other
    other=$(random_hex 16)
    hex_to_file "$other" "$TEST_TMP/other.bin"
    ok openssl enc -id-aes256-wrap -K "$kek" -iv A6A6A6A6A6A6A6A6 -in "$TEST_TMP/other.bin" -out "$TEST_TMP/other.wrapped"
    ok pk11 --login --pin "$USER_PIN" --unwrap -m AES-KEY-WRAP --id 01 -i "$TEST_TMP/other.wrapped" \
        --key-type AES:0 --extractable --application-label from-openssl --application-id 04
    assert_eq "$other" "$(value_of from-openssl)" "CKA_VALUE of the key unwrapped from openssl enc -id-aes256-wrap"
    # (Last: SoftHSM2 2.6.1 leaves it 0.)
    assert_contains "$info" "value-len 32" "CKA_VALUE_LEN of the unwrapped AES-256 key"
}

test_aes_key_wrap_with_padding_matches_rfc5649_and_round_trips_keys_of_any_length() {
    secret_setup
    # RFC 5649 §6: a 192-bit KEK, 20 and 7 bytes of key data.
    local kek=5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8
    local key20=c37b7e6492584340bed12207808941155068f738 key7=466f7250617369
    local wrap20=138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a wrap7=afbeb0f07dfbf5419200f2ccb50bb24f
    ok secret create kwp-kek aes "$kek" private=1 wrap=1 unwrap=1
    ok secret create key20 generic "$key20" private=1 extractable=1 sign=1
    ok secret create key7 generic "$key7" private=1 extractable=1 sign=1
    local mech
    # CKM_AES_KEY_WRAP_PAD (2.40's name for RFC 5649 wrapping, as SoftHSM2
    # implements it) and CKM_AES_KEY_WRAP_KWP (PKCS#11 3.0; SoftHSM2 lacks it).
    for mech in aes-kw-pad aes-kwp; do
        ok secret wrap "$mech" kwp-kek key20 "$TEST_TMP/w20.$mech"
        assert_eq "$wrap20" "$(hex_of "$TEST_TMP/w20.$mech")" "C_WrapKey ($mech) of RFC 5649's 20-byte key"
        ok secret wrap "$mech" kwp-kek key7 "$TEST_TMP/w7.$mech"
        assert_eq "$wrap7" "$(hex_of "$TEST_TMP/w7.$mech")" "C_WrapKey ($mech) of RFC 5649's 7-byte key"
        ok secret unwrap "$mech" kwp-kek "$TEST_TMP/w20.$mech" "back20.$mech" generic private=1 sensitive=0 extractable=1 sign=1
        assert_eq "$key20" "$(value_of "back20.$mech")" "CKA_VALUE of RFC 5649's 20-byte key unwrapped ($mech)"
    done
    # An AES-256 KEK and an HMAC key of 45 bytes, beside openssl enc -id-aes256-wrap-pad.
    local kek256 hkey
    kek256=$(random_hex 32)
    hkey=$(random_hex 45)
    hex_to_file "$kek256" "$TEST_TMP/kek256.bin"
    hex_to_file "$hkey" "$TEST_TMP/hkey.bin"
    write_secret "$TEST_TMP/kek256.bin" AES:32 11 kek256
    write_secret "$TEST_TMP/hkey.bin" GENERIC 12 hkey
    ok openssl enc -id-aes256-wrap-pad -K "$kek256" -iv A65959A6 -in "$TEST_TMP/hkey.bin" -out "$TEST_TMP/hkey.openssl"
    ok secret wrap aes-kwp kek256 hkey "$TEST_TMP/hkey.wrapped"
    assert_same_file "$TEST_TMP/hkey.openssl" "$TEST_TMP/hkey.wrapped" "C_WrapKey (KWP) of a 45-byte key, beside openssl enc -id-aes256-wrap-pad"
    # pkcs11-tool names no KWP mechanism: it takes the number.
    ok pk11 --login --pin "$USER_PIN" --unwrap -m 0x210b --id 11 -i "$TEST_TMP/hkey.openssl" \
        --key-type GENERIC:0 --extractable --application-label hkey-back --application-id 13
    assert_eq "$hkey" "$(value_of hkey-back)" "CKA_VALUE of the 45-byte key pkcs11-tool unwrapped with CKM_AES_KEY_WRAP_KWP"
}

test_wrapping_is_refused_for_a_non_extractable_key_a_key_without_wrap_and_garbage() {
    secret_setup
    head -c 32 /dev/urandom >"$TEST_TMP/kek.bin"
    write_secret "$TEST_TMP/kek.bin" AES:32 01 kek
    # pkcs11-tool's --keygen default: CKA_EXTRACTABLE=FALSE.
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:32 --private --label locked --id 02
    refused pk11 --login --pin "$USER_PIN" --wrap -m AES-KEY-WRAP --id 01 --application-id 02 -o "$TEST_TMP/leak"
    assert_contains "$RUN_OUT" "CKR_KEY_UNEXTRACTABLE" "C_WrapKey of a key generated with CKA_EXTRACTABLE=FALSE"
    [[ ! -s $TEST_TMP/leak ]] || fail "a refused C_WrapKey wrote $(stat -c %s "$TEST_TMP/leak") bytes"

    # A wrapping key without CKA_WRAP (PKCS#11 3.0 §5.18.6).
    ok secret create nowrap aes "$(random_hex 32)" private=1 encrypt=1 decrypt=1 wrap=0 unwrap=0
    ok secret create movable aes "$(random_hex 32)" private=1 extractable=1 encrypt=1 decrypt=1
    refused secret wrap aes-kw nowrap movable "$TEST_TMP/leak2"
    assert_line "$RUN_OUT" 'C_WrapKey.*(CKR_KEY_FUNCTION_NOT_PERMITTED|CKR_WRAPPING_KEY_HANDLE_INVALID)' \
        "C_WrapKey under a key with CKA_WRAP=FALSE"
    [[ ! -e $TEST_TMP/leak2 ]] || fail "a refused C_WrapKey wrote an output file"

    # Garbage to unwrap: refused, and no key is stored.
    local before
    before=$(secret_key_count)
    head -c 40 /dev/urandom >"$TEST_TMP/garbage"
    refused secret unwrap aes-kw kek "$TEST_TMP/garbage" from-garbage aes private=1
    assert_line "$RUN_OUT" 'C_UnwrapKey returned (CKR_WRAPPED_KEY_INVALID|CKR_ENCRYPTED_DATA_INVALID)' "C_UnwrapKey (AES-KW) of 40 random bytes"
    head -c 20 /dev/urandom >"$TEST_TMP/short"
    refused secret unwrap aes-kw kek "$TEST_TMP/short" from-short aes private=1
    assert_line "$RUN_OUT" 'C_UnwrapKey returned (CKR_WRAPPED_KEY_LEN_RANGE|CKR_ENCRYPTED_DATA_LEN_RANGE)' "C_UnwrapKey (AES-KW) of 20 bytes"
    refused secret unwrap aes-kwp kek "$TEST_TMP/garbage" from-garbage-kwp generic private=1
    assert_line "$RUN_OUT" 'C_UnwrapKey returned (CKR_WRAPPED_KEY_INVALID|CKR_ENCRYPTED_DATA_INVALID)' "C_UnwrapKey (AES-KWP) of 40 random bytes"
    assert_eq "$before" "$(secret_key_count)" "secret keys on the token after three refused C_UnwrapKey"
}

test_rsa_oaep_wraps_an_aes_key_under_a_token_rsa_key_both_ways_with_openssl() {
    secret_setup
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type rsa:2048 --usage-wrap --usage-decrypt --label rsa-wrap --id 51
    pubkey_pem 51 "$TEST_TMP/rsa-wrap.pub"

    # OpenSSL wraps a known AES key under the token's public key (OAEP with
    # SHA-1, then SHA-256: SoftHSM2 2.6.1 unwraps SHA-1 only); the token
    # unwraps it with the private key.
    local known hash
    known=$(random_hex 32)
    hex_to_file "$known" "$TEST_TMP/known.bin"
    for hash in sha1 sha256; do
        ok openssl pkeyutl -encrypt -pubin -inkey "$TEST_TMP/rsa-wrap.pub" -in "$TEST_TMP/known.bin" \
            -out "$TEST_TMP/known.$hash" -pkeyopt rsa_padding_mode:oaep -pkeyopt "rsa_oaep_md:$hash" -pkeyopt "rsa_mgf1_md:$hash"
        ok secret unwrap rsa-oaep rsa-wrap "$TEST_TMP/known.$hash" "from-openssl-$hash" aes private=1 sensitive=0 extractable=1 encrypt=1 decrypt=1 "hash=$hash"
        assert_eq "$known" "$(value_of "from-openssl-$hash")" "CKA_VALUE of the AES key unwrapped from openssl's RSA-OAEP ($hash)"
    done

    # The token wraps an AES key under its public key; unwrapped again, the
    # copy decrypts what the original encrypted.
    head -c 32 /dev/urandom >"$TEST_TMP/aes.bin"
    write_secret "$TEST_TMP/aes.bin" AES:32 52 to-wrap
    ok secret wrap rsa-oaep rsa-wrap to-wrap "$TEST_TMP/rsa.wrapped" hash=sha1
    assert_eq 256 "$(stat -c %s "$TEST_TMP/rsa.wrapped")" "bytes of an RSA-2048 OAEP wrapping"
    ok secret unwrap rsa-oaep rsa-wrap "$TEST_TMP/rsa.wrapped" rsa-unwrapped aes private=1 encrypt=1 decrypt=1 id=53 hash=sha1
    same_key_decrypts 52 53
    # Wrapped twice, the bytes differ (OAEP is randomised).
    ok secret wrap rsa-oaep rsa-wrap to-wrap "$TEST_TMP/rsa.wrapped2" hash=sha1
    if cmp -s "$TEST_TMP/rsa.wrapped" "$TEST_TMP/rsa.wrapped2"; then
        fail "two RSA-OAEP wrappings of one key gave the same bytes"
    fi
    # A changed byte: refused, nothing stored.
    local before
    before=$(secret_key_count)
    flip_byte "$TEST_TMP/rsa.wrapped" 100 "$TEST_TMP/rsa.bad"
    refused secret unwrap rsa-oaep rsa-wrap "$TEST_TMP/rsa.bad" rsa-bad aes private=1 hash=sha1
    assert_line "$RUN_OUT" 'C_UnwrapKey returned (CKR_WRAPPED_KEY_INVALID|CKR_ENCRYPTED_DATA_INVALID)' "C_UnwrapKey (RSA-OAEP) of a changed wrapping"
    assert_eq "$before" "$(secret_key_count)" "secret keys on the token after a refused RSA-OAEP unwrap"
    # SHA-256 OAEP the same way.
    ok secret wrap rsa-oaep rsa-wrap to-wrap "$TEST_TMP/rsa256.wrapped" hash=sha256
    ok secret unwrap rsa-oaep rsa-wrap "$TEST_TMP/rsa256.wrapped" rsa256-unwrapped aes private=1 encrypt=1 decrypt=1 id=54 hash=sha256
    same_key_decrypts 52 54
}
