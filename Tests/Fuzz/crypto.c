/*
 * The cryptographic call families of p11fuzz (v2.40 §5.8-5.15, v3.0 §5.19-5.22): digests,
 * random numbers, signing and verifying, encryption and decryption, key generation, wrapping
 * and derivation, dual-function and message-based calls; the lifecycle families
 * (C_Finalize/C_Initialize, dlclose/dlopen, fork); the table of every family; the token set-up.
 *
 * Each operation is started, then finished one-shot, in parts, after a size query, or never
 * (abandoned: the next C_*Init on the session must cope).
 */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

static uint64_t last_rsa;
static uint8_t last_signature[1024], last_ciphertext[1024];
static CK_ULONG last_signature_len, last_ciphertext_len;
/* What the last signature signed: a verification of both can succeed. */
static uint8_t last_signed[4096];
static CK_ULONG last_signed_len;

static CK_KEY_TYPE key_type_for(CK_MECHANISM *m)
{
    if (!m)
        return (CK_KEY_TYPE)-1;
    switch (m->mechanism) {
    case CKM_ECDSA: case CKM_ECDSA_SHA1: case CKM_ECDSA_SHA224: case CKM_ECDSA_SHA256:
    case CKM_ECDSA_SHA384: case CKM_ECDSA_SHA512:
        return CKK_EC;
    case CKM_EDDSA:
        return CKK_EC_EDWARDS;
    default:
        return CKK_RSA;
    }
}

static const char *mech_text(CK_MECHANISM *m, char *buf, size_t n)
{
    if (!m)
        return "NULL";
    snprintf(buf, n, "{0x%lx, %p %s, len 0x%lx}", (unsigned long)m->mechanism, m->pParameter,
             ((uintptr_t)m->pParameter & 7) ? "misaligned" : "aligned",
             (unsigned long)m->ulParameterLen);
    return buf;
}

static void run_digest(void)
{
    CK_SESSION_HANDLE s = pick_session();
    char mt[96];
    if (percent(80)) {
        CK_MECHANISM *m = random_mechanism(M_DIGEST);
        CALL(C_DigestInit(s, m), "0x%lx, %s", (unsigned long)s, mech_text(m, mt, sizeof mt));
    }
    CK_ULONG len, out_len;
    uint8_t *data, *out;
    switch (below(4)) {
    case 0:
        data = input_data(&len);
        out = output_buffer(&out_len);
        CALL(C_Digest(s, data, len, out, percent(97) ? &out_len : NULL), "0x%lx, len 0x%lx, out %p/0x%lx",
             (unsigned long)s, (unsigned long)len, (void *)out, (unsigned long)out_len);
        break;
    case 1:
        for (int i = (int)below(4); i >= 0; i--) {
            data = input_data(&len);
            CALL(C_DigestUpdate(s, data, len), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len);
        }
        if (percent(30)) {
            CK_OBJECT_HANDLE k = pick_object();
            CALL(C_DigestKey(s, k), "0x%lx, 0x%lx", (unsigned long)s, (unsigned long)k);
        }
        if (percent(75)) {
            out = output_buffer(&out_len);
            CALL(C_DigestFinal(s, out, percent(97) ? &out_len : NULL), "0x%lx, out %p/0x%lx", (unsigned long)s,
                 (void *)out, (unsigned long)out_len);
        }
        break;
    case 2:
        break; /* abandoned after init */
    default: {
        CK_OBJECT_HANDLE k = pick_object();
        CALL(C_DigestKey(s, k), "0x%lx, 0x%lx", (unsigned long)s, (unsigned long)k);
        break;
    }
    }
}

static void run_random(void)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_ULONG len;
    if (percent(30)) {
        uint8_t *seed = input_data(&len);
        CALL(C_SeedRandom(s, seed, len), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len);
        return;
    }
    uint8_t *out;
    unsigned r = (unsigned)below(100);
    if (r < 80) {
        len = small_length();
        out = scratch(len);
    } else if (r < 90) {
        len = 1 + below(64);
        out = NULL;
    } else if (huge_allowed()) {
        len = impossible_length();
        out = scratch(16);
    } else {
        len = 0;
        out = scratch(1);
    }
    CALL(C_GenerateRandom(s, out, len), "0x%lx, %p, len 0x%lx", (unsigned long)s, (void *)out, (unsigned long)len);
}

