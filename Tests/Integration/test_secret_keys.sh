# Secret keys through the real tools: pkcs11-tool generating AES
# and generic-secret keys; AES-ECB/CBC/CBC-PAD through pkcs11-tool agreeing
# with `openssl enc`, AES-CTR and AES-GCM through p11secret agreeing with
# `openssl enc` and Python's cryptography; HMAC and CMAC agreeing with
# `openssl mac`; pkcs11-tool --test with secret keys on the token.
# Every key whose bytes a check needs is imported with a known value, or
# generated extractable and read back.

source "$IT_DIR/secret_lib.sh"

# crypt_both_ways MECH KEY_HEX ID CIPHER IV SIZE [-nopad]: pkcs11-tool
# --encrypt of SIZE random bytes equals `openssl enc -CIPHER`, and
# pkcs11-tool --decrypt of openssl's ciphertext gives the bytes back.
crypt_both_ways() {
    local mech=$1 key=$2 id=$3 cipher=$4 iv=$5 size=$6 nopad=${7:-} ivopt=() p11iv=()
    local pt=$TEST_TMP/pt-$mech-$size
    head -c "$size" /dev/urandom >"$pt"
    if [[ $iv != - ]]; then
        ivopt=(-iv "$iv")
        p11iv=(--iv "$iv")
    fi
    ok pk11 --login --pin "$USER_PIN" --encrypt -m "$mech" --id "$id" "${p11iv[@]}" -i "$pt" -o "$pt.p11"
    ok openssl enc -e "-$cipher" -K "$key" "${ivopt[@]}" $nopad -in "$pt" -out "$pt.openssl"
    assert_same_file "$pt.openssl" "$pt.p11" "pkcs11-tool --encrypt -m $mech of $size bytes, beside openssl enc -$cipher"
    ok pk11 --login --pin "$USER_PIN" --decrypt -m "$mech" --id "$id" "${p11iv[@]}" -i "$pt.openssl" -o "$pt.back"
    assert_same_file "$pt" "$pt.back" "pkcs11-tool --decrypt -m $mech of openssl enc -$cipher's $size-byte ciphertext"
}

test_pkcs11tool_keygen_makes_aes_and_generic_secret_keys() {
    secret_setup
    # As users type it: pkcs11-tool then asks for CKA_PRIVATE=FALSE.
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:32 --label aes256 --id 01
    assert_contains "$RUN_OUT" "Secret Key Object; AES length 32" "pkcs11-tool --keygen --key-type AES:32"
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:16 --private --label aes128 --id 02
    assert_contains "$RUN_OUT" "Secret Key Object; AES length 16" "pkcs11-tool --keygen --key-type AES:16"
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type GENERIC:32 --private --usage-sign --label hmac --id 03
    assert_contains "$RUN_OUT" "Secret Key Object; Generic secret length 32" "pkcs11-tool --keygen --key-type GENERIC:32"
    # (pkcs11-tool 0.23 never shows "sign" in a secret key's usage: p11secret reads it.)
    ok secret info hmac
    assert_contains "$RUN_OUT" "sign 1" "CKA_SIGN of the generic secret generated with --usage-sign"
    assert_contains "$RUN_OUT" "value-len 32" "CKA_VALUE_LEN of the generated generic secret"
    # An AES key of a length AES does not have is refused, and nothing is stored.
    refused pk11 --login --pin "$USER_PIN" --keygen --key-type AES:20 --label aes160 --id 04
    assert_contains "$RUN_OUT" "CKR_" "pkcs11-tool --keygen --key-type AES:20 names the CK_RV"

    ok pk11 --login --pin "$USER_PIN" -O --type secrkey
    assert_eq 3 "$(grep -c '^Secret Key Object' <<<"$RUN_OUT" || true)" "secret keys pkcs11-tool -O shows after login"
    assert_not_contains "$RUN_OUT" "aes160" "pkcs11-tool -O after the refused AES:20 key generation"
    assert_eq 3 "$(grep -c 'never extractable, local' <<<"$RUN_OUT" || true)" \
        "generated keys shown as never extractable and local (pkcs11-tool's default: not extractable)"
    # Without login: the keys generated --private are not found.
    ok pk11 -O
    assert_line "$RUN_OUT" '^ +label: +aes256$' "pkcs11-tool -O without login: the key generated CKA_PRIVATE=FALSE" 'label'
    assert_no_line "$RUN_OUT" '^ +label: +(aes128|hmac)$' "pkcs11-tool -O without login: keys generated --private"
    # Not extractable: the value never leaves.
    refused secret value aes256
    assert_contains "$RUN_OUT" "CKR_ATTRIBUTE_SENSITIVE" "reading CKA_VALUE of a key generated not extractable"
}

