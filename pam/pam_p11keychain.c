/*
 * pam_p11keychain.so: the login unlocks the user's login keychain, as on macOS (docs/pam.md,
 * ARCHITECTURE.md §6.5). Only the PAM service functions (pam_sm_*) are exported
 * (pam/exports.map); every keychain rule is KeychainCore's, reached through
 * pam/include/pam_p11keychain.h.
 *
 * auth keeps the typed password in the PAM handle (pam_set_data, wiped by its cleanup) until
 * the session opens; open_session unlocks (or first creates) the keychain with it and drops
 * it; chauthtok follows a password change. The keychain work runs in a child process that is
 * the target user: the host (often root) keeps its own ids, files and Swift state untouched.
 * Nothing here ever fails a login: our failures are logged (pam_syslog) and ignored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam_p11keychain.h"

/* The pam_set_data name of the password kept from auth to open_session. */
static const char password_data[] = "pam_p11keychain:password";

static void wipe_password(pam_handle_t *pamh, void *data, int status)
{
    (void)pamh;
    (void)status;
    if (data == NULL) return;
    explicit_bzero(data, strlen(data));
    free(data);
}

/* The target user's password database entry, in `buffer`; NULL when there is none. */
static struct passwd *target_user(pam_handle_t *pamh, struct passwd *entry, char *buffer,
                                  size_t size)
{
    const char *name = NULL;
    struct passwd *found = NULL;
    if (pam_get_user(pamh, &name, NULL) != PAM_SUCCESS || name == NULL || name[0] == '\0')
        return NULL;
    if (getpwnam_r(name, entry, buffer, size, &found) != 0 || found == NULL) {
        pam_syslog(pamh, LOG_WARNING, "no password database entry for user %s", name);
        return NULL;
    }
    return found;
}

/* Becomes `user` (groups, gid, uid, all three ids of each) in this child; 0 on success. */
static int become(const struct passwd *user)
{
    if (geteuid() == 0) {
        if (initgroups(user->pw_name, user->pw_gid) != 0) return -1;
        if (setresgid(user->pw_gid, user->pw_gid, user->pw_gid) != 0) return -1;
        if (setresuid(user->pw_uid, user->pw_uid, user->pw_uid) != 0) return -1;
    }
    /* A host that is neither root nor the user cannot reach the user's keychain. */
    if (getuid() != user->pw_uid || geteuid() != user->pw_uid) return -1;
    return 0;
}

/* The work of one bridge call, run as the user in a child process. */
struct work {
    const char *what;
    const char *password;
    const char *old_password;
};

static int run_work(const struct work *work, const char *home, char *message, size_t capacity)
{
    const unsigned char *password = (const unsigned char *)work->password;
    if (work->old_password == NULL)
        return p11k_pam_unlock(home, password, strlen(work->password), message, capacity);
    return p11k_pam_change(home, (const unsigned char *)work->old_password,
                           strlen(work->old_password), password, strlen(work->password), message,
                           capacity);
}

/* Runs `work` in a child that is the target user and waits for it. Returns the bridge's
   result (P11K_PAM_*), or P11K_PAM_FAILED when the child could not run it. */
static int run_as_user(pam_handle_t *pamh, const struct work *work)
{
    struct passwd entry;
    char buffer[4096];
    struct passwd *user = target_user(pamh, &entry, buffer, sizeof buffer);
    if (user == NULL) return P11K_PAM_FAILED;

    /* A host that ignores SIGCHLD would have the child reaped before waitpid sees it. */
    struct sigaction ours = {0}, theirs;
    ours.sa_handler = SIG_DFL;
    sigemptyset(&ours.sa_mask);
    sigaction(SIGCHLD, &ours, &theirs);

    pid_t child = fork();
    if (child == 0) {
        char message[512] = "";
        int result = P11K_PAM_FAILED;
        if (become(user) != 0) {
            snprintf(message, sizeof message, "cannot become user %s: %s", user->pw_name,
                     strerror(errno));
        } else {
            result = run_work(work, user->pw_dir, message, sizeof message);
        }
        if (message[0] != '\0')
            pam_syslog(pamh, result == P11K_PAM_FAILED ? LOG_ERR : LOG_INFO, "%s: %s", work->what,
                       message);
        /* _exit: the host's atexit handlers and stdio buffers are the host's, not ours. */
        _exit(result == P11K_PAM_FAILED ? 255 : result);
    }

    int result = P11K_PAM_FAILED;
    if (child < 0) {
        pam_syslog(pamh, LOG_ERR, "%s: cannot fork: %s", work->what, strerror(errno));
    } else {
        int status = 0;
        pid_t waited;
        do {
            waited = waitpid(child, &status, 0);
        } while (waited < 0 && errno == EINTR);
        if (waited == child && WIFEXITED(status) && WEXITSTATUS(status) != 255)
            result = WEXITSTATUS(status);
        else if (waited == child && WIFSIGNALED(status))
            pam_syslog(pamh, LOG_ERR, "%s: the child died of signal %d", work->what,
                       WTERMSIG(status));
    }
    sigaction(SIGCHLD, &theirs, NULL);
    return result;
}

/* auth: keep the password pam_unix (or whoever came first) checked, for open_session. */
PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    (void)argc;
    (void)argv;
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL) return PAM_IGNORE;
    char *copy = strdup(item);
    if (copy == NULL) {
        pam_syslog(pamh, LOG_ERR, "cannot keep the password for the session: out of memory");
        return PAM_IGNORE;
    }
    if (pam_set_data(pamh, password_data, copy, wipe_password) != PAM_SUCCESS) {
        wipe_password(pamh, copy, 0);
        pam_syslog(pamh, LOG_ERR, "cannot keep the password for the session");
        return PAM_IGNORE;
    }
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_SUCCESS;
}

/* open_session: unlock (or create) the login keychain for the session, then drop the password. */
PAM_EXTERN int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    (void)argc;
    (void)argv;
    /* PAM_SUCCESS whatever happens, as pam_gnome_keyring does: a stack whose session modules
       all return PAM_IGNORE fails the session (PAM_PERM_DENIED), and ours must never. */
    const void *data = NULL;
    /* No password (a key-based ssh login, su from root): nothing to unlock with. */
    if (pam_get_data(pamh, password_data, &data) != PAM_SUCCESS || data == NULL) return PAM_SUCCESS;
    struct work work = {"open_session", data, NULL};
    run_as_user(pamh, &work); /* logs its own failure */
    /* Replacing the data runs its cleanup: the password is wiped now, not at pam_end. */
    pam_set_data(pamh, password_data, NULL, NULL);
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    /* The unlock lives in the session keyring, which ends with the session. */
    return PAM_SUCCESS;
}

/* chauthtok: after the password modules before us changed it, re-wrap the keychain's token key
   under the new password. */
PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)argc;
    (void)argv;
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE;
    const void *old_password = NULL, *new_password = NULL;
    pam_get_item(pamh, PAM_OLDAUTHTOK, &old_password);
    pam_get_item(pamh, PAM_AUTHTOK, &new_password);
    if (new_password == NULL) return PAM_IGNORE;
    if (old_password == NULL) {
        /* root set the password without the old one: the keychain keeps the old PIN. */
        pam_syslog(pamh, LOG_NOTICE,
                   "chauthtok: no old password, so the login keychain's PIN is unchanged "
                   "(change it with p11keychain set-pin)");
        return PAM_IGNORE;
    }
    struct work work = {"chauthtok", new_password, old_password};
    return run_as_user(pamh, &work) == P11K_PAM_FAILED ? PAM_IGNORE : PAM_SUCCESS;
}
