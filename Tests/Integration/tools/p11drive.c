/*
 * p11drive: a small PKCS#11 client used by the integration tests.
 *
 * The shell tests need a few things no stock tool does: a process that
 * stays initialized while others write (watch), thousands of inserts in one
 * process that can be killed at any moment while recording what the module
 * acknowledged (import --log), and bulk look-ups by label (check-labels).
 *
 *   p11drive import --count N --prefix P [--log FILE] [--stepped]
 *   p11drive watch --expect N --timeout SECONDS
 *   p11drive count
 *   p11drive has-label LABEL
 *   p11drive check-labels FILE
 *
 * Environment: P11KEYCHAIN_MODULE (required) is the module to load;
 * P11DRIVE_TOKEN (default "login") is the label of the token to use;
 * P11DRIVE_WITH_SUBJECT=1 adds CKA_SUBJECT to each import, for modules that
 * derive nothing from the DER (SoftHSM2, used to check the tests themselves).
 *
 * Exit status: 0 success, 1 a PKCS#11 call failed or a check did not hold
 * (the message names the CK_RV), 2 usage or setup error.
 *
 * Build: gcc -O2 -Wall -Wextra -o p11drive p11drive.c -ldl -lcrypto
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
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <p11-kit-1/p11-kit/pkcs11.h>

enum { EXIT_CHECK = 1, EXIT_USAGE = 2 };

static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE session;

/* ---------------------------------------------------------------- errors */

static const char *rv_name(CK_RV rv)
{
    switch (rv) {
#define NAME(x) case x: return #x
    NAME(CKR_OK); NAME(CKR_HOST_MEMORY); NAME(CKR_SLOT_ID_INVALID);
    NAME(CKR_GENERAL_ERROR); NAME(CKR_FUNCTION_FAILED); NAME(CKR_ARGUMENTS_BAD);
    NAME(CKR_CANT_LOCK); NAME(CKR_ATTRIBUTE_READ_ONLY); NAME(CKR_ATTRIBUTE_SENSITIVE);
    NAME(CKR_ATTRIBUTE_TYPE_INVALID); NAME(CKR_ATTRIBUTE_VALUE_INVALID);
    NAME(CKR_ACTION_PROHIBITED); NAME(CKR_DATA_INVALID); NAME(CKR_DATA_LEN_RANGE);
    NAME(CKR_DEVICE_ERROR); NAME(CKR_DEVICE_MEMORY); NAME(CKR_DEVICE_REMOVED);
    NAME(CKR_FUNCTION_NOT_SUPPORTED); NAME(CKR_OBJECT_HANDLE_INVALID);
    NAME(CKR_OPERATION_ACTIVE); NAME(CKR_OPERATION_NOT_INITIALIZED);
    NAME(CKR_SESSION_CLOSED); NAME(CKR_SESSION_COUNT); NAME(CKR_SESSION_HANDLE_INVALID);
    NAME(CKR_SESSION_PARALLEL_NOT_SUPPORTED); NAME(CKR_SESSION_READ_ONLY);
    NAME(CKR_TEMPLATE_INCOMPLETE); NAME(CKR_TEMPLATE_INCONSISTENT);
    NAME(CKR_TOKEN_NOT_PRESENT); NAME(CKR_TOKEN_NOT_RECOGNIZED);
    NAME(CKR_TOKEN_WRITE_PROTECTED); NAME(CKR_USER_NOT_LOGGED_IN);
    NAME(CKR_BUFFER_TOO_SMALL); NAME(CKR_CRYPTOKI_NOT_INITIALIZED);
    NAME(CKR_CRYPTOKI_ALREADY_INITIALIZED); NAME(CKR_FUNCTION_REJECTED);
#undef NAME
    default: return "unknown CK_RV";
    }
}

/* Reports a failed call in one line that names the CK_RV, then exits. */
static void die_rv(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11drive: %s returned %s (0x%lx)\n", what, rv_name(rv),
            (unsigned long)rv);
    exit(EXIT_CHECK);
}

