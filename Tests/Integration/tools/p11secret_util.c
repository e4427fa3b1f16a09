/*
 * p11secret_util.c: the helpers of p11secret (see p11secret.c): errors by
 * CK_RV name, hex and files, loading the module and logging in, finding keys
 * by label, attribute templates from NAME=VALUE arguments, mechanisms and
 * their parameters by name.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p11secret.h"

CK_FUNCTION_LIST_PTR p11;
CK_SESSION_HANDLE session;

/* ---------------------------------------------------------------- errors */

void die_rv(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11secret: %s returned %s (0x%lx)\n", what, ckr_name(rv),
            (unsigned long)rv);
    exit(EXIT_CHECK);
}

void die_usage(const char *msg, const char *arg)
{
    fprintf(stderr, "p11secret: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(EXIT_USAGE);
}

void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        die_usage("out of memory", NULL);
    return p;
}

/* ---------------------------------------------------------------- bytes */

struct bytes from_hex(const char *hex)
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

void print_hex(const char *tag, const unsigned char *p, size_t n)
{
    printf("%s ", tag);
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
}

struct bytes read_file(const char *path)
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

void write_file(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die_usage("cannot write", path);
}

/* ---------------------------------------------------------------- module */

/* Loads $P11KEYCHAIN_MODULE, opens a R/W session on the token and logs in
 * with $P11DRIVE_PIN when it is set. */
void open_module(void)
{
    const char *path = getenv("P11KEYCHAIN_MODULE");
    if (!path || !*path)
        die_usage("P11KEYCHAIN_MODULE is not set", NULL);
    struct p11test_module m;
    char why[512];
    if (p11test_load(path, &m, why, sizeof why) != 0)
        die_usage(why, NULL);
    p11 = m.list;
    CK_RV rv = p11test_initialize(p11);
    if (rv != CKR_OK)
        die_rv("C_Initialize", rv);

    const char *want = getenv("P11DRIVE_TOKEN");
    want = want && *want ? want : "login";
    CK_SLOT_ID slot;
    rv = p11test_find_token(p11, want, &slot, NULL);
    if (rv == CKR_TOKEN_NOT_PRESENT)
        die_usage("no token with this label", want);
    if (rv != CKR_OK)
        die_rv("C_GetSlotList", rv);
    rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session);
    if (rv != CKR_OK)
        die_rv("C_OpenSession", rv);
    const char *pin = getenv("P11DRIVE_PIN");
    if (pin && *pin) {
        rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
        if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN)
            die_rv("C_Login", rv);
    }
}

void close_module(void)
{
    CK_RV rv = p11->C_CloseSession(session);
    if (rv != CKR_OK)
        die_rv("C_CloseSession", rv);
    if ((rv = p11->C_Finalize(NULL)) != CKR_OK)
        die_rv("C_Finalize", rv);
}

/* The one object of class CLS labelled LABEL; 0 when there is none and
 * OPTIONAL, else the test fails. */
CK_OBJECT_HANDLE find_key(CK_OBJECT_CLASS cls, const char *label, int optional)
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
CK_RV get_attr(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type, struct bytes *out)
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

void add(struct tmpl *t, CK_ATTRIBUTE_TYPE type, void *p, CK_ULONG len)
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

void add_bool(struct tmpl *t, CK_ATTRIBUTE_TYPE type, int v)
{
    t->bools[t->nb] = v ? CK_TRUE : CK_FALSE;
    add(t, type, &t->bools[t->nb], sizeof(CK_BBOOL));
    t->nb++;
}

void add_ulong(struct tmpl *t, CK_ATTRIBUTE_TYPE type, CK_ULONG v)
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

/* The options of commands, not attributes: add_options skips them. */
static const char *const other_options[] = {
    "iv", "aad", "tag", "ctrbits", "chunk", "maclen", "hash", "kdf", "shared",
    "prf", "salt", "info", "extract", "expand",
};

/* Adds NAME=0|1 or id=HEX; a name that is neither an attribute nor another
 * option is a usage error (a typo must not pass silently). */
void add_options(struct tmpl *t, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq)
            die_usage("expected NAME=VALUE", argv[i]);
        size_t n = (size_t)(eq - argv[i]), k;
        if (n == 2 && !strncmp(argv[i], "id", 2)) {
            struct bytes id = from_hex(eq + 1);
            add(t, CKA_ID, id.data, id.len);
            continue;
        }
        if (n == 7 && !strncmp(argv[i], "allowed", 7)) { /* allowed=0x1085,0x1087 */
            CK_MECHANISM_TYPE *list = xmalloc(16 * sizeof *list);
            CK_ULONG count = 0;
            for (const char *p = eq + 1; *p && count < 16; count++) {
                char *end;
                list[count] = strtoul(p, &end, 0);
                if (end == p)
                    die_usage("allowed= takes mechanism numbers separated by commas", argv[i]);
                p = *end == ',' ? end + 1 : end;
            }
            add(t, CKA_ALLOWED_MECHANISMS, list, count * sizeof *list);
            continue;
        }
        for (k = 0; k < sizeof bool_attrs / sizeof bool_attrs[0]; k++) {
            if (strlen(bool_attrs[k].name) == n && !strncmp(argv[i], bool_attrs[k].name, n)) {
                add_bool(t, bool_attrs[k].type, !strcmp(eq + 1, "1"));
                break;
            }
        }
        if (k < sizeof bool_attrs / sizeof bool_attrs[0])
            continue;
        for (k = 0; k < sizeof other_options / sizeof other_options[0]; k++)
            if (strlen(other_options[k]) == n && !strncmp(argv[i], other_options[k], n))
                break;
        if (k == sizeof other_options / sizeof other_options[0])
            die_usage("unknown option", argv[i]);
    }
}

/* The value of option NAME= among ARGV, or NULL. */
const char *option(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
            return argv[i] + n + 1;
    return NULL;
}

CK_KEY_TYPE key_type_named(const char *name)
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
void mechanism_named(struct mech *m, const char *name, int argc, char **argv)
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