test_an_extractable_generated_aes_key_reads_back_with_its_check_value_and_encrypts_like_openssl() {
    secret_setup
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:32 --extractable --label readable --id 05
    local key check iv
    key=$(value_of readable)
    assert_eq 64 "${#key}" "hex digits of the generated AES-256 key read back"
    # CKA_CHECK_VALUE (PKCS#11 3.0 §2.1.8 / SP 800-38A): the first 3 bytes of
    # the ECB encryption of a zero block under the key.
    check=$(head -c 16 /dev/zero | openssl enc -aes-256-ecb -K "$key" -nopad | head -c 3 | xxd -p)
    ok secret info readable
    assert_contains "$RUN_OUT" "check-value $check" "CKA_CHECK_VALUE of the generated AES key"
    assert_contains "$RUN_OUT" "value-len 32" "CKA_VALUE_LEN of the generated AES key"
    assert_contains "$RUN_OUT" "local 1" "CKA_LOCAL of a generated key"
    assert_contains "$RUN_OUT" "never-extractable 0" "CKA_NEVER_EXTRACTABLE of a key generated extractable"
    iv=$(random_hex 16)
    crypt_both_ways AES-CBC-PAD "$key" 05 aes-256-cbc "$iv" 1000
}

test_aes_ecb_cbc_and_cbc_pad_through_pkcs11tool_agree_with_openssl_enc() {
    secret_setup
    local bytes key iv size id=10
    for bytes in 16 32; do
        id=$((id + 1))
        head -c "$bytes" /dev/urandom >"$TEST_TMP/key$bytes.bin"
        key=$(hex_of "$TEST_TMP/key$bytes.bin")
        write_secret "$TEST_TMP/key$bytes.bin" "AES:$bytes" "$id" "aes$bytes"
        iv=$(random_hex 16)
        # pkcs11-tool 0.23 reads 1024 bytes at a time: smaller inputs go
        # through one C_Encrypt/C_Decrypt, larger ones through C_*Update.
        for size in 16 1008 1024 4096; do
            crypt_both_ways AES-ECB "$key" "$id" "$(aes_cipher "$bytes" ecb)" - "$size" -nopad
            crypt_both_ways AES-CBC "$key" "$id" "$(aes_cipher "$bytes" cbc)" "$iv" "$size" -nopad
        done
        for size in 0 1 15 16 17 1000 1023 1024 1025 3000; do
            crypt_both_ways AES-CBC-PAD "$key" "$id" "$(aes_cipher "$bytes" cbc)" "$iv" "$size"
        done
    done
    # A ciphertext that is not whole blocks is refused, and nothing is written.
    head -c 1000 /dev/urandom >"$TEST_TMP/odd"
    refused pk11 --login --pin "$USER_PIN" --decrypt -m AES-CBC --id 12 --iv "$iv" -i "$TEST_TMP/odd" -o "$TEST_TMP/odd.out"
    assert_contains "$RUN_OUT" "CKR_ENCRYPTED_DATA_LEN_RANGE" "pkcs11-tool --decrypt -m AES-CBC of 1000 bytes"
    # (pkcs11-tool retries a failed C_Decrypt with C_DecryptUpdate and writes
    # what that returns before C_DecryptFinal fails; one C_Decrypt returns nothing.)
    refused secret decrypt aes-cbc aes32 "$TEST_TMP/odd" "$TEST_TMP/odd.one" iv="$iv"
    assert_contains "$RUN_OUT" "C_Decrypt (length query) returned CKR_ENCRYPTED_DATA_LEN_RANGE" "one C_Decrypt (AES-CBC) of 1000 bytes"
}

