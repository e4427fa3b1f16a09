# A privileged host (AT_SECURE: a setuid or setgid program) runs with the
# environment of whoever started it. The module then ignores every
# P11KEYCHAIN_* and XDG_* variable and HOME, and reads only
# /etc/p11keychain/p11keychain.conf and the default store.
# The log file is opened O_NOFOLLOW, mode 0600: a symbolic link is refused.
#
# The privileged host is a setgid copy of tools/p11open.c run by user nobody,
# in a directory on a file system mounted without nosuid.
# run.sh: alone: it writes /etc/p11keychain/p11keychain.conf, the configuration of every process without one.

SYSTEM_CONF_DIR=/etc/p11keychain
SYSTEM_CONF=$SYSTEM_CONF_DIR/p11keychain.conf

# suid_capable_dir: a new directory on a file system that honours setuid and
# setgid bits ($TEST_TMP, else under the repository's .build).
suid_capable_dir() {
    local dir
    for dir in "$TEST_TMP" "$IT_BUILD"; do
        if ! findmnt -n -o OPTIONS -T "$dir" | tr ',' '\n' | grep -qx nosuid; then
            dir=$(mktemp -d "$dir/suid.XXXXXX")
            defer "rm -rf '$dir'"
            echo "$dir"
            return
        fi
    done
    fail "both $TEST_TMP and $IT_BUILD are on nosuid mounts: no setgid program can run here"
}

# install_system_conf TEXT: writes /etc/p11keychain/p11keychain.conf for this
# test; whatever was there is put back afterwards.
install_system_conf() {
    if [[ -e $SYSTEM_CONF ]]; then
        cp -a "$SYSTEM_CONF" "$TEST_TMP/system-conf.saved"
        defer "cp -a '$TEST_TMP/system-conf.saved' '$SYSTEM_CONF'"
    else
        [[ -d $SYSTEM_CONF_DIR ]] || defer "rmdir '$SYSTEM_CONF_DIR' 2>/dev/null || true"
        defer "rm -f '$SYSTEM_CONF'"
        mkdir -p "$SYSTEM_CONF_DIR"
    fi
    printf '%s' "$1" >"$SYSTEM_CONF"
    chmod 0644 "$SYSTEM_CONF"
}

test_a_setgid_host_ignores_the_environment_and_user_configuration() {
    [[ $(id -u) == 0 ]] || fail "needs root to install a setgid program and run it as nobody"
    local dir evil system out
    build_p11open
    dir=$(suid_capable_dir)
    chmod 0755 "$TEST_TMP" "$dir"
    cp "$P11KEYCHAIN_MODULE" "$dir/module.so"
    chmod 0644 "$dir/module.so"
    install -m 0755 "$P11OPEN" "$dir/p11open"
    # Set-group-ID root: the host runs as nobody with the root group's rights.
    install -m 2755 -o root -g root "$P11OPEN" "$dir/p11open-setgid"

    # Everything the invoking user controls, pointing away from the system's choice.
    evil=$TEST_TMP/evil
    mkdir -m 0777 "$evil" "$evil/dir" "$evil/home" "$evil/xdg-config" "$evil/xdg-data"
    mkdir -p "$evil/xdg-config/p11keychain"
    chmod -R 0777 "$evil"
    printf 'debug = yes\nlog-file = %s\n[token login]\npath = %s\n' \
        "$evil/conf.log" "$evil/conf-store.sqlite3" >"$evil/p11keychain.conf"
    cp "$evil/p11keychain.conf" "$evil/xdg-config/p11keychain/p11keychain.conf"
    # A file only the root group may append to: what a user would aim a log at.
    system=$TEST_TMP/system
    mkdir -m 0770 "$system"
    install -m 0660 /dev/null "$system/victim.log"
    install_system_conf "[token login]
path = $system/login.sqlite3
"
    local env=(env -i PATH=/usr/bin:/bin HOME="$evil/home" XDG_CONFIG_HOME="$evil/xdg-config"
        XDG_DATA_HOME="$evil/xdg-data" P11KEYCHAIN_DIR="$evil/dir" P11KEYCHAIN_CONF="$evil/p11keychain.conf"
        P11KEYCHAIN_DEBUG=1)

    note "control: the same host without setgid follows the environment"
    ok setpriv --reuid=nobody --regid=nogroup --clear-groups -- "${env[@]}" "$dir/p11open" "$dir/module.so"
    [[ -f $evil/conf-store.sqlite3 ]] || fail "control: the unprivileged host did not use the store of P11KEYCHAIN_CONF"
    assert_contains "$(cat "$evil/conf.log" 2>/dev/null)" "C_OpenSession -> CKR_OK" \
        "control: the log-file of P11KEYCHAIN_CONF written by the unprivileged host"
    rm -f "$evil"/conf-store.sqlite3* "$evil/conf.log"

    note "the setgid host: only $SYSTEM_CONF and the default store apply"
    printf 'debug = yes\nlog-file = %s\n' "$system/victim.log" >"$evil/p11keychain.conf"
    ok setpriv --reuid=nobody --regid=nogroup --clear-groups -- "${env[@]}" "$dir/p11open-setgid" "$dir/module.so"
    out=$RUN_OUT
    assert_line "$out" '^ok serial=' "the setgid host opens the store the system configuration names"
    [[ -f $system/login.sqlite3 ]] || fail "the setgid host did not use the store of $SYSTEM_CONF ($system/login.sqlite3)"
    assert_no_line "$out" 'p11keychain\[' "trace lines of a setgid host given P11KEYCHAIN_DEBUG=1 and a debug conf"
    assert_eq 0 "$(stat -c %s "$system/victim.log")" "size of the file the user's log-file named"
    assert_eq "" "$(find "$evil/dir" "$evil/xdg-data" "$evil/home" -mindepth 1)" "files made where P11KEYCHAIN_DIR, XDG_DATA_HOME and HOME point"
    [[ ! -e $evil/conf-store.sqlite3 ]] || fail "the setgid host used the store of P11KEYCHAIN_CONF"
}

test_a_symbolic_link_as_log_file_is_refused_and_a_new_log_is_private() {
    local target=$TEST_TMP/target.log
    build_p11open
    : >"$target"
    ln -s "$target" "$TEST_TMP/link.log"
    printf 'debug = yes\nlog-file = %s\n' "$TEST_TMP/link.log" >"$TEST_TMP/p11keychain.conf"
    export P11KEYCHAIN_CONF=$TEST_TMP/p11keychain.conf
    ok "$P11OPEN" "$P11KEYCHAIN_MODULE"
    assert_contains "$RUN_OUT" "log file $TEST_TMP/link.log refused: it is a symbolic link" "stderr of a host whose log-file is a symbolic link"
    assert_eq 0 "$(stat -c %s "$target")" "size of the file the symbolic link points at"

    printf 'debug = yes\nlog-file = %s\n' "$TEST_TMP/new.log" >"$P11KEYCHAIN_CONF"
    ok bash -c "umask 000; exec '$P11OPEN' '$P11KEYCHAIN_MODULE'"
    assert_eq 600 "$(stat -c %a "$TEST_TMP/new.log")" "mode of a new log file under umask 000"
    assert_contains "$(cat "$TEST_TMP/new.log")" "C_OpenSession -> CKR_OK" "the new log file"
}
