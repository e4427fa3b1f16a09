/*
 * p11sweep: reads every object of a token and uses every key pair, in one process, so that a
 * test can say "every object is readable" of thousands (test_postgresql_kill.sh).
 *
 *   P11KEYCHAIN_MODULE=... P11DRIVE_TOKEN=LABEL P11DRIVE_PIN=PIN p11sweep
 *
 * Logs in, finds every object, reads its class, label and ID (and a certificate's value);
 * each EC or RSA private key signs 32 bytes and the public key of the same label verifies the
 * signature. Prints "cert LABEL" and "key LABEL" for each certificate read and each key pair
 * that signed and verified, then "read N objects: C certificates, K key pairs signed and
 * verified, F failures". Exit status 0 when nothing failed, 1 otherwise, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p11test.h"

static CK_FUNCTION_LIST *p11;
static CK_SESSION_HANDLE session;
static long failures;

static void die(const char *what, CK_RV rv)
{
    fprintf(stderr, "p11sweep: %s returned %s (0x%lx)\n", what, ckr_name(rv), (unsigned long)rv);
    exit(1);
}

/* One attribute's value into buf (NUL-terminated when it fits); its length, or -1. */
static long attribute(CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type, void *buf, CK_ULONG size)
{
    CK_ATTRIBUTE a = { type, buf, size - 1 };
    if (p11->C_GetAttributeValue(session, object, &a, 1) != CKR_OK || a.ulValueLen == (CK_ULONG)-1)
        return -1;
    ((char *)buf)[a.ulValueLen] = '\0';
    return (long)a.ulValueLen;
}

/* The first object of class cls labelled label, or 0. */
static CK_OBJECT_HANDLE find(CK_OBJECT_CLASS cls, const char *label)
{
    CK_ATTRIBUTE t[] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_LABEL, (void *)label, strlen(label) } };
    CK_OBJECT_HANDLE h = 0;
    CK_ULONG n = 0;
    if (p11->C_FindObjectsInit(session, t, 2) != CKR_OK)
        return 0;
    p11->C_FindObjects(session, &h, 1, &n);
    p11->C_FindObjectsFinal(session);
    return n == 1 ? h : 0;
}

/* Signs with the private key and verifies with the public key of its label; 0 on success. */
static int sign_and_verify(CK_OBJECT_HANDLE key, const char *label)
{
    CK_KEY_TYPE type;
    if (attribute(key, CKA_KEY_TYPE, &type, sizeof type + 1) != sizeof type)
        return -1;
    CK_MECHANISM m = { type == CKK_EC ? CKM_ECDSA : CKM_RSA_PKCS, NULL, 0 };
    if (type != CKK_EC && type != CKK_RSA)
        return 0; /* read, nothing to sign with here */
    CK_BYTE data[32], sig[1024];
    CK_ULONG len = sizeof sig;
    memset(data, 0x5a, sizeof data);
    CK_RV rv = p11->C_SignInit(session, &m, key);
    if (rv == CKR_OK)
        rv = p11->C_Sign(session, data, sizeof data, sig, &len);
    if (rv != CKR_OK) {
        printf("sign %s: %s\n", label, ckr_name(rv));
        return -1;
    }
    CK_OBJECT_HANDLE pub = find(CKO_PUBLIC_KEY, label);
    if (!pub) {
        printf("sign %s: no public key of that label\n", label);
        return -1;
    }
    rv = p11->C_VerifyInit(session, &m, pub);
    if (rv == CKR_OK)
        rv = p11->C_Verify(session, data, sizeof data, sig, len);
    if (rv != CKR_OK) {
        printf("verify %s: %s\n", label, ckr_name(rv));
        return -1;
    }
    return 1;
}

int main(void)
{
    const char *path = getenv("P11KEYCHAIN_MODULE"), *token = getenv("P11DRIVE_TOKEN");
    const char *pin = getenv("P11DRIVE_PIN");
    if (!path || !token || !pin) {
        fprintf(stderr, "usage: P11KEYCHAIN_MODULE=... P11DRIVE_TOKEN=LABEL P11DRIVE_PIN=PIN p11sweep\n");
        return 2;
    }
    struct p11test_module module;
    char why[512];
    if (p11test_load(path, &module, why, sizeof why) != 0) {
        fprintf(stderr, "p11sweep: %s\n", why);
        return 2;
    }
    p11 = module.list;
    CK_RV rv = p11test_initialize(p11);
    if (rv != CKR_OK)
        die("C_Initialize", rv);
    CK_SLOT_ID slot;
    if ((rv = p11test_find_token(p11, token, &slot, NULL)) != CKR_OK)
        die("finding the token", rv);
    if ((rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, &session)) != CKR_OK)
        die("C_OpenSession", rv);
    if ((rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin))) != CKR_OK)
        die("C_Login", rv);

    if ((rv = p11->C_FindObjectsInit(session, NULL, 0)) != CKR_OK)
        die("C_FindObjectsInit", rv);
    CK_ULONG capacity = 1024, count = 0, n = 0;
    CK_OBJECT_HANDLE *all = malloc(capacity * sizeof *all);
    do {
        if (count + 256 > capacity) {
            capacity *= 2;
            all = realloc(all, capacity * sizeof *all);
        }
        if (!all || (rv = p11->C_FindObjects(session, all + count, 256, &n)) != CKR_OK)
            die("C_FindObjects", all ? rv : CKR_HOST_MEMORY);
        count += n;
    } while (n > 0);
    p11->C_FindObjectsFinal(session);

    long certs = 0, pairs = 0;
    static unsigned char value[65536];
    for (CK_ULONG i = 0; i < count; i++) {
        CK_OBJECT_CLASS cls;
        char label[256], id[256];
        if (attribute(all[i], CKA_CLASS, &cls, sizeof cls + 1) != sizeof cls
            || attribute(all[i], CKA_LABEL, label, sizeof label) < 0
            || attribute(all[i], CKA_ID, id, sizeof id) < 0) {
            printf("object %lu: its class, label or ID cannot be read\n", (unsigned long)all[i]);
            failures++;
            continue;
        }
        if (cls == CKO_CERTIFICATE) {
            if (attribute(all[i], CKA_VALUE, value, sizeof value) <= 0) {
                printf("cert %s: its value cannot be read\n", label);
                failures++;
                continue;
            }
            printf("cert %s\n", label);
            certs++;
        } else if (cls == CKO_PRIVATE_KEY) {
            int signed_ok = sign_and_verify(all[i], label);
            if (signed_ok < 0)
                failures++;
            else if (signed_ok > 0) {
                printf("key %s\n", label);
                pairs++;
            }
        }
    }
    printf("read %lu objects: %ld certificates, %ld key pairs signed and verified, %ld failures\n",
           (unsigned long)count, certs, pairs, failures);
    free(all);
    p11->C_Logout(session);
    p11->C_CloseSession(session);
    p11->C_Finalize(NULL);
    return failures ? 1 : 0;
}