/* Sign or verify: init, then one-shot, multi-part, a size query first, or nothing. */
static void run_signature(int verify)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_MECHANISM *m = random_mechanism(M_SIGN);
    CK_OBJECT_HANDLE k = pick_key(verify ? CKO_PUBLIC_KEY : CKO_PRIVATE_KEY, key_type_for(m));
    char mt[96];
    CK_RV init;
    if (verify)
        init = CALL(C_VerifyInit(s, m, k), "0x%lx, %s, key 0x%lx", (unsigned long)s, mech_text(m, mt, sizeof mt),
                    (unsigned long)k);
    else
        init = CALL(C_SignInit(s, m, k), "0x%lx, %s, key 0x%lx", (unsigned long)s, mech_text(m, mt, sizeof mt),
                    (unsigned long)k);
    if (init != CKR_OK && percent(70))
        return;
    CK_ULONG len, out_len;
    uint8_t *data, *out;
    unsigned r = (unsigned)below(100);
    if (r < 15)
        return; /* abandoned */
    if (r < 55) {
        data = input_data(&len);
        if (verify && percent(50)) {
            len = last_signed_len;
            data = scratch_copy(last_signed, len);
        }
        if (verify) {
            CK_ULONG sig_len = last_signature_len;
            uint8_t *sig = percent(60) ? scratch_copy(last_signature, sig_len) : input_data(&sig_len);
            CALL(C_Verify(s, data, len, sig, sig_len), "0x%lx, len 0x%lx, signature len 0x%lx", (unsigned long)s,
                 (unsigned long)len, (unsigned long)sig_len);
            return;
        }
        for (int round = percent(40) ? 2 : 1; round > 0; round--) {
            out = output_buffer(&out_len);
            CK_RV rv = CALL(C_Sign(s, data, len, out, percent(97) ? &out_len : NULL),
                            "0x%lx, len 0x%lx, out %p/0x%lx", (unsigned long)s, (unsigned long)len, (void *)out,
                            (unsigned long)out_len);
            if (rv == CKR_OK && out && out_len <= sizeof last_signature && data && len <= sizeof last_signed) {
                memcpy(last_signature, out, out_len);
                last_signature_len = out_len;
                memcpy(last_signed, data, len);
                last_signed_len = len;
            }
        }
        return;
    }
    for (int i = (int)below(4); i >= 0; i--) {
        data = input_data(&len);
        if (verify)
            CALL(C_VerifyUpdate(s, data, len), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len);
        else
            CALL(C_SignUpdate(s, data, len), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len);
    }
    if (percent(25))
        return; /* abandoned mid-way */
    if (verify) {
        CK_ULONG sig_len = last_signature_len;
        uint8_t *sig = percent(60) ? scratch_copy(last_signature, sig_len) : input_data(&sig_len);
        CALL(C_VerifyFinal(s, sig, sig_len), "0x%lx, signature len 0x%lx", (unsigned long)s, (unsigned long)sig_len);
    } else {
        out = output_buffer(&out_len);
        CALL(C_SignFinal(s, out, percent(97) ? &out_len : NULL), "0x%lx, out %p/0x%lx", (unsigned long)s,
             (void *)out, (unsigned long)out_len);
    }
}

static void run_sign(void) { run_signature(0); }
static void run_verify(void) { run_signature(1); }

