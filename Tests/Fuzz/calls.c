/*
 * The call families of p11fuzz for general, slot and token, session, login and object
 * functions (v2.40 §5.4-5.7). Each `run` makes one random call to the module, or a short
 * sequence, with arguments from arguments.c and mechanisms.c and handles from the pools in
 * values.c. crypto.c has the cryptographic families and the table of all of them.
 *
 * Costly calls are bounded by iteration counts, not time, so that a seed replays: a PIN
 * check runs PBKDF2 (about 150 ms), C_InitToken wipes the token.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

static uint64_t last_pin_check, last_init_token;
int login_wanted;
static int so_pin_set[2], user_pin_set[2];

int may_create(void) { return !in_child && objects_created < OBJECT_BUDGET; }

void created(CK_RV rv, CK_OBJECT_HANDLE h)
{
    if (rv == CKR_OK && tracing())
        fprintf(stderr, "    new object 0x%lx\n", (unsigned long)h);
    if (rv == CKR_OK) {
        pool_add(&live_objects, h);
        objects_created++;
    }
}

/* ---------------------------------------------------------------- general, slots, tokens */

void run_info(void)
{
    CK_SLOT_ID slot = pick_slot();
    switch (below(10)) {
    case 0: {
        CK_INFO info;
        CALL(C_GetInfo(percent(90) ? &info : NULL), "%s", "");
        break;
    }
    case 1: {
        CK_ULONG n;
        CK_SLOT_ID *list;
        unsigned r = (unsigned)below(4);
        if (r == 0) {
            list = NULL;
            n = percent(50) ? 0 : rnd();
        } else if (r == 1) {
            n = below(4);
            list = scratch(n * sizeof *list);
        } else {
            list = (CK_SLOT_ID *)out_handles();
            n = (r == 3 && huge_allowed()) ? impossible_length() : OUT_HANDLES;
        }
        CALL(C_GetSlotList((CK_BBOOL)below(3), list, percent(95) ? &n : NULL), "list %p, count 0x%lx",
             (void *)list, (unsigned long)n);
        break;
    }
    case 2: {
        CK_SLOT_INFO info;
        CALL(C_GetSlotInfo(slot, percent(90) ? &info : NULL), "slot 0x%lx", (unsigned long)slot);
        break;
    }
    case 3: {
        CK_TOKEN_INFO info;
        CALL(C_GetTokenInfo(slot, percent(90) ? &info : NULL), "slot 0x%lx", (unsigned long)slot);
        break;
    }
    case 4: {
        CK_ULONG n;
        CK_MECHANISM_TYPE *list;
        unsigned r = (unsigned)below(4);
        if (r == 0) {
            list = NULL;
            n = rnd();
        } else if (r == 1) {
            n = below(40);
            list = scratch(n * sizeof *list);
        } else {
            list = (CK_MECHANISM_TYPE *)out_handles();
            n = (r == 3 && huge_allowed()) ? impossible_length() : OUT_HANDLES;
        }
        CALL(C_GetMechanismList(slot, list, percent(95) ? &n : NULL), "slot 0x%lx, list %p, count 0x%lx",
             (unsigned long)slot, (void *)list, (unsigned long)n);
        break;
    }
    case 5: {
        CK_MECHANISM_INFO info;
        CK_MECHANISM *m = random_mechanism((mechanism_use)below(7));
        CK_MECHANISM_TYPE type = m ? m->mechanism : rnd();
        CALL(C_GetMechanismInfo(slot, type, percent(90) ? &info : NULL), "slot 0x%lx, 0x%lx",
             (unsigned long)slot, (unsigned long)type);
        break;
    }
    case 6: {
        if (!f3)
            break;
        CK_ULONG n = below(5);
        CK_INTERFACE *p = percent(30) ? NULL : scratch(n * sizeof(CK_INTERFACE));
        begin_call("C_GetInterfaceList", "list %p, count %lu", (void *)p, (unsigned long)n);
        end_call(f3->C_GetInterfaceList(p, percent(95) ? &n : NULL));
        break;
    }
    case 7: {
        if (!f3)
            break;
        static const char *const names[] = { "PKCS 11", "PKCS 11", "PKCS#11", "", "Vendor" };
        CK_VERSION versions[] = { { 3, 0 }, { 2, 40 }, { 3, 1 }, { 0, 0 }, { 255, 255 } };
        const char *name = percent(15) ? NULL : PICK(names);
        CK_VERSION *version = percent(30) ? NULL : &versions[below(5)];
        CK_INTERFACE *got = NULL;
        CK_FLAGS flags = percent(70) ? 0 : (percent(50) ? CKF_INTERFACE_FORK_SAFE : rnd());
        begin_call("C_GetInterface", "%s, flags 0x%lx", name ? name : "NULL", (unsigned long)flags);
        end_call(f3->C_GetInterface((CK_UTF8CHAR_PTR)name, version, percent(95) ? &got : NULL, flags));
        break;
    }
    case 8: {
        CK_FUNCTION_LIST_PTR list = NULL;
        CALL(C_GetFunctionList(percent(90) ? &list : NULL), "%s", "");
        break;
    }
    default: {
        CK_SLOT_ID event;
        /* Never a blocking wait: a module may rightly wait forever for an event. */
        CALL(C_WaitForSlotEvent(CKF_DONT_BLOCK, percent(90) ? &event : NULL, NULL), "%s", "DONT_BLOCK");
        break;
    }
    }
}

