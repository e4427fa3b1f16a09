/*
 * The module's function tables and interface entry points (PKCS#11 v2.40 §5.2 and v3.0
 * §5.2). The tables are const: a host can neither change them nor race on them.
 */
#include <string.h>

#include "p11keychain.h"

/* v3.0 message-based functions: not offered by this token (v3.0 §5.19–5.22 allow
   CKR_FUNCTION_NOT_SUPPORTED). One stub per signature. */
static CK_RV message_init(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k)
{ (void)s; (void)m; (void)k; return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV message_one_shot(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR a,
                              CK_ULONG al, CK_BYTE_PTR i, CK_ULONG il, CK_BYTE_PTR o,
                              CK_ULONG_PTR ol)
{ (void)s; (void)p; (void)pl; (void)a; (void)al; (void)i; (void)il; (void)o; (void)ol;
  return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV message_begin(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR a,
                           CK_ULONG al)
{ (void)s; (void)p; (void)pl; (void)a; (void)al; return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV message_next(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR i,
                          CK_ULONG il, CK_BYTE_PTR o, CK_ULONG_PTR ol, CK_FLAGS f)
{ (void)s; (void)p; (void)pl; (void)i; (void)il; (void)o; (void)ol; (void)f;
  return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV message_final(CK_SESSION_HANDLE s)
{ (void)s; return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV sign_message(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR d,
                          CK_ULONG dl, CK_BYTE_PTR sig, CK_ULONG_PTR sl)
{ (void)s; (void)p; (void)pl; (void)d; (void)dl; (void)sig; (void)sl;
  return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV sign_message_begin(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl)
{ (void)s; (void)p; (void)pl; return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV sign_message_next(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR d,
                               CK_ULONG dl, CK_BYTE_PTR sig, CK_ULONG_PTR sl)
{ (void)s; (void)p; (void)pl; (void)d; (void)dl; (void)sig; (void)sl;
  return CKR_FUNCTION_NOT_SUPPORTED; }
static CK_RV verify_message(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR d,
                            CK_ULONG dl, CK_BYTE_PTR sig, CK_ULONG sl)
{ (void)s; (void)p; (void)pl; (void)d; (void)dl; (void)sig; (void)sl;
  return CKR_FUNCTION_NOT_SUPPORTED; }

static CK_RV verify_message_next(CK_SESSION_HANDLE s, CK_VOID_PTR p, CK_ULONG pl, CK_BYTE_PTR d,
                                 CK_ULONG dl, CK_BYTE_PTR sig, CK_ULONG sl)
{ (void)s; (void)p; (void)pl; (void)d; (void)dl; (void)sig; (void)sl;
  return CKR_FUNCTION_NOT_SUPPORTED; }

#define P11K_FUNCTIONS_2_40 \
    C_Initialize, C_Finalize, C_GetInfo, C_GetFunctionList, C_GetSlotList, C_GetSlotInfo, \
    C_GetTokenInfo, C_GetMechanismList, C_GetMechanismInfo, C_InitToken, C_InitPIN, \
    C_SetPIN, C_OpenSession, C_CloseSession, C_CloseAllSessions, C_GetSessionInfo, \
    C_GetOperationState, C_SetOperationState, C_Login, C_Logout, C_CreateObject, \
    C_CopyObject, C_DestroyObject, C_GetObjectSize, C_GetAttributeValue, \
    C_SetAttributeValue, C_FindObjectsInit, C_FindObjects, C_FindObjectsFinal, \
    C_EncryptInit, C_Encrypt, C_EncryptUpdate, C_EncryptFinal, C_DecryptInit, C_Decrypt, \
    C_DecryptUpdate, C_DecryptFinal, C_DigestInit, C_Digest, C_DigestUpdate, C_DigestKey, \
    C_DigestFinal, C_SignInit, C_Sign, C_SignUpdate, C_SignFinal, C_SignRecoverInit, \
    C_SignRecover, C_VerifyInit, C_Verify, C_VerifyUpdate, C_VerifyFinal, \
    C_VerifyRecoverInit, C_VerifyRecover, C_DigestEncryptUpdate, C_DecryptDigestUpdate, \
    C_SignEncryptUpdate, C_DecryptVerifyUpdate, C_GenerateKey, C_GenerateKeyPair, \
    C_WrapKey, C_UnwrapKey, C_DeriveKey, C_SeedRandom, C_GenerateRandom, \
    C_GetFunctionStatus, C_CancelFunction, C_WaitForSlotEvent

static const CK_FUNCTION_LIST function_list_2_40 = {
    { 2, 40 },
    P11K_FUNCTIONS_2_40,
};

static const CK_FUNCTION_LIST_3_0 function_list_3_0 = {
    { 3, 0 },
    P11K_FUNCTIONS_2_40,
    C_GetInterfaceList, C_GetInterface, C_LoginUser, C_SessionCancel,
    message_init, message_one_shot, message_begin, message_next, message_final,
    message_init, message_one_shot, message_begin, message_next, message_final,
    message_init, sign_message, sign_message_begin, sign_message_next, message_final,
    message_init, verify_message, sign_message_begin, verify_message_next, message_final,
};

static CK_CHAR interface_name[] = "PKCS 11";

/* Newest first: a host that asks for "PKCS 11" with no version gets 3.0. */
static CK_INTERFACE interfaces[] = {
    { interface_name, (CK_VOID_PTR)&function_list_3_0, 0 },
    { interface_name, (CK_VOID_PTR)&function_list_2_40, 0 },
};
#define INTERFACE_COUNT (sizeof(interfaces) / sizeof(interfaces[0]))

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList)
{
    if (ppFunctionList == NULL)
        return CKR_ARGUMENTS_BAD;
    /* The spec types the out-parameter as non-const; hosts must not write through it. */
    *ppFunctionList = (CK_FUNCTION_LIST_PTR)&function_list_2_40;
    return CKR_OK;
}

CK_RV C_GetInterfaceList(CK_INTERFACE_PTR pInterfacesList, CK_ULONG_PTR pulCount)
{
    if (pulCount == NULL)
        return CKR_ARGUMENTS_BAD;
    if (pInterfacesList == NULL) {
        *pulCount = INTERFACE_COUNT;
        return CKR_OK;
    }
    if (*pulCount < INTERFACE_COUNT) {
        *pulCount = INTERFACE_COUNT;
        return CKR_BUFFER_TOO_SMALL;
    }
    memcpy(pInterfacesList, interfaces, sizeof(interfaces));
    *pulCount = INTERFACE_COUNT;
    return CKR_OK;
}

CK_RV C_GetInterface(CK_UTF8CHAR_PTR pInterfaceName, CK_VERSION_PTR pVersion,
                     CK_INTERFACE_PTR_PTR ppInterface, CK_FLAGS flags)
{
    if (ppInterface == NULL)
        return CKR_ARGUMENTS_BAD;
    for (size_t i = 0; i < INTERFACE_COUNT; i++) {
        const CK_INTERFACE *candidate = &interfaces[i];
        const CK_VERSION *version = (const CK_VERSION *)candidate->pFunctionList;
        if (pInterfaceName != NULL
            && strcmp((const char *)pInterfaceName, (const char *)candidate->pInterfaceName) != 0)
            continue;
        if (pVersion != NULL
            && (pVersion->major != version->major || pVersion->minor != version->minor))
            continue;
        if ((candidate->flags & flags) != flags)
            continue;
        *ppInterface = &interfaces[i];
        return CKR_OK;
    }
    return CKR_ARGUMENTS_BAD;
}