test_aes_cbc_pad_with_bad_padding_is_refused_and_releases_nothing() {
    secret_setup
    local key iv
    head -c 32 /dev/urandom >"$TEST_TMP/key.bin"
    key=$(hex_of "$TEST_TMP/key.bin")
    iv=$(random_hex 16)
    write_secret "$TEST_TMP/key.bin" AES:32 31 padkey
    # 48 bytes encrypted without padding: their last block is no PKCS#7 padding
    # (its last byte is 0x41, more than a block).
    printf 'A%.0s' {1..48} >"$TEST_TMP/pt"
    ok openssl enc -aes-256-cbc -K "$key" -iv "$iv" -nopad -in "$TEST_TMP/pt" -out "$TEST_TMP/ct"
    refused secret decrypt aes-cbc-pad padkey "$TEST_TMP/ct" "$TEST_TMP/out" iv="$iv"
    assert_contains "$RUN_OUT" "CKR_ENCRYPTED_DATA_INVALID" "C_Decrypt with CKM_AES_CBC_PAD of a bad padding"
    [[ ! -e $TEST_TMP/out ]] || fail "a refused CBC-PAD decryption wrote an output file"
    refused secret decrypt aes-cbc-pad padkey "$TEST_TMP/ct" "$TEST_TMP/out" iv="$iv" chunk=16
    assert_contains "$RUN_OUT" "CKR_ENCRYPTED_DATA_INVALID" "C_DecryptFinal with CKM_AES_CBC_PAD of a bad padding"
    # A 15-byte IV is refused at C_DecryptInit.
    refused secret decrypt aes-cbc-pad padkey "$TEST_TMP/ct" "$TEST_TMP/out" iv="${iv:2}"
    assert_contains "$RUN_OUT" "CKR_MECHANISM_PARAM_INVALID" "C_DecryptInit with a 15-byte CBC IV"
}

test_aes_ctr_through_the_module_agrees_with_openssl_enc() {
    secret_setup
    local key iv size
    key=$(random_hex 32)
    ok secret create ctrkey aes "$key" private=1 encrypt=1 decrypt=1
    iv=$(random_hex 16)
    for size in 1 16 100 5000; do
        head -c "$size" /dev/urandom >"$TEST_TMP/pt$size"
        ok openssl enc -aes-256-ctr -K "$key" -iv "$iv" -in "$TEST_TMP/pt$size" -out "$TEST_TMP/ct$size.openssl"
        ok secret encrypt aes-ctr ctrkey "$TEST_TMP/pt$size" "$TEST_TMP/ct$size" iv="$iv"
        assert_same_file "$TEST_TMP/ct$size.openssl" "$TEST_TMP/ct$size" "CKM_AES_CTR encryption of $size bytes, beside openssl enc -aes-256-ctr"
        # Multi-part, in pieces that are not whole blocks.
        ok secret encrypt aes-ctr ctrkey "$TEST_TMP/pt$size" "$TEST_TMP/ct$size.parts" iv="$iv" chunk=7
        assert_same_file "$TEST_TMP/ct$size.openssl" "$TEST_TMP/ct$size.parts" "CKM_AES_CTR in 7-byte C_EncryptUpdate pieces of $size bytes"
        ok secret decrypt aes-ctr ctrkey "$TEST_TMP/ct$size.openssl" "$TEST_TMP/pt$size.back" iv="$iv" chunk=13
        assert_same_file "$TEST_TMP/pt$size" "$TEST_TMP/pt$size.back" "CKM_AES_CTR decryption of openssl's $size bytes"
    done
}

