/*
 * Correctness oracles of p11fuzz, one listed mechanism at a time, with the keys of
 * oracles.c: encrypt -> decrypt (single- and multi-part), sign -> verify with a flipped byte
 * that must fail (HMAC and CMAC too). oracle_keys.c has wrapping and derivation. Each also tries malformed parameters and keys of the
 * wrong type; the answers the specification names are checked where an issue item named them.
 */
#include <string.h>

#include "fuzz.h"

CK_ULONG hash_length(CK_MECHANISM_TYPE hash)
{
    switch (hash) {
    case CKM_SHA_1: return 20;
    case CKM_SHA224: return 28;
    case CKM_SHA256: return 32;
    case CKM_SHA384: return 48;
    default: return 64;
    }
}

CK_MECHANISM_TYPE random_hash(void)
{
    static const CK_MECHANISM_TYPE h[] = { CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512 };
    return PICK(h);
}

CK_ULONG mgf_of(CK_MECHANISM_TYPE hash)
{
    switch (hash) {
    case CKM_SHA_1: return CKG_MGF1_SHA1;
    case CKM_SHA224: return CKG_MGF1_SHA224;
    case CKM_SHA256: return CKG_MGF1_SHA256;
    case CKM_SHA384: return CKG_MGF1_SHA384;
    default: return CKG_MGF1_SHA512;
    }
}

static int is_aes(CK_MECHANISM_TYPE m)
{
    return m == CKM_AES_ECB || m == CKM_AES_CBC || m == CKM_AES_CBC_PAD || m == CKM_AES_CTR || m == CKM_AES_GCM
           || m == CKM_AES_CMAC || m == CKM_AES_CMAC_GENERAL || m == CKM_AES_KEY_WRAP || m == CKM_AES_KEY_WRAP_PAD
           || m == CKM_AES_KEY_WRAP_KWP;
}

static key_role aes_role(void) { return (key_role)(K_AES16 + below(3)); }

/* RSA modulus length in bytes of the oracles' pair; 0 when there is none. */
CK_ULONG modulus_bytes(void)
{
    CK_ULONG n = 0;
    CK_OBJECT_HANDLE pub = oracle_key(K_RSA_PUB);
    return pub && read_attribute(oracle_session(), pub, CKA_MODULUS, &n) ? n : 0;
}

/* Malformed parameters for a mechanism: random bytes, too short, NULL with a length, a GCM IV
   of 129-256 bytes. A module answers with an error code the specification names; never
   CKR_GENERAL_ERROR or CKR_FUNCTION_FAILED. */
void malformed(CK_MECHANISM *m)
{
    unsigned r = (unsigned)below(4);
    if (r == 0) {
        CK_ULONG n = below(64);
        m->pParameter = n ? scratch_random(n) : NULL;
        m->ulParameterLen = n;
    } else if (r == 1 && m->ulParameterLen > 1) {
        m->ulParameterLen = below(m->ulParameterLen);
    } else if (r == 2) {
        m->pParameter = NULL;
        m->ulParameterLen = 1 + below(40);
    } else if (m->mechanism == CKM_AES_GCM) {
        CK_GCM_PARAMS *p = scratch(sizeof *p);
        p->ulIvLen = 129 + below(128);
        p->pIv = scratch_random(p->ulIvLen);
        p->ulIvBits = p->ulIvLen * 8;
        p->pAAD = NULL, p->ulAADLen = 0, p->ulTagBits = 128;
        m->pParameter = p, m->ulParameterLen = sizeof *p;
    } else {
        m->pParameter = scratch_random(3), m->ulParameterLen = 3;
    }
}

void check_param_error(CK_RV rv, CK_MECHANISM *m, const char *function)
{
    int long_iv = m->mechanism == CKM_AES_GCM && m->pParameter && m->ulParameterLen == sizeof(CK_GCM_PARAMS)
                  && ((CK_GCM_PARAMS *)m->pParameter)->ulIvLen > 128;
    if (rv == CKR_GENERAL_ERROR || rv == CKR_FUNCTION_FAILED)
        oracle_failed(long_iv ? "gcm-long-iv" : "param-errors", "%s(0x%lx) with a malformed parameter of %lu bytes: 0x%lx", function,
                      (unsigned long)m->mechanism, (unsigned long)m->ulParameterLen, (unsigned long)rv);
}

