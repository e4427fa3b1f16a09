/*
 * p11symmetric: secret-key speed through any PKCS#11 module.
 *
 *   p11symmetric --module PATH --token LABEL --pin PIN
 *                --bench aes-gcm|hmac-sha256|ecdh-p256 [--size BYTES] [--seconds S]
 *
 * Logs in, finds its token key (generating it the first time: an AES-256
 * key "p11symmetric-aes" by CKM_AES_KEY_GEN, a 32-byte generic secret
 * "p11symmetric-hmac" by CKM_GENERIC_SECRET_KEY_GEN, a P-256 key pair
 * "p11symmetric-ecdh" with CKA_DERIVE and a peer pair "p11symmetric-peer"),
 * checks the operation once, then runs it in one thread for S seconds:
 *
 *   aes-gcm      C_EncryptInit (CKM_AES_GCM, a fresh 12-byte IV per message,
 *                no AAD, 128-bit tag) + C_Encrypt of one SIZE-byte message
 *                (default 16384); checked first by C_Decrypt of a message
 *   hmac-sha256  C_SignInit (CKM_SHA256_HMAC) + C_Sign of SIZE bytes (default
 *                64); checked first by C_VerifyInit + C_Verify
 *   ecdh-p256    C_DeriveKey (CKM_ECDH1_DERIVE, CKD_NULL, the peer's point) of
 *                a 32-byte generic secret as a session object, then
 *                C_DestroyObject of it (each derive is destroyed at once);
 *                checked first: both sides derive the same value
 *
 * Prints one line:
 *
 *   symmetric bench=aes-gcm size=16384 ops=1234 seconds=3.000 cpu_seconds=2.990 ops_per_s=412.7 mb_per_s=6.76
 *
 * The rates are per second of this process's CPU time (user + system, so the
 * module's system calls count), not of wall-clock time: `openssl speed`
 * divides by its CPU user time too, and on a machine other work shares, wall
 * time counts the time the scheduler gives to others. `seconds` is the wall
 * time the loop ran.
 *
 * (MB = 10^6 bytes, as openssl speed counts.) Exit status 0, or 1 with a
 * message naming the function and CK_RV that failed.
 *
 * Build: gcc -O2 -Wall -Wextra -ITests/include -Ip11/include -o p11symmetric bench/p11symmetric.c -ldl
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p11test.h"

static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE session;

static void die_rv(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11symmetric: %s returned %s (0x%lx)\n", what, ckr_name(rv), (unsigned long)rv);
    exit(1);
}

static void die(const char *msg)
{
    fprintf(stderr, "p11symmetric: %s\n", msg);
    exit(1);
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's CPU time (user + system), the divisor of the rates. */
static double cpu_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void open_token(const char *path, const char *label, const char *pin)
{
    struct p11test_module m;
    char why[512];
    if (p11test_load(path, &m, why, sizeof why) != 0)
        die(why);
    p11 = m.list;
    CK_RV rv = p11test_initialize(p11);
    if (rv != CKR_OK)
        die_rv("C_Initialize", rv);
    CK_SLOT_ID slot;
    rv = p11test_find_token(p11, label, &slot, NULL);
    if (rv == CKR_TOKEN_NOT_PRESENT)
        die("no token with that label");
    if (rv != CKR_OK)
        die_rv("C_GetSlotList", rv);
    rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session);
    if (rv != CKR_OK)
        die_rv("C_OpenSession", rv);
    if ((rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin))) != CKR_OK)
        die_rv("C_Login", rv);
}

static CK_OBJECT_HANDLE find_key(CK_OBJECT_CLASS cls, const char *label)
{
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_LABEL, (void *)label, strlen(label) },
    };
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = 0;
    CK_RV rv = p11->C_FindObjectsInit(session, tmpl, 2);
    if (rv != CKR_OK)
        die_rv("C_FindObjectsInit", rv);
    if ((rv = p11->C_FindObjects(session, &h, 1, &n)) != CKR_OK)
        die_rv("C_FindObjects", rv);
    p11->C_FindObjectsFinal(session);
    return n == 1 ? h : CK_INVALID_HANDLE;
}

