/*
 * The exfiltration oracle of p11fuzz: the run keeps the bytes of every sensitive
 * or unextractable key it made from known values (oracles.c), and looks for them where no
 * path may show them: every attribute of every object it can find, logged out, as the SO and
 * as the user (C_GetAttributeValue; CKA_CHECK_VALUE excepted, it is a hash); every key wrapped
 * under every wrapping key the oracles hold (C_WrapKey: a blob must not hold a key in clear,
 * and an unextractable key must not wrap at all); and the raw store files (the SQLite file,
 * -wal, -journal, -shm). A hit is any window of 16 bytes of a key (the whole key when shorter;
 * keys under 8 bytes are not tracked) and fails the run, naming the key, the place and the
 * attribute. The sweeps run every SWEEP_EARLY iterations at first, then every SWEEP_EVERY,
 * and at the end of the run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

enum { TRACK_MAX = 1024, WINDOW = 16, MIN_TRACKED = 8, FIND_MAX = 8192, WRAP_TARGETS = 400 };

typedef struct {
    uint8_t bytes[64];
    size_t len;
    CK_OBJECT_HANDLE handle;
    int extractable;
    char what[128];
} tracked_key;
static tracked_key tracked[TRACK_MAX];
static size_t tracked_count, untracked;

/* Every window of every key, by its first 8 bytes, sorted: one lookup per byte scanned. */
typedef struct {
    uint64_t prefix;
    uint32_t key, offset;
} window_t;
static window_t *windows;
static size_t window_count, indexed_keys;

void exfiltration_track(const uint8_t *bytes, size_t len, CK_OBJECT_HANDLE h, int extractable, const char *what)
{
    if (len < MIN_TRACKED || len > sizeof tracked[0].bytes)
        return;
    if (tracked_count == TRACK_MAX) {
        untracked++;
        return;
    }
    tracked_key *k = &tracked[tracked_count++];
    memcpy(k->bytes, bytes, len);
    k->len = len;
    k->handle = h;
    k->extractable = extractable;
    snprintf(k->what, sizeof k->what, "%s (handle 0x%lx)", what, (unsigned long)h);
}

int exfiltration_unextractable(CK_OBJECT_HANDLE h)
{
    for (size_t i = 0; i < tracked_count; i++)
        if (tracked[i].handle == h && !tracked[i].extractable)
            return 1;
    return 0;
}

static size_t window_of(const tracked_key *k) { return k->len < WINDOW ? k->len : WINDOW; }

static uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int by_prefix(const void *a, const void *b)
{
    uint64_t x = ((const window_t *)a)->prefix, y = ((const window_t *)b)->prefix;
    return x < y ? -1 : x > y;
}

static void index_windows(void)
{
    if (indexed_keys == tracked_count)
        return;
    free(windows);
    window_count = 0;
    windows = malloc(tracked_count * 64 * sizeof *windows);
    if (!windows) {
        indexed_keys = 0;
        return;
    }
    for (size_t i = 0; i < tracked_count; i++) {
        size_t w = window_of(&tracked[i]);
        for (size_t off = 0; off + w <= tracked[i].len; off++)
            windows[window_count++] = (window_t){ load64(tracked[i].bytes + off), (uint32_t)i, (uint32_t)off };
    }
    qsort(windows, window_count, sizeof *windows, by_prefix);
    indexed_keys = tracked_count;
}

void exfiltration_scan(const uint8_t *bytes, size_t len, const char *where, const char *what)
{
    index_windows();
    if (!window_count || !bytes || len < MIN_TRACKED)
        return;
    for (size_t pos = 0; pos + MIN_TRACKED <= len; pos++) {
        uint64_t prefix = load64(bytes + pos);
        size_t lo = 0, hi = window_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (windows[mid].prefix < prefix)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < window_count && windows[lo].prefix == prefix; lo++) {
            const tracked_key *k = &tracked[windows[lo].key];
            size_t w = window_of(k);
            if (pos + w <= len && !memcmp(bytes + pos, k->bytes + windows[lo].offset, w))
                oracle_failed("exfiltration", "%zu bytes of %s, from its byte %u, found in %s: %s, at offset %zu", w,
                              k->what, windows[lo].offset, where, what, pos);
        }
    }
}

/* ---------------------------------------------------------------- the sweep */