/* A key of the wrong type must get CKR_KEY_TYPE_INCONSISTENT, not CKR_KEY_HANDLE_INVALID or
   CKR_OK. */
static void check_wrong_key(CK_RV rv, CK_MECHANISM *m, const char *function)
{
    if (rv == CKR_OK || rv == CKR_KEY_HANDLE_INVALID)
        oracle_failed("wrong-key-type", "%s(0x%lx) with a key of the wrong type: 0x%lx", function,
                      (unsigned long)m->mechanism, (unsigned long)rv);
}

/* ---------------------------------------------------------------- encrypt, decrypt */

/* Runs one operation single- or multi-part. Returns the CK_RV; *out_len holds the output. */
static CK_RV crypt(CK_SESSION_HANDLE s, int decrypt, const uint8_t *in, CK_ULONG len, uint8_t *out, CK_ULONG *out_len,
                   int multi)
{
    CK_ULONG room = *out_len;
    if (!multi)
        return decrypt ? CALL(C_Decrypt(s, (CK_BYTE_PTR)in, len, out, out_len), "0x%lx, len %lu (oracle)",
                              (unsigned long)s, (unsigned long)len)
                       : CALL(C_Encrypt(s, (CK_BYTE_PTR)in, len, out, out_len), "0x%lx, len %lu (oracle)",
                              (unsigned long)s, (unsigned long)len);
    CK_ULONG done = 0;
    for (CK_ULONG at = 0; at < len;) {
        CK_ULONG part = 1 + (CK_ULONG)below(len - at), n = room - done;
        CK_RV rv = decrypt ? CALL(C_DecryptUpdate(s, (CK_BYTE_PTR)in + at, part, out + done, &n),
                                  "0x%lx, len %lu (oracle)", (unsigned long)s, (unsigned long)part)
                           : CALL(C_EncryptUpdate(s, (CK_BYTE_PTR)in + at, part, out + done, &n),
                                  "0x%lx, len %lu (oracle)", (unsigned long)s, (unsigned long)part);
        if (rv != CKR_OK)
            return rv;
        done += n, at += part;
    }
    CK_ULONG n = room - done;
    CK_RV rv = decrypt ? CALL(C_DecryptFinal(s, out + done, &n), "0x%lx (oracle)", (unsigned long)s)
                       : CALL(C_EncryptFinal(s, out + done, &n), "0x%lx (oracle)", (unsigned long)s);
    *out_len = done + n;
    return rv;
}

/* The parameters and a plaintext length a cipher mechanism takes. */
static int cipher_setup(CK_MECHANISM *m, CK_ULONG k, CK_ULONG *len)
{
    switch (m->mechanism) {
    case CKM_AES_ECB: case CKM_AES_CBC:
        *len = 16 * below(9);
        if (m->mechanism == CKM_AES_CBC)
            m->pParameter = scratch_random(16), m->ulParameterLen = 16;
        return 1;
    case CKM_AES_CBC_PAD:
        *len = below(200);
        m->pParameter = scratch_random(16), m->ulParameterLen = 16;
        return 1;
    case CKM_AES_CTR: {
        CK_AES_CTR_PARAMS *p = scratch(sizeof *p);
        p->ulCounterBits = percent(50) ? 128 : 32;
        memcpy(p->cb, scratch_random(16), 16);
        memset(p->cb + 12, 0, 4); /* no wrap of a 32-bit counter */
        m->pParameter = p, m->ulParameterLen = sizeof *p;
        *len = below(300);
        return 1;
    }
    case CKM_AES_GCM: {
        CK_GCM_PARAMS *p = scratch(sizeof *p);
        p->ulIvLen = percent(70) ? 12 : 1 + below(128);
        p->pIv = scratch_random(p->ulIvLen);
        p->ulIvBits = p->ulIvLen * 8;
        p->ulAADLen = below(40);
        p->pAAD = p->ulAADLen ? scratch_random(p->ulAADLen) : NULL;
        p->ulTagBits = 96 + 8 * below(5);
        m->pParameter = p, m->ulParameterLen = sizeof *p;
        *len = below(300);
        return 1;
    }
    case CKM_RSA_PKCS:
        *len = k ? below(k - 11) : 0;
        return k != 0;
    case CKM_RSA_PKCS_OAEP: {
        CK_RSA_PKCS_OAEP_PARAMS *p = scratch(sizeof *p);
        p->hashAlg = percent(50) ? CKM_SHA256 : random_hash();
        p->mgf = mgf_of(p->hashAlg);
        p->source = CKZ_DATA_SPECIFIED;
        p->ulSourceDataLen = percent(50) ? 0 : 1 + below(16);
        p->pSourceData = p->ulSourceDataLen ? scratch_random(p->ulSourceDataLen) : NULL;
        m->pParameter = p, m->ulParameterLen = sizeof *p;
        CK_ULONG h = hash_length(p->hashAlg);
        *len = k > 2 * h + 2 ? below(k - 2 * h - 2) : 0;
        return k != 0;
    }
    case CKM_RSA_X_509:
        *len = k;
        return k != 0;
    default:
        return 0;
    }
}

