/*
 * Correctness oracles of p11fuzz for keys made from keys: wrap -> unwrap gives a
 * key with the same fingerprint (CKA_CHECK_VALUE, else what it does to a fixed block), a
 * changed byte of the wrapped blob does not unwrap, an unextractable key does not wrap; ECDH
 * from both sides gives one key; HKDF twice with the same inputs gives the same key or data,
 * and data derived from a sensitive key is private.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

static void destroy(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h)
{
    if (h)
        CALL(C_DestroyObject(s, h), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)h);
}

static int read_bool(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type)
{
    CK_ULONG n = 0;
    uint8_t *v = read_attribute(s, h, type, &n);
    return v && n == 1 ? *v != 0 : -1;
}

static int same_key(CK_OBJECT_HANDLE a, CK_OBJECT_HANDLE b, CK_KEY_TYPE type)
{
    uint8_t fa[128], fb[128];
    size_t na = key_fingerprint(a, type, fa, sizeof fa, 0), nb = key_fingerprint(b, type, fb, sizeof fb, 0);
    if (na && nb && fa[0] != fb[0]) /* one by its check value, one by its use: both by use */
        na = key_fingerprint(a, type, fa, sizeof fa, 1), nb = key_fingerprint(b, type, fb, sizeof fb, 1);
    if (!na || !nb)
        return -1; /* nothing to compare with */
    return na == nb && !memcmp(fa, fb, na);
}

/* ---------------------------------------------------------------- wrap, unwrap */

/* A key unwrapped from known plaintext: a readable session key of new random bytes is
   wrapped, destroyed, and unwrapped as sensitive and unextractable (a token key now and
   then). Its bytes exist nowhere else now: the exfiltration oracle tracks them. */
static void unwrap_known(CK_SESSION_HANDLE s, CK_MECHANISM *m, CK_OBJECT_HANDLE wrapping, CK_OBJECT_HANDLE unwrapping)
{
    if (!may_create())
        return;
    size_t len = percent(50) ? 16 : 32;
    uint8_t *value = scratch_random(len);
    CK_ATTRIBUTE t[] = { attr_ulong(CKA_CLASS, CKO_SECRET_KEY), attr_ulong(CKA_KEY_TYPE, CKK_AES),
                         { CKA_VALUE, value, len }, attr_bool(CKA_TOKEN, 0), attr_bool(CKA_SENSITIVE, 0),
                         attr_bool(CKA_EXTRACTABLE, 1), attr_bool(CKA_ENCRYPT, 1) };
    CK_OBJECT_HANDLE plain = 0, locked = 0;
    if (CALL(C_CreateObject(s, t, 7, &plain), "0x%lx, readable AES key to wrap (oracle)", (unsigned long)s) != CKR_OK)
        return;
    CK_ULONG blob_len = 1024;
    uint8_t *blob = scratch(blob_len);
    CK_RV rv = CALL(C_WrapKey(s, m, wrapping, plain, blob, &blob_len), "0x%lx, 0x%lx, known key (oracle)",
                    (unsigned long)s, (unsigned long)m->mechanism);
    destroy(s, plain);
    if (rv != CKR_OK)
        return;
    int token = percent(30);
    CK_ATTRIBUTE u[] = { attr_ulong(CKA_CLASS, CKO_SECRET_KEY), attr_ulong(CKA_KEY_TYPE, CKK_AES),
                         attr_bool(CKA_TOKEN, token), attr_bool(CKA_PRIVATE, oracle_logged_in()),
                         attr_bool(CKA_SENSITIVE, 1), attr_bool(CKA_EXTRACTABLE, 0), attr_bool(CKA_ENCRYPT, 1) };
    if (CALL(C_UnwrapKey(s, m, unwrapping, blob, blob_len, u, 7, &locked), "0x%lx, 0x%lx, as unextractable (oracle)",
             (unsigned long)s, (unsigned long)m->mechanism) != CKR_OK)
        return;
    objects_created++;
    char what[128];
    snprintf(what, sizeof what, "an AES key unwrapped by 0x%lx as sensitive and unextractable (%s), at iteration %lu",
             (unsigned long)m->mechanism, token ? "token" : "session", (unsigned long)iteration);
    exfiltration_track(value, len, locked, 0, what);
}

