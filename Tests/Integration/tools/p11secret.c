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
 *   p11secret info LABEL                           prints the key's flags and sizes
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
 *   p11secret copy LABEL NEWLABEL [ATTR]...        C_CopyObject of a secret key
 *
 * ATTR is NAME=0|1 for token, private, sensitive, extractable, encrypt,
 * decrypt, sign, verify, wrap, unwrap, derive, trusted, wrap-with-trusted; or
 * id=HEX. create and generate default to token=1; derive to token=0,
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
 * Build: gcc -O2 -Wall -Wextra -o p11secret p11secret.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <p11-kit-1/p11-kit/pkcs11.h>

/* PKCS#11 3.0 names p11-kit 0.24's 2.40 header lacks. */
#ifndef CKK_EC_MONTGOMERY
#define CKK_EC_MONTGOMERY 0x41UL
#endif
#ifndef CKM_EC_MONTGOMERY_KEY_PAIR_GEN
#define CKM_EC_MONTGOMERY_KEY_PAIR_GEN 0x1056UL
#endif
#ifndef CKM_AES_KEY_WRAP_KWP
#define CKM_AES_KEY_WRAP_KWP 0x210bUL
#endif
#ifndef CKM_AES_CMAC_GENERAL
#define CKM_AES_CMAC_GENERAL 0x108bUL
#endif

enum { EXIT_CHECK = 1, EXIT_USAGE = 2 };

static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE session;

/* ---------------------------------------------------------------- errors */

static const char *rv_name(CK_RV rv)
{
    switch (rv) {
#define NAME(x) case x: return #x
    NAME(CKR_OK); NAME(CKR_HOST_MEMORY); NAME(CKR_GENERAL_ERROR);
    NAME(CKR_FUNCTION_FAILED); NAME(CKR_ARGUMENTS_BAD); NAME(CKR_ATTRIBUTE_READ_ONLY);
    NAME(CKR_ATTRIBUTE_SENSITIVE); NAME(CKR_ATTRIBUTE_TYPE_INVALID);
    NAME(CKR_ATTRIBUTE_VALUE_INVALID); NAME(CKR_ACTION_PROHIBITED); NAME(CKR_DATA_INVALID);
    NAME(CKR_DATA_LEN_RANGE); NAME(CKR_DEVICE_ERROR); NAME(CKR_ENCRYPTED_DATA_INVALID);
    NAME(CKR_ENCRYPTED_DATA_LEN_RANGE); NAME(CKR_FUNCTION_NOT_SUPPORTED);
    NAME(CKR_KEY_HANDLE_INVALID); NAME(CKR_KEY_SIZE_RANGE); NAME(CKR_KEY_TYPE_INCONSISTENT);
    NAME(CKR_KEY_NOT_NEEDED); NAME(CKR_KEY_CHANGED); NAME(CKR_KEY_NEEDED);
    NAME(CKR_KEY_INDIGESTIBLE); NAME(CKR_KEY_FUNCTION_NOT_PERMITTED);
    NAME(CKR_KEY_NOT_WRAPPABLE); NAME(CKR_KEY_UNEXTRACTABLE); NAME(CKR_MECHANISM_INVALID);
    NAME(CKR_MECHANISM_PARAM_INVALID); NAME(CKR_OBJECT_HANDLE_INVALID);
    NAME(CKR_OPERATION_ACTIVE); NAME(CKR_OPERATION_NOT_INITIALIZED); NAME(CKR_PIN_INCORRECT);
    NAME(CKR_SESSION_HANDLE_INVALID); NAME(CKR_SESSION_READ_ONLY); NAME(CKR_SIGNATURE_INVALID);
    NAME(CKR_SIGNATURE_LEN_RANGE); NAME(CKR_TEMPLATE_INCOMPLETE);
    NAME(CKR_TEMPLATE_INCONSISTENT); NAME(CKR_UNWRAPPING_KEY_HANDLE_INVALID);
    NAME(CKR_UNWRAPPING_KEY_SIZE_RANGE); NAME(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT);
    NAME(CKR_USER_NOT_LOGGED_IN); NAME(CKR_WRAPPED_KEY_INVALID);
    NAME(CKR_WRAPPED_KEY_LEN_RANGE); NAME(CKR_WRAPPING_KEY_HANDLE_INVALID);
    NAME(CKR_WRAPPING_KEY_SIZE_RANGE); NAME(CKR_WRAPPING_KEY_TYPE_INCONSISTENT);
    NAME(CKR_DOMAIN_PARAMS_INVALID); NAME(CKR_CURVE_NOT_SUPPORTED);
    NAME(CKR_BUFFER_TOO_SMALL); NAME(CKR_CRYPTOKI_NOT_INITIALIZED);
    NAME(CKR_USER_ALREADY_LOGGED_IN); NAME(CKR_TOKEN_WRITE_PROTECTED);
#undef NAME
    default: return "unknown CK_RV";
    }
}