int oracle_cipher(listed_mechanism *lm)
{
    CK_SESSION_HANDLE s = oracle_session();
    CK_MECHANISM m = { lm->type, NULL, 0 };
    int aes = is_aes(lm->type);
    CK_OBJECT_HANDLE enc = aes ? oracle_key(percent(15) ? K_LOCKED_AES : aes_role()) : oracle_key(K_RSA_PUB);
    CK_OBJECT_HANDLE dec = aes ? enc : oracle_key(K_RSA_PRIV);
    CK_ULONG k = aes ? 0 : modulus_bytes(), len = 0;
    if (!enc || !dec || !cipher_setup(&m, k, &len))
        return 0;
    if (percent(10)) { /* a key of the wrong type: an EC key for AES, an AES key for RSA */
        CK_OBJECT_HANDLE wrong = oracle_key(aes ? K_EC_PUB : K_AES16);
        if (wrong)
            check_wrong_key(CALL(C_EncryptInit(s, &m, wrong), "0x%lx, 0x%lx, wrong key type (oracle)",
                                 (unsigned long)s, (unsigned long)m.mechanism),
                            &m, "C_EncryptInit");
    }
    if (percent(15)) {
        CK_MECHANISM bad = m;
        malformed(&bad);
        CK_RV rv = CALL(C_EncryptInit(s, &bad, enc), "0x%lx, 0x%lx, malformed parameter (oracle)", (unsigned long)s,
                        (unsigned long)bad.mechanism);
        check_param_error(rv, &bad, "C_EncryptInit");
        if (rv == CKR_OK) {
            CK_ULONG n = OUT_BIG;
            crypt(s, 0, scratch_random(16), 16, out_big(), &n, 0);
        }
    }
    uint8_t *plain = scratch_random(len ? len : 1);
    if (lm->type == CKM_RSA_X_509)
        plain[0] = 0, plain[1] |= 1; /* below the modulus; no leading zero to strip but one */
    CK_ULONG room = len + 64 + k, ct_len = room, pt_len = room;
    uint8_t *ct = scratch(room), *pt = scratch(room);
    int multi_enc = aes && percent(50), multi_dec = aes && percent(50);
    if (CALL(C_EncryptInit(s, &m, enc), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)m.mechanism)
        != CKR_OK)
        return 0;
    CK_RV rv = crypt(s, 0, plain, len, ct, &ct_len, multi_enc);
    if (rv != CKR_OK)
        return 0;
    if (CALL(C_DecryptInit(s, &m, dec), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)m.mechanism)
        != CKR_OK)
        return 0;
    rv = crypt(s, 1, ct, ct_len, pt, &pt_len, multi_dec);
    int same = rv == CKR_OK && pt_len == len && !memcmp(pt, plain, len);
    if (rv == CKR_OK && !same && lm->type == CKM_RSA_X_509 && pt_len == len - 1)
        same = !memcmp(pt, plain + 1, pt_len); /* the leading zero stripped */
    if (!same)
        oracle_failed("cipher-roundtrip", "mechanism 0x%lx (%s encrypt, %s decrypt) of %lu bytes: decrypt 0x%lx "
                      "gave %lu bytes that are not the plaintext", (unsigned long)m.mechanism,
                      multi_enc ? "multi-part" : "single-part", multi_dec ? "multi-part" : "single-part",
                      (unsigned long)len, (unsigned long)rv, (unsigned long)pt_len);
    if (lm->type == CKM_AES_GCM && ct_len) { /* a changed byte (tag included) must not decrypt */
        ct[below(ct_len)] ^= (uint8_t)(1u << below(8));
        pt_len = room;
        if (CALL(C_DecryptInit(s, &m, dec), "0x%lx, GCM (oracle)", (unsigned long)s) == CKR_OK
            && crypt(s, 1, ct, ct_len, pt, &pt_len, percent(50)) == CKR_OK)
            oracle_failed("gcm-tamper", "AES-GCM decrypted a ciphertext with a flipped bit (%lu bytes)",
                          (unsigned long)ct_len);
    }
    if (!aes && lm->type != CKM_RSA_PKCS_OAEP && percent(30)) {
        /* A ciphertext one byte shorter than the modulus. */
        pt_len = room;
        if (CALL(C_DecryptInit(s, &m, dec), "0x%lx, short ciphertext (oracle)", (unsigned long)s) == CKR_OK
            && CALL(C_Decrypt(s, ct + 1, k - 1, pt, &pt_len), "0x%lx, len %lu (oracle)", (unsigned long)s,
                    (unsigned long)(k - 1)) == CKR_OK)
            oracle_failed("rsa-short-ciphertext", "C_Decrypt(0x%lx) of %lu bytes under a %lu-byte modulus: CKR_OK",
                          (unsigned long)m.mechanism, (unsigned long)(k - 1), (unsigned long)k);
    }
    return 1;
}

