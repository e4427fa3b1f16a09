/*
 * p11secret: drives secret-key operations through a PKCS#11 module, for the
 * integration tests of secret keys, key wrapping and key derivation
 * (test_secret_keys.sh, test_key_wrap.sh, test_derive.sh,
 * test_secret_scan.sh). pkcs11-tool 0.23 has no verb for AES-GCM, AES-CTR,
 * CMAC, RSA-OAEP wrapping, ECDH with a KDF, X25519/X448 or C_CopyObject of a
 * secret key: this tool does those, and nothing else the real tools do.
 *
 * Keys are named by CKA_LABEL (one key of the class asked for must match).
 *
 *   p11secret create LABEL TYPE HEX [ATTR]...      C_CreateObject of a CKO_SECRET_KEY
 *                                                  with CKA_VALUE HEX (TYPE aes,
 *                                                  generic, sha1-hmac, sha256-hmac...)
 *   p11secret generate LABEL aes|generic BYTES [ATTR]...   C_GenerateKey
 *   p11secret value LABEL                          prints "value HEX" (CKA_VALUE),
 *                                                  or the CK_RV that refused it
 *   p11secret info LABEL                           prints the key's flags, sizes,
 *                                                  allowed mechanisms, check value
 *   p11secret encrypt|decrypt MECH LABEL IN OUT [iv=HEX] [aad=HEX] [tag=BITS]
 *                                                  [ctrbits=N] [chunk=N]
 *                                                  MECH aes-ecb, aes-cbc, aes-cbc-pad,
 *                                                  aes-ctr, aes-gcm; chunk=N goes
 *                                                  through C_*Update in pieces of N
 *                                                  bytes, else one C_Encrypt/C_Decrypt
 *                                                  (with the length query first)
 *   p11secret sign MECH LABEL IN OUT [chunk=N] [maclen=N]
 *   p11secret verify MECH LABEL IN SIG [chunk=N] [maclen=N]
 *                                                  MECH aes-cmac, aes-cmac-general,
 *                                                  sha1-hmac ... sha512-hmac,
 *                                                  sha256-hmac-general...
 *   p11secret wrap MECH WRAPPING_LABEL KEY_LABEL OUT [hash=sha1|sha256]
 *                                                  MECH aes-kw, aes-kwp (0x210b),
 *                                                  aes-kw-pad (0x210a), rsa-oaep; the
 *                                                  wrapping key is a secret key, else
 *                                                  a public key, with that label
 *   p11secret unwrap MECH UNWRAPPING_LABEL IN NEWLABEL TYPE [ATTR]... [hash=...]
 *   p11secret keypair x25519|x448|p256|p384 LABEL  C_GenerateKeyPair (CKA_DERIVE on
 *                                                  the private key); prints
 *                                                  "public HEX" (raw point or u)
 *   p11secret derive MECH LABEL PEER_HEX NEWLABEL BYTES [kdf=null|sha1|sha224|
 *                    sha256|sha384|sha512] [shared=HEX] [ATTR]...
 *                                                  C_DeriveKey, MECH ecdh or
 *                                                  ecdh-cofactor, a CKK_GENERIC_SECRET
 *                                                  of BYTES; prints "value HEX" when
 *                                                  the new key can be read
 *   p11secret hkdf LABEL NEWLABEL BYTES [prf=sha1|sha256|sha384|sha512]
 *                  [salt=HEX|salt=key:LABEL] [info=HEX] [extract=0|1] [expand=0|1]
 *                  [ATTR]...                       C_DeriveKey with CKM_HKDF_DERIVE
 *                                                  (v3.0 §2.43) from the generic
 *                                                  secret LABEL (no salt= is
 *                                                  CKF_HKDF_SALT_NULL); prints
 *                                                  "value HEX" when readable
 *   p11secret copy LABEL NEWLABEL [ATTR]...        C_CopyObject of a secret key
 *
 * ATTR is NAME=0|1 for token, private, sensitive, extractable, encrypt,
 * decrypt, sign, verify, wrap, unwrap, derive, trusted, wrap-with-trusted; or
 * id=HEX; or allowed=NUMBER,NUMBER... (CKA_ALLOWED_MECHANISMS, e.g. 0x251). create and generate default to token=1; derive to token=0,
 * sensitive=0, extractable=1.
 *
 * Every command logs in with $P11DRIVE_PIN when it is set, in a R/W session
 * on the token labelled $P11DRIVE_TOKEN (default "login"), as p11drive does.
 * A refused call prints "p11secret: C_X returned CKR_NAME (0x..)"; an output
 * file is written only when the operation succeeded.
 *
 * Exit status: 0 success, 1 a PKCS#11 call failed or a check did not hold,
 * 2 usage or setup error.
 *
 * Build: gcc -O2 -Wall -Wextra -ITests/include -Ip11/include -o p11secret p11secret.c p11secret_util.c -ldl
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p11secret.h"

/* ---------------------------------------------------------------- commands */