static const CK_ATTRIBUTE_TYPE vendor_types[] = {
    CKA_P11K_ACCOUNT, CKA_P11K_APPLICATION_TAG, CKA_P11K_ITEM_CLASS, CKA_P11K_ACCESSIBLE, CKA_P11K_ACCESS_GROUP,
    CKA_P11K_GENERIC, CKA_P11K_COMMENT, CKA_P11K_DESCRIPTION, CKA_P11K_PATH, CKA_P11K_SECURITY_DOMAIN,
    CKA_HASH_OF_CERTIFICATE, CKA_NSS_CERT_SHA1_HASH, CKA_NSS_CERT_MD5_HASH,
};

static CK_OBJECT_HANDLE found[FIND_MAX], keys_found[WRAP_TARGETS];
static size_t keys_found_count;

/* Reads every known attribute of every object the session finds, in one template per object
   (the module fills what it may and marks the rest CK_UNAVAILABLE_INFORMATION). */
static void read_everything(CK_SESSION_HANDLE s, const char *state, int collect_keys)
{
    if (CALL(C_FindObjectsInit(s, NULL, 0), "0x%lx, everything (sweep)", (unsigned long)s) != CKR_OK)
        return;
    CK_ULONG total = 0, got = 0;
    while (total < FIND_MAX
           && CALL(C_FindObjects(s, found + total, FIND_MAX - total, &got), "0x%lx (sweep)", (unsigned long)s)
                  == CKR_OK
           && got)
        total += got;
    CALL(C_FindObjectsFinal(s), "0x%lx (sweep)", (unsigned long)s);
    CK_ATTRIBUTE_TYPE types[128];
    int count = byte_attribute_types(types, 100);
    for (size_t i = 0; i < sizeof vendor_types / sizeof vendor_types[0]; i++)
        types[count++] = vendor_types[i];
    CK_ATTRIBUTE t[128];
    for (CK_ULONG o = 0; o < total; o++) {
        for (int i = 0; i < count; i++)
            t[i] = (CK_ATTRIBUTE){ types[i], NULL, 0 };
        CK_RV rv = CALL(C_GetAttributeValue(s, found[o], t, (CK_ULONG)count), "0x%lx, 0x%lx, every size (sweep)",
                        (unsigned long)s, (unsigned long)found[o]);
        if (rv != CKR_OK && rv != CKR_ATTRIBUTE_SENSITIVE && rv != CKR_ATTRIBUTE_TYPE_INVALID)
            continue;
        for (int i = 0; i < count; i++)
            t[i].pValue = t[i].ulValueLen == CK_UNAVAILABLE_INFORMATION || t[i].ulValueLen > (1 << 20)
                              ? NULL
                              : scratch(t[i].ulValueLen ? t[i].ulValueLen : 1);
        for (int i = 0; i < count; i++)
            if (!t[i].pValue)
                t[i].ulValueLen = 0;
        CALL(C_GetAttributeValue(s, found[o], t, (CK_ULONG)count), "0x%lx, 0x%lx, every value (sweep)",
             (unsigned long)s, (unsigned long)found[o]);
        CK_OBJECT_CLASS cls = (CK_OBJECT_CLASS)-1;
        for (int i = 0; i < count; i++) {
            if (!t[i].pValue || t[i].ulValueLen == CK_UNAVAILABLE_INFORMATION)
                continue;
            if (t[i].type == CKA_CLASS && t[i].ulValueLen == sizeof cls)
                memcpy(&cls, t[i].pValue, sizeof cls);
            if (t[i].type == CKA_CHECK_VALUE)
                continue;
            char where[160];
            snprintf(where, sizeof where, "object 0x%lx read %s", (unsigned long)found[o], state);
            exfiltration_scan(t[i].pValue, t[i].ulValueLen, where, attribute_name(t[i].type));
        }
        if (collect_keys && (cls == CKO_SECRET_KEY || cls == CKO_PRIVATE_KEY) && keys_found_count < WRAP_TARGETS)
            keys_found[keys_found_count++] = found[o];
        scratch_release();
    }
}

/* Every key found, wrapped under every wrapping key of the oracles, by every wrapping
   mechanism: no blob holds a key in clear, no unextractable key wraps. */
