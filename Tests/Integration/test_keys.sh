# Key pairs through the real tools: pkcs11-tool's own tests (--test,
# --test-ec, --test-threads, --test-fork); generation of each key type with
# sign/verify round trips, checked by OpenSSL with the public key read from the
# token; private keys that never leave the token; p11tool generating a key and
# test-signing with it; certtool signing a certificate with a token key
# through the registered module; a raw scan of the store for private bytes.

# A message, its SHA-256 digest (what the raw CKM_RSA_PKCS and CKM_ECDSA
# sign), and the same for a message that differs in one byte.
make_messages() {
    printf 'p11keychain signs this message\n' >"$TEST_TMP/msg"
    printf 'p11keychain signs this massage\n' >"$TEST_TMP/msg.tampered"
    openssl dgst -sha256 -binary -out "$TEST_TMP/msg.sha256" "$TEST_TMP/msg"
    openssl dgst -sha256 -binary -out "$TEST_TMP/msg.tampered.sha256" "$TEST_TMP/msg.tampered"
}

# keypairgen TYPE ID LABEL: pkcs11-tool --keypairgen, logged in.
keypairgen() {
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --id "$2" --label "$3"
    assert_contains "$RUN_OUT" "Key pair generated" "pkcs11-tool --keypairgen --key-type $1"
}

# verify_cmd MECH PUB SIG INPUT: sets $VERIFY_CMD (an array) to OpenSSL's
# check of a signature made with the PKCS#11 mechanism MECH (pkcs11-tool's
# name) over INPUT (the message, or its digest for the raw mechanisms).
verify_cmd() {
    local mech=$1 pub=$2 sig=$3 input=$4 md
    case $mech in
    RSA-PKCS | ECDSA)
        VERIFY_CMD=(openssl pkeyutl -verify -pubin -inkey "$pub" -in "$input" -sigfile "$sig") ;;
    SHA*-RSA-PKCS)
        md=${mech%%-*}
        VERIFY_CMD=(openssl dgst "-${md,,}" -verify "$pub" -signature "$sig" "$input") ;;
    SHA*-RSA-PKCS-PSS)
        md=${mech%%-*}
        VERIFY_CMD=(openssl dgst "-${md,,}" -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest
            -verify "$pub" -signature "$sig" "$input") ;;
    ECDSA-SHA*)
        md=${mech#ECDSA-}
        VERIFY_CMD=(openssl dgst "-${md,,}" -verify "$pub" -signature "$sig" "$input") ;;
    EDDSA)
        VERIFY_CMD=(openssl pkeyutl -verify -pubin -inkey "$pub" -rawin -in "$input" -sigfile "$sig") ;;
    *) fail "verify_cmd: no OpenSSL check for $mech" ;;
    esac
}

# openssl_verify MECH PUB SIG INPUT: OpenSSL verifies the signature.
openssl_verify() {
    verify_cmd "$@"
    ok "${VERIFY_CMD[@]}"
}

# round_trip ID MECH: the token signs the message with key ID and MECH;
# pkcs11-tool verifies it through the token (and finds a tampered message
# invalid), and OpenSSL verifies it with the public key read from the token
# (ECDSA signatures in OpenSSL's DER form, --signature-format openssl).
round_trip() {
    local id=$1 mech=$2 sig=$TEST_TMP/sig-$1-$2 pub=$TEST_TMP/pub-$1.pem fmt=()
    local input=$TEST_TMP/msg tampered=$TEST_TMP/msg.tampered
    if [[ $mech == RSA-PKCS || $mech == ECDSA ]]; then
        input=$TEST_TMP/msg.sha256 tampered=$TEST_TMP/msg.tampered.sha256
    fi
    [[ $mech != ECDSA* ]] || fmt=(--signature-format openssl)
    ok pk11 --login --pin "$USER_PIN" --sign -m "$mech" --id "$id" "${fmt[@]}" -i "$input" -o "$sig"
    [[ -s $sig ]] || fail "pkcs11-tool --sign -m $mech wrote no signature"
    # pkcs11-tool --verify exits 0 either way: its message is the verdict.
    ok pk11 --verify -m "$mech" --id "$id" "${fmt[@]}" -i "$input" --signature-file "$sig"
    assert_contains "$RUN_OUT" "Signature is valid" "pkcs11-tool --verify -m $mech of the token's signature"
    ok pk11 --verify -m "$mech" --id "$id" "${fmt[@]}" -i "$tampered" --signature-file "$sig"
    assert_contains "$RUN_OUT" "Invalid signature" "pkcs11-tool --verify -m $mech of a tampered message"

    [[ -f $pub ]] || pubkey_pem "$id" "$pub"
    openssl_verify "$mech" "$pub" "$sig" "$input"
}

