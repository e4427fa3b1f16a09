/*
 * p11drive: a small PKCS#11 client used by the integration tests.
 *
 * The shell tests need a few things no stock tool does: a process that
 * stays initialized while others write (watch), thousands of inserts in one
 * process that can be killed at any moment while recording what the module
 * acknowledged (import --log), and bulk look-ups by label (check-labels).
 *
 *   p11drive import --count N --prefix P [--log FILE] [--stepped]
 *                  [--through-failures]
 *                                      with --through-failures a failed
 *                                      C_CreateObject prints "failed LABEL
 *                                      CKR_... in MS ms" and the next label
 *                                      is tried 100 ms later (an outage)
 *   p11drive watch --expect N --timeout SECONDS
 *   p11drive count
 *   p11drive has-label LABEL
 *   p11drive check-labels FILE
 *
 * PINs and keys (the PIN tests pass test PINs as arguments):
 *
 *   p11drive login user|so PIN         C_Login; exit 0 only on CKR_OK
 *   p11drive set-pin OLD NEW           C_SetPIN in a R/W public session
 *   p11drive init-token SO_PIN LABEL   C_InitToken with no session open
 *   p11drive genkey TYPE LABEL         C_GenerateKeyPair of an extractable,
 *                                      non-sensitive key (TYPE rsa:BITS,
 *                                      ec:prime256v1|secp384r1|secp521r1,
 *                                      ed25519); prints its secret and
 *                                      public values in hex, checked
 *                                      against each other with OpenSSL
 *   p11drive read-secret LABEL         reads the secret value of the
 *                                      private key LABEL (hex), or names
 *                                      the CK_RV that refused it
 *   p11drive sign-until-refused LABEL SECONDS [step]
 *                                      signs with the private key LABEL
 *                                      (RSA or EC) in one session, again and
 *                                      again, until C_SignInit refuses it;
 *                                      prints "signing" after the first
 *                                      signature and "refused CKR_..." at
 *                                      the end, with the refusal's time
 *                                      (CLOCK_REALTIME, ms) and the rate;
 *                                      with "step", reads a line on stdin
 *                                      before each signature after the
 *                                      first; exit 0 when the refusal is
 *                                      CKR_KEY_HANDLE_INVALID, 1 when it is
 *                                      another or never came in SECONDS
 *
 * The core rules (test_core_rules.sh):
 *
 *   p11drive genkey-public TYPE LABEL  genkey with CKA_PRIVATE=FALSE; logs
 *                                      in only when $P11DRIVE_PIN is set
 *   p11drive copy LABEL NEWLABEL [token|private|sensitive|extractable=0|1]...
 *                                      C_CopyObject of the private key
 *                                      LABEL; prints the CK_RV and what
 *                                      reading the copy's secret returns
 *   p11drive sign-copy LABEL session|token|token-then-destroy INPUT OUTPUT
 *                                      copies the private key LABEL (as
 *                                      pkcs11-provider does) and signs INPUT
 *                                      with the copy into OUTPUT (RSA
 *                                      PKCS#1 SHA-256, ECDSA SHA-256 in DER,
 *                                      or EdDSA)
 *   p11drive hold-login NEW_PIN        logs in, stores a private data
 *                                      object, prints "logged in", waits for
 *                                      a line on stdin, then creates another
 *                                      and logs in again with NEW_PIN,
 *                                      printing each CK_RV
 *
 * set-pin and init-token print "calling C_SetPIN" / "calling C_InitToken"
 * (flushed) just before the call, so that a test can kill them in it.
 * genkey, read-secret, sign-until-refused, copy, sign-copy and hold-login
 * log in with $P11DRIVE_PIN.
 *
 * Environment: P11KEYCHAIN_MODULE (required) is the module to load;
 * P11DRIVE_TOKEN (default "login") is the label of the token to use;
 * P11DRIVE_WITH_SUBJECT=1 adds CKA_SUBJECT to each import, for modules that
 * derive nothing from the DER (SoftHSM2, used to check the tests themselves).
 *
 * Exit status: 0 success, 1 a PKCS#11 call failed or a check did not hold
 * (the message names the CK_RV), 2 usage or setup error.
 *
 * Build: gcc -O2 -Wall -Wextra -ITests/include -Ip11/include -o p11drive p11drive.c -ldl -lcrypto
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include "p11test.h"

enum { EXIT_CHECK = 1, EXIT_USAGE = 2 };

static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE session;

/* ---------------------------------------------------------------- errors */

/* Reports a failed call in one line that names the CK_RV, then exits. */
static void die_rv(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11drive: %s returned %s (0x%lx)\n", what, ckr_name(rv),
            (unsigned long)rv);
    exit(EXIT_CHECK);
}

static void die_usage(const char *msg)
{
    fprintf(stderr, "p11drive: %s\n", msg);
    exit(EXIT_USAGE);
}

/* ---------------------------------------------------------------- module */

static CK_SLOT_ID find_token_slot(const char *want)
{
    CK_SLOT_ID slot;
    CK_ULONG n = 0;
    CK_RV rv = p11test_find_token(p11, want, &slot, &n);
    if (rv == CKR_OK)
        return slot;
    if (rv != CKR_TOKEN_NOT_PRESENT)
        die_rv("C_GetSlotList", rv);
    fprintf(stderr, "p11drive: no token labelled '%s' among %lu slot(s)\n", want,
            (unsigned long)n);
    exit(EXIT_CHECK);
}

/* Loads the module and initializes it once. */
static void load_module(void)
{
    const char *path = getenv("P11KEYCHAIN_MODULE");
    if (!path || !*path)
        die_usage("P11KEYCHAIN_MODULE is not set");
    struct p11test_module m;
    char why[512];
    if (p11test_load(path, &m, why, sizeof why) != 0) {
        fprintf(stderr, "p11drive: %s\n", why);
        exit(EXIT_USAGE);
    }
    p11 = m.list;
    CK_RV rv = p11test_initialize(p11);
    if (rv != CKR_OK)
        die_rv("C_Initialize", rv);
}

