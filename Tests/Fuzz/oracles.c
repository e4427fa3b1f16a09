/*
 * The oracles' family: every mechanism C_GetMechanismList lists, driven through
 * the call families its CKF_* flags name, with valid and malformed parameters, and a check of
 * every round trip that succeeded (oracle_ops.c): encrypt -> decrypt gives the plaintext
 * back, sign -> verify holds and a flipped byte fails, wrap -> unwrap gives the same key,
 * deriving twice gives the same key, a digest in one part equals the digest in parts.
 *
 * The oracles work in their own session with their own keys (key_role), made from known
 * values where the exfiltration oracle needs them (exfiltration.c tracks their bytes), and
 * made again whenever the chaos of the other families (C_Finalize, C_InitToken, destroy)
 * took them away. A check that fails calls oracle_failed(check, ...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

enum { MAX_MECHANISMS = 128 };
static listed_mechanism mechanisms[MAX_MECHANISMS];
static size_t mechanism_count, next_mechanism;
static CK_SESSION_HANDLE session;
static uint64_t last_oracle_login, last_rsa_pair;
static int have_logged_in;

CK_ATTRIBUTE attr_bool(CK_ATTRIBUTE_TYPE type, int value)
{
    CK_BBOOL *b = scratch(1);
    *b = value ? CK_TRUE : CK_FALSE;
    return (CK_ATTRIBUTE){ type, b, 1 };
}

CK_ATTRIBUTE attr_ulong(CK_ATTRIBUTE_TYPE type, CK_ULONG value)
{
    CK_ULONG *v = scratch(sizeof *v);
    *v = value;
    return (CK_ATTRIBUTE){ type, v, sizeof *v };
}

uint8_t *read_attribute(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, CK_ULONG *len)
{
    CK_ATTRIBUTE a = { type, NULL, 0 };
    if (CALL(C_GetAttributeValue(s, h, &a, 1), "0x%lx, 0x%lx, %s size (oracle)", (unsigned long)s,
             (unsigned long)h, attribute_name(type)) != CKR_OK || a.ulValueLen > (1 << 20))
        return NULL;
    a.pValue = scratch(a.ulValueLen ? a.ulValueLen : 1);
    if (CALL(C_GetAttributeValue(s, h, &a, 1), "0x%lx, 0x%lx, %s (oracle)", (unsigned long)s, (unsigned long)h,
             attribute_name(type)) != CKR_OK)
        return NULL;
    *len = a.ulValueLen;
    return a.pValue;
}

/* ---------------------------------------------------------------- the listed mechanisms */

static void list_mechanisms(void)
{
    for (CK_SLOT_ID slot = 0; slot < 2; slot++) {
        CK_ULONG n = 0;
        if (CALL(C_GetMechanismList(slot, NULL, &n), "slot %lu, NULL (oracle)", (unsigned long)slot) != CKR_OK
            || n == 0 || n > 4096)
            continue;
        CK_MECHANISM_TYPE *list = scratch(n * sizeof *list);
        if (CALL(C_GetMechanismList(slot, list, &n), "slot %lu (oracle)", (unsigned long)slot) != CKR_OK)
            continue;
        for (CK_ULONG i = 0; i < n; i++) {
            size_t k = 0;
            while (k < mechanism_count && mechanisms[k].type != list[i])
                k++;
            CK_MECHANISM_INFO info;
            if (k == mechanism_count && k < MAX_MECHANISMS
                && CALL(C_GetMechanismInfo(slot, list[i], &info), "slot %lu, 0x%lx (oracle)", (unsigned long)slot,
                        (unsigned long)list[i]) == CKR_OK) {
                mechanisms[k].type = list[i];
                mechanisms[k].flags = info.flags;
                mechanism_count++;
            }
        }
    }
}

void oracle_setup(void)
{
    if (!mechanism_count && initialized)
        list_mechanisms();
    if (tracing())
        fprintf(stderr, "p11fuzz: %zu mechanisms listed\n", mechanism_count);
}

