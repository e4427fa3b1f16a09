# A real install: `make install` lays out exactly the files README
# "Install" lists and `make uninstall` removes them; the Debian package installs with apt,
# works with no Swift toolchain present, has no lintian error, and leaves nothing behind
# when purged; the README lists the dependencies the package derives; the man pages
# render without warnings and document every command; the bash completion completes.
#
# What is installed is the build under test: the module $P11KEYCHAIN_MODULE and the
# p11keychain program beside it (scripts/test.sh builds both in release).
# run.sh: alone: it installs the package into /usr and /etc, which every test would then see.

# The CLI of the build under test.
install_cli() {
    local cli
    cli=$(dirname "$P11KEYCHAIN_MODULE")/p11keychain
    [[ -x $cli ]] || fail "no p11keychain beside the module ($cli): build it (swift build -c release --product p11keychain)"
    echo "$cli"
}

# make_install ARGS...: make install (or uninstall, etc.) of the build under test.
make_install() {
    local cli
    cli=$(install_cli)
    ok make -s -C "$IT_REPO" RELEASE_MODULE="$P11KEYCHAIN_MODULE" RELEASE_CLI="$cli" \
        RELEASE_PAM="$(dirname "$P11KEYCHAIN_MODULE")/libpam_p11keychain.so" \
        RELEASE_PAM_HELPER="$(dirname "$P11KEYCHAIN_MODULE")/p11keychain-pam-helper" "$@"
}

multiarch() { dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch; }

# installed_files ROOT: every file and link under ROOT, relative, sorted, with its mode.
installed_files() {
    (cd "$1" && find . ! -type d -printf '%m %P\n' | sort -k2)
}

# The documented layout for PREFIX=/usr (README "Install"), with each file's mode.
documented_files_usr() {
    local arch
    arch=$(multiarch)
    cat <<FILES | sort -k2
755 usr/bin/p11keychain
644 usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so
644 usr/share/p11-kit/modules/p11keychain.module
644 usr/share/man/man1/p11keychain.1
644 usr/share/man/man5/p11keychain.conf.5
644 usr/share/bash-completion/completions/p11keychain
644 usr/share/doc/p11keychain/p11keychain.conf
644 lib/$arch/security/pam_p11keychain.so
755 usr/libexec/p11keychain/pam-helper
FILES
}

test_make_install_lays_out_exactly_the_documented_files() {
    local root=$TEST_TMP/root arch
    arch=$(multiarch)
    make_install install DESTDIR="$root" PREFIX=/usr
    assert_eq "$(documented_files_usr)" "$(installed_files "$root")" "make install PREFIX=/usr DESTDIR=\$tmp"
    assert_same_file "$P11KEYCHAIN_MODULE" "$root/usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so" "installed module"
    assert_eq "module: /usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so" \
        "$(grep '^module:' "$root/usr/share/p11-kit/modules/p11keychain.module")" "the p11-kit module file's path"
    assert_contains "$(cat "$root/usr/share/p11-kit/modules/p11keychain.module")" "critical: no" "p11-kit module file"
    # The installed program finds the installed module by itself (bin/../lib/<multiarch>/pkcs11).
    ok env -u P11KEYCHAIN_MODULE "$root/usr/bin/p11keychain" module-path
    assert_eq "$root/usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so" "$RUN_OUT" "module-path of the installed program"

    note "the default PREFIX, /usr/local: lib/pkcs11, no multiarch; p11-kit's directory all the same"
    local local_root=$TEST_TMP/local
    make_install install DESTDIR="$local_root"
    assert_eq "$(
        sort -k2 <<FILES
755 usr/local/bin/p11keychain
644 usr/local/lib/pkcs11/libp11keychain-pkcs11.so
644 usr/share/p11-kit/modules/p11keychain.module
644 usr/local/share/man/man1/p11keychain.1
644 usr/local/share/man/man5/p11keychain.conf.5
644 usr/local/share/bash-completion/completions/p11keychain
644 usr/local/share/doc/p11keychain/p11keychain.conf
644 lib/$arch/security/pam_p11keychain.so
755 usr/libexec/p11keychain/pam-helper
FILES
    )" "$(installed_files "$local_root")" "make install DESTDIR=\$tmp (PREFIX=/usr/local)"
    assert_eq "module: /usr/local/lib/pkcs11/libp11keychain-pkcs11.so" \
        "$(grep '^module:' "$local_root/usr/share/p11-kit/modules/p11keychain.module")" "module path for /usr/local"
    ok env -u P11KEYCHAIN_MODULE "$local_root/usr/local/bin/p11keychain" module-path
    assert_eq "$local_root/usr/local/lib/pkcs11/libp11keychain-pkcs11.so" "$RUN_OUT" "module-path under /usr/local"
}

