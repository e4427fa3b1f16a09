/*
 * The C face of p11keychain: the PKCS#11 v2.40 header from p11-kit plus the v3.0 additions
 * it lacks (p11-kit 0.24 ships 2.40 only).
 *
 * Every C_* function of the v2.40 list, and C_LoginUser / C_SessionCancel of v3.0, is
 * implemented in Swift (Sources/PKCS11Token) with `@c @implementation`, so the compiler
 * checks each Swift signature against the prototype declared here or in pkcs11.h.
 * p11/functions.c holds the immutable function tables and the interface entry points.
 */
#ifndef P11KEYCHAIN_H
#define P11KEYCHAIN_H

#include <p11-kit-1/p11-kit/pkcs11.h>
#include <pthread.h>

/* The module's process-wide locks, statically initialised (p11/locks.c): the call gate that
 * keeps fork() out while a call runs, and the session table's lock. Swift reaches them only
 * through these functions, inlined into it. Only a forked child re-creates them, unlocked,
 * with p11k_reinitialize_locks_after_fork. */
extern pthread_rwlock_t p11k_call_gate;
extern pthread_mutex_t p11k_session_table_lock;
void p11k_reinitialize_locks_after_fork(void);

static inline void p11k_enter_call(void) { pthread_rwlock_rdlock(&p11k_call_gate); }
static inline void p11k_leave_call(void) { pthread_rwlock_unlock(&p11k_call_gate); }
static inline void p11k_close_call_gate(void) { pthread_rwlock_wrlock(&p11k_call_gate); }
static inline void p11k_reopen_call_gate(void) { pthread_rwlock_unlock(&p11k_call_gate); }
static inline void p11k_lock_session_table(void) { pthread_mutex_lock(&p11k_session_table_lock); }
static inline void p11k_unlock_session_table(void) { pthread_mutex_unlock(&p11k_session_table_lock); }

/* ---- PKCS#11 v3.0 constants missing from p11-kit's 2.40 header ---- */
#ifndef CKA_UNIQUE_ID
#define CKA_UNIQUE_ID 0x00000004UL
#endif
#ifndef CKF_INTERFACE_FORK_SAFE
#define CKF_INTERFACE_FORK_SAFE 0x00000001UL
#endif
#ifndef CKR_OPERATION_CANCEL_FAILED
#define CKR_OPERATION_CANCEL_FAILED 0x00000202UL
#endif

/* Secret keys, wrapping and derivation (v3.0 §2.3.7, §2.14, §2.43, §4.10). */
#ifndef CKK_EC_MONTGOMERY
#define CKK_EC_MONTGOMERY 0x00000041UL
#endif
#ifndef CKK_SHA224_HMAC
#define CKK_SHA224_HMAC 0x0000002EUL
#endif
#ifndef CKM_EC_MONTGOMERY_KEY_PAIR_GEN
#define CKM_EC_MONTGOMERY_KEY_PAIR_GEN 0x00001056UL
#endif
#ifndef CKM_AES_KEY_WRAP_KWP
#define CKM_AES_KEY_WRAP_KWP 0x0000210BUL
#endif
#ifndef CKM_HKDF_DERIVE
#define CKM_HKDF_DERIVE 0x0000402AUL
#endif
#ifndef CKM_HKDF_DATA
#define CKM_HKDF_DATA 0x0000402BUL
#endif
#ifndef CKM_HKDF_KEY_GEN
#define CKM_HKDF_KEY_GEN 0x0000402CUL
#endif
#ifndef CKK_HKDF
#define CKK_HKDF 0x00000042UL
#endif
#ifndef CKF_HKDF_SALT_NULL
#define CKF_HKDF_SALT_NULL 0x00000001UL
#define CKF_HKDF_SALT_DATA 0x00000002UL
#define CKF_HKDF_SALT_KEY 0x00000004UL
#endif
#ifndef CKD_SHA224_KDF
#define CKD_SHA224_KDF 0x00000005UL
#define CKD_SHA256_KDF 0x00000006UL
#define CKD_SHA384_KDF 0x00000007UL
#define CKD_SHA512_KDF 0x00000008UL
#endif

/* Trust objects (docs/token.md "Trust"): views of the trust settings kept with each certificate.
 * PKCS#11 3.2 §4.15 CKO_TRUST, its attributes and CK_TRUST values. */