void oracle_summary(void)
{
    size_t checked = 0;
    for (size_t i = 0; i < mechanism_count; i++)
        checked += mechanisms[i].checks > 0;
    printf("p11fuzz: oracles: %zu of %zu listed mechanisms checked by a round trip:", checked, mechanism_count);
    for (size_t i = 0; i < mechanism_count; i++)
        printf(" 0x%lx=%lu/%lu", (unsigned long)mechanisms[i].type, mechanisms[i].checks, mechanisms[i].runs);
    printf("\n");
    if (checked < mechanism_count) {
        printf("p11fuzz: oracles: never checked:");
        for (size_t i = 0; i < mechanism_count; i++)
            if (!mechanisms[i].checks)
                printf(" 0x%lx", (unsigned long)mechanisms[i].type);
        printf("\n");
    }
}

/* ---------------------------------------------------------------- the session and keys */

int oracle_logged_in(void) { return have_logged_in; }

static uint64_t checked_at;

void oracle_session_changed(void) { checked_at = 0; }

CK_SESSION_HANDLE oracle_session(void)
{
    if (session && checked_at == iteration && iteration)
        return session; /* checked in this iteration: nothing else ran since */
    checked_at = iteration;
    CK_SESSION_INFO info;
    if (!session || CALL(C_GetSessionInfo(session, &info), "0x%lx (oracle)", (unsigned long)session) != CKR_OK) {
        session = 0;
        if (CALL(C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session),
                 "slot 0 (oracle)") != CKR_OK)
            return session = 0;
        if (CALL(C_GetSessionInfo(session, &info), "0x%lx (oracle)", (unsigned long)session) != CKR_OK)
            info.state = CKS_RW_PUBLIC_SESSION;
    }
    /* A PIN check costs PBKDF2: at most every 200 iterations, as the login family's. */
    if (info.state != CKS_RW_USER_FUNCTIONS && info.state != CKS_RW_SO_FUNCTIONS
        && (!last_oracle_login || iteration - last_oracle_login >= 200)) {
        last_oracle_login = iteration ? iteration : 1;
        CK_RV rv = CALL(C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin)),
                        "0x%lx, USER, the user PIN (oracle)", (unsigned long)session);
        if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN)
            info.state = CKS_RW_USER_FUNCTIONS;
    }
    have_logged_in = info.state == CKS_RW_USER_FUNCTIONS;
    /* Other families reach this session too (small handles are among their made-up ones): an
       operation they left active would make the oracles' C_*Init answer CKR_OPERATION_ACTIVE. */
    if (f3) {
        begin_call("C_SessionCancel", "0x%lx, every operation (oracle)", (unsigned long)session);
        end_call(f3->C_SessionCancel(session, CKF_ENCRYPT | CKF_DECRYPT | CKF_DIGEST | CKF_SIGN | CKF_VERIFY
                                                  | 0x40 /* CKF_FIND_OBJECTS */));
    }
    return session;
}

static CK_OBJECT_HANDLE role_handle[K_ROLES];
static uint8_t role_id[K_ROLES][8];
static CK_ATTRIBUTE new_id(key_role role);
static const CK_KEY_TYPE role_type[K_ROLES] = {
    [K_AES16] = CKK_AES, [K_AES24] = CKK_AES, [K_AES32] = CKK_AES, [K_GENERIC32] = CKK_GENERIC_SECRET,
    [K_GENERIC_ODD] = CKK_GENERIC_SECRET, [K_LOCKED_AES] = CKK_AES, [K_KNOWN_EC] = CKK_EC,
    [K_KNOWN_ED] = CKK_EC_EDWARDS, [K_EC_PRIV] = CKK_EC, [K_EC_PUB] = CKK_EC, [K_EC2_PRIV] = CKK_EC,
    [K_EC2_PUB] = CKK_EC, [K_ED_PRIV] = CKK_EC_EDWARDS, [K_ED_PUB] = CKK_EC_EDWARDS,
    [K_X_PRIV] = CKK_EC_MONTGOMERY, [K_X_PUB] = CKK_EC_MONTGOMERY, [K_X2_PRIV] = CKK_EC_MONTGOMERY,
    [K_X2_PUB] = CKK_EC_MONTGOMERY, [K_RSA_PRIV] = CKK_RSA, [K_RSA_PUB] = CKK_RSA,
};

CK_KEY_TYPE oracle_key_type(key_role role) { return role_type[role]; }

static const uint8_t oid_p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const uint8_t oid_ed25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
static const uint8_t oid_x25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x6e };

/* A secret or private key from known bytes: tracked by the exfiltration oracle when it is
   sensitive or unextractable. */
