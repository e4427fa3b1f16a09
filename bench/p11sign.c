/*
 * p11sign: signatures per second through any PKCS#11 module, and the time
 * C_Login takes.
 *
 *   p11sign --module PATH --token LABEL --pin PIN --key rsa2048|ecp256
 *           [--threads N] [--seconds S] [--verify] [--raw] [--split]
 *   p11sign --module PATH --token LABEL --pin PIN --login-runs N
 *
 * Sign mode: logs in, finds the private key labelled "p11sign-rsa2048" or
 * "p11sign-ecp256" (generates the pair on the token, C_GenerateKeyPair, the
 * first time), then N threads, each with its own session and the same key,
 * sign a 32-byte message with C_SignInit + C_Sign (CKM_SHA256_RSA_PKCS or
 * CKM_ECDSA_SHA256) for S seconds. Each thread checks its last signature with
 * C_VerifyInit + C_Verify. The rate is the sum of the threads' rates. A
 * module without CKM_ECDSA_SHA256 (SoftHSM2 2.6) signs the 32 bytes with
 * CKM_ECDSA, as the digest the hashing mechanism would have made. Prints one
 * line:
 *
 *   sign key=rsa2048 mechanism=CKM_SHA256_RSA_PKCS threads=2 ops=1234 seconds=5.000 ops_per_s=246.8 cpu_ops_per_s=250.1 user_ops_per_s=251.3
 *
 * ops_per_s sums each thread's ops per second of wall-clock time;
 * cpu_ops_per_s sums each thread's ops per second of its own CPU time (user +
 * system); user_ops_per_s of its own CPU user time, which is what openssl speed
 * divides by (times(), tms_utime): system calls both make (OpenSSL's random
 * generator calls getpid once per ECDSA signature) count on neither side. Each
 * thread reads the clock every 16 operations (openssl speed stops on an alarm
 * and reads none per operation); its rate is over the time it actually ran.
 *
 * With --verify, each thread signs once before the clock starts and then
 * verifies that signature (C_VerifyInit + C_Verify) for S seconds; the line
 * starts with "verify" instead of "sign".
 *
 * With --raw, an ECDSA key signs with CKM_ECDSA: the 32 bytes are the digest,
 * as openssl speed signs one, and the module hashes nothing.
 *
 * With --split (one thread, signing), each C_SignInit and each C_Sign is timed
 * on its own (CLOCK_MONOTONIC) and the line ends with the mean microseconds of
 * each and of a whole operation: init_us=0.561 sign_us=42.697 op_us=43.306.
 * bench/split.sh reads them beside the time OpenSSL's signing call takes in
 * the same process (bench/sign_timer.c).
 *
 * Login mode: N times C_OpenSession, C_Login(CKU_USER) (timed), C_Logout,
 * C_CloseSession in this process. Prints:
 *
 *   login runs=5 first_ms=123.4 median_ms=120.1 max_ms=130.2
 *
 * The module is initialized with CKF_OS_LOCKING_OK. Exit status 0, or 1 with a
 * message naming the function and CK_RV that failed.
 *
 * Build: gcc -O2 -Wall -Wextra -pthread -ITests/include -Ip11/include -o p11sign bench/p11sign.c -ldl
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p11test.h"

static CK_FUNCTION_LIST_PTR p11;

static void die_rv(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11sign: %s returned %s (0x%lx)\n", what, ckr_name(rv), (unsigned long)rv);
    exit(1);
}

static void die(const char *msg)
{
    fprintf(stderr, "p11sign: %s\n", msg);
    exit(1);
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void load(const char *path)
{
    struct p11test_module m;
    char why[512];
    if (p11test_load(path, &m, why, sizeof why) != 0)
        die(why);
    p11 = m.list;
    CK_RV rv = p11test_initialize(p11);
    if (rv != CKR_OK)
        die_rv("C_Initialize", rv);
}

static CK_SLOT_ID find_slot(const char *label)
{
    CK_SLOT_ID slot;
    CK_RV rv = p11test_find_token(p11, label, &slot, NULL);
    if (rv == CKR_OK)
        return slot;
    if (rv != CKR_TOKEN_NOT_PRESENT)
        die_rv("C_GetSlotList", rv);
    fprintf(stderr, "p11sign: no token labelled '%s'\n", label);
    exit(1);
}

static CK_SESSION_HANDLE open_session(CK_SLOT_ID slot)
{
    CK_SESSION_HANDLE s;
    CK_RV rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s);
    if (rv != CKR_OK)
        die_rv("C_OpenSession", rv);
    return s;
}

static CK_OBJECT_HANDLE find_key(CK_SESSION_HANDLE s, CK_OBJECT_CLASS cls, const char *label)
{
    CK_ATTRIBUTE tmpl[] = {
        { CKA_CLASS, &cls, sizeof cls },
        { CKA_LABEL, (void *)label, strlen(label) },
    };
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = 0;
    CK_RV rv = p11->C_FindObjectsInit(s, tmpl, 2);
    if (rv != CKR_OK)
        die_rv("C_FindObjectsInit", rv);
    rv = p11->C_FindObjects(s, &h, 1, &n);
    if (rv != CKR_OK)
        die_rv("C_FindObjects", rv);
    p11->C_FindObjectsFinal(s);
    return n == 1 ? h : CK_INVALID_HANDLE;
}

static void generate(CK_SESSION_HANDLE s, int rsa, const char *label)
{
    static const CK_BYTE p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
    static const CK_BYTE f4[] = { 0x01, 0x00, 0x01 };
    CK_BBOOL yes = CK_TRUE;
    CK_ULONG bits = 2048;
    CK_MECHANISM mech = { rsa ? CKM_RSA_PKCS_KEY_PAIR_GEN : CKM_EC_KEY_PAIR_GEN, NULL, 0 };
    CK_ATTRIBUTE pub_rsa[] = {
        { CKA_TOKEN, &yes, sizeof yes }, { CKA_VERIFY, &yes, sizeof yes },
        { CKA_LABEL, (void *)label, strlen(label) },
        { CKA_MODULUS_BITS, &bits, sizeof bits },
        { CKA_PUBLIC_EXPONENT, (void *)f4, sizeof f4 },
    };
    CK_ATTRIBUTE pub_ec[] = {
        { CKA_TOKEN, &yes, sizeof yes }, { CKA_VERIFY, &yes, sizeof yes },
        { CKA_LABEL, (void *)label, strlen(label) },
        { CKA_EC_PARAMS, (void *)p256, sizeof p256 },
    };
    CK_ATTRIBUTE priv[] = {
        { CKA_TOKEN, &yes, sizeof yes }, { CKA_PRIVATE, &yes, sizeof yes },
        { CKA_SENSITIVE, &yes, sizeof yes }, { CKA_SIGN, &yes, sizeof yes },
        { CKA_LABEL, (void *)label, strlen(label) },
    };
    CK_OBJECT_HANDLE hpub, hpriv;
    CK_RV rv = p11->C_GenerateKeyPair(s, &mech, rsa ? pub_rsa : pub_ec, rsa ? 5 : 4, priv, 5,
                                      &hpub, &hpriv);
    if (rv != CKR_OK)
        die_rv("C_GenerateKeyPair", rv);
}

/* CPU time of the calling thread, user + system. */
static double thread_cpu_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU user time of the calling thread. */
static double thread_user_sec(void)
{
    struct rusage usage;
    if (getrusage(RUSAGE_THREAD, &usage) != 0)
        return 0;
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6;
}