/* ---------------------------------------------------------------- sign, verify */

static CK_RV sign_or_verify(CK_SESSION_HANDLE s, int verify, const uint8_t *data, CK_ULONG len, uint8_t *sig,
                            CK_ULONG *sig_len, int multi)
{
    if (!multi)
        return verify ? CALL(C_Verify(s, (CK_BYTE_PTR)data, len, sig, *sig_len), "0x%lx, len %lu (oracle)",
                             (unsigned long)s, (unsigned long)len)
                      : CALL(C_Sign(s, (CK_BYTE_PTR)data, len, sig, sig_len), "0x%lx, len %lu (oracle)",
                             (unsigned long)s, (unsigned long)len);
    for (CK_ULONG at = 0; at < len;) {
        CK_ULONG part = 1 + (CK_ULONG)below(len - at);
        CK_RV rv = verify ? CALL(C_VerifyUpdate(s, (CK_BYTE_PTR)data + at, part), "0x%lx, len %lu (oracle)",
                                 (unsigned long)s, (unsigned long)part)
                          : CALL(C_SignUpdate(s, (CK_BYTE_PTR)data + at, part), "0x%lx, len %lu (oracle)",
                                 (unsigned long)s, (unsigned long)part);
        if (rv != CKR_OK)
            return rv;
        at += part;
    }
    return verify ? CALL(C_VerifyFinal(s, sig, *sig_len), "0x%lx (oracle)", (unsigned long)s)
                  : CALL(C_SignFinal(s, sig, sig_len), "0x%lx (oracle)", (unsigned long)s);
}

/* The keys, parameters and data length a signature or MAC mechanism takes; raw mechanisms
   (no hash of their own) are single-part. */