static CK_OBJECT_HANDLE create_known(key_role role, CK_SESSION_HANDLE s)
{
    CK_ATTRIBUTE t[20];
    int n = 0, sensitive, extractable, token;
    size_t len;
    uint8_t *value;
    const char *what;
    switch (role) {
    case K_KNOWN_EC: case K_KNOWN_ED:
        len = 32;
        value = scratch_random(len);
        value[0] &= 0x7f; /* below the P-256 group order */
        value[0] |= 0x01;
        sensitive = 1, extractable = percent(30), token = 1;
        t[n++] = attr_ulong(CKA_CLASS, CKO_PRIVATE_KEY);
        t[n++] = (CK_ATTRIBUTE){ CKA_EC_PARAMS, (void *)(role == K_KNOWN_EC ? oid_p256 : oid_ed25519),
                                 role == K_KNOWN_EC ? sizeof oid_p256 : sizeof oid_ed25519 };
        t[n++] = attr_bool(CKA_SIGN, 1);
        what = role == K_KNOWN_EC ? "EC P-256 private key" : "Ed25519 private key";
        break;
    default: {
        static const size_t lengths[] = { [K_AES16] = 16, [K_AES24] = 24, [K_AES32] = 32, [K_GENERIC32] = 32,
                                          [K_GENERIC_ODD] = 0, [K_LOCKED_AES] = 32 };
        len = lengths[role];
        if (role == K_GENERIC_ODD)
            do
                len = 1 + below(63);
            while (len % 8 == 0);
        value = scratch_random(len);
        int locked = role == K_LOCKED_AES;
        sensitive = locked || percent(50), extractable = !locked, token = locked || percent(20);
        t[n++] = attr_ulong(CKA_CLASS, CKO_SECRET_KEY);
        int aes = role_type[role] == CKK_AES;
        t[n++] = attr_bool(CKA_SIGN, 1);
        t[n++] = attr_bool(CKA_VERIFY, 1);
        t[n++] = attr_bool(CKA_DERIVE, 1);
        if (aes) {
            t[n++] = attr_bool(CKA_ENCRYPT, 1);
            t[n++] = attr_bool(CKA_DECRYPT, 1);
            t[n++] = attr_bool(CKA_WRAP, !locked);
            t[n++] = attr_bool(CKA_UNWRAP, !locked);
        }
        what = locked ? "AES-256 key, unextractable" : aes ? "AES key" : "generic secret";
        break;
    }
    }
    t[n++] = attr_ulong(CKA_KEY_TYPE, role_type[role]);
    t[n++] = (CK_ATTRIBUTE){ CKA_VALUE, value, len };
    t[n++] = attr_bool(CKA_TOKEN, token);
    t[n++] = attr_bool(CKA_PRIVATE, have_logged_in);
    t[n++] = attr_bool(CKA_SENSITIVE, sensitive);
    t[n++] = attr_bool(CKA_EXTRACTABLE, extractable);
    t[n++] = (CK_ATTRIBUTE){ CKA_LABEL, "oracle", 6 };
    t[n++] = new_id(role);
    CK_OBJECT_HANDLE h = 0;
    CK_RV rv = CALL(C_CreateObject(s, t, (CK_ULONG)n, &h), "0x%lx, %s of %zu bytes (oracle)", (unsigned long)s,
                    what, len);
    if (rv != CKR_OK)
        return 0;
    created(rv, h);
    /* P11FUZZ_SELFTEST=1 tracks readable keys too: the exfiltration oracle must then fail. */
    if (sensitive || !extractable || getenv("P11FUZZ_SELFTEST")) {
        char text[128];
        snprintf(text, sizeof text, "%s%s%s, %zu bytes, made at iteration %lu", what, sensitive ? ", sensitive" : "",
                 token ? ", token" : ", session", len, (unsigned long)iteration);
        exfiltration_track(value, len, h, extractable, text);
    }
    return h;
}

