/*
 * p11bench: benchmark any PKCS#11 module as a certificate store.
 *
 * It grows a token to given sizes with generated X.509 certificates and, at
 * each size, measures the import rate, find-by-label latency (hit and miss),
 * and the cost of loading the module in a fresh process (time and peak RSS).
 *
 *   p11bench --module PATH [--pin PIN] [--slot-label LABEL]
 *            --sizes 1000,10000,100000 [--out results.json]
 *
 * Sizes are cumulative: the token goes from its current count to the first
 * size, then to the next. A token that already holds this tool's
 * certificates bench-cert-0 .. bench-cert-(k-1) is resumed from k, so a
 * script can run p11bench once per size and do other work in between.
 *
 * Load time and memory are measured in fresh processes: p11bench runs
 * itself with --load-only (an internal mode) for that.
 *
 * Build: gcc -O2 -Wall -Wextra -ITests/include -Ip11/include -o p11bench bench/p11bench.c -lcrypto -ldl -lm
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include "p11test.h"

#define LABEL_PREFIX "bench-cert-"
#define MAX_LEVELS 32

/* ------------------------------------------------------------------ */
/* Small utilities                                                     */
/* ------------------------------------------------------------------ */

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("p11bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* splitmix64: a seeded generator, so that runs pick the same labels. */
static uint64_t rng_state = 1;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of an already sorted array. */
static double percentile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return NAN;
    size_t rank = (size_t)ceil(p * (double)n);
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return percentile(v, n, 0.5);
}

