# The login unlocks the login keychain, as on macOS (docs/pam.md, ARCHITECTURE.md §6.5):
# pam_p11keychain.so in a PAM service file of the test's own (pam_unix for auth and password,
# our module after it), driven by pamtester as root, for a throwaway user with a fresh home,
# in a new session keyring, with no p11keychain command run first. Then, as that user in that
# session, Apple-style code with no unlock call of its own (Examples/SessionUnlock --key) adds
# and reads a generic password and a key; a password change through PAM re-wraps the keychain
# (the old password no longer unlocks, the new one does); no byte of either password is in
# the user's home or under /tmp. Needs root (useradd, /etc/pam.d).
#
# The module, its helper, the CLI and the example are taken from beside the PKCS#11 module,
# else from the debug build, unless P11KEYCHAIN_PAM_MODULE, P11KEYCHAIN_PAM_HELPER,
# P11KEYCHAIN_CLI, P11KEYCHAIN_SESSION_EXAMPLE name them. The service file names the helper
# (helper=), since the build under test is not installed in /usr/libexec.
# run.sh: alone: it adds users and writes /etc/pam.d.

# Drawn afresh for each run, so that no file holds them unless something wrote them down: the
# scan for them on disk needs no exceptions (a copy of this script, under /tmp or anywhere,
# holds only these lines).
PAM_OLD_PASSWORD=Old-$(head -c 12 /dev/urandom | base64 | tr '+/' '-_')
PAM_NEW_PASSWORD=New-$(head -c 12 /dev/urandom | base64 | tr '+/' '-_')

# built_program NAME: NAME beside the module, else in the debug build.
built_program() {
    local dir
    for dir in "$(dirname "$P11KEYCHAIN_MODULE")" "$IT_REPO/.build/debug"; do
        [[ -x $dir/$1 || -f $dir/$1 ]] && { echo "$dir/$1"; return; }
    done
    echo "$(dirname "$P11KEYCHAIN_MODULE")/$1"
}

# pam_setup: the tools, a new session keyring, the throwaway user and the service file, whose
# module lines name the helper under test (helper=).
pam_setup() {
    [[ $(id -u) == 0 ]] || fail "needs root (useradd, /etc/pam.d)"
    local tool
    for tool in pamtester useradd userdel chpasswd keyctl setpriv; do
        command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh installs it)"
    done
    PAM_MODULE=${P11KEYCHAIN_PAM_MODULE:-$(built_program libpam_p11keychain.so)}
    PAM_HELPER=${P11KEYCHAIN_PAM_HELPER:-$(built_program p11keychain-pam-helper)}
    CLI=${P11KEYCHAIN_CLI:-$(built_program p11keychain)}
    EXAMPLE=${P11KEYCHAIN_SESSION_EXAMPLE:-$(built_program session-unlock-example)}
    [[ -f $PAM_MODULE ]] || fail "PAM module not found at $PAM_MODULE (swift build --product pam_p11keychain)"
    [[ -x $PAM_HELPER ]] || fail "PAM helper not found at $PAM_HELPER (swift build --product p11keychain-pam-helper)"
    [[ -x $CLI ]] || fail "p11keychain not found at $CLI"
    [[ -x $EXAMPLE ]] || fail "session-unlock-example not found at $EXAMPLE"

    # Not through `ok`: the subshell, not this shell, would join the new keyring.
    keyctl new_session >/dev/null || fail "keyctl new_session failed"
    SESSION_RING=$(keyctl show @s | awk 'NR == 2 { print $1 }')
    defer "keyctl clear $SESSION_RING >/dev/null 2>&1 || true"

    # A home the user can reach ($TEST_TMP is root's, mode 0700).
    PAM_PARENT=$(mktemp -d /tmp/p11k-pam.XXXXXX)
    chmod 0755 "$PAM_PARENT"
    PAM_USER=p11kpam$$
    PAM_HOME=$PAM_PARENT/home
    PAM_SERVICE=p11keychain-test-$$
    defer "rm -f /etc/pam.d/$PAM_SERVICE; userdel -f $PAM_USER >/dev/null 2>&1 || true; rm -rf --one-file-system $PAM_PARENT"
    ok useradd -m -d "$PAM_HOME" -s /bin/sh "$PAM_USER"
    printf '%s:%s\n' "$PAM_USER" "$PAM_OLD_PASSWORD" | chpasswd || fail "chpasswd failed"
    PAM_UID=$(id -u "$PAM_USER")
    cat >"/etc/pam.d/$PAM_SERVICE" <<EOF