/* The slot of the token labelled $P11DRIVE_TOKEN (default "login"). */
static CK_SLOT_ID token_slot(void)
{
    const char *token = getenv("P11DRIVE_TOKEN");
    return find_token_slot(token && *token ? token : "login");
}

/* Loads the module, initializes it once and opens one session on the token. */
static void open_module(int read_write)
{
    load_module();
    CK_SLOT_ID slot = token_slot();
    CK_FLAGS flags = CKF_SERIAL_SESSION | (read_write ? CKF_RW_SESSION : 0);
    CK_RV rv = p11->C_OpenSession(slot, flags, NULL, NULL, &session);
    if (rv != CKR_OK)
        die_rv("C_OpenSession", rv);
}

static void close_module(void)
{
    CK_RV rv = p11->C_CloseSession(session);
    if (rv != CKR_OK)
        die_rv("C_CloseSession", rv);
    rv = p11->C_Finalize(NULL);
    if (rv != CKR_OK)
        die_rv("C_Finalize", rv);
}

/* Counts certificates, optionally only those with the given label. */
static CK_RV count_certs(const char *label, CK_ULONG *count)
{
    CK_OBJECT_CLASS cls = CKO_CERTIFICATE;
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_LABEL, (void *)label, label ? strlen(label) : 0 },
    };
    CK_RV rv = p11->C_FindObjectsInit(session, tmpl, label ? 2 : 1);
    if (rv != CKR_OK)
        return rv;
    CK_OBJECT_HANDLE found[256];
    CK_ULONG n = 0, total = 0;
    do {
        rv = p11->C_FindObjects(session, found, 256, &n);
        if (rv != CKR_OK) {
            p11->C_FindObjectsFinal(session);
            return rv;
        }
        total += n;
    } while (n > 0);
    rv = p11->C_FindObjectsFinal(session);
    if (rv == CKR_OK)
        *count = total;
    return rv;
}

/* ---------------------------------------------------------------- certificates */

/* A self-signed certificate "CN=<label>" with a random 64-bit serial, DER-encoded. */
static int make_cert(EVP_PKEY *key, const char *label, unsigned char **der,
                     unsigned char **subject, int *subject_len)
{
    X509 *x = X509_new();
    BIGNUM *bn = BN_new();
    X509_NAME *name = X509_NAME_new();
    int len = -1;
    if (!x || !bn || !name)
        goto out;
    if (!BN_rand(bn, 64, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) ||
        !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
        !X509_set_version(x, 2) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                    (const unsigned char *)label, -1, -1, 0) ||
        !X509_set_subject_name(x, name) || !X509_set_issuer_name(x, name) ||
        !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 30L * 24 * 3600) ||
        !X509_set_pubkey(x, key) || !X509_sign(x, key, EVP_sha256()))
        goto out;
    *der = NULL;
    len = i2d_X509(x, der);
    if (subject) {
        *subject = NULL;
        *subject_len = i2d_X509_NAME(name, subject);
    }
out:
    X509_NAME_free(name);
    BN_free(bn);
    X509_free(x);
    return len;
}

/* Appends "label\n" with one write(2), so a kill leaves whole lines only. */
static void log_label(int fd, const char *label)
{
    char line[256];
    int n = snprintf(line, sizeof line, "%s\n", label);
    if (write(fd, line, (size_t)n) != n) {
        perror("p11drive: writing the log");
        exit(EXIT_USAGE);
    }
}

/* Waits for one line on stdin; lets the shell release inserts one at a time. */
static int wait_for_step(void)
{
    char line[64];
    return fgets(line, sizeof line, stdin) != NULL;
}