/* A key pair the module generates: the private one sensitive and unextractable. */
static void generate_pair(key_role priv_role, CK_SESSION_HANDLE s)
{
    key_role pub_role = (key_role)(priv_role + 1);
    CK_KEY_TYPE type = role_type[priv_role];
    CK_MECHANISM m = { CKM_EC_KEY_PAIR_GEN, NULL, 0 };
    CK_ATTRIBUTE pub[7], priv[11];
    int np = 0, nq = 0, token = 0;
    if (type == CKK_RSA) {
        /* RSA generation costs 0.1-2 s: a token pair, made again at most every 3000 iterations. */
        if (last_rsa_pair && iteration - last_rsa_pair < 3000)
            return;
        last_rsa_pair = iteration ? iteration : 1;
        m.mechanism = CKM_RSA_PKCS_KEY_PAIR_GEN;
        pub[np++] = attr_ulong(CKA_MODULUS_BITS, 2048);
        pub[np++] = attr_bool(CKA_ENCRYPT, 1);
        pub[np++] = attr_bool(CKA_WRAP, 1);
        priv[nq++] = attr_bool(CKA_DECRYPT, 1);
        priv[nq++] = attr_bool(CKA_UNWRAP, 1);
        token = 1;
    } else {
        const uint8_t *oid = type == CKK_EC ? oid_p256 : type == CKK_EC_EDWARDS ? oid_ed25519 : oid_x25519;
        size_t oid_len = type == CKK_EC ? sizeof oid_p256 : sizeof oid_ed25519;
        m.mechanism = type == CKK_EC ? CKM_EC_KEY_PAIR_GEN
                      : type == CKK_EC_EDWARDS ? CKM_EC_EDWARDS_KEY_PAIR_GEN : CKM_EC_MONTGOMERY_KEY_PAIR_GEN;
        pub[np++] = (CK_ATTRIBUTE){ CKA_EC_PARAMS, (void *)oid, oid_len };
    }
    if (type != CKK_EC_MONTGOMERY) {
        pub[np++] = attr_bool(CKA_VERIFY, 1);
        priv[nq++] = attr_bool(CKA_SIGN, 1);
    }
    if (type == CKK_EC || type == CKK_EC_MONTGOMERY)
        priv[nq++] = attr_bool(CKA_DERIVE, 1);
    pub[np++] = attr_bool(CKA_TOKEN, token);
    priv[nq++] = attr_bool(CKA_TOKEN, token);
    pub[np++] = new_id(pub_role);
    priv[nq++] = new_id(priv_role);
    priv[nq++] = attr_bool(CKA_PRIVATE, have_logged_in);
    priv[nq++] = attr_bool(CKA_SENSITIVE, 1);
    priv[nq++] = attr_bool(CKA_EXTRACTABLE, 0);
    CK_OBJECT_HANDLE hpub = 0, hpriv = 0;
    CK_RV rv = CALL(C_GenerateKeyPair(s, &m, pub, (CK_ULONG)np, priv, (CK_ULONG)nq, &hpub, &hpriv),
                    "0x%lx, 0x%lx (oracle keys)", (unsigned long)s, (unsigned long)m.mechanism);
    if (rv == CKR_OK) {
        objects_created += 2;
        role_handle[priv_role] = hpriv;
        role_handle[pub_role] = hpub;
    }
}

/* Still the object the role made: the handle answers with the role's CKA_ID (a handle the
   destroy family freed may come back as another object). */
static int usable(CK_SESSION_HANDLE s, key_role role)
{
    uint8_t id[8];
    CK_ATTRIBUTE a = { CKA_ID, id, sizeof id };
    CK_OBJECT_HANDLE h = role_handle[role];
    return h && CALL(C_GetAttributeValue(s, h, &a, 1), "0x%lx, 0x%lx, ID (oracle)", (unsigned long)s,
                     (unsigned long)h) == CKR_OK
           && a.ulValueLen == sizeof id && !memcmp(id, role_id[role], sizeof id);
}

/* A new CKA_ID for a role's next object. */
static CK_ATTRIBUTE new_id(key_role role)
{
    memcpy(role_id[role], scratch_random(8), 8);
    return (CK_ATTRIBUTE){ CKA_ID, role_id[role], 8 };
}

CK_OBJECT_HANDLE oracle_key(key_role role)
{
    CK_SESSION_HANDLE s = oracle_session();
    if (!s)
        return 0;
    if (role >= K_EC_PRIV) {
        key_role priv = (key_role)(role - (role - K_EC_PRIV) % 2), pub = (key_role)(priv + 1);
        if (usable(s, priv) && usable(s, pub))
            return role_handle[role];
        /* Not usable now (maybe only while logged out): kept for the next try unless a new
           pair replaces it (RSA: at most every 3000 iterations). */
        if (may_create())
            generate_pair(priv, s);
        return usable(s, priv) && usable(s, pub) ? role_handle[role] : 0;
    }
    if (!usable(s, role))
        role_handle[role] = may_create() ? create_known(role, s) : 0;
    return role_handle[role];
}