# openssl_rejects MECH ID: OpenSSL refuses the signature over the tampered message.
openssl_rejects() {
    local mech=$1 id=$2 input=$TEST_TMP/msg.tampered
    [[ $mech != RSA-PKCS && $mech != ECDSA ]] || input=$TEST_TMP/msg.tampered.sha256
    verify_cmd "$mech" "$TEST_TMP/pub-$id.pem" "$TEST_TMP/sig-$id-$mech" "$input"
    refused "${VERIFY_CMD[@]}"
}

# sign_check ID MECH...: round_trip and openssl_rejects for each MECH.
sign_check() {
    local id=$1 mech
    shift
    for mech in "$@"; do
        round_trip "$id" "$mech"
        openssl_rejects "$mech" "$id"
    done
}

# ---------------------------------------------------------------- pkcs11-tool's tests

test_pkcs11tool_test_signs_verifies_and_decrypts_with_token_keys() {
    init_pins
    keypairgen rsa:2048 01 test-rsa
    keypairgen EC:prime256v1 02 test-ec
    # --allow-sw: without it pkcs11-tool skips the signature tests on a token
    # whose mechanisms lack CKF_HW (it says "Signatures: not implemented").
    ok pk11 --login --pin "$USER_PIN" --test --allow-sw
    assert_contains "$RUN_OUT" "all 4 digest functions seem to work" "pkcs11-tool --test: digests"
    assert_contains "$RUN_OUT" "all 4 signature functions seem to work" "pkcs11-tool --test: signatures"
    assert_line "$RUN_OUT" '^ +testing key [0-9]+ \(test-rsa\)' "pkcs11-tool --test: key tested" 'testing key'
    assert_line "$RUN_OUT" '^ +SHA256-RSA-PKCS: OK$' "pkcs11-tool --test: SHA256-RSA-PKCS" 'RSA-PKCS'
    assert_contains "$RUN_OUT" "Decryption (currently only for RSA)" "pkcs11-tool --test: decryption"
    assert_line "$RUN_OUT" '^No errors$' "pkcs11-tool --test: verdict" 'error'
}

test_pkcs11tool_test_ec_on_a_p384_key() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --test-ec --id 05 --key-type EC:secp384r1 --session-rw
    assert_contains "$RUN_OUT" "EC_POINT 384 bits" "pkcs11-tool --test-ec: the P-384 public key"
    assert_contains "$RUN_OUT" "*** Doing a signature ***" "pkcs11-tool --test-ec"
    assert_line "$RUN_OUT" '^==> OK$' "pkcs11-tool --test-ec: verdict" 'OK|rror'
}

