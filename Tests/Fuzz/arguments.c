/*
 * Templates p11fuzz hands the module: known and unknown attribute types, right and wrong
 * sizes, NULL values with lengths, impossible lengths and counts, certificate DER (valid and
 * mutated) as CKA_VALUE, and output templates for C_GetAttributeValue.
 *
 * Every pointer handed over is good for the length claimed for it, except lengths and counts
 * from impossible_length(), which no buffer can have: the module must refuse those before it
 * reads (the C boundary cannot trap).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* ---------------------------------------------------------------- attribute types */

typedef enum { K_ULONG, K_BOOL, K_BYTES, K_TEXT, K_DATE, K_DER, K_EC_PARAMS, K_EC_POINT,
               K_MECHANISMS, K_ATTRIBUTES } kind_t;

typedef struct {
    CK_ATTRIBUTE_TYPE type;
    kind_t kind;
    const char *name;
} attribute_t;

#define A(t, k) { t, k, #t }
static const attribute_t attributes[] = {
    A(CKA_CLASS, K_ULONG), A(CKA_TOKEN, K_BOOL), A(CKA_PRIVATE, K_BOOL), A(CKA_LABEL, K_TEXT),
    A(CKA_APPLICATION, K_TEXT), A(CKA_VALUE, K_BYTES), A(CKA_OBJECT_ID, K_BYTES),
    A(CKA_CERTIFICATE_TYPE, K_ULONG), A(CKA_ISSUER, K_BYTES), A(CKA_SERIAL_NUMBER, K_BYTES),
    A(CKA_AC_ISSUER, K_BYTES), A(CKA_OWNER, K_BYTES), A(CKA_ATTR_TYPES, K_BYTES),
    A(CKA_TRUSTED, K_BOOL), A(CKA_CERTIFICATE_CATEGORY, K_ULONG),
    A(CKA_JAVA_MIDP_SECURITY_DOMAIN, K_ULONG), A(CKA_URL, K_TEXT),
    A(CKA_HASH_OF_SUBJECT_PUBLIC_KEY, K_BYTES), A(CKA_HASH_OF_ISSUER_PUBLIC_KEY, K_BYTES),
    A(CKA_NAME_HASH_ALGORITHM, K_ULONG), A(CKA_CHECK_VALUE, K_BYTES), A(CKA_KEY_TYPE, K_ULONG),
    A(CKA_SUBJECT, K_BYTES), A(CKA_ID, K_BYTES), A(CKA_SENSITIVE, K_BOOL), A(CKA_ENCRYPT, K_BOOL),
    A(CKA_DECRYPT, K_BOOL), A(CKA_WRAP, K_BOOL), A(CKA_UNWRAP, K_BOOL), A(CKA_SIGN, K_BOOL),
    A(CKA_SIGN_RECOVER, K_BOOL), A(CKA_VERIFY, K_BOOL), A(CKA_VERIFY_RECOVER, K_BOOL),
    A(CKA_DERIVE, K_BOOL), A(CKA_START_DATE, K_DATE), A(CKA_END_DATE, K_DATE),
    A(CKA_MODULUS, K_BYTES), A(CKA_MODULUS_BITS, K_ULONG), A(CKA_PUBLIC_EXPONENT, K_BYTES),
    A(CKA_PRIVATE_EXPONENT, K_BYTES), A(CKA_PRIME_1, K_BYTES), A(CKA_PRIME_2, K_BYTES),
    A(CKA_EXPONENT_1, K_BYTES), A(CKA_EXPONENT_2, K_BYTES), A(CKA_COEFFICIENT, K_BYTES),
    A(CKA_PUBLIC_KEY_INFO, K_DER), A(CKA_VALUE_LEN, K_ULONG), A(CKA_EXTRACTABLE, K_BOOL),
    A(CKA_LOCAL, K_BOOL), A(CKA_NEVER_EXTRACTABLE, K_BOOL), A(CKA_ALWAYS_SENSITIVE, K_BOOL),
    A(CKA_KEY_GEN_MECHANISM, K_ULONG), A(CKA_MODIFIABLE, K_BOOL), A(CKA_COPYABLE, K_BOOL),
    A(CKA_DESTROYABLE, K_BOOL), A(CKA_EC_PARAMS, K_EC_PARAMS), A(CKA_EC_POINT, K_EC_POINT),
    A(CKA_ALWAYS_AUTHENTICATE, K_BOOL), A(CKA_WRAP_WITH_TRUSTED, K_BOOL),
    A(CKA_WRAP_TEMPLATE, K_ATTRIBUTES), A(CKA_UNWRAP_TEMPLATE, K_ATTRIBUTES),
    A(CKA_DERIVE_TEMPLATE, K_ATTRIBUTES), A(CKA_ALLOWED_MECHANISMS, K_MECHANISMS),
    A(CKA_UNIQUE_ID, K_TEXT),
};
#undef A
enum { ATTRIBUTE_COUNT = sizeof attributes / sizeof attributes[0] };