/* The token's secret key LABEL, generated (sensitive, not extractable) the first time. */
static CK_OBJECT_HANDLE secret_key(const char *label, CK_KEY_TYPE type, CK_MECHANISM_TYPE gen)
{
    CK_OBJECT_HANDLE h = find_key(CKO_SECRET_KEY, label);
    if (h != CK_INVALID_HANDLE)
        return h;
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &type, sizeof type },
        { CKA_TOKEN, &yes, sizeof yes }, { CKA_PRIVATE, &yes, sizeof yes },
        { CKA_SENSITIVE, &yes, sizeof yes }, { CKA_EXTRACTABLE, &no, sizeof no },
        { CKA_LABEL, (void *)label, strlen(label) }, { CKA_VALUE_LEN, &len, sizeof len },
        { type == CKK_AES ? CKA_ENCRYPT : CKA_SIGN, &yes, sizeof yes },
        { type == CKK_AES ? CKA_DECRYPT : CKA_VERIFY, &yes, sizeof yes },
    };
    CK_MECHANISM mech = { gen, NULL, 0 };
    CK_RV rv = p11->C_GenerateKey(session, &mech, tmpl, sizeof tmpl / sizeof tmpl[0], &h);
    if (rv != CKR_OK)
        die_rv("C_GenerateKey", rv);
    return h;
}

/* The token's P-256 key pair LABEL (CKA_DERIVE), generated the first time;
 * *point gets its public point (the X9.62 octets, without the DER wrapping). */
static CK_OBJECT_HANDLE ecdh_pair(const char *label, CK_BYTE *point, CK_ULONG *point_len)
{
    static const CK_BYTE p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
    CK_OBJECT_HANDLE priv = find_key(CKO_PRIVATE_KEY, label), pub = find_key(CKO_PUBLIC_KEY, label);
    CK_RV rv;
    if (priv == CK_INVALID_HANDLE || pub == CK_INVALID_HANDLE) {
        CK_BBOOL yes = CK_TRUE;
        CK_ATTRIBUTE pub_t[] = {
            { CKA_TOKEN, &yes, sizeof yes }, { CKA_LABEL, (void *)label, strlen(label) },
            { CKA_EC_PARAMS, (void *)p256, sizeof p256 },
        };
        CK_ATTRIBUTE priv_t[] = {
            { CKA_TOKEN, &yes, sizeof yes }, { CKA_PRIVATE, &yes, sizeof yes },
            { CKA_SENSITIVE, &yes, sizeof yes }, { CKA_DERIVE, &yes, sizeof yes },
            { CKA_LABEL, (void *)label, strlen(label) },
        };
        CK_MECHANISM mech = { CKM_EC_KEY_PAIR_GEN, NULL, 0 };
        rv = p11->C_GenerateKeyPair(session, &mech, pub_t, 3, priv_t, 5, &pub, &priv);
        if (rv != CKR_OK)
            die_rv("C_GenerateKeyPair", rv);
    }
    CK_BYTE der[80];
    CK_ATTRIBUTE a = { CKA_EC_POINT, der, sizeof der };
    if ((rv = p11->C_GetAttributeValue(session, pub, &a, 1)) != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_EC_POINT)", rv);
    /* A DER OCTET STRING (04 41 04 x y), or the bare point from some modules. */
    CK_ULONG skip = a.ulValueLen == 67 && der[0] == 0x04 && der[1] == 65 ? 2 : 0;
    if (a.ulValueLen - skip != 65)
        die("the P-256 public point is not 65 bytes");
    memcpy(point, der + skip, 65);
    *point_len = 65;
    return priv;
}