static int cmd_import(int argc, char **argv)
{
    long count = -1;
    const char *prefix = NULL, *log_path = NULL;
    int stepped = 0, through_failures = 0;
    const char *env_subject = getenv("P11DRIVE_WITH_SUBJECT");
    int with_subject = env_subject && !strcmp(env_subject, "1");
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--prefix") && i + 1 < argc)
            prefix = argv[++i];
        else if (!strcmp(argv[i], "--log") && i + 1 < argc)
            log_path = argv[++i];
        else if (!strcmp(argv[i], "--stepped"))
            stepped = 1;
        else if (!strcmp(argv[i], "--through-failures"))
            through_failures = 1;
        else
            die_usage("import --count N --prefix P [--log FILE] [--stepped] [--through-failures]");
    }
    if (count < 0 || !prefix)
        die_usage("import needs --count and --prefix");

    int log_fd = -1;
    if (log_path) {
        log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            perror(log_path);
            return EXIT_USAGE;
        }
    }
    /* One key for every certificate: signing is cheap, key generation is not. */
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key)
        die_usage("EC key generation failed");

    open_module(1);
    CK_OBJECT_CLASS cls = CKO_CERTIFICATE;
    CK_CERTIFICATE_TYPE ctype = CKC_X_509;
    CK_BBOOL yes = CK_TRUE;
    long done = 0;
    for (long i = 0; i < count; i++) {
        if (stepped && !wait_for_step())
            break;
        char label[128];
        snprintf(label, sizeof label, "%s-%ld", prefix, i);
        unsigned char *der = NULL, *subject = NULL;
        int subject_len = 0;
        int len = make_cert(key, label, &der, with_subject ? &subject : NULL, &subject_len);
        if (len <= 0)
            die_usage("certificate generation failed");
        CK_ATTRIBUTE tmpl[] = {
            { CKA_CLASS, &cls, sizeof cls },
            { CKA_CERTIFICATE_TYPE, &ctype, sizeof ctype },
            { CKA_TOKEN, &yes, sizeof yes },
            { CKA_LABEL, label, strlen(label) },
            { CKA_VALUE, der, (CK_ULONG)len },
            { CKA_SUBJECT, subject, (CK_ULONG)subject_len },
        };
        CK_OBJECT_HANDLE obj;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CK_RV rv = p11->C_CreateObject(session, tmpl, with_subject ? 6 : 5, &obj);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        OPENSSL_free(der);
        OPENSSL_free(subject);
        if (rv != CKR_OK && through_failures) {
            printf("failed %s %s in %.0f ms\n", label, ckr_name(rv),
                   (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
            fflush(stdout);
            struct timespec pause = { 0, 100 * 1000 * 1000 };
            nanosleep(&pause, NULL);
            continue;
        }
        if (rv != CKR_OK) {
            /* Show that the module still answers after the failure. */
            CK_ULONG n = 0;
            CK_RV rv2 = count_certs(NULL, &n);
            fprintf(stderr, "p11drive: C_CreateObject(%s) returned %s (0x%lx) after %ld imports\n",
                    label, ckr_name(rv), (unsigned long)rv, done);
            if (rv2 == CKR_OK)
                printf("after error: count %lu\n", (unsigned long)n);
            else
                printf("after error: C_FindObjects returned %s\n", ckr_name(rv2));
            return EXIT_CHECK;
        }
        if (log_fd >= 0)
            log_label(log_fd, label);
        done++;
    }
    close_module();
    EVP_PKEY_free(key);
    printf("imported %ld\n", done);
    return 0;
}

/* ---------------------------------------------------------------- look-ups */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One initialization, one session, repeated finds: what a long-lived client does. */
static int cmd_watch(int argc, char **argv)
{
    long expect = -1;
    double timeout = 30;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--expect") && i + 1 < argc)
            expect = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout = strtod(argv[++i], NULL);
        else
            die_usage("watch --expect N --timeout SECONDS");
    }
    if (expect < 0)
        die_usage("watch needs --expect");
    setvbuf(stdout, NULL, _IOLBF, 0);
    open_module(0);
    double deadline = now_seconds() + timeout;
    long last = -1;
    for (;;) {
        CK_ULONG n = 0;
        CK_RV rv = count_certs(NULL, &n);
        if (rv != CKR_OK)
            die_rv("C_FindObjects", rv);
        if ((long)n != last) {
            printf("count %lu\n", (unsigned long)n);
            last = (long)n;
        }
        if ((long)n >= expect)
            break;
        if (now_seconds() > deadline) {
            fprintf(stderr, "p11drive: watch timed out after %.0f s: saw %ld of %ld certificates\n",
                    timeout, last, expect);
            return EXIT_CHECK;
        }
        struct timespec pause = { 0, 20 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
    close_module();
    return 0;
}

static int cmd_count(void)
{
    open_module(0);
    CK_ULONG n = 0;
    CK_RV rv = count_certs(NULL, &n);
    if (rv != CKR_OK)
        die_rv("C_FindObjects", rv);
    close_module();
    printf("%lu\n", (unsigned long)n);
    return 0;
}

static int cmd_has_label(const char *label)
{
    open_module(0);
    CK_ULONG n = 0;
    CK_RV rv = count_certs(label, &n);
    if (rv != CKR_OK)
        die_rv("C_FindObjects", rv);
    close_module();
    printf("%s: %lu\n", label, (unsigned long)n);
    return n > 0 ? 0 : EXIT_CHECK;
}

/* Each label in FILE (one a line) must name exactly one certificate. */
static int cmd_check_labels(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return EXIT_USAGE;
    }
    open_module(0);
    char line[256];
    long checked = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n')
            continue; /* a torn last line is not a label the log vouches for */
        line[len - 1] = '\0';
        CK_ULONG n = 0;
        CK_RV rv = count_certs(line, &n);
        if (rv != CKR_OK)
            die_rv("C_FindObjects", rv);
        checked++;
        if (n != 1) {
            printf("%s: found %lu times, expected once\n", line, (unsigned long)n);
            bad++;
        }
    }
    fclose(f);
    close_module();
    printf("checked %ld labels, %ld not found exactly once\n", checked, bad);
    return bad ? EXIT_CHECK : 0;
}

/* ---------------------------------------------------------------- PINs */

static double elapsed_ms(double since)
{
    return (now_seconds() - since) * 1000.0;
}

/* Announces a call a test may kill the process in, then makes sure the line is out. */
static void announce(const char *call)
{
    printf("calling %s\n", call);
    fflush(stdout);
}

static CK_USER_TYPE user_type(const char *name)
{
    if (!strcmp(name, "user"))
        return CKU_USER;
    if (!strcmp(name, "so"))
        return CKU_SO;
    die_usage("login user|so PIN");
    return CKU_USER;
}

static int cmd_login(const char *who, const char *pin)
{
    CK_USER_TYPE type = user_type(who);
    char call[32];
    setvbuf(stdout, NULL, _IOLBF, 0);
    open_module(1);
    snprintf(call, sizeof call, "C_Login(%s)", who);
    announce(call);
    double t0 = now_seconds();
    CK_RV rv = p11->C_Login(session, type, (CK_UTF8CHAR_PTR)pin, strlen(pin));
    printf("C_Login(%s) returned %s in %.0f ms\n", who, ckr_name(rv), elapsed_ms(t0));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    rv = p11->C_Logout(session);
    if (rv != CKR_OK)
        die_rv("C_Logout", rv);
    close_module();
    return 0;
}

/* C_SetPIN in a R/W public session: the user's PIN, no login first. */
static int cmd_set_pin(const char *old_pin, const char *new_pin)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    open_module(1);
    announce("C_SetPIN");
    double t0 = now_seconds();
    CK_RV rv = p11->C_SetPIN(session, (CK_UTF8CHAR_PTR)old_pin, strlen(old_pin),
                             (CK_UTF8CHAR_PTR)new_pin, strlen(new_pin));
    printf("C_SetPIN returned %s in %.0f ms\n", ckr_name(rv), elapsed_ms(t0));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    close_module();
    return 0;
}