/* A 32-byte blank-padded label, as C_InitToken reads (v2.40 §5.5). */
static CK_UTF8CHAR *token_label(void)
{
    CK_UTF8CHAR *label = scratch(32);
    memset(label, ' ', 32);
    if (percent(80))
        memcpy(label, "fuzz", 4);
    else
        for (int i = 0; i < 32; i++)
            label[i] = (CK_UTF8CHAR)rnd();
    return label;
}

/* Sessions that a C_CloseAllSessions or C_InitToken may have ended move to the stale pool. */
static void probe_sessions(void)
{
    for (int i = live_sessions.n - 1; i >= 0; i--) {
        CK_SESSION_INFO info;
        CK_SESSION_HANDLE s = live_sessions.v[i];
        if (CALL(C_GetSessionInfo(s, &info), "0x%lx (probe)", (unsigned long)s) != CKR_OK) {
            pool_remove(&live_sessions, s);
            pool_add(&stale_sessions, s);
        }
    }
}

CK_SESSION_HANDLE open_session(CK_SLOT_ID slot, CK_FLAGS flags)
{
    CK_SESSION_HANDLE s = 0;
    CK_RV rv = CALL(C_OpenSession(slot, flags, NULL, NULL, &s), "slot %lu, flags 0x%lx",
                    (unsigned long)slot, (unsigned long)flags);
    if (rv == CKR_OK)
        pool_add(&live_sessions, s);
    return rv == CKR_OK ? s : 0;
}

/* The SO sets the user PIN again: undoes a lock or a re-initialisation. */
void restore_user_pin(CK_SLOT_ID slot)
{
    CK_SESSION_HANDLE s = open_session(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION);
    if (!s)
        return;
    CK_RV rv = CALL(C_Login(s, CKU_SO, (CK_UTF8CHAR_PTR)so_pin, strlen(so_pin)), "0x%lx, SO, the SO PIN",
                    (unsigned long)s);
    if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN) {
        if (CALL(C_InitPIN(s, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin)), "0x%lx, the user PIN",
                 (unsigned long)s) == CKR_OK && slot < 2)
            user_pin_set[slot] = 1;
        CALL(C_Logout(s), "0x%lx", (unsigned long)s);
    }
    CALL(C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin)), "0x%lx, USER, the user PIN",
         (unsigned long)s);
}

