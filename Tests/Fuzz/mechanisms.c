/*
 * Mechanisms and their parameters for p11fuzz (CK_RSA_PKCS_PSS_PARAMS, CK_RSA_PKCS_OAEP_PARAMS,
 * CK_EDDSA_PARAMS, random bytes; right, wrong and misaligned), data and output buffers, PINs.
 */
#include <string.h>

#include "fuzz.h"

const char *const user_pin = "fuzz-user-1234";
const char *const so_pin = "fuzz-so-12345678";

/* v3.0 §2.3.6; p11-kit's 2.40 header lacks it. */
typedef struct {
    CK_BBOOL phFlag;
    CK_ULONG ulContextDataLen;
    CK_BYTE_PTR pContextData;
} eddsa_params;

static const CK_MECHANISM_TYPE sign_mechanisms[] = {
    CKM_RSA_PKCS, CKM_SHA1_RSA_PKCS, CKM_SHA224_RSA_PKCS, CKM_SHA256_RSA_PKCS,
    CKM_SHA384_RSA_PKCS, CKM_SHA512_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_SHA1_RSA_PKCS_PSS,
    CKM_SHA224_RSA_PKCS_PSS, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA384_RSA_PKCS_PSS,
    CKM_SHA512_RSA_PKCS_PSS, CKM_ECDSA, CKM_ECDSA, CKM_ECDSA_SHA1, CKM_ECDSA_SHA224,
    CKM_ECDSA_SHA256, CKM_ECDSA_SHA256, CKM_ECDSA_SHA384, CKM_ECDSA_SHA512, CKM_EDDSA,
    CKM_EDDSA, CKM_EDDSA, CKM_RSA_X_509, CKM_SHA256_HMAC, CKM_DSA, CKM_AES_CMAC,
    CKM_SHA256_HMAC_GENERAL, CKM_AES_CMAC_GENERAL, CKM_SHA_1_HMAC, CKM_SHA512_HMAC,
};
static const CK_MECHANISM_TYPE crypt_mechanisms[] = {
    CKM_RSA_PKCS, CKM_RSA_PKCS, CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS_OAEP,
    CKM_RSA_X_509, CKM_AES_CBC, CKM_AES_GCM, CKM_ECDSA, CKM_AES_ECB, CKM_AES_CBC_PAD,
    CKM_AES_CTR, CKM_AES_GCM,
};
static const CK_MECHANISM_TYPE digest_mechanisms[] = {
    CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA256, CKM_SHA384, CKM_SHA512, CKM_MD5, 0x2b0, CKM_RSA_PKCS,
};
static const CK_MECHANISM_TYPE keypair_mechanisms[] = {
    /* RSA generation costs 0.1-2 s: calls.c makes it rare. */
    CKM_EC_KEY_PAIR_GEN, CKM_EC_KEY_PAIR_GEN, CKM_EC_EDWARDS_KEY_PAIR_GEN,
    CKM_EC_EDWARDS_KEY_PAIR_GEN, CKM_DSA_KEY_PAIR_GEN, CKM_DH_PKCS_KEY_PAIR_GEN, CKM_ECDSA,
};
static const CK_MECHANISM_TYPE key_mechanisms[] = {
    CKM_AES_KEY_GEN, CKM_GENERIC_SECRET_KEY_GEN, CKM_DES3_KEY_GEN, CKM_EC_KEY_PAIR_GEN,
};
static const CK_MECHANISM_TYPE wrap_mechanisms[] = {
    CKM_AES_KEY_WRAP, CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS, CKM_AES_CBC_PAD, CKM_AES_KEY_WRAP_PAD,
    CKM_AES_KEY_WRAP_KWP,
};
static const CK_MECHANISM_TYPE derive_mechanisms[] = {
    CKM_ECDH1_DERIVE, CKM_SHA256_KEY_DERIVATION, CKM_CONCATENATE_BASE_AND_KEY,
    CKM_ECDH1_COFACTOR_DERIVE, CKM_HKDF_DERIVE, CKM_HKDF_DATA,
};

static CK_ULONG digest_code(void)
{
    static const CK_ULONG codes[] = { CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512 };
    return percent(90) ? PICK(codes) : rnd();
}