static void die_rv(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11secret: %s returned %s (0x%lx)\n", what, rv_name(rv),
            (unsigned long)rv);
    exit(EXIT_CHECK);
}

static void die_usage(const char *msg, const char *arg)
{
    fprintf(stderr, "p11secret: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(EXIT_USAGE);
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        die_usage("out of memory", NULL);
    return p;
}

/* ---------------------------------------------------------------- bytes */

struct bytes {
    unsigned char *data;
    size_t len;
};

static struct bytes from_hex(const char *hex)
{
    size_t n = strlen(hex);
    if (n % 2)
        die_usage("odd number of hex digits", hex);
    struct bytes b = { xmalloc(n / 2), n / 2 };
    for (size_t i = 0; i < n / 2; i++) {
        unsigned int v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            die_usage("not hex", hex);
        b.data[i] = (unsigned char)v;
    }
    return b;
}

static void print_hex(const char *tag, const unsigned char *p, size_t n)
{
    printf("%s ", tag);
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
}

static struct bytes read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die_usage("cannot open", path);
    struct bytes b = { NULL, 0 };
    size_t cap = 0;
    for (;;) {
        if (b.len == cap) {
            cap = cap ? 2 * cap : 65536;
            b.data = realloc(b.data, cap);
            if (!b.data)
                die_usage("out of memory", NULL);
        }
        size_t got = fread(b.data + b.len, 1, cap - b.len, f);
        if (got == 0)
            break;
        b.len += got;
    }
    fclose(f);
    return b;
}

static void write_file(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die_usage("cannot write", path);
}

/* ---------------------------------------------------------------- module */

static size_t padded_len(const unsigned char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\0'))
        n--;
    return n;
}

/* Loads $P11KEYCHAIN_MODULE, opens a R/W session on the token and logs in
 * with $P11DRIVE_PIN when it is set. */
static void open_module(void)
{
    const char *path = getenv("P11KEYCHAIN_MODULE");
    if (!path || !*path)
        die_usage("P11KEYCHAIN_MODULE is not set", NULL);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        die_usage("cannot load the module", dlerror());
    CK_C_GetFunctionList get_list = (CK_C_GetFunctionList)dlsym(lib, "C_GetFunctionList");
    if (!get_list)
        die_usage("the module exports no C_GetFunctionList", path);
    CK_RV rv = get_list(&p11);
    if (rv != CKR_OK)
        die_rv("C_GetFunctionList", rv);
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    if ((rv = p11->C_Initialize(&args)) != CKR_OK)
        die_rv("C_Initialize", rv);

    const char *want = getenv("P11DRIVE_TOKEN");
    want = want && *want ? want : "login";
    CK_SLOT_ID slots[64];
    CK_ULONG n = 64;
    if ((rv = p11->C_GetSlotList(CK_TRUE, slots, &n)) != CKR_OK)
        die_rv("C_GetSlotList", rv);
    CK_ULONG i;
    for (i = 0; i < n; i++) {
        CK_TOKEN_INFO info;
        if (p11->C_GetTokenInfo(slots[i], &info) != CKR_OK)
            continue;
        size_t len = padded_len(info.label, sizeof info.label);
        if (len == strlen(want) && memcmp(info.label, want, len) == 0)
            break;
    }
    if (i == n)
        die_usage("no token with this label", want);
    rv = p11->C_OpenSession(slots[i], CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session);
    if (rv != CKR_OK)
        die_rv("C_OpenSession", rv);
    const char *pin = getenv("P11DRIVE_PIN");
    if (pin && *pin) {
        rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
        if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN)
            die_rv("C_Login", rv);
    }
}

