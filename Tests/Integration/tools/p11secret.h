/*
 * p11secret.h: what the two halves of p11secret share (p11secret.c, the
 * commands; p11secret_util.c, loading the module, bytes, templates and
 * mechanisms by name). See p11secret.c for the tool itself.
 */
#ifndef P11SECRET_H
#define P11SECRET_H

#include <stddef.h>

/* The module's header (PKCS#11 3.0 names p11-kit's 2.40 header lacks), ckr_name, loading. */
#include "p11test.h"

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