const char *attribute_name(CK_ATTRIBUTE_TYPE type)
{
    for (int i = 0; i < ATTRIBUTE_COUNT; i++)
        if (attributes[i].type == type)
            return attributes[i].name + 4;
    return "?";
}

/* Every known attribute type whose value is plain bytes (not a nested template): the
   exfiltration sweep (exfiltration.c) reads each of every object. */
int byte_attribute_types(CK_ATTRIBUTE_TYPE *out, int max)
{
    int n = 0;
    for (int i = 0; i < ATTRIBUTE_COUNT && n < max; i++)
        if (attributes[i].kind != K_ATTRIBUTES)
            out[n++] = attributes[i].type;
    return n;
}

static const attribute_t *find_attribute(CK_ATTRIBUTE_TYPE type)
{
    for (int i = 0; i < ATTRIBUTE_COUNT; i++)
        if (attributes[i].type == type)
            return &attributes[i];
    return NULL;
}

/* A type no table knows: vendor-defined, array flag, random. */
static CK_ATTRIBUTE_TYPE unknown_type(void)
{
    switch (below(4)) {
    case 0: return CKA_VENDOR_DEFINED | below(16);
    case 1: return CKF_ARRAY_ATTRIBUTE | below(0x1000);
    case 2: return below(0x700);
    default: return rnd();
    }
}

/* ---------------------------------------------------------------- values */

static const char *const labels[] = { "fuzz", "a", "label-1", "\xc3\xa9tiquette", "login",
                                      "\xff\xfe not utf-8", "spaces   " };

static CK_ULONG ulong_value(CK_ATTRIBUTE_TYPE type)
{
    static const CK_ULONG classes[] = { CKO_DATA, CKO_CERTIFICATE, CKO_PUBLIC_KEY, CKO_PRIVATE_KEY,
                                        CKO_SECRET_KEY, CKO_HW_FEATURE, CKO_DOMAIN_PARAMETERS,
                                        CKO_MECHANISM, CKO_VENDOR_DEFINED, 0x7 };
    static const CK_ULONG key_types[] = { CKK_RSA, CKK_EC, CKK_EC_EDWARDS, CKK_AES,
                                          CKK_GENERIC_SECRET, CKK_DSA, CKK_DH, 0x41 };
    static const CK_ULONG bits[] = { 2048, 2048, 2048, 0, 1, 1024, 2047, 4097, 16384, 0x80000000UL };
    static const CK_ULONG edges[] = { 0, 1, 2, 3, 0xffffffffUL, 0x7fffffffffffffffUL,
                                      0x8000000000000000UL, 0xffffffffffffffffUL };
    if (percent(20))
        return percent(50) ? PICK(edges) : rnd();
    switch (type) {
    case CKA_CLASS: return PICK(classes);
    case CKA_KEY_TYPE: return PICK(key_types);
    case CKA_CERTIFICATE_TYPE: return percent(80) ? CKC_X_509 : below(5);
    case CKA_MODULUS_BITS: return PICK(bits);
    case CKA_VALUE_LEN: return 1 + below(64);
    case CKA_CERTIFICATE_CATEGORY: return below(4);
    default: return below(16);
    }
}