auth     required  pam_unix.so
auth     optional  $PAM_MODULE helper=$PAM_HELPER
account  required  pam_unix.so
password required  pam_unix.so
password optional  $PAM_MODULE helper=$PAM_HELPER
session  optional  $PAM_MODULE helper=$PAM_HELPER
EOF
}

# as_user COMMAND…: runs COMMAND as the throwaway user in this session keyring, with nothing
# of the test's environment (no P11KEYCHAIN_DIR or _CONF): only the user's HOME and a PATH.
as_user() {
    run setpriv --reuid="$PAM_USER" --regid="$PAM_USER" --init-groups --reset-env \
        env -C "$PAM_HOME" "$@"
}

# unlock_with PASSWORD: `p11keychain unlock` as the user, in a session keyring of its own.
unlock_with() {
    RUN_OUT=$(printf '%s\n' "$1" | setpriv --reuid="$PAM_USER" --regid="$PAM_USER" --init-groups \
        --reset-env env -C "$PAM_HOME" keyctl session - "$CLI" unlock --pin-fd 0 2>&1) && RUN_STATUS=0 ||
        RUN_STATUS=$?
    echo "$RUN_OUT"
}

test_a_pam_login_unlocks_the_login_keychain_for_apple_code_and_a_password_change_rewraps_it() {
    pam_setup
    local store=$PAM_HOME/.local/share/p11keychain/login.sqlite3
    [[ ! -e $store ]] || fail "the fresh user already has a keychain"

    note "first login: pamtester authenticate open_session creates and unlocks the keychain"
    local started
    started=$(date +%s%N)
    run pamtester -v "$PAM_SERVICE" "$PAM_USER" authenticate open_session < <(printf "%s\n" "$PAM_OLD_PASSWORD")
    assert_eq 0 "$RUN_STATUS" "pamtester's exit status ($RUN_OUT)"
    assert_contains "$RUN_OUT" "successfully opened a session" "pamtester's report"
    echo "first login (creates the keychain) took $((($(date +%s%N) - started) / 1000000)) ms"
    [[ -f $store ]] || fail "no login keychain at $store after the first login"
    assert_eq "$PAM_UID" "$(stat -c %u "$store")" "the keychain's owner"

    note "Apple-style code in that session, with no unlock: a password and a key"
    as_user "$EXAMPLE" --key pam.example alice pw-pam
    assert_eq 0 "$RUN_STATUS" "the example's exit status after the PAM login ($RUN_OUT)"
    assert_line "$RUN_OUT" '^SecItemAdd: 0 ' "SecItemAdd after the PAM login"
    assert_line "$RUN_OUT" '^password: matches$' "the password read back"
    assert_line "$RUN_OUT" '^SecItemCopyMatching\(key\): 0 ' "the key found by its tag"
    assert_line "$RUN_OUT" '^signature: made$' "a signature with the key found"

    note "a second login unlocks the same keychain (nothing re-created)"
    local inode
    inode=$(stat -c %i "$store")
    started=$(date +%s%N)
    run pamtester "$PAM_SERVICE" "$PAM_USER" authenticate open_session < <(printf "%s\n" "$PAM_OLD_PASSWORD")
    assert_eq 0 "$RUN_STATUS" "the second login ($RUN_OUT)"
    echo "second login (unlocks) took $((($(date +%s%N) - started) / 1000000)) ms"
    assert_eq "$inode" "$(stat -c %i "$store")" "the keychain file after the second login"
    as_user "$EXAMPLE" pam.example alice pw-pam
    assert_line "$RUN_OUT" '^password: matches$' "the password after the second login"

    note "password change through PAM (pam_unix, then the module)"
    started=$(date +%s%N)
    run pamtester -v "$PAM_SERVICE" "$PAM_USER" 'chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)' \
        < <(printf '%s\n%s\n%s\n' "$PAM_OLD_PASSWORD" "$PAM_NEW_PASSWORD" "$PAM_NEW_PASSWORD")
    assert_eq 0 "$RUN_STATUS" "pamtester chauthtok ($RUN_OUT)"
    echo "password change took $((($(date +%s%N) - started) / 1000000)) ms"
    assert_contains "$RUN_OUT" "authentication token altered successfully" "pamtester's report"

    note "the session's unlock follows the change: the same session still works"
    as_user "$EXAMPLE" pam.example alice pw-pam
    assert_eq 0 "$RUN_STATUS" "the example after the change ($RUN_OUT)"

    note "the old password no longer unlocks the keychain; the new one does"
    unlock_with "$PAM_OLD_PASSWORD"
    [[ $RUN_STATUS != 0 ]] || fail "p11keychain unlock with the old password succeeded"
    unlock_with "$PAM_NEW_PASSWORD"
    assert_eq 0 "$RUN_STATUS" "p11keychain unlock with the new password ($RUN_OUT)"

    note "a login with the new password unlocks it"
    run pamtester "$PAM_SERVICE" "$PAM_USER" authenticate open_session < <(printf "%s\n" "$PAM_NEW_PASSWORD")
    assert_eq 0 "$RUN_STATUS" "a login with the new password ($RUN_OUT)"

    note "nothing of either password on disk: the home and /tmp"
    local found
    for secret in "$PAM_OLD_PASSWORD" "$PAM_NEW_PASSWORD"; do
        found=$(timeout 120 grep -rlaF --devices=skip -s -- "$secret" "$PAM_HOME" /tmp || true)
        [[ -z $found ]] || fail "a password is on disk in: $found"
    done
}