#ifndef CKO_TRUST
#define CKO_TRUST 0x0000000BUL
#endif
#ifndef CKA_TRUST_SERVER_AUTH
#define CKA_TRUST_SERVER_AUTH 0x0000062CUL
#define CKA_TRUST_CLIENT_AUTH 0x0000062DUL
#define CKA_TRUST_CODE_SIGNING 0x0000062EUL
#define CKA_TRUST_EMAIL_PROTECTION 0x0000062FUL
#define CKA_TRUST_IPSEC_IKE 0x00000630UL
#define CKA_TRUST_TIME_STAMPING 0x00000631UL
#define CKA_TRUST_OCSP_SIGNING 0x00000632UL
#endif
#ifndef CKA_HASH_OF_CERTIFICATE
#define CKA_HASH_OF_CERTIFICATE 0x00000635UL
#endif
#ifndef CKT_TRUST_UNKNOWN
#define CKT_TRUST_UNKNOWN 0x00000000UL
#define CKT_TRUSTED 0x00000001UL
#define CKT_TRUST_ANCHOR 0x00000002UL
#define CKT_NOT_TRUSTED 0x00000003UL
#define CKT_TRUST_MUST_VERIFY_TRUST 0x00000004UL
#endif
/* NSS's trust objects (NSS pkcs11n.h; the same values as p11-kit's pkcs11x.h, which spells
 * the 3.2 names above with NSS's values, so it is not included here). */
#ifndef CKO_NSS_TRUST
#define CKO_NSS_TRUST 0xCE534353UL
#define CKA_NSS_TRUST_SERVER_AUTH 0xCE536358UL
#define CKA_NSS_TRUST_CLIENT_AUTH 0xCE536359UL
#define CKA_NSS_TRUST_CODE_SIGNING 0xCE53635AUL
#define CKA_NSS_TRUST_EMAIL_PROTECTION 0xCE53635BUL
#define CKA_NSS_TRUST_STEP_UP_APPROVED 0xCE536360UL
#define CKA_NSS_CERT_SHA1_HASH 0xCE5363B4UL
#define CKA_NSS_CERT_MD5_HASH 0xCE5363B5UL
#define CKT_NSS_TRUSTED 0xCE534351UL
#define CKT_NSS_TRUSTED_DELEGATOR 0xCE534352UL
#define CKT_NSS_MUST_VERIFY_TRUST 0xCE534353UL
#define CKT_NSS_TRUST_UNKNOWN 0xCE534355UL
#define CKT_NSS_NOT_TRUSTED 0xCE53435AUL
#define CKT_NSS_VALID_DELEGATOR 0xCE53435BUL
#endif
/* p11-kit's stapled certificate extensions (read-only: purposes of a partial anchor) and
 * blocklist flag on certificates (pkcs11x.h CKO_X_VENDOR + 200, CKA_X_VENDOR + 100). */
#ifndef CKO_X_CERTIFICATE_EXTENSION
#define CKO_X_CERTIFICATE_EXTENSION 0xD84447C8UL
#endif
#ifndef CKA_X_DISTRUSTED
#define CKA_X_DISTRUSTED 0xD8444764UL
#endif

/* CK_HKDF_PARAMS (v3.0 §2.43.2). */
typedef struct CK_HKDF_PARAMS {
    CK_BBOOL bExtract;
    CK_BBOOL bExpand;
    CK_MECHANISM_TYPE prfHashMechanism;
    CK_ULONG ulSaltType;
    CK_BYTE_PTR pSalt;
    CK_ULONG ulSaltLen;
    CK_OBJECT_HANDLE hSaltKey;
    CK_BYTE_PTR pInfo;
    CK_ULONG ulInfoLen;
} CK_HKDF_PARAMS;

/* CK_EDDSA_PARAMS (v3.0 §2.3.14): CKM_EDDSA's optional parameter. */
typedef struct CK_EDDSA_PARAMS {
    CK_BBOOL phFlag;
    CK_ULONG ulContextDataLen;
    CK_BYTE_PTR pContextData;
} CK_EDDSA_PARAMS;

/* ---- p11keychain's vendor attributes (CKA_VENDOR_DEFINED | 0x504Bxx) ----
 * Apple keychain item attributes, so that every attribute the Security module stores is seen
 * and set through PKCS#11 (docs/swift-api.md "Apple keychain attributes on Linux"). Strings
 * are UTF-8 without a terminator, numbers CK_ULONG, flags CK_BBOOL.
 * A generic password is a private CKO_DATA object: CKA_APPLICATION = kSecAttrService,
 * CKA_P11K_ACCOUNT = kSecAttrAccount, CKA_VALUE = the secret, CKA_P11K_ITEM_CLASS = "genp"
 * (or absent). An internet password is the same with CKA_P11K_ITEM_CLASS = "inet" and
 * CKA_APPLICATION = kSecAttrServer. */