test_make_uninstall_removes_exactly_what_install_wrote() {
    local root=$TEST_TMP/root
    # Something that is not p11keychain's, in the directories it installs into, stays.
    mkdir -p "$root/usr/bin" "$root/usr/share/p11-kit/modules"
    echo other >"$root/usr/bin/other-tool"
    echo "module: /x.so" >"$root/usr/share/p11-kit/modules/other.module"
    make_install install DESTDIR="$root" PREFIX=/usr
    make_install uninstall DESTDIR="$root" PREFIX=/usr
    assert_eq "$(printf '644 usr/bin/other-tool\n644 usr/share/p11-kit/modules/other.module')" \
        "$(installed_files "$root")" "files left by make uninstall"
    [[ ! -e $root/usr/share/doc/p11keychain ]] || fail "make uninstall left the directory share/doc/p11keychain"
    note "uninstall again: nothing left to remove is not an error"
    make_install uninstall DESTDIR="$root" PREFIX=/usr
}

test_the_version_is_the_VERSION_file_everywhere() {
    local version cli
    version=$(tr -d ' \n' <"$IT_REPO/VERSION")
    cli=$(install_cli)
    ok "$cli" --version
    assert_eq "p11keychain $version" "$RUN_OUT" "p11keychain --version"
    # The module reports it as CK_INFO.libraryVersion (major.minor).
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -I
    assert_line "$RUN_OUT" "^Library .*\(ver $version\)\$" "pkcs11-tool -I shows the library version" "Library"
}

# deb_restore: what the package test changes on the machine is undone, whatever happened.
deb_restore() {
    if dpkg-query -W -f='${Status}' p11keychain 2>/dev/null | grep -q installed; then
        dpkg --purge p11keychain >/dev/null 2>&1 || echo "cleanup: dpkg --purge p11keychain failed" >&2
    fi
}