static void close_module(void)
{
    CK_RV rv = p11->C_CloseSession(session);
    if (rv != CKR_OK)
        die_rv("C_CloseSession", rv);
    if ((rv = p11->C_Finalize(NULL)) != CKR_OK)
        die_rv("C_Finalize", rv);
}

/* The one object of class CLS labelled LABEL; 0 when there is none and
 * OPTIONAL, else the test fails. */
static CK_OBJECT_HANDLE find_key(CK_OBJECT_CLASS cls, const char *label, int optional)
{
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_LABEL, (void *)label, strlen(label) },
    };
    CK_OBJECT_HANDLE found[2];
    CK_ULONG n = 0;
    CK_RV rv = p11->C_FindObjectsInit(session, tmpl, 2);
    if (rv != CKR_OK)
        die_rv("C_FindObjectsInit", rv);
    if ((rv = p11->C_FindObjects(session, found, 2, &n)) != CKR_OK)
        die_rv("C_FindObjects", rv);
    if ((rv = p11->C_FindObjectsFinal(session)) != CKR_OK)
        die_rv("C_FindObjectsFinal", rv);
    if (n == 0 && optional)
        return 0;
    if (n != 1) {
        fprintf(stderr, "p11secret: found %lu objects of class %lu labelled '%s', expected one\n",
                (unsigned long)n, (unsigned long)cls, label);
        exit(EXIT_CHECK);
    }
    return found[0];
}

/* One attribute through the two-call convention; *out is malloc'd. */
static CK_RV get_attr(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type, struct bytes *out)
{
    CK_ATTRIBUTE a = { type, NULL, 0 };
    CK_RV rv = p11->C_GetAttributeValue(session, obj, &a, 1);
    if (rv != CKR_OK)
        return rv;
    out->data = xmalloc(a.ulValueLen);
    a.pValue = out->data;
    rv = p11->C_GetAttributeValue(session, obj, &a, 1);
    out->len = a.ulValueLen;
    return rv;
}

/* ---------------------------------------------------------------- templates */

struct tmpl {
    CK_ATTRIBUTE a[32];
    CK_ULONG n;
    CK_BBOOL bools[32];
    CK_ULONG ulongs[8];
    int nb, nu;
};

static void add(struct tmpl *t, CK_ATTRIBUTE_TYPE type, void *p, CK_ULONG len)
{
    if (t->n == sizeof t->a / sizeof t->a[0])
        die_usage("too many attributes", NULL);
    for (CK_ULONG i = 0; i < t->n; i++) {
        if (t->a[i].type == type) { /* a later setting replaces a default */
            t->a[i].pValue = p;
            t->a[i].ulValueLen = len;
            return;
        }
    }
    t->a[t->n++] = (CK_ATTRIBUTE){ type, p, len };
}

static void add_bool(struct tmpl *t, CK_ATTRIBUTE_TYPE type, int v)
{
    t->bools[t->nb] = v ? CK_TRUE : CK_FALSE;
    add(t, type, &t->bools[t->nb], sizeof(CK_BBOOL));
    t->nb++;
}

static void add_ulong(struct tmpl *t, CK_ATTRIBUTE_TYPE type, CK_ULONG v)
{
    t->ulongs[t->nu] = v;
    add(t, type, &t->ulongs[t->nu], sizeof(CK_ULONG));
    t->nu++;
}

static const struct {
    const char *name;
    CK_ATTRIBUTE_TYPE type;
} bool_attrs[] = {
    { "token", CKA_TOKEN }, { "private", CKA_PRIVATE }, { "sensitive", CKA_SENSITIVE },
    { "extractable", CKA_EXTRACTABLE }, { "encrypt", CKA_ENCRYPT }, { "decrypt", CKA_DECRYPT },
    { "sign", CKA_SIGN }, { "verify", CKA_VERIFY }, { "wrap", CKA_WRAP },
    { "unwrap", CKA_UNWRAP }, { "derive", CKA_DERIVE }, { "trusted", CKA_TRUSTED },
    { "wrap-with-trusted", CKA_WRAP_WITH_TRUSTED },
};