test_aes_gcm_through_the_module_agrees_with_python_cryptography_both_ways() {
    secret_setup
    local key iv aad size tag
    head -c 32 /dev/urandom >"$TEST_TMP/key.bin"
    key=$(hex_of "$TEST_TMP/key.bin")
    write_secret "$TEST_TMP/key.bin" AES:32 41 gcmkey
    for size in 0 1 16 1000 16389; do
        head -c "$size" /dev/urandom >"$TEST_TMP/pt$size"
        for tag in 128 96; do
            iv=$(random_hex 12)
            aad=$(random_hex $((size % 40)))
            local ct=$TEST_TMP/ct$size-$tag
            ok secret encrypt aes-gcm gcmkey "$TEST_TMP/pt$size" "$ct" iv="$iv" aad="$aad" tag="$tag"
            assert_eq $((size + tag / 8)) "$(stat -c %s "$ct")" "bytes of the GCM ciphertext and $tag-bit tag of $size bytes"
            py_gcm enc "$key" "$iv" "$aad" "$tag" "$TEST_TMP/pt$size" "$ct.py" ||
                fail "python cryptography could not encrypt with AES-GCM"
            assert_same_file "$ct.py" "$ct" "CKM_AES_GCM of $size bytes, tag $tag bits, beside python cryptography"
            # Multi-part gives the same bytes.
            ok secret encrypt aes-gcm gcmkey "$TEST_TMP/pt$size" "$ct.parts" iv="$iv" aad="$aad" tag="$tag" chunk=1000
            assert_same_file "$ct.py" "$ct.parts" "CKM_AES_GCM in 1000-byte C_EncryptUpdate pieces of $size bytes"
            ok secret decrypt aes-gcm gcmkey "$ct.py" "$ct.back" iv="$iv" aad="$aad" tag="$tag"
            assert_same_file "$TEST_TMP/pt$size" "$ct.back" "CKM_AES_GCM decryption of python's $size bytes"
            ok secret decrypt aes-gcm gcmkey "$ct.py" "$ct.back2" iv="$iv" aad="$aad" tag="$tag" chunk=333
            assert_same_file "$TEST_TMP/pt$size" "$ct.back2" "CKM_AES_GCM multi-part decryption of python's $size bytes"
        done
    done
    # A tampered ciphertext, tag or AAD: CKR_ENCRYPTED_DATA_INVALID, no plaintext.
    local ct=$TEST_TMP/ct1000-128 what
    iv=$(random_hex 12)
    ok secret encrypt aes-gcm gcmkey "$TEST_TMP/pt1000" "$ct" iv="$iv" aad=00112233
    flip_byte "$ct" 10 "$ct.body"
    flip_byte "$ct" -1 "$ct.tag"
    for what in body tag; do
        refused secret decrypt aes-gcm gcmkey "$ct.$what" "$TEST_TMP/leak" iv="$iv" aad=00112233
        assert_contains "$RUN_OUT" "CKR_ENCRYPTED_DATA_INVALID" "C_Decrypt (AES-GCM) of a ciphertext with a changed $what"
        refused secret decrypt aes-gcm gcmkey "$ct.$what" "$TEST_TMP/leak" iv="$iv" aad=00112233 chunk=100
        assert_contains "$RUN_OUT" "CKR_ENCRYPTED_DATA_INVALID" "C_DecryptFinal (AES-GCM) of a ciphertext with a changed $what"
    done
    refused secret decrypt aes-gcm gcmkey "$ct" "$TEST_TMP/leak" iv="$iv" aad=00112234
    assert_contains "$RUN_OUT" "CKR_ENCRYPTED_DATA_INVALID" "C_Decrypt (AES-GCM) with other AAD"
    [[ ! -e $TEST_TMP/leak ]] || fail "a GCM decryption that did not verify released $(stat -c %s "$TEST_TMP/leak") bytes"
    # A tag shorter than 96 bits is refused (tags are 96 to 128 bits).
    refused secret encrypt aes-gcm gcmkey "$TEST_TMP/pt16" "$TEST_TMP/short" iv="$iv" tag=64
    assert_contains "$RUN_OUT" "CKR_MECHANISM_PARAM_INVALID" "C_EncryptInit (AES-GCM) with a 64-bit tag"
}

