/*
 * p11fuzz: a seeded random-call driver for libp11keychain-pkcs11.so.
 *
 * Shared declarations of the driver's parts:
 *   main.c       options, loading the module, the watchdog, crash reports, the loop,
 *                C_Finalize/C_Initialize, dlclose/dlopen and fork() in the middle
 *   values.c     the seeded generator, per-call memory, lengths, handle pools
 *   certificates.c  certificate DER and its mutations
 *   arguments.c  templates
 *   mechanisms.c mechanisms and their parameters, data, output buffers, PINs
 *   calls.c      call families: general, slots and tokens, sessions, login, objects, find
 *   crypto.c     call families: crypto, key generation, lifecycle; the table of families
 *   checks.c     the oracles' check names, and what a failed check does
 *   oracles.c    the listed mechanisms, the oracles' keys and session; digests, key generation
 *   oracle_ops.c correctness oracles: encrypt/decrypt, sign/verify
 *   oracle_keys.c correctness oracles: wrap/unwrap, derive
 *   exfiltration.c  the bytes of every sensitive key made from known values, and the sweeps
 *                that look for them in attributes, wrapped blobs and the store files
 *
 * The one rule every part keeps: the driver never hands the module a buffer shorter than
 * the length it claims, except with lengths or counts no real buffer can have (near 2^63
 * and 2^64-1), which the module must refuse before reading. A wrong ulValueLen for a real
 * pointer would be the caller's bug, not the module's, so it is never generated. Every
 * buffer is malloc'ed at exactly its length, so AddressSanitizer sees a read one byte past.
 */
#ifndef P11FUZZ_H
#define P11FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The module's header, ckr_name and loading (Tests/include). */
#include "p11test.h"

/* ---------------------------------------------------------------- values.c */

void rng_seed(uint64_t seed);
uint64_t rnd(void);
/* A number in [0, n); 0 when n is 0. */
uint64_t below(uint64_t n);
/* True one time in n. */
int one_in(uint64_t n);
/* True with the given percentage. */
int percent(unsigned p);
#define PICK(array) ((array)[below(sizeof(array) / sizeof((array)[0]))])

/* Memory for one iteration's arguments: freed after the calls that use it returned. A module
   that kept a pointer to caller memory past its call would be caught by AddressSanitizer. */
void *scratch(size_t n);
void *scratch_copy(const void *bytes, size_t n);
uint8_t *scratch_random(size_t n);
void scratch_release(void);

/* Whether impossible values (near 2^63 and 2^64-1) may be used: not when "huge" or the
   class is skipped. Classes: "huge-length" (data, value, PIN and parameter lengths),
   "huge-count" (template counts), "huge-find" (C_FindObjects' ulMaxObjectCount). */
int huge_class(const char *cls);
#define huge_allowed() huge_class("huge-length")
CK_ULONG impossible_length(void);
/* A small, plausible data length (0 .. a few KiB), biased to edges. */
size_t small_length(void);

/* Big output buffers: their real size is OUT_BIG bytes / OUT_HANDLES handles, larger than
   anything the module can write, so a claimed length larger than the truth is still safe. */
enum { OUT_BIG = 1 << 16, OUT_HANDLES = 1 << 16 };
uint8_t *out_big(void);
CK_OBJECT_HANDLE *out_handles(void);

/* Pools of handles: live ones the module gave us, stale ones it took back. */
enum { POOL_SIZE = 64 };
typedef struct {
    CK_ULONG v[POOL_SIZE];
    int n;
} pool_t;
void pool_add(pool_t *pool, CK_ULONG value);
int pool_remove(pool_t *pool, CK_ULONG value);
CK_ULONG pool_pick(const pool_t *pool);
void pool_clear(pool_t *pool);

extern pool_t live_sessions, stale_sessions, live_objects, stale_objects;

/* Keys the module generated, with what they are. */
typedef struct {
    CK_OBJECT_HANDLE handle;
    CK_OBJECT_CLASS cls;
    CK_KEY_TYPE type;
    int anchor; /* made at set-up: the destroy family spares it most of the time */
} fuzz_key;
enum { KEY_POOL = 32 };
extern fuzz_key keys[KEY_POOL];
extern int key_count;
void key_add(CK_OBJECT_HANDLE h, CK_OBJECT_CLASS cls, CK_KEY_TYPE type);
void key_forget(CK_OBJECT_HANDLE h);
void key_add_anchor(CK_OBJECT_HANDLE h, CK_OBJECT_CLASS cls, CK_KEY_TYPE type);
int key_is_anchor(CK_OBJECT_HANDLE h);
void keys_stale(void);

