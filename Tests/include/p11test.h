/*
 * What every C program that drives a PKCS#11 module here needs, written once: loading the
 * module (dlopen, C_GetFunctionList, C_GetInterface "PKCS 11" 3.0), initializing it with the
 * OS's locking, finding a token by label, and the name of a CK_RV.
 *
 * Used by Tests/Integration/tools, Tests/Fuzz and bench. Header-only (static functions), so
 * each program's build line only adds the include paths:
 *
 *   gcc ... -I"$repo/Tests/include" -I"$repo/p11/include" tool.c -ldl
 */
#ifndef P11TEST_H
#define P11TEST_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "p11keychain.h"

/* The name of a CK_RV ("CKR_PIN_INCORRECT"), or "unknown CK_RV".
 *
 * Every CKR_* that p11-kit's pkcs11.h and p11keychain.h define, in the order of their values.
 * The list is the output of
 *   echo '#include "p11keychain.h"' | gcc -Ip11/include -dM -E -x c - | awk '$2 ~ /^CKR_/'
 * so a value added to either header is added here by running it again; the switch makes the
 * compiler refuse a name that does not exist or two names of one value. */
static inline const char *ckr_name(CK_RV rv)
{
    switch (rv) {
#define N(x) \
    case x: return #x
    N(CKR_OK); N(CKR_CANCEL); N(CKR_HOST_MEMORY); N(CKR_SLOT_ID_INVALID); N(CKR_GENERAL_ERROR);
    N(CKR_FUNCTION_FAILED); N(CKR_ARGUMENTS_BAD); N(CKR_NO_EVENT); N(CKR_NEED_TO_CREATE_THREADS);
    N(CKR_CANT_LOCK); N(CKR_ATTRIBUTE_READ_ONLY); N(CKR_ATTRIBUTE_SENSITIVE);
    N(CKR_ATTRIBUTE_TYPE_INVALID); N(CKR_ATTRIBUTE_VALUE_INVALID); N(CKR_ACTION_PROHIBITED);
    N(CKR_DATA_INVALID); N(CKR_DATA_LEN_RANGE); N(CKR_DEVICE_ERROR); N(CKR_DEVICE_MEMORY);
    N(CKR_DEVICE_REMOVED); N(CKR_ENCRYPTED_DATA_INVALID); N(CKR_ENCRYPTED_DATA_LEN_RANGE);
    N(CKR_FUNCTION_CANCELED); N(CKR_FUNCTION_NOT_PARALLEL); N(CKR_FUNCTION_NOT_SUPPORTED);
    N(CKR_KEY_HANDLE_INVALID); N(CKR_KEY_SIZE_RANGE); N(CKR_KEY_TYPE_INCONSISTENT);
    N(CKR_KEY_NOT_NEEDED); N(CKR_KEY_CHANGED); N(CKR_KEY_NEEDED); N(CKR_KEY_INDIGESTIBLE);
    N(CKR_KEY_FUNCTION_NOT_PERMITTED); N(CKR_KEY_NOT_WRAPPABLE); N(CKR_KEY_UNEXTRACTABLE);
    N(CKR_MECHANISM_INVALID); N(CKR_MECHANISM_PARAM_INVALID); N(CKR_OBJECT_HANDLE_INVALID);
    N(CKR_OPERATION_ACTIVE); N(CKR_OPERATION_NOT_INITIALIZED); N(CKR_PIN_INCORRECT);
    N(CKR_PIN_INVALID); N(CKR_PIN_LEN_RANGE); N(CKR_PIN_EXPIRED); N(CKR_PIN_LOCKED);
    N(CKR_SESSION_CLOSED); N(CKR_SESSION_COUNT); N(CKR_SESSION_HANDLE_INVALID);
    N(CKR_SESSION_PARALLEL_NOT_SUPPORTED); N(CKR_SESSION_READ_ONLY); N(CKR_SESSION_EXISTS);
    N(CKR_SESSION_READ_ONLY_EXISTS); N(CKR_SESSION_READ_WRITE_SO_EXISTS); N(CKR_SIGNATURE_INVALID);
    N(CKR_SIGNATURE_LEN_RANGE); N(CKR_TEMPLATE_INCOMPLETE); N(CKR_TEMPLATE_INCONSISTENT);
    N(CKR_TOKEN_NOT_PRESENT); N(CKR_TOKEN_NOT_RECOGNIZED); N(CKR_TOKEN_WRITE_PROTECTED);
    N(CKR_UNWRAPPING_KEY_HANDLE_INVALID); N(CKR_UNWRAPPING_KEY_SIZE_RANGE);
    N(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT); N(CKR_USER_ALREADY_LOGGED_IN);
    N(CKR_USER_NOT_LOGGED_IN); N(CKR_USER_PIN_NOT_INITIALIZED); N(CKR_USER_TYPE_INVALID);
    N(CKR_USER_ANOTHER_ALREADY_LOGGED_IN); N(CKR_USER_TOO_MANY_TYPES); N(CKR_WRAPPED_KEY_INVALID);
    N(CKR_WRAPPED_KEY_LEN_RANGE); N(CKR_WRAPPING_KEY_HANDLE_INVALID);
    N(CKR_WRAPPING_KEY_SIZE_RANGE); N(CKR_WRAPPING_KEY_TYPE_INCONSISTENT);
    N(CKR_RANDOM_SEED_NOT_SUPPORTED); N(CKR_RANDOM_NO_RNG); N(CKR_DOMAIN_PARAMS_INVALID);
    N(CKR_CURVE_NOT_SUPPORTED); N(CKR_BUFFER_TOO_SMALL); N(CKR_SAVED_STATE_INVALID);
    N(CKR_INFORMATION_SENSITIVE); N(CKR_STATE_UNSAVEABLE); N(CKR_CRYPTOKI_NOT_INITIALIZED);
    N(CKR_CRYPTOKI_ALREADY_INITIALIZED); N(CKR_MUTEX_BAD); N(CKR_MUTEX_NOT_LOCKED);
    N(CKR_NEW_PIN_MODE); N(CKR_NEXT_OTP); N(CKR_EXCEEDED_MAX_ITERATIONS);
    N(CKR_FIPS_SELF_TEST_FAILED); N(CKR_LIBRARY_LOAD_FAILED); N(CKR_PIN_TOO_WEAK);
    N(CKR_PUBLIC_KEY_INVALID); N(CKR_FUNCTION_REJECTED); N(CKR_OPERATION_CANCEL_FAILED);
    N(CKR_VENDOR_DEFINED);
#undef N
    default: return "unknown CK_RV";
    }
}