# hmac_both MECH DIGEST ID KEY_HEX MSG: pkcs11-tool --sign -m MECH equals
# `openssl mac -digest DIGEST HMAC`, and --verify accepts it and rejects a
# tampered message.
hmac_both() {
    local mech=$1 digest=$2 id=$3 key=$4 msg=$5 expected
    ok pk11 --login --pin "$USER_PIN" --sign -m "$mech" --id "$id" -i "$msg" -o "$msg.$mech"
    expected=$(lower "$(openssl mac -digest "$digest" -macopt "hexkey:$key" -in "$msg" HMAC)")
    assert_eq "$expected" "$(hex_of "$msg.$mech")" "pkcs11-tool --sign -m $mech of $(stat -c %s "$msg") bytes, beside openssl mac -digest $digest HMAC"
    ok pk11 --login --pin "$USER_PIN" --verify -m "$mech" --id "$id" -i "$msg" --signature-file "$msg.$mech"
    assert_contains "$RUN_OUT" "Signature is valid" "pkcs11-tool --verify -m $mech"
    flip_byte "$msg" 0 "$msg.tampered"
    ok pk11 --login --pin "$USER_PIN" --verify -m "$mech" --id "$id" -i "$msg.tampered" --signature-file "$msg.$mech"
    assert_contains "$RUN_OUT" "Invalid signature" "pkcs11-tool --verify -m $mech of a tampered message"
}

test_hmac_through_pkcs11tool_agrees_with_openssl_mac() {
    secret_setup
    # RFC 4231 test case 6 first (a 131-byte key, hashed first), a known answer.
    # (Not test case 2: SoftHSM2 refuses its 4-byte key, CKR_KEY_SIZE_RANGE.)
    python3 -c 'import sys; sys.stdout.buffer.write(b"\xaa" * 131)' >"$TEST_TMP/rfc4231.key"
    printf 'Test Using Larger Than Block-Size Key - Hash Key First' >"$TEST_TMP/rfc4231.msg"
    write_secret "$TEST_TMP/rfc4231.key" GENERIC 20 rfc4231
    ok pk11 --login --pin "$USER_PIN" --sign -m SHA256-HMAC --id 20 -i "$TEST_TMP/rfc4231.msg" -o "$TEST_TMP/rfc4231.mac"
    assert_eq 60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54 "$(hex_of "$TEST_TMP/rfc4231.mac")" \
        "HMAC-SHA-256 of RFC 4231 test case 6"

    local key size mech
    head -c 64 /dev/urandom >"$TEST_TMP/hmac.key"
    key=$(hex_of "$TEST_TMP/hmac.key")
    write_secret "$TEST_TMP/hmac.key" GENERIC 21 hmackey
    # 64 bytes: one C_Sign; 5000: pkcs11-tool's C_SignUpdate loop (1025 at a time).
    for size in 64 5000; do
        head -c "$size" /dev/urandom >"$TEST_TMP/msg$size"
        for mech in SHA-1-HMAC:SHA1 SHA224-HMAC:SHA224 SHA256-HMAC:SHA256 SHA384-HMAC:SHA384 SHA512-HMAC:SHA512; do
            hmac_both "${mech%%:*}" "${mech#*:}" 21 "$key" "$TEST_TMP/msg$size"
        done
    done
    # A key of the HMAC key type (CKK_SHA256_HMAC) MACs the same, through p11secret.
    ok secret create typed sha256-hmac "$key" private=1 sign=1 verify=1
    ok secret sign sha256-hmac typed "$TEST_TMP/msg64" "$TEST_TMP/typed.mac"
    assert_same_file "$TEST_TMP/msg64.SHA256-HMAC" "$TEST_TMP/typed.mac" "HMAC-SHA-256 with a CKK_SHA256_HMAC key"
    # The _GENERAL form gives the MAC cut to the asked length.
    ok secret sign sha256-hmac-general typed "$TEST_TMP/msg64" "$TEST_TMP/general.mac" maclen=16
    assert_eq "$(hex_of "$TEST_TMP/msg64.SHA256-HMAC" | cut -c1-32)" "$(hex_of "$TEST_TMP/general.mac")" \
        "CKM_SHA256_HMAC_GENERAL with a 16-byte MAC"
}

