/*
 * The checks of p11fuzz's oracles: their names, and what a failed one does. A
 * failure is reported like a crash (seed, iteration, the last calls, the replay line) and
 * ends the run with exit status 5. A check named in --skip / $P11FUZZ_SKIP (a defect whose fix
 * is pending: scripts/fuzz.sh's P11FUZZ_PENDING) is counted instead, and its first failure
 * printed with the seed and iteration that replay it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

enum { EXIT_ORACLE = 5 };

const char *const oracle_checks[] = {
    "digest-parts", "cipher-roundtrip", "gcm-tamper", "rsa-short-ciphertext", "sign-verify",
    "verify-flipped", "eddsa-param-length", "wrong-key-type", "param-errors", "gcm-long-iv",
    "wrap-roundtrip", "wrap-kw-pad", "wrap-unextractable", "unwrap-tamper", "derive-agree",
    "derive-deterministic", "hkdf-data-private", "generate-usable", "montgomery-usage", "exfiltration", NULL,
};

static unsigned long skipped_findings;

void oracle_failed(const char *check, const char *fmt, ...)
{
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (skipped(check)) {
        static const char *printed[32];
        size_t k = 0;
        while (k < 32 && printed[k] && strcmp(printed[k], check))
            k++;
        skipped_findings++;
        if ((k < 32 && !printed[k] && (printed[k] = check)) || tracing())
            fprintf(stderr, "p11fuzz: skipped check %s failed (seed %" PRIu64 ", iteration %" PRIu64 "): %s\n",
                    check, seed, iteration, text);
        return;
    }
    char what[512];
    snprintf(what, sizeof what, "ORACLE FAILURE [%s] %s", check, text);
    int was_active = call_active;
    call_active = 0; /* the report names no call in flight: the last calls show what led here */
    report(what);
    call_active = was_active;
    exit(EXIT_ORACLE);
}

void checks_summary(void)
{
    if (skipped_findings)
        printf("p11fuzz: %lu failure(s) of skipped checks (P11FUZZ_SKIP)\n", skipped_findings);
}
