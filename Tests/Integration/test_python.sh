# python-pkcs11 (from PyPI, in a virtual environment under .build) against the module: find
# keys and certificates by label, sign on the token, verify on the token and with openssl,
# and generate a key pair the other tools see. The client is tools/pkcs11_sign.py.

PYTHON_PKCS11_VERSION=0.10.1
PY_VENV=$IT_BUILD/python-venv

# python_setup: the token gets its PINs; $PY is a Python with python-pkcs11, installed from
# PyPI into $PY_VENV once (Debian's /usr/bin/python3 with python3-venv, whatever python3
# comes first on PATH: the cp311 wheel needs no compiler).
python_setup() {
    init_pins
    PY=$PY_VENV/bin/python
    if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('python-pkcs11') != '$PYTHON_PKCS11_VERSION')" 2>/dev/null; then
        note "installing python-pkcs11 $PYTHON_PKCS11_VERSION into $PY_VENV"
        rm -rf "$PY_VENV"
        ok /usr/bin/python3 -m venv "$PY_VENV"
        ok timeout 300 "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check \
            "python-pkcs11==$PYTHON_PKCS11_VERSION"
    fi
    mkdir -p "$TEST_TMP/signed"
    head -c 1000 /dev/urandom >"$TEST_TMP/data"
}

# pysign ARGS...: tools/pkcs11_sign.py on the module's token with the user PIN.
pysign() {
    "$PY" "$IT_DIR/tools/pkcs11_sign.py" "$P11KEYCHAIN_MODULE" "$TOKEN_LABEL" "$USER_PIN" "$TEST_TMP/data" \
        "$TEST_TMP/signed" "$@"
}

# write_identity NAME KEYSPEC: a self-signed certificate with a new key (openssl req -newkey
# KEYSPEC), written to the token by pkcs11-tool as private key, public key and certificate,
# all with label NAME and the certificate's key hash as CKA_ID.
write_identity() {
    openssl req -x509 -newkey "$2" -nodes -subj "/CN=$1" -days 30 -keyout "$CERTS/$1.key" \
        -out "$CERTS/$1.pem" 2>/dev/null || fail "openssl req could not make $1"
    openssl x509 -in "$CERTS/$1.pem" -noout -pubkey >"$CERTS/$1.pub"
    local id
    id=$(cert_key_id "$CERTS/$1.pem")
    ok pk11 --login --pin "$USER_PIN" --write-object "$CERTS/$1.key" --type privkey --id "$id" --label "$1"
    ok pk11 --login --pin "$USER_PIN" --write-object "$CERTS/$1.pub" --type pubkey --id "$id" --label "$1"
    ok pk11 --write-object "$CERTS/$1.pem" --type cert --id "$id" --label "$1"
}

test_python_pkcs11_finds_by_label_signs_and_verifies_ec_and_rsa() {
    python_setup
    write_identity py-ec ec:<(openssl ecparam -name prime256v1)
    write_identity py-rsa rsa:2048
    ok pysign py-ec py-rsa
    assert_line "$RUN_OUT" '^signed py-ec ECDSA-SHA256: 64 bytes, verified on the token, altered message rejected, 1 certificate\(s\)$' \
        "python-pkcs11 with the EC key" '^(signed|failed)'
    assert_line "$RUN_OUT" '^signed py-rsa SHA256-RSA-PKCS: 256 bytes, verified on the token, altered message rejected, 1 certificate\(s\)$' \
        "python-pkcs11 with the RSA key" '^(signed|failed)'
    local name
    for name in py-ec py-rsa; do
        # The certificate python-pkcs11 found by label is the one written.
        openssl x509 -in "$CERTS/$name.pem" -outform der -out "$CERTS/$name.der"
        assert_same_file "$CERTS/$name.der" "$TEST_TMP/signed/$name.der" "certificate python-pkcs11 found as $name"
        # openssl, outside PKCS#11, checks the token's signature with the certificate's key.
        assert_sha256_signature_verifies "$CERTS/$name.pub" "$TEST_TMP/signed/$name.sig" "$TEST_TMP/data" \
            "openssl's check of the signature python-pkcs11 made with $name"
    done
}

test_python_pkcs11_generates_a_key_pair_that_other_tools_find_by_label() {
    python_setup
    ok pysign --generate py-made
    assert_line "$RUN_OUT" '^generated py-made: EC P-256' "python-pkcs11 key generation" '^(generated|failed)'
    assert_line "$RUN_OUT" '^signed py-made ECDSA-SHA256: 64 bytes, verified on the token' \
        "python-pkcs11 signing with the key it made" '^(signed|failed)'
    openssl pkey -pubin -inform der -in "$TEST_TMP/signed/py-made.pub.der" -out "$TEST_TMP/py-made.pub"
    ok openssl dgst -sha256 -verify "$TEST_TMP/py-made.pub" -signature "$TEST_TMP/signed/py-made.sig" "$TEST_TMP/data"
    # Token objects: another process, another tool finds both halves by label.
    ok pk11 --login --pin "$USER_PIN" -O
    assert_line "$RUN_OUT" '^Private Key Object; EC' "pkcs11-tool -O after python-pkcs11 generated a key" 'Object'
    assert_eq 2 "$(grep -cE "^ +label: +py-made\$" <<<"$RUN_OUT" || true)" \
        "objects labelled py-made that pkcs11-tool lists (private and public key)"
    # A second run finds the stored pair again, by label.
    ok pysign py-made
    assert_line "$RUN_OUT" '^signed py-made ECDSA-SHA256: 64 bytes, verified on the token' \
        "python-pkcs11 finding the stored key in a new process" '^(signed|failed)'
}

test_python_pkcs11_reports_a_wrong_pin_and_finds_nothing_without_login() {
    python_setup
    write_identity py-locked ec:<(openssl ecparam -name prime256v1)
    run "$PY" "$IT_DIR/tools/pkcs11_sign.py" "$P11KEYCHAIN_MODULE" "$TOKEN_LABEL" 9999 "$TEST_TMP/data" \
        "$TEST_TMP/signed" py-locked
    assert_eq 1 "$RUN_STATUS" "exit status of python-pkcs11 with a wrong PIN"
    assert_contains "$RUN_OUT" "PinIncorrect" "python-pkcs11's error for a wrong PIN"
    # Without a login the private key is not found (a private object), the certificate is.
    ok "$PY" - "$P11KEYCHAIN_MODULE" "$TOKEN_LABEL" <<'PYTHON'
import sys, pkcs11
from pkcs11 import Attribute, ObjectClass
token = pkcs11.lib(sys.argv[1]).get_token(token_label=sys.argv[2])
with token.open() as session:
    for cls in (ObjectClass.CERTIFICATE, ObjectClass.PRIVATE_KEY):
        found = list(session.get_objects({Attribute.CLASS: cls, Attribute.LABEL: "py-locked"}))
        print(f"{cls.name}: {len(found)}")
PYTHON
    assert_line "$RUN_OUT" '^CERTIFICATE: 1$' "certificates found without a login" ': [0-9]'
    assert_line "$RUN_OUT" '^PRIVATE_KEY: 0$' "private keys found without a login" ': [0-9]'
}
