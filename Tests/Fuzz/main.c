/*
 * p11fuzz: a seeded random-call driver for libp11keychain-pkcs11.so.
 *
 *   p11fuzz --module PATH [--seed N] [--seconds S] [--iterations N] [--certs DIR]
 *           [--skip LIST] [--only LIST] [--hang-timeout S] [--trace]
 *
 * Loads the module with dlopen, takes both function lists (C_GetFunctionList and
 * C_GetInterface "PKCS 11" 3.0), and makes random calls, family by family (calls.c), from
 * one random stream seeded by --seed, until --seconds have passed or --iterations are done.
 * Any CK_RV is fine. A crash (signal, sanitizer report), a call that does not return within
 * --hang-timeout seconds (default 30), or a forked child that crashes or hangs is reported
 * with the seed, the iteration and the call, and fails the run:
 *
 *   exit 0  no crash, no hang          exit 2  usage or setup error
 *   exit 3  a hang (watchdog)          killed by a signal: a crash (report on stderr)
 *   exit 4  a forked child crashed or hung
 *   exit 5  an oracle failed: a wrong result, or a sensitive key's bytes seen (oracles.c,
 *           exfiltration.c); each check has a name that --skip takes while its fix is pending
 *
 * --skip (or $P11FUZZ_SKIP) is a comma-separated list of call families (see --list) or
 * argument classes: "huge" (lengths and counts near 2^63 and 2^64-1: all of "huge-length",
 * "huge-count" for template counts, "huge-find" for C_FindObjects' ulMaxObjectCount),
 * "misaligned" (mechanism parameters at odd addresses). It keeps a known
 * crash out of the way while the rest is fuzzed. --only (or $P11FUZZ_ONLY) keeps just the
 * families it lists (argument classes are not affected). $P11FUZZ_ITERATIONS stops after that many
 * iterations: with the same seed, a run replays the same calls.
 *
 * Build (scripts/fuzz.sh does): clang -fsanitize=address -I Tests/include -I p11/include Tests/Fuzz/ *.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif

enum { EXIT_USAGE = 2, EXIT_HANG = 3, EXIT_CHILD = 4 }; /* 5: an oracle failed (checks.c) */

CK_FUNCTION_LIST *f2;
CK_FUNCTION_LIST_3_0 *f3;
int initialized;
int in_child;
unsigned long objects_created;

static const char *module_path;
static void *library;
uint64_t seed;
uint64_t iteration;
static unsigned hang_timeout = 30;
static int trace;
static char skip_list[512];
static char only_list[512];

/* ---------------------------------------------------------------- the current call */

enum { RING = 24, TEXT = 240 };
typedef struct {
    uint64_t iteration;
    char text[TEXT];
    CK_RV rv;
    int returned;
} record_t;
static record_t ring[RING];
static unsigned ring_next;
volatile int call_active;
static volatile unsigned current_slot;
static struct timespec call_started;
static unsigned long total_calls, ok_calls;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

CK_FUNCTION_LIST *fl(void) { return (f3 && percent(40)) ? (CK_FUNCTION_LIST *)f3 : f2; }

void begin_call(const char *function, const char *fmt, ...)
{
    unsigned slot = ring_next++ % RING;
    record_t *r = &ring[slot];
    r->iteration = iteration;
    r->returned = 0;
    int n = snprintf(r->text, TEXT, "%s%.*s(", in_child ? "[child] " : "", (int)strcspn(function, "("),
                     function);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < TEXT)
        n += vsnprintf(r->text + n, (size_t)(TEXT - n), fmt, ap);
    va_end(ap);
    if (n > 0 && n < TEXT - 1)
        snprintf(r->text + n, (size_t)(TEXT - n), ")");
    current_slot = slot;
    clock_gettime(CLOCK_MONOTONIC, &call_started);
    __atomic_store_n(&call_active, 1, __ATOMIC_SEQ_CST);
    if (trace) {
        fprintf(stderr, "%" PRIu64 ": %s", iteration, r->text);
        fflush(stderr);
    }
}