test_aes_cmac_through_the_module_agrees_with_openssl_mac() {
    secret_setup
    local bytes key size expected
    head -c 300 /dev/urandom >"$TEST_TMP/msg"
    for bytes in 16 32; do
        key=$(random_hex "$bytes")
        ok secret create "cmac$bytes" aes "$key" private=1 sign=1 verify=1
        for size in 0 16 64 300; do
            head -c "$size" "$TEST_TMP/msg" >"$TEST_TMP/msg$size"
            expected=$(lower "$(openssl mac -cipher "$(aes_cipher "$bytes" cbc)" -macopt "hexkey:$key" -in "$TEST_TMP/msg$size" CMAC)")
            ok secret sign aes-cmac "cmac$bytes" "$TEST_TMP/msg$size" "$TEST_TMP/mac"
            assert_eq "$expected" "$(hex_of "$TEST_TMP/mac")" "CKM_AES_CMAC (AES-$((bytes * 8))) of $size bytes, beside openssl mac CMAC"
            ok secret sign aes-cmac "cmac$bytes" "$TEST_TMP/msg$size" "$TEST_TMP/mac.parts" chunk=7
            assert_eq "$expected" "$(hex_of "$TEST_TMP/mac.parts")" "CKM_AES_CMAC in 7-byte C_SignUpdate pieces of $size bytes"
            ok secret verify aes-cmac "cmac$bytes" "$TEST_TMP/msg$size" "$TEST_TMP/mac"
        done
        flip_byte "$TEST_TMP/mac" 3 "$TEST_TMP/mac.bad"
        refused secret verify aes-cmac "cmac$bytes" "$TEST_TMP/msg300" "$TEST_TMP/mac.bad"
        assert_contains "$RUN_OUT" "CKR_SIGNATURE_INVALID" "C_Verify (AES-CMAC) of a changed MAC"
    done
}

test_pkcs11tool_test_passes_with_secret_keys_on_the_token() {
    secret_setup
    keypairgen_for_test() {
        ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --id "$2" --label "$3"
    }
    keypairgen_for_test rsa:2048 01 test-rsa
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:32 --label test-aes --id 02
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type GENERIC:32 --usage-sign --label test-hmac --id 03
    head -c 16 /dev/urandom >"$TEST_TMP/k.bin"
    write_secret "$TEST_TMP/k.bin" AES:16 04 test-known
    ok pk11 --login --pin "$USER_PIN" --test --allow-sw
    assert_contains "$RUN_OUT" "all 4 digest functions seem to work" "pkcs11-tool --test with secret keys: digests"
    assert_line "$RUN_OUT" '^ +SHA256-RSA-PKCS: OK$' "pkcs11-tool --test with secret keys: SHA256-RSA-PKCS" 'RSA-PKCS'
    assert_line "$RUN_OUT" '^No errors$' "pkcs11-tool --test with secret keys: verdict" 'rror'
}

