/*
 * pam_p11keychain.so: the login unlocks the user's login keychain, as on macOS (docs/pam.md,
 * ARCHITECTURE.md §6.5). Only the PAM service functions (pam_sm_*) are exported
 * (pam/exports.map). The module is C alone: every keychain rule is KeychainCore's, run by a
 * helper program (pam/include/pam_p11keychain.h has the protocol) that the module execs in a
 * child process that is the target user.
 *
 * auth keeps the typed password in the PAM handle (pam_set_data, wiped by its cleanup) until
 * the session opens; open_session unlocks (or first creates) the keychain with it and drops
 * it; chauthtok follows a password change. Why a helper and not a fork that runs the work:
 * the host may be multithreaded (gdm), and after fork() in such a process only
 * async-signal-safe calls are safe, until exec. Everything the child needs (the user's groups,
 * argv, the environment) is made before fork; the child only moves descriptors, drops its ids
 * and execs. The parent's wait is bounded (timeout=, then SIGKILL and reap). Nothing here ever
 * fails a login: our failures are logged (pam_syslog) and ignored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam_p11keychain.h"

/* The pam_set_data name of the password kept from auth to open_session. */
static const char password_data[] = "pam_p11keychain:password";

/* How long the helper may take unless timeout= says otherwise: a first login's keychain
   creation takes about 2 s. */
enum { default_timeout_seconds = 30, max_timeout_seconds = 3600 };

static void wipe_password(pam_handle_t *pamh, void *data, int status)
{
    (void)pamh;
    (void)status;
    if (data == NULL) return;
    explicit_bzero(data, strlen(data));
    free(data);
}

/* The module's arguments: helper=PATH and timeout=SECONDS (1 to 3600). */
struct options {
    const char *helper;
    int timeout_seconds;
};

