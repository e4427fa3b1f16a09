/*
 * p11items: Apple keychain items through a PKCS#11 module's vendor attributes
 * (p11/include/p11keychain.h, README "Apple keychain attributes on Linux"), as
 * any PKCS#11 application following that header would see and make them.
 *
 *   p11items MODULE PIN generic SERVICE ACCOUNT SECRET   store a generic password
 *   p11items MODULE PIN internet SERVER ACCOUNT SECRET   store an internet password
 *   p11items MODULE PIN show LABEL                       print its attributes
 *   p11items MODULE PIN set-date LABEL                   try to set its creation date
 *
 * Both items carry access group "group.example", synchronizable TRUE and
 * accessible "cku"; the internet password protocol "htps", port 443, path
 * "/login", authentication type "form", security domain "realm"; an ACCOUNT
 * starting with "protected" gets access control P11K_ACCESS_CONTROL_USER_PRESENCE.
 * `show` prints one line per attribute, NAME=VALUE (text, a number, TRUE/FALSE,
 * "sensitive" or "absent"). `set-date` prints rv=0xHEX.
 * The user logs in with PIN on the first slot's token.
 * Exit status: 0 ok, 1 a call failed, 2 usage or loading error.
 *
 * Build: gcc -O2 -Wall -Wextra -I<repo>/Tests/include -I<repo>/p11/include -o p11items p11items.c -ldl
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p11test.h"

static CK_FUNCTION_LIST_PTR p11;
static CK_SESSION_HANDLE session;

static int failed(const char *name, CK_RV rv)
{
    printf("failed %s rv=0x%lx\n", name, (unsigned long)rv);
    return 1;
}

static CK_ATTRIBUTE text(CK_ATTRIBUTE_TYPE type, const char *value)
{
    CK_ATTRIBUTE attribute = {type, (void *)value, strlen(value)};
    return attribute;
}

static int create(int internet, const char *service, const char *account, const char *secret)
{
    CK_OBJECT_CLASS data = CKO_DATA;
    CK_BBOOL yes = CK_TRUE;
    CK_ULONG port = 443, presence = P11K_ACCESS_CONTROL_USER_PRESENCE;
    CK_ATTRIBUTE template[20] = {
        {CKA_CLASS, &data, sizeof data},
        {CKA_TOKEN, &yes, sizeof yes},
        {CKA_PRIVATE, &yes, sizeof yes},
        text(CKA_LABEL, account),
        text(CKA_APPLICATION, service),
        text(CKA_P11K_ACCOUNT, account),
        text(CKA_VALUE, secret),
        text(CKA_P11K_ITEM_CLASS, internet ? "inet" : "genp"),
        text(CKA_P11K_ACCESS_GROUP, "group.example"),
        {CKA_P11K_SYNCHRONIZABLE, &yes, sizeof yes},
        text(CKA_P11K_ACCESSIBLE, "cku"),
    };
    CK_ULONG count = 11;
    if (internet) {
        template[count++] = text(CKA_P11K_PROTOCOL, "htps");
        template[count++] = (CK_ATTRIBUTE){CKA_P11K_PORT, &port, sizeof port};
        template[count++] = text(CKA_P11K_PATH, "/login");
        template[count++] = text(CKA_P11K_AUTHENTICATION_TYPE, "form");
        template[count++] = text(CKA_P11K_SECURITY_DOMAIN, "realm");
    }
    if (strncmp(account, "protected", 9) == 0) {
        template[count++] = (CK_ATTRIBUTE){CKA_P11K_ACCESS_CONTROL, &presence, sizeof presence};
    }
    CK_OBJECT_HANDLE object;
    CK_RV rv = p11->C_CreateObject(session, template, count, &object);
    if (rv != CKR_OK) return failed("C_CreateObject", rv);
    printf("ok\n");
    return 0;
}

static int find(const char *label, CK_OBJECT_HANDLE *object)
{
    CK_ATTRIBUTE template[] = {text(CKA_LABEL, label)};
    CK_ULONG count = 0;
    CK_RV rv = p11->C_FindObjectsInit(session, template, 1);
    if (rv != CKR_OK) return failed("C_FindObjectsInit", rv);
    rv = p11->C_FindObjects(session, object, 1, &count);
    p11->C_FindObjectsFinal(session);
    if (rv != CKR_OK) return failed("C_FindObjects", rv);
    if (count != 1) {
        printf("failed no object labelled %s\n", label);
        return 1;
    }
    return 0;
}

enum kind { TEXT, NUMBER, FLAG };
static const struct {
    const char *name;
    CK_ATTRIBUTE_TYPE type;
    enum kind kind;
} shown[] = {
    {"application", CKA_APPLICATION, TEXT},
    {"value", CKA_VALUE, TEXT},
    {"account", CKA_P11K_ACCOUNT, TEXT},
    {"item-class", CKA_P11K_ITEM_CLASS, TEXT},
    {"accessible", CKA_P11K_ACCESSIBLE, TEXT},
    {"access-group", CKA_P11K_ACCESS_GROUP, TEXT},
    {"synchronizable", CKA_P11K_SYNCHRONIZABLE, FLAG},
    {"creation-date", CKA_P11K_CREATION_DATE, NUMBER},
    {"modification-date", CKA_P11K_MODIFICATION_DATE, NUMBER},
    {"access-control", CKA_P11K_ACCESS_CONTROL, NUMBER},
    {"protocol", CKA_P11K_PROTOCOL, TEXT},
    {"port", CKA_P11K_PORT, NUMBER},
    {"path", CKA_P11K_PATH, TEXT},
    {"authentication-type", CKA_P11K_AUTHENTICATION_TYPE, TEXT},
    {"security-domain", CKA_P11K_SECURITY_DOMAIN, TEXT},
};

static int show(const char *label)
{
    CK_OBJECT_HANDLE object;
    if (find(label, &object) != 0) return 1;
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        unsigned char buffer[512];
        CK_ATTRIBUTE attribute = {shown[i].type, buffer, sizeof buffer};
        CK_RV rv = p11->C_GetAttributeValue(session, object, &attribute, 1);
        if (rv == CKR_ATTRIBUTE_SENSITIVE) {
            printf("%s=sensitive\n", shown[i].name);
        } else if (rv == CKR_ATTRIBUTE_TYPE_INVALID) {
            printf("%s=absent\n", shown[i].name);
        } else if (rv != CKR_OK) {
            return failed("C_GetAttributeValue", rv);
        } else if (shown[i].kind == NUMBER && attribute.ulValueLen == sizeof(CK_ULONG)) {
            CK_ULONG number;
            memcpy(&number, buffer, sizeof number);
            printf("%s=%lu\n", shown[i].name, (unsigned long)number);
        } else if (shown[i].kind == FLAG && attribute.ulValueLen == 1) {
            printf("%s=%s\n", shown[i].name, buffer[0] ? "TRUE" : "FALSE");
        } else {
            printf("%s=%.*s\n", shown[i].name, (int)attribute.ulValueLen, (const char *)buffer);
        }
    }
    return 0;
}

static int set_date(const char *label)
{
    CK_OBJECT_HANDLE object;
    if (find(label, &object) != 0) return 1;
    CK_ULONG date = 0;
    CK_ATTRIBUTE attribute = {CKA_P11K_CREATION_DATE, &date, sizeof date};
    printf("rv=0x%lx\n", (unsigned long)p11->C_SetAttributeValue(session, object, &attribute, 1));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: p11items MODULE PIN generic|internet|show|set-date ARGS...\n");
        return 2;
    }
    struct p11test_module module;
    char why[512];
    if (p11test_load(argv[1], &module, why, sizeof why) != 0) {
        fprintf(stderr, "p11items: %s\n", why);
        return 2;
    }
    p11 = module.list;
    CK_RV rv = p11->C_Initialize(NULL);
    if (rv != CKR_OK) return failed("C_Initialize", rv);
    CK_SLOT_ID slot;
    CK_ULONG slots = 1;
    rv = p11->C_GetSlotList(CK_TRUE, &slot, &slots);
    if (rv != CKR_OK || slots == 0) return failed("C_GetSlotList", rv);
    rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &session);
    if (rv != CKR_OK) return failed("C_OpenSession", rv);
    rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)argv[2], strlen(argv[2]));
    if (rv != CKR_OK) return failed("C_Login", rv);
    int status;
    if (strcmp(argv[3], "generic") == 0 && argc == 7) {
        status = create(0, argv[4], argv[5], argv[6]);
    } else if (strcmp(argv[3], "internet") == 0 && argc == 7) {
        status = create(1, argv[4], argv[5], argv[6]);
    } else if (strcmp(argv[3], "show") == 0) {
        status = show(argv[4]);
    } else if (strcmp(argv[3], "set-date") == 0) {
        status = set_date(argv[4]);
    } else {
        fprintf(stderr, "p11items: unknown command %s\n", argv[3]);
        status = 2;
    }
    p11->C_Finalize(NULL);
    return status;
}