static int signature_setup(CK_MECHANISM *m, key_role *priv, key_role *pub, CK_ULONG *len, int *raw)
{
    CK_MECHANISM_TYPE t = m->mechanism;
    *raw = 0;
    *len = below(300);
    switch (t) {
    case CKM_ECDSA: case CKM_ECDSA_SHA1: case CKM_ECDSA_SHA224: case CKM_ECDSA_SHA256: case CKM_ECDSA_SHA384:
    case CKM_ECDSA_SHA512:
        *priv = K_EC_PRIV, *pub = K_EC_PUB;
        if (t == CKM_ECDSA)
            *raw = 1, *len = 32;
        return 1;
    case CKM_EDDSA: /* one pass over the message: single-part only */
        *priv = K_ED_PRIV, *pub = K_ED_PUB, *raw = 1;
        return 1;
    case CKM_RSA_PKCS: case CKM_RSA_X_509: case CKM_RSA_PKCS_PSS:
        *raw = 1;
        /* fall through */
    case CKM_SHA1_RSA_PKCS: case CKM_SHA224_RSA_PKCS: case CKM_SHA256_RSA_PKCS: case CKM_SHA384_RSA_PKCS:
    case CKM_SHA512_RSA_PKCS: case CKM_SHA1_RSA_PKCS_PSS: case CKM_SHA224_RSA_PKCS_PSS:
    case CKM_SHA256_RSA_PKCS_PSS: case CKM_SHA384_RSA_PKCS_PSS: case CKM_SHA512_RSA_PKCS_PSS: {
        *priv = K_RSA_PRIV, *pub = K_RSA_PUB;
        CK_ULONG k = modulus_bytes();
        if (!k)
            return 0;
        if (t == CKM_RSA_PKCS)
            *len = below(k - 11);
        if (t == CKM_RSA_X_509)
            *len = k;
        if (t == CKM_RSA_PKCS_PSS || (t >= CKM_SHA256_RSA_PKCS_PSS && t <= CKM_SHA512_RSA_PKCS_PSS)
            || t == CKM_SHA1_RSA_PKCS_PSS || t == CKM_SHA224_RSA_PKCS_PSS) {
            CK_RSA_PKCS_PSS_PARAMS *p = scratch(sizeof *p);
            p->hashAlg = t == CKM_SHA1_RSA_PKCS_PSS     ? CKM_SHA_1
                         : t == CKM_SHA224_RSA_PKCS_PSS ? CKM_SHA224
                         : t == CKM_SHA256_RSA_PKCS_PSS ? CKM_SHA256
                         : t == CKM_SHA384_RSA_PKCS_PSS ? CKM_SHA384
                         : t == CKM_SHA512_RSA_PKCS_PSS ? CKM_SHA512 : random_hash();
            p->mgf = mgf_of(p->hashAlg);
            p->sLen = percent(70) ? hash_length(p->hashAlg) : below(hash_length(p->hashAlg) + 1);
            m->pParameter = p, m->ulParameterLen = sizeof *p;
            if (t == CKM_RSA_PKCS_PSS)
                *len = hash_length(p->hashAlg);
        }
        return 1;
    }
    case CKM_AES_CMAC: case CKM_AES_CMAC_GENERAL:
        *priv = *pub = aes_role();
        break;
    default: /* the HMACs */
        *priv = *pub = percent(50) ? K_GENERIC32 : K_GENERIC_ODD;
        break;
    }
    if (t == CKM_AES_CMAC_GENERAL || t == CKM_SHA_1_HMAC_GENERAL || t == CKM_SHA224_HMAC_GENERAL
        || t == CKM_SHA256_HMAC_GENERAL || t == CKM_SHA384_HMAC_GENERAL || t == CKM_SHA512_HMAC_GENERAL) {
        CK_ULONG *n = scratch(sizeof *n);
        *n = 1 + below(t == CKM_AES_CMAC_GENERAL ? 16 : 20);
        m->pParameter = n, m->ulParameterLen = sizeof *n;
    }
    return 1;
}

