# The core rules through real processes and tools: a copy of a key
# obeys the one-way rules (CKA_SENSITIVE only turns on, CKA_EXTRACTABLE only
# turns off) and is a working key that OpenSSL verifies the signatures of;
# private keys written with CKA_PRIVATE=FALSE leave no secret byte in any file
# of the store and still sign; a token without a user PIN, or without a login,
# takes no private key; another process re-initialising the token ends this
# process's login; 30 processes guessing the PIN at once get exactly the 10
# tries the counter allows. (The ABI tests of the same rules are CoreRulesTests.)

# core_message: the message the tests sign, in $TEST_TMP/msg.
core_message() {
    printf 'a key stays in the token and every copy of it works\n' >"$TEST_TMP/msg"
}

# core_keypair TYPE ID LABEL: pkcs11-tool --keypairgen (sensitive and
# unextractable, pkcs11-tool's defaults), logged in.
core_keypair() {
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --id "$2" --label "$3"
    assert_contains "$RUN_OUT" "Key pair generated" "pkcs11-tool --keypairgen --key-type $1"
}

# core_openssl_verify KIND PUB SIG: OpenSSL verifies SIG over $TEST_TMP/msg
# (KIND rsa or ec: SHA-256 with PKCS#1 v1.5 or DER ECDSA; ed25519: EdDSA).
core_openssl_verify() {
    case $1 in
    rsa | ec) ok openssl dgst -sha256 -verify "$2" -signature "$3" "$TEST_TMP/msg" ;;
    ed25519) ok openssl pkeyutl -verify -pubin -inkey "$2" -rawin -in "$TEST_TMP/msg" -sigfile "$3" ;;
    esac
    assert_contains "$RUN_OUT" "Verified" "OpenSSL's check of $(basename "$3")"
}

# core_secret_hex PEM FIELD: a private key field as `openssl pkey -text`
# prints it (privateExponent, prime1, priv...), as plain hex without leading 00.
core_secret_hex() {
    openssl pkey -in "$1" -noout -text |
        awk -v f="$2:" '$1 == f { on = 1; next } on && /^ +[0-9a-f:]+$/ { gsub(/[ :]/, ""); printf "%s", $0; next } on { exit }' |
        sed -E 's/^(00)+//'
}

# core_scan WHEN: none of $SECRETS (hex) is in any file of the store, nor 16
# bytes from inside one; each of $PUBLICS is (the scan sees what is there).
core_scan() {
    local hex
    note "scan $1: $(ls -l "$STORE" | tail -n +2 | awk '{print $NF " " $5}' | tr '\n' ' ')"
    for hex in "${PUBLICS[@]}"; do
        assert_store_has "$hex" "scan $1: a public value"
    done
    for hex in "${SECRETS[@]}"; do
        assert_store_lacks "$hex" "scan $1: a private key value"
        assert_store_lacks "${hex:16:32}" "scan $1: 16 bytes from inside a private key value"
    done
}

# core_hold_store_open: a client (p11drive watch) keeps the store open, so the
# pages written meanwhile stay in the -wal file, which the scan reads too.
core_hold_store_open() {
    "$P11DRIVE" watch --expect 1000000 --timeout 600 >"$TEST_TMP/watch.out" 2>&1 &
    CORE_WATCHER=$!
    defer "kill $CORE_WATCHER 2>/dev/null || true"
    wait_for_line "$TEST_TMP/watch.out" '^count' 30 "$CORE_WATCHER" ||
        fail "p11drive watch did not start: $(summarize "$(cat "$TEST_TMP/watch.out")")"
}

# core_scan_open_then_closed: core_scan with the store held open (-wal file
# present), then after the last client closed it.
core_scan_open_then_closed() {
    [[ -e $(store_file)-wal ]] || fail "no -wal file beside the store while a client has it open"
    core_scan "with the store open"
    kill "$CORE_WATCHER"
    wait "$CORE_WATCHER" 2>/dev/null || true
    ok "$P11DRIVE" count # the last client to close the store checkpoints the -wal
    core_scan "after every client closed it"
    assert_integrity
}

# ---------------------------------------------------------------- copies