static int cmd_create(const char *label, const char *type, const char *hex, int argc, char **argv)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE kt = key_type_named(type);
    struct bytes value = from_hex(hex);
    struct tmpl t = { .n = 0 };
    add(&t, CKA_CLASS, &cls, sizeof cls);
    add(&t, CKA_KEY_TYPE, &kt, sizeof kt);
    add(&t, CKA_LABEL, (void *)label, strlen(label));
    add(&t, CKA_VALUE, value.data, value.len);
    add_bool(&t, CKA_TOKEN, 1);
    add_options(&t, argc, argv);
    open_module();
    CK_OBJECT_HANDLE key;
    CK_RV rv = p11->C_CreateObject(session, t.a, t.n, &key);
    if (rv != CKR_OK)
        die_rv("C_CreateObject", rv);
    printf("created %s\n", label);
    close_module();
    return 0;
}

static int cmd_generate(const char *label, const char *type, const char *bytes, int argc,
                        char **argv)
{
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE kt = key_type_named(type);
    CK_MECHANISM mech = { kt == CKK_AES ? CKM_AES_KEY_GEN : CKM_GENERIC_SECRET_KEY_GEN, NULL, 0 };
    struct tmpl t = { .n = 0 };
    add(&t, CKA_CLASS, &cls, sizeof cls);
    add(&t, CKA_KEY_TYPE, &kt, sizeof kt);
    add(&t, CKA_LABEL, (void *)label, strlen(label));
    add_ulong(&t, CKA_VALUE_LEN, strtoul(bytes, NULL, 10));
    add_bool(&t, CKA_TOKEN, 1);
    add_options(&t, argc, argv);
    open_module();
    CK_OBJECT_HANDLE key;
    CK_RV rv = p11->C_GenerateKey(session, &mech, t.a, t.n, &key);
    if (rv != CKR_OK)
        die_rv("C_GenerateKey", rv);
    printf("generated %s\n", label);
    close_module();
    return 0;
}

static int cmd_value(const char *label)
{
    open_module();
    struct bytes v;
    CK_RV rv = get_attr(find_key(CKO_SECRET_KEY, label, 0), CKA_VALUE, &v);
    if (rv != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_VALUE)", rv);
    print_hex("value", v.data, v.len);
    close_module();
    return 0;
}