/* Reads a "Key:   1234 kB" line of /proc/self/status; -1 if absent. */
static long proc_status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t klen = strlen(key);
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            kb = strtol(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* PKCS#11 strings are blank-padded, not NUL-terminated. */
static void p11_string(char *dst, size_t dstlen, const unsigned char *src, size_t srclen)
{
    size_t n = srclen;
    while (n > 0 && src[n - 1] == ' ')
        n--;
    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN: unmeasured values are written as null. */
static void json_number(FILE *f, double v)
{
    if (isnan(v))
        fputs("null", f);
    else
        fprintf(f, "%.3f", v);
}

/* ------------------------------------------------------------------ */
/* PKCS#11 error reporting                                             */
/* ------------------------------------------------------------------ */

/* Every PKCS#11 call goes through this: a failure ends the run. */
#define CK_CHECK(call, name)                                                     \
    do {                                                                         \
        CK_RV rv_ = (call);                                                      \
        if (rv_ != CKR_OK)                                                       \
            die("%s failed: CK_RV 0x%08lX (%s)", name, (unsigned long)rv_,       \
                ckr_name(rv_));                                                  \
    } while (0)

/* ------------------------------------------------------------------ */
/* Module loading                                                      */
/* ------------------------------------------------------------------ */

/* Step times of one module load in a fresh process, in seconds. total is
 * dlopen .. C_OpenSession plus C_CloseSession .. C_Finalize; first_find, the
 * one search done in between, is not part of it. */
struct load_steps {
    double total, dlopen, get_function_list, initialize, get_slot_list, open_session,
        close_finalize, first_find;
};

struct module {
    void *dl;
    CK_FUNCTION_LIST_PTR f;
};

static struct module module_load(const char *path, struct load_steps *steps)
{
    struct module m;
    CK_C_GetFunctionList get_list;
    CK_C_INITIALIZE_ARGS args;
    double t = now_sec(), t2;

    m.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m.dl)
        die("dlopen %s: %s", path, dlerror());
    t2 = now_sec();
    if (steps)
        steps->dlopen = t2 - t;
    t = t2;

    get_list = (CK_C_GetFunctionList)dlsym(m.dl, "C_GetFunctionList");
    if (!get_list)
        die("%s exports no C_GetFunctionList", path);
    CK_CHECK(get_list(&m.f), "C_GetFunctionList");
    t2 = now_sec();
    if (steps)
        steps->get_function_list = t2 - t;
    t = t2;

    /* No mutex callbacks: the module may use the OS's own locking. */
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    CK_CHECK(m.f->C_Initialize(&args), "C_Initialize");
    if (steps)
        steps->initialize = now_sec() - t;
    return m;
}

/* Slots that have a token, as the module lists them. */
static CK_SLOT_ID *token_slots(CK_FUNCTION_LIST_PTR f, CK_ULONG *count)
{
    CK_SLOT_ID *slots;
    CK_CHECK(f->C_GetSlotList(CK_TRUE, NULL, count), "C_GetSlotList");
    slots = xmalloc(*count * sizeof *slots);
    CK_CHECK(f->C_GetSlotList(CK_TRUE, slots, count), "C_GetSlotList");
    return slots;
}

/* The first slot with a token, or the one whose token has the given label. */
static CK_SLOT_ID find_slot(CK_FUNCTION_LIST_PTR f, const char *want_label,
                            CK_TOKEN_INFO *info_out)
{
    CK_ULONG n, i;
    CK_SLOT_ID *slots = token_slots(f, &n), found = 0;
    int ok = 0;
    char label[33];

    for (i = 0; i < n && !ok; i++) {
        CK_CHECK(f->C_GetTokenInfo(slots[i], info_out), "C_GetTokenInfo");
        p11_string(label, sizeof label, info_out->label, sizeof info_out->label);
        if (!want_label || strcmp(label, want_label) == 0) {
            found = slots[i];
            ok = 1;
        }
    }
    free(slots);
    if (!ok) {
        if (want_label)
            die("no token labelled \"%s\"", want_label);
        die("the module lists no slot with a token");
    }
    return found;
}

/* ------------------------------------------------------------------ */
/* Certificate generation                                              */
/* ------------------------------------------------------------------ */

/*
 * One certificate and the DER pieces a caller passes to C_CreateObject.
 * The issuer is the same for all, so it is kept once in the batch.
 */
struct cert {
    unsigned char *der, *subject, *serial;
    int der_len, subject_len, serial_len;
};

struct cert_batch {
    size_t first, count; /* certificates first .. first+count-1 */
    struct cert *certs;
    unsigned char *issuer;
    int issuer_len;
};

struct cert_factory {
    EVP_PKEY *key;        /* one P-256 key signs and is certified by all */
    X509_PUBKEY *spki;    /* its SubjectPublicKeyInfo, encoded once */
    const unsigned char *point;  /* the EC point inside spki */
    int point_len;
    X509_NAME *issuer;
    ASN1_TIME *not_before, *not_after;
};

static void factory_init(struct cert_factory *cf)
{
    cf->key = EVP_EC_gen("P-256");
    if (!cf->key)
        die("cannot generate an EC P-256 key");
    /* X509_set_pubkey() looks up an encoder in OpenSSL 3 on every call
     * (~200 us, 5x the signature); encode the key once instead. */
    cf->spki = NULL;
    if (!X509_PUBKEY_set(&cf->spki, cf->key) ||
        !X509_PUBKEY_get0_param(NULL, &cf->point, &cf->point_len, NULL, cf->spki))
        die("cannot encode the public key");
    cf->issuer = X509_NAME_new();
    if (!cf->issuer ||
        !X509_NAME_add_entry_by_txt(cf->issuer, "CN", MBSTRING_ASC,
                                    (const unsigned char *)"p11bench CA", -1, -1, 0))
        die("cannot build the issuer name");
    /* Same validity for every certificate: computed once. */
    cf->not_before = X509_gmtime_adj(NULL, 0);
    cf->not_after = X509_gmtime_adj(NULL, 365L * 24 * 3600);
    if (!cf->not_before || !cf->not_after)
        die("cannot build validity times");
}

static void factory_free(struct cert_factory *cf)
{
    EVP_PKEY_free(cf->key);
    X509_PUBKEY_free(cf->spki);
    X509_NAME_free(cf->issuer);
    ASN1_TIME_free(cf->not_before);
    ASN1_TIME_free(cf->not_after);
}

static void label_of(char *buf, size_t len, size_t i)
{
    snprintf(buf, len, LABEL_PREFIX "%zu", i);
}

/* Puts the factory's key into x without a per-certificate encoder lookup. */
static int set_public_key(const struct cert_factory *cf, X509 *x)
{
    unsigned char *point = OPENSSL_memdup(cf->point, (size_t)cf->point_len);
    if (!point)
        return 0;
    /* set0: the certificate takes ownership of point. */
    return X509_PUBKEY_set0_param(X509_get_X509_PUBKEY(x),
                                  OBJ_nid2obj(NID_X9_62_id_ecPublicKey), V_ASN1_OBJECT,
                                  OBJ_nid2obj(NID_X9_62_prime256v1), point, cf->point_len);
}

/* Certificate i: serial i+1 (unique per issuer), CN "bench-cert-<i>". */
static void make_cert(const struct cert_factory *cf, size_t i, struct cert *out)
{
    X509 *x = X509_new();
    X509_NAME *subject = X509_NAME_new();
    char cn[64];

    label_of(cn, sizeof cn, i);
    if (!x || !subject ||
        !X509_set_version(x, X509_VERSION_3) ||
        !ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), (uint64_t)i + 1) ||
        !X509_set_issuer_name(x, cf->issuer) ||
        !X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                                    (const unsigned char *)cn, -1, -1, 0) ||
        !X509_set_subject_name(x, subject) ||
        !X509_set1_notBefore(x, cf->not_before) ||
        !X509_set1_notAfter(x, cf->not_after) ||
        !set_public_key(cf, x) ||
        !X509_sign(x, cf->key, EVP_sha256()))
        die("cannot build certificate %zu", i);

    out->der = NULL;
    out->subject = NULL;
    out->serial = NULL;
    out->der_len = i2d_X509(x, &out->der);
    out->subject_len = i2d_X509_NAME(subject, &out->subject);
    out->serial_len = i2d_ASN1_INTEGER(X509_get_serialNumber(x), &out->serial);
    if (out->der_len <= 0 || out->subject_len <= 0 || out->serial_len <= 0)
        die("cannot encode certificate %zu", i);

    X509_NAME_free(subject);
    X509_free(x);
}