void run_init_token(void)
{
    CK_SLOT_ID slot = pick_slot();
    CK_ULONG len;
    if (iteration - last_init_token < 5000 || in_child) {
        /* Cheap forms, refused before any PIN is derived. */
        uint8_t *pin = percent(50) ? NULL : scratch_random(8);
        len = pin ? (huge_allowed() && percent(50) ? impossible_length() : 8) : 8;
        CALL(C_InitToken(slot, pin, len, percent(50) ? NULL : token_label()), "slot %lu, PIN len 0x%lx (cheap)",
             (unsigned long)slot, (unsigned long)len);
        return;
    }
    last_init_token = iteration;
    if (slot > 1)
        slot = 0;
    if (percent(80)) {
        CALL(C_CloseAllSessions(slot), "slot %lu", (unsigned long)slot);
        probe_sessions();
    }
    CK_UTF8CHAR_PTR pin = (CK_UTF8CHAR_PTR)so_pin;
    len = strlen(so_pin);
    if (so_pin_set[slot] && percent(20))
        pin = random_pin(&len);
    CK_RV rv = CALL(C_InitToken(slot, pin, len, token_label()), "slot %lu, PIN len 0x%lx", (unsigned long)slot,
                    (unsigned long)len);
    if (rv == CKR_OK) {
        so_pin_set[slot] = 1;
        user_pin_set[slot] = 0;
        if (slot == 0) {
            keys_stale();
            if (percent(80)) {
                restore_user_pin(slot);
                CK_SESSION_HANDLE s = open_session(0, CKF_SERIAL_SESSION | CKF_RW_SESSION);
                if (s)
                    make_anchor_keys(s);
            }
        }
    }
}

/* ---------------------------------------------------------------- sessions and login */

/* A host's notification callback: the module may call it; it does nothing. */
static CK_RV notify(CK_SESSION_HANDLE s, CK_NOTIFICATION e, CK_VOID_PTR app)
{
    (void)s, (void)e, (void)app;
    return CKR_OK;
}

void run_session(void)
{
    CK_SESSION_HANDLE s = pick_session();
    unsigned r = (unsigned)below(100);
    if (r < 35 || live_sessions.n == 0) {
        CK_FLAGS flags = CKF_SERIAL_SESSION | (percent(60) ? CKF_RW_SESSION : 0);
        if (percent(10))
            flags = percent(50) ? CKF_RW_SESSION : rnd();
        CK_SESSION_HANDLE h = 0;
        CK_SLOT_ID slot = pick_slot();
        CK_RV rv = CALL(C_OpenSession(slot, flags, percent(20) ? (CK_VOID_PTR)&h : NULL,
                                      percent(20) ? notify : NULL, percent(97) ? &h : NULL),
                        "slot 0x%lx, flags 0x%lx", (unsigned long)slot, (unsigned long)flags);
        if (rv == CKR_OK)
            pool_add(&live_sessions, h);
        if (live_sessions.n > 40) {
            CK_SESSION_HANDLE old = pool_pick(&live_sessions);
            CALL(C_CloseSession(old), "0x%lx (too many)", (unsigned long)old);
            pool_remove(&live_sessions, old);
            pool_add(&stale_sessions, old);
        }
    } else if (r < 50) {
        if (CALL(C_CloseSession(s), "0x%lx", (unsigned long)s) == CKR_OK) {
            pool_remove(&live_sessions, s);
            pool_add(&stale_sessions, s);
        }
    } else if (r < 53) {
        CK_SLOT_ID slot = pick_slot();
        if (CALL(C_CloseAllSessions(slot), "slot 0x%lx", (unsigned long)slot) == CKR_OK)
            login_wanted = 1; /* the login ended with the last session (v2.40 §5.6) */
        probe_sessions();
    } else if (r < 70) {
        CK_SESSION_INFO info;
        CALL(C_GetSessionInfo(s, percent(95) ? &info : NULL), "0x%lx", (unsigned long)s);
    } else if (r < 78) {
        CK_ULONG len;
        uint8_t *out = output_buffer(&len);
        CALL(C_GetOperationState(s, out, percent(95) ? &len : NULL), "0x%lx, %p, 0x%lx", (unsigned long)s,
             (void *)out, (unsigned long)len);
    } else if (r < 84) {
        CK_ULONG len;
        uint8_t *state = input_data(&len);
        CALL(C_SetOperationState(s, state, len, pick_object(), pick_object()), "0x%lx, len 0x%lx",
             (unsigned long)s, (unsigned long)len);
    } else if (r < 88) {
        CALL(C_GetFunctionStatus(s), "0x%lx", (unsigned long)s);
    } else if (r < 92) {
        CALL(C_CancelFunction(s), "0x%lx", (unsigned long)s);
    } else if (f3) {
        static const CK_FLAGS flags[] = { CKF_SIGN, CKF_VERIFY, CKF_ENCRYPT, CKF_DECRYPT,
                                          CKF_DIGEST, 0x40 /* CKF_FIND_OBJECTS */ };
        CK_FLAGS f = percent(70) ? PICK(flags) : rnd();
        begin_call("C_SessionCancel", "0x%lx, flags 0x%lx", (unsigned long)s, (unsigned long)f);
        end_call(f3->C_SessionCancel(s, f));
    }
}