/* C_InitToken needs no session open on the token: none is. */
static int cmd_init_token(const char *so_pin, const char *label)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    load_module();
    CK_SLOT_ID slot = token_slot();
    CK_UTF8CHAR padded[32];
    memset(padded, ' ', sizeof padded);
    memcpy(padded, label, strlen(label) < sizeof padded ? strlen(label) : sizeof padded);
    announce("C_InitToken");
    double t0 = now_seconds();
    CK_RV rv = p11->C_InitToken(slot, (CK_UTF8CHAR_PTR)so_pin, strlen(so_pin), padded);
    printf("C_InitToken returned %s in %.0f ms\n", ckr_name(rv), elapsed_ms(t0));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    rv = p11->C_Finalize(NULL);
    if (rv != CKR_OK)
        die_rv("C_Finalize", rv);
    return 0;
}

/* ---------------------------------------------------------------- keys */

/* Logs the user in with $P11DRIVE_PIN. */
static void login_from_env(void)
{
    const char *pin = getenv("P11DRIVE_PIN");
    if (!pin || !*pin)
        die_usage("P11DRIVE_PIN is not set");
    CK_RV rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
    if (rv != CKR_OK)
        die_rv("C_Login", rv);
}

/* One attribute's value through the two-call convention; *value is malloc'd. */
static CK_RV get_attr(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type, unsigned char **value,
                      CK_ULONG *len)
{
    CK_ATTRIBUTE a = { type, NULL, 0 };
    *value = NULL;
    *len = 0;
    CK_RV rv = p11->C_GetAttributeValue(session, obj, &a, 1);
    *len = a.ulValueLen;
    if (rv != CKR_OK)
        return rv;
    a.pValue = malloc(a.ulValueLen ? a.ulValueLen : 1);
    if (!a.pValue)
        die_usage("out of memory");
    rv = p11->C_GetAttributeValue(session, obj, &a, 1);
    if (rv != CKR_OK) {
        free(a.pValue);
        return rv;
    }
    *value = a.pValue;
    *len = a.ulValueLen;
    return CKR_OK;
}

static unsigned char *must_get_attr(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type,
                                    const char *name, CK_ULONG *len)
{
    unsigned char *value;
    CK_RV rv = get_attr(obj, type, &value, len);
    if (rv != CKR_OK) {
        fprintf(stderr, "p11drive: C_GetAttributeValue(%s) returned %s (0x%lx)\n", name,
                ckr_name(rv), (unsigned long)rv);
        exit(EXIT_CHECK);
    }
    return value;
}

static void print_hex(const char *kind, const char *name, const unsigned char *v, CK_ULONG len)
{
    printf("%s %s ", kind, name);
    for (CK_ULONG i = 0; i < len; i++)
        printf("%02x", v[i]);
    printf("\n");
}

/* The contents of a DER OCTET STRING (CKA_EC_POINT as the spec says), or
 * the value itself when it is not one (some modules send the raw point). */
static const unsigned char *point_bytes(const unsigned char *v, CK_ULONG len, CK_ULONG *out)
{
    if (len >= 2 && v[0] == 0x04) {
        if (v[1] < 0x80 && (CK_ULONG)v[1] + 2 == len) {
            *out = v[1];
            return v + 2;
        }
        if (v[1] == 0x81 && len >= 3 && (CK_ULONG)v[2] + 3 == len) {
            *out = v[2];
            return v + 3;
        }
    }
    *out = len;
    return v;
}

static int check_rsa(const unsigned char *d, CK_ULONG dl, const unsigned char *p, CK_ULONG pl,
                     const unsigned char *q, CK_ULONG ql, const unsigned char *n, CK_ULONG nl,
                     const unsigned char *e, CK_ULONG el)
{
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *bd = BN_bin2bn(d, (int)dl, NULL), *bp = BN_bin2bn(p, (int)pl, NULL);
    BIGNUM *bq = BN_bin2bn(q, (int)ql, NULL), *bn = BN_bin2bn(n, (int)nl, NULL);
    BIGNUM *be = BN_bin2bn(e, (int)el, NULL), *t = BN_new(), *m = BN_new();
    int ok = ctx && bd && bp && bq && bn && be && t && m;
    /* n = p q, and d e = 1 modulo p - 1 and modulo q - 1. */
    ok = ok && BN_mul(t, bp, bq, ctx) && BN_cmp(t, bn) == 0;
    ok = ok && BN_mul(t, bd, be, ctx);
    ok = ok && BN_sub_word(bp, 1) && BN_mod(m, t, bp, ctx) && BN_is_one(m);
    ok = ok && BN_sub_word(bq, 1) && BN_mod(m, t, bq, ctx) && BN_is_one(m);
    BN_free(bd); BN_free(bp); BN_free(bq); BN_free(bn); BN_free(be); BN_free(t); BN_free(m);
    BN_CTX_free(ctx);
    return ok;
}

static int check_ec(const char *curve, const unsigned char *d, CK_ULONG dl,
                    const unsigned char *pt, CK_ULONG ptl)
{
    EC_GROUP *group = EC_GROUP_new_by_curve_name(OBJ_sn2nid(curve));
    BIGNUM *bd = BN_bin2bn(d, (int)dl, NULL);
    EC_POINT *p = group ? EC_POINT_new(group) : NULL;
    unsigned char buf[256];
    size_t n = 0;
    int ok = group && bd && p && EC_POINT_mul(group, p, bd, NULL, NULL, NULL);
    if (ok)
        n = EC_POINT_point2oct(group, p, POINT_CONVERSION_UNCOMPRESSED, buf, sizeof buf, NULL);
    ok = ok && n == ptl && memcmp(buf, pt, n) == 0;
    EC_POINT_free(p);
    BN_free(bd);
    EC_GROUP_free(group);
    return ok;
}

static int check_ed25519(const unsigned char *seed, CK_ULONG sl, const unsigned char *pub,
                         CK_ULONG pl)
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sl);
    unsigned char buf[32];
    size_t n = sizeof buf;
    int ok = k && EVP_PKEY_get_raw_public_key(k, buf, &n) && n == pl && memcmp(buf, pub, n) == 0;
    EVP_PKEY_free(k);
    return ok;
}