static int cmd_info(const char *label)
{
    open_module();
    CK_OBJECT_HANDLE key = find_key(CKO_SECRET_KEY, label, 0);
    static const struct {
        const char *name;
        CK_ATTRIBUTE_TYPE type;
    } flags[] = {
        { "token", CKA_TOKEN }, { "private", CKA_PRIVATE }, { "sensitive", CKA_SENSITIVE },
        { "extractable", CKA_EXTRACTABLE }, { "always-sensitive", CKA_ALWAYS_SENSITIVE },
        { "never-extractable", CKA_NEVER_EXTRACTABLE }, { "local", CKA_LOCAL },
        { "encrypt", CKA_ENCRYPT }, { "decrypt", CKA_DECRYPT }, { "sign", CKA_SIGN },
        { "verify", CKA_VERIFY }, { "wrap", CKA_WRAP }, { "unwrap", CKA_UNWRAP },
        { "derive", CKA_DERIVE },
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        CK_BBOOL b = 0;
        CK_ATTRIBUTE a = { flags[i].type, &b, sizeof b };
        CK_RV rv = p11->C_GetAttributeValue(session, key, &a, 1);
        printf("%s %s\n", flags[i].name, rv != CKR_OK ? ckr_name(rv) : b ? "1" : "0");
    }
    CK_ULONG kt = 0, len = 0;
    CK_ATTRIBUTE a[] = { { CKA_KEY_TYPE, &kt, sizeof kt }, { CKA_VALUE_LEN, &len, sizeof len } };
    CK_RV rv = p11->C_GetAttributeValue(session, key, a, 2);
    if (rv != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_KEY_TYPE, CKA_VALUE_LEN)", rv);
    printf("key-type 0x%lx\nvalue-len %lu\n", (unsigned long)kt, (unsigned long)len);
    struct bytes mechs;
    if ((rv = get_attr(key, CKA_ALLOWED_MECHANISMS, &mechs)) == CKR_OK) {
        printf("allowed-mechanisms");
        for (size_t i = 0; i + sizeof(CK_MECHANISM_TYPE) <= mechs.len; i += sizeof(CK_MECHANISM_TYPE)) {
            CK_MECHANISM_TYPE m;
            memcpy(&m, mechs.data + i, sizeof m);
            printf("%s0x%lx", i ? "," : " ", (unsigned long)m);
        }
        printf("\n");
    } else {
        printf("allowed-mechanisms %s\n", ckr_name(rv));
    }
    struct bytes cv;
    if ((rv = get_attr(key, CKA_CHECK_VALUE, &cv)) == CKR_OK)
        print_hex("check-value", cv.data, cv.len);
    else
        printf("check-value %s\n", ckr_name(rv));
    close_module();
    return 0;
}

typedef CK_RV (*init_fn)(CK_SESSION_HANDLE, CK_MECHANISM_PTR, CK_OBJECT_HANDLE);
typedef CK_RV (*one_fn)(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG, CK_BYTE_PTR, CK_ULONG_PTR);
typedef CK_RV (*final_fn)(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG_PTR);

/* Encrypts or decrypts IN into OUT, in one call or in pieces of CHUNK bytes. */
static int cmd_crypt(int encrypt, const char *mech_name, const char *label, const char *in,
                     const char *out, int argc, char **argv)
{
    struct mech m;
    mechanism_named(&m, mech_name, argc, argv);
    struct bytes input = read_file(in);
    const char *chunk_opt = option(argc, argv, "chunk");
    size_t chunk = chunk_opt ? strtoul(chunk_opt, NULL, 10) : 0;
    open_module();
    init_fn init = encrypt ? p11->C_EncryptInit : p11->C_DecryptInit;
    one_fn one = encrypt ? p11->C_Encrypt : p11->C_Decrypt;
    one_fn update = encrypt ? p11->C_EncryptUpdate : p11->C_DecryptUpdate;
    final_fn final = encrypt ? p11->C_EncryptFinal : p11->C_DecryptFinal;
    const char *what_init = encrypt ? "C_EncryptInit" : "C_DecryptInit";
    CK_OBJECT_HANDLE key = find_key(CKO_SECRET_KEY, label, 0);
    CK_RV rv = init(session, &m.m, key);
    if (rv != CKR_OK)
        die_rv(what_init, rv);
    size_t cap = input.len + 64;
    unsigned char *output = xmalloc(cap);
    size_t used = 0;
    if (!chunk) {
        CK_ULONG n = 0;
        rv = one(session, input.data, input.len, NULL, &n);
        if (rv != CKR_OK)
            die_rv(encrypt ? "C_Encrypt (length query)" : "C_Decrypt (length query)", rv);
        if (n > cap)
            die_usage("the module asks for an output far larger than the input", NULL);
        rv = one(session, input.data, input.len, output, &n);
        if (rv != CKR_OK)
            die_rv(encrypt ? "C_Encrypt" : "C_Decrypt", rv);
        used = n;
    } else {
        for (size_t off = 0; off < input.len; off += chunk) {
            size_t piece = input.len - off < chunk ? input.len - off : chunk;
            CK_ULONG n = cap - used;
            rv = update(session, input.data + off, piece, output + used, &n);
            if (rv != CKR_OK)
                die_rv(encrypt ? "C_EncryptUpdate" : "C_DecryptUpdate", rv);
            used += n;
        }
        CK_ULONG n = cap - used;
        rv = final(session, output + used, &n);
        if (rv != CKR_OK)
            die_rv(encrypt ? "C_EncryptFinal" : "C_DecryptFinal", rv);
        used += n;
    }
    write_file(out, output, used);
    printf("%s %zu bytes into %zu\n", encrypt ? "encrypted" : "decrypted", input.len, used);
    close_module();
    return 0;
}