/* P-256, P-384, P-521 and Ed25519 as DER OIDs, and v3.0's PrintableString form. */
static uint8_t *ec_params(size_t *len)
{
    static const uint8_t p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
    static const uint8_t p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };
    static const uint8_t p521[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23 };
    static const uint8_t ed25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
    static const uint8_t printable[] = { 0x13, 0x0c, 'e', 'd', 'w', 'a', 'r', 'd', 's', '2',
                                         '5', '5', '1', '9' };
    static const uint8_t secp256k1[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a };
    struct { const uint8_t *b; size_t n; } all[] = {
        { p256, sizeof p256 }, { p384, sizeof p384 }, { p521, sizeof p521 },
        { ed25519, sizeof ed25519 }, { printable, sizeof printable }, { secp256k1, sizeof secp256k1 },
    };
    if (percent(10)) {
        *len = small_length() % 40;
        return scratch_random(*len);
    }
    int i = (int)below(sizeof all / sizeof all[0]);
    *len = all[i].n;
    uint8_t *p = scratch_copy(all[i].b, all[i].n);
    if (percent(10)) /* near valid: one byte changed or the length cut */
        return mutate_bytes(p, len);
    return p;
}

/* The value for one entry: *len is exact for the buffer returned. */
static void *entry_value(CK_ATTRIBUTE_TYPE type, kind_t kind, size_t *len)
{
    switch (kind) {
    case K_ULONG: {
        if (percent(8)) { /* wrong size for a CK_ULONG */
            static const size_t sizes[] = { 0, 1, 4, 7, 9, 16 };
            *len = PICK(sizes);
            return scratch_random(*len);
        }
        CK_ULONG v = ulong_value(type);
        *len = sizeof v;
        return scratch_copy(&v, sizeof v);
    }
    case K_BOOL: {
        if (percent(8)) {
            static const size_t sizes[] = { 0, 2, 8 };
            *len = PICK(sizes);
            return scratch_random(*len);
        }
        static const uint8_t values[] = { 0, 1, 1, 0, 2, 0xff };
        uint8_t v = PICK(values);
        *len = 1;
        return scratch_copy(&v, 1);
    }
    case K_TEXT: {
        if (percent(70)) {
            const char *s = PICK(labels);
            *len = strlen(s);
            return scratch_copy(s, *len);
        }
        *len = small_length() % 300;
        return scratch_random(*len);
    }
    case K_DATE: {
        if (percent(70)) {
            char date[9];
            snprintf(date, sizeof date, "%04u%02u%02u", (unsigned)(1990 + below(80)),
                     (unsigned)below(14), (unsigned)below(33));
            *len = 8;
            return scratch_copy(date, 8);
        }
        *len = small_length() % 12;
        return scratch_random(*len);
    }
    case K_DER:
        if (percent(50)) {
            return certificate_der(len, 1);
        }
        *len = small_length() % 200;
        return scratch_random(*len);
    case K_EC_PARAMS:
        return ec_params(len);
    case K_EC_POINT: {
        /* An uncompressed point, raw or wrapped in an OCTET STRING (both are in use). */
        size_t n = percent(50) ? 65 : (percent(50) ? 32 : small_length() % 140);
        uint8_t *p = scratch_random(n + 2);
        p[0] = 0x04;
        p[1] = (uint8_t)n;
        if (n)
            p[2] = 0x04;
        if (percent(50)) {
            *len = n + 2;
            return p;
        }
        *len = n;
        return p + 2; /* exactly n bytes to the end of the buffer */
    }
    case K_MECHANISMS: {
        size_t n = below(5);
        CK_MECHANISM_TYPE *m = scratch(n * sizeof *m);
        for (size_t i = 0; i < n; i++)
            m[i] = percent(70) ? (CK_MECHANISM_TYPE)(0x1040 + below(0x20)) : rnd();
        *len = n * sizeof *m;
        if (*len && percent(10)) /* not a whole number of entries: a shorter claim is safe */
            *len -= 1 + below(7);
        return m;
    }
    case K_ATTRIBUTES: {
        /* A nested template whose pointers are good, or bytes of a size no array has. */
        if (percent(30)) {
            *len = 1 + below(23);
            return scratch_random(*len);
        }
        size_t n = below(3);
        CK_ATTRIBUTE *t = scratch(n * sizeof *t);
        for (size_t i = 0; i < n; i++) {
            CK_BBOOL *b = scratch(1);
            *b = (CK_BBOOL)below(2);
            t[i].type = percent(50) ? CKA_SIGN : CKA_EXTRACTABLE;
            t[i].pValue = b;
            t[i].ulValueLen = 1;
        }
        *len = n * sizeof *t;
        return t;
    }
    case K_BYTES:
    default:
        if (type == CKA_VALUE && percent(50))
            return certificate_der(len, percent(60));
        if (type == CKA_PUBLIC_EXPONENT && percent(60)) {
            static const uint8_t f4[] = { 0x01, 0x00, 0x01 }, three[] = { 0x03 };
            int four = percent(80);
            *len = four ? 3 : 1;
            return scratch_copy(four ? f4 : three, *len);
        }
        *len = small_length() % (percent(95) ? 600 : 9000);
        return scratch_random(*len);
    }
}