static struct cert_batch make_batch(const struct cert_factory *cf, size_t first, size_t count)
{
    struct cert_batch b;
    size_t i;

    b.first = first;
    b.count = count;
    b.certs = xmalloc(count * sizeof *b.certs);
    b.issuer = NULL;
    b.issuer_len = i2d_X509_NAME(cf->issuer, &b.issuer);
    if (b.issuer_len <= 0)
        die("cannot encode the issuer name");
    for (i = 0; i < count; i++)
        make_cert(cf, first + i, &b.certs[i]);
    return b;
}

static void free_batch(struct cert_batch *b)
{
    size_t i;
    for (i = 0; i < b->count; i++) {
        OPENSSL_free(b->certs[i].der);
        OPENSSL_free(b->certs[i].subject);
        OPENSSL_free(b->certs[i].serial);
    }
    free(b->certs);
    OPENSSL_free(b->issuer);
}

/* ------------------------------------------------------------------ */
/* Import                                                              */
/* ------------------------------------------------------------------ */

struct import_result {
    size_t count;
    double seconds;           /* sum of C_CreateObject times only */
    double p50_us, p90_us, max_us;
};

static void import_one(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                       const struct cert_batch *b, size_t k)
{
    const struct cert *c = &b->certs[k];
    size_t i = b->first + k;
    CK_OBJECT_CLASS cls = CKO_CERTIFICATE;
    CK_CERTIFICATE_TYPE type = CKC_X_509;
    CK_BBOOL yes = CK_TRUE;
    char label[64];
    /* CKA_ID: the index as 4 big-endian bytes, distinct per certificate. */
    unsigned char id[4] = { (unsigned char)(i >> 24), (unsigned char)(i >> 16),
                            (unsigned char)(i >> 8), (unsigned char)i };
    CK_OBJECT_HANDLE h;

    label_of(label, sizeof label, i);
    /* Subject, issuer and serial are derivable from the DER, but some
     * modules (SoftHSM2) require the caller to pass them. */
    CK_ATTRIBUTE t[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_CERTIFICATE_TYPE, &type, sizeof type },
        { CKA_TOKEN, &yes, sizeof yes },
        { CKA_LABEL, label, strlen(label) },
        { CKA_ID, id, sizeof id },
        { CKA_SUBJECT, c->subject, (CK_ULONG)c->subject_len },
        { CKA_ISSUER, b->issuer, (CK_ULONG)b->issuer_len },
        { CKA_SERIAL_NUMBER, c->serial, (CK_ULONG)c->serial_len },
        { CKA_VALUE, c->der, (CK_ULONG)c->der_len },
    };
    CK_CHECK(f->C_CreateObject(s, t, sizeof t / sizeof t[0], &h), "C_CreateObject");
}

static struct import_result import_batch(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                                         const struct cert_batch *b)
{
    struct import_result r;
    double *lat = xmalloc(b->count * sizeof *lat);
    size_t k;