test_pkcs11tool_test_threads_initialize_and_query_concurrently() {
    init_pins
    # Each --test-threads argument is one thread's list of two-letter
    # commands: IN C_Initialize(NULL), IL C_Initialize(CKF_OS_LOCKING_OK),
    # GI C_GetInfo, SL C_GetSlotList, T0 C_GetTokenInfo of the first slot.
    ok timeout 120 pkcs11-tool --module "$P11KEYCHAIN_MODULE" \
        --test-threads IN:GI:SL:T0:GI:SL:T0 --test-threads IL:GI:SL:T0:SL:T0 \
        --test-threads IN:SL:T0:GI:T0 --test-threads IL:SL:GI:T0 -L
    assert_contains "$RUN_OUT" "test_threads all threads have ended with CKR_OK" "pkcs11-tool --test-threads"
    assert_no_line "$RUN_OUT" 'returned CKR_(GENERAL_ERROR|FUNCTION_FAILED|ARGUMENTS_BAD|CRYPTOKI_NOT_INITIALIZED|CANT_LOCK)' \
        "pkcs11-tool --test-threads: calls"
    # (The state lines are printed again for every wait on a running thread.)
    assert_eq 4 "$(grep -E '^test_threads thread:[0-9] state:-1, rv:CKR_OK$' <<<"$RUN_OUT" | sort -u | wc -l)" \
        "threads pkcs11-tool --test-threads saw end with CKR_OK"
}

test_pkcs11tool_test_fork_then_tests_in_the_parent() {
    init_pins
    keypairgen rsa:2048 01 fork-rsa
    # The child calls C_Initialize after fork(); then the parent logs in and
    # runs the tests with the module it initialized before the fork.
    ok timeout 120 pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
        --test-fork --session-rw --login --pin "$USER_PIN" --test --allow-sw
    assert_contains "$RUN_OUT" "*** Calling C_Initialize in forked child process ***" "pkcs11-tool --test-fork"
    assert_contains "$RUN_OUT" "all 4 signature functions seem to work" "pkcs11-tool --test after --test-fork"
    assert_line "$RUN_OUT" '^No errors$' "pkcs11-tool --test-fork --test: verdict" 'error'
}

# ---------------------------------------------------------------- round trips

test_rsa2048_keypairgen_sign_verify_and_openssl_verifies() {
    init_pins
    make_messages
    keypairgen rsa:2048 01 rsa2048
    assert_contains "$RUN_OUT" "Public Key Object; RSA 2048 bits" "the generated RSA public key"
    sign_check 01 RSA-PKCS SHA256-RSA-PKCS SHA256-RSA-PKCS-PSS SHA1-RSA-PKCS SHA512-RSA-PKCS-PSS
}

test_rsa4096_keypairgen_sign_verify_and_openssl_verifies() {
    init_pins
    make_messages
    keypairgen rsa:4096 01 rsa4096
    assert_contains "$RUN_OUT" "Public Key Object; RSA 4096 bits" "the generated RSA public key"
    sign_check 01 SHA384-RSA-PKCS SHA256-RSA-PKCS-PSS
}