/* ---------------------------------------------------------------- fingerprints */

size_t key_fingerprint(CK_OBJECT_HANDLE h, CK_KEY_TYPE type, uint8_t *out, size_t max, int by_use)
{
    CK_SESSION_HANDLE s = oracle_session();
    CK_ULONG len = 0;
    uint8_t *v = by_use ? NULL : read_attribute(s, h, CKA_CHECK_VALUE, &len);
    if (!by_use && (!v || !len))
        v = read_attribute(s, h, CKA_VALUE, &len);
    if (v && len && len + 1 <= max) {
        out[0] = 'v';
        memcpy(out + 1, v, len);
        return len + 1;
    }
    /* Neither readable: what the key does to a fixed block. */
    static const uint8_t block[16] = "p11fuzz fixed..";
    CK_MECHANISM m = { type == CKK_AES ? CKM_AES_ECB : CKM_SHA256_HMAC, NULL, 0 };
    CK_ULONG n = max - 1;
    CK_RV rv;
    if (type == CKK_AES) {
        if (CALL(C_EncryptInit(s, &m, h), "0x%lx, AES_ECB, 0x%lx (fingerprint)", (unsigned long)s, (unsigned long)h)
            != CKR_OK)
            return 0;
        rv = CALL(C_Encrypt(s, (CK_BYTE_PTR)block, 16, out + 1, &n), "0x%lx (fingerprint)", (unsigned long)s);
    } else {
        if (CALL(C_SignInit(s, &m, h), "0x%lx, SHA256_HMAC, 0x%lx (fingerprint)", (unsigned long)s, (unsigned long)h)
            != CKR_OK)
            return 0;
        rv = CALL(C_Sign(s, (CK_BYTE_PTR)block, 16, out + 1, &n), "0x%lx (fingerprint)", (unsigned long)s);
    }
    if (rv != CKR_OK)
        return 0;
    out[0] = 'f';
    return n + 1;
}

/* ---------------------------------------------------------------- digests, generation */

static int oracle_digest(listed_mechanism *lm)
{
    CK_SESSION_HANDLE s = oracle_session();
    CK_MECHANISM m = { lm->type, NULL, 0 };
    if (percent(10)) { /* malformed: a parameter a digest does not take */
        CK_ULONG n = 1 + below(32);
        m.pParameter = scratch_random(n);
        m.ulParameterLen = n;
    }
    CK_ULONG len = (CK_ULONG)(small_length() % 2000);
    uint8_t *data = scratch_random(len ? len : 1);
    uint8_t one[128], parts[128];
    CK_ULONG one_len = sizeof one, parts_len = sizeof parts;
    if (CALL(C_DigestInit(s, &m), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)m.mechanism) != CKR_OK)
        return 0;
    if (CALL(C_Digest(s, data, len, one, &one_len), "0x%lx, len %lu (oracle)", (unsigned long)s, (unsigned long)len)
        != CKR_OK)
        return 0;
    if (CALL(C_DigestInit(s, &m), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)m.mechanism) != CKR_OK)
        return 0;
    for (CK_ULONG at = 0; at < len || (len == 0 && at == 0);) {
        CK_ULONG part = len ? 1 + (CK_ULONG)below(len - at) : 0;
        if (CALL(C_DigestUpdate(s, data + at, part), "0x%lx, len %lu (oracle)", (unsigned long)s,
                 (unsigned long)part) != CKR_OK) {
            oracle_failed("digest-parts", "C_DigestUpdate of mechanism 0x%lx failed after C_DigestInit",
                          (unsigned long)m.mechanism);
            return 0;
        }
        at += part;
        if (!len)
            break;
    }
    CK_RV rv = CALL(C_DigestFinal(s, parts, &parts_len), "0x%lx (oracle)", (unsigned long)s);
    if (rv != CKR_OK || parts_len != one_len || memcmp(one, parts, one_len))
        oracle_failed("digest-parts", "mechanism 0x%lx: C_Digest of %lu bytes differs from C_DigestUpdate parts "
                      "(C_DigestFinal 0x%lx)", (unsigned long)m.mechanism, (unsigned long)len, (unsigned long)rv);
    return 1;
}