/* Adds NAME=0|1 or id=HEX; other key=value options (iv=, hash=...) are the
 * caller's and are skipped. */
static void add_options(struct tmpl *t, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq)
            die_usage("expected NAME=VALUE", argv[i]);
        size_t n = (size_t)(eq - argv[i]);
        if (n == 2 && !strncmp(argv[i], "id", 2)) {
            struct bytes id = from_hex(eq + 1);
            add(t, CKA_ID, id.data, id.len);
            continue;
        }
        for (size_t k = 0; k < sizeof bool_attrs / sizeof bool_attrs[0]; k++) {
            if (strlen(bool_attrs[k].name) == n && !strncmp(argv[i], bool_attrs[k].name, n)) {
                add_bool(t, bool_attrs[k].type, !strcmp(eq + 1, "1"));
                break;
            }
        }
    }
}

/* The value of option NAME= among ARGV, or NULL. */
static const char *option(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
            return argv[i] + n + 1;
    return NULL;
}

static CK_KEY_TYPE key_type_named(const char *name)
{
    static const struct {
        const char *name;
        CK_KEY_TYPE type;
    } types[] = {
        { "aes", CKK_AES }, { "generic", CKK_GENERIC_SECRET },
        { "sha1-hmac", CKK_SHA_1_HMAC }, { "sha224-hmac", CKK_SHA224_HMAC },
        { "sha256-hmac", CKK_SHA256_HMAC }, { "sha384-hmac", CKK_SHA384_HMAC },
        { "sha512-hmac", CKK_SHA512_HMAC },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(name, types[i].name))
            return types[i].type;
    die_usage("unknown key type", name);
    return 0;
}

/* ---------------------------------------------------------------- mechanisms */

struct mech {
    CK_MECHANISM m;
    CK_BYTE iv[64];
    CK_GCM_PARAMS gcm;
    CK_AES_CTR_PARAMS ctr;
    CK_RSA_PKCS_OAEP_PARAMS oaep;
    CK_ULONG mac_len;
    struct bytes aad;
};

static CK_MECHANISM_TYPE hash_named(const char *name, CK_RSA_PKCS_MGF_TYPE *mgf)
{
    if (!name || !strcmp(name, "sha256")) {
        *mgf = CKG_MGF1_SHA256;
        return CKM_SHA256;
    }
    if (!strcmp(name, "sha1")) {
        *mgf = CKG_MGF1_SHA1;
        return CKM_SHA_1;
    }
    die_usage("unknown hash", name);
    return 0;
}

/* Fills M for mechanism NAME and its options (iv=, aad=, tag=, ctrbits=,
 * maclen=, hash=). */
