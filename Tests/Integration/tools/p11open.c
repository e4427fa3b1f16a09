/*
 * p11open: opens the first slot's token of a PKCS#11 module and reports what
 * it got; a process for tests that need many hosts to open a store at one
 * moment, or a host with an unusual identity (a setuid copy).
 *
 *   p11open MODULE [START_NS]
 *
 * Waits until CLOCK_REALTIME reaches START_NS (nanoseconds since 1970), if
 * given, so that processes started one after another call C_Initialize at
 * the same moment; then C_Initialize, C_GetSlotList, C_OpenSession (R/W,
 * falling back to R/O on CKR_TOKEN_WRITE_PROTECTED), C_GetTokenInfo and
 * C_Finalize. Prints one line:
 *
 *   ok serial=SERIAL
 *   failed C_NAME rv=0xHEX
 *
 * Exit status: 0 ok, 1 a call failed, 2 usage or loading error.
 *
 * Build: gcc -O2 -Wall -Wextra -ITests/include -Ip11/include -o p11open p11open.c -ldl
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p11test.h"

static int failed(const char *name, CK_RV rv)
{
    printf("failed %s rv=0x%lx\n", name, (unsigned long)rv);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: p11open MODULE [START_NS]\n");
        return 2;
    }
    struct p11test_module module;
    char why[512];
    if (p11test_load(argv[1], &module, why, sizeof why) != 0) {
        fprintf(stderr, "p11open: %s\n", why);
        return 2;
    }
    CK_FUNCTION_LIST_PTR f = module.list;
    if (argc == 3) {
        long long start = atoll(argv[2]);
        struct timespec at = { .tv_sec = start / 1000000000LL, .tv_nsec = start % 1000000000LL };
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) != 0) {
        }
    }
    CK_RV rv = f->C_Initialize(NULL);
    if (rv != CKR_OK)
        return failed("C_Initialize", rv);
    CK_SLOT_ID slots[8];
    CK_ULONG count = 8;
    rv = f->C_GetSlotList(CK_FALSE, slots, &count);
    if (rv != CKR_OK || count == 0)
        return failed("C_GetSlotList", rv);
    CK_SESSION_HANDLE session;
    rv = f->C_OpenSession(slots[0], CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session);
    if (rv == CKR_TOKEN_WRITE_PROTECTED)
        rv = f->C_OpenSession(slots[0], CKF_SERIAL_SESSION, NULL, NULL, &session);
    if (rv != CKR_OK)
        return failed("C_OpenSession", rv);
    CK_TOKEN_INFO info;
    rv = f->C_GetTokenInfo(slots[0], &info);
    if (rv != CKR_OK)
        return failed("C_GetTokenInfo", rv);
    printf("ok serial=%.16s\n", (const char *)info.serialNumber);
    f->C_Finalize(NULL);
    return 0;
}