CK_SESSION_HANDLE pick_session(void);
CK_OBJECT_HANDLE pick_object(void);
CK_OBJECT_HANDLE pick_key(CK_OBJECT_CLASS cls, CK_KEY_TYPE type);
CK_SLOT_ID pick_slot(void);

/* ---------------------------------------------------------------- certificates.c */

int load_certificates(const char *dir);
/* A certificate's DER: valid, or mutated (bit flips, truncation, length bytes...). */
uint8_t *certificate_der(size_t *len, int mutate);
/* One random mutation of `bytes`: in place, or into a new scratch buffer it returns. */
uint8_t *mutate_bytes(uint8_t *bytes, size_t *len);

/* ---------------------------------------------------------------- arguments.c */

/* A template of `*count` entries (count as passed: may be 0 with a pointer, or impossible). */
typedef enum { T_CREATE, T_FIND, T_SET, T_COPY, T_GEN_PUBLIC, T_GEN_PRIVATE } template_use;
CK_ATTRIBUTE *random_template(template_use use, CK_ULONG *count);
/* A template for C_GetAttributeValue: output buffers of every kind the spec allows. */
CK_ATTRIBUTE *output_template(CK_ULONG *count);
const char *attribute_name(CK_ATTRIBUTE_TYPE type);

int byte_attribute_types(CK_ATTRIBUTE_TYPE *out, int max);

/* ---------------------------------------------------------------- mechanisms.c */

typedef enum { M_SIGN, M_CRYPT, M_DIGEST, M_KEYPAIR, M_KEY, M_WRAP, M_DERIVE } mechanism_use;
/* A mechanism (NULL sometimes) with random or near-valid parameters. */
CK_MECHANISM *random_mechanism(mechanism_use use);
/* Data of a plausible length, or NULL/impossible lengths; `*len` is what is claimed. */
uint8_t *input_data(CK_ULONG *len);
/* An output buffer and the length claimed for it (NULL size query, exact, short, big). */
uint8_t *output_buffer(CK_ULONG *len);
/* A PIN: the known user or SO PIN, a wrong one, empty, NULL with a length, impossible. */
uint8_t *random_pin(CK_ULONG *len);
extern const char *const user_pin, *const so_pin;

/* ---------------------------------------------------------------- main.c */

extern CK_FUNCTION_LIST *f2;     /* C_GetFunctionList */
extern CK_FUNCTION_LIST_3_0 *f3; /* C_GetInterface("PKCS 11", 3.0) */
/* One of the two lists for a v2.40 function: both must behave the same. */
CK_FUNCTION_LIST *fl(void);
extern int initialized;
extern int in_child;
extern unsigned long objects_created;
enum { OBJECT_BUDGET = 6000 };

/* Marks the start and end of one call to the module: the watchdog times it, a crash report
   names it, the ring of recent calls records it. */