int oracle_signature(listed_mechanism *lm)
{
    CK_SESSION_HANDLE s = oracle_session();
    CK_MECHANISM m = { lm->type, NULL, 0 };
    key_role priv_role, pub_role;
    CK_ULONG len;
    int raw;
    if (!signature_setup(&m, &priv_role, &pub_role, &len, &raw))
        return 0;
    CK_OBJECT_HANDLE priv = oracle_key(priv_role), pub = oracle_key(pub_role);
    if (!priv || !pub)
        return 0;
    if (lm->type == CKM_EDDSA && percent(20)) { /* 1 or 8 bytes are no CK_EDDSA_PARAMS */
        CK_MECHANISM bad = { CKM_EDDSA, scratch_random(8), percent(50) ? 1 : 8 };
        if (CALL(C_SignInit(s, &bad, priv), "0x%lx, EDDSA, parameter of %lu bytes (oracle)", (unsigned long)s,
                 (unsigned long)bad.ulParameterLen) == CKR_OK) {
            CK_ULONG n = OUT_BIG;
            CALL(C_Sign(s, (CK_BYTE_PTR) "x", 1, out_big(), &n), "0x%lx (oracle)", (unsigned long)s);
            oracle_failed("eddsa-param-length", "C_SignInit(CKM_EDDSA) with a %lu-byte parameter: CKR_OK",
                          (unsigned long)bad.ulParameterLen);
        }
    } else if (percent(15)) {
        CK_MECHANISM bad = m;
        malformed(&bad);
        CK_RV rv = CALL(C_SignInit(s, &bad, priv), "0x%lx, 0x%lx, malformed parameter (oracle)", (unsigned long)s,
                        (unsigned long)bad.mechanism);
        check_param_error(rv, &bad, "C_SignInit");
        if (rv == CKR_OK) {
            CK_ULONG n = OUT_BIG;
            sign_or_verify(s, 0, scratch_random(32), 32, out_big(), &n, 0);
        }
    }
    if (percent(10)) {
        CK_OBJECT_HANDLE wrong = oracle_key(is_aes(m.mechanism) || priv_role == K_GENERIC32
                                                    || priv_role == K_GENERIC_ODD ? K_EC_PRIV : K_AES32);
        if (wrong)
            check_wrong_key(CALL(C_SignInit(s, &m, wrong), "0x%lx, 0x%lx, wrong key type (oracle)", (unsigned long)s,
                                 (unsigned long)m.mechanism),
                            &m, "C_SignInit");
    }
    uint8_t *data = scratch_random(len ? len : 1);
    if (lm->type == CKM_RSA_X_509)
        data[0] = 0;
    uint8_t sig[1024];
    CK_ULONG sig_len = sizeof sig;
    int multi_sign = !raw && percent(50), multi_verify = !raw && percent(50);
    if (CALL(C_SignInit(s, &m, priv), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)m.mechanism) != CKR_OK)
        return 0;
    if (sign_or_verify(s, 0, data, len, sig, &sig_len, multi_sign) != CKR_OK)
        return 0;
    CK_RV rv = CALL(C_VerifyInit(s, &m, pub), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)m.mechanism);
    if (rv == CKR_OK)
        rv = sign_or_verify(s, 1, data, len, sig, &sig_len, multi_verify);
    if (rv != CKR_OK)
        oracle_failed("sign-verify", "mechanism 0x%lx (%s sign, %s verify) of %lu bytes: a signature of %lu bytes "
                      "it made does not verify: 0x%lx", (unsigned long)m.mechanism, multi_sign ? "multi-part" : "single-part",
                      multi_verify ? "multi-part" : "single-part", (unsigned long)len, (unsigned long)sig_len,
                      (unsigned long)rv);
    /* A flipped data bit changes a MAC truncated to k bytes into another with chance 1 - 2^-8k:
       a 1-byte _GENERAL MAC of flipped data verifies once in 256 tries, as it should. Data is
       flipped only under a MAC of 8 bytes or more; a flipped bit of the MAC itself never verifies. */
    int flip_data = len && percent(30) && sig_len >= 8;
    if (flip_data)
        data[below(len)] ^= (uint8_t)(1u << below(8));
    else if (sig_len)
        sig[below(sig_len)] ^= (uint8_t)(1u << below(8));
    if (CALL(C_VerifyInit(s, &m, pub), "0x%lx, 0x%lx, flipped (oracle)", (unsigned long)s, (unsigned long)m.mechanism)
            == CKR_OK
        && sign_or_verify(s, 1, data, len, sig, &sig_len, multi_verify) == CKR_OK)
        oracle_failed("verify-flipped", "mechanism 0x%lx: a signature verified after a bit of the %s was flipped",
                      (unsigned long)m.mechanism, flip_data ? "data" : "signature");
    return 1;
}
