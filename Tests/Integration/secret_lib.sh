# Helpers for the secret-key tests (test_secret_keys.sh, test_key_wrap.sh,
# test_derive.sh, test_secret_scan.sh); sourced by them after lib.sh, never
# run. Not named test_*.sh, so run.sh does not look for tests in it.
#
# p11secret (tools/p11secret.c and p11secret_util.c) does what pkcs11-tool 0.23 has no verb for
# (AES-GCM, AES-CTR, CMAC, RSA-OAEP wrapping, ECDH with a KDF, X25519/X448,
# copying a secret key). It is built here, on first use, into .build/integration
# beside p11drive: into a file of this process's own, then renamed over the binary, since
# run.sh runs two files at once and both may build it.

export P11SECRET=$IT_BUILD/p11secret

# build_p11secret: compiles tools/p11secret*.c when the binary is missing or
# older than one of its sources.
build_p11secret() {
    local tools=$IT_DIR/tools out
    if [[ -x $P11SECRET && $P11SECRET -nt $tools/p11secret.c && $P11SECRET -nt $tools/p11secret_util.c &&
        $P11SECRET -nt $tools/p11secret.h && $P11SECRET -nt $IT_TOOL_HEADER ]]; then
        return 0
    fi
    mkdir -p "$IT_BUILD"
    out=$(gcc "${IT_TOOL_CFLAGS[@]}" -o "$P11SECRET.tmp.$$" "$tools/p11secret.c" "$tools/p11secret_util.c" -ldl 2>&1) ||
        fail "p11secret did not compile: $(summarize "$out")"
    mv -f "$P11SECRET.tmp.$$" "$P11SECRET"
}

# secret ARGS...: p11secret, logged in with the test user PIN (for ok/refused/run).
secret() {
    P11DRIVE_PIN=$USER_PIN "$P11SECRET" "$@"
}

# secret_setup: the token gets its PINs (secret keys are private objects) and
# p11secret is built.
secret_setup() {
    build_p11secret
    init_pins
}

# random_hex BYTES: that many random bytes, as lower-case hex.
random_hex() { head -c "$1" /dev/urandom | xxd -p | tr -d '\n'; }

# hex_to_file HEX FILE
hex_to_file() { xxd -r -p <<<"$1" >"$2"; }

# lower TEXT: TEXT in lower case (openssl mac prints upper-case hex).
lower() { tr '[:upper:]' '[:lower:]' <<<"$1"; }

# value_of LABEL: the CKA_VALUE of the secret key LABEL, in hex, read through
# the module (the key must be extractable and not sensitive).
value_of() {
    local out
    out=$(secret value "$1" 2>&1) || fail "reading CKA_VALUE of secret key $1 failed: $(summarize "$out")"
    awk '$1 == "value" { print $2 }' <<<"$out"
}

# write_secret FILE TYPE ID LABEL: pkcs11-tool --write-object of the secret
# key bytes in FILE (TYPE: AES:N, or GENERIC for a generic secret), private,
# extractable, for encryption, signing (MACs) and wrapping.
write_secret() {
    local type=()
    [[ $2 == GENERIC ]] || type=(--key-type "$2")
    ok pk11 --login --pin "$USER_PIN" --write-object "$1" --type secrkey "${type[@]}" \
        --id "$3" --label "$4" --private --extractable --usage-decrypt --usage-sign --usage-wrap
}

# aes_cipher BYTES MODE: OpenSSL's name of AES with a key of BYTES bytes in MODE.
aes_cipher() { echo "aes-$(($1 * 8))-$2"; }

# py_gcm enc|dec KEY IV AAD TAG_BITS IN OUT: AES-GCM by Python's
# `cryptography` (python3-cryptography), the check independent of the module:
# enc writes ciphertext || tag (the tag cut to TAG_BITS, as PKCS#11 gives it);
# dec reads that and fails (status 1) when the tag does not verify.
py_gcm() {
    python3 - "$@" <<'PY'
import sys
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.exceptions import InvalidTag
op, key, iv, aad, bits, src, dst = sys.argv[1:]
key, iv, aad, tag_len = bytes.fromhex(key), bytes.fromhex(iv), bytes.fromhex(aad), int(bits) // 8
data = open(src, "rb").read()
if op == "enc":
    e = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    e.authenticate_additional_data(aad)
    out = e.update(data) + e.finalize() + e.tag[:tag_len]
else:
    ct, tag = data[:-tag_len], data[-tag_len:]
    d = Cipher(algorithms.AES(key), modes.GCM(iv, tag, min_tag_length=tag_len)).decryptor()
    d.authenticate_additional_data(aad)
    try:
        out = d.update(ct) + d.finalize()
    except InvalidTag:
        sys.exit("python cryptography: the GCM tag does not verify")
open(dst, "wb").write(out)
PY
}

# flip_byte FILE OFFSET OUT: OUT is FILE with the byte at OFFSET (negative:
# from the end) XORed with 0x01.
flip_byte() {
    python3 -c '
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[int(sys.argv[2])] ^= 1
open(sys.argv[3], "wb").write(b)' "$@"
}