#define CKA_P11K_ACCOUNT 0x80504B10UL             /* kSecAttrAccount, UTF-8 */
#define CKA_P11K_APPLICATION_TAG 0x80504B11UL     /* kSecAttrApplicationTag of a key, bytes */
#define CKA_P11K_ITEM_CLASS 0x80504B20UL          /* "genp" or "inet", ASCII */
#define CKA_P11K_ACCESSIBLE 0x80504B21UL          /* kSecAttrAccessible: "ak" "ck" "dk" "aku" "cku" "dku" "akpu" */
#define CKA_P11K_ACCESS_GROUP 0x80504B22UL        /* kSecAttrAccessGroup, UTF-8 */
#define CKA_P11K_SYNCHRONIZABLE 0x80504B23UL      /* kSecAttrSynchronizable, CK_BBOOL; absent = FALSE */
#define CKA_P11K_CREATION_DATE 0x80504B24UL       /* kSecAttrCreationDate: CK_ULONG ms since 1970 UTC; read-only */
#define CKA_P11K_MODIFICATION_DATE 0x80504B25UL   /* kSecAttrModificationDate: as above, renewed on each change */
#define CKA_P11K_ACCESS_CONTROL 0x80504B26UL      /* kSecAttrAccessControl flags, CK_ULONG; set on create only */
#define CKA_P11K_GENERIC 0x80504B27UL             /* kSecAttrGeneric, bytes */
#define CKA_P11K_COMMENT 0x80504B28UL             /* kSecAttrComment, UTF-8 */
#define CKA_P11K_DESCRIPTION 0x80504B29UL         /* kSecAttrDescription, UTF-8 */
#define CKA_P11K_CREATOR 0x80504B2AUL             /* kSecAttrCreator, FourCharCode as CK_ULONG */
#define CKA_P11K_TYPE 0x80504B2BUL                /* kSecAttrType, FourCharCode as CK_ULONG */
#define CKA_P11K_IS_INVISIBLE 0x80504B2CUL        /* kSecAttrIsInvisible, CK_BBOOL */
#define CKA_P11K_IS_NEGATIVE 0x80504B2DUL         /* kSecAttrIsNegative, CK_BBOOL */
#define CKA_P11K_PROTOCOL 0x80504B2EUL            /* kSecAttrProtocol, four ASCII letters ("htps") */
#define CKA_P11K_PORT 0x80504B2FUL                /* kSecAttrPort, CK_ULONG */
#define CKA_P11K_PATH 0x80504B30UL                /* kSecAttrPath, UTF-8 */
#define CKA_P11K_AUTHENTICATION_TYPE 0x80504B31UL /* kSecAttrAuthenticationType, four ASCII letters ("dflt") */
#define CKA_P11K_SECURITY_DOMAIN 0x80504B32UL     /* kSecAttrSecurityDomain, UTF-8 */
#define CKA_P11K_VALUE_TYPES 0x80504B33UL         /* which attributes were given as CFData/CFString other than usual:
                                                    * per entry a CK_ULONG type and one byte (0 text, 1 data) */
/* Access control flags that make reading a password's CKA_VALUE need the PIN each time:
 * through PKCS#11 such a value reads as CKR_ATTRIBUTE_SENSITIVE; a private key with them has
 * CKA_ALWAYS_AUTHENTICATE = TRUE. */
#define P11K_ACCESS_CONTROL_USER_PRESENCE 0x00000001UL
#define P11K_ACCESS_CONTROL_DEVICE_PASSCODE 0x00000010UL
#define P11K_ACCESS_CONTROL_APPLICATION_PASSWORD 0x80000000UL

/* ---- PKCS#11 v3.0 interface types ---- */
typedef struct CK_INTERFACE {
    CK_CHAR *pInterfaceName;
    CK_VOID_PTR pFunctionList;
    CK_FLAGS flags;
} CK_INTERFACE;
typedef CK_INTERFACE *CK_INTERFACE_PTR;
typedef CK_INTERFACE_PTR *CK_INTERFACE_PTR_PTR;

