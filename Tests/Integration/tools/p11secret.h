/*
 * p11secret.h: what the two halves of p11secret share (p11secret.c, the
 * commands; p11secret_util.c, loading the module, bytes, templates and
 * mechanisms by name). See p11secret.c for the tool itself.
 */
#ifndef P11SECRET_H
#define P11SECRET_H

#include <stddef.h>

#include <p11-kit-1/p11-kit/pkcs11.h>

/* PKCS#11 3.0 names p11-kit 0.24's 2.40 header lacks. */
#ifndef CKK_EC_MONTGOMERY
#define CKK_EC_MONTGOMERY 0x41UL
#endif
#ifndef CKM_EC_MONTGOMERY_KEY_PAIR_GEN
#define CKM_EC_MONTGOMERY_KEY_PAIR_GEN 0x1056UL
#endif
#ifndef CKM_AES_KEY_WRAP_KWP
#define CKM_AES_KEY_WRAP_KWP 0x210bUL
#endif
#ifndef CKM_HKDF_DERIVE
#define CKM_HKDF_DERIVE 0x402aUL
#define CKF_HKDF_SALT_NULL 0x1UL
#define CKF_HKDF_SALT_DATA 0x2UL
#define CKF_HKDF_SALT_KEY 0x4UL
/* CK_HKDF_PARAMS (PKCS#11 3.0 §2.43.2). */
typedef struct {
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
#endif
#ifndef CKM_AES_CMAC_GENERAL
#define CKM_AES_CMAC_GENERAL 0x108bUL
#endif

enum { EXIT_CHECK = 1, EXIT_USAGE = 2 };

/* The module's function list and the one R/W session every command uses. */
extern CK_FUNCTION_LIST_PTR p11;
extern CK_SESSION_HANDLE session;

/* Bytes read from hex or a file (malloc'd, never freed: the tool is short-lived). */
struct bytes {
    unsigned char *data;
    size_t len;
};

/* A template being built, with the storage its CK_BBOOL and CK_ULONG values point into. */
struct tmpl {
    CK_ATTRIBUTE a[32];
    CK_ULONG n;
    CK_BBOOL bools[32];
    CK_ULONG ulongs[8];
    int nb, nu;
};

/* A mechanism with the storage of its parameters. */
struct mech {
    CK_MECHANISM m;
    CK_BYTE iv[64];
    CK_GCM_PARAMS gcm;
    CK_AES_CTR_PARAMS ctr;
    CK_RSA_PKCS_OAEP_PARAMS oaep;
    CK_ULONG mac_len;
    struct bytes aad;
};

const char *rv_name(CK_RV rv);
/* Print the failed call and its CK_RV by name, exit 1. */
__attribute__((noreturn)) void die_rv(const char *what, CK_RV rv);
/* Print a usage or setup error, exit 2. */
__attribute__((noreturn)) void die_usage(const char *msg, const char *arg);
void *xmalloc(size_t n);
struct bytes from_hex(const char *hex);
void print_hex(const char *tag, const unsigned char *p, size_t n);
struct bytes read_file(const char *path);
void write_file(const char *path, const unsigned char *p, size_t n);
void open_module(void);
void close_module(void);
CK_OBJECT_HANDLE find_key(CK_OBJECT_CLASS cls, const char *label, int optional);
CK_RV get_attr(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type, struct bytes *out);
void add(struct tmpl *t, CK_ATTRIBUTE_TYPE type, void *p, CK_ULONG len);
void add_bool(struct tmpl *t, CK_ATTRIBUTE_TYPE type, int v);
void add_ulong(struct tmpl *t, CK_ATTRIBUTE_TYPE type, CK_ULONG v);
void add_options(struct tmpl *t, int argc, char **argv);
const char *option(int argc, char **argv, const char *name);
CK_KEY_TYPE key_type_named(const char *name);
void mechanism_named(struct mech *m, const char *name, int argc, char **argv);

#endif