test_a_copy_of_a_sensitive_key_cannot_make_it_readable() {
    init_pins
    export P11DRIVE_PIN=$USER_PIN
    core_keypair EC:prime256v1 01 sealed
    local flags
    for flags in "sensitive=0" "extractable=1" "sensitive=0 extractable=1" "token=0 sensitive=0 extractable=1"; do
        # shellcheck disable=SC2086 # one argument per flag
        run "$P11DRIVE" copy sealed leaked $flags
        assert_contains "$RUN_OUT" "C_CopyObject returned CKR_ATTRIBUTE_READ_ONLY" \
            "C_CopyObject {$flags} of a sensitive, unextractable key"
    done
    ok pk11 --login --pin "$USER_PIN" -O --type privkey
    assert_eq 1 "$(grep -c 'Private Key Object' <<<"$RUN_OUT" || true)" "private keys after the refused copies"

    # A plain token copy is as sealed as the original.
    ok "$P11DRIVE" copy sealed plain token=1
    assert_contains "$RUN_OUT" "copy CKA_VALUE: C_GetAttributeValue returned CKR_ATTRIBUTE_SENSITIVE" \
        "reading the secret of a plain copy"
    refused "$P11DRIVE" read-secret plain
    assert_contains "$RUN_OUT" "CKA_SENSITIVE true, CKA_EXTRACTABLE false" "flags of the plain copy"
    ok pk11 --login --pin "$USER_PIN" -O --type privkey --label plain
    assert_contains "$RUN_OUT" "Access:     sensitive, always sensitive, never extractable, local" \
        "the plain copy's history flags"
}

test_a_copy_of_each_key_type_signs_and_openssl_verifies_it() {
    init_pins
    core_message
    export P11DRIVE_PIN=$USER_PIN
    local spec type id label kind how
    for spec in "rsa:2048 01 copy-rsa rsa" "EC:prime256v1 02 copy-ec ec" "EC:edwards25519 03 copy-ed25519 ed25519"; do
        read -r type id label kind <<<"$spec"
        core_keypair "$type" "$id" "$label"
        pubkey_pem "$id" "$TEST_TMP/pub-$id.pem"
        # As OpenSSL's pkcs11-provider does: a session copy of the token key signs.
        # Then a token copy, and a token copy whose original is destroyed first.
        for how in session token token-then-destroy; do
            ok "$P11DRIVE" sign-copy "$label" "$how" "$TEST_TMP/msg" "$TEST_TMP/sig-$id-$how"
            core_openssl_verify "$kind" "$TEST_TMP/pub-$id.pem" "$TEST_TMP/sig-$id-$how"
        done
    done
    # The token copies outlive their process and the originals: pkcs11-tool
    # signs with them (they keep the originals' CKA_ID) in a new process.
    ok pk11 --login --pin "$USER_PIN" -O --type privkey
    assert_eq 6 "$(grep -c 'Private Key Object' <<<"$RUN_OUT" || true)" \
        "private keys: one original and two token copies of each type, one original destroyed each"
    ok pk11 --login --pin "$USER_PIN" --sign -m SHA256-RSA-PKCS --id 01 -i "$TEST_TMP/msg" -o "$TEST_TMP/sig-01-later"
    core_openssl_verify rsa "$TEST_TMP/pub-01.pem" "$TEST_TMP/sig-01-later"
    ok pk11 --login --pin "$USER_PIN" --sign -m ECDSA-SHA256 --signature-format openssl --id 02 \
        -i "$TEST_TMP/msg" -o "$TEST_TMP/sig-02-later"
    core_openssl_verify ec "$TEST_TMP/pub-02.pem" "$TEST_TMP/sig-02-later"
}

# ---------------------------------------------------------------- sealing