static void run_cipher(int decrypt)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_MECHANISM *m = random_mechanism(M_CRYPT);
    CK_OBJECT_HANDLE k = pick_key(decrypt ? CKO_PRIVATE_KEY : CKO_PUBLIC_KEY, CKK_RSA);
    char mt[96];
    CK_RV init = decrypt ? CALL(C_DecryptInit(s, m, k), "0x%lx, %s, key 0x%lx", (unsigned long)s,
                                mech_text(m, mt, sizeof mt), (unsigned long)k)
                         : CALL(C_EncryptInit(s, m, k), "0x%lx, %s, key 0x%lx", (unsigned long)s,
                                mech_text(m, mt, sizeof mt), (unsigned long)k);
    if (init != CKR_OK && percent(70))
        return;
    CK_ULONG len, out_len;
    uint8_t *data, *out;
    unsigned r = (unsigned)below(100);
    if (r < 15)
        return;
    if (r < 60) {
        if (decrypt && percent(60)) {
            len = last_ciphertext_len;
            data = scratch_copy(last_ciphertext, len);
        } else {
            data = input_data(&len);
        }
        out = output_buffer(&out_len);
        CK_RV rv = decrypt ? CALL(C_Decrypt(s, data, len, out, percent(97) ? &out_len : NULL),
                                  "0x%lx, len 0x%lx, out %p/0x%lx", (unsigned long)s, (unsigned long)len,
                                  (void *)out, (unsigned long)out_len)
                           : CALL(C_Encrypt(s, data, len, out, percent(97) ? &out_len : NULL),
                                  "0x%lx, len 0x%lx, out %p/0x%lx", (unsigned long)s, (unsigned long)len,
                                  (void *)out, (unsigned long)out_len);
        if (!decrypt && rv == CKR_OK && out && out_len <= sizeof last_ciphertext) {
            memcpy(last_ciphertext, out, out_len);
            last_ciphertext_len = out_len;
        }
        return;
    }
    for (int i = (int)below(3); i >= 0; i--) {
        data = input_data(&len);
        out = output_buffer(&out_len);
        if (decrypt)
            CALL(C_DecryptUpdate(s, data, len, out, percent(97) ? &out_len : NULL), "0x%lx, len 0x%lx, out %p/0x%lx",
                 (unsigned long)s, (unsigned long)len, (void *)out, (unsigned long)out_len);
        else
            CALL(C_EncryptUpdate(s, data, len, out, percent(97) ? &out_len : NULL), "0x%lx, len 0x%lx, out %p/0x%lx",
                 (unsigned long)s, (unsigned long)len, (void *)out, (unsigned long)out_len);
    }
    if (percent(25))
        return;
    out = output_buffer(&out_len);
    if (decrypt)
        CALL(C_DecryptFinal(s, out, percent(97) ? &out_len : NULL), "0x%lx, out %p/0x%lx", (unsigned long)s,
             (void *)out, (unsigned long)out_len);
    else
        CALL(C_EncryptFinal(s, out, percent(97) ? &out_len : NULL), "0x%lx, out %p/0x%lx", (unsigned long)s,
             (void *)out, (unsigned long)out_len);
}

static void run_encrypt(void) { run_cipher(0); }
static void run_decrypt(void) { run_cipher(1); }


/* ---------------------------------------------------------------- keys */

static void run_generate_key_pair(void)
{
    if (!may_create())
        return;
    CK_SESSION_HANDLE s = pick_session();
    CK_MECHANISM *m = random_mechanism(M_KEYPAIR);
    /* RSA generation is slow: once in a while only. */
    if (m && iteration - last_rsa >= 3000 && percent(30)) {
        last_rsa = iteration;
        m->mechanism = CKM_RSA_PKCS_KEY_PAIR_GEN;
    }
    CK_ULONG npub, npriv;
    CK_ATTRIBUTE *pub = random_template(T_GEN_PUBLIC, &npub);
    CK_ATTRIBUTE *priv = random_template(T_GEN_PRIVATE, &npriv);
    CK_OBJECT_HANDLE hpub = 0, hpriv = 0;
    char mt[96];
    CK_RV rv = CALL(C_GenerateKeyPair(s, m, pub, npub, priv, npriv, percent(97) ? &hpub : NULL,
                                      percent(97) ? &hpriv : NULL),
                    "0x%lx, %s, public count 0x%lx, private count 0x%lx", (unsigned long)s,
                    mech_text(m, mt, sizeof mt), (unsigned long)npub, (unsigned long)npriv);
    if (rv == CKR_OK && m) {
        CK_KEY_TYPE type = m->mechanism == CKM_RSA_PKCS_KEY_PAIR_GEN ? CKK_RSA
                           : m->mechanism == CKM_EC_KEY_PAIR_GEN     ? CKK_EC
                                                                     : CKK_EC_EDWARDS;
        created(rv, hpub);
        created(rv, hpriv);
        key_add(hpub, CKO_PUBLIC_KEY, type);
        key_add(hpriv, CKO_PRIVATE_KEY, type);
    }
}