/* Fills one entry with a value of `type`, sometimes with a pointer/length anomaly the
   module can recognise: NULL with a length, a length with no buffer that big. */
static void fill_entry(CK_ATTRIBUTE *e, CK_ATTRIBUTE_TYPE type)
{
    const attribute_t *a = find_attribute(type);
    size_t len = 0;
    e->type = type;
    e->pValue = entry_value(type, a ? a->kind : K_BYTES, &len);
    e->ulValueLen = len;
    unsigned p = (unsigned)below(100);
    if (p < 3) {
        e->pValue = NULL;
        e->ulValueLen = 0;
    } else if (p < 6) {
        e->pValue = NULL;
        e->ulValueLen = (huge_allowed() && percent(30)) ? impossible_length() : 1 + below(64);
    } else if (p < 8 && len > 0) {
        e->ulValueLen = 0; /* a real buffer, claimed empty: a shorter claim is always safe */
    } else if (p < 11 && huge_allowed()) {
        e->ulValueLen = impossible_length();
    }
}

static CK_ATTRIBUTE_TYPE random_type(void)
{
    return percent(85) ? attributes[below(ATTRIBUTE_COUNT)].type : unknown_type();
}

/* ---------------------------------------------------------------- templates */

typedef struct {
    CK_ATTRIBUTE e[24];
    CK_ULONG n;
} builder_t;

static void add(builder_t *b, CK_ATTRIBUTE_TYPE type)
{
    if (b->n < 24)
        fill_entry(&b->e[b->n++], type);
}

static void add_ulong(builder_t *b, CK_ATTRIBUTE_TYPE type, CK_ULONG value)
{
    if (b->n >= 24)
        return;
    CK_ATTRIBUTE *e = &b->e[b->n++];
    e->type = type;
    e->pValue = scratch_copy(&value, sizeof value);
    e->ulValueLen = sizeof value;
}

static void add_bool(builder_t *b, CK_ATTRIBUTE_TYPE type, CK_BBOOL value)
{
    if (b->n >= 24)
        return;
    CK_ATTRIBUTE *e = &b->e[b->n++];
    e->type = type;
    e->pValue = scratch_copy(&value, 1);
    e->ulValueLen = 1;
}

static void add_extras(builder_t *b, int max)
{
    int n = (int)below((uint64_t)max + 1);
    for (int i = 0; i < n; i++)
        add(b, random_type());
}