test_private_keys_with_cka_private_false_leave_no_secret_in_the_store_and_still_sign() {
    init_pins
    core_message
    export P11DRIVE_PIN=$USER_PIN
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TEST_TMP/imp-rsa.pem" 2>/dev/null
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/imp-ec.pem"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/hidden.pem"
    SECRETS=("$(core_secret_hex "$TEST_TMP/imp-rsa.pem" privateExponent)"
        "$(core_secret_hex "$TEST_TMP/imp-rsa.pem" prime1)" "$(core_secret_hex "$TEST_TMP/imp-rsa.pem" prime2)"
        "$(core_secret_hex "$TEST_TMP/imp-ec.pem" priv)" "$(core_secret_hex "$TEST_TMP/hidden.pem" priv)")
    PUBLICS=("$(core_secret_hex "$TEST_TMP/imp-rsa.pem" modulus)")
    local hex label
    for hex in "${SECRETS[@]}"; do
        ((${#hex} >= 62)) || fail "could not read a private field from the generated keys (got '$hex')"
    done

    core_hold_store_open
    # Imported by GnuTLS with CKA_PRIVATE=FALSE.
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" --write --no-mark-private \
        --load-privkey "$TEST_TMP/imp-rsa.pem" --label imp-rsa --id 41 "pkcs11:token=$TOKEN_LABEL"
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --login --set-pin "$USER_PIN" --write --no-mark-private \
        --load-privkey "$TEST_TMP/imp-ec.pem" --label imp-ec --id 42 "pkcs11:token=$TOKEN_LABEL"
    # Generated with CKA_PRIVATE=FALSE, extractable, so that the test learns the secret.
    ok "$P11DRIVE" genkey-public ec:prime256v1 gen-ec
    mapfile -t -O "${#SECRETS[@]}" SECRETS < <(awk '$1 == "secret" { print $3 }' <<<"$RUN_OUT")
    ok "$P11DRIVE" genkey-public rsa:2048 gen-rsa
    mapfile -t -O "${#SECRETS[@]}" SECRETS < <(awk '$1 == "secret" { print $3 }' <<<"$RUN_OUT")
    assert_eq 9 "${#SECRETS[@]}" "secret values known (d, p, q of two RSA keys; three EC scalars)"
    # Imported as private by pkcs11-tool, then copied into a key with CKA_PRIVATE=FALSE.
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/hidden.pem" --type privkey --id 43 --label hidden
    ok "$P11DRIVE" copy hidden visible-copy private=0
    core_scan_open_then_closed

    # Found without a login: these private keys are public objects.
    ok pk11 -O --type privkey
    for label in imp-rsa imp-ec gen-ec gen-rsa visible-copy; do
        assert_line "$RUN_OUT" "^ +label: +$label\$" "private key $label listed without login" 'label'
    done
    assert_no_line "$RUN_OUT" '^ +label: +hidden$' "the private key 'hidden' listed without login"
    # And they sign after the login; OpenSSL verifies with the public halves.
    openssl pkey -in "$TEST_TMP/imp-rsa.pem" -pubout -out "$TEST_TMP/imp-rsa.pub"
    openssl pkey -in "$TEST_TMP/imp-ec.pem" -pubout -out "$TEST_TMP/imp-ec.pub"
    ok pk11 --login --pin "$USER_PIN" --sign -m SHA256-RSA-PKCS --id 41 -i "$TEST_TMP/msg" -o "$TEST_TMP/imp-rsa.sig"
    core_openssl_verify rsa "$TEST_TMP/imp-rsa.pub" "$TEST_TMP/imp-rsa.sig"
    ok pk11 --login --pin "$USER_PIN" --sign -m ECDSA-SHA256 --signature-format openssl --id 42 \
        -i "$TEST_TMP/msg" -o "$TEST_TMP/imp-ec.sig"
    core_openssl_verify ec "$TEST_TMP/imp-ec.pub" "$TEST_TMP/imp-ec.sig"
    ok "$P11DRIVE" sign-copy visible-copy session "$TEST_TMP/msg" "$TEST_TMP/visible-copy.sig"
    openssl pkey -in "$TEST_TMP/hidden.pem" -pubout -out "$TEST_TMP/hidden.pub"
    core_openssl_verify ec "$TEST_TMP/hidden.pub" "$TEST_TMP/visible-copy.sig"
}

test_a_token_without_a_user_pin_takes_no_private_key() {
    core_message
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/key.pem"
    local secret
    secret=$(core_secret_hex "$TEST_TMP/key.pem" priv)
    ((${#secret} >= 62)) || fail "could not read the private scalar of the generated key (got '$secret')"

    # A fresh token: no SO PIN, no user PIN, so no token key to seal with.
    refused p11tool --provider "$P11KEYCHAIN_MODULE" --batch --write --no-mark-private \
        --load-privkey "$TEST_TMP/key.pem" --label no-pin "pkcs11:token=$TOKEN_LABEL"
    # pkcs11-tool marks the key private: not logged in, as for any private object.
    run pk11 --write-object "$TEST_TMP/key.pem" --type privkey --id 51 --label no-pin
    assert_contains "$RUN_OUT" "CKR_USER_NOT_LOGGED_IN" "pkcs11-tool --write-object privkey on a token without a user PIN"
    unset P11DRIVE_PIN
    refused "$P11DRIVE" genkey-public ec:prime256v1 no-pin-generated
    assert_contains "$RUN_OUT" "C_GenerateKeyPair returned CKR_USER_PIN_NOT_INITIALIZED" \
        "C_GenerateKeyPair(CKA_PRIVATE=FALSE) on a token without a user PIN"
    ok pk11 -O
    assert_no_line "$RUN_OUT" 'Object;' "objects on the token after the refused creations"
    assert_store_lacks "$secret" "the refused private scalar"
}

test_a_private_key_with_cka_private_false_needs_a_login() {
    init_pins
    unset P11DRIVE_PIN
    refused "$P11DRIVE" genkey-public ec:prime256v1 not-logged-in
    assert_contains "$RUN_OUT" "C_GenerateKeyPair returned CKR_USER_NOT_LOGGED_IN" \
        "C_GenerateKeyPair(CKA_PRIVATE=FALSE) with a user PIN set but no login"
    ok pk11 --login --pin "$USER_PIN" -O
    assert_no_line "$RUN_OUT" 'Object;' "objects on the token after the refused generation"
}

# ---------------------------------------------------------------- PIN guesses

test_thirty_processes_guessing_at_once_lock_the_pin_after_exactly_ten_failures() {
    overlapping_pin_cost
    init_pins
    local i all incorrect locked pids=()
    mkdir "$TEST_TMP/guesses"
    # Each process: C_Initialize, C_OpenSession, one wrong C_Login, exit. The
    # PBKDF2 of a guess (100,000 rounds, tens of ms) is far longer than starting them all.
    for i in $(seq 1 30); do
        "$P11DRIVE" login user 9999 >"$TEST_TMP/guesses/$i" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i" || true
    done
    all=$(cat "$TEST_TMP"/guesses/*)
    echo "$all"
    incorrect=$(grep -c 'returned CKR_PIN_INCORRECT' <<<"$all" || true)
    locked=$(grep -c 'returned CKR_PIN_LOCKED' <<<"$all" || true)
    assert_eq 10 "$incorrect" "CKR_PIN_INCORRECT among 30 wrong guesses at once ($locked CKR_PIN_LOCKED)"
    assert_eq 20 "$locked" "CKR_PIN_LOCKED among 30 wrong guesses at once"
    assert_flag "user PIN locked" "after 30 wrong guesses at once"
    refused "$P11DRIVE" login user "$USER_PIN"
    assert_contains "$RUN_OUT" "C_Login(user) returned CKR_PIN_LOCKED" "the right PIN after the lock"
}

# ---------------------------------------------------------------- re-initialisation

test_another_process_reinitialising_the_token_ends_this_process_login() {
    init_pins
    export P11DRIVE_PIN=$USER_PIN
    local new_pin=98765 holder status i
    mkfifo "$TEST_TMP/step"
    "$P11DRIVE" hold-login "$new_pin" <"$TEST_TMP/step" >"$TEST_TMP/hold.out" 2>&1 &
    holder=$!
    defer "kill $holder 2>/dev/null || true"
    exec 3>"$TEST_TMP/step"
    wait_for_line "$TEST_TMP/hold.out" '^logged in$' 60 "$holder" ||
        fail "p11drive hold-login did not log in: $(summarize "$(cat "$TEST_TMP/hold.out")")"

    # Another process: C_InitToken with the SO PIN wipes the token; the SO
    # sets a new user PIN, and the user stores a private data object with it.
    ok pk11 --init-token --label "$TOKEN_LABEL" --so-pin "$SO_PIN"
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$new_pin"
    printf 'fresh' >"$TEST_TMP/fresh"
    ok pk11 --login --pin "$new_pin" --write-object "$TEST_TMP/fresh" --type data --label fresh --private

    echo go >&3
    exec 3>&-
    for ((i = 0; i < 600; i++)); do
        kill -0 "$holder" 2>/dev/null || break
        sleep 0.1
    done
    wait "$holder" && status=0 || status=$?
    local out
    out=$(cat "$TEST_TMP/hold.out")
    echo "$out"
    assert_eq 0 "$status" "exit status of p11drive hold-login ($(summarize "$out"))"
    assert_contains "$out" "C_CreateObject(after) returned CKR_USER_NOT_LOGGED_IN" \
        "a private C_CreateObject in the process whose token was re-initialised"
    assert_contains "$out" "C_Login(new PIN) returned CKR_OK" "logging in again with the new PIN"
    assert_contains "$out" "data objects: 1" "data objects the re-initialised token holds"
    assert_contains "$out" "object fresh: C_GetAttributeValue(CKA_VALUE) returned CKR_OK" \
        "reading the object the other process stored"
    assert_no_line "$out" 'C_GetAttributeValue\(CKA_VALUE\) returned CKR_(DEVICE_ERROR|GENERAL_ERROR)' \
        "every private object reads"
    assert_integrity
}