static CK_ULONG mgf_code(void)
{
    static const CK_ULONG codes[] = { CKG_MGF1_SHA1, CKG_MGF1_SHA224, CKG_MGF1_SHA256,
                                      CKG_MGF1_SHA384, CKG_MGF1_SHA512 };
    return percent(90) ? PICK(codes) : below(16);
}

/* The hash a CKM_SHA*_RSA_PKCS_PSS mechanism names, so its parameters can agree with it. */
static CK_ULONG pss_hash(CK_MECHANISM_TYPE m)
{
    switch (m) {
    case CKM_SHA1_RSA_PKCS_PSS: return CKM_SHA_1;
    case CKM_SHA224_RSA_PKCS_PSS: return CKM_SHA224;
    case CKM_SHA256_RSA_PKCS_PSS: return CKM_SHA256;
    case CKM_SHA384_RSA_PKCS_PSS: return CKM_SHA384;
    case CKM_SHA512_RSA_PKCS_PSS: return CKM_SHA512;
    default: return digest_code();
    }
}

static CK_ULONG mgf_for(CK_ULONG hash)
{
    switch (hash) {
    case CKM_SHA_1: return CKG_MGF1_SHA1;
    case CKM_SHA224: return CKG_MGF1_SHA224;
    case CKM_SHA256: return CKG_MGF1_SHA256;
    case CKM_SHA384: return CKG_MGF1_SHA384;
    case CKM_SHA512: return CKG_MGF1_SHA512;
    default: return mgf_code();
    }
}

/* A buffer and its length for a pointer inside a parameter structure: NULL, exact, NULL with
   a length, or an impossible length over a small real buffer. */
static void inner_buffer(CK_VOID_PTR *p, CK_ULONG *len)
{
    unsigned r = (unsigned)below(100);
    if (r < 50) {
        *p = NULL;
        *len = 0;
    } else if (r < 80) {
        size_t n = 1 + below(64);
        *p = scratch_random(n);
        *len = n;
    } else if (r < 90 || !huge_allowed()) {
        *p = NULL;
        *len = 1 + below(64);
    } else {
        *p = scratch_random(16);
        *len = impossible_length();
    }
}

