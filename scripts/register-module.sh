#!/bin/sh
# Registers the p11keychain PKCS#11 module with p11-kit, so that p11-kit
# clients (p11tool, certtool, p11-kit list-modules, GnuTLS and NSS through
# p11-kit-proxy) find the token without being told where the module is.
#
#   scripts/register-module.sh [--user|--system] [--trust] [MODULE_PATH]
#   scripts/register-module.sh [--user|--system] --unregister
#
# A wrapper of `p11keychain register` / `p11keychain unregister`, which write
# and remove the file (see `p11keychain help register`):
#   --user        ${XDG_CONFIG_HOME:-~/.config}/pkcs11/modules/p11keychain.module
#   --system      /etc/pkcs11/modules/p11keychain.module
#                 (default: --system when run as root, else --user; p11-kit
#                 running as root reads only the system directory)
#   --trust       register the keychain as a trust source too (trust-policy: yes),
#                 as p11keychain-trust.module in place of p11keychain.module
#   --unregister  remove the registration file (either kind) instead of writing it
#   MODULE_PATH   the module to register; default: the release build, else
#                 the debug build of this checkout. Stored as an absolute path.
#
# The p11keychain program run is, in this order: $P11KEYCHAIN_CLI; the one
# beside MODULE_PATH (a build directory holds both); the release, else debug,
# build of this checkout; p11keychain on PATH.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)

usage() {
    echo "usage: register-module.sh [--user|--system] [--trust] [--unregister] [MODULE_PATH]" >&2
    exit 2
}

die() {
    echo "register-module.sh: $*" >&2
    exit 1
}

# default_module: the newest configuration that has been built, release first.
default_module() {
    for config in release debug; do
        candidate=$REPO/.build/$config/libp11keychain-pkcs11.so
        if [ -f "$candidate" ]; then
            echo "$candidate"
            return
        fi
    done
    die "no built module in $REPO/.build/{release,debug}/; build it first (swift build -c release --product p11keychain-pkcs11) or pass MODULE_PATH"
}

# cli MODULE: the p11keychain program to run (see the top of this file).
cli() {
    if [ -n "${P11KEYCHAIN_CLI:-}" ]; then
        echo "$P11KEYCHAIN_CLI"
        return
    fi
    for candidate in ${1:+"$(dirname -- "$1")/p11keychain"} "$REPO/.build/release/p11keychain" \
        "$REPO/.build/debug/p11keychain"; do
        if [ -f "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return
        fi
    done
    command -v p11keychain ||
        die "no p11keychain program: build it (swift build -c release --product p11keychain) or set P11KEYCHAIN_CLI"
}

main() {
    scope='' action=register module='' trust=''
    while [ $# -gt 0 ]; do
        case $1 in
        --user) scope=--user ;;
        --system) scope=--system ;;
        --unregister) action=unregister ;;
        --trust) trust=--trust ;;
        -h | --help) usage ;;
        -*) echo "register-module.sh: unknown option $1" >&2; usage ;;
        *)
            [ -z "$module" ] || usage
            module=$1
            ;;
        esac
        shift
    done
    if [ "$action" = unregister ]; then
        program=$(cli "")
        exec "$program" unregister $scope
    fi
    [ -n "$module" ] || module=$(default_module)
    program=$(cli "$module")
    exec "$program" register $scope $trust --module "$module"
}

main "$@"
