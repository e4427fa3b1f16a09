/*
 * sign_timer: the wall-clock time a process spends inside the OpenSSL call that makes each
 * signature, measured from within that process (LD_PRELOAD). bench/split.sh loads it into
 * `openssl speed` and into bench/p11sign, so that the module's own share of a signature is
 * read in the very process and seconds that made it, where a rate ratio pairs two processes
 * run one after the other on a shared machine.
 *
 *   LD_PRELOAD=bench/build/sign_timer.so SIGN_TIMER_OUT=FILE COMMAND...
 *
 * The calls timed are EVP_PKEY_sign (openssl speed's; a length query, with no output buffer,
 * is not timed) and ECDSA_do_sign (the module's, which writes r ‖ s without DER), each with
 * CLOCK_MONOTONIC (the vDSO's, no system call). A call made from inside another timed call
 * counts as part of it. At exit the process writes one line to FILE (appended; standard error
 * without SIGN_TIMER_OUT), naming the functions that were called:
 *
 *   openssl_us=41.382 openssl_calls=69280 openssl_function=EVP_PKEY_sign
 *
 * Nothing is written when fewer than 100 signatures were made. Each real function is found
 * in the libcrypto already loaded (a PKCS#11 module brings it in with dlopen, after this
 * library), else in the libraries loaded after this one.
 *
 * Build: gcc -O2 -Wall -Wextra -shared -fPIC -o sign_timer.so bench/sign_timer.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*evp_sign_function)(void *, unsigned char *, size_t *, const unsigned char *, size_t);
typedef void *(*ecdsa_sign_function)(const unsigned char *, int, void *);

static double seconds_inside;
static long calls;
/* Outermost calls of each function. */
static long evp_calls, ecdsa_calls;
/* How deep the calling thread is in timed calls: only the outermost is timed. */
static __thread int depth;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *find_real(const char *name)
{
    void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD);
    void *symbol = dlsym(crypto ? crypto : RTLD_NEXT, name);
    if (!symbol) {
        fprintf(stderr, "sign_timer: %s not found\n", name);
        abort();
    }
    return symbol;
}

/* Starts a timed call: its start time, or 0 for a call inside another. */
static double enter(void)
{
    return depth++ == 0 ? now() : 0;
}

/* Ends a timed call begun at `start`, counted in `count` when it was the outermost. */
static void leave(double start, long *count)
{
    if (--depth == 0) {
        seconds_inside += now() - start;
        calls++;
        (*count)++;
    }
}

int EVP_PKEY_sign(void *context, unsigned char *signature, size_t *length, const unsigned char *input,
                  size_t input_length)
{
    static evp_sign_function real;
    if (!real)
        real = (evp_sign_function)find_real("EVP_PKEY_sign");
    if (!signature)
        return real(context, signature, length, input, input_length);
    double start = enter();
    int result = real(context, signature, length, input, input_length);
    leave(start, &evp_calls);
    return result;
}

void *ECDSA_do_sign(const unsigned char *digest, int length, void *key)
{
    static ecdsa_sign_function real;
    if (!real)
        real = (ecdsa_sign_function)find_real("ECDSA_do_sign");
    double start = enter();
    void *result = real(digest, length, key);
    leave(start, &ecdsa_calls);
    return result;
}

__attribute__((destructor)) static void report(void)
{
    if (calls < 100)
        return;
    const char *path = getenv("SIGN_TIMER_OUT");
    FILE *out = path ? fopen(path, "a") : stderr;
    if (!out)
        return;
    const char *function = evp_calls && ecdsa_calls ? "EVP_PKEY_sign+ECDSA_do_sign"
                           : evp_calls              ? "EVP_PKEY_sign"
                                                    : "ECDSA_do_sign";
    fprintf(out, "openssl_us=%.3f openssl_calls=%ld openssl_function=%s\n", seconds_inside / (double)calls * 1e6, calls,
            function);
    if (out != stderr)
        fclose(out);
}