int oracle_wrap(listed_mechanism *lm)
{
    CK_SESSION_HANDLE s = oracle_session();
    CK_MECHANISM m = { lm->type, NULL, 0 };
    int rsa = lm->type == CKM_RSA_PKCS_OAEP;
    key_role wrapper = rsa ? K_RSA_PUB : (key_role)(K_AES16 + below(3));
    CK_OBJECT_HANDLE wrapping = oracle_key(wrapper), unwrapping = oracle_key(rsa ? K_RSA_PRIV : wrapper);
    static const key_role targets[] = { K_AES16, K_AES24, K_AES32, K_GENERIC32, K_GENERIC_ODD, K_GENERIC_ODD };
    key_role target_role = percent(12) ? K_LOCKED_AES : PICK(targets);
    CK_OBJECT_HANDLE target = oracle_key(target_role);
    if (!wrapping || !unwrapping || !target)
        return 0;
    if (rsa) {
        CK_RSA_PKCS_OAEP_PARAMS *p = scratch(sizeof *p);
        p->hashAlg = percent(50) ? CKM_SHA256 : random_hash();
        p->mgf = mgf_of(p->hashAlg);
        p->source = CKZ_DATA_SPECIFIED, p->pSourceData = NULL, p->ulSourceDataLen = 0;
        m.pParameter = p, m.ulParameterLen = sizeof *p;
    }
    if (percent(15)) {
        CK_MECHANISM bad = m;
        malformed(&bad);
        CK_ULONG n = OUT_BIG;
        check_param_error(CALL(C_WrapKey(s, &bad, wrapping, target, out_big(), &n),
                               "0x%lx, 0x%lx, malformed parameter (oracle)", (unsigned long)s,
                               (unsigned long)bad.mechanism),
                          &bad, "C_WrapKey");
    }
    CK_KEY_TYPE type = oracle_key_type(target_role);
    CK_ULONG key_len = 0, blob_len = 0;
    uint8_t *value_len = read_attribute(s, target, CKA_VALUE_LEN, &key_len);
    key_len = value_len && key_len == sizeof(CK_ULONG) ? *(CK_ULONG *)(void *)value_len : 0;
    CK_RV rv = CALL(C_WrapKey(s, &m, wrapping, target, NULL, &blob_len), "0x%lx, 0x%lx, size (oracle)",
                    (unsigned long)s, (unsigned long)m.mechanism);
    uint8_t *blob = NULL;
    if (rv == CKR_OK && blob_len < (1 << 16)) {
        blob = scratch(blob_len + 1);
        rv = CALL(C_WrapKey(s, &m, wrapping, target, blob, &blob_len), "0x%lx, 0x%lx, key 0x%lx (oracle)",
                  (unsigned long)s, (unsigned long)m.mechanism, (unsigned long)target);
    }
    if (target_role == K_LOCKED_AES) {
        if (rv == CKR_OK)
            oracle_failed("wrap-unextractable", "C_WrapKey(0x%lx) wrapped an unextractable key", (unsigned long)m.mechanism);
        return 0;
    }
    /* Zero-padded to whole 8-byte semiblocks; RFC 3394 needs two of them, so a key of 8 bytes
     * or fewer still cannot be wrapped (CKR_KEY_SIZE_RANGE is right for it). */
    if (rv == CKR_KEY_SIZE_RANGE && lm->type == CKM_AES_KEY_WRAP && key_len % 8 && key_len > 8)
        oracle_failed("wrap-kw-pad", "C_WrapKey(CKM_AES_KEY_WRAP) of a %lu-byte key: CKR_KEY_SIZE_RANGE "
                      "(the specification pads with zeros)", (unsigned long)key_len);
    if (rv != CKR_OK || !blob)
        return 0;
    exfiltration_scan(blob, blob_len, "C_WrapKey", "the wrapped blob");
    int sensitive = read_bool(s, target, CKA_SENSITIVE);
    CK_ATTRIBUTE t[12];
    int n = 0;
    t[n++] = attr_ulong(CKA_CLASS, CKO_SECRET_KEY);
    t[n++] = attr_ulong(CKA_KEY_TYPE, type);
    t[n++] = attr_bool(CKA_TOKEN, 0);
    t[n++] = attr_bool(CKA_PRIVATE, oracle_logged_in());
    t[n++] = attr_bool(CKA_SENSITIVE, sensitive != 0);
    t[n++] = attr_bool(CKA_EXTRACTABLE, 1);
    t[n++] = attr_bool(CKA_SIGN, 1);
    if (type == CKK_AES)
        t[n++] = attr_bool(CKA_ENCRYPT, 1);
    if (type == CKK_GENERIC_SECRET && lm->type == CKM_AES_KEY_WRAP && key_len)
        t[n++] = attr_ulong(CKA_VALUE_LEN, key_len);
    CK_OBJECT_HANDLE copy = 0;
    rv = CALL(C_UnwrapKey(s, &m, unwrapping, blob, blob_len, t, (CK_ULONG)n, &copy), "0x%lx, 0x%lx, len %lu (oracle)",
              (unsigned long)s, (unsigned long)m.mechanism, (unsigned long)blob_len);
    if (rv != CKR_OK)
        oracle_failed("wrap-roundtrip", "C_UnwrapKey(0x%lx) of a blob C_WrapKey made (%lu-byte key): 0x%lx",
                      (unsigned long)m.mechanism, (unsigned long)key_len, (unsigned long)rv);
    else if (same_key(target, copy, type) == 0)
        oracle_failed("wrap-roundtrip", "C_WrapKey/C_UnwrapKey(0x%lx) of a %lu-byte key gave another key",
                      (unsigned long)m.mechanism, (unsigned long)key_len);
    destroy(s, copy);
    if (percent(40))
        unwrap_known(s, &m, wrapping, unwrapping);
    blob[below(blob_len)] ^= (uint8_t)(1u << below(8));
    copy = 0;
    if (CALL(C_UnwrapKey(s, &m, unwrapping, blob, blob_len, t, (CK_ULONG)n, &copy), "0x%lx, 0x%lx, flipped (oracle)",
             (unsigned long)s, (unsigned long)m.mechanism) == CKR_OK) {
        destroy(s, copy);
        oracle_failed("unwrap-tamper", "C_UnwrapKey(0x%lx) unwrapped a blob with a flipped bit",
                      (unsigned long)m.mechanism);
    }
    return 1;
}