/* An extractable, non-sensitive key pair; its secret is printed so that the
 * store can be searched for it. With is_private false (genkey-public) the
 * user logs in only when $P11DRIVE_PIN is set. */
static int genkey_with(const char *type, const char *label, CK_BBOOL is_private)
{
    static const unsigned char p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
    static const unsigned char p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };
    static const unsigned char p521[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23 };
    static const unsigned char ed25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
    static const unsigned char f4[] = { 0x01, 0x00, 0x01 };
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ULONG bits = 0;
    CK_MECHANISM mech = { 0, NULL, 0 };
    const unsigned char *params = NULL;
    size_t params_len = 0;
    const char *curve = NULL;
    if (!strncmp(type, "rsa:", 4)) {
        mech.mechanism = CKM_RSA_PKCS_KEY_PAIR_GEN;
        bits = strtoul(type + 4, NULL, 10);
    } else if (!strcmp(type, "ec:prime256v1")) {
        mech.mechanism = CKM_EC_KEY_PAIR_GEN, params = p256, params_len = sizeof p256;
    } else if (!strcmp(type, "ec:secp384r1")) {
        mech.mechanism = CKM_EC_KEY_PAIR_GEN, params = p384, params_len = sizeof p384;
    } else if (!strcmp(type, "ec:secp521r1")) {
        mech.mechanism = CKM_EC_KEY_PAIR_GEN, params = p521, params_len = sizeof p521;
    } else if (!strcmp(type, "ed25519")) {
        mech.mechanism = CKM_EC_EDWARDS_KEY_PAIR_GEN, params = ed25519, params_len = sizeof ed25519;
    } else {
        die_usage("genkey rsa:BITS|ec:prime256v1|ec:secp384r1|ec:secp521r1|ed25519 LABEL");
    }
    if (params)
        curve = type + 3;

    CK_ATTRIBUTE pub[6], priv[7];
    CK_ULONG np = 0, nk = 0;
#define ADD(t, n, type_, ptr, len) (t)[(n)++] = (CK_ATTRIBUTE){ (type_), (void *)(ptr), (len) }
    ADD(pub, np, CKA_TOKEN, &yes, sizeof yes);
    ADD(pub, np, CKA_VERIFY, &yes, sizeof yes);
    ADD(pub, np, CKA_LABEL, label, strlen(label));
    if (params) {
        ADD(pub, np, CKA_EC_PARAMS, params, params_len);
    } else {
        ADD(pub, np, CKA_MODULUS_BITS, &bits, sizeof bits);
        ADD(pub, np, CKA_PUBLIC_EXPONENT, f4, sizeof f4);
    }
    ADD(priv, nk, CKA_TOKEN, &yes, sizeof yes);
    ADD(priv, nk, CKA_PRIVATE, &is_private, sizeof is_private);
    ADD(priv, nk, CKA_SIGN, &yes, sizeof yes);
    ADD(priv, nk, CKA_SENSITIVE, &no, sizeof no);
    ADD(priv, nk, CKA_EXTRACTABLE, &yes, sizeof yes);
    ADD(priv, nk, CKA_LABEL, label, strlen(label));
#undef ADD

    open_module(1);
    const char *pin = getenv("P11DRIVE_PIN");
    if (is_private || (pin && *pin))
        login_from_env();
    CK_OBJECT_HANDLE hpub, hpriv;
    CK_RV rv = p11->C_GenerateKeyPair(session, &mech, pub, np, priv, nk, &hpub, &hpriv);
    if (rv != CKR_OK)
        die_rv("C_GenerateKeyPair", rv);

    CK_ULONG l1, l2, l3, l4, l5;
    int ok;
    if (!params) {
        unsigned char *d = must_get_attr(hpriv, CKA_PRIVATE_EXPONENT, "CKA_PRIVATE_EXPONENT", &l1);
        unsigned char *p = must_get_attr(hpriv, CKA_PRIME_1, "CKA_PRIME_1", &l2);
        unsigned char *q = must_get_attr(hpriv, CKA_PRIME_2, "CKA_PRIME_2", &l3);
        unsigned char *n = must_get_attr(hpub, CKA_MODULUS, "CKA_MODULUS", &l4);
        unsigned char *e = must_get_attr(hpub, CKA_PUBLIC_EXPONENT, "CKA_PUBLIC_EXPONENT", &l5);
        print_hex("secret", "private_exponent", d, l1);
        print_hex("secret", "prime1", p, l2);
        print_hex("secret", "prime2", q, l3);
        print_hex("public", "modulus", n, l4);
        ok = check_rsa(d, l1, p, l2, q, l3, n, l4, e, l5);
        free(d); free(p); free(q); free(n); free(e);
    } else {
        unsigned char *v = must_get_attr(hpriv, CKA_VALUE, "CKA_VALUE", &l1);
        unsigned char *pt = must_get_attr(hpub, CKA_EC_POINT, "CKA_EC_POINT", &l2);
        CK_ULONG raw_len;
        const unsigned char *raw = point_bytes(pt, l2, &raw_len);
        print_hex("secret", "value", v, l1);
        print_hex("public", "ec_point", raw, raw_len);
        ok = strcmp(type, "ed25519") ? check_ec(curve, v, l1, raw, raw_len)
                                     : check_ed25519(v, l1, raw, raw_len);
        free(v); free(pt);
    }
    if (!ok) {
        fprintf(stderr, "p11drive: the secret value the module returned does not match the public key\n");
        return EXIT_CHECK;
    }
    printf("check: the secret value matches the public key\n");
    close_module();
    return 0;
}

static int cmd_genkey(const char *type, const char *label)
{
    return genkey_with(type, label, CK_TRUE);
}