CK_RV end_call(CK_RV rv)
{
    __atomic_store_n(&call_active, 0, __ATOMIC_SEQ_CST);
    ring[current_slot].rv = rv;
    ring[current_slot].returned = 1;
    total_calls++;
    ok_calls += rv == CKR_OK;
    if (trace)
        fprintf(stderr, " = %s (0x%lx)\n", ckr_name(rv), (unsigned long)rv);
    return rv;
}

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

static int is_family(const char *name)
{
    for (size_t k = 0; k < family_count; k++)
        if (!strcmp(families[k].name, name))
            return 1;
    return 0;
}

int tracing(void) { return trace; }

int skipped(const char *name)
{
    if (listed(skip_list, name))
        return 1;
    return only_list[0] && is_family(name) && !listed(only_list, name);
}

/* Writes the run's coordinates and the last calls: enough to replay and to read. Only
   write(2) and snprintf into stack buffers: it runs in signal handlers. */
void report(const char *what)
{
    char line[512];
    int n = snprintf(line, sizeof line,
                     "\np11fuzz: %s: seed %" PRIu64 ", iteration %" PRIu64 "%s, in %s\n", what,
                     seed, iteration, in_child ? " (in a forked child)" : "",
                     call_active ? ring[current_slot].text : "no module call");
    if (n > 0)
        (void)!write(2, line, (size_t)n);
    (void)!write(2, "p11fuzz: last calls, oldest first:\n", 35);
    for (unsigned i = 0; i < RING; i++) {
        const record_t *r = &ring[(ring_next + i) % RING];
        if (!r->text[0])
            continue;
        if (r->returned)
            n = snprintf(line, sizeof line, "  %" PRIu64 ": %s = %s (0x%lx)\n", r->iteration,
                         r->text, ckr_name(r->rv), (unsigned long)r->rv);
        else
            n = snprintf(line, sizeof line, "  %" PRIu64 ": %s  <-- did not return\n",
                         r->iteration, r->text);
        if (n > 0)
            (void)!write(2, line, (size_t)n);
    }
    n = snprintf(line, sizeof line,
                 "p11fuzz: replay: P11FUZZ_ITERATIONS=%" PRIu64 " P11FUZZ_PENDING='' P11FUZZ_SKIP='%s'%s%s%s scripts/fuzz.sh 600 %" PRIu64 "\n",
                 iteration, skip_list, only_list[0] ? " P11FUZZ_ONLY='" : "", only_list, only_list[0] ? "'" : "", seed);
    if (n > 0)
        (void)!write(2, line, (size_t)n);
}

#ifdef FUZZ_ASAN
void __sanitizer_print_stack_trace(void) __attribute__((weak));
#endif

static void on_crash(int sig)
{
    char what[64];
    snprintf(what, sizeof what, "CRASH (signal %d, %s)", sig, strsignal(sig));
    report(what);
#ifdef FUZZ_ASAN
    /* After an AddressSanitizer report (abort_on_error=1) the stack is already printed. */
    if (sig != SIGABRT && __sanitizer_print_stack_trace)
        __sanitizer_print_stack_trace();
#else
    void *frames[64];
    int depth = backtrace(frames, 64);
    backtrace_symbols_fd(frames, depth, 2);
#endif
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_crash_handlers(void)
{
    static char stack[1 << 16];
    stack_t ss = { .ss_sp = stack, .ss_size = sizeof stack };
    sigaltstack(&ss, NULL);
    /* Under AddressSanitizer, SIGSEGV/SIGBUS/SIGFPE stay with its handler, which reports and
       then aborts: SIGABRT lands here. Swift traps are SIGILL (x86) or SIGTRAP (arm). */
    int signals[] = { SIGABRT, SIGILL, SIGTRAP,
#ifndef FUZZ_ASAN
                      SIGSEGV, SIGBUS, SIGFPE,
#endif
    };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_crash;
        sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
        sigaction(signals[i], &sa, NULL);
    }
}