/* ---------------------------------------------------------------- derive */

static const uint8_t *raw_point(const uint8_t *p, CK_ULONG *len)
{
    /* CKA_EC_POINT is a DER OCTET STRING; ECDH takes the point itself (or the DER). */
    if (*len > 2 && p[0] == 0x04 && p[1] == *len - 2 && percent(70)) {
        *len -= 2;
        return p + 2;
    }
    return p;
}

static CK_OBJECT_HANDLE derive(CK_SESSION_HANDLE s, CK_MECHANISM *m, CK_OBJECT_HANDLE base, CK_ATTRIBUTE *t, int n)
{
    CK_OBJECT_HANDLE h = 0;
    CK_RV rv = CALL(C_DeriveKey(s, m, base, t, (CK_ULONG)n, &h), "0x%lx, 0x%lx, base 0x%lx (oracle)", (unsigned long)s,
                    (unsigned long)m->mechanism, (unsigned long)base);
    if (rv == CKR_OK)
        objects_created++;
    return rv == CKR_OK ? h : 0;
}

static int oracle_ecdh(listed_mechanism *lm, CK_SESSION_HANDLE s)
{
    int x = lm->type == CKM_ECDH1_DERIVE && percent(50);
    key_role a = x ? K_X_PRIV : K_EC_PRIV, b = x ? K_X2_PRIV : K_EC2_PRIV;
    CK_OBJECT_HANDLE pa = oracle_key(a), pb = oracle_key(b), qa = oracle_key((key_role)(a + 1)),
                     qb = oracle_key((key_role)(b + 1));
    CK_ULONG la = 0, lb = 0;
    uint8_t *point_a = qa ? read_attribute(s, qa, CKA_EC_POINT, &la) : NULL;
    uint8_t *point_b = qb ? read_attribute(s, qb, CKA_EC_POINT, &lb) : NULL;
    if (!pa || !pb || !point_a || !point_b)
        return 0;
    CK_ECDH1_DERIVE_PARAMS pab = { CKD_NULL, 0, NULL, lb, NULL }, pba;
    pab.pPublicData = (CK_BYTE_PTR)raw_point(point_b, &pab.ulPublicDataLen);
    if (percent(40)) {
        pab.kdf = CKD_SHA256_KDF;
        pab.ulSharedDataLen = below(16);
        pab.pSharedData = pab.ulSharedDataLen ? scratch_random(pab.ulSharedDataLen) : NULL;
    }
    pba = pab;
    pba.ulPublicDataLen = la;
    pba.pPublicData = (CK_BYTE_PTR)raw_point(point_a, &pba.ulPublicDataLen);
    CK_MECHANISM mab = { lm->type, &pab, sizeof pab }, mba = { lm->type, &pba, sizeof pba };
    CK_ATTRIBUTE t[] = { attr_ulong(CKA_CLASS, CKO_SECRET_KEY), attr_ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET),
                         attr_ulong(CKA_VALUE_LEN, 16 + below(17)), attr_bool(CKA_TOKEN, 0),
                         attr_bool(CKA_SENSITIVE, percent(50)), attr_bool(CKA_EXTRACTABLE, 1), attr_bool(CKA_SIGN, 1) };
    int n = sizeof t / sizeof t[0];
    if (percent(15)) {
        CK_MECHANISM bad = mab;
        malformed(&bad);
        CK_OBJECT_HANDLE h = 0;
        check_param_error(CALL(C_DeriveKey(s, &bad, pa, t, (CK_ULONG)n, &h), "0x%lx, 0x%lx, malformed (oracle)",
                               (unsigned long)s, (unsigned long)bad.mechanism),
                          &bad, "C_DeriveKey");
        destroy(s, h);
    }
    CK_OBJECT_HANDLE kab = derive(s, &mab, pa, t, n), kba = kab ? derive(s, &mba, pb, t, n) : 0;
    int checked = 0;
    if (kab && kba) {
        if (same_key(kab, kba, CKK_GENERIC_SECRET) == 0)
            oracle_failed("derive-agree", "ECDH (0x%lx, %s, kdf 0x%lx) from both sides gave two different keys",
                          (unsigned long)lm->type, x ? "X25519" : "P-256", (unsigned long)pab.kdf);
        checked = 1;
    }
    destroy(s, kab);
    destroy(s, kba);
    return checked;
}