/* The structure a mechanism takes, filled near-valid; its size in *size (0: none). */
static void *natural_parameter(CK_MECHANISM_TYPE m, size_t *size)
{
    switch (m) {
    case CKM_RSA_PKCS_PSS: case CKM_SHA1_RSA_PKCS_PSS: case CKM_SHA224_RSA_PKCS_PSS:
    case CKM_SHA256_RSA_PKCS_PSS: case CKM_SHA384_RSA_PKCS_PSS: case CKM_SHA512_RSA_PKCS_PSS: {
        static const CK_ULONG salts[] = { 0, 20, 32, 48, 64, 222, 1024, 1025, 0x7fffffff,
                                          0x8000000000000000UL, 0xffffffffffffffffUL };
        CK_RSA_PKCS_PSS_PARAMS *p = scratch(sizeof *p);
        p->hashAlg = percent(85) ? pss_hash(m) : digest_code();
        p->mgf = percent(85) ? mgf_for(p->hashAlg) : mgf_code();
        p->sLen = percent(80) ? PICK(salts) : rnd();
        *size = sizeof *p;
        return p;
    }
    case CKM_RSA_PKCS_OAEP: {
        CK_RSA_PKCS_OAEP_PARAMS *p = scratch(sizeof *p);
        p->hashAlg = digest_code();
        p->mgf = percent(85) ? mgf_for(p->hashAlg) : mgf_code();
        p->source = percent(80) ? CKZ_DATA_SPECIFIED : below(4);
        CK_VOID_PTR data;
        inner_buffer(&data, &p->ulSourceDataLen);
        p->pSourceData = data;
        *size = sizeof *p;
        return p;
    }
    case CKM_EDDSA: {
        eddsa_params *p = scratch(sizeof *p);
        static const CK_BBOOL flags[] = { 0, 0, 0, 1, 2 };
        p->phFlag = PICK(flags);
        CK_VOID_PTR data;
        inner_buffer(&data, &p->ulContextDataLen);
        p->pContextData = data;
        /* Sometimes only the flag byte: the module must not read more than is claimed. */
        *size = percent(10) ? 1 : sizeof *p;
        return p;
    }
    case CKM_AES_CBC: case CKM_AES_CBC_PAD: {
        *size = percent(80) ? 16 : below(33);
        return scratch_random(*size ? *size : 1);
    }
    case CKM_AES_CTR: {
        CK_AES_CTR_PARAMS *p = (CK_AES_CTR_PARAMS *)scratch_random(sizeof *p);
        static const CK_ULONG bits[] = { 0, 1, 8, 32, 64, 127, 128, 129 };
        p->ulCounterBits = percent(85) ? PICK(bits) : rnd();
        *size = sizeof *p;
        return p;
    }
    case CKM_AES_GCM: {
        CK_GCM_PARAMS *p = scratch(sizeof *p);
        CK_VOID_PTR iv, aad;
        inner_buffer(&iv, &p->ulIvLen);
        inner_buffer(&aad, &p->ulAADLen);
        p->pIv = iv;
        p->pAAD = aad;
        p->ulIvBits = p->ulIvLen * 8;
        static const CK_ULONG tags[] = { 0, 64, 96, 104, 120, 128, 129, 256 };
        p->ulTagBits = percent(85) ? PICK(tags) : rnd();
        /* Sometimes the v2.40 layout, without ulIvBits: 40 bytes. */
        *size = percent(20) ? sizeof *p - sizeof(CK_ULONG) : sizeof *p;
        return p;
    }
    case CKM_SHA256_HMAC_GENERAL: case CKM_AES_CMAC_GENERAL: {
        CK_ULONG *p = scratch(sizeof *p);
        static const CK_ULONG lengths[] = { 0, 1, 16, 32, 33, 64, 65 };
        *p = percent(85) ? PICK(lengths) : rnd();
        *size = sizeof *p;
        return p;
    }
    case CKM_ECDH1_DERIVE: case CKM_ECDH1_COFACTOR_DERIVE: {
        CK_ECDH1_DERIVE_PARAMS *p = scratch(sizeof *p);
        static const CK_ULONG kdfs[] = { CKD_NULL, CKD_SHA1_KDF, CKD_SHA256_KDF, CKD_SHA512_KDF, 3, 9 };
        p->kdf = percent(85) ? PICK(kdfs) : rnd();
        CK_VOID_PTR shared, public;
        inner_buffer(&shared, &p->ulSharedDataLen);
        p->pSharedData = shared;
        if (percent(50)) { /* an uncompressed P-256-sized point, mostly off the curve */
            uint8_t *point = scratch_random(65);
            point[0] = 4;
            p->pPublicData = point;
            p->ulPublicDataLen = 65;
        } else {
            inner_buffer(&public, &p->ulPublicDataLen);
            p->pPublicData = public;
        }
        *size = sizeof *p;
        return p;
    }
    case CKM_HKDF_DERIVE: case CKM_HKDF_DATA: {
        CK_HKDF_PARAMS *p = scratch(sizeof *p);
        p->bExtract = (CK_BBOOL)below(3);
        p->bExpand = (CK_BBOOL)below(3);
        p->prfHashMechanism = digest_code();
        static const CK_ULONG salts[] = { CKF_HKDF_SALT_NULL, CKF_HKDF_SALT_DATA, CKF_HKDF_SALT_KEY, 0, 8 };
        p->ulSaltType = percent(90) ? PICK(salts) : rnd();
        CK_VOID_PTR salt, info;
        inner_buffer(&salt, &p->ulSaltLen);
        inner_buffer(&info, &p->ulInfoLen);
        p->pSalt = salt;
        p->pInfo = info;
        p->hSaltKey = pick_object();
        *size = sizeof *p;
        return p;
    }
    default:
        *size = 0;
        return NULL;
    }
}

static CK_MECHANISM_TYPE mechanism_type(mechanism_use use)
{
    if (percent(5))
        return percent(50) ? rnd() : (CKM_VENDOR_DEFINED | below(8));
    switch (use) {
    case M_SIGN: return PICK(sign_mechanisms);
    case M_CRYPT: return PICK(crypt_mechanisms);
    case M_DIGEST: return PICK(digest_mechanisms);
    case M_KEYPAIR: return PICK(keypair_mechanisms);
    case M_KEY: return PICK(key_mechanisms);
    case M_WRAP: return PICK(wrap_mechanisms);
    case M_DERIVE: default: return PICK(derive_mechanisms);
    }
}