static CK_OBJECT_HANDLE derive(CK_OBJECT_HANDLE priv, CK_BYTE *peer, CK_ULONG peer_len, int readable)
{
    CK_ECDH1_DERIVE_PARAMS params = { CKD_NULL, 0, NULL, peer_len, peer };
    CK_MECHANISM mech = { CKM_ECDH1_DERIVE, &params, sizeof params };
    CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_GENERIC_SECRET;
    CK_BBOOL no = CK_FALSE, sensitive = readable ? CK_FALSE : CK_TRUE;
    CK_BBOOL extractable = readable ? CK_TRUE : CK_FALSE;
    CK_ULONG len = 32;
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &type, sizeof type },
        { CKA_TOKEN, &no, sizeof no }, { CKA_VALUE_LEN, &len, sizeof len },
        { CKA_SENSITIVE, &sensitive, sizeof sensitive },
        { CKA_EXTRACTABLE, &extractable, sizeof extractable },
    };
    CK_OBJECT_HANDLE h;
    CK_RV rv = p11->C_DeriveKey(session, &mech, priv, tmpl, 6, &h);
    if (rv != CKR_OK)
        die_rv("C_DeriveKey", rv);
    return h;
}

static void gcm_params(CK_GCM_PARAMS *p, CK_BYTE iv[12], unsigned long counter)
{
    memset(iv, 0, 12);
    memcpy(iv + 4, &counter, sizeof counter < 8 ? sizeof counter : 8);
    memset(p, 0, sizeof *p);
    p->pIv = iv;
    p->ulIvLen = 12;
    p->ulIvBits = 96;
    p->ulTagBits = 128;
}