/* Signs IN into OUT (sign) or checks the MAC in OUT (verify). */
static int cmd_mac(int sign, const char *mech_name, const char *label, const char *in,
                   const char *sig_path, int argc, char **argv)
{
    struct mech m;
    mechanism_named(&m, mech_name, argc, argv);
    struct bytes input = read_file(in);
    const char *chunk_opt = option(argc, argv, "chunk");
    size_t chunk = chunk_opt ? strtoul(chunk_opt, NULL, 10) : 0;
    open_module();
    CK_OBJECT_HANDLE key = find_key(CKO_SECRET_KEY, label, 0);
    CK_RV rv = (sign ? p11->C_SignInit : p11->C_VerifyInit)(session, &m.m, key);
    if (rv != CKR_OK)
        die_rv(sign ? "C_SignInit" : "C_VerifyInit", rv);
    unsigned char mac[128];
    CK_ULONG n = sizeof mac;
    struct bytes expected = { NULL, 0 };
    if (!sign)
        expected = read_file(sig_path);
    if (chunk) {
        for (size_t off = 0; off < input.len; off += chunk) {
            size_t piece = input.len - off < chunk ? input.len - off : chunk;
            rv = (sign ? p11->C_SignUpdate : p11->C_VerifyUpdate)(session, input.data + off, piece);
            if (rv != CKR_OK)
                die_rv(sign ? "C_SignUpdate" : "C_VerifyUpdate", rv);
        }
        rv = sign ? p11->C_SignFinal(session, mac, &n)
                  : p11->C_VerifyFinal(session, expected.data, expected.len);
        if (rv != CKR_OK)
            die_rv(sign ? "C_SignFinal" : "C_VerifyFinal", rv);
    } else {
        rv = sign ? p11->C_Sign(session, input.data, input.len, mac, &n)
                  : p11->C_Verify(session, input.data, input.len, expected.data, expected.len);
        if (rv != CKR_OK)
            die_rv(sign ? "C_Sign" : "C_Verify", rv);
    }
    if (sign) {
        write_file(sig_path, mac, n);
        printf("signed %zu bytes: %lu-byte MAC\n", input.len, (unsigned long)n);
    } else {
        printf("MAC verified\n");
    }
    close_module();
    return 0;
}

/* The wrapping key LABEL: a secret key, else a public key. */
static CK_OBJECT_HANDLE wrapping_key(const char *label, CK_OBJECT_CLASS other)
{
    CK_OBJECT_HANDLE key = find_key(CKO_SECRET_KEY, label, 1);
    return key ? key : find_key(other, label, 0);
}

static int cmd_wrap(const char *mech_name, const char *wrapping, const char *label,
                    const char *out, int argc, char **argv)
{
    struct mech m;
    mechanism_named(&m, mech_name, argc, argv);
    open_module();
    CK_OBJECT_HANDLE wkey = wrapping_key(wrapping, CKO_PUBLIC_KEY);
    CK_OBJECT_HANDLE key = find_key(CKO_SECRET_KEY, label, 1);
    if (!key)
        key = find_key(CKO_PRIVATE_KEY, label, 0);
    CK_ULONG n = 0;
    CK_RV rv = p11->C_WrapKey(session, &m.m, wkey, key, NULL, &n);
    if (rv != CKR_OK)
        die_rv("C_WrapKey (length query)", rv);
    unsigned char *wrapped = xmalloc(n);
    if ((rv = p11->C_WrapKey(session, &m.m, wkey, key, wrapped, &n)) != CKR_OK)
        die_rv("C_WrapKey", rv);
    write_file(out, wrapped, n);
    printf("wrapped %s: %lu bytes\n", label, (unsigned long)n);
    close_module();
    return 0;
}

