#!/bin/sh
# Registers the p11keychain PKCS#11 module with p11-kit, so that p11-kit
# clients (p11tool, certtool, p11-kit list-modules, GnuTLS and NSS through
# p11-kit-proxy) find the token without being told where the module is.
#
#   scripts/register-module.sh [--user|--system] [--trust] [MODULE_PATH]
#   scripts/register-module.sh [--user|--system] --unregister
#
#   --user        ${XDG_CONFIG_HOME:-~/.config}/pkcs11/modules/p11keychain.module
#   --system      /etc/pkcs11/modules/p11keychain.module
#                 (default: --system when run as root, else --user; p11-kit
#                 running as root reads only the system directory)
#   --trust       register the keychain as a trust source too (trust-policy: yes,
#                 conf/p11keychain-trust.module): `trust list`, GnuTLS and p11-kit's
#                 trust tools then read its anchors and distrust. Written as
#                 p11keychain-trust.module in place of p11keychain.module: p11-kit
#                 loads one module per library, and with both files it keeps the
#                 plain one and drops the trust-policy flag (measured, p11-kit 0.24).
#   --unregister  remove the registration file (either kind) instead of writing it
#   MODULE_PATH   the module to register; default: the release build, else
#                 the debug build of this checkout. Stored as an absolute path.
#
# The file written is the one documented in conf/p11keychain.module (with
# --trust, conf/p11keychain-trust.module).
set -eu

MODULE_FILE_NAME=p11keychain.module
TRUST_FILE_NAME=p11keychain-trust.module
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

modules_dir() {
    case $1 in
    system) echo /etc/pkcs11/modules ;;
    user) echo "${XDG_CONFIG_HOME:-$HOME/.config}/pkcs11/modules" ;;
    esac
}

register() {
    module=$1 dir=$2 trust=$3
    name=$MODULE_FILE_NAME other=$TRUST_FILE_NAME
    if [ "$trust" = yes ]; then name=$TRUST_FILE_NAME other=$MODULE_FILE_NAME; fi
    [ -f "$module" ] || die "module not found: $module"
    module=$(readlink -f -- "$module")
    mkdir -p -- "$dir"
    # Write a temporary file and rename it: p11-kit never reads half a file.
    tmp=$(mktemp "$dir/.$name.XXXXXX")
    {
        echo "# p11keychain token, registered by scripts/register-module.sh"
        echo "module: $module"
        echo "critical: no"
        if [ "$trust" = yes ]; then echo "trust-policy: yes"; fi
    } >"$tmp"
    chmod 0644 "$tmp"
    mv -f -- "$tmp" "$dir/$name"
    rm -f -- "${dir:?}/$other"
    echo "registered $module in $dir/$name"
}

unregister() {
    found=no
    for file in "$1/$MODULE_FILE_NAME" "$1/$TRUST_FILE_NAME"; do
        if [ -e "$file" ]; then
            rm -f -- "$file"
            echo "removed $file"
            found=yes
        fi
    done
    [ "$found" = yes ] || echo "not registered: $1/$MODULE_FILE_NAME does not exist"
}

main() {
    scope='' action=register module='' trust=no
    while [ $# -gt 0 ]; do
        case $1 in
        --user) scope=user ;;
        --system) scope=system ;;
        --unregister) action=unregister ;;
        --trust) trust=yes ;;
        -h | --help) usage ;;
        -*) echo "register-module.sh: unknown option $1" >&2; usage ;;
        *)
            [ -z "$module" ] || usage
            module=$1
            ;;
        esac
        shift
    done
    if [ -z "$scope" ]; then
        if [ "$(id -u)" = 0 ]; then scope=system; else scope=user; fi
    fi
    dir=$(modules_dir "$scope")
    if [ "$action" = unregister ]; then
        unregister "$dir"
    else
        [ -n "$module" ] || module=$(default_module)
        register "$module" "$dir" "$trust"
    fi
}

main "$@"
