/*
 * The protocol between pam_p11keychain.so (pam/pam_p11keychain.c) and its helper program
 * (Sources/PAMKeychain, installed as P11K_PAM_HELPER). The module runs no Swift: it forks,
 * drops the child to the target user (groups, gid, uid), and execs the helper with
 *
 *     argv: P11K_PAM_HELPER "unlock" HOME     or     P11K_PAM_HELPER "change" HOME
 *     env:  PATH only
 *     fd 0 and 1: one end of a socket pair
 *
 * The helper reads the password from fd 0 until end of file ("unlock": the password;
 * "change": the old password, one NUL byte, the new password; PAM's passwords hold no NUL),
 * writes at most one line for the system log to fd 1 (never a secret), and exits with one of
 * the statuses below. Any other way it ends (another status, a signal, the module's time
 * limit) is a failure. Nothing of the password is ever in argv or the environment.
 */
#ifndef PAM_P11KEYCHAIN_H
#define PAM_P11KEYCHAIN_H

/* Where make install and the package put the helper; the module argument helper=PATH names
   another. */
#define P11K_PAM_HELPER "/usr/libexec/p11keychain/pam-helper"

/* What the helper did: its exit status. */
enum {
    P11K_PAM_DONE = 0,    /* unlocked for the session / PIN changed */
    P11K_PAM_CREATED = 1, /* the login keychain was created, and unlocked */
    P11K_PAM_NOTHING = 2, /* no login keychain to change */
    P11K_PAM_FAILED = 3,  /* nothing changed; its line says why */
};

/* The longest password the module passes on (PAM's own limit is 512 bytes). */
#define P11K_PAM_MAX_PASSWORD 4096

#endif