void begin_call(const char *function, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
CK_RV end_call(CK_RV rv);
int skipped(const char *name);
int tracing(void);

/* Lifecycle operations the families reach. */
CK_RV do_initialize(int random_args);
void forget_handles(void);
void do_fork(void);
void do_reload(void);

/* ---------------------------------------------------------------- calls.c, crypto.c */

#define F (fl())
/* One call through a function list: recorded, timed by the watchdog; yields the CK_RV. */
#define CALL(fn, ...) (begin_call(#fn, __VA_ARGS__), end_call(F->fn))

extern uint64_t iteration;
/* Set by a successful C_Initialize: the next login run logs the user in, whatever the budget. */
extern int login_wanted;
int may_create(void);
/* Keeps track of a handle the module returned for a new object. */
void created(CK_RV rv, CK_OBJECT_HANDLE h);
CK_SESSION_HANDLE open_session(CK_SLOT_ID slot, CK_FLAGS flags);
/* The SO sets the user PIN again (undoes a lock or a re-initialisation), the user logs in. */
void restore_user_pin(CK_SLOT_ID slot);
void run_info(void);
void run_init_token(void);
void run_session(void);
void run_login(void);
void run_create(void);
void run_copy(void);
void run_destroy(void);
void run_get_attributes(void);
void run_set_attributes(void);
void run_object_size(void);
void run_find(void);

typedef struct {
    const char *name;
    unsigned weight;
    int in_child; /* may run in a forked child (no object creation, no logins) */
    void (*run)(void);
} family_t;
extern family_t families[];
extern const size_t family_count;
void setup_token(void);
/* One token key pair of each type (EC P-256, Ed25519, RSA-2048) for the crypto families. */
void make_anchor_keys(CK_SESSION_HANDLE s);

/* ---------------------------------------------------------------- oracles */

/* main.c: the run's seed, whether a module call is in flight, the crash report. */
extern uint64_t seed;
extern volatile int call_active;
void report(const char *what);

/* A check failed: reported with seed and iteration like a crash, exit 5; unless the check's
   name is in P11FUZZ_SKIP (a known defect whose fix is pending): then counted and printed once. */
void oracle_failed(const char *check, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The names of every check (p11fuzz --list prints them); the count of skipped failures. */
extern const char *const oracle_checks[];
void checks_summary(void);

/* oracles.c: the mechanisms C_GetMechanismList lists on each slot, with their CKF_* flags. */
typedef struct {
    CK_MECHANISM_TYPE type;
    CK_FLAGS flags;
    unsigned long runs, checks; /* oracle runs, and round trips that were checked */
} listed_mechanism;
void oracle_setup(void);
void run_oracles(void);
void oracle_summary(void);

/* The oracles' keys, by role; made on demand in the oracles' own session, made again when
   a handle went stale (C_Finalize, C_InitToken, the destroy family). */
typedef enum {
    K_AES16, K_AES24, K_AES32, K_GENERIC32, K_GENERIC_ODD, K_LOCKED_AES, K_KNOWN_EC, K_KNOWN_ED,
    K_EC_PRIV, K_EC_PUB, K_EC2_PRIV, K_EC2_PUB, K_ED_PRIV, K_ED_PUB, K_X_PRIV, K_X_PUB, K_X2_PRIV,
    K_X2_PUB, K_RSA_PRIV, K_RSA_PUB, K_ROLES
} key_role;
CK_SESSION_HANDLE oracle_session(void);
/* The login state changed behind the oracles' back (the sweeps): check it again. */
void oracle_session_changed(void);
int oracle_logged_in(void);
/* The handle of the key in that role, made if needed; 0 when it cannot be had now. */
CK_OBJECT_HANDLE oracle_key(key_role role);
CK_KEY_TYPE oracle_key_type(key_role role);
/* A value that names a key's bytes without showing them: CKA_CHECK_VALUE, else CKA_VALUE,
   else (or when by_use) a MAC or an AES-ECB encryption of a fixed block. 0 when none. */
size_t key_fingerprint(CK_OBJECT_HANDLE h, CK_KEY_TYPE type, uint8_t *out, size_t max, int by_use);
/* A template entry helper: CK_BBOOL/CK_ULONG values in scratch memory. */
CK_ATTRIBUTE attr_bool(CK_ATTRIBUTE_TYPE type, int value);
CK_ATTRIBUTE attr_ulong(CK_ATTRIBUTE_TYPE type, CK_ULONG value);
/* Reads one attribute into a scratch buffer; NULL when it cannot be read. */
uint8_t *read_attribute(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, CK_ATTRIBUTE_TYPE type, CK_ULONG *len);

/* oracle_ops.c: one listed mechanism through the call families its flags name. */
int oracle_cipher(listed_mechanism *m);
int oracle_signature(listed_mechanism *m);
CK_ULONG hash_length(CK_MECHANISM_TYPE hash);
CK_MECHANISM_TYPE random_hash(void);
CK_ULONG mgf_of(CK_MECHANISM_TYPE hash);
CK_ULONG modulus_bytes(void);
/* Makes a mechanism's parameter malformed; a CKR_GENERAL_ERROR or CKR_FUNCTION_FAILED for one
   fails the check "param-errors". */
void malformed(CK_MECHANISM *m);
void check_param_error(CK_RV rv, CK_MECHANISM *m, const char *function);
/* oracle_keys.c */
int oracle_wrap(listed_mechanism *m);
int oracle_derive(listed_mechanism *m);

/* exfiltration.c */
enum { SWEEP_EARLY = 800, SWEEP_EVERY = 10000 };
/* Keeps the bytes of a sensitive or unextractable key the run made from known values. */
void exfiltration_track(const uint8_t *bytes, size_t len, CK_OBJECT_HANDLE h, int extractable, const char *what);
/* Looks for any tracked key's bytes in `bytes`; fails the run naming the key, where and what. */
void exfiltration_scan(const uint8_t *bytes, size_t len, const char *where, const char *what);
int exfiltration_unextractable(CK_OBJECT_HANDLE h);
/* Reads every object's attributes logged out, as the SO and as the user, wraps every key
   under every wrapping key the oracles hold, scans the store files. */
void exfiltration_sweep(const char *when);

#endif /* P11FUZZ_H */