void run_login(void)
{
    CK_SESSION_HANDLE s = pick_session();
    int costly_allowed = iteration - last_pin_check >= 200 && !in_child;
    unsigned r = (unsigned)below(100);
    if (login_wanted && !in_child && r >= 25 && live_sessions.n) {
        /* The first login after a C_Initialize, a logout or the last session's end: private
           keys are usable again. */
        s = pool_pick(&live_sessions);
        CK_RV rv = CALL(C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin)),
                        "0x%lx, USER, the user PIN (wanted)", (unsigned long)s);
        if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN || rv == CKR_PIN_LOCKED)
            login_wanted = 0;
        last_pin_check = iteration;
        return;
    }
    static const CK_USER_TYPE types[] = { CKU_USER, CKU_USER, CKU_SO, CKU_CONTEXT_SPECIFIC, 3, 0xffffffffUL };
    CK_USER_TYPE type = PICK(types);
    if (r < 25) {
        if (CALL(C_Logout(s), "0x%lx", (unsigned long)s) == CKR_OK)
            login_wanted = 1;
        return;
    }
    if (!costly_allowed || r < 40) {
        /* Forms the module refuses before deriving anything: no PIN with a length, a length no
           buffer has, an unknown user type. */
        CK_ULONG len = huge_allowed() && percent(50) ? impossible_length() : 4;
        uint8_t *pin = percent(50) ? NULL : scratch_random(8);
        if (!pin || len != 4)
            CALL(C_Login(s, type, pin, len), "0x%lx, type %lu, PIN %p len 0x%lx (cheap)", (unsigned long)s,
                 (unsigned long)type, (void *)pin, (unsigned long)len);
        else
            CALL(C_Login(s, 7, pin, len), "0x%lx, type 7 (cheap)", (unsigned long)s);
        return;
    }
    last_pin_check = iteration;
    CK_ULONG len;
    uint8_t *pin = random_pin(&len);
    if (r < 55) {
        /* The user logs in: what most of the crypto families need. */
        CALL(C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)user_pin, strlen(user_pin)), "0x%lx, USER, the user PIN",
             (unsigned long)s);
    } else if (r < 70) {
        CALL(C_Login(s, type, pin, len), "0x%lx, type %lu, PIN len 0x%lx", (unsigned long)s, (unsigned long)type,
             (unsigned long)len);
    } else if (r < 80 && f3) {
        CK_ULONG name_len = below(20);
        uint8_t *name = percent(80) ? scratch_random(name_len) : NULL;
        begin_call("C_LoginUser", "0x%lx, type %lu, PIN len 0x%lx", (unsigned long)s, (unsigned long)type,
                   (unsigned long)len);
        end_call(f3->C_LoginUser(s, type, pin, len, name, name ? name_len : 0));
    } else if (r < 88) {
        /* The new PIN is the same as the old: a later login still knows it. */
        CK_ULONG new_len = len;
        CK_UTF8CHAR_PTR new_pin = pin;
        if (percent(20))
            new_pin = random_pin(&new_len);
        if (new_pin != pin && len == strlen(user_pin) && pin && !memcmp(pin, user_pin, len))
            new_pin = pin, new_len = len;
        if (new_pin != pin && len == strlen(so_pin) && pin && !memcmp(pin, so_pin, len))
            new_pin = pin, new_len = len;
        CALL(C_SetPIN(s, pin, len, new_pin, new_len), "0x%lx, old len 0x%lx, new len 0x%lx", (unsigned long)s,
             (unsigned long)len, (unsigned long)new_len);
    } else if (r < 93) {
        /* C_InitPIN sets the user PIN: only ever to the known one. */
        CK_UTF8CHAR_PTR p = (CK_UTF8CHAR_PTR)user_pin;
        CK_ULONG n = strlen(user_pin);
        CALL(C_InitPIN(s, p, n), "0x%lx, the user PIN", (unsigned long)s);
    } else {
        restore_user_pin(pick_slot() == 1 ? 1 : 0);
    }
}