test_a_pam_login_succeeds_and_leaves_the_keychain_locked_when_its_PIN_is_not_the_password() {
    pam_setup
    note "the user's keychain, made by hand with another PIN"
    as_user sh -c 'printf "so-pin-pam-other\n" >so; printf "pin-pam-other\n" >pin;
        "$0" init --so-pin-file so --pin-file pin; status=$?; rm -f so pin; exit $status' "$CLI"
    assert_eq 0 "$RUN_STATUS" "p11keychain init as the user ($RUN_OUT)"

    run pamtester -v "$PAM_SERVICE" "$PAM_USER" authenticate open_session < <(printf "%s\n" "$PAM_OLD_PASSWORD")
    assert_eq 0 "$RUN_STATUS" "pamtester's exit status: our failure never fails the login ($RUN_OUT)"
    assert_contains "$RUN_OUT" "successfully opened a session" "pamtester's report"

    as_user "$EXAMPLE" pam.example alice pw-pam
    assert_eq 1 "$RUN_STATUS" "the example in a session the module could not unlock"
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd in the locked session"
}

test_a_helper_that_hangs_is_killed_with_what_it_started_after_the_time_limit_and_the_login_succeeds() {
    # A helper that starts a child and never ends: the module must not wait beyond timeout=,
    # and must kill the helper's whole process group (the sleep too), then reap it.
    pam_setup
    local hang=$PAM_PARENT/hang.sh
    cat >"$hang" <<'EOF'
#!/bin/sh
# argv: unlock HOME. Reads the password to its end, as the helper does, then hangs.
cat >/dev/null
sleep 300 &
echo $! >"$2/hang.pid"
wait
EOF
    chmod 0755 "$hang"
    sed -i "s|helper=[^ ]*|helper=$hang timeout=1|" "/etc/pam.d/$PAM_SERVICE"

    local started elapsed sleeper
    started=$(date +%s%N)
    run timeout 60 pamtester "$PAM_SERVICE" "$PAM_USER" authenticate open_session \
        < <(printf "%s\n" "$PAM_OLD_PASSWORD")
    elapsed=$((($(date +%s%N) - started) / 1000000))
    echo "a login with a hanging helper took $elapsed ms (timeout=1)"
    assert_eq 0 "$RUN_STATUS" "the login with a hanging helper ($RUN_OUT)"
    assert_contains "$RUN_OUT" "successfully opened a session" "pamtester's report"
    [[ -f $PAM_HOME/hang.pid ]] || fail "the module did not run the helper named by helper="
    ((elapsed < 10000)) || fail "the login waited $elapsed ms for a helper with timeout=1"
    # Dead: gone, or a zombie (in a container whose init does not reap, a killed orphan stays
    # one). SIGKILL takes effect at once, but give it a moment.
    sleeper=$(cat "$PAM_HOME/hang.pid")
    local state tries=0
    while state=$(awk '{ print $3 }' "/proc/$sleeper/stat" 2>/dev/null) && [[ -n $state && $state != Z ]]; do
        ((++tries < 20)) || {
            kill "$sleeper" 2>/dev/null || true
            fail "the helper's child (pid $sleeper, state $state) outlived the time limit"
        }
        sleep 0.1
    done
    [[ ! -e $PAM_HOME/.local/share/p11keychain/login.sqlite3 ]] || fail "a keychain was made without the helper"
}