CK_RV C_GetInterfaceList(CK_INTERFACE_PTR pInterfacesList, CK_ULONG_PTR pulCount);
CK_RV C_GetInterface(CK_UTF8CHAR_PTR pInterfaceName, CK_VERSION_PTR pVersion,
                     CK_INTERFACE_PTR_PTR ppInterface, CK_FLAGS flags);
CK_RV C_LoginUser(CK_SESSION_HANDLE hSession, CK_USER_TYPE userType, CK_UTF8CHAR_PTR pPin,
                  CK_ULONG ulPinLen, CK_UTF8CHAR_PTR pUsername, CK_ULONG ulUsernameLen);
CK_RV C_SessionCancel(CK_SESSION_HANDLE hSession, CK_FLAGS flags);

typedef CK_RV (*CK_C_GetInterfaceList)(CK_INTERFACE_PTR, CK_ULONG_PTR);
typedef CK_RV (*CK_C_GetInterface)(CK_UTF8CHAR_PTR, CK_VERSION_PTR, CK_INTERFACE_PTR_PTR, CK_FLAGS);
typedef CK_RV (*CK_C_LoginUser)(CK_SESSION_HANDLE, CK_USER_TYPE, CK_UTF8CHAR_PTR, CK_ULONG,
                                CK_UTF8CHAR_PTR, CK_ULONG);
typedef CK_RV (*CK_C_SessionCancel)(CK_SESSION_HANDLE, CK_FLAGS);
/* Message-based functions (v3.0 §5.19–5.22). Not offered: they answer
   CKR_FUNCTION_NOT_SUPPORTED. Parameters are kept generic; only the slot matters. */
typedef CK_RV (*CK_C_MessageInit)(CK_SESSION_HANDLE, CK_MECHANISM_PTR, CK_OBJECT_HANDLE);
typedef CK_RV (*CK_C_MessageOneShot)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                     CK_ULONG, CK_BYTE_PTR, CK_ULONG, CK_BYTE_PTR, CK_ULONG_PTR);
typedef CK_RV (*CK_C_MessageBegin)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                   CK_ULONG);
typedef CK_RV (*CK_C_MessageNext)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                  CK_ULONG, CK_BYTE_PTR, CK_ULONG_PTR, CK_FLAGS);
typedef CK_RV (*CK_C_MessageFinal)(CK_SESSION_HANDLE);
typedef CK_RV (*CK_C_SignMessage)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                  CK_ULONG, CK_BYTE_PTR, CK_ULONG_PTR);
typedef CK_RV (*CK_C_SignMessageBegin)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG);
typedef CK_RV (*CK_C_SignMessageNext)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                      CK_ULONG, CK_BYTE_PTR, CK_ULONG_PTR);
typedef CK_RV (*CK_C_VerifyMessage)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                    CK_ULONG, CK_BYTE_PTR, CK_ULONG);
typedef CK_RV (*CK_C_VerifyMessageNext)(CK_SESSION_HANDLE, CK_VOID_PTR, CK_ULONG, CK_BYTE_PTR,
                                        CK_ULONG, CK_BYTE_PTR, CK_ULONG);

/* The v3.0 function list: the v2.40 list followed by the v3.0 functions, in the order of
   the specification's pkcs11f.h. */