/* ---------------------------------------------------------------- objects */

void run_create(void)
{
    if (!may_create()) {
        CK_OBJECT_HANDLE h = pick_object();
        if (CALL(C_DestroyObject(pick_session(), h), "0x%lx (over budget)", (unsigned long)h) == CKR_OK)
            pool_remove(&live_objects, h);
        return;
    }
    CK_SESSION_HANDLE s = pick_session();
    CK_ULONG n;
    CK_ATTRIBUTE *t = random_template(T_CREATE, &n);
    CK_OBJECT_HANDLE h = 0;
    CK_RV rv = CALL(C_CreateObject(s, t, n, percent(97) ? &h : NULL), "0x%lx, template %p, count 0x%lx",
                    (unsigned long)s, (void *)t, (unsigned long)n);
    created(rv, h);
}

void run_copy(void)
{
    if (!may_create())
        return;
    CK_SESSION_HANDLE s = pick_session();
    CK_OBJECT_HANDLE from = pick_object(), h = 0;
    CK_ULONG n;
    CK_ATTRIBUTE *t = random_template(T_COPY, &n);
    CK_RV rv = CALL(C_CopyObject(s, from, t, n, percent(97) ? &h : NULL), "0x%lx, 0x%lx, count 0x%lx",
                    (unsigned long)s, (unsigned long)from, (unsigned long)n);
    created(rv, h);
}

void run_destroy(void)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_OBJECT_HANDLE h = pick_object();
    if (key_is_anchor(h) && percent(97))
        return; /* the crypto families need keys to work with */
    if (CALL(C_DestroyObject(s, h), "0x%lx, 0x%lx", (unsigned long)s, (unsigned long)h) == CKR_OK) {
        pool_remove(&live_objects, h);
        key_forget(h);
        pool_add(&stale_objects, h);
    }
}

void run_get_attributes(void)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_OBJECT_HANDLE h = pick_object();
    CK_ULONG n;
    CK_ATTRIBUTE *t = output_template(&n);
    CALL(C_GetAttributeValue(s, h, t, n), "0x%lx, 0x%lx, template %p, count 0x%lx, first %s", (unsigned long)s,
         (unsigned long)h, (void *)t, (unsigned long)n, t ? attribute_name(t[0].type) : "-");
}

void run_set_attributes(void)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_OBJECT_HANDLE h = pick_object();
    CK_ULONG n;
    CK_ATTRIBUTE *t = random_template(T_SET, &n);
    CALL(C_SetAttributeValue(s, h, t, n), "0x%lx, 0x%lx, count 0x%lx, first %s", (unsigned long)s,
         (unsigned long)h, (unsigned long)n, t && n ? attribute_name(t[0].type) : "-");
}

void run_object_size(void)
{
    CK_SESSION_HANDLE s = pick_session();
    CK_OBJECT_HANDLE h = pick_object();
    CK_ULONG size;
    CALL(C_GetObjectSize(s, h, percent(95) ? &size : NULL), "0x%lx, 0x%lx", (unsigned long)s, (unsigned long)h);
}

/* C_FindObjects* (v2.40 §5.7): init, reads of every size (one by one, partial, all, a
   count no buffer has after a partial read), final or abandoned. */