int main(int argc, char **argv)
{
    const char *module = NULL, *token = NULL, *pin = NULL, *bench = NULL;
    long size = -1;
    double seconds = 3;
    static const struct option opts[] = {
        { "module", required_argument, NULL, 'm' }, { "token", required_argument, NULL, 't' },
        { "pin", required_argument, NULL, 'p' }, { "bench", required_argument, NULL, 'b' },
        { "size", required_argument, NULL, 's' }, { "seconds", required_argument, NULL, 'S' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'm': module = optarg; break;
        case 't': token = optarg; break;
        case 'p': pin = optarg; break;
        case 'b': bench = optarg; break;
        case 's': size = strtol(optarg, NULL, 10); break;
        case 'S': seconds = strtod(optarg, NULL); break;
        default: die("usage: see the comment at the top of p11symmetric.c");
        }
    }
    if (!module || !token || !pin || !bench)
        die("--module, --token, --pin and --bench are required");
    int aes = !strcmp(bench, "aes-gcm"), hmac = !strcmp(bench, "hmac-sha256");
    int ecdh = !strcmp(bench, "ecdh-p256");
    if (!aes && !hmac && !ecdh)
        die("--bench is aes-gcm, hmac-sha256 or ecdh-p256");
    if (size < 0)
        size = aes ? 16384 : 64;
    if (size > 1 << 20)
        die("--size is at most 1 MiB");
    open_token(module, token, pin);

    CK_BYTE *msg = malloc((size_t)size + 1), *out = malloc((size_t)size + 64);
    CK_BYTE *back = malloc((size_t)size + 64);
    if (!msg || !out || !back)
        die("out of memory");
    for (long i = 0; i < size; i++)
        msg[i] = (CK_BYTE)(i * 31 + 7);
    CK_OBJECT_HANDLE key = CK_INVALID_HANDLE, peer_priv = CK_INVALID_HANDLE;
    CK_BYTE point[65], peer[65], iv[12];
    CK_ULONG point_len = 0, peer_len = 0, n;
    CK_GCM_PARAMS gcm;
    CK_MECHANISM gcm_mech = { CKM_AES_GCM, &gcm, sizeof gcm };
    CK_MECHANISM hmac_mech = { CKM_SHA256_HMAC, NULL, 0 };
    CK_RV rv;

    /* Set up, and check the operation once before the clock starts. */
    if (aes) {
        key = secret_key("p11symmetric-aes", CKK_AES, CKM_AES_KEY_GEN);
        gcm_params(&gcm, iv, 0);
        n = (CK_ULONG)size + 64;
        if ((rv = p11->C_EncryptInit(session, &gcm_mech, key)) != CKR_OK ||
            (rv = p11->C_Encrypt(session, msg, (CK_ULONG)size, out, &n)) != CKR_OK)
            die_rv("C_EncryptInit/C_Encrypt (AES-GCM)", rv);
        CK_ULONG m = (CK_ULONG)size + 64;
        if ((rv = p11->C_DecryptInit(session, &gcm_mech, key)) != CKR_OK ||
            (rv = p11->C_Decrypt(session, out, n, back, &m)) != CKR_OK)
            die_rv("C_DecryptInit/C_Decrypt (AES-GCM)", rv);
        if (m != (CK_ULONG)size || memcmp(back, msg, (size_t)size) != 0)
            die("AES-GCM decryption did not give the message back");
    } else if (hmac) {
        key = secret_key("p11symmetric-hmac", CKK_GENERIC_SECRET, CKM_GENERIC_SECRET_KEY_GEN);
        n = 64;
        if ((rv = p11->C_SignInit(session, &hmac_mech, key)) != CKR_OK ||
            (rv = p11->C_Sign(session, msg, (CK_ULONG)size, out, &n)) != CKR_OK)
            die_rv("C_SignInit/C_Sign (HMAC-SHA256)", rv);
        if ((rv = p11->C_VerifyInit(session, &hmac_mech, key)) != CKR_OK ||
            (rv = p11->C_Verify(session, msg, (CK_ULONG)size, out, n)) != CKR_OK)
            die_rv("C_VerifyInit/C_Verify (HMAC-SHA256)", rv);
    } else {
        key = ecdh_pair("p11symmetric-ecdh", point, &point_len);
        peer_priv = ecdh_pair("p11symmetric-peer", peer, &peer_len);
        CK_OBJECT_HANDLE a = derive(key, peer, peer_len, 1), b = derive(peer_priv, point, point_len, 1);
        CK_BYTE va[32], vb[32];
        CK_ATTRIBUTE at = { CKA_VALUE, va, sizeof va }, bt = { CKA_VALUE, vb, sizeof vb };
        if ((rv = p11->C_GetAttributeValue(session, a, &at, 1)) != CKR_OK ||
            (rv = p11->C_GetAttributeValue(session, b, &bt, 1)) != CKR_OK)
            die_rv("C_GetAttributeValue(CKA_VALUE) of a derived key", rv);
        if (at.ulValueLen != 32 || bt.ulValueLen != 32 || memcmp(va, vb, 32) != 0)
            die("the two sides of ECDH derived different values");
        p11->C_DestroyObject(session, a);
        p11->C_DestroyObject(session, b);
    }

    double t0 = now_sec(), t = t0, deadline = t0 + seconds, c0 = cpu_sec();
    long ops = 0;
    unsigned long counter = 1;
    while (t < deadline) {
        for (int k = 0; k < 16; k++, ops++) {
            if (aes) {
                gcm_params(&gcm, iv, counter++);
                n = (CK_ULONG)size + 64;
                if ((rv = p11->C_EncryptInit(session, &gcm_mech, key)) != CKR_OK ||
                    (rv = p11->C_Encrypt(session, msg, (CK_ULONG)size, out, &n)) != CKR_OK)
                    die_rv("C_EncryptInit/C_Encrypt (AES-GCM)", rv);
            } else if (hmac) {
                n = 64;
                if ((rv = p11->C_SignInit(session, &hmac_mech, key)) != CKR_OK ||
                    (rv = p11->C_Sign(session, msg, (CK_ULONG)size, out, &n)) != CKR_OK)
                    die_rv("C_SignInit/C_Sign (HMAC-SHA256)", rv);
            } else {
                CK_OBJECT_HANDLE h = derive(key, peer, peer_len, 0);
                if ((rv = p11->C_DestroyObject(session, h)) != CKR_OK)
                    die_rv("C_DestroyObject of a derived key", rv);
            }
        }
        t = now_sec();
    }
    double cpu = cpu_sec() - c0, elapsed = t - t0;
    if (cpu <= 0)
        cpu = elapsed;
    printf("symmetric bench=%s size=%ld ops=%ld seconds=%.3f cpu_seconds=%.3f ops_per_s=%.1f mb_per_s=%.2f\n",
           bench, ecdh ? 0L : size, ops, elapsed, cpu, ops / cpu, ecdh ? 0.0 : ops * (double)size / cpu / 1e6);
    p11->C_Logout(session);
    p11->C_CloseSession(session);
    p11->C_Finalize(NULL);
    free(msg);
    free(out);
    free(back);
    return 0;
}