test_the_deb_installs_works_without_the_toolchain_and_purges_cleanly() {
    [[ $(id -u) == 0 ]] || fail "needs root to install a package"
    if dpkg-query -W -f='${Status}' p11keychain 2>/dev/null | grep -q 'install ok installed'; then
        fail "p11keychain is installed on this machine already: the test would remove it (dpkg --purge p11keychain first)"
    fi
    [[ ! -e /usr/share/p11-kit/modules/p11keychain.module ]] ||
        fail "/usr/share/p11-kit/modules/p11keychain.module exists and belongs to no package: the test would replace it"
    local version arch deb cli
    version=$(tr -d ' \n' <"$IT_REPO/VERSION")
    arch=$(multiarch)
    cli=$(install_cli)
    ok env RELEASE_MODULE="$P11KEYCHAIN_MODULE" RELEASE_CLI="$cli" \
        RELEASE_PAM="$(dirname "$P11KEYCHAIN_MODULE")/libpam_p11keychain.so" \
        RELEASE_PAM_HELPER="$(dirname "$P11KEYCHAIN_MODULE")/p11keychain-pam-helper" \
        bash "$IT_REPO/scripts/build-deb.sh" "$TEST_TMP/deb"
    deb=$TEST_TMP/deb/p11keychain_${version}_amd64.deb
    [[ -f $deb ]] || fail "scripts/build-deb.sh printed '$RUN_OUT', and no $deb exists"

    ok dpkg-deb -f "$deb" Package Version Architecture Depends
    assert_contains "$RUN_OUT" "Package: p11keychain" "package name"
    assert_contains "$RUN_OUT" "Version: $version" "package version (VERSION)"
    assert_contains "$RUN_OUT" "Architecture: amd64" "package architecture"
    local depends package
    depends=$(dpkg-deb -f "$deb" Depends)
    for package in libssl3 libsqlite3-0 p11-kit libc6; do
        grep -qE "(^|, )$package( |,|\$)" <<<"$depends" || fail "Depends lacks $package: $depends"
    done
    # Derived from what the binaries link: no Swift toolchain package, no libkeyutils unless linked.
    if ldd "$cli" "$P11KEYCHAIN_MODULE" | grep -q libkeyutils; then
        grep -q libkeyutils1 <<<"$depends" || fail "the binaries link libkeyutils, Depends lacks libkeyutils1: $depends"
    fi
    ok dpkg-deb -c "$deb"
    assert_contains "$RUN_OUT" "./usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so" "package contents"
    assert_contains "$RUN_OUT" "./usr/share/man/man1/p11keychain.1.gz" "package contents"
    assert_eq "" "$(awk '$2 != "root/root"' <<<"$RUN_OUT")" "entries of the package not owned by root/root"
    assert_contains "$RUN_OUT" "./usr/share/doc/p11keychain/copyright" "package contents"
    assert_contains "$RUN_OUT" "./usr/share/doc/p11keychain/changelog.gz" "package contents"

    note "lintian: no error (E:) on the package"
    run lintian "$deb"
    assert_no_line "$RUN_OUT" '^E: ' "lintian $(basename "$deb")"
    # lintian fails on errors alone by default (--fail-on error); a crash fails too.
    [[ $RUN_STATUS == 0 ]] || fail "lintian $(basename "$deb") failed: $(summarize "$RUN_OUT")"

    defer deb_restore
    note "install with apt, offline: every dependency is installed already"
    ok env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 "$deb"
    ok dpkg-query -W -f='${Status} ${Version}\n' p11keychain
    assert_eq "install ok installed $version" "$RUN_OUT" "dpkg status after apt-get install"
    local listed
    listed=$(dpkg -L p11keychain)
    printf '%s\n' "$listed" >"$TEST_TMP/package-files"
    ok ldd /usr/bin/p11keychain
    assert_no_line "$RUN_OUT" 'libswift|libFoundation|lib_FoundationICU|libdispatch|libBlocksRuntime|not found' \
        "libraries the installed p11keychain needs (ldd)"

    note "with the Swift toolchain hidden: the installed program and plain p11tool (through p11-kit)"
    make_cert inst "/CN=Installed Package"
    local toolchain script
    toolchain=$(swift_toolchain_dir)
    case $toolchain in
    / | /usr | /usr/*) fail "the Swift toolchain is installed in $toolchain, among the system's own files: cannot hide it alone" ;;
    esac
    # A private mount namespace: an empty tmpfs over the toolchain, and over /etc/pkcs11 so
    # that only the package's own registration (/usr/share/p11-kit/modules) tells p11-kit
    # where the module is. The store is the test's ($P11KEYCHAIN_DIR).
    script='
        set -e
        if [ -n "$TOOLCHAIN" ]; then
            mount -t tmpfs none "$TOOLCHAIN"
            if ls "$TOOLCHAIN"/usr/lib/swift/linux/libswiftCore.so 2>/dev/null; then
                echo "the toolchain is still visible"; exit 1
            fi
            echo "hid $TOOLCHAIN"
        fi
        if [ -d /etc/pkcs11 ]; then mount -t tmpfs none /etc/pkcs11; fi
        export PATH=/usr/sbin:/usr/bin:/sbin:/bin
        unset P11KEYCHAIN_MODULE
        if command -v swift; then echo "swift is still on PATH"; exit 1; fi
        p11keychain --version
        p11keychain list-tokens
        p11keychain add-certificates -l installed-cert "$CERT"
        p11keychain module-path
        p11-kit list-modules
        p11tool --list-tokens
        echo "== p11tool --list-all"
        p11tool --list-all </dev/null || true
        echo "== p11tool --list-all token=login"
        p11tool --list-all "pkcs11:token=login"
    '
    ok env TOOLCHAIN="$toolchain" CERT="$CERTS/inst.pem" unshare --mount --fork sh -c "$script"
    local out=$RUN_OUT
    assert_contains "$out" "p11keychain $version" "installed p11keychain --version"
    assert_line "$out" "^login +read-write" "installed p11keychain list-tokens" "login"
    assert_contains "$out" "/usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so" "module-path / p11-kit list-modules"
    assert_line "$out" "^p11keychain: /usr/lib/$arch/pkcs11/libp11keychain-pkcs11.so\$" \
        "p11-kit list-modules shows the package's registration" "p11keychain"
    assert_line "$out" "Label: login" "p11tool --list-tokens through p11-kit" "Label"
    assert_contains "$(sed -n '/^== p11tool --list-all$/,/^== p11tool --list-all token=login$/p' <<<"$out")" \
        "login" "plain p11tool --list-all sees the token"
    assert_line "$(sed -n '/^== p11tool --list-all token=login$/,$p' <<<"$out")" \
        "Label: installed-cert" "p11tool --list-all pkcs11:token=login lists the certificate" "Label"

    note "remove, then purge: no file of the package is left"
    ok env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q -o DPkg::Lock::Timeout=300 p11keychain
    ok dpkg --purge p11keychain
    run dpkg-query -W -f='${Status}' p11keychain
    assert_no_line "$RUN_OUT" 'installed' "dpkg status after purge"
    local path left=()
    while IFS= read -r path; do
        [[ -n $path && ! -d $path && -e $path ]] && left+=("$path")
    done <"$TEST_TMP/package-files"
    ((${#left[@]} == 0)) || fail "files of the package left after purge: ${left[*]}"
    [[ ! -e /usr/share/p11-kit/modules/p11keychain.module ]] || fail "the p11-kit registration was left behind"
    [[ ! -e /usr/share/doc/p11keychain ]] || fail "/usr/share/doc/p11keychain was left behind"
}

# The README's list of the package's dependencies (the line "**Depends** ...: `A, B, ...`.")
# is the one scripts/build-deb.sh --depends derives from the binaries under test.
test_the_readme_lists_the_packages_derived_depends() {
    local cli listed
    cli=$(install_cli)
    ok env RELEASE_MODULE="$P11KEYCHAIN_MODULE" RELEASE_CLI="$cli" \
        RELEASE_PAM="$(dirname "$P11KEYCHAIN_MODULE")/libpam_p11keychain.so" \
        RELEASE_PAM_HELPER="$(dirname "$P11KEYCHAIN_MODULE")/p11keychain-pam-helper" bash "$IT_REPO/scripts/build-deb.sh" --depends
    listed=$(sed -nE 's/^\*\*Depends\*\* .*: `([^`]*)`\.?$/\1/p' "$IT_REPO/README.md")
    [[ -n $listed ]] || fail "README.md has no line '**Depends** ...: \`...\`.'"
    assert_eq "$RUN_OUT" "$listed" "README's Depends list against scripts/build-deb.sh --depends"
    assert_contains "$listed" "libkeyutils1" "README's Depends list (the session keyring's library)"
}

test_the_man_pages_render_without_warnings_and_document_every_command_and_key() {
    local page cli rendered command option commands
    cli=$(install_cli)
    for page in "$IT_REPO/man/p11keychain.1" "$IT_REPO/man/p11keychain.conf.5"; do
        run sh -c 'MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null' man "$page"
        [[ $RUN_STATUS == 0 && -z $RUN_OUT ]] || fail "man --warnings -l $(basename "$page"): $(summarize "$RUN_OUT")"
        run groff -ww -z -man "$page"
        [[ $RUN_STATUS == 0 && -z $RUN_OUT ]] || fail "groff -ww -z -man $(basename "$page"): $(summarize "$RUN_OUT")"
    done
    rendered=$(MANWIDTH=200 man -l "$IT_REPO/man/p11keychain.1" 2>/dev/null)
    ok "$cli" help
    commands=$(awk '/^commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' <<<"$RUN_OUT")
    (($(wc -l <<<"$commands") >= 20)) || fail "p11keychain help lists only: $(tr '\n' ' ' <<<"$commands")"
    for command in $commands; do
        # Each command is the tag of its own entry: the line starts with its name.
        assert_line "$rendered" "^ {7}$command( |\$)" "p11keychain.1 has an entry for '$command'" "$command"
        # And every option its help lists appears in the page.
        for option in $("$cli" help "$command" | awk '/^options:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' | tr -d ','); do
            grep -qF -- "$option" <<<"$rendered" || fail "p11keychain.1 does not mention option $option of $command"
        done
    done
    for option in --token --store --help --version; do
        grep -qF -- "$option" <<<"$rendered" || fail "p11keychain.1 does not mention the global option $option"
    done
    assert_contains "$rendered" "EXIT STATUS" "p11keychain.1"
    assert_contains "$rendered" "EXAMPLES" "p11keychain.1"

    # Every key of the documented example configuration (set or commented out) is in p11keychain.conf(5).
    rendered=$(MANWIDTH=200 man -l "$IT_REPO/man/p11keychain.conf.5" 2>/dev/null)
    local key keys
    keys=$(sed -nE 's/^#? ?([a-z][a-z-]*) = .*/\1/p' "$IT_REPO/conf/p11keychain.conf" | sort -u)
    (($(wc -l <<<"$keys") >= 6)) || fail "conf/p11keychain.conf has only the keys: $(tr '\n' ' ' <<<"$keys")"
    for key in $keys; do
        assert_line "$rendered" "^ {7}$key = " "p11keychain.conf.5 documents the key '$key'" "$key"
    done
    assert_contains "$rendered" "[token NAME]" "p11keychain.conf.5"
}