static struct options read_options(pam_handle_t *pamh, int argc, const char **argv)
{
    struct options options = {P11K_PAM_HELPER, default_timeout_seconds};
    for (int index = 0; index < argc; index++) {
        const char *argument = argv[index];
        if (strncmp(argument, "helper=", 7) == 0 && argument[7] == '/') {
            options.helper = argument + 7;
        } else if (strncmp(argument, "timeout=", 8) == 0) {
            char *end = NULL;
            errno = 0;
            long seconds = strtol(argument + 8, &end, 10);
            if (errno == 0 && end != argument + 8 && *end == '\0' && seconds >= 1 &&
                seconds <= max_timeout_seconds)
                options.timeout_seconds = (int)seconds;
            else
                pam_syslog(pamh, LOG_WARNING, "ignoring %s: 1 to %d seconds", argument,
                           max_timeout_seconds);
        } else {
            pam_syslog(pamh, LOG_WARNING, "unknown argument %s (helper=/PATH, timeout=SECONDS)",
                       argument);
        }
    }
    return options;
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

/* The work of one helper run. */
struct work {
    const char *what;     /* for the log: open_session, chauthtok */
    const char *command;  /* the helper's argv[1]: unlock, change */
    const char *password;
    const char *old_password;
};

/* Everything the child needs, made before fork: the child calls only async-signal-safe
   functions (dup2, close_range, setpgid, setgroups, setresgid, setresuid, execve, _exit). */
struct launch {
    uid_t uid;
    gid_t gid;
    int change_ids; /* the host is root: drop to the user */
    gid_t *groups;
    int group_count;
    char *argv[4];
    char *envp[2];
};

static void exec_helper(const struct launch *launch, int socket_end)
{
    /* Above 2 first: a host with 0, 1 or 2 closed may have made the socket one of them. */
    int end = fcntl(socket_end, F_DUPFD, 3);
    int null = open("/dev/null", O_WRONLY);
    int quiet = null < 0 ? -1 : fcntl(null, F_DUPFD, 3);
    if (end < 0 || quiet < 0 || dup2(end, 0) < 0 || dup2(end, 1) < 0 || dup2(quiet, 2) < 0)
        _exit(P11K_PAM_FAILED);
    /* None of the host's descriptors reach a program that runs as the user. */
    close_range(3, ~0U, 0);
    /* Its own process group: a time-out kills whatever the helper started too. */
    setpgid(0, 0);
    if (launch->change_ids) {
        if (setgroups((size_t)launch->group_count, launch->groups) != 0 ||
            setresgid(launch->gid, launch->gid, launch->gid) != 0 ||
            setresuid(launch->uid, launch->uid, launch->uid) != 0)
            _exit(P11K_PAM_FAILED);
    }
    /* A host that is neither root nor the user cannot reach the user's keychain. */
    if (getuid() != launch->uid || geteuid() != launch->uid) _exit(P11K_PAM_FAILED);
    execve(launch->argv[0], launch->argv, launch->envp);
    _exit(P11K_PAM_FAILED);
}

/* Sends the password(s) to the helper and closes the sending side. MSG_NOSIGNAL: a helper
   that is gone must not raise SIGPIPE in the host. */
static int send_passwords(int socket_end, const struct work *work)
{
    const char *parts[3] = {work->old_password, "", work->password};
    size_t lengths[3] = {work->old_password ? strlen(work->old_password) : 0,
                         work->old_password ? 1 : 0, strlen(work->password)};
    for (int part = 0; part < 3; part++) {
        size_t sent = 0;
        while (sent < lengths[part]) {
            ssize_t count = send(socket_end, parts[part] + sent, lengths[part] - sent, MSG_NOSIGNAL);
            if (count < 0 && errno == EINTR) continue;
            if (count <= 0) return -1;
            sent += (size_t)count;
        }
    }
    return shutdown(socket_end, SHUT_WR);
}

static long long now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Reads the helper's line into `line` until it closes its end, the deadline passes, or the
   line is full. */
static void read_line(int socket_end, char *line, size_t capacity, long long deadline)
{
    size_t used = 0;
    while (used + 1 < capacity) {
        long long left = deadline - now_ms();
        if (left <= 0) break;
        struct pollfd ready = {socket_end, POLLIN, 0};
        int polled = poll(&ready, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (polled < 0 && errno == EINTR) continue;
        if (polled <= 0) break;
        ssize_t count = recv(socket_end, line + used, capacity - 1 - used, 0);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        used += (size_t)count;
    }
    line[used] = '\0';
    line[strcspn(line, "\n")] = '\0';
}

/* Waits for the child until the deadline; then kills its process group and reaps it. Returns
   its wait status, or -1 when it was killed for taking too long. */
static int wait_bounded(pid_t child, long long deadline)
{
    int status = 0;
    for (;;) {
        pid_t waited = waitpid(child, &status, WNOHANG);
        if (waited == child) return status;
        if (waited < 0 && errno != EINTR) return -1;
        if (now_ms() >= deadline) break;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    kill(-child, SIGKILL);
    kill(child, SIGKILL);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return -1;
}

/* Runs the helper for `work` as the target user and waits for it, at most the time limit.
   Returns its result (P11K_PAM_*), P11K_PAM_FAILED when it could not run it. */
static int run_as_user(pam_handle_t *pamh, const struct options *options, const struct work *work)
{
    struct passwd entry;
    char buffer[4096];
    struct passwd *user = target_user(pamh, &entry, buffer, sizeof buffer);
    if (user == NULL) return P11K_PAM_FAILED;
    if (strlen(work->password) > P11K_PAM_MAX_PASSWORD ||
        (work->old_password != NULL && strlen(work->old_password) > P11K_PAM_MAX_PASSWORD)) {
        pam_syslog(pamh, LOG_ERR, "%s: the password is longer than %d bytes", work->what,
                   P11K_PAM_MAX_PASSWORD);
        return P11K_PAM_FAILED;
    }

    struct launch launch = {.uid = user->pw_uid, .gid = user->pw_gid, .change_ids = geteuid() == 0};
    if (launch.change_ids) {
        /* The first call counts the groups, the second lists them. */
        int count = 0;
        getgrouplist(user->pw_name, user->pw_gid, NULL, &count);
        launch.groups = count > 0 ? calloc((size_t)count, sizeof(gid_t)) : NULL;
        launch.group_count = count;
        if (launch.groups == NULL ||
            getgrouplist(user->pw_name, user->pw_gid, launch.groups, &launch.group_count) < 0) {
            pam_syslog(pamh, LOG_ERR, "%s: cannot list the groups of %s", work->what,
                       user->pw_name);
            free(launch.groups);
            return P11K_PAM_FAILED;
        }
    }
    static char path_variable[] = "PATH=/usr/bin:/bin";
    launch.argv[0] = (char *)options->helper;
    launch.argv[1] = (char *)work->command;
    launch.argv[2] = user->pw_dir;
    launch.argv[3] = NULL;
    launch.envp[0] = path_variable;
    launch.envp[1] = NULL;

    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
        pam_syslog(pamh, LOG_ERR, "%s: cannot make a socket pair: %s", work->what, strerror(errno));
        free(launch.groups);
        return P11K_PAM_FAILED;
    }

    /* A host that ignores SIGCHLD would have the child reaped before waitpid sees it. */
    struct sigaction ours = {0}, theirs;
    ours.sa_handler = SIG_DFL;
    sigemptyset(&ours.sa_mask);
    sigaction(SIGCHLD, &ours, &theirs);

    long long deadline = now_ms() + (long long)options->timeout_seconds * 1000;
    pid_t child = fork();
    if (child == 0) exec_helper(&launch, sockets[1]);
    close(sockets[1]);

    int result = P11K_PAM_FAILED;
    if (child < 0) {
        pam_syslog(pamh, LOG_ERR, "%s: cannot fork: %s", work->what, strerror(errno));
    } else {
        char line[512] = "";
        if (send_passwords(sockets[0], work) == 0) read_line(sockets[0], line, sizeof line, deadline);
        int status = wait_bounded(child, deadline);
        if (status == -1)
            pam_syslog(pamh, LOG_ERR, "%s: %s took longer than %d s: killed", work->what,
                       options->helper, options->timeout_seconds);
        else if (WIFEXITED(status) && WEXITSTATUS(status) <= P11K_PAM_NOTHING)
            result = WEXITSTATUS(status);
        else if (WIFSIGNALED(status))
            pam_syslog(pamh, LOG_ERR, "%s: %s died of signal %d", work->what, options->helper,
                       WTERMSIG(status));
        else if (line[0] == '\0')
            pam_syslog(pamh, LOG_ERR, "%s: %s failed (exit status %d)", work->what,
                       options->helper, WEXITSTATUS(status));
        if (line[0] != '\0')
            pam_syslog(pamh, result == P11K_PAM_FAILED ? LOG_ERR : LOG_INFO, "%s: %s", work->what,
                       line);
    }
    close(sockets[0]);
    sigaction(SIGCHLD, &theirs, NULL);
    free(launch.groups);
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
    /* PAM_SUCCESS whatever happens, as pam_gnome_keyring does: a stack whose session modules
       all return PAM_IGNORE fails the session (PAM_PERM_DENIED), and ours must never. */
    const void *data = NULL;
    /* No password (a key-based ssh login, su from root): nothing to unlock with. */
    if (pam_get_data(pamh, password_data, &data) != PAM_SUCCESS || data == NULL) return PAM_SUCCESS;
    struct options options = read_options(pamh, argc, argv);
    struct work work = {"open_session", "unlock", data, NULL};
    run_as_user(pamh, &options, &work); /* logs its own failure */
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
    struct options options = read_options(pamh, argc, argv);
    struct work work = {"chauthtok", "change", new_password, old_password};
    return run_as_user(pamh, &options, &work) == P11K_PAM_FAILED ? PAM_IGNORE : PAM_SUCCESS;
}