test_cka_allowed_mechanisms_from_pkcs11tool_limits_what_a_secret_key_does() {
    secret_setup
    local iv
    iv=$(random_hex 16)
    head -c 100 /dev/urandom >"$TEST_TMP/pt"
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:32 --private --label limited --id 61 \
        --allowed-mechanisms AES-CBC-PAD,AES-GCM
    # (pkcs11-tool 0.23 shows allowed mechanisms of private keys only: p11secret reads them.)
    ok secret info limited
    assert_contains "$RUN_OUT" "allowed-mechanisms 0x1085,0x1087" "CKA_ALLOWED_MECHANISMS of a key generated with --allowed-mechanisms AES-CBC-PAD,AES-GCM"
    ok pk11 --login --pin "$USER_PIN" --encrypt -m AES-CBC-PAD --id 61 --iv "$iv" -i "$TEST_TMP/pt" -o "$TEST_TMP/ct"
    ok secret encrypt aes-gcm limited "$TEST_TMP/pt" "$TEST_TMP/ct.gcm" iv="${iv:0:24}"
    # Not in the list: refused at C_EncryptInit (PKCS#11 3.0 §4.7, CKA_ALLOWED_MECHANISMS).
    head -c 96 /dev/urandom >"$TEST_TMP/blocks"
    refused pk11 --login --pin "$USER_PIN" --encrypt -m AES-ECB --id 61 -i "$TEST_TMP/blocks" -o "$TEST_TMP/ecb"
    assert_contains "$RUN_OUT" "C_EncryptInit failed: rv = CKR_MECHANISM_INVALID" "pkcs11-tool --encrypt -m AES-ECB with a key allowed AES-CBC-PAD and AES-GCM only"
    refused secret sign aes-cmac limited "$TEST_TMP/pt" "$TEST_TMP/mac"
    assert_contains "$RUN_OUT" "C_SignInit returned CKR_" "C_SignInit (AES-CMAC) with a key allowed AES-CBC-PAD and AES-GCM only"
    # A key created with the list (C_CreateObject; pkcs11-tool 0.23's
    # --write-object drops --allowed-mechanisms) obeys it the same way.
    ok secret create hmac-only generic "$(random_hex 64)" private=1 sign=1 verify=1 id=62 allowed=0x251
    ok pk11 --login --pin "$USER_PIN" --sign -m SHA256-HMAC --id 62 -i "$TEST_TMP/pt" -o "$TEST_TMP/hmac"
    refused pk11 --login --pin "$USER_PIN" --sign -m SHA512-HMAC --id 62 -i "$TEST_TMP/pt" -o "$TEST_TMP/hmac512"
    assert_contains "$RUN_OUT" "C_SignInit failed: rv = CKR_MECHANISM_INVALID" "pkcs11-tool --sign -m SHA512-HMAC with a key allowed SHA256-HMAC only"
}

test_pkcs11tool_lists_the_secret_key_mechanisms_with_their_functions() {
    ok pk11 -M
    local line
    for line in 'AES-KEY-GEN, keySize=\{16,32\}, generate' \
        'GENERIC-SECRET-KEY-GEN, .*generate' \
        'AES-ECB, keySize=\{16,32\}, encrypt, decrypt' \
        'AES-CBC, keySize=\{16,32\}, encrypt, decrypt' \
        'AES-CBC-PAD, keySize=\{16,32\}, encrypt, decrypt' \
        'AES-CTR, keySize=\{16,32\}, encrypt, decrypt' \
        'AES-GCM, keySize=\{16,32\}, encrypt, decrypt' \
        'AES-CMAC, keySize=\{16,32\}, sign, verify' \
        'SHA256-HMAC, .*sign, verify' \
        'SHA512-HMAC, .*sign, verify' \
        'AES-KEY-WRAP, keySize=\{16,[0-9]+\}, .*wrap, unwrap' \
        'ECDH1-DERIVE, keySize=\{[0-9]+,521\}, .*derive'; do
        assert_line "$RUN_OUT" "^ +$line" "pkcs11-tool -M: ${line%%,*}" "^ +${line%%,*},|^Supported"
    done
}