/* The watchdog: a call that has not returned within hang_timeout is a hang. */
static void *watchdog(void *unused)
{
    (void)unused;
    for (;;) {
        usleep(200 * 1000);
        if (!__atomic_load_n(&call_active, __ATOMIC_SEQ_CST))
            continue;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double elapsed = (double)(t.tv_sec - call_started.tv_sec)
                         + (double)(t.tv_nsec - call_started.tv_nsec) / 1e9;
        if (elapsed > hang_timeout && __atomic_load_n(&call_active, __ATOMIC_SEQ_CST)) {
            char what[64];
            snprintf(what, sizeof what, "HANG (a call did not return in %u s)", hang_timeout);
            report(what);
            _exit(EXIT_HANG);
        }
    }
    return NULL;
}

/* In a forked child there is no watchdog thread: an alarm plays its part. */
static void on_child_alarm(int sig)
{
    (void)sig;
    report("HANG in a forked child (alarm)");
    _exit(EXIT_HANG);
}

/* ---------------------------------------------------------------- the module */

static void load_module(void)
{
    struct p11test_module m;
    char why[512];
    if (p11test_load(module_path, &m, why, sizeof why) != 0) {
        fprintf(stderr, "p11fuzz: %s\n", why);
        exit(EXIT_USAGE);
    }
    library = m.library;
    f2 = m.list;
    f3 = m.list3;
}

static CK_RV create_mutex(CK_VOID_PTR_PTR mutex)
{
    pthread_mutex_t *m = malloc(sizeof *m);
    if (!m)
        return CKR_HOST_MEMORY;
    pthread_mutex_init(m, NULL);
    *mutex = m;
    return CKR_OK;
}
static CK_RV destroy_mutex(CK_VOID_PTR m)
{
    pthread_mutex_destroy(m);
    free(m);
    return CKR_OK;
}
static CK_RV lock_mutex(CK_VOID_PTR m) { return pthread_mutex_lock(m) ? CKR_GENERAL_ERROR : CKR_OK; }
static CK_RV unlock_mutex(CK_VOID_PTR m) { return pthread_mutex_unlock(m) ? CKR_GENERAL_ERROR : CKR_OK; }

/* C_Initialize with NULL, with CKF_OS_LOCKING_OK, with working mutex callbacks (all four
   or some: the module must refuse a partial set), or with pReserved set. */
CK_RV do_initialize(int random_args)
{
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    CK_VOID_PTR p = &args;
    const char *form = "OS locking";
    args.flags = CKF_OS_LOCKING_OK;
    if (random_args) {
        unsigned r = (unsigned)below(100);
        if (r < 25) {
            p = NULL;
            form = "NULL";
        } else if (r < 40) {
            args.flags = 0;
            form = "no flags";
        } else if (r < 55) {
            args.CreateMutex = create_mutex;
            args.DestroyMutex = destroy_mutex;
            args.LockMutex = lock_mutex;
            args.UnlockMutex = unlock_mutex;
            args.flags = percent(50) ? CKF_OS_LOCKING_OK : 0;
            form = "mutex callbacks";
            if (percent(30)) {
                args.LockMutex = NULL;
                form = "three of four mutex callbacks";
            }
        } else if (r < 60) {
            args.pReserved = &args;
            form = "pReserved set";
        } else if (r < 65) {
            args.flags = rnd();
            form = "random flags";
        }
    }
    begin_call("C_Initialize", "%s", form);
    CK_RV rv = end_call(fl()->C_Initialize(p));
    if (rv == CKR_OK)
        login_wanted = 1;
    if (rv == CKR_OK || rv == CKR_CRYPTOKI_ALREADY_INITIALIZED)
        initialized = 1;
    return rv;
}

void forget_handles(void)
{
    for (int i = 0; i < live_sessions.n; i++)
        pool_add(&stale_sessions, live_sessions.v[i]);
    for (int i = 0; i < live_objects.n; i++)
        pool_add(&stale_objects, live_objects.v[i]);
    pool_clear(&live_sessions);
    pool_clear(&live_objects);
    /* Keys stay: a token object keeps its handle across C_Finalize (ARCHITECTURE.md §3.2); a session
       key's handle is now stale, which is worth trying too. */
}