/* A loaded module: its dlopen handle, its v2.40 function list, and its v3.0 list when it
 * offers the "PKCS 11" 3.0 interface (NULL otherwise). */
struct p11test_module {
    void *library;
    CK_FUNCTION_LIST *list;
    CK_FUNCTION_LIST_3_0 *list3;
};

/* Loads the module at path as every host does (dlopen, then C_GetFunctionList; C_GetInterface
 * for the 3.0 list). Returns 0, or -1 with why (up to why_len bytes) saying what failed. */
static inline int p11test_load(const char *path, struct p11test_module *m, char *why,
                               size_t why_len)
{
    memset(m, 0, sizeof *m);
    m->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->library) {
        snprintf(why, why_len, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    CK_C_GetFunctionList get_list = (CK_C_GetFunctionList)dlsym(m->library, "C_GetFunctionList");
    if (!get_list) {
        snprintf(why, why_len, "%s exports no C_GetFunctionList", path);
        return -1;
    }
    CK_RV rv = get_list(&m->list);
    if (rv != CKR_OK || !m->list) {
        snprintf(why, why_len, "C_GetFunctionList returned %s (0x%lx)", ckr_name(rv),
                 (unsigned long)rv);
        return -1;
    }
    CK_C_GetInterface get_interface = (CK_C_GetInterface)dlsym(m->library, "C_GetInterface");
    CK_INTERFACE *interface = NULL;
    CK_VERSION v3 = { 3, 0 };
    if (get_interface && get_interface((CK_UTF8CHAR_PTR) "PKCS 11", &v3, &interface, 0) == CKR_OK
        && interface)
        m->list3 = interface->pFunctionList;
    return 0;
}

/* C_Initialize with no mutex callbacks: the module may use the OS's own locking. */
static inline CK_RV p11test_initialize(CK_FUNCTION_LIST *f)
{
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    return f->C_Initialize(&args);
}

/* The slot of the token labelled label (blank-padded in CK_TOKEN_INFO), or of the first slot
 * with a token when label is NULL. Returns CKR_OK, what C_GetSlotList returned, or
 * CKR_TOKEN_NOT_PRESENT when no token matches; *slots_seen counts the slots looked at. */
static inline CK_RV p11test_find_token(CK_FUNCTION_LIST *f, const char *label, CK_SLOT_ID *slot,
                                       CK_ULONG *slots_seen)
{
    CK_SLOT_ID slots[64];
    CK_ULONG n = 64;
    CK_RV rv = f->C_GetSlotList(CK_TRUE, slots, &n);
    if (slots_seen)
        *slots_seen = rv == CKR_OK ? n : 0;
    if (rv != CKR_OK)
        return rv;
    for (CK_ULONG i = 0; i < n; i++) {
        CK_TOKEN_INFO info;
        if (label && f->C_GetTokenInfo(slots[i], &info) != CKR_OK)
            continue;
        size_t len = sizeof info.label;
        while (label && len > 0 && (info.label[len - 1] == ' ' || info.label[len - 1] == '\0'))
            len--;
        if (!label || (len == strlen(label) && memcmp(info.label, label, len) == 0)) {
            *slot = slots[i];
            return CKR_OK;
        }
    }
    return CKR_TOKEN_NOT_PRESENT;
}

#endif