    memset(&r, 0, sizeof r);
    for (k = 0; k < b->count; k++) {
        double t0 = now_sec();
        import_one(f, s, b, k);
        lat[k] = now_sec() - t0;
        r.seconds += lat[k];
    }
    r.count = b->count;
    qsort(lat, b->count, sizeof *lat, cmp_double);
    r.p50_us = percentile(lat, b->count, 0.50) * 1e6;
    r.p90_us = percentile(lat, b->count, 0.90) * 1e6;
    r.max_us = b->count ? lat[b->count - 1] * 1e6 : NAN;
    free(lat);
    return r;
}

/* ------------------------------------------------------------------ */
/* Find                                                                */
/* ------------------------------------------------------------------ */

/* A complete search as a client does it: Init, Find until empty, Final.
 * A NULL label searches all certificates. Returns the number found. */
static CK_ULONG find_certs(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, const char *label)
{
    CK_OBJECT_CLASS cls = CKO_CERTIFICATE;
    CK_ATTRIBUTE t[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_LABEL, (void *)label, label ? strlen(label) : 0 },
    };
    CK_OBJECT_HANDLE found[64];
    CK_ULONG got, total = 0;

    CK_CHECK(f->C_FindObjectsInit(s, t, label ? 2 : 1), "C_FindObjectsInit");
    do {
        CK_CHECK(f->C_FindObjects(s, found, sizeof found / sizeof found[0], &got),
                 "C_FindObjects");
        total += got;
    } while (got > 0);
    CK_CHECK(f->C_FindObjectsFinal(s), "C_FindObjectsFinal");
    return total;
}

struct find_result {
    size_t samples;
    double p50_us, p90_us, mean_us, max_us;
};

/*
 * Times up to `lookups` searches for random existing labels (hit) or for
 * labels that are not on the token (miss). Stops early after cap_s seconds
 * so that a module with slow finds still finishes; the sample count says how
 * many were taken. One untimed search first, so that the first sample is not
 * a cold-cache outlier (the cold case is measured by --load-only).
 */
static struct find_result measure_find(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                                       size_t objects, int hit, size_t lookups, double cap_s)
{
    struct find_result r;
    double *lat = xmalloc(lookups * sizeof *lat), start, total = 0;
    char label[64];
    size_t n = 0;

    memset(&r, 0, sizeof r);
    for (int warm = 1; n < lookups; warm = 0) {
        size_t i = (size_t)(rng_next() % objects);
        CK_ULONG want = hit ? 1 : 0, got;
        if (hit)
            label_of(label, sizeof label, i);
        else
            snprintf(label, sizeof label, "no-such-cert-%zu", i);

        start = now_sec();
        got = find_certs(f, s, label);
        double dt = now_sec() - start;
        if (got != want)
            die("find \"%s\" returned %lu objects, expected %lu", label,
                (unsigned long)got, (unsigned long)want);
        if (warm)
            continue;
        lat[n++] = dt;
        total += dt;
        if (total > cap_s)
            break;
    }
    r.samples = n;
    r.mean_us = total / (double)n * 1e6;
    qsort(lat, n, sizeof *lat, cmp_double);
    r.p50_us = percentile(lat, n, 0.50) * 1e6;
    r.p90_us = percentile(lat, n, 0.90) * 1e6;
    r.max_us = lat[n - 1] * 1e6;
    free(lat);
    return r;
}

/* ------------------------------------------------------------------ */
/* Load-only mode (runs in a fresh child process)                      */
/* ------------------------------------------------------------------ */

/*
 * Times dlopen .. C_OpenSession and C_CloseSession .. C_Finalize, with one
 * find for an existing label in between (timed apart: it is the first,
 * cold, find of a process). Then reports the process's peak RSS, which so
 * covers a client that loaded the module with the full token and searched.
 * Prints the step times and memory on one line for the parent.
 */