test_the_bash_completion_completes_commands_options_and_values() {
    local completion=$IT_REPO/conf/p11keychain.bash-completion cli
    cli=$(install_cli)
    # complete_words WORDS...: what the completion offers for the last word, one line.
    local probe='
        source "$1"; shift
        complete -p p11keychain
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _p11keychain
        echo "offers: ${COMPREPLY[*]}"
    '
    ok bash -c "$probe" probe "$completion" p11keychain add-
    assert_contains "$RUN_OUT" "complete -F _p11keychain p11keychain" "complete -p p11keychain"
    assert_contains "$RUN_OUT" "offers: add-certificates add-trusted-cert add-generic-password" "commands on a prefix"
    ok bash -c "$probe" probe "$completion" p11keychain find-certificate -
    assert_contains "$RUN_OUT" "offers: -a -c -l -e -Z -p" "options of find-certificate"
    ok bash -c "$probe" probe "$completion" p11keychain --token login generate-key --curve p3
    assert_contains "$RUN_OUT" "offers: p384" "an option's values after a global option"
    # Every command `p11keychain help` lists completes.
    local command
    ok "$cli" help
    for command in $(awk '/^commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' <<<"$RUN_OUT"); do
        run bash -c "$probe" probe "$completion" p11keychain "$command"
        assert_line "$RUN_OUT" "^offers: (.* )?$command( |\$)" "the completion offers '$command'" offers
    done
}