struct worker {
    pthread_t thread;
    CK_SLOT_ID slot;
    CK_MECHANISM_TYPE mech;
    const char *label;
    double seconds_wanted;
    int verify;
    pthread_barrier_t *start;
    long ops;
    double seconds;
    /* CPU time the thread used while it measured, and its user part. */
    double cpu_seconds;
    double user_seconds;
    /* --split: the seconds spent in C_SignInit and in C_Sign over the run. */
    int split;
    double init_seconds;
    double call_seconds;
};

static void *sign_loop(void *arg)
{
    struct worker *w = arg;
    CK_SESSION_HANDLE s = open_session(w->slot);
    CK_OBJECT_HANDLE key = find_key(s, CKO_PRIVATE_KEY, w->label);
    CK_OBJECT_HANDLE pub = find_key(s, CKO_PUBLIC_KEY, w->label);
    if (key == CK_INVALID_HANDLE || pub == CK_INVALID_HANDLE)
        die("a thread did not find the key pair");
    CK_MECHANISM mech = { w->mech, NULL, 0 };
    CK_BYTE msg[32], sig[1024];
    CK_ULONG sig_len = 0;
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (CK_BYTE)(i * 7 + 1);
    if (w->verify) {
        /* --verify: one signature before the clock, then C_VerifyInit + C_Verify of it. */
        CK_RV rv = p11->C_SignInit(s, &mech, key);
        sig_len = sizeof sig;
        if (rv != CKR_OK || (rv = p11->C_Sign(s, msg, sizeof msg, sig, &sig_len)) != CKR_OK)
            die_rv("C_SignInit/C_Sign", rv);
    }
    pthread_barrier_wait(w->start);
    double t0 = now_sec(), t = t0, deadline = t0 + w->seconds_wanted, c0 = thread_cpu_sec();
    double u0 = thread_user_sec();
    long ops = 0;
    do {
        CK_RV rv;
        if (w->verify) {
            if ((rv = p11->C_VerifyInit(s, &mech, pub)) != CKR_OK)
                die_rv("C_VerifyInit", rv);
            if ((rv = p11->C_Verify(s, msg, sizeof msg, sig, sig_len)) != CKR_OK)
                die_rv("C_Verify", rv);
        } else {
            double before = w->split ? now_sec() : 0;
            if ((rv = p11->C_SignInit(s, &mech, key)) != CKR_OK)
                die_rv("C_SignInit", rv);
            double between = w->split ? now_sec() : 0;
            sig_len = sizeof sig;
            if ((rv = p11->C_Sign(s, msg, sizeof msg, sig, &sig_len)) != CKR_OK)
                die_rv("C_Sign", rv);
            if (w->split) {
                double after = now_sec();
                w->init_seconds += between - before;
                w->call_seconds += after - between;
            }
        }
        ops++;
        if (ops % 16 == 0)
            t = now_sec();
    } while (t < deadline);
    w->ops = ops;
    w->seconds = t - t0;
    w->cpu_seconds = thread_cpu_sec() - c0;
    w->user_seconds = thread_user_sec() - u0;
    CK_RV rv = p11->C_VerifyInit(s, &mech, pub);
    if (rv != CKR_OK)
        die_rv("C_VerifyInit", rv);
    rv = p11->C_Verify(s, msg, sizeof msg, sig, sig_len);
    if (rv != CKR_OK)
        die_rv("C_Verify of the last signature", rv);
    p11->C_CloseSession(s);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(void)
{
    fprintf(stderr, "usage: p11sign --module PATH --token LABEL --pin PIN "
                    "(--key rsa2048|ecp256 [--threads N] [--seconds S] [--verify] [--raw] [--split] "
                    "| --login-runs N)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *module = NULL, *token = NULL, *pin = NULL, *key = NULL;
    int threads = 1, login_runs = 0, verify = 0, raw = 0, split = 0;
    double seconds = 5;
    static const struct option opts[] = {
        { "module", required_argument, NULL, 'm' }, { "token", required_argument, NULL, 't' },
        { "pin", required_argument, NULL, 'p' },    { "key", required_argument, NULL, 'k' },
        { "threads", required_argument, NULL, 'n' }, { "seconds", required_argument, NULL, 's' },
        { "login-runs", required_argument, NULL, 'l' }, { "verify", no_argument, NULL, 'v' },
        { "raw", no_argument, NULL, 'r' },           { "split", no_argument, NULL, 'x' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'm': module = optarg; break;
        case 't': token = optarg; break;
        case 'p': pin = optarg; break;
        case 'k': key = optarg; break;
        case 'n': threads = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'l': login_runs = atoi(optarg); break;
        case 'v': verify = 1; break;
        case 'r': raw = 1; break;
        case 'x': split = 1; break;
        default: usage();
        }
    }
    if (!module || !token || !pin || (!key && login_runs <= 0) || threads < 1 || threads > 64 ||
        (split && (threads != 1 || verify)))
        usage();

    load(module);
    CK_SLOT_ID slot = find_slot(token);

    if (login_runs > 0) {
        double ms[256];
        if (login_runs > 256)
            login_runs = 256;
        for (int i = 0; i < login_runs; i++) {
            CK_SESSION_HANDLE s = open_session(slot);
            double t0 = now_sec();
            /* An empty PIN: the protected authentication path of an unlocked session. */
            CK_RV rv = p11->C_Login(s, CKU_USER, *pin ? (CK_UTF8CHAR_PTR)pin : NULL, strlen(pin));
            ms[i] = (now_sec() - t0) * 1000.0;
            if (rv != CKR_OK)
                die_rv("C_Login", rv);
            rv = p11->C_Logout(s);
            if (rv != CKR_OK)
                die_rv("C_Logout", rv);
            p11->C_CloseSession(s);
        }
        double first = ms[0];
        qsort(ms, (size_t)login_runs, sizeof ms[0], cmp_double);
        printf("login runs=%d first_ms=%.1f median_ms=%.1f max_ms=%.1f\n", login_runs, first,
               ms[login_runs / 2], ms[login_runs - 1]);
        p11->C_Finalize(NULL);
        return 0;
    }

    int rsa;
    if (!strcmp(key, "rsa2048"))
        rsa = 1;
    else if (!strcmp(key, "ecp256"))
        rsa = 0;
    else
        usage();
    char label[64];
    snprintf(label, sizeof label, "p11sign-%s", key);

    /* The login is the application's: every session of this process shares it. */
    CK_SESSION_HANDLE s = open_session(slot);
    CK_RV rv = p11->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
    if (rv != CKR_OK)
        die_rv("C_Login", rv);
    if (find_key(s, CKO_PRIVATE_KEY, label) == CK_INVALID_HANDLE)
        generate(s, rsa, label);

    CK_MECHANISM_TYPE mechanism = rsa ? CKM_SHA256_RSA_PKCS : CKM_ECDSA_SHA256;
    CK_MECHANISM_INFO info;
    if (!rsa && (raw || p11->C_GetMechanismInfo(slot, mechanism, &info) != CKR_OK))
        mechanism = CKM_ECDSA;

    struct worker *w = calloc((size_t)threads, sizeof *w);
    pthread_barrier_t start;
    if (!w || pthread_barrier_init(&start, NULL, (unsigned)threads + 1))
        die("out of memory");
    for (int i = 0; i < threads; i++) {
        w[i].slot = slot;
        w[i].mech = mechanism;
        w[i].label = label;
        w[i].start = &start;
        w[i].seconds_wanted = seconds;
        w[i].verify = verify;
        w[i].split = split;
        if (pthread_create(&w[i].thread, NULL, sign_loop, &w[i]))
            die("pthread_create failed");
    }
    /* Every thread has its session and key before the clocks start; the
     * rate is the sum of the threads' rates, each over its own S seconds. */
    pthread_barrier_wait(&start);
    long ops = 0;
    double rate = 0, cpu_rate = 0, user_rate = 0, longest = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].thread, NULL);
        ops += w[i].ops;
        rate += (double)w[i].ops / w[i].seconds;
        cpu_rate += (double)w[i].ops / (w[i].cpu_seconds > 0 ? w[i].cpu_seconds : w[i].seconds);
        user_rate += (double)w[i].ops / (w[i].user_seconds > 0 ? w[i].user_seconds : w[i].seconds);
        if (w[i].seconds > longest)
            longest = w[i].seconds;
    }
    printf("%s key=%s mechanism=%s threads=%d ops=%ld seconds=%.3f ops_per_s=%.1f cpu_ops_per_s=%.1f "
           "user_ops_per_s=%.1f",
           verify ? "verify" : "sign", key,
           mechanism == CKM_SHA256_RSA_PKCS ? "CKM_SHA256_RSA_PKCS"
           : mechanism == CKM_ECDSA_SHA256  ? "CKM_ECDSA_SHA256"
                                            : "CKM_ECDSA",
           threads, ops, longest, rate, cpu_rate, user_rate);
    if (split && ops > 0)
        printf(" init_us=%.3f sign_us=%.3f op_us=%.3f", w[0].init_seconds / (double)ops * 1e6,
               w[0].call_seconds / (double)ops * 1e6, w[0].seconds / (double)ops * 1e6);
    printf("\n");
    p11->C_Logout(s);
    p11->C_CloseSession(s);
    p11->C_Finalize(NULL);
    return 0;
}