/* Finds the one private key labelled LABEL (logged in with $P11DRIVE_PIN). */
static CK_OBJECT_HANDLE find_private_key(const char *label)
{
    CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_LABEL, (void *)label, strlen(label) },
    };
    CK_OBJECT_HANDLE found[2];
    CK_ULONG n = 0;
    CK_RV rv = p11->C_FindObjectsInit(session, tmpl, 2);
    if (rv != CKR_OK)
        die_rv("C_FindObjectsInit", rv);
    rv = p11->C_FindObjects(session, found, 2, &n);
    if (rv != CKR_OK)
        die_rv("C_FindObjects", rv);
    rv = p11->C_FindObjectsFinal(session);
    if (rv != CKR_OK)
        die_rv("C_FindObjectsFinal", rv);
    if (n != 1) {
        fprintf(stderr, "p11drive: found %lu private keys labelled '%s', expected one\n",
                (unsigned long)n, label);
        exit(EXIT_CHECK);
    }
    return found[0];
}

/* The secret value of a private key: printed in hex, or the CK_RV that refused it. */
static int cmd_read_secret(const char *label)
{
    open_module(0);
    login_from_env();
    CK_OBJECT_HANDLE key = find_private_key(label);
    CK_KEY_TYPE kt = 0;
    CK_BBOOL sensitive = 0, extractable = 0;
    CK_ATTRIBUTE flags[] = {
        { CKA_KEY_TYPE, &kt, sizeof kt },
        { CKA_SENSITIVE, &sensitive, sizeof sensitive },
        { CKA_EXTRACTABLE, &extractable, sizeof extractable },
    };
    CK_RV rv = p11->C_GetAttributeValue(session, key, flags, 3);
    if (rv != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_KEY_TYPE, CKA_SENSITIVE, CKA_EXTRACTABLE)", rv);
    printf("CKA_SENSITIVE %s, CKA_EXTRACTABLE %s\n", sensitive ? "true" : "false",
           extractable ? "true" : "false");
    CK_ATTRIBUTE_TYPE type = kt == CKK_RSA ? CKA_PRIVATE_EXPONENT : CKA_VALUE;
    const char *name = kt == CKK_RSA ? "CKA_PRIVATE_EXPONENT" : "CKA_VALUE";
    unsigned char *value;
    CK_ULONG len;
    rv = get_attr(key, type, &value, &len);
    if (rv != CKR_OK) {
        printf("%s: C_GetAttributeValue returned %s, length %s\n", name, ckr_name(rv),
               len == (CK_ULONG)-1 ? "CK_UNAVAILABLE_INFORMATION" : "a number");
        return EXIT_CHECK;
    }
    print_hex("secret", name, value, len);
    free(value);
    close_module();
    return 0;
}

/* Signs with one key until another process's change makes C_SignInit refuse
 * it: the module must notice other processes' writes between signatures. */
static double now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmd_sign_until_refused(const char *label, const char *seconds, int step)
{
    open_module(0);
    login_from_env();
    CK_OBJECT_HANDLE key = find_private_key(label);
    CK_KEY_TYPE kt = 0;
    CK_ATTRIBUTE type = { CKA_KEY_TYPE, &kt, sizeof kt };
    CK_RV rv = p11->C_GetAttributeValue(session, key, &type, 1);
    if (rv != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_KEY_TYPE)", rv);
    CK_MECHANISM mech = { kt == CKK_RSA ? CKM_SHA256_RSA_PKCS : CKM_ECDSA_SHA256, NULL, 0 };
    CK_BYTE msg[32] = { 1, 2, 3 }, sig[1024];
    time_t deadline = time(NULL) + strtol(seconds, NULL, 10);
    unsigned long count = 0;
    double start = now_ms(CLOCK_MONOTONIC);
    char line[64];
    while (time(NULL) < deadline) {
        if (step && count > 0 && !fgets(line, sizeof line, stdin))
            break;
        rv = p11->C_SignInit(session, &mech, key);
        if (rv != CKR_OK) {
            double elapsed = now_ms(CLOCK_MONOTONIC) - start;
            printf("refused %s after %lu signatures at %.0f ms, %.0f signatures/s\n", ckr_name(rv), count,
                   now_ms(CLOCK_REALTIME), elapsed > 0 ? count * 1e3 / elapsed : 0.0);
            return rv == CKR_KEY_HANDLE_INVALID ? 0 : EXIT_CHECK;
        }
        CK_ULONG len = sizeof sig;
        rv = p11->C_Sign(session, msg, sizeof msg, sig, &len);
        if (rv != CKR_OK)
            die_rv("C_Sign", rv);
        if (count++ == 0) {
            printf("signing\n");
            fflush(stdout);
        }
    }
    printf("still signing after %s s and %lu signatures\n", seconds, count);
    return EXIT_CHECK;
}

/* ---------------------------------------------------------------- core rules */

/* The attribute that holds a private key's secret, and its name. */
static CK_ATTRIBUTE_TYPE secret_type(CK_KEY_TYPE kt, const char **name)
{
    *name = kt == CKK_RSA ? "CKA_PRIVATE_EXPONENT" : "CKA_VALUE";
    return kt == CKK_RSA ? CKA_PRIVATE_EXPONENT : CKA_VALUE;
}

static CK_KEY_TYPE key_type_of(CK_OBJECT_HANDLE key)
{
    CK_KEY_TYPE kt = 0;
    CK_ATTRIBUTE a = { CKA_KEY_TYPE, &kt, sizeof kt };
    CK_RV rv = p11->C_GetAttributeValue(session, key, &a, 1);
    if (rv != CKR_OK)
        die_rv("C_GetAttributeValue(CKA_KEY_TYPE)", rv);
    return kt;
}

/* copy LABEL NEWLABEL [token=0|1] [private=0|1] [sensitive=0|1] [extractable=0|1]:
 * C_CopyObject of the private key LABEL with CKA_LABEL=NEWLABEL and the given
 * flags; then, if the copy was made, tries to read its secret. */
