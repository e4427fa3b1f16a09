/*
 * The bridge between pam_p11keychain.so's C entry points (pam/pam_p11keychain.c) and the
 * Swift that does the work (Sources/PAMKeychain). Each function runs in a child process that
 * already is the target user (uid, gid, groups); it reads and writes nothing but that user's
 * keychain and session keyring. Passwords come as bytes with their length; the caller wipes
 * them. `message` receives one line for the system log (NUL-terminated, never a secret).
 */
#ifndef PAM_P11KEYCHAIN_H
#define PAM_P11KEYCHAIN_H

#include <stddef.h>

/* What a bridge function did. */
enum {
    P11K_PAM_FAILED = -1,  /* nothing changed; `message` says why */
    P11K_PAM_DONE = 0,     /* unlocked for the session / PIN changed */
    P11K_PAM_CREATED = 1,  /* the login keychain was created, and unlocked */
    P11K_PAM_NOTHING = 2,  /* no login keychain to change */
};

/* Unlocks the user's login keychain (the default store of the user whose home is `home`)
   for the session with `password` as its user PIN; creates it first when it has no PIN. */
int p11k_pam_unlock(const char *home, const unsigned char *password, size_t length,
                    char *message, size_t capacity);

/* Changes the login keychain's user PIN from the old password to the new one. */
int p11k_pam_change(const char *home, const unsigned char *old_password, size_t old_length,
                    const unsigned char *new_password, size_t new_length, char *message,
                    size_t capacity);

#endif