static int oracle_hkdf(listed_mechanism *lm, CK_SESSION_HANDLE s)
{
    key_role base_role = percent(50) ? K_GENERIC32 : K_GENERIC_ODD;
    CK_OBJECT_HANDLE base = oracle_key(base_role);
    if (!base)
        return 0;
    CK_HKDF_PARAMS *p = scratch(sizeof *p);
    p->bExtract = percent(70) ? CK_TRUE : CK_FALSE;
    p->bExpand = p->bExtract && percent(20) ? CK_FALSE : CK_TRUE;
    p->prfHashMechanism = random_hash();
    p->ulSaltType = percent(60) ? CKF_HKDF_SALT_DATA : CKF_HKDF_SALT_NULL;
    p->ulSaltLen = p->ulSaltType == CKF_HKDF_SALT_DATA ? 1 + below(32) : 0;
    p->pSalt = p->ulSaltLen ? scratch_random(p->ulSaltLen) : NULL;
    p->hSaltKey = 0;
    p->ulInfoLen = below(32);
    p->pInfo = p->ulInfoLen ? scratch_random(p->ulInfoLen) : NULL;
    CK_MECHANISM m = { lm->type, p, sizeof *p };
    int data = lm->type == CKM_HKDF_DATA, private = percent(50);
    CK_ULONG len = p->bExpand ? 1 + below(64) : hash_length(p->prfHashMechanism);
    CK_ATTRIBUTE t[8];
    int n = 0;
    t[n++] = attr_ulong(CKA_CLASS, data ? CKO_DATA : CKO_SECRET_KEY);
    t[n++] = attr_ulong(CKA_VALUE_LEN, len);
    t[n++] = attr_bool(CKA_TOKEN, percent(15));
    t[n++] = attr_bool(CKA_PRIVATE, private);
    if (!data) {
        t[n++] = attr_ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET);
        t[n++] = attr_bool(CKA_SENSITIVE, percent(50));
        t[n++] = attr_bool(CKA_SIGN, 1);
    }
    if (percent(15)) {
        CK_MECHANISM bad = m;
        malformed(&bad);
        CK_OBJECT_HANDLE h = 0;
        check_param_error(CALL(C_DeriveKey(s, &bad, base, t, (CK_ULONG)n, &h), "0x%lx, 0x%lx, malformed (oracle)",
                               (unsigned long)s, (unsigned long)bad.mechanism),
                          &bad, "C_DeriveKey");
        destroy(s, h);
    }
    CK_OBJECT_HANDLE one = derive(s, &m, base, t, n), two = one ? derive(s, &m, base, t, n) : 0;
    int checked = 0;
    if (one && two) {
        int same;
        if (data) {
            CK_ULONG na = 0, nb = 0;
            uint8_t *a = read_attribute(s, one, CKA_VALUE, &na), *b = read_attribute(s, two, CKA_VALUE, &nb);
            same = a && b ? na == nb && !memcmp(a, b, na) : -1;
            if (read_bool(s, base, CKA_SENSITIVE) == 1 && read_bool(s, one, CKA_PRIVATE) == 0)
                oracle_failed("hkdf-data-private", "C_DeriveKey(CKM_HKDF_DATA) from a sensitive key made a data "
                              "object with CKA_PRIVATE FALSE (asked: %s)", private ? "TRUE" : "FALSE");
        } else {
            same = same_key(one, two, CKK_GENERIC_SECRET);
        }
        if (same == 0)
            oracle_failed("derive-deterministic", "C_DeriveKey(0x%lx) twice with the same inputs gave two values",
                          (unsigned long)lm->type);
        checked = same == 1;
    } else if (one) {
        oracle_failed("derive-deterministic", "C_DeriveKey(0x%lx) worked once, then not with the same inputs",
                      (unsigned long)lm->type);
    }
    destroy(s, one);
    destroy(s, two);
    return checked;
}

int oracle_derive(listed_mechanism *lm)
{
    if (!may_create())
        return 0;
    CK_SESSION_HANDLE s = oracle_session();
    if (lm->type == CKM_ECDH1_DERIVE || lm->type == CKM_ECDH1_COFACTOR_DERIVE)
        return oracle_ecdh(lm, s);
    if (lm->type == CKM_HKDF_DERIVE || lm->type == CKM_HKDF_DATA)
        return oracle_hkdf(lm, s);
    return 0;
}