/* C_Finalize, dlclose, dlopen, C_Initialize: the module must survive being unloaded. */
void do_reload(void)
{
    if (initialized) {
        begin_call("C_Finalize", "NULL, before dlclose");
        end_call(fl()->C_Finalize(NULL));
    }
    initialized = 0;
    forget_handles();
    begin_call("dlclose+dlopen", "%s", "module");
    dlclose(library);
    load_module();
    end_call(CKR_OK);
    do_initialize(1);
}

static const family_t *pick_family(int child)
{
    unsigned total = 0;
    for (size_t i = 0; i < family_count; i++)
        if ((!child || families[i].in_child) && !skipped(families[i].name))
            total += families[i].weight;
    uint64_t r = below(total);
    for (size_t i = 0; i < family_count; i++) {
        if ((child && !families[i].in_child) || skipped(families[i].name))
            continue;
        if (r < families[i].weight)
            return &families[i];
        r -= families[i].weight;
    }
    return NULL;
}

/* fork() with the module initialised (and maybe inside an operation): the child makes a few
   calls (its first without C_Initialize must fail cleanly) and _exits; the parent waits
   with a timeout. Both live on: neither may crash or hang. */
void do_fork(void)
{
    fflush(NULL);
    begin_call("fork", "%s", "");
    pid_t pid = fork();
    if (pid < 0) {
        end_call(CKR_GENERAL_ERROR);
        return;
    }
    if (pid == 0) {
        in_child = 1;
        __atomic_store_n(&call_active, 0, __ATOMIC_SEQ_CST);
        signal(SIGALRM, on_child_alarm);
        alarm(hang_timeout);
        initialized = 0; /* as the spec has it for a child: C_Initialize again */
        int calls = 2 + (int)below(8);
        for (int i = 0; i < calls; i++) {
            if (!initialized && percent(60)) {
                /* A fresh start: the parent's sessions are not the child's (v2.40 §6.7.7). */
                if (do_initialize(percent(30)) == CKR_OK && percent(80)) {
                    CK_SESSION_HANDLE s = open_session(0, CKF_SERIAL_SESSION | CKF_RW_SESSION);
                    if (s && percent(30)) {
                        begin_call("C_Login", "0x%lx, USER, the user PIN", (unsigned long)s);
                        end_call(fl()->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin)));
                    }
                }
            } else {
                const family_t *f = pick_family(1);
                if (f)
                    f->run();
            }
            scratch_release();
        }
        if (initialized && percent(50)) {
            begin_call("C_Finalize", "NULL");
            end_call(fl()->C_Finalize(NULL));
        }
        _exit(0);
    }
    end_call(CKR_OK);
    int status = 0;
    double deadline = now() + hang_timeout + 15;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            break;
        if (got < 0 && errno != EINTR)
            return;
        if (now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            report("HANG: a forked child did not finish; killed");
            exit(EXIT_CHILD);
        }
        usleep(2000);
    }
    if (WIFSIGNALED(status)) {
        char what[96];
        snprintf(what, sizeof what, "a forked child was killed by signal %d (%s); its report is above",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
        report(what);
        exit(EXIT_CHILD);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        char what[96];
        snprintf(what, sizeof what, "a forked child exited with %d; its report is above",
                 WEXITSTATUS(status));
        report(what);
        exit(EXIT_CHILD);
    }
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
    fprintf(stderr, "usage: p11fuzz --module PATH [--seed N] [--seconds S] [--iterations N] "
                    "[--certs DIR] [--skip LIST] [--only LIST] [--hang-timeout S] [--trace] | --list\n");
    exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
    double seconds = 60;
    uint64_t iterations = 0;
    const char *cert_dir = NULL;
    int have_seed = 0;
    const char *env_skip = getenv("P11FUZZ_SKIP");
    if (env_skip)
        snprintf(skip_list, sizeof skip_list, "%s", env_skip);
    const char *env_only = getenv("P11FUZZ_ONLY");
    if (env_only)
        snprintf(only_list, sizeof only_list, "%s", env_only);
    const char *env_iterations = getenv("P11FUZZ_ITERATIONS");
    if (env_iterations && *env_iterations)
        iterations = strtoull(env_iterations, NULL, 0);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--list")) {
            for (size_t k = 0; k < family_count; k++)
                printf("%s\n", families[k].name);
            printf("huge\nhuge-length\nhuge-count\nhuge-find\nmisaligned\n");
            for (size_t k = 0; oracle_checks[k]; k++)
                printf("%s\n", oracle_checks[k]);
            return 0;
        } else if (!strcmp(a, "--trace")) {
            trace = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--module")) module_path = v;
        else if (!strcmp(a, "--seed")) { seed = strtoull(v, NULL, 0); have_seed = 1; }
        else if (!strcmp(a, "--seconds")) seconds = strtod(v, NULL);
        else if (!strcmp(a, "--iterations")) iterations = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--certs")) cert_dir = v;
        else if (!strcmp(a, "--hang-timeout")) hang_timeout = (unsigned)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--skip")) {
            size_t used = strlen(skip_list);
            snprintf(skip_list + used, sizeof skip_list - used, "%s%s", used ? "," : "", v);
        } else if (!strcmp(a, "--only")) {
            size_t used = strlen(only_list);
            snprintf(only_list + used, sizeof only_list - used, "%s%s", used ? "," : "", v);
        } else
            usage();
    }
    if (!module_path)
        usage();
    if (!have_seed)
        seed = (uint64_t)time(NULL);
    int certs = cert_dir ? load_certificates(cert_dir) : 0;
    printf("p11fuzz: seed %" PRIu64 ", %.0f s%s, %d certificate(s), skip '%s'%s%s, module %s\n", seed,
           seconds, iterations ? " (or the iteration limit)" : "", certs, skip_list,
           only_list[0] ? ", only " : "", only_list, module_path);
    if (iterations)
        printf("p11fuzz: stopping after iteration %" PRIu64 "\n", iterations);
    fflush(stdout);

    rng_seed(seed);
    install_crash_handlers();
    pthread_t dog;
    if (pthread_create(&dog, NULL, watchdog, NULL) != 0) {
        perror("p11fuzz: watchdog thread");
        return EXIT_USAGE;
    }
    load_module();
    double start = now(), deadline = start + seconds;
    unsigned long runs[64] = { 0 };
    do_initialize(0);
    setup_token();
    scratch_release();
    oracle_setup();
    scratch_release();
    while (!(iterations && iteration >= iterations)) {
        if (now() >= deadline)
            break;
        iteration++;
        /* Each iteration draws from its own stream: what the module returned earlier (which
           may vary, e.g. with SQLite's busy waits) cannot shift the calls of later ones. */
        rng_seed(seed ^ (iteration * 0x9e3779b97f4a7c15ULL));
        if (!initialized && percent(30)) {
            do_initialize(1);
        } else {
            const family_t *f = pick_family(0);
            if (!f)
                break;
            f->run();
            runs[f - families]++;
        }
        scratch_release();
        /* Early and then now and then: a CI run of 60 s sees a few sweeps, a long run is not
           slowed down by them (each reads every object five times). */
        if ((iteration <= 5 * SWEEP_EARLY ? iteration % SWEEP_EARLY == 0 : iteration % SWEEP_EVERY == 0)
            && !skipped("exfiltration")) {
            exfiltration_sweep("during the run");
            scratch_release();
        }
    }
    if (!skipped("exfiltration")) {
        exfiltration_sweep("at the end");
        scratch_release();
    }
    if (initialized) {
        begin_call("C_Finalize", "NULL, at the end");
        end_call(fl()->C_Finalize(NULL));
    }
    double elapsed = now() - start;
    printf("p11fuzz: seed %" PRIu64 ": %" PRIu64 " iterations, %lu calls (%lu CKR_OK) in %.1f s; "
           "0 crashes, 0 hangs\n", seed, iteration, total_calls, ok_calls, elapsed);
    printf("p11fuzz: runs per family:");
    for (size_t k = 0; k < family_count; k++)
        printf(" %s=%lu", families[k].name, runs[k]);
    printf("\n");
    oracle_summary();
    checks_summary();
    return 0;
}