static void creation_template(builder_t *b)
{
    unsigned p = (unsigned)below(100);
    if (p < 40) {
        add_ulong(b, CKA_CLASS, CKO_CERTIFICATE);
        if (percent(90))
            add_ulong(b, CKA_CERTIFICATE_TYPE, CKC_X_509);
        size_t len;
        uint8_t *der = certificate_der(&len, percent(50));
        CK_ATTRIBUTE *e = &b->e[b->n++];
        e->type = CKA_VALUE;
        e->pValue = der;
        e->ulValueLen = len;
        static const CK_ATTRIBUTE_TYPE extra[] = { CKA_LABEL, CKA_ID, CKA_TOKEN, CKA_PRIVATE,
                                                   CKA_TRUSTED, CKA_SUBJECT, CKA_ISSUER,
                                                   CKA_SERIAL_NUMBER, CKA_CERTIFICATE_CATEGORY,
                                                   CKA_START_DATE, CKA_MODIFIABLE };
        for (int i = (int)below(4); i > 0; i--)
            add(b, PICK(extra));
    } else if (p < 60) {
        add_ulong(b, CKA_CLASS, CKO_DATA);
        static const CK_ATTRIBUTE_TYPE extra[] = { CKA_VALUE, CKA_APPLICATION, CKA_LABEL,
                                                   CKA_OBJECT_ID, CKA_TOKEN, CKA_PRIVATE };
        for (int i = (int)below(5); i > 0; i--)
            add(b, PICK(extra));
    } else if (p < 75) {
        add_ulong(b, CKA_CLASS, CKO_PRIVATE_KEY);
        static const CK_KEY_TYPE types[] = { CKK_EC, CKK_EC, CKK_RSA, CKK_EC_EDWARDS };
        CK_KEY_TYPE type = PICK(types);
        add_ulong(b, CKA_KEY_TYPE, type);
        if (type == CKK_RSA) {
            static const CK_ATTRIBUTE_TYPE parts[] = { CKA_MODULUS, CKA_PUBLIC_EXPONENT,
                                                       CKA_PRIVATE_EXPONENT, CKA_PRIME_1,
                                                       CKA_PRIME_2, CKA_EXPONENT_1,
                                                       CKA_EXPONENT_2, CKA_COEFFICIENT };
            for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
                if (percent(85))
                    add(b, parts[i]);
        } else {
            add(b, CKA_EC_PARAMS);
            CK_ATTRIBUTE *e = &b->e[b->n++];
            size_t n = percent(70) ? 32 : small_length() % 80;
            e->type = CKA_VALUE;
            e->pValue = scratch_random(n);
            e->ulValueLen = n;
        }
        static const CK_ATTRIBUTE_TYPE flags[] = { CKA_TOKEN, CKA_PRIVATE, CKA_SENSITIVE,
                                                   CKA_EXTRACTABLE, CKA_SIGN, CKA_DECRYPT,
                                                   CKA_ALWAYS_AUTHENTICATE, CKA_LABEL, CKA_ID };
        for (int i = (int)below(5); i > 0; i--)
            add(b, PICK(flags));
    } else if (p < 85) {
        add_ulong(b, CKA_CLASS, CKO_PUBLIC_KEY);
        int rsa = percent(40);
        add_ulong(b, CKA_KEY_TYPE, rsa ? CKK_RSA : (percent(70) ? CKK_EC : CKK_EC_EDWARDS));
        if (rsa) {
            add(b, CKA_MODULUS);
            add(b, CKA_PUBLIC_EXPONENT);
        } else {
            add(b, CKA_EC_PARAMS);
            add(b, CKA_EC_POINT);
        }
        add_extras(b, 3);
    } else if (p < 90) {
        add_ulong(b, CKA_CLASS, CKO_SECRET_KEY);
        add_ulong(b, CKA_KEY_TYPE, percent(50) ? CKK_AES : CKK_GENERIC_SECRET);
        add(b, CKA_VALUE);
        add_extras(b, 3);
    } else {
        add_extras(b, 8);
    }
}

static void generation_template(builder_t *b, int public_half)
{
    static const CK_ATTRIBUTE_TYPE pub[] = { CKA_TOKEN, CKA_VERIFY, CKA_ENCRYPT, CKA_LABEL,
                                             CKA_ID, CKA_PRIVATE, CKA_MODIFIABLE };
    static const CK_ATTRIBUTE_TYPE priv[] = { CKA_TOKEN, CKA_PRIVATE, CKA_SENSITIVE,
                                              CKA_EXTRACTABLE, CKA_SIGN, CKA_DECRYPT, CKA_LABEL,
                                              CKA_ID, CKA_DERIVE, CKA_COPYABLE };
    if (public_half) {
        if (percent(85))
            add_ulong(b, CKA_MODULUS_BITS, percent(90) ? 2048 : ulong_value(CKA_MODULUS_BITS));
        if (percent(50))
            add(b, CKA_PUBLIC_EXPONENT);
        if (percent(85))
            add(b, CKA_EC_PARAMS);
        for (int i = (int)below(4); i > 0; i--)
            add(b, PICK(pub));
    } else {
        /* Mostly signing keys: what the sign family needs. */
        if (percent(80))
            add_bool(b, CKA_SIGN, CK_TRUE);
        if (percent(40))
            add_bool(b, CKA_DECRYPT, CK_TRUE);
        if (percent(5))
            add_bool(b, CKA_ALWAYS_AUTHENTICATE, CK_TRUE);
        for (int i = (int)below(4); i > 0; i--)
            add(b, PICK(priv));
    }
    add_extras(b, 1);
}