/* Secret keys, wrapping, unwrapping and derivation: not offered today, so each must fail
   cleanly whatever it is given. */
static void run_secret_keys(void)
{
    if (!may_create())
        return;
    CK_SESSION_HANDLE s = pick_session();
    CK_ULONG n, len, out_len;
    CK_ATTRIBUTE *t;
    CK_OBJECT_HANDLE h = 0;
    char mt[96];
    CK_MECHANISM *m;
    switch (below(4)) {
    case 0:
        m = random_mechanism(M_KEY);
        t = random_template(T_CREATE, &n);
        created(CALL(C_GenerateKey(s, m, t, n, percent(97) ? &h : NULL), "0x%lx, %s, count 0x%lx",
                     (unsigned long)s, mech_text(m, mt, sizeof mt), (unsigned long)n),
                h);
        break;
    case 1: {
        m = random_mechanism(M_WRAP);
        uint8_t *out = output_buffer(&out_len);
        CK_OBJECT_HANDLE wrapping = pick_object(), key = pick_object();
        CALL(C_WrapKey(s, m, wrapping, key, out, percent(97) ? &out_len : NULL), "0x%lx, %s, out %p/0x%lx",
             (unsigned long)s, mech_text(m, mt, sizeof mt), (void *)out, (unsigned long)out_len);
        break;
    }
    case 2: {
        m = random_mechanism(M_WRAP);
        uint8_t *wrapped = input_data(&len);
        t = random_template(T_CREATE, &n);
        created(CALL(C_UnwrapKey(s, m, pick_object(), wrapped, len, t, n, percent(97) ? &h : NULL),
                     "0x%lx, %s, len 0x%lx, count 0x%lx", (unsigned long)s, mech_text(m, mt, sizeof mt),
                     (unsigned long)len, (unsigned long)n),
                h);
        break;
    }
    default:
        m = random_mechanism(M_DERIVE);
        t = random_template(T_CREATE, &n);
        created(CALL(C_DeriveKey(s, m, pick_object(), t, n, percent(97) ? &h : NULL), "0x%lx, %s, count 0x%lx",
                     (unsigned long)s, mech_text(m, mt, sizeof mt), (unsigned long)n),
                h);
        break;
    }
}

static void run_dual(void)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_ULONG len, out_len;
    uint8_t *data = input_data(&len), *out = output_buffer(&out_len);
    CK_ULONG *pl = percent(97) ? &out_len : NULL;
    switch (below(4)) {
    case 0: CALL(C_DigestEncryptUpdate(s, data, len, out, pl), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len); break;
    case 1: CALL(C_DecryptDigestUpdate(s, data, len, out, pl), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len); break;
    case 2: CALL(C_SignEncryptUpdate(s, data, len, out, pl), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len); break;
    default: CALL(C_DecryptVerifyUpdate(s, data, len, out, pl), "0x%lx, len 0x%lx", (unsigned long)s, (unsigned long)len); break;
    }
    if (percent(30)) {
        CK_MECHANISM *m = random_mechanism(M_SIGN);
        char mt[96];
        CK_ULONG sig_len;
        uint8_t *sig = output_buffer(&sig_len);
        if (percent(50)) {
            CALL(C_SignRecoverInit(s, m, pick_object()), "0x%lx, %s", (unsigned long)s, mech_text(m, mt, sizeof mt));
            CALL(C_SignRecover(s, data, len, sig, percent(97) ? &sig_len : NULL), "0x%lx, len 0x%lx", (unsigned long)s,
                 (unsigned long)len);
        } else {
            CALL(C_VerifyRecoverInit(s, m, pick_object()), "0x%lx, %s", (unsigned long)s, mech_text(m, mt, sizeof mt));
            CALL(C_VerifyRecover(s, data, len, sig, percent(97) ? &sig_len : NULL), "0x%lx, len 0x%lx",
                 (unsigned long)s, (unsigned long)len);
        }
    }
}