typedef struct CK_FUNCTION_LIST_3_0 {
    CK_VERSION version;
    CK_C_Initialize C_Initialize;
    CK_C_Finalize C_Finalize;
    CK_C_GetInfo C_GetInfo;
    CK_C_GetFunctionList C_GetFunctionList;
    CK_C_GetSlotList C_GetSlotList;
    CK_C_GetSlotInfo C_GetSlotInfo;
    CK_C_GetTokenInfo C_GetTokenInfo;
    CK_C_GetMechanismList C_GetMechanismList;
    CK_C_GetMechanismInfo C_GetMechanismInfo;
    CK_C_InitToken C_InitToken;
    CK_C_InitPIN C_InitPIN;
    CK_C_SetPIN C_SetPIN;
    CK_C_OpenSession C_OpenSession;
    CK_C_CloseSession C_CloseSession;
    CK_C_CloseAllSessions C_CloseAllSessions;
    CK_C_GetSessionInfo C_GetSessionInfo;
    CK_C_GetOperationState C_GetOperationState;
    CK_C_SetOperationState C_SetOperationState;
    CK_C_Login C_Login;
    CK_C_Logout C_Logout;
    CK_C_CreateObject C_CreateObject;
    CK_C_CopyObject C_CopyObject;
    CK_C_DestroyObject C_DestroyObject;
    CK_C_GetObjectSize C_GetObjectSize;
    CK_C_GetAttributeValue C_GetAttributeValue;
    CK_C_SetAttributeValue C_SetAttributeValue;
    CK_C_FindObjectsInit C_FindObjectsInit;
    CK_C_FindObjects C_FindObjects;
    CK_C_FindObjectsFinal C_FindObjectsFinal;
    CK_C_EncryptInit C_EncryptInit;
    CK_C_Encrypt C_Encrypt;
    CK_C_EncryptUpdate C_EncryptUpdate;
    CK_C_EncryptFinal C_EncryptFinal;
    CK_C_DecryptInit C_DecryptInit;
    CK_C_Decrypt C_Decrypt;
    CK_C_DecryptUpdate C_DecryptUpdate;
    CK_C_DecryptFinal C_DecryptFinal;
    CK_C_DigestInit C_DigestInit;
    CK_C_Digest C_Digest;
    CK_C_DigestUpdate C_DigestUpdate;
    CK_C_DigestKey C_DigestKey;
    CK_C_DigestFinal C_DigestFinal;
    CK_C_SignInit C_SignInit;
    CK_C_Sign C_Sign;
    CK_C_SignUpdate C_SignUpdate;
    CK_C_SignFinal C_SignFinal;
    CK_C_SignRecoverInit C_SignRecoverInit;
    CK_C_SignRecover C_SignRecover;
    CK_C_VerifyInit C_VerifyInit;
    CK_C_Verify C_Verify;
    CK_C_VerifyUpdate C_VerifyUpdate;
    CK_C_VerifyFinal C_VerifyFinal;
    CK_C_VerifyRecoverInit C_VerifyRecoverInit;
    CK_C_VerifyRecover C_VerifyRecover;
    CK_C_DigestEncryptUpdate C_DigestEncryptUpdate;
    CK_C_DecryptDigestUpdate C_DecryptDigestUpdate;
    CK_C_SignEncryptUpdate C_SignEncryptUpdate;
    CK_C_DecryptVerifyUpdate C_DecryptVerifyUpdate;
    CK_C_GenerateKey C_GenerateKey;
    CK_C_GenerateKeyPair C_GenerateKeyPair;
    CK_C_WrapKey C_WrapKey;
    CK_C_UnwrapKey C_UnwrapKey;
    CK_C_DeriveKey C_DeriveKey;
    CK_C_SeedRandom C_SeedRandom;
    CK_C_GenerateRandom C_GenerateRandom;
    CK_C_GetFunctionStatus C_GetFunctionStatus;
    CK_C_CancelFunction C_CancelFunction;
    CK_C_WaitForSlotEvent C_WaitForSlotEvent;
    CK_C_GetInterfaceList C_GetInterfaceList;
    CK_C_GetInterface C_GetInterface;
    CK_C_LoginUser C_LoginUser;
    CK_C_SessionCancel C_SessionCancel;
    CK_C_MessageInit C_MessageEncryptInit;
    CK_C_MessageOneShot C_EncryptMessage;
    CK_C_MessageBegin C_EncryptMessageBegin;
    CK_C_MessageNext C_EncryptMessageNext;
    CK_C_MessageFinal C_MessageEncryptFinal;
    CK_C_MessageInit C_MessageDecryptInit;
    CK_C_MessageOneShot C_DecryptMessage;
    CK_C_MessageBegin C_DecryptMessageBegin;
    CK_C_MessageNext C_DecryptMessageNext;
    CK_C_MessageFinal C_MessageDecryptFinal;
    CK_C_MessageInit C_MessageSignInit;
    CK_C_SignMessage C_SignMessage;
    CK_C_SignMessageBegin C_SignMessageBegin;
    CK_C_SignMessageNext C_SignMessageNext;
    CK_C_MessageFinal C_MessageSignFinal;
    CK_C_MessageInit C_MessageVerifyInit;
    CK_C_VerifyMessage C_VerifyMessage;
    CK_C_SignMessageBegin C_VerifyMessageBegin;
    CK_C_VerifyMessageNext C_VerifyMessageNext;
    CK_C_MessageFinal C_MessageVerifyFinal;
} CK_FUNCTION_LIST_3_0;

#endif /* P11KEYCHAIN_H */