test_ec_keypairgen_on_each_curve_sign_verify_and_openssl_verifies() {
    init_pins
    make_messages
    keypairgen EC:prime256v1 11 p256
    assert_line "$RUN_OUT" '^ +EC_PARAMS: +06082a8648ce3d030107$' "EC_PARAMS of the generated P-256 key" 'EC_PARAMS'
    keypairgen EC:secp384r1 12 p384
    assert_line "$RUN_OUT" '^ +EC_PARAMS: +06052b81040022$' "EC_PARAMS of the generated P-384 key" 'EC_PARAMS'
    keypairgen EC:secp521r1 13 p521
    assert_line "$RUN_OUT" '^ +EC_PARAMS: +06052b81040023$' "EC_PARAMS of the generated P-521 key" 'EC_PARAMS'
    sign_check 11 ECDSA ECDSA-SHA256
    sign_check 12 ECDSA-SHA384 ECDSA
    sign_check 13 ECDSA-SHA512 ECDSA-SHA256
    # The curves OpenSSL reads from the public keys.
    local id curve
    for id in 11:prime256v1 12:secp384r1 13:secp521r1; do
        curve=${id#*:}
        id=${id%%:*}
        ok openssl pkey -pubin -in "$TEST_TMP/pub-$id.pem" -noout -text
        assert_contains "$RUN_OUT" "ASN1 OID: $curve" "curve of public key $id read from the token"
    done
}

test_ed25519_keypairgen_sign_verify_and_openssl_verifies() {
    init_pins
    make_messages
    # OpenSC 0.23 spells Ed25519 "EC:edwards25519" ("EC:ed25519" is unknown to it).
    keypairgen EC:edwards25519 21 ed25519
    assert_contains "$RUN_OUT" "Private Key Object; EC_EDWARDS" "the generated Ed25519 private key"
    sign_check 21 EDDSA
    ok openssl pkey -pubin -in "$TEST_TMP/pub-21.pem" -noout -text
    assert_contains "$RUN_OUT" "ED25519 Public-Key" "Ed25519 public key read from the token"
}

test_a_mechanism_of_another_key_type_is_refused() {
    init_pins
    make_messages
    keypairgen EC:prime256v1 31 mismatch-ec
    refused pk11 --login --pin "$USER_PIN" --sign -m SHA256-RSA-PKCS --id 31 -i "$TEST_TMP/msg" -o "$TEST_TMP/sig"
    assert_contains "$RUN_OUT" "CKR_KEY_TYPE_INCONSISTENT" "C_SignInit of an RSA mechanism with an EC key"
}

# ---------------------------------------------------------------- private keys stay in

test_private_keys_are_invisible_before_login_and_their_values_never_leave() {
    init_pins
    keypairgen rsa:2048 01 sealed-rsa
    keypairgen EC:prime256v1 02 sealed-ec

    # No login: the public keys only.
    ok pk11 -O
    assert_contains "$RUN_OUT" "Public Key Object; RSA 2048 bits" "pkcs11-tool -O without login"
    assert_not_contains "$RUN_OUT" "Private Key Object" "pkcs11-tool -O without login"

    ok pk11 --login --pin "$USER_PIN" -O --type privkey
    assert_eq 2 "$(grep -cF 'Access:     sensitive, always sensitive, never extractable, local' <<<"$RUN_OUT" || true)" \
        "private keys pkcs11-tool -O shows as sensitive, always sensitive, never extractable, local"

    # pkcs11-tool 0.23 does not try to read a private key (it says "sorry,
    # reading private keys not (yet) supported" and exits 0): it must at
    # least write nothing.
    run pk11 --login --pin "$USER_PIN" --read-object --type privkey --id 01 -o "$TEST_TMP/priv.out"
    [[ ! -s $TEST_TMP/priv.out ]] || fail "pkcs11-tool --read-object --type privkey wrote $(stat -c %s "$TEST_TMP/priv.out") bytes"

    # The module itself refuses the secret values.
    export P11DRIVE_PIN=$USER_PIN
    refused "$P11DRIVE" read-secret sealed-rsa
    assert_contains "$RUN_OUT" "CKA_SENSITIVE true, CKA_EXTRACTABLE false" "flags of the generated RSA key"
    assert_contains "$RUN_OUT" "CKA_PRIVATE_EXPONENT: C_GetAttributeValue returned CKR_ATTRIBUTE_SENSITIVE, length CK_UNAVAILABLE_INFORMATION" \
        "reading the private exponent of a sensitive key"
    refused "$P11DRIVE" read-secret sealed-ec
    assert_contains "$RUN_OUT" "CKA_VALUE: C_GetAttributeValue returned CKR_ATTRIBUTE_SENSITIVE, length CK_UNAVAILABLE_INFORMATION" \
        "reading the private value of a sensitive EC key"

    # The public half reads back, and OpenSSL parses it.
    pubkey_pem 01 "$TEST_TMP/pub-01.pem"
    ok openssl pkey -pubin -in "$TEST_TMP/pub-01.pem" -noout -text
    assert_contains "$RUN_OUT" "Public-Key: (2048 bit)" "RSA public key read from the token"
}

# ---------------------------------------------------------------- GnuTLS

TOKEN_URL="pkcs11:token=$TOKEN_LABEL"

test_p11tool_generates_keys_and_test_signs_with_them() {
    init_pins
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" \
        --generate-privkey ecdsa --curve secp256r1 --label gnutls-ec --outfile "$TEST_TMP/gnutls-ec.pub" "$TOKEN_URL"
    ok openssl pkey -pubin -in "$TEST_TMP/gnutls-ec.pub" -noout -text
    assert_contains "$RUN_OUT" "ASN1 OID: prime256v1" "public key p11tool printed for the generated ECDSA key"
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" \
        --test-sign "$TOKEN_URL;object=gnutls-ec;type=private"
    assert_contains "$RUN_OUT" "Signing using ECDSA-SHA256... ok" "p11tool --test-sign with the ECDSA key"
    assert_contains "$RUN_OUT" "Verifying against private key parameters... ok" "p11tool --test-sign with the ECDSA key"
    assert_contains "$RUN_OUT" "Verifying against public key in the token... ok" "p11tool --test-sign with the ECDSA key"

    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" \
        --generate-privkey rsa --bits 2048 --label gnutls-rsa --outfile "$TEST_TMP/gnutls-rsa.pub" "$TOKEN_URL"
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" \
        --test-sign "$TOKEN_URL;object=gnutls-rsa;type=private"
    assert_contains "$RUN_OUT" "Signing using RSA-SHA256... ok" "p11tool --test-sign with the RSA key"
    assert_contains "$RUN_OUT" "Verifying against public key in the token... ok" "p11tool --test-sign with the RSA key"

    # Without a login p11tool lists the public keys, not the private ones.
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --list-all "$TOKEN_URL"
    assert_contains "$RUN_OUT" "object=gnutls-ec;type=public" "p11tool --list-all without login"
    assert_not_contains "$RUN_OUT" "type=private" "p11tool --list-all without login"
}

test_certtool_self_signs_with_a_token_key_through_the_registered_module() {
    protect_etc_pkcs11
    init_pins
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" \
        --generate-privkey ecdsa --label certtool-key --outfile "$TEST_TMP/key.pub" "$TOKEN_URL"
    ok "$IT_REPO/scripts/register-module.sh" --system "$P11KEYCHAIN_MODULE"
    ok p11-kit list-modules
    assert_line "$RUN_OUT" '^ +token: login$' "p11-kit list-modules after registering" 'token'

    cat >"$TEST_TMP/cert.cfg" <<'EOF'
cn = "certtool on p11keychain"
organization = "p11keychain tests"
serial = 7
expiration_days = 30
ca
cert_signing_key
signing_key
EOF
    # No --provider: certtool finds the module through p11-kit.
    ok env GNUTLS_PIN="$USER_PIN" certtool --generate-self-signed \
        --load-privkey "$TOKEN_URL;object=certtool-key;type=private" \
        --template "$TEST_TMP/cert.cfg" --outfile "$TEST_TMP/cert.pem"
    ok openssl x509 -in "$TEST_TMP/cert.pem" -noout -subject -text
    assert_contains "$RUN_OUT" "CN = certtool on p11keychain" "subject of certtool's certificate"
    assert_contains "$RUN_OUT" "ecdsa-with-SHA256" "signature algorithm of certtool's certificate"
    ok openssl verify -CAfile "$TEST_TMP/cert.pem" "$TEST_TMP/cert.pem"
    assert_contains "$RUN_OUT" "cert.pem: OK" "openssl verify of the self-signed certificate"
    # The certificate holds the token's public key.
    openssl x509 -in "$TEST_TMP/cert.pem" -noout -pubkey | openssl pkey -pubin -outform der >"$TEST_TMP/cert-key.der"
    openssl pkey -pubin -in "$TEST_TMP/key.pub" -outform der >"$TEST_TMP/token-key.der"
    assert_same_file "$TEST_TMP/token-key.der" "$TEST_TMP/cert-key.der" "public key in certtool's certificate"

    # Stored on the token, the certificate pairs up with its key (same CKA_ID).
    ok p11tool --batch --login --set-pin "$USER_PIN" --write --no-mark-private \
        --load-certificate "$TEST_TMP/cert.pem" --label certtool-key "$TOKEN_URL"
    ok p11tool --batch --login --set-pin "$USER_PIN" --list-all "$TOKEN_URL;object=certtool-key"
    local ids
    ids=$(sed -nE 's/^[[:space:]]*ID: //p' <<<"$RUN_OUT" | sort -u)
    assert_eq 1 "$(grep -c . <<<"$ids")" "distinct IDs of the certificate, public and private key certtool-key (IDs: $(tr '\n' ' ' <<<"$ids"))"
    assert_contains "$RUN_OUT" "type=cert" "p11tool --list-all of certtool-key"
    assert_contains "$RUN_OUT" "type=private" "p11tool --list-all of certtool-key"
}

# ---------------------------------------------------------------- raw scan

# scan_secrets WHEN: none of the $SECRETS (hex) is in any store file; every
# one of $PUBLICS (hex) is (the scan finds what is in the clear).
scan_secrets() {
    local hex
    note "scan $1: $(ls -l "$STORE" | tail -n +2 | awk '{print $NF " " $5}' | tr '\n' ' ')"
    for hex in "${PUBLICS[@]}"; do
        assert_store_has "$hex" "scan $1: a public value"
    done
    for hex in "${SECRETS[@]}"; do
        assert_store_lacks "$hex" "scan $1: a private key value"
        # A part of it, in case it was stored cut or re-encoded around it.
        assert_store_lacks "${hex:16:32}" "scan $1: 16 bytes from inside a private key value"
    done
}

# hold_store_open: a client (p11drive watch) keeps the store open, so the
# pages written meanwhile stay in the -wal file, which the scan reads too.
hold_store_open() {
    "$P11DRIVE" watch --expect 1000000 --timeout 600 >"$TEST_TMP/watch.out" 2>&1 &
    WATCHER=$!
    defer "kill $WATCHER 2>/dev/null || true"
    wait_for_line "$TEST_TMP/watch.out" '^count' 30 "$WATCHER" ||
        fail "p11drive watch did not start: $(summarize "$(cat "$TEST_TMP/watch.out")")"
}

# scan_open_then_closed: scan_secrets with the store held open (-wal file
# present), then after the last client closed it.
scan_open_then_closed() {
    [[ -e $(store_file)-wal ]] || fail "no -wal file beside the store while a client has it open"
    scan_secrets "with the store open"
    kill "$WATCHER"
    wait "$WATCHER" 2>/dev/null || true
    # The last client to close the store checkpoints the -wal into it.
    ok "$P11DRIVE" count
    scan_secrets "after every client closed it"
    assert_integrity
}

test_raw_scan_of_the_store_finds_no_private_bytes_of_generated_keys() {
    local type
    init_pins
    export P11DRIVE_PIN=$USER_PIN
    SECRETS=()
    PUBLICS=()
    hold_store_open

    for type in rsa:2048 ec:prime256v1 ec:secp384r1 ec:secp521r1 ed25519; do
        # Extractable and not sensitive, so the test learns the secret bytes.
        ok "$P11DRIVE" genkey "$type" "scan-$type"
        assert_contains "$RUN_OUT" "check: the secret value matches the public key" "p11drive genkey $type"
        mapfile -t -O "${#SECRETS[@]}" SECRETS < <(awk '$1 == "secret" { print $3 }' <<<"$RUN_OUT")
        mapfile -t -O "${#PUBLICS[@]}" PUBLICS < <(awk '$1 == "public" { print $3 }' <<<"$RUN_OUT")
    done
    assert_eq 7 "${#SECRETS[@]}" "secret values printed (d, p, q of RSA; one per EC and Ed25519 key)"
    scan_open_then_closed

    # The values were the real ones: after login the module returns them.
    ok "$P11DRIVE" read-secret "scan-ec:prime256v1"
    assert_contains "$RUN_OUT" "CKA_SENSITIVE false, CKA_EXTRACTABLE true" "flags of the extractable key"
    assert_contains "$RUN_OUT" "secret CKA_VALUE ${SECRETS[3]}" "the extractable P-256 key's value read back"
}

# secret_hex PEM FIELD: a private key field as `openssl pkey -text` prints it
# (privateExponent, prime1, priv...), as plain hex without a leading 00.
secret_hex() {
    openssl pkey -in "$1" -noout -text |
        awk -v f="$2:" '$1 == f { on = 1; next } on && /^ +[0-9a-f:]+$/ { gsub(/[ :]/, ""); printf "%s", $0; next } on { exit }' |
        sed -E 's/^(00)+//'
}

test_raw_scan_of_the_store_finds_no_private_bytes_of_imported_keys() {
    init_pins
    make_messages
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TEST_TMP/imp-rsa.pem" 2>/dev/null
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/imp-ec.pem"
    SECRETS=("$(secret_hex "$TEST_TMP/imp-rsa.pem" privateExponent)" "$(secret_hex "$TEST_TMP/imp-rsa.pem" prime1)"
        "$(secret_hex "$TEST_TMP/imp-rsa.pem" prime2)" "$(secret_hex "$TEST_TMP/imp-ec.pem" priv)")
    PUBLICS=("$(secret_hex "$TEST_TMP/imp-rsa.pem" modulus)" "$(secret_hex "$TEST_TMP/imp-ec.pem" pub)")
    local hex
    for hex in "${SECRETS[@]}"; do
        ((${#hex} >= 64)) || fail "could not read a private field from the generated keys (got '$hex')"
    done

    # Each key with its certificate (public: in the clear, so the scan sees
    # the public values in them), by pkcs11-tool and by p11tool.
    local name
    hold_store_open
    for name in imp-rsa imp-ec; do
        openssl req -x509 -new -key "$TEST_TMP/$name.pem" -subj "/CN=$name" -days 30 -outform der -out "$TEST_TMP/$name.der"
        ok pk11 --write-object "$TEST_TMP/$name.der" --type cert --label "$name"
    done
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/imp-rsa.pem" --type privkey --id 41 --label imp-rsa
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" --write \
        --load-privkey "$TEST_TMP/imp-ec.pem" --label imp-ec --id 42 "$TOKEN_URL"
    scan_open_then_closed

    # The imported keys sign; OpenSSL verifies with the public half it kept.
    openssl pkey -in "$TEST_TMP/imp-rsa.pem" -pubout -out "$TEST_TMP/imp-rsa.pub"
    openssl pkey -in "$TEST_TMP/imp-ec.pem" -pubout -out "$TEST_TMP/imp-ec.pub"
    ok pk11 --login --pin "$USER_PIN" --sign -m SHA256-RSA-PKCS --id 41 -i "$TEST_TMP/msg" -o "$TEST_TMP/imp-rsa.sig"
    openssl_verify SHA256-RSA-PKCS "$TEST_TMP/imp-rsa.pub" "$TEST_TMP/imp-rsa.sig" "$TEST_TMP/msg"
    ok pk11 --login --pin "$USER_PIN" --sign -m ECDSA-SHA256 --id 42 --signature-format openssl \
        -i "$TEST_TMP/msg" -o "$TEST_TMP/imp-ec.sig"
    openssl_verify ECDSA-SHA256 "$TEST_TMP/imp-ec.pub" "$TEST_TMP/imp-ec.sig" "$TEST_TMP/msg"
    assert_integrity
}