static void wrap_everything(CK_SESSION_HANDLE s)
{
    oracle_session_changed();
    static const key_role wrappers[] = { K_AES16, K_AES32, K_RSA_PUB };
    static const CK_MECHANISM_TYPE aes[] = { CKM_AES_KEY_WRAP, CKM_AES_KEY_WRAP_PAD, CKM_AES_KEY_WRAP_KWP,
                                             CKM_AES_CBC_PAD, CKM_AES_ECB };
    static const CK_MECHANISM_TYPE rsa[] = { CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS, CKM_RSA_X_509 };
    CK_RSA_PKCS_OAEP_PARAMS oaep = { CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, NULL, 0 };
    uint8_t iv[16] = { 0 };
    for (size_t w = 0; w < sizeof wrappers / sizeof wrappers[0]; w++) {
        CK_OBJECT_HANDLE wrapping = oracle_key(wrappers[w]);
        if (!wrapping)
            continue;
        int is_rsa = wrappers[w] == K_RSA_PUB;
        size_t mechs = is_rsa ? sizeof rsa / sizeof rsa[0] : sizeof aes / sizeof aes[0];
        for (size_t k = 0; k < keys_found_count; k++) {
            for (size_t i = 0; i < mechs; i++) {
                CK_MECHANISM m = { is_rsa ? rsa[i] : aes[i], NULL, 0 };
                if (m.mechanism == CKM_RSA_PKCS_OAEP)
                    m.pParameter = &oaep, m.ulParameterLen = sizeof oaep;
                if (m.mechanism == CKM_AES_CBC_PAD)
                    m.pParameter = iv, m.ulParameterLen = sizeof iv;
                CK_ULONG n = OUT_BIG;
                CK_RV rv = CALL(C_WrapKey(s, &m, wrapping, keys_found[k], out_big(), &n),
                                "0x%lx, 0x%lx, under 0x%lx, key 0x%lx (sweep)", (unsigned long)s,
                                (unsigned long)m.mechanism, (unsigned long)wrapping, (unsigned long)keys_found[k]);
                if (rv != CKR_OK)
                    continue;
                /* A tracked handle may be stale: session objects' handles start again after a
                   C_Finalize, so the object must also read unextractable now to count. */
                CK_ULONG flag_len = 0;
                uint8_t *flag = read_attribute(s, keys_found[k], CKA_EXTRACTABLE, &flag_len);
                int reads_extractable = flag && flag_len == 1 && *flag;
                if (exfiltration_unextractable(keys_found[k]) && !reads_extractable)
                    oracle_failed("wrap-unextractable", "C_WrapKey(0x%lx) wrapped unextractable key 0x%lx",
                                  (unsigned long)m.mechanism, (unsigned long)keys_found[k]);
                char where[120];
                snprintf(where, sizeof where, "C_WrapKey(0x%lx) of object 0x%lx", (unsigned long)m.mechanism,
                         (unsigned long)keys_found[k]);
                exfiltration_scan(out_big(), n < OUT_BIG ? n : OUT_BIG, where, "the wrapped blob");
            }
        }
    }
}

static void scan_store_files(void)
{
    const char *dir = getenv("P11KEYCHAIN_DIR");
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > (1L << 30))
            continue;
        FILE *f = fopen(path, "rb");
        uint8_t *buf = f ? malloc((size_t)st.st_size) : NULL;
        size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
        if (f)
            fclose(f);
        exfiltration_scan(buf, n, path, "the raw store file");
        free(buf);
    }
    closedir(d);
}

static int login(CK_SESSION_HANDLE s, CK_USER_TYPE who, const char *pin)
{
    return CALL(C_Login(s, who, (CK_UTF8CHAR_PTR)pin, strlen(pin)), "0x%lx, %s (sweep)", (unsigned long)s,
                who == CKU_SO ? "SO" : "USER") == CKR_OK;
}

void exfiltration_sweep(const char *when)
{
    if (!tracked_count)
        return;
    if (!initialized)
        do_initialize(0);
    for (CK_SLOT_ID slot = 0; slot < 2; slot++) {
        CK_SESSION_HANDLE s = open_session(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION);
        if (!s)
            continue;
        char state[96];
        CALL(C_Logout(s), "0x%lx (sweep)", (unsigned long)s);
        snprintf(state, sizeof state, "logged out on slot %lu, %s", (unsigned long)slot, when);
        read_everything(s, state, 0);
        if (login(s, CKU_SO, so_pin)) {
            snprintf(state, sizeof state, "as the SO on slot %lu, %s", (unsigned long)slot, when);
            read_everything(s, state, 0);
            CALL(C_Logout(s), "0x%lx (sweep)", (unsigned long)s);
        }
        if (login(s, CKU_USER, user_pin)) {
            snprintf(state, sizeof state, "as the user on slot %lu, %s", (unsigned long)slot, when);
            keys_found_count = 0;
            read_everything(s, state, 1);
            if (slot == 0)
                wrap_everything(s);
        }
    }
    login_wanted = 0;
    oracle_session_changed();
    scan_store_files();
    printf("p11fuzz: exfiltration sweep %s (iteration %lu): %zu sensitive keys tracked%s, none seen\n", when,
           (unsigned long)iteration, tracked_count, untracked ? " (more made, not tracked)" : "");
    fflush(stdout);
}