static int load_only(const char *path, CK_SLOT_ID slot, const char *label)
{
    struct load_steps st;
    long base_kb = proc_status_kb("VmRSS");
    double t0 = now_sec(), t_open, t_find, t_end, t;
    struct module m = module_load(path, &st);
    CK_SESSION_HANDLE s;
    CK_ULONG n, i, got;
    CK_SLOT_ID *slots;

    t = now_sec();
    slots = token_slots(m.f, &n);
    st.get_slot_list = now_sec() - t;
    for (i = 0; i < n && slots[i] != slot; i++)
        ;
    if (i == n)
        die("slot %lu is not in the slot list", (unsigned long)slot);
    free(slots);

    t = now_sec();
    CK_CHECK(m.f->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, &s), "C_OpenSession");
    t_open = now_sec();
    st.open_session = t_open - t;

    got = find_certs(m.f, s, label);
    t_find = now_sec();
    if (got != 1)
        die("find \"%s\" returned %lu objects, expected 1", label, (unsigned long)got);

    CK_CHECK(m.f->C_CloseSession(s), "C_CloseSession");
    CK_CHECK(m.f->C_Finalize(NULL), "C_Finalize");
    t_end = now_sec();
    st.close_finalize = t_end - t_find;
    st.first_find = t_find - t_open;
    st.total = (t_open - t0) + st.close_finalize;

    printf("%.9f %.9f %.9f %.9f %.9f %.9f %.9f %.9f %ld %ld\n", st.total, st.dlopen,
           st.get_function_list, st.initialize, st.get_slot_list, st.open_session,
           st.close_finalize, st.first_find, base_kb, proc_status_kb("VmHWM"));
    return 0;
}

/* Runs this program again with --load-only and parses its one line. */
static void spawn_load_only(const char *module, CK_SLOT_ID slot, const char *label,
                            struct load_steps *st, long *base_kb, long *peak_kb)
{
    char slotbuf[32], line[512];
    int fds[2], status;
    pid_t pid;
    FILE *in;

    snprintf(slotbuf, sizeof slotbuf, "%lu", (unsigned long)slot);
    if (pipe(fds) != 0)
        die("pipe: %s", strerror(errno));
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        char *argv[] = { "p11bench", "--load-only", "--module", (char *)module,
                         "--slot-id", slotbuf, "--find-label", (char *)label, NULL };
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "p11bench: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    in = fdopen(fds[0], "r");
    if (!in || !fgets(line, sizeof line, in))
        line[0] = '\0';
    if (in)
        fclose(in);
    if (waitpid(pid, &status, 0) < 0)
        die("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("the --load-only child failed (status 0x%x)", status);
    if (sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf %ld %ld", &st->total, &st->dlopen,
               &st->get_function_list, &st->initialize, &st->get_slot_list,
               &st->open_session, &st->close_finalize, &st->first_find,
               base_kb, peak_kb) != 10)
        die("cannot parse the --load-only child's output: \"%s\"", line);
}

struct load_result {
    int runs;
    struct load_steps median_s;   /* each step's median over the runs */
    long base_rss_kb, peak_rss_kb; /* maximum over the runs */
};

/* The median of one field (at byte offset off) of n load_steps. */
static double median_step(const struct load_steps *v, int n, size_t off)
{
    double *x = xmalloc((size_t)n * sizeof *x), m;
    for (int k = 0; k < n; k++)
        x[k] = *(const double *)((const char *)&v[k] + off);
    m = median_of(x, (size_t)n);
    free(x);
    return m;
}

static struct load_result measure_load(const char *module, CK_SLOT_ID slot,
                                       size_t objects, int runs)
{
    struct load_result r;
    struct load_steps *v = xmalloc((size_t)runs * sizeof *v);
    char label[64];

    memset(&r, 0, sizeof r);
    r.runs = runs;
    for (int k = 0; k < runs; k++) {
        long base_kb, peak_kb;
        /* A different existing certificate each run: no help from caches. */
        label_of(label, sizeof label, (size_t)(rng_next() % objects));
        spawn_load_only(module, slot, label, &v[k], &base_kb, &peak_kb);
        if (base_kb > r.base_rss_kb)
            r.base_rss_kb = base_kb;
        if (peak_kb > r.peak_rss_kb)
            r.peak_rss_kb = peak_kb;
    }
#define MEDIAN(field) r.median_s.field = median_step(v, runs, offsetof(struct load_steps, field))
    MEDIAN(total);
    MEDIAN(dlopen);
    MEDIAN(get_function_list);
    MEDIAN(initialize);
    MEDIAN(get_slot_list);
    MEDIAN(open_session);
    MEDIAN(close_finalize);
    MEDIAN(first_find);
#undef MEDIAN
    free(v);
    return r;
}