static void die_usage(const char *msg)
{
    fprintf(stderr, "p11drive: %s\n", msg);
    exit(EXIT_USAGE);
}

/* ---------------------------------------------------------------- module */

/* Trims the blank padding of a fixed-size PKCS#11 text field. */
static size_t padded_len(const unsigned char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\0'))
        n--;
    return n;
}

static CK_SLOT_ID find_token_slot(const char *want)
{
    CK_ULONG n = 0;
    CK_RV rv = p11->C_GetSlotList(CK_TRUE, NULL, &n);
    if (rv != CKR_OK)
        die_rv("C_GetSlotList", rv);
    CK_SLOT_ID *slots = calloc(n ? n : 1, sizeof *slots);
    if (!slots)
        die_usage("out of memory");
    rv = p11->C_GetSlotList(CK_TRUE, slots, &n);
    if (rv != CKR_OK)
        die_rv("C_GetSlotList", rv);
    for (CK_ULONG i = 0; i < n; i++) {
        CK_TOKEN_INFO info;
        if (p11->C_GetTokenInfo(slots[i], &info) != CKR_OK)
            continue;
        size_t len = padded_len(info.label, sizeof info.label);
        if (len == strlen(want) && memcmp(info.label, want, len) == 0) {
            CK_SLOT_ID id = slots[i];
            free(slots);
            return id;
        }
    }
    fprintf(stderr, "p11drive: no token labelled '%s' among %lu slot(s)\n", want,
            (unsigned long)n);
    exit(EXIT_CHECK);
}

/* Loads the module, initializes it once and opens one session on the token. */
static void open_module(int read_write)
{
    const char *path = getenv("P11KEYCHAIN_MODULE");
    if (!path || !*path)
        die_usage("P11KEYCHAIN_MODULE is not set");
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "p11drive: cannot load %s: %s\n", path, dlerror());
        exit(EXIT_USAGE);
    }
    CK_C_GetFunctionList get_list = (CK_C_GetFunctionList)dlsym(lib, "C_GetFunctionList");
    if (!get_list)
        die_usage("module exports no C_GetFunctionList");
    CK_RV rv = get_list(&p11);
    if (rv != CKR_OK)
        die_rv("C_GetFunctionList", rv);

    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    rv = p11->C_Initialize(&args);
    if (rv != CKR_OK)
        die_rv("C_Initialize", rv);

    const char *token = getenv("P11DRIVE_TOKEN");
    CK_SLOT_ID slot = find_token_slot(token && *token ? token : "login");
    CK_FLAGS flags = CKF_SERIAL_SESSION | (read_write ? CKF_RW_SESSION : 0);
    rv = p11->C_OpenSession(slot, flags, NULL, NULL, &session);
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
    int stepped = 0;
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
        else
            die_usage("import --count N --prefix P [--log FILE] [--stepped]");
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
        CK_RV rv = p11->C_CreateObject(session, tmpl, with_subject ? 6 : 5, &obj);
        OPENSSL_free(der);
        OPENSSL_free(subject);
        if (rv != CKR_OK) {
            /* Show that the module still answers after the failure. */
            CK_ULONG n = 0;
            CK_RV rv2 = count_certs(NULL, &n);
            fprintf(stderr, "p11drive: C_CreateObject(%s) returned %s (0x%lx) after %ld imports\n",
                    label, rv_name(rv), (unsigned long)rv, done);
            if (rv2 == CKR_OK)
                printf("after error: count %lu\n", (unsigned long)n);
            else
                printf("after error: C_FindObjects returned %s\n", rv_name(rv2));
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

int main(int argc, char **argv)
{
    if (argc < 2)
        die_usage("usage: p11drive import|watch|count|has-label|check-labels ...");
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
    die_usage("usage: p11drive import|watch|count|has-label LABEL|check-labels FILE ...");
    return EXIT_USAGE;
}