/* Copies the builder into an exact-size scratch array and applies count anomalies. */
static CK_ATTRIBUTE *finish(builder_t *b, CK_ULONG *count)
{
    if (b->n > 1 && percent(5)) /* a type twice */
        b->e[b->n - 1].type = b->e[0].type;
    for (CK_ULONG i = b->n; i > 1 && percent(30); i--) { /* order must not matter */
        CK_ULONG j = below(i);
        CK_ATTRIBUTE t = b->e[i - 1];
        b->e[i - 1] = b->e[j];
        b->e[j] = t;
    }
    CK_ATTRIBUTE *t = scratch_copy(b->e, b->n * sizeof b->e[0]);
    *count = b->n;
    unsigned p = (unsigned)below(100);
    if (p < 3)
        return NULL; /* count kept: NULL with entries must be refused */
    if (p < 5)
        *count = 0;
    else if (p < 8 && huge_class("huge-count"))
        *count = impossible_length();
    return t;
}

CK_ATTRIBUTE *random_template(template_use use, CK_ULONG *count)
{
    builder_t b = { .n = 0 };
    switch (use) {
    case T_CREATE:
        creation_template(&b);
        break;
    case T_FIND: {
        static const CK_ATTRIBUTE_TYPE types[] = { CKA_CLASS, CKA_LABEL, CKA_ID, CKA_TOKEN,
                                                   CKA_PRIVATE, CKA_KEY_TYPE, CKA_SUBJECT,
                                                   CKA_CERTIFICATE_TYPE, CKA_VALUE, CKA_ISSUER,
                                                   CKA_SERIAL_NUMBER, CKA_APPLICATION };
        for (int i = (int)below(4); i > 0; i--)
            add(&b, percent(85) ? PICK(types) : random_type());
        break;
    }
    case T_SET:
    case T_COPY: {
        static const CK_ATTRIBUTE_TYPE types[] = { CKA_LABEL, CKA_ID, CKA_SENSITIVE,
                                                   CKA_EXTRACTABLE, CKA_SIGN, CKA_PRIVATE,
                                                   CKA_TOKEN, CKA_VALUE, CKA_MODIFIABLE,
                                                   CKA_CLASS, CKA_TRUSTED, CKA_SUBJECT,
                                                   CKA_APPLICATION, CKA_ALWAYS_AUTHENTICATE };
        for (int i = (int)(use == T_SET ? 1 + below(3) : below(4)); i > 0; i--)
            add(&b, percent(85) ? PICK(types) : random_type());
        break;
    }
    case T_GEN_PUBLIC:
        generation_template(&b, 1);
        break;
    case T_GEN_PRIVATE:
        generation_template(&b, 0);
        break;
    }
    return finish(&b, count);
}

CK_ATTRIBUTE *output_template(CK_ULONG *count)
{
    static const CK_ATTRIBUTE_TYPE likely[] = { CKA_CLASS, CKA_LABEL, CKA_VALUE, CKA_ID,
                                                CKA_SUBJECT, CKA_ISSUER, CKA_KEY_TYPE,
                                                CKA_MODULUS, CKA_EC_POINT, CKA_EC_PARAMS,
                                                CKA_PRIVATE_EXPONENT, CKA_PUBLIC_KEY_INFO,
                                                CKA_SENSITIVE, CKA_UNIQUE_ID, CKA_TOKEN,
                                                CKA_ALLOWED_MECHANISMS, CKA_START_DATE };
    CK_ULONG n = 1 + below(6);
    CK_ATTRIBUTE *t = scratch(n * sizeof *t);
    for (CK_ULONG i = 0; i < n; i++) {
        t[i].type = percent(70) ? PICK(likely) : random_type();
        unsigned p = (unsigned)below(100);
        if (p < 35) { /* size query: the length is ignored */
            t[i].pValue = NULL;
            t[i].ulValueLen = percent(50) ? 0 : (huge_allowed() ? impossible_length() : rnd() >> 20);
        } else if (p < 65) { /* exact, maybe too small */
            size_t len = small_length();
            t[i].pValue = scratch(len);
            t[i].ulValueLen = len;
        } else if (p < 95 || !huge_allowed()) { /* larger than any value */
            t[i].pValue = out_big();
            t[i].ulValueLen = OUT_BIG;
        } else { /* a claim no buffer has, over a buffer larger than any value */
            t[i].pValue = out_big();
            t[i].ulValueLen = impossible_length();
        }
    }
    *count = n;
    unsigned p = (unsigned)below(100);
    if (p < 3)
        return NULL;
    if (p < 5)
        *count = 0;
    else if (p < 8 && huge_class("huge-count"))
        *count = impossible_length();
    return t;
}