/* ------------------------------------------------------------------ */
/* Options, the benchmark loop, output                                 */
/* ------------------------------------------------------------------ */

struct options {
    const char *module, *pin, *slot_label, *out, *find_label;
    size_t sizes[MAX_LEVELS];
    int nsizes, load_only, load_runs;
    long slot_id;
    size_t lookups;
    double cap_s;
};

struct level {
    size_t objects;
    int imported;                 /* 0: the token already had these */
    double gen_seconds;
    struct import_result imp;
    struct find_result hit, miss;
    struct load_result load;
};

static void usage(void)
{
    fputs("usage: p11bench --module PATH [--pin PIN] [--slot-label LABEL]\n"
          "                --sizes N[,N...] [--out FILE.json] [--lookups 200]\n"
          "                [--cap-seconds 20] [--load-runs 5] [--seed 1]\n"
          "Grows the token to each size with generated certificates (labels\n"
          LABEL_PREFIX "<i>) and measures import, find by label and module load.\n",
          stderr);
    exit(2);
}

static int parse_sizes(const char *arg, size_t *sizes)
{
    int n = 0;
    const char *p = arg;
    while (*p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || v == 0 || n == MAX_LEVELS || (*end && *end != ','))
            die("bad --sizes \"%s\": want increasing positive numbers, comma-separated", arg);
        if (n > 0 && v <= sizes[n - 1])
            die("bad --sizes \"%s\": sizes must increase", arg);
        sizes[n++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

static struct options parse_options(int argc, char **argv)
{
    enum { O_LOAD_ONLY = 1000, O_SLOT_ID, O_FIND_LABEL, O_CAP, O_LOAD_RUNS, O_SEED };
    static const struct option longopts[] = {
        { "module", required_argument, NULL, 'm' },
        { "pin", required_argument, NULL, 'p' },
        { "slot-label", required_argument, NULL, 'l' },
        { "sizes", required_argument, NULL, 's' },
        { "out", required_argument, NULL, 'o' },
        { "lookups", required_argument, NULL, 'n' },
        { "cap-seconds", required_argument, NULL, O_CAP },
        { "load-runs", required_argument, NULL, O_LOAD_RUNS },
        { "seed", required_argument, NULL, O_SEED },
        { "load-only", no_argument, NULL, O_LOAD_ONLY },
        { "slot-id", required_argument, NULL, O_SLOT_ID },
        { "find-label", required_argument, NULL, O_FIND_LABEL },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct options o;
    int c;

    memset(&o, 0, sizeof o);
    o.lookups = 200;
    o.cap_s = 20;
    o.load_runs = 5;
    o.slot_id = -1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o.module = optarg; break;
        case 'p': o.pin = optarg; break;
        case 'l': o.slot_label = optarg; break;
        case 's': o.nsizes = parse_sizes(optarg, o.sizes); break;
        case 'o': o.out = optarg; break;
        case 'n': o.lookups = strtoul(optarg, NULL, 10); break;
        case O_CAP: o.cap_s = strtod(optarg, NULL); break;
        case O_LOAD_RUNS: o.load_runs = atoi(optarg); break;
        case O_SEED: rng_state = strtoull(optarg, NULL, 10); break;
        case O_LOAD_ONLY: o.load_only = 1; break;
        case O_SLOT_ID: o.slot_id = strtol(optarg, NULL, 10); break;
        case O_FIND_LABEL: o.find_label = optarg; break;
        default: usage();
        }
    }
    if (optind != argc || !o.module)
        usage();
    if (o.load_only) {
        if (o.slot_id < 0 || !o.find_label)
            die("--load-only needs --slot-id and --find-label");
    } else if (o.nsizes == 0 || o.lookups == 0 || o.load_runs < 1 || o.cap_s <= 0) {
        usage();
    }
    return o;
}

/*
 * How many of this tool's certificates the token holds. Only a token with
 * bench-cert-0 .. bench-cert-(k-1) and no other certificate can be resumed;
 * anything else would make the sizes meaningless.
 */
static size_t existing_bench_certs(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s)
{
    size_t k = find_certs(f, s, NULL);
    char label[64];

    if (k == 0)
        return 0;
    label_of(label, sizeof label, k - 1);
    if (find_certs(f, s, label) != 1)
        die("the token holds %zu certificates that are not this benchmark's "
            "(no \"%s\"); use an empty token", k, label);
    label_of(label, sizeof label, k);
    if (find_certs(f, s, label) != 0)
        die("the token's certificates are not this benchmark's; use an empty token");
    return k;
}

static void print_level(const struct level *lv)
{
    printf("%10zu  %9s  %11.1f %11.1f  %11.1f %11.1f  %5zu/%-5zu  %9.2f %9.2f  %9.1f\n",
           lv->objects,
           lv->imported ? "" : "resumed",
           lv->hit.p50_us, lv->hit.p90_us, lv->miss.p50_us, lv->miss.p90_us,
           lv->hit.samples, lv->miss.samples,
           lv->load.median_s.total * 1e3, lv->load.median_s.first_find * 1e3,
           lv->load.peak_rss_kb / 1024.0);
    if (lv->imported)
        printf("%10s  %9.0f certs/s import (%zu certs in %.2f s; p50 %.0f us, p90 %.0f us)\n",
               "", lv->imp.seconds > 0 ? (double)lv->imp.count / lv->imp.seconds : NAN,
               lv->imp.count, lv->imp.seconds, lv->imp.p50_us, lv->imp.p90_us);
}

static void write_find_json(FILE *f, const char *name, const struct find_result *r)
{
    fprintf(f, "      \"%s\": {\"samples\": %zu, \"p50_us\": ", name, r->samples);
    json_number(f, r->p50_us);
    fputs(", \"p90_us\": ", f);
    json_number(f, r->p90_us);
    fputs(", \"mean_us\": ", f);
    json_number(f, r->mean_us);
    fputs(", \"max_us\": ", f);
    json_number(f, r->max_us);
    fputs("},\n", f);
}

static void write_load_json(FILE *f, const struct load_result *r)
{
    const struct load_steps *m = &r->median_s;
    fprintf(f, "      \"load\": {\"runs\": %d, \"median_ms\": %.3f, \"first_find_ms\": %.3f,\n"
               "        \"steps_median_ms\": {\"dlopen\": %.3f, \"get_function_list\": %.3f, "
               "\"initialize\": %.3f, \"get_slot_list\": %.3f, \"open_session\": %.3f, "
               "\"close_session_finalize\": %.3f},\n"
               "        \"base_rss_kb\": %ld, \"peak_rss_kb\": %ld}\n",
            r->runs, m->total * 1e3, m->first_find * 1e3, m->dlopen * 1e3,
            m->get_function_list * 1e3, m->initialize * 1e3, m->get_slot_list * 1e3,
            m->open_session * 1e3, m->close_finalize * 1e3, r->base_rss_kb, r->peak_rss_kb);
}

static void write_json(const char *path, const struct options *o, const CK_INFO *info,
                       const CK_TOKEN_INFO *tinfo, const struct level *lv, int nlv)
{
    FILE *f = fopen(path, "w");
    char buf[80];

    if (!f)
        die("cannot write %s: %s", path, strerror(errno));
    fputs("{\n  \"module\": ", f);
    json_string(f, o->module);
    p11_string(buf, sizeof buf, info->libraryDescription, sizeof info->libraryDescription);
    fputs(",\n  \"library_description\": ", f);
    json_string(f, buf);
    p11_string(buf, sizeof buf, info->manufacturerID, sizeof info->manufacturerID);
    fputs(",\n  \"manufacturer\": ", f);
    json_string(f, buf);
    fprintf(f, ",\n  \"library_version\": \"%u.%u\"", info->libraryVersion.major,
            info->libraryVersion.minor);
    p11_string(buf, sizeof buf, tinfo->label, sizeof tinfo->label);
    fputs(",\n  \"token_label\": ", f);
    json_string(f, buf);
    fprintf(f, ",\n  \"lookups\": %zu,\n  \"cap_seconds\": %.1f,\n  \"load_runs\": %d,\n"
               "  \"levels\": [\n", o->lookups, o->cap_s, o->load_runs);
    for (int k = 0; k < nlv; k++) {
        const struct level *l = &lv[k];
        fprintf(f, "    {\n      \"objects\": %zu,\n", l->objects);
        if (l->imported) {
            fprintf(f, "      \"import\": {\"count\": %zu, \"seconds\": %.3f, \"certs_per_s\": ",
                    l->imp.count, l->imp.seconds);
            json_number(f, l->imp.seconds > 0 ? (double)l->imp.count / l->imp.seconds : NAN);
            fputs(", \"p50_us\": ", f);
            json_number(f, l->imp.p50_us);
            fputs(", \"p90_us\": ", f);
            json_number(f, l->imp.p90_us);
            fputs(", \"max_us\": ", f);
            json_number(f, l->imp.max_us);
            fprintf(f, ", \"generation_seconds\": %.3f},\n", l->gen_seconds);
        } else {
            fputs("      \"import\": null,\n", f);
        }
        write_find_json(f, "find_hit", &l->hit);
        write_find_json(f, "find_miss", &l->miss);
        write_load_json(f, &l->load);
        fprintf(f, "    }%s\n", k + 1 < nlv ? "," : "");
    }
    fputs("  ]\n}\n", f);
    if (fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

/* Grows the token to lv->objects (if needed) and measures that level. */
static void run_level(const struct options *o, CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s,
                      CK_SLOT_ID slot, struct cert_factory *cf, size_t *have,
                      struct level *lv)
{
    if (lv->objects > *have) {
        double t0 = now_sec();
        struct cert_batch b = make_batch(cf, *have, lv->objects - *have);
        lv->gen_seconds = now_sec() - t0;
        fprintf(stderr, "p11bench: importing %zu certificates (%zu -> %zu; generated in %.2f s)\n",
                b.count, *have, lv->objects, lv->gen_seconds);
        lv->imp = import_batch(f, s, &b);
        lv->imported = 1;
        free_batch(&b);
        *have = lv->objects;
    }
    fprintf(stderr, "p11bench: measuring finds and load at %zu objects\n", lv->objects);
    lv->hit = measure_find(f, s, lv->objects, 1, o->lookups, o->cap_s);
    lv->miss = measure_find(f, s, lv->objects, 0, o->lookups, o->cap_s);
    lv->load = measure_load(o->module, slot, lv->objects, o->load_runs);
}

int main(int argc, char **argv)
{
    struct options o = parse_options(argc, argv);
    struct level levels[MAX_LEVELS];
    struct cert_factory cf;
    CK_TOKEN_INFO tinfo;
    CK_INFO info;
    CK_SESSION_HANDLE s;
    CK_SLOT_ID slot;
    struct module m;
    size_t have;
    int nlv = 0;

    if (o.load_only)
        return load_only(o.module, (CK_SLOT_ID)o.slot_id, o.find_label);

    m = module_load(o.module, NULL);
    CK_CHECK(m.f->C_GetInfo(&info), "C_GetInfo");
    slot = find_slot(m.f, o.slot_label, &tinfo);
    CK_CHECK(m.f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s),
             "C_OpenSession");
    if (o.pin)
        CK_CHECK(m.f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)o.pin, strlen(o.pin)), "C_Login");

    have = existing_bench_certs(m.f, s);
    if (have > 0)
        fprintf(stderr, "p11bench: the token already holds %zu benchmark certificates\n", have);
    factory_init(&cf);

    printf("%10s  %9s  %11s %11s  %11s %11s  %11s  %9s %9s  %9s\n", "objects", "",
           "hit p50 us", "hit p90 us", "miss p50 us", "miss p90 us", "samples",
           "load ms", "1st find", "peak MB");
    for (int k = 0; k < o.nsizes; k++) {
        if (o.sizes[k] < have) {
            fprintf(stderr, "p11bench: skipping size %zu: the token already holds %zu\n",
                    o.sizes[k], have);
            continue;
        }
        memset(&levels[nlv], 0, sizeof levels[nlv]);
        levels[nlv].objects = o.sizes[k];
        run_level(&o, m.f, s, slot, &cf, &have, &levels[nlv]);
        print_level(&levels[nlv]);
        fflush(stdout);
        nlv++;
        /* Written after every level, so a long run that is stopped keeps what it measured. */
        if (o.out)
            write_json(o.out, &o, &info, &tinfo, levels, nlv);
    }
    if (o.out && nlv == 0)
        write_json(o.out, &o, &info, &tinfo, levels, 0);

    factory_free(&cf);
    if (o.pin)
        CK_CHECK(m.f->C_Logout(s), "C_Logout");
    CK_CHECK(m.f->C_CloseSession(s), "C_CloseSession");
    CK_CHECK(m.f->C_Finalize(NULL), "C_Finalize");
    return 0;
}