/* A round trip with a key just made: one block through AES-ECB, or an HMAC. */
static int key_works(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_KEY_TYPE type)
{
    uint8_t a[64], b[64];
    size_t na = key_fingerprint(h, type, a, sizeof a, 0), nb = key_fingerprint(h, type, b, sizeof b, 1);
    (void)s;
    return na && nb; /* a stable fingerprint and a use: the key exists and works */
}

static int oracle_generate(listed_mechanism *lm)
{
    if (!may_create())
        return 0;
    CK_SESSION_HANDLE s = oracle_session();
    CK_MECHANISM m = { lm->type, NULL, 0 };
    int aes = lm->type == CKM_AES_KEY_GEN;
    static const CK_ULONG bad[] = { 0, 1, 15, 17, 33, 1 << 20, 0x7fffffffffffffffUL };
    CK_ULONG len = aes ? 16 + 8 * below(3) : 1 + below(64);
    int malformed = percent(20);
    if (malformed)
        len = PICK(bad);
    CK_ATTRIBUTE t[] = { attr_ulong(CKA_VALUE_LEN, len), attr_bool(CKA_TOKEN, 0), attr_bool(CKA_SIGN, 1),
                         attr_bool(CKA_VERIFY, 1), attr_bool(CKA_ENCRYPT, aes), attr_bool(CKA_DECRYPT, aes),
                         attr_bool(CKA_SENSITIVE, percent(50)), attr_bool(CKA_PRIVATE, have_logged_in) };
    CK_OBJECT_HANDLE h = 0;
    CK_RV rv = CALL(C_GenerateKey(s, &m, t, sizeof t / sizeof t[0], &h), "0x%lx, 0x%lx, length %lu (oracle)",
                    (unsigned long)s, (unsigned long)m.mechanism, (unsigned long)len);
    if (rv != CKR_OK)
        return 0;
    objects_created++;
    if (aes ? (len != 16 && len != 24 && len != 32) : (len == 0 || len >= (1 << 20)))
        oracle_failed("generate-usable", "C_GenerateKey(0x%lx) made a key of %lu bytes", (unsigned long)m.mechanism,
                      (unsigned long)len);
    if (!key_works(s, h, aes ? CKK_AES : CKK_GENERIC_SECRET))
        oracle_failed("generate-usable", "a key C_GenerateKey(0x%lx, %lu bytes) made gives no stable fingerprint",
                      (unsigned long)m.mechanism, (unsigned long)len);
    CALL(C_DestroyObject(s, h), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)h);
    return 1;
}