/* The v3.0 message-based functions: all present in the 3.0 list, none offered. */
static void run_message(void)
{
    if (!f3)
        return;
    CK_SESSION_HANDLE s = pick_session();
    CK_MECHANISM *m = random_mechanism(M_CRYPT);
    CK_ULONG len, out_len, plen;
    uint8_t *data = input_data(&len), *out = output_buffer(&out_len), *param = input_data(&plen);
    CK_OBJECT_HANDLE k = pick_object();
    switch (below(8)) {
    case 0: begin_call("C_MessageEncryptInit", "0x%lx", (unsigned long)s); end_call(f3->C_MessageEncryptInit(s, m, k)); break;
    case 1: begin_call("C_EncryptMessage", "0x%lx", (unsigned long)s);
        end_call(f3->C_EncryptMessage(s, param, plen, data, len, data, len, out, &out_len)); break;
    case 2: begin_call("C_DecryptMessageNext", "0x%lx", (unsigned long)s);
        end_call(f3->C_DecryptMessageNext(s, param, plen, data, len, out, &out_len, rnd())); break;
    case 3: begin_call("C_MessageSignInit", "0x%lx", (unsigned long)s); end_call(f3->C_MessageSignInit(s, m, k)); break;
    case 4: begin_call("C_SignMessage", "0x%lx", (unsigned long)s);
        end_call(f3->C_SignMessage(s, param, plen, data, len, out, &out_len)); break;
    case 5: begin_call("C_VerifyMessage", "0x%lx", (unsigned long)s);
        end_call(f3->C_VerifyMessage(s, param, plen, data, len, data, len)); break;
    case 6: begin_call("C_SignMessageBegin", "0x%lx", (unsigned long)s); end_call(f3->C_SignMessageBegin(s, param, plen)); break;
    default: begin_call("C_MessageVerifyFinal", "0x%lx", (unsigned long)s); end_call(f3->C_MessageVerifyFinal(s)); break;
    }
}

/* ---------------------------------------------------------------- lifecycle */

/* C_Finalize in the middle of everything: open sessions, operations, searches. */
static void run_reinitialize(void)
{
    void *reserved = percent(5) ? (void *)&reserved : NULL;
    CK_RV rv = CALL(C_Finalize(reserved), "%s", reserved ? "pReserved set" : "NULL");
    if (rv == CKR_OK) {
        initialized = 0;
        forget_handles();
    }
    if (percent(60))
        do_initialize(1);
}

static void run_fork(void)
{
    if (!in_child)
        do_fork();
}

static void run_reload(void)
{
    if (!in_child)
        do_reload();
}

/* ---------------------------------------------------------------- the families */

/* Weights are per thousand iterations, roughly. */
family_t families[] = {
    { "info", 70, 1, run_info },
    { "session", 100, 1, run_session },
    { "login", 25, 0, run_login },
    { "init-token", 4, 0, run_init_token },
    { "create", 90, 0, run_create },
    { "copy", 25, 0, run_copy },
    { "destroy", 30, 0, run_destroy },
    { "get-attributes", 120, 1, run_get_attributes },
    { "set-attributes", 40, 0, run_set_attributes },
    { "object-size", 15, 1, run_object_size },
    { "find", 110, 1, run_find },
    { "digest", 50, 1, run_digest },
    { "random", 25, 1, run_random },
    { "sign", 100, 1, run_sign },
    { "verify", 50, 1, run_verify },
    { "encrypt", 35, 1, run_encrypt },
    { "decrypt", 35, 1, run_decrypt },
    { "generate-key-pair", 25, 0, run_generate_key_pair },
    { "secret-keys", 12, 0, run_secret_keys },
    { "dual", 8, 1, run_dual },
    { "message", 8, 1, run_message },
    { "reinitialize", 3, 1, run_reinitialize },
    { "fork", 3, 0, run_fork },
    { "reload", 1, 0, run_reload },
    { "oracles", 150, 0, run_oracles },
};
const size_t family_count = sizeof families / sizeof families[0];