CK_MECHANISM *random_mechanism(mechanism_use use)
{
    if (one_in(50))
        return NULL;
    CK_MECHANISM *m = scratch(sizeof *m);
    m->mechanism = mechanism_type(use);
    size_t size = 0;
    void *natural = natural_parameter(m->mechanism, &size);
    unsigned p = (unsigned)below(100);
    if (p < 60 && natural) {
        m->pParameter = natural;
        m->ulParameterLen = size;
    } else if (p < 75) {
        m->pParameter = NULL;
        m->ulParameterLen = 0;
    } else if (p < 83) { /* random bytes, exactly as long as claimed */
        size_t n = small_length() % 80;
        m->pParameter = scratch_random(n);
        m->ulParameterLen = n;
    } else if (p < 87) {
        m->pParameter = NULL;
        m->ulParameterLen = (huge_allowed() && percent(30)) ? impossible_length() : 1 + below(40);
    } else if (p < 91 && natural && size > 1) { /* a real structure, claimed shorter */
        m->pParameter = natural;
        m->ulParameterLen = below(size);
    } else if (p < 94 && huge_allowed()) {
        m->pParameter = natural ? natural : scratch_random(64);
        m->ulParameterLen = impossible_length();
    } else if (natural && !skipped("misaligned")) {
        /* The structure at an odd address: a host may pack it inside a byte buffer. The
           buffer ends exactly where the structure does. */
        size_t offset = 1 + below(7);
        uint8_t *buffer = scratch(size + offset);
        memcpy(buffer + offset, natural, size);
        m->pParameter = buffer + offset;
        m->ulParameterLen = size;
    } else {
        m->pParameter = natural;
        m->ulParameterLen = size;
    }
    return m;
}

uint8_t *input_data(CK_ULONG *len)
{
    unsigned p = (unsigned)below(100);
    if (p < 80) {
        size_t n = small_length();
        *len = n;
        return scratch_random(n);
    }
    if (p < 85) {
        *len = 0;
        return NULL;
    }
    if (p < 90) {
        *len = (huge_allowed() && percent(30)) ? impossible_length() : 1 + below(512);
        return NULL;
    }
    if (p < 94) {
        *len = 0;
        return scratch_random(8);
    }
    if (huge_allowed()) {
        *len = impossible_length();
        return scratch_random(16);
    }
    *len = 32;
    return scratch_random(32);
}

uint8_t *output_buffer(CK_ULONG *len)
{
    unsigned p = (unsigned)below(100);
    if (p < 30) { /* size query: whatever *len says, nothing is written through NULL */
        *len = percent(50) ? 0 : (huge_allowed() && percent(50) ? impossible_length() : below(1 << 20));
        return NULL;
    }
    if (p < 60) {
        size_t n = small_length();
        *len = n;
        return scratch(n);
    }
    if (p < 92 || !huge_allowed()) {
        *len = OUT_BIG;
        return out_big();
    }
    *len = impossible_length();
    return out_big();
}

uint8_t *random_pin(CK_ULONG *len)
{
    unsigned p = (unsigned)below(100);
    const char *known = NULL;
    if (p < 35)
        known = user_pin;
    else if (p < 55)
        known = so_pin;
    if (known) {
        *len = strlen(known);
        return scratch_copy(known, *len);
    }
    if (p < 75) {
        size_t n = below(70);
        *len = n;
        return scratch_random(n);
    }
    if (p < 80) {
        *len = 0;
        return scratch(1);
    }
    if (p < 84) {
        *len = 0;
        return NULL;
    }
    if (p < 88) {
        *len = 1 + below(16);
        return NULL;
    }
    if (p < 92) { /* long, and exactly that long */
        size_t n = 4000 + below(200);
        *len = n;
        return scratch_random(n);
    }
    if (huge_allowed()) {
        *len = impossible_length();
        return scratch_random(8);
    }
    *len = 3;
    return scratch_random(3);
}