static int oracle_generate_pair(listed_mechanism *lm)
{
    static uint64_t last_rsa;
    if (!may_create())
        return 0;
    CK_SESSION_HANDLE s = oracle_session();
    CK_MECHANISM m = { lm->type, NULL, 0 };
    static const uint8_t p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };
    static const uint8_t p521[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23 };
    static const uint8_t ed448[] = { 0x06, 0x03, 0x2b, 0x65, 0x71 };
    static const uint8_t x448[] = { 0x06, 0x03, 0x2b, 0x65, 0x6f };
    const uint8_t *oid = NULL;
    size_t oid_len = 0;
    CK_MECHANISM_TYPE sign = CKM_ECDSA_SHA256;
    int montgomery = 0;
    switch (lm->type) {
    case CKM_EC_KEY_PAIR_GEN:
        oid = PICK(((const uint8_t *[]){ oid_p256, p384, p521 }));
        oid_len = oid == oid_p256 ? sizeof oid_p256 : sizeof p384;
        break;
    case CKM_EC_EDWARDS_KEY_PAIR_GEN:
        oid = percent(50) ? oid_ed25519 : ed448, oid_len = 5, sign = CKM_EDDSA;
        break;
    case CKM_EC_MONTGOMERY_KEY_PAIR_GEN:
        oid = percent(50) ? oid_x25519 : x448, oid_len = 5, montgomery = 1;
        break;
    case CKM_RSA_PKCS_KEY_PAIR_GEN:
        if (last_rsa && iteration - last_rsa < 3000)
            return 0;
        last_rsa = iteration ? iteration : 1;
        sign = CKM_SHA256_RSA_PKCS;
        break;
    default:
        return 0;
    }
    CK_ATTRIBUTE pub[] = { oid ? (CK_ATTRIBUTE){ CKA_EC_PARAMS, (void *)oid, oid_len } : attr_ulong(CKA_MODULUS_BITS, 2048),
                           attr_bool(CKA_TOKEN, 0), attr_bool(CKA_VERIFY, !montgomery) };
    CK_ATTRIBUTE priv[] = { attr_bool(CKA_TOKEN, 0), attr_bool(CKA_PRIVATE, have_logged_in),
                            attr_bool(CKA_SIGN, !montgomery), attr_bool(CKA_DERIVE, lm->type != CKM_EC_EDWARDS_KEY_PAIR_GEN) };
    if (percent(15) && oid) { /* malformed: an unknown or truncated curve */
        pub[0].ulValueLen = percent(50) ? oid_len - 1 : oid_len;
        pub[0].pValue = percent(50) ? scratch_random(oid_len) : pub[0].pValue;
    }
    CK_OBJECT_HANDLE hpub = 0, hpriv = 0;
    if (CALL(C_GenerateKeyPair(s, &m, pub, 3, priv, 4, &hpub, &hpriv), "0x%lx, 0x%lx (oracle)", (unsigned long)s,
             (unsigned long)m.mechanism) != CKR_OK)
        return 0;
    objects_created += 2;
    int checked = 0;
    if (montgomery) {
        CK_ULONG n;
        for (int i = 0; i < 2; i++) {
            CK_ATTRIBUTE_TYPE type = i ? CKA_DECRYPT : CKA_SIGN;
            uint8_t *v = read_attribute(s, hpriv, type, &n);
            if (v && n == 1 && *v)
                oracle_failed("montgomery-usage", "an X25519/X448 private key reads back with %s TRUE",
                              attribute_name(type));
        }
        checked = 1;
    } else {
        uint8_t data[48], sig[1024];
        CK_ULONG sig_len = sizeof sig;
        memcpy(data, scratch_random(sizeof data), sizeof data);
        CK_MECHANISM sm = { sign, NULL, 0 };
        if (CALL(C_SignInit(s, &sm, hpriv), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)sign) == CKR_OK
            && CALL(C_Sign(s, data, sizeof data, sig, &sig_len), "0x%lx (oracle)", (unsigned long)s) == CKR_OK) {
            CK_RV rv = CKR_GENERAL_ERROR;
            if (CALL(C_VerifyInit(s, &sm, hpub), "0x%lx (oracle)", (unsigned long)s) == CKR_OK)
                rv = CALL(C_Verify(s, data, sizeof data, sig, sig_len), "0x%lx (oracle)", (unsigned long)s);
            if (rv != CKR_OK)
                oracle_failed("sign-verify", "a key pair from 0x%lx: the signature (0x%lx) does not verify: 0x%lx",
                              (unsigned long)m.mechanism, (unsigned long)sign, (unsigned long)rv);
            checked = 1;
        }
    }
    CALL(C_DestroyObject(s, hpub), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)hpub);
    CALL(C_DestroyObject(s, hpriv), "0x%lx, 0x%lx (oracle)", (unsigned long)s, (unsigned long)hpriv);
    return checked;
}

/* ---------------------------------------------------------------- the family */

void run_oracles(void)
{
    if (!initialized || in_child)
        return;
    if (!mechanism_count)
        list_mechanisms();
    if (!mechanism_count || !oracle_session())
        return;
    /* Round robin: every listed mechanism gets its turn, whatever the seed. */
    listed_mechanism *m = &mechanisms[next_mechanism++ % mechanism_count];
    m->runs++;
    int checked = 0;
    /* The keys only the exfiltration oracle needs: made (again) now and then. */
    if (percent(20)) {
        oracle_key(K_KNOWN_EC);
        oracle_key(K_KNOWN_ED);
        oracle_key(K_LOCKED_AES);
    }
    if (m->flags & CKF_DIGEST)
        checked |= oracle_digest(m);
    if (m->flags & CKF_GENERATE)
        checked |= oracle_generate(m);
    if (m->flags & CKF_GENERATE_KEY_PAIR)
        checked |= oracle_generate_pair(m);
    if (m->flags & (CKF_ENCRYPT | CKF_DECRYPT))
        checked |= oracle_cipher(m);
    if (m->flags & (CKF_SIGN | CKF_VERIFY))
        checked |= oracle_signature(m);
    if (m->flags & (CKF_WRAP | CKF_UNWRAP))
        checked |= oracle_wrap(m);
    if (m->flags & CKF_DERIVE)
        checked |= oracle_derive(m);
    m->checks += checked != 0;
}
