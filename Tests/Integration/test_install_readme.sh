# The README's install commands, verbatim: the first fenced block of README "Install" runs as
# written, as root, with no sudo and no Swift toolchain on PATH (a fresh Debian 12 machine's
# root, who follows the README), each line failing the test if it fails; then lintian checks
# the package those lines built, and the package is purged again.
#
# Bounded: `make` rebuilds nothing when the release products are up to date with the flags
# they were built with: SWIFTFLAGS (the Makefile's knob) is CI's release flags unless set.
# run.sh: alone: it installs the package into /usr, which every test would then see.

# readme_install_block: the lines of the first ```sh block after "## Install" in README.md.
readme_install_block() {
    awk '/^## Install/ { section = 1; next }
         section && /^## / { exit }
         section && !inside && /^```sh$/ { inside = 1; next }
         inside && /^```$/ { exit }
         inside { print }' "$IT_REPO/README.md"
}

# no_sudo_path DIR: fills DIR with links to every program of the usual PATH except sudo and
# swift, and prints DIR: `command -v sudo` and `command -v swift` then find nothing.
no_sudo_path() {
    local dir=$1 bindir program
    mkdir -p "$dir"
    for bindir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
        [[ -d $bindir && ! -L $bindir ]] || continue
        for program in "$bindir"/*; do
            case ${program##*/} in sudo | swift | swiftc) continue ;; esac
            [[ -e $dir/${program##*/} ]] || ln -s "$program" "$dir/${program##*/}"
        done
    done
    echo "$dir"
}

readme_deb_restore() {
    if dpkg-query -W -f='${Status}' p11keychain 2>/dev/null | grep -q installed; then
        dpkg --purge p11keychain >/dev/null 2>&1 || echo "cleanup: dpkg --purge p11keychain failed" >&2
    fi
}

test_the_readme_install_commands_work_verbatim_as_root_without_sudo() {
    [[ $(id -u) == 0 ]] || fail "needs root: the README's lines install a package"
    if dpkg-query -W -f='${Status}' p11keychain 2>/dev/null | grep -q 'install ok installed'; then
        fail "p11keychain is installed on this machine already: the test would remove it (dpkg --purge p11keychain first)"
    fi
    [[ ! -e /usr/share/p11-kit/modules/p11keychain.module ]] ||
        fail "/usr/share/p11-kit/modules/p11keychain.module exists and belongs to no package: the test would replace it"
    local block path version
    block=$(readme_install_block)
    [[ -n $block ]] || fail "README.md has no \`\`\`sh block under \"## Install\""
    printf '%s\n' "--- README's install block:" "$block"
    assert_contains "$block" "apt-get install ./.build/deb/" "the README's block installs the package"
    version=$(tr -d ' \n' <"$IT_REPO/VERSION")
    assert_contains "$block" "p11keychain_${version}_amd64.deb" "the README's package name carries VERSION"

    path=$(no_sudo_path "$TEST_TMP/bin")
    PATH=$path command -v sudo >/dev/null && fail "sudo is still on the test's PATH"
    PATH=$path command -v swift >/dev/null && fail "swift is still on the test's PATH"
    defer readme_deb_restore
    # Each line as the README has it, in the checkout, stopping at the first that fails; "y"
    # to every question, as the reader answers apt-get remove's "Do you want to continue?".
    ok env PATH="$path" SWIFTFLAGS="${SWIFTFLAGS--Xswiftc -warnings-as-errors}" DEBIAN_FRONTEND=noninteractive \
        bash -c "set -euxo pipefail; cd \"\$1\"; $block" readme-install "$IT_REPO" <<<"$(printf 'y\n%.0s' {1..20})"
    run dpkg-query -W -f='${Status}' p11keychain
    assert_no_line "$RUN_OUT" 'install ok installed' "the README's last line removed the package"

    note "lintian on the package the README's lines built: no error"
    run lintian "$IT_REPO/.build/deb/p11keychain_${version}_amd64.deb"
    assert_no_line "$RUN_OUT" '^E: ' "lintian"
    [[ $RUN_STATUS == 0 ]] || fail "lintian failed: $(summarize "$RUN_OUT")"
}