static int cmd_unwrap(const char *mech_name, const char *unwrapping, const char *in,
                      const char *label, const char *type, int argc, char **argv)
{
    struct mech m;
    mechanism_named(&m, mech_name, argc, argv);
    struct bytes wrapped = read_file(in);
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE kt = key_type_named(type);
    struct tmpl t = { .n = 0 };
    add(&t, CKA_CLASS, &cls, sizeof cls);
    add(&t, CKA_KEY_TYPE, &kt, sizeof kt);
    add(&t, CKA_LABEL, (void *)label, strlen(label));
    add_bool(&t, CKA_TOKEN, 1);
    add_options(&t, argc, argv);
    open_module();
    CK_OBJECT_HANDLE ukey = wrapping_key(unwrapping, CKO_PRIVATE_KEY), key;
    CK_RV rv = p11->C_UnwrapKey(session, &m.m, ukey, wrapped.data, wrapped.len, t.a, t.n, &key);
    if (rv != CKR_OK)
        die_rv("C_UnwrapKey", rv);
    printf("unwrapped %s\n", label);
    close_module();
    return 0;
}

/* A key pair for key agreement; prints the public value as the peer needs it. */
static int cmd_keypair(const char *curve, const char *label)
{
    static const struct {
        const char *name;
        CK_KEY_TYPE type;
        CK_BYTE params[12];
        CK_ULONG params_len;
    } curves[] = {
        { "x25519", CKK_EC_MONTGOMERY, { 0x06, 0x03, 0x2b, 0x65, 0x6e }, 5 },
        { "x448", CKK_EC_MONTGOMERY, { 0x06, 0x03, 0x2b, 0x65, 0x6f }, 5 },
        { "p256", CKK_EC, { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 }, 10 },
        { "p384", CKK_EC, { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 }, 7 },
    };
    size_t i;
    for (i = 0; i < sizeof curves / sizeof curves[0]; i++)
        if (!strcmp(curve, curves[i].name))
            break;
    if (i == sizeof curves / sizeof curves[0])
        die_usage("unknown curve", curve);
    CK_MECHANISM mech = { curves[i].type == CKK_EC ? CKM_EC_KEY_PAIR_GEN
                                                   : CKM_EC_MONTGOMERY_KEY_PAIR_GEN, NULL, 0 };
    CK_OBJECT_CLASS pub_cls = CKO_PUBLIC_KEY, priv_cls = CKO_PRIVATE_KEY;
    CK_KEY_TYPE kt = curves[i].type;
    CK_BBOOL yes = CK_TRUE;
    CK_ATTRIBUTE pub[] = {
        { CKA_CLASS, &pub_cls, sizeof pub_cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
        { CKA_TOKEN, &yes, sizeof yes }, { CKA_LABEL, (void *)label, strlen(label) },
        { CKA_EC_PARAMS, (void *)curves[i].params, curves[i].params_len },
    };
    CK_ATTRIBUTE priv[] = {
        { CKA_CLASS, &priv_cls, sizeof priv_cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
        { CKA_TOKEN, &yes, sizeof yes }, { CKA_LABEL, (void *)label, strlen(label) },
        { CKA_PRIVATE, &yes, sizeof yes }, { CKA_SENSITIVE, &yes, sizeof yes },
        { CKA_DERIVE, &yes, sizeof yes },
    };
    open_module();
    CK_OBJECT_HANDLE hpub, hpriv;
    CK_RV rv = p11->C_GenerateKeyPair(session, &mech, pub, 5, priv, 7, &hpub, &hpriv);
    if (rv != CKR_OK)
        die_rv("C_GenerateKeyPair", rv);
    struct bytes point;
    if ((rv = get_attr(hpub, CKA_EC_POINT, &point)) != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_EC_POINT)", rv);
    /* CKA_EC_POINT is a DER OCTET STRING (X9.62 §4.3.6 point, or RFC 7748 u);
     * some modules give the raw bytes: accept both. */
    size_t skip = 0;
    if (point.len >= 2 && point.data[0] == 0x04 && point.data[1] == point.len - 2)
        skip = 2;
    else if (point.len >= 3 && point.data[0] == 0x04 && point.data[1] == 0x81 &&
             point.data[2] == point.len - 3)
        skip = 3;
    print_hex("public", point.data + skip, point.len - skip);
    close_module();
    return 0;
}

static int cmd_derive(const char *mech_name, const char *label, const char *peer_hex,
                      const char *new_label, const char *bytes, int argc, char **argv)
{
    struct mech m;
    mechanism_named(&m, mech_name, 0, NULL);
    struct bytes peer = from_hex(peer_hex), shared = { NULL, 0 };
    const char *kdf = option(argc, argv, "kdf"), *shared_hex = option(argc, argv, "shared");
    if (shared_hex)
        shared = from_hex(shared_hex);
    static const struct {
        const char *name;
        CK_ULONG kdf;
    } kdfs[] = {
        { "null", CKD_NULL }, { "sha1", CKD_SHA1_KDF }, { "sha224", CKD_SHA224_KDF },
        { "sha256", CKD_SHA256_KDF }, { "sha384", CKD_SHA384_KDF }, { "sha512", CKD_SHA512_KDF },
    };
    CK_ECDH1_DERIVE_PARAMS params = { CKD_NULL, shared.len, shared.data, peer.len, peer.data };
    if (kdf) {
        size_t i;
        for (i = 0; i < sizeof kdfs / sizeof kdfs[0]; i++)
            if (!strcmp(kdf, kdfs[i].name))
                break;
        if (i == sizeof kdfs / sizeof kdfs[0])
            die_usage("unknown kdf", kdf);
        params.kdf = kdfs[i].kdf;
    }
    m.m.pParameter = &params;
    m.m.ulParameterLen = sizeof params;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE kt = CKK_GENERIC_SECRET;
    struct tmpl t = { .n = 0 };
    add(&t, CKA_CLASS, &cls, sizeof cls);
    add(&t, CKA_KEY_TYPE, &kt, sizeof kt);
    add(&t, CKA_LABEL, (void *)new_label, strlen(new_label));
    add_ulong(&t, CKA_VALUE_LEN, strtoul(bytes, NULL, 10));
    add_bool(&t, CKA_TOKEN, 0);
    add_bool(&t, CKA_SENSITIVE, 0);
    add_bool(&t, CKA_EXTRACTABLE, 1);
    add_options(&t, argc, argv);
    open_module();
    CK_OBJECT_HANDLE base = find_key(CKO_PRIVATE_KEY, label, 0), key;
    CK_RV rv = p11->C_DeriveKey(session, &m.m, base, t.a, t.n, &key);
    if (rv != CKR_OK)
        die_rv("C_DeriveKey", rv);
    printf("derived %s\n", new_label);
    struct bytes v;
    if ((rv = get_attr(key, CKA_VALUE, &v)) == CKR_OK)
        print_hex("value", v.data, v.len);
    else
        printf("value %s\n", ckr_name(rv));
    close_module();
    return 0;
}

static int cmd_hkdf(const char *label, const char *new_label, const char *bytes, int argc,
                    char **argv)
{
    static const struct {
        const char *name;
        CK_MECHANISM_TYPE type;
    } prfs[] = {
        { "sha1", CKM_SHA_1 }, { "sha256", CKM_SHA256 }, { "sha384", CKM_SHA384 },
        { "sha512", CKM_SHA512 },
    };
    const char *prf = option(argc, argv, "prf"), *salt = option(argc, argv, "salt");
    const char *info = option(argc, argv, "info"), *extract = option(argc, argv, "extract");
    const char *expand = option(argc, argv, "expand");
    CK_HKDF_PARAMS params;
    memset(&params, 0, sizeof params);
    params.bExtract = !extract || !strcmp(extract, "1");
    params.bExpand = !expand || !strcmp(expand, "1");
    params.prfHashMechanism = CKM_SHA256;
    if (prf) {
        size_t i;
        for (i = 0; i < sizeof prfs / sizeof prfs[0]; i++)
            if (!strcmp(prf, prfs[i].name))
                break;
        if (i == sizeof prfs / sizeof prfs[0])
            die_usage("unknown prf", prf);
        params.prfHashMechanism = prfs[i].type;
    }
    struct bytes salt_bytes = { NULL, 0 }, info_bytes = { NULL, 0 };
    params.ulSaltType = CKF_HKDF_SALT_NULL;
    if (salt && strncmp(salt, "key:", 4) != 0) {
        salt_bytes = from_hex(salt);
        params.ulSaltType = CKF_HKDF_SALT_DATA;
        params.pSalt = salt_bytes.data;
        params.ulSaltLen = salt_bytes.len;
    }
    if (info) {
        info_bytes = from_hex(info);
        params.pInfo = info_bytes.data;
        params.ulInfoLen = info_bytes.len;
    }
    CK_MECHANISM mech = { CKM_HKDF_DERIVE, &params, sizeof params };
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE kt = CKK_GENERIC_SECRET;
    struct tmpl t = { .n = 0 };
    add(&t, CKA_CLASS, &cls, sizeof cls);
    add(&t, CKA_KEY_TYPE, &kt, sizeof kt);
    add(&t, CKA_LABEL, (void *)new_label, strlen(new_label));
    add_ulong(&t, CKA_VALUE_LEN, strtoul(bytes, NULL, 10));
    add_bool(&t, CKA_TOKEN, 0);
    add_bool(&t, CKA_SENSITIVE, 0);
    add_bool(&t, CKA_EXTRACTABLE, 1);
    add_options(&t, argc, argv);
    open_module();
    if (salt && !strncmp(salt, "key:", 4)) {
        params.ulSaltType = CKF_HKDF_SALT_KEY;
        params.hSaltKey = find_key(CKO_SECRET_KEY, salt + 4, 0);
    }
    CK_OBJECT_HANDLE key;
    CK_RV rv = p11->C_DeriveKey(session, &mech, find_key(CKO_SECRET_KEY, label, 0), t.a, t.n, &key);
    if (rv != CKR_OK)
        die_rv("C_DeriveKey", rv);
    printf("derived %s\n", new_label);
    struct bytes v;
    if ((rv = get_attr(key, CKA_VALUE, &v)) == CKR_OK)
        print_hex("value", v.data, v.len);
    else
        printf("value %s\n", ckr_name(rv));
    close_module();
    return 0;
}

static int cmd_copy(const char *label, const char *new_label, int argc, char **argv)
{
    struct tmpl t = { .n = 0 };
    add(&t, CKA_LABEL, (void *)new_label, strlen(new_label));
    add_options(&t, argc, argv);
    open_module();
    CK_OBJECT_HANDLE copy;
    CK_RV rv = p11->C_CopyObject(session, find_key(CKO_SECRET_KEY, label, 0), t.a, t.n, &copy);
    if (rv != CKR_OK)
        die_rv("C_CopyObject", rv);
    printf("copied %s to %s\n", label, new_label);
    close_module();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die_usage("usage: p11secret COMMAND ARGS... (see the comment at the top of p11secret.c)", NULL);
    const char *cmd = argv[1];
    char **rest = argv + 2;
    int n = argc - 2;
    if (!strcmp(cmd, "create") && n >= 3)
        return cmd_create(rest[0], rest[1], rest[2], n - 3, rest + 3);
    if (!strcmp(cmd, "generate") && n >= 3)
        return cmd_generate(rest[0], rest[1], rest[2], n - 3, rest + 3);
    if (!strcmp(cmd, "value") && n == 1)
        return cmd_value(rest[0]);
    if (!strcmp(cmd, "info") && n == 1)
        return cmd_info(rest[0]);
    if ((!strcmp(cmd, "encrypt") || !strcmp(cmd, "decrypt")) && n >= 4)
        return cmd_crypt(!strcmp(cmd, "encrypt"), rest[0], rest[1], rest[2], rest[3], n - 4, rest + 4);
    if ((!strcmp(cmd, "sign") || !strcmp(cmd, "verify")) && n >= 4)
        return cmd_mac(!strcmp(cmd, "sign"), rest[0], rest[1], rest[2], rest[3], n - 4, rest + 4);
    if (!strcmp(cmd, "wrap") && n >= 4)
        return cmd_wrap(rest[0], rest[1], rest[2], rest[3], n - 4, rest + 4);
    if (!strcmp(cmd, "unwrap") && n >= 5)
        return cmd_unwrap(rest[0], rest[1], rest[2], rest[3], rest[4], n - 5, rest + 5);
    if (!strcmp(cmd, "keypair") && n == 2)
        return cmd_keypair(rest[0], rest[1]);
    if (!strcmp(cmd, "derive") && n >= 5)
        return cmd_derive(rest[0], rest[1], rest[2], rest[3], rest[4], n - 5, rest + 5);
    if (!strcmp(cmd, "hkdf") && n >= 3)
        return cmd_hkdf(rest[0], rest[1], rest[2], n - 3, rest + 3);
    if (!strcmp(cmd, "copy") && n >= 2)
        return cmd_copy(rest[0], rest[1], n - 2, rest + 2);
    die_usage("unknown command or wrong number of arguments", cmd);
    return EXIT_USAGE;
}