void run_find(void)
{
    CK_SESSION_HANDLE s = pick_session();
    if (percent(70)) {
        CK_ULONG n;
        CK_ATTRIBUTE *t = random_template(T_FIND, &n);
        CALL(C_FindObjectsInit(s, t, n), "0x%lx, template %p, count 0x%lx", (unsigned long)s, (void *)t,
             (unsigned long)n);
    }
    int reads = (int)below(4);
    for (int i = 0; i < reads; i++) {
        CK_ULONG max, got = 0;
        CK_OBJECT_HANDLE *out;
        unsigned r = (unsigned)below(100);
        if (r < 30) {
            max = 1 + below(3);
            out = scratch(max * sizeof *out);
        } else if (r < 40) {
            max = 0;
            out = percent(50) ? NULL : scratch(8);
        } else if (r < 45) {
            max = 1 + below(8);
            out = NULL;
        } else if (r < 85 || !huge_class("huge-find")) {
            max = OUT_HANDLES;
            out = out_handles();
        } else {
            max = impossible_length();
            out = out_handles();
        }
        CK_RV rv = CALL(C_FindObjects(s, out, max, percent(97) ? &got : NULL), "0x%lx, %p, max 0x%lx",
                        (unsigned long)s, (void *)out, (unsigned long)max);
        if (rv == CKR_OK && out && got <= 8 && got <= max)
            for (CK_ULONG k = 0; k < got; k++)
                pool_add(&live_objects, out[k]);
    }
    if (percent(70))
        CALL(C_FindObjectsFinal(s), "0x%lx", (unsigned long)s);
}


/* ---------------------------------------------------------------- set-up */

static void generate(CK_SESSION_HANDLE s, CK_MECHANISM_TYPE type, CK_KEY_TYPE key_type, const uint8_t *params,
                     size_t params_len)
{
    /* Token objects: they outlive the set-up session (but not a C_InitToken). */
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE, token = CK_TRUE;
    CK_ULONG bits = 2048;
    CK_ATTRIBUTE pub[] = {
        { CKA_TOKEN, &token, 1 }, { CKA_VERIFY, &yes, 1 }, { CKA_ENCRYPT, &yes, 1 }, { CKA_PRIVATE, &no, 1 },
        { key_type == CKK_RSA ? CKA_MODULUS_BITS : CKA_EC_PARAMS,
          key_type == CKK_RSA ? (void *)&bits : (void *)params, key_type == CKK_RSA ? sizeof bits : params_len },
    };
    /* On a token that has no user PIN, a private key can only be a public object (the
       module must then seal it anyway, or refuse it). */
    CK_ATTRIBUTE priv[] = {
        { CKA_TOKEN, &token, 1 }, { CKA_SIGN, &yes, 1 }, { CKA_DECRYPT, &yes, 1 },
        { CKA_PRIVATE, user_pin_set[0] ? &yes : &no, 1 },
    };
    CK_MECHANISM m = { type, NULL, 0 };
    CK_OBJECT_HANDLE hpub = 0, hpriv = 0;
    CK_RV rv = CALL(C_GenerateKeyPair(s, &m, pub, 5, priv, 4, &hpub, &hpriv), "0x%lx, 0x%lx (set-up)",
                    (unsigned long)s, (unsigned long)type);
    if (rv == CKR_OK) {
        created(rv, hpub);
        created(rv, hpriv);
        key_add_anchor(hpub, CKO_PUBLIC_KEY, key_type);
        key_add_anchor(hpriv, CKO_PRIVATE_KEY, key_type);
    }
}

void make_anchor_keys(CK_SESSION_HANDLE s)
{
    static const uint8_t p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
    static const uint8_t ed25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
    generate(s, CKM_EC_KEY_PAIR_GEN, CKK_EC, p256, sizeof p256);
    generate(s, CKM_EC_EDWARDS_KEY_PAIR_GEN, CKK_EC_EDWARDS, ed25519, sizeof ed25519);
    generate(s, CKM_RSA_PKCS_KEY_PAIR_GEN, CKK_RSA, NULL, 0);
}

/* Most seeds start with PINs set (the SO's and the user's) and the user logged in, so that
   private keys exist and sign; the others fuzz a token that has never had a PIN. Either
   way, one key pair of each type is there to sign with. */
void setup_token(void)
{
    if (percent(75)) {
        CK_UTF8CHAR *label = scratch(32);
        memset(label, ' ', 32);
        memcpy(label, "login", 5);
        if (CALL(C_InitToken(0, (CK_UTF8CHAR_PTR)so_pin, strlen(so_pin), label), "slot 0, the SO PIN (set-up)")
            == CKR_OK)
            so_pin_set[0] = 1;
        restore_user_pin(0);
    }
    CK_SESSION_HANDLE s = open_session(0, CKF_SERIAL_SESSION | CKF_RW_SESSION);
    if (s)
        make_anchor_keys(s);
}