static int cmd_copy(int argc, char **argv)
{
    static const struct { const char *name; CK_ATTRIBUTE_TYPE type; } flags[] = {
        { "token", CKA_TOKEN }, { "private", CKA_PRIVATE },
        { "sensitive", CKA_SENSITIVE }, { "extractable", CKA_EXTRACTABLE },
    };
    if (argc < 2)
        die_usage("copy LABEL NEWLABEL [token|private|sensitive|extractable=0|1]...");
    CK_ATTRIBUTE tmpl[5];
    CK_BBOOL values[4];
    CK_ULONG n = 0;
    tmpl[n++] = (CK_ATTRIBUTE){ CKA_LABEL, argv[1], strlen(argv[1]) };
    for (int i = 2; i < argc; i++) {
        size_t k;
        for (k = 0; k < 4; k++) {
            size_t len = strlen(flags[k].name);
            if (!strncmp(argv[i], flags[k].name, len) && argv[i][len] == '=' &&
                (argv[i][len + 1] == '0' || argv[i][len + 1] == '1') && !argv[i][len + 2])
                break;
        }
        if (k == 4 || n >= 5)
            die_usage("copy: flags are token=, private=, sensitive=, extractable= 0|1");
        values[n - 1] = argv[i][strlen(flags[k].name) + 1] == '1';
        tmpl[n] = (CK_ATTRIBUTE){ flags[k].type, &values[n - 1], sizeof(CK_BBOOL) };
        n++;
    }
    open_module(1);
    login_from_env();
    CK_OBJECT_HANDLE key = find_private_key(argv[0]), copy;
    CK_RV rv = p11->C_CopyObject(session, key, tmpl, n, &copy);
    printf("C_CopyObject returned %s\n", ckr_name(rv));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    const char *name;
    CK_ATTRIBUTE_TYPE type = secret_type(key_type_of(copy), &name);
    unsigned char *value;
    CK_ULONG len;
    rv = get_attr(copy, type, &value, &len);
    printf("copy %s: C_GetAttributeValue returned %s\n", name, ckr_name(rv));
    if (rv == CKR_OK) {
        print_hex("secret", name, value, len);
        free(value);
    }
    close_module();
    return 0;
}

/* An ECDSA signature r || s as OpenSSL's DER ECDSA-Sig-Value; *der is OPENSSL_malloc'd. */
static int ecdsa_der(const unsigned char *sig, CK_ULONG len, unsigned char **der)
{
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)(len / 2), NULL);
    BIGNUM *t = BN_bin2bn(sig + len / 2, (int)(len / 2), NULL);
    int n = -1;
    if (s && r && t && ECDSA_SIG_set0(s, r, t)) {
        r = t = NULL;
        *der = NULL;
        n = i2d_ECDSA_SIG(s, der);
    }
    BN_free(r);
    BN_free(t);
    ECDSA_SIG_free(s);
    return n;
}

/* sign-copy LABEL session|token|token-then-destroy INPUT OUTPUT: what
 * OpenSSL's pkcs11-provider does with a token key: copies the private key
 * LABEL (a session object, or a token object; with token-then-destroy the
 * original is destroyed first), signs INPUT's bytes with the copy
 * (CKM_SHA256_RSA_PKCS, CKM_ECDSA_SHA256 as DER, or CKM_EDDSA) and writes the
 * signature to OUTPUT, for OpenSSL to verify. */
static int cmd_sign_copy(const char *label, const char *how, const char *input,
                         const char *output)
{
    CK_BBOOL token = strcmp(how, "session") != 0;
    int destroy = !strcmp(how, "token-then-destroy");
    if (!destroy && strcmp(how, "session") && strcmp(how, "token"))
        die_usage("sign-copy LABEL session|token|token-then-destroy INPUT OUTPUT");
    unsigned char msg[4096];
    FILE *f = fopen(input, "rb");
    if (!f) {
        perror(input);
        return EXIT_USAGE;
    }
    size_t msg_len = fread(msg, 1, sizeof msg, f);
    fclose(f);

    open_module(1);
    login_from_env();
    CK_OBJECT_HANDLE key = find_private_key(label), copy;
    char copy_label[256];
    snprintf(copy_label, sizeof copy_label, "%s-copy", label);
    CK_ATTRIBUTE tmpl[] = {
        { CKA_TOKEN, &token, sizeof token },
        { CKA_LABEL, copy_label, strlen(copy_label) },
    };
    CK_RV rv = p11->C_CopyObject(session, key, tmpl, 2, &copy);
    printf("C_CopyObject(CKA_TOKEN=%s) returned %s\n", token ? "TRUE" : "FALSE", ckr_name(rv));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    if (destroy) {
        rv = p11->C_DestroyObject(session, key);
        printf("C_DestroyObject(original) returned %s\n", ckr_name(rv));
        if (rv != CKR_OK)
            return EXIT_CHECK;
    }
    CK_KEY_TYPE kt = key_type_of(copy);
    CK_MECHANISM mech = { kt == CKK_RSA ? CKM_SHA256_RSA_PKCS
                          : kt == CKK_EC ? CKM_ECDSA_SHA256 : CKM_EDDSA, NULL, 0 };
    rv = p11->C_SignInit(session, &mech, copy);
    printf("C_SignInit(copy) returned %s\n", ckr_name(rv));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    unsigned char sig[1024], *der = NULL;
    CK_ULONG sig_len = sizeof sig;
    rv = p11->C_Sign(session, msg, msg_len, sig, &sig_len);
    printf("C_Sign(copy) returned %s\n", ckr_name(rv));
    if (rv != CKR_OK)
        return EXIT_CHECK;
    const unsigned char *out = sig;
    int out_len = (int)sig_len;
    if (kt == CKK_EC) {
        out_len = ecdsa_der(sig, sig_len, &der);
        if (out_len <= 0)
            die_usage("could not encode the ECDSA signature");
        out = der;
    }
    f = fopen(output, "wb");
    if (!f || fwrite(out, 1, (size_t)out_len, f) != (size_t)out_len || fclose(f) != 0) {
        perror(output);
        return EXIT_USAGE;
    }
    OPENSSL_free(der);
    close_module();
    return 0;
}