static void mechanism_named(struct mech *m, const char *name, int argc, char **argv)
{
    static const struct {
        const char *name;
        CK_MECHANISM_TYPE type;
    } mechs[] = {
        { "aes-ecb", CKM_AES_ECB }, { "aes-cbc", CKM_AES_CBC },
        { "aes-cbc-pad", CKM_AES_CBC_PAD }, { "aes-ctr", CKM_AES_CTR },
        { "aes-gcm", CKM_AES_GCM }, { "aes-cmac", CKM_AES_CMAC },
        { "aes-cmac-general", CKM_AES_CMAC_GENERAL }, { "sha1-hmac", CKM_SHA_1_HMAC },
        { "sha224-hmac", CKM_SHA224_HMAC }, { "sha256-hmac", CKM_SHA256_HMAC },
        { "sha384-hmac", CKM_SHA384_HMAC }, { "sha512-hmac", CKM_SHA512_HMAC },
        { "sha256-hmac-general", CKM_SHA256_HMAC_GENERAL },
        { "sha512-hmac-general", CKM_SHA512_HMAC_GENERAL },
        { "aes-kw", CKM_AES_KEY_WRAP }, { "aes-kwp", CKM_AES_KEY_WRAP_KWP },
        { "aes-kw-pad", CKM_AES_KEY_WRAP_PAD }, { "rsa-oaep", CKM_RSA_PKCS_OAEP },
        { "ecdh", CKM_ECDH1_DERIVE }, { "ecdh-cofactor", CKM_ECDH1_COFACTOR_DERIVE },
    };
    memset(m, 0, sizeof *m);
    size_t i;
    for (i = 0; i < sizeof mechs / sizeof mechs[0]; i++)
        if (!strcmp(name, mechs[i].name))
            break;
    if (i == sizeof mechs / sizeof mechs[0])
        die_usage("unknown mechanism", name);
    m->m.mechanism = mechs[i].type;

    const char *iv = option(argc, argv, "iv");
    struct bytes ivb = { NULL, 0 };
    if (iv) {
        ivb = from_hex(iv);
        if (ivb.len > sizeof m->iv)
            die_usage("IV too long", iv);
        memcpy(m->iv, ivb.data, ivb.len);
    }
    switch (m->m.mechanism) {
    case CKM_AES_CBC:
    case CKM_AES_CBC_PAD:
        m->m.pParameter = m->iv;
        m->m.ulParameterLen = ivb.len;
        break;
    case CKM_AES_CTR: {
        const char *bits = option(argc, argv, "ctrbits");
        m->ctr.ulCounterBits = bits ? strtoul(bits, NULL, 10) : 128;
        if (ivb.len != 16)
            die_usage("aes-ctr needs iv= of 16 bytes (the counter block)", NULL);
        memcpy(m->ctr.cb, m->iv, 16);
        m->m.pParameter = &m->ctr;
        m->m.ulParameterLen = sizeof m->ctr;
        break;
    }
    case CKM_AES_GCM: {
        const char *aad = option(argc, argv, "aad"), *tag = option(argc, argv, "tag");
        if (aad)
            m->aad = from_hex(aad);
        m->gcm.pIv = m->iv;
        m->gcm.ulIvLen = ivb.len;
        m->gcm.ulIvBits = ivb.len * 8;
        m->gcm.pAAD = m->aad.data;
        m->gcm.ulAADLen = m->aad.len;
        m->gcm.ulTagBits = tag ? strtoul(tag, NULL, 10) : 128;
        m->m.pParameter = &m->gcm;
        m->m.ulParameterLen = sizeof m->gcm;
        break;
    }
    case CKM_AES_CMAC_GENERAL:
    case CKM_SHA256_HMAC_GENERAL:
    case CKM_SHA512_HMAC_GENERAL: {
        const char *len = option(argc, argv, "maclen");
        if (!len)
            die_usage("a _GENERAL mechanism needs maclen=N", NULL);
        m->mac_len = strtoul(len, NULL, 10);
        m->m.pParameter = &m->mac_len;
        m->m.ulParameterLen = sizeof m->mac_len;
        break;
    }
    case CKM_RSA_PKCS_OAEP:
        m->oaep.hashAlg = hash_named(option(argc, argv, "hash"), &m->oaep.mgf);
        m->oaep.source = CKZ_DATA_SPECIFIED;
        m->m.pParameter = &m->oaep;
        m->m.ulParameterLen = sizeof m->oaep;
        break;
    default:
        break;
    }
}

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
        printf("%s %s\n", flags[i].name, rv != CKR_OK ? rv_name(rv) : b ? "1" : "0");
    }
    CK_ULONG kt = 0, len = 0;
    CK_ATTRIBUTE a[] = { { CKA_KEY_TYPE, &kt, sizeof kt }, { CKA_VALUE_LEN, &len, sizeof len } };
    CK_RV rv = p11->C_GetAttributeValue(session, key, a, 2);
    if (rv != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_KEY_TYPE, CKA_VALUE_LEN)", rv);
    printf("key-type 0x%lx\nvalue-len %lu\n", (unsigned long)kt, (unsigned long)len);
    struct bytes cv;
    if ((rv = get_attr(key, CKA_CHECK_VALUE, &cv)) == CKR_OK)
        print_hex("check-value", cv.data, cv.len);
    else
        printf("check-value %s\n", rv_name(rv));
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
        printf("value %s\n", rv_name(rv));
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
    if (!strcmp(cmd, "copy") && n >= 2)
        return cmd_copy(rest[0], rest[1], n - 2, rest + 2);
    die_usage("unknown command or wrong number of arguments", cmd);
    return EXIT_USAGE;
}
