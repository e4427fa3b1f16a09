/*
 * evp_timer: the wall-clock time a process spends inside OpenSSL's EVP_PKEY_sign, measured
 * from within that process (LD_PRELOAD). bench/split.sh loads it into `openssl speed` and
 * into bench/p11sign, so that the module's own share of a signature is read in the very
 * process and seconds that made it, where a rate ratio pairs two processes run one after the
 * other on a shared machine.
 *
 *   LD_PRELOAD=bench/build/evp_timer.so EVP_TIMER_OUT=FILE COMMAND...
 *
 * Every EVP_PKEY_sign that writes a signature (not a length query) is timed with
 * CLOCK_MONOTONIC (the vDSO's, no system call). At exit the process writes one line to
 * FILE (appended; standard error without EVP_TIMER_OUT):
 *
 *   evp_sign_us=41.382 evp_sign_calls=69280
 *
 * Nothing is written when fewer than 100 signatures were made. The real EVP_PKEY_sign is
 * found in the libcrypto already loaded (a PKCS#11 module brings it in with dlopen, after
 * this library), else in the libraries loaded after this one.
 *
 * Build: gcc -O2 -Wall -Wextra -shared -fPIC -o evp_timer.so bench/evp_timer.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*sign_function)(void *, unsigned char *, size_t *, const unsigned char *, size_t);

static sign_function real_sign;
static double seconds_inside;
static long calls;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static sign_function find_real_sign(void)
{
    void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD);
    void *symbol = dlsym(crypto ? crypto : RTLD_NEXT, "EVP_PKEY_sign");
    if (!symbol) {
        fprintf(stderr, "evp_timer: EVP_PKEY_sign not found\n");
        abort();
    }
    return (sign_function)symbol;
}

int EVP_PKEY_sign(void *context, unsigned char *signature, size_t *length, const unsigned char *input,
                  size_t input_length)
{
    if (!real_sign)
        real_sign = find_real_sign();
    if (!signature)
        return real_sign(context, signature, length, input, input_length);
    double start = now();
    int result = real_sign(context, signature, length, input, input_length);
    seconds_inside += now() - start;
    calls++;
    return result;
}

__attribute__((destructor)) static void report(void)
{
    if (calls < 100)
        return;
    const char *path = getenv("EVP_TIMER_OUT");
    FILE *out = path ? fopen(path, "a") : stderr;
    if (!out)
        return;
    fprintf(out, "evp_sign_us=%.3f evp_sign_calls=%ld\n", seconds_inside / (double)calls * 1e6, calls);
    if (out != stderr)
        fclose(out);
}