/* Reads one line from stdin or exits: the shell releases the next step. */
static void await_step(void)
{
    if (!wait_for_step())
        die_usage("stdin closed before the next step");
}

/* hold-login NEW_PIN: the process whose token another process re-initialises.
 * Logs in with $P11DRIVE_PIN, stores a private data object, prints "logged in"
 * and waits for a line on stdin; then creates another private data object,
 * logs in with NEW_PIN (after a C_Logout if the module says the old login
 * still holds) and reads CKA_VALUE of every data object it finds. Prints each
 * CK_RV; exits 0 once every step ran. */
static int cmd_hold_login(const char *new_pin)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    CK_OBJECT_CLASS cls = CKO_DATA;
    CK_BBOOL yes = CK_TRUE;
    CK_ATTRIBUTE before[] = {
        { CKA_CLASS, &cls, sizeof cls }, { CKA_TOKEN, &yes, sizeof yes },
        { CKA_PRIVATE, &yes, sizeof yes }, { CKA_LABEL, "before", 6 }, { CKA_VALUE, "wiped", 5 },
    };
    CK_ATTRIBUTE after[] = {
        { CKA_CLASS, &cls, sizeof cls }, { CKA_TOKEN, &yes, sizeof yes },
        { CKA_PRIVATE, &yes, sizeof yes }, { CKA_LABEL, "after", 5 }, { CKA_VALUE, "stale", 5 },
    };
    open_module(1);
    login_from_env();
    CK_OBJECT_HANDLE obj;
    CK_RV rv = p11->C_CreateObject(session, before, 5, &obj);
    if (rv != CKR_OK)
        die_rv("C_CreateObject(before)", rv);
    printf("logged in\n");
    await_step();
    rv = p11->C_CreateObject(session, after, 5, &obj);
    printf("C_CreateObject(after) returned %s\n", ckr_name(rv));
    rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)new_pin, strlen(new_pin));
    printf("C_Login(new PIN) returned %s\n", ckr_name(rv));
    if (rv == CKR_USER_ALREADY_LOGGED_IN) {
        p11->C_Logout(session);
        rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)new_pin, strlen(new_pin));
        printf("C_Logout, C_Login(new PIN) returned %s\n", ckr_name(rv));
    }
    CK_ATTRIBUTE find[] = { { CKA_CLASS, &cls, sizeof cls } };
    CK_OBJECT_HANDLE found[16];
    CK_ULONG n = 0;
    rv = p11->C_FindObjectsInit(session, find, 1);
    if (rv != CKR_OK)
        die_rv("C_FindObjectsInit", rv);
    rv = p11->C_FindObjects(session, found, 16, &n);
    if (rv != CKR_OK)
        die_rv("C_FindObjects", rv);
    p11->C_FindObjectsFinal(session);
    printf("data objects: %lu\n", (unsigned long)n);
    for (CK_ULONG i = 0; i < n; i++) {
        unsigned char *value = NULL, *name = NULL;
        CK_ULONG len, name_len;
        CK_RV label_rv = get_attr(found[i], CKA_LABEL, &name, &name_len);
        rv = get_attr(found[i], CKA_VALUE, &value, &len);
        printf("object %.*s: C_GetAttributeValue(CKA_VALUE) returned %s\n",
               label_rv == CKR_OK ? (int)name_len : 1, label_rv == CKR_OK ? (char *)name : "?",
               ckr_name(rv));
        free(value);
        free(name);
    }
    close_module();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die_usage("usage: p11drive import|watch|count|has-label|check-labels|login|set-pin|"
                  "init-token|genkey|read-secret|sign-until-refused ...");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "import"))
        return cmd_import(argc - 2, argv + 2);
    if (!strcmp(cmd, "watch"))
        return cmd_watch(argc - 2, argv + 2);
    if (!strcmp(cmd, "count") && argc == 2)
        return cmd_count();
    if (!strcmp(cmd, "has-label") && argc == 3)
        return cmd_has_label(argv[2]);
    if (!strcmp(cmd, "check-labels") && argc == 3)
        return cmd_check_labels(argv[2]);
    if (!strcmp(cmd, "login") && argc == 4)
        return cmd_login(argv[2], argv[3]);
    if (!strcmp(cmd, "set-pin") && argc == 4)
        return cmd_set_pin(argv[2], argv[3]);
    if (!strcmp(cmd, "init-token") && argc == 4)
        return cmd_init_token(argv[2], argv[3]);
    if (!strcmp(cmd, "genkey") && argc == 4)
        return cmd_genkey(argv[2], argv[3]);
    if (!strcmp(cmd, "read-secret") && argc == 3)
        return cmd_read_secret(argv[2]);
    if (!strcmp(cmd, "sign-until-refused") && (argc == 4 || (argc == 5 && !strcmp(argv[4], "step"))))
        return cmd_sign_until_refused(argv[2], argv[3], argc == 5);
    if (!strcmp(cmd, "genkey-public") && argc == 4)
        return genkey_with(argv[2], argv[3], CK_FALSE);
    if (!strcmp(cmd, "copy") && argc >= 4)
        return cmd_copy(argc - 2, argv + 2);
    if (!strcmp(cmd, "sign-copy") && argc == 6)
        return cmd_sign_copy(argv[2], argv[3], argv[4], argv[5]);
    if (!strcmp(cmd, "hold-login") && argc == 3)
        return cmd_hold_login(argv[2]);
    die_usage("usage: p11drive import|watch|count|has-label LABEL|check-labels FILE|"
              "login user|so PIN|set-pin OLD NEW|init-token SO_PIN LABEL|"
              "genkey TYPE LABEL|read-secret LABEL|sign-until-refused LABEL SECONDS [step]|"
              "genkey-public TYPE LABEL|copy LABEL NEWLABEL FLAG=0|1...|"
              "sign-copy LABEL session|token|token-then-destroy INPUT OUTPUT|hold-login NEW_PIN ...");
    return EXIT_USAGE;
}
