# Shared helpers for the integration tests (sourced, never run).
#
# Each test is a shell function `test_*` in a file Tests/Integration/test_*.sh.
# run.sh runs every test in its own bash process (it_run_test) with
# `set -eEu -o pipefail`: any failing command fails that test, not the run.
# Every test starts with a fresh, empty token store (P11KEYCHAIN_DIR), no
# configuration file (P11KEYCHAIN_CONF=/dev/null), its own scratch directory
# ($TEST_TMP, removed afterwards) and a private HOME, so nothing the module
# might write by default reaches the real user's files.
#
# Environment:
#   P11KEYCHAIN_MODULE         module under test (default: <repo>/.build/debug/libp11keychain-pkcs11.so)
#   P11KEYCHAIN_TEST_SOFTHSM=1 run against SoftHSM2 instead, to check the tests
#                              themselves; tests of behaviour SoftHSM2 lacks
#                              (derived attributes, SQLite file) fail there.
#   IT_KEEP=1                  keep each test's scratch directory.

IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IT_REPO=$(cd "$IT_DIR/../.." && pwd)
IT_BUILD=$IT_REPO/.build/integration
SOFTHSM_MODULE=/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so

if [[ ${P11KEYCHAIN_TEST_SOFTHSM:-} == 1 ]]; then
    P11KEYCHAIN_MODULE=$SOFTHSM_MODULE
    export P11DRIVE_WITH_SUBJECT=1
fi
P11KEYCHAIN_MODULE=${P11KEYCHAIN_MODULE:-$IT_REPO/.build/debug/libp11keychain-pkcs11.so}
# Tests change directory: a relative module path would stop resolving.
[[ $P11KEYCHAIN_MODULE == /* ]] || P11KEYCHAIN_MODULE=$PWD/$P11KEYCHAIN_MODULE
export P11KEYCHAIN_MODULE
export P11DRIVE=$IT_BUILD/p11drive
TOKEN_LABEL=login

# ---------------------------------------------------------------- reporting

# fail MESSAGE: ends the current test; the first message is the one reported.
fail() {
    if [[ ! -s ${IT_REASON_FILE:-/dev/null} ]]; then
        printf '%s\n' "$*" >"${IT_REASON_FILE:-/dev/null}"
    fi
    echo "FAIL: $*" >&2
    exit 1
}

# note MESSAGE: a line in the test's log, to explain what the test is doing.
note() { echo "--- $*"; }

# summarize TEXT: its last three non-empty lines on one line, for a failure reason.
summarize() {
    local text
    text=$(printf '%s\n' "$1" | sed '/^[[:space:]]*$/d' | tail -n 3 |
        awk 'NR > 1 { printf " | " } { printf "%s", $0 }')
    printf '%s' "${text:0:400}"
}

# describe_status N: "exit status N", or the signal that killed the process.
describe_status() {
    if (($1 > 128 && $1 < 160)); then
        echo "killed by signal $(($1 - 128)) ($(kill -l $(($1 - 128)) 2>/dev/null || echo '?'))"
    else
        echo "exit status $1"
    fi
}

# ---------------------------------------------------------------- running commands

# cmd_text CMD...: CMD for a message, with the long module and scratch paths shortened.
cmd_text() {
    local text="$*"
    text=${text//"$P11KEYCHAIN_MODULE"/M}
    text=${text//"$TEST_TMP"/\$TEST_TMP}
    text=$(printf '%s' "$text" | tr -s ' \n\t' '   ')
    ((${#text} <= 240)) || text="${text:0:240}..."
    printf '%s' "$text"
}

# run CMD...: runs CMD; $RUN_OUT holds its stdout and stderr, $RUN_STATUS its
# status. Never fails by itself: for commands that are expected to fail.
run() {
    echo "+ $*"
    RUN_OUT=$("$@" 2>&1) && RUN_STATUS=0 || RUN_STATUS=$?
    [[ -z $RUN_OUT ]] || printf '%s\n' "$RUN_OUT"
    [[ $RUN_STATUS == 0 ]] || echo "  ($(describe_status "$RUN_STATUS"))"
}

# ok CMD...: like run, but the test fails unless CMD succeeds.
ok() {
    run "$@"
    if [[ $RUN_STATUS != 0 ]]; then
        fail "expected success from '$(cmd_text "$@")', got $(describe_status "$RUN_STATUS"): $(summarize "$RUN_OUT")"
    fi
}

# refused CMD...: CMD must fail cleanly: non-zero status, not killed by a signal.
refused() {
    run "$@"
    if [[ $RUN_STATUS == 0 ]]; then
        fail "expected '$(cmd_text "$@")' to fail, but it succeeded: $(summarize "$RUN_OUT")"
    elif ((RUN_STATUS > 128)); then
        fail "expected '$(cmd_text "$@")' to fail cleanly, but it was $(describe_status "$RUN_STATUS"): $(summarize "$RUN_OUT")"
    fi
}

# ---------------------------------------------------------------- assertions

# assert_eq EXPECTED ACTUAL WHAT
assert_eq() {
    [[ $1 == "$2" ]] || fail "$3: expected '$1', got '$2'"
}

# assert_contains TEXT NEEDLE WHAT: TEXT has a line containing NEEDLE (fixed string).
assert_contains() {
    grep -qF -- "$2" <<<"$1" || fail "$3: expected output containing '$2', got: $(summarize "$1")"
}

# assert_not_contains TEXT NEEDLE WHAT
assert_not_contains() {
    if grep -qF -- "$2" <<<"$1"; then
        fail "$3: expected no '$2' in the output, got: $(grep -F -- "$2" <<<"$1" | head -n 2 | tr '\n' ' ')"
    fi
}

# assert_line TEXT REGEX WHAT [SHOW]: some line of TEXT matches the extended
# REGEX; on failure the message quotes the lines matching SHOW (a regex), if given.
assert_line() {
    grep -qE -- "$2" <<<"$1" && return
    local got
    # `|| true`: a SHOW that matches no line must not end the test under `set -e` before
    # the message says what was expected.
    got=$(if [[ -n ${4:-} ]]; then grep -E -- "$4" <<<"$1" || true; else printf '%s' "$1"; fi)
    fail "$3: expected a line matching /$2/, got: $(summarize "${got:-(no line matching /${4:-}/)}")"
}

# assert_no_line TEXT REGEX WHAT: no line of TEXT matches the extended REGEX.
assert_no_line() {
    if grep -qE -- "$2" <<<"$1"; then
        fail "$3: expected no line matching /$2/, got: $(grep -E -- "$2" <<<"$1" | head -n 2 | tr '\n' ' ')"
    fi
}

# assert_same_file EXPECTED ACTUAL WHAT: byte-identical files.
assert_same_file() {
    [[ -f $2 ]] || fail "$3: no output file $2"
    cmp -s -- "$1" "$2" ||
        fail "$3: $2 ($(stat -c %s "$2") bytes, sha256 $(sha256sum <"$2" | cut -c1-16)) differs from $1 ($(stat -c %s "$1") bytes, sha256 $(sha256sum <"$1" | cut -c1-16))"
}

# ---------------------------------------------------------------- test lifecycle

IT_CLEANUPS=()

# defer COMMAND: runs COMMAND (a string for eval) when the test ends, last first.
defer() { IT_CLEANUPS+=("$1"); }

it_cleanup() {
    local i
    for ((i = ${#IT_CLEANUPS[@]} - 1; i >= 0; i--)); do
        eval "${IT_CLEANUPS[i]}" || echo "cleanup failed: ${IT_CLEANUPS[i]}" >&2
    done
    if [[ ${IT_KEEP:-} == 1 ]]; then
        echo "kept $TEST_TMP" >&2
    else
        rm -rf --one-file-system -- "$TEST_TMP"
    fi
}

# it_on_error STATUS COMMAND FILE LINE: reason for a command that failed unchecked.
it_on_error() {
    if [[ ! -s ${IT_REASON_FILE:-/dev/null} ]]; then
        printf '%s\n' "command failed ($(describe_status "$1")): $2 (at $(basename "$3"):$4)" >"$IT_REASON_FILE"
    fi
}

# new_store [DIR]: a fresh, empty token store for the module (in DIR, created
# if needed, else a new temporary directory), selected through the environment.
new_store() {
    if [[ -n ${1:-} ]]; then
        STORE=$1
        mkdir -p "$STORE"
        chmod 0700 "$STORE"
    else
        STORE=$(mktemp -d "$TEST_TMP/store.XXXXXX")
    fi
    export P11KEYCHAIN_DIR=$STORE P11KEYCHAIN_CONF=/dev/null
    if [[ ${P11KEYCHAIN_TEST_SOFTHSM:-} == 1 ]]; then
        printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
            "$STORE" >"$STORE/softhsm2.conf"
        export SOFTHSM2_CONF=$STORE/softhsm2.conf GNUTLS_PIN=1234
        softhsm2-util --init-token --free --label "$TOKEN_LABEL" --so-pin 12345678 --pin 1234 >/dev/null
    fi
}

# store_file: the store's SQLite file (exactly one is expected in $STORE).
store_file() {
    local files=() f
    for f in "$STORE"/*.sqlite3 "$STORE"/*.sqlite "$STORE"/*.db; do
        [[ -f $f ]] && files+=("$f")
    done
    if [[ ${#files[@]} != 1 ]]; then
        fail "expected one SQLite file (*.sqlite3) in the store $STORE, found ${#files[@]}: $(ls -A "$STORE" | tr '\n' ' ')"
    fi
    echo "${files[0]}"
}

# assert_integrity: SQLite's own check of the store file prints exactly "ok".
assert_integrity() {
    local db out
    db=$(store_file)
    run sqlite3 "$db" 'PRAGMA integrity_check'
    [[ $RUN_STATUS == 0 && $RUN_OUT == ok ]] ||
        fail "PRAGMA integrity_check on $db: expected 'ok', got ($(describe_status "$RUN_STATUS")): $(summarize "$RUN_OUT")"
}

# swift_toolchain_dir: the installed toolchain's root (e.g. /opt/swift), or nothing; the
# tests that hide it (test_notoolchain.sh, test_install.sh) cover it with an empty tmpfs.
swift_toolchain_dir() {
    local swift bin
    swift=$(command -v swift 2>/dev/null) || true
    if [[ -n $swift ]]; then
        bin=$(readlink -f "$(dirname "$swift")")
        echo "${bin%/usr/bin}"
    elif [[ -d /opt/swift ]]; then
        echo /opt/swift
    fi
}

require_module() {
    [[ -f $P11KEYCHAIN_MODULE ]] ||
        fail "module not found: $P11KEYCHAIN_MODULE (build it: swift build --product p11keychain-pkcs11, or set P11KEYCHAIN_MODULE)"
}

# it_run_test FUNCTION: runs one test in this (fresh) bash process.
it_run_test() {
    set -eEu -o pipefail
    TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/p11k-it.XXXXXX")
    CERTS=$TEST_TMP/certs
    mkdir -p "$CERTS" "$TEST_TMP/home"
    trap 'it_cleanup' EXIT
    trap 'exit 143' TERM INT # so the EXIT trap (unmounts, restores) runs on timeout
    trap 'it_on_error $? "$BASH_COMMAND" "${BASH_SOURCE[0]}" "$LINENO"' ERR
    # A private home: a module that ignored P11KEYCHAIN_DIR would write here.
    export HOME=$TEST_TMP/home XDG_DATA_HOME=$TEST_TMP/home/.local/share \
        XDG_CONFIG_HOME=$TEST_TMP/home/.config
    # No PIN from the environment; no module trace lines in outputs the tests compare.
    unset GNUTLS_PIN GNUTLS_SO_PIN P11KEYCHAIN_DEBUG
    # No agent of the user running the tests: ssh would offer its keys first.
    unset SSH_AUTH_SOCK
    cd "$TEST_TMP"
    require_module
    [[ -x $P11DRIVE ]] || fail "helper $P11DRIVE is missing (run.sh builds it)"
    new_store
    "$1"
}

# ---------------------------------------------------------------- helpers build

# What every C tool here is built with: Tests/include/p11test.h (loading the module, CK_RV
# names) and the module's own header.
IT_TOOL_HEADER=$IT_REPO/Tests/include/p11test.h
IT_TOOL_CFLAGS=(-O2 -Wall -Wextra -I"$IT_REPO/Tests/include" -I"$IT_REPO/p11/include")

# build_p11drive: compiles tools/p11drive.c when the binary is missing or stale.
build_p11drive() {
    local src=$IT_DIR/tools/p11drive.c
    if [[ -x $P11DRIVE && $P11DRIVE -nt $src && $P11DRIVE -nt $IT_TOOL_HEADER ]]; then
        return 0
    fi
    mkdir -p "$IT_BUILD"
    gcc "${IT_TOOL_CFLAGS[@]}" -o "$P11DRIVE.tmp" "$src" -ldl -lcrypto && mv -f "$P11DRIVE.tmp" "$P11DRIVE"
}

# build_p11open: the small host of tools/p11open.c, in $TEST_TMP.
build_p11open() {
    P11OPEN=$TEST_TMP/p11open
    gcc "${IT_TOOL_CFLAGS[@]}" -o "$P11OPEN" "$IT_DIR/tools/p11open.c" -ldl ||
        fail "tools/p11open.c did not compile"
}

# ---------------------------------------------------------------- certificates

# make_cert NAME SUBJECT: a self-signed P-256 certificate in $CERTS/NAME.pem,
# $CERTS/NAME.der (and its key in $CERTS/NAME.key).
make_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "$2" -days 30 -keyout "$CERTS/$1.key" -out "$CERTS/$1.pem" 2>/dev/null ||
        fail "openssl req could not make a test certificate for $2"
    openssl x509 -in "$CERTS/$1.pem" -outform der -out "$CERTS/$1.der"
}

# cert_key_id PEM: the CKA_ID the module derives, in lower-case hex: SHA-1 of
# the subjectPublicKey BIT STRING contents (RFC 5280 method 1), computed here
# from the SubjectPublicKeyInfo without trusting the certificate's own SKI.
cert_key_id() {
    local spki=$TEST_TMP/spki.der line off hl len
    openssl x509 -in "$1" -noout -pubkey | openssl pkey -pubin -outform der -out "$spki"
    # The BIT STRING is the second element of the top-level SEQUENCE (depth 1).
    line=$(openssl asn1parse -inform der -in "$spki" | grep -E 'd=1 .*BIT STRING')
    off=$(sed -E 's/^ *([0-9]+):.*/\1/' <<<"$line")
    hl=$(sed -E 's/.*hl= *([0-9]+).*/\1/' <<<"$line")
    len=$(sed -E 's/.* l= *([0-9]+).*/\1/' <<<"$line")
    # Skip the tag and length (hl) and the unused-bits byte.
    tail -c +$((off + hl + 2)) "$spki" | head -c $((len - 1)) | sha1sum | cut -d' ' -f1
}

# cert_dn SUBJECT: "/CN=a/O=b" as the tools print it: "CN=a, O=b".
cert_dn() {
    local s=${1#/}
    echo "${s//\//, }"
}

# ---------------------------------------------------------------- store content

# cert_count: the number of certificates the module lists (fails the test on error).
cert_count() {
    local out
    out=$("$P11DRIVE" count 2>&1) || fail "p11drive count failed: $(summarize "$out")"
    echo "$out"
}

# assert_labels_present FILE WHAT: every label in FILE names exactly one certificate.
assert_labels_present() {
    run "$P11DRIVE" check-labels "$1"
    [[ $RUN_STATUS == 0 ]] ||
        fail "$2: not every label in $(basename "$1") ($(wc -l <"$1") lines) was found once through the module ($(describe_status "$RUN_STATUS")): $(summarize "$RUN_OUT")"
}

# wait_for_line FILE REGEX SECONDS [PID]: waits until FILE has a line matching
# REGEX; gives up after SECONDS, or as soon as process PID (the writer) is gone.
wait_for_line() {
    local deadline=$((SECONDS + $3))
    until grep -qE -- "$2" "$1" 2>/dev/null; do
        ((SECONDS < deadline)) || return 1
        if [[ -n ${4:-} ]] && ! kill -0 "$4" 2>/dev/null; then
            grep -qE -- "$2" "$1" 2>/dev/null # it may have written the line and exited
            return
        fi
        sleep 0.02
    done
}

# wait_for_socket PATH SECONDS PID WHAT: waits until PATH is a socket, or fails
# the test after SECONDS or as soon as process PID (which makes it) is gone.
wait_for_socket() {
    local deadline=$((SECONDS + $2))
    until [[ -S $1 ]]; do
        kill -0 "$3" 2>/dev/null || fail "$4 exited before making its socket $1"
        ((SECONDS < deadline)) || fail "$4 made no socket $1 within $2 s"
        sleep 0.05
    done
}

# wait_for_s_server_port OUT PID: waits (30 s) for `openssl s_server -accept
# 127.0.0.1:0` (output in OUT, process PID) to say where it listens, and sets
# $PORT. The line may be seen half written ("ACCEPT 127.0.0.1:42"): the port is
# read once the file ends with the line's newline.
wait_for_s_server_port() {
    wait_for_line "$1" '^ACCEPT ' 30 "$2" ||
        fail "openssl s_server did not start listening: $(summarize "$(cat "$1")")"
    local deadline=$((SECONDS + 5))
    PORT=
    while [[ -z $PORT ]] && ((SECONDS < deadline)); do
        [[ -z $(tail -c 1 "$1") ]] && PORT=$(sed -nE 's/^ACCEPT 127\.0\.0\.1:([0-9]+)$/\1/p' "$1")
        [[ -n $PORT ]] || sleep 0.02
    done
    [[ -n $PORT ]] || fail "no port in s_server's ACCEPT line: $(grep ACCEPT "$1")"
}

# ensure_run_sshd: sshd's privilege-separation directory. It stays when the test ends
# (the ssh package's own tmpfiles entry makes it at boot): tests of two files may run sshd
# at once, and the first to end would pull it from under the other.
ensure_run_sshd() { mkdir -p /run/sshd; }

# p11-kit's RPC client module (Debian package p11-kit-modules).
P11KIT_CLIENT=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so

# start_p11kit_server SOCKET URI: `p11-kit server` in the foreground serving
# the module's token URI on the Unix socket SOCKET, bounded (120 s) and stopped
# when the test ends; returns once the server has printed its address (it
# listens then). $P11KIT_SERVER_PID.
start_p11kit_server() {
    [[ -f $P11KIT_CLIENT ]] || fail "$P11KIT_CLIENT is missing (Debian package p11-kit-modules; scripts/setup.sh installs it)"
    local log=$TEST_TMP/p11kit-server.$(basename "$1").log
    timeout -k 5 120 p11-kit server --foreground --name "$1" --provider "$P11KEYCHAIN_MODULE" "$2" \
        >"$log" 2>&1 &
    P11KIT_SERVER_PID=$!
    defer "kill $P11KIT_SERVER_PID 2>/dev/null; wait $P11KIT_SERVER_PID 2>/dev/null || true"
    wait_for_line "$log" '^P11_KIT_SERVER_ADDRESS=unix:path=' 10 "$P11KIT_SERVER_PID" ||
        fail "p11-kit server did not start: $(summarize "$(cat "$log")")"
}

# assert_sha256_signature_verifies PUBLIC_PEM SIGNATURE DATA WHAT: openssl checks
# an ECDSA or RSA PKCS#1 signature of SHA-256(DATA) made by the token.
assert_sha256_signature_verifies() {
    ok openssl dgst -sha256 -verify "$1" -signature "$2" "$3"
    assert_contains "$RUN_OUT" "Verified OK" "$4"
}

# ---------------------------------------------------------------- PINs and keys

# The PINs the key tests give the token (SoftHSM2's new_store uses the same).
SO_PIN=12345678
USER_PIN=1234

# pk11 ARGS...: pkcs11-tool on the module's token labelled $TOKEN_LABEL
# (for ok/refused/run, which print and check it).
pk11() {
    pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" "$@"
}

# full_pin_cost: PINs set from now on in this test derive their key 600,000 times, the
# module's default, instead of the floor scripts/test.sh gives every test
# (P11KEYCHAIN_PIN_ITERATIONS=1000): for tests that must kill a process inside the
# derivation, which then takes a few hundred milliseconds.
full_pin_cost() { export P11KEYCHAIN_PIN_ITERATIONS=600000; }

# overlapping_pin_cost: PINs set from now on derive their key 100,000 times (tens of
# milliseconds a check): for tests whose processes guess at once and must each be inside
# the derivation while the others are, which at the floor would mostly run one by one.
overlapping_pin_cost() { export P11KEYCHAIN_PIN_ITERATIONS=100000; }

# stored_pin_iterations NAME: the iteration count in the store's PIN record NAME
# (so.pin, user.pin), its first four bytes read as a little-endian number.
stored_pin_iterations() {
    local hex
    hex=$(sqlite3 "$(store_file)" "SELECT hex(substr(value, 1, 4)) FROM metadata WHERE name = '$1'")
    [[ ${#hex} == 8 ]] || fail "no $1 record in the store"
    echo $((16#${hex:6:2}${hex:4:2}${hex:2:2}${hex:0:2}))
}

# init_pins: C_InitToken (sets the SO PIN, keeps the label $TOKEN_LABEL),
# then C_InitPIN as the SO: the token then holds private objects.
init_pins() {
    ok pk11 --init-token --label "$TOKEN_LABEL" --so-pin "$SO_PIN"
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$USER_PIN"
}

# token_flags: the "token flags" line pkcs11-tool -L shows for the token.
token_flags() {
    local out
    out=$(pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L 2>&1) || fail "pkcs11-tool -L failed: $(summarize "$out")"
    echo "--- pkcs11-tool -L: $(grep -E '^ +token flags' <<<"$out")" >&2
    grep -E '^ +token flags' <<<"$out" | sed -E 's/^ +token flags +: *//'
}

# assert_flag FLAG WHAT / assert_no_flag FLAG WHAT: pkcs11-tool -L's token
# flags (comma-separated words such as "login required") have / lack FLAG.
assert_flag() {
    local flags
    flags=$(token_flags)
    grep -qE "(^|, )$1(,|\$)" <<<"$flags" || fail "$2: expected token flag '$1', pkcs11-tool -L shows: $flags"
}
assert_no_flag() {
    local flags
    flags=$(token_flags)
    if grep -qE "(^|, )$1(,|\$)" <<<"$flags"; then
        fail "$2: expected no token flag '$1', pkcs11-tool -L shows: $flags"
    fi
}

# hex_of FILE: the file's bytes as one line of lower-case hex.
hex_of() { xxd -p "$1" | tr -d '\n'; }

# store_files_with HEX: the files of $STORE (the SQLite file, its -wal and
# -shm, anything else) whose bytes contain the bytes HEX, one name a line.
store_files_with() {
    local f
    for f in "$STORE"/*; do
        [[ -f $f ]] || continue
        if hex_of "$f" | grep -qF -- "$1"; then
            basename "$f"
        fi
    done
}

# assert_store_lacks HEX WHAT: no file of the store holds the bytes HEX.
assert_store_lacks() {
    local found
    found=$(store_files_with "$1")
    [[ -z $found ]] ||
        fail "$2: the bytes ${1:0:16}... ($((${#1} / 2)) bytes) are in the clear in $(tr '\n' ' ' <<<"$found")(store: $(ls "$STORE" | tr '\n' ' '))"
}

# assert_store_has HEX WHAT: some file of the store holds the bytes HEX (shows
# that the scan finds what is there).
assert_store_has() {
    [[ -n $(store_files_with "$1") ]] ||
        fail "$2: expected the bytes ${1:0:16}... in some file of the store ($(ls "$STORE" | tr '\n' ' ')), found none"
}

# pubkey_pem ID OUT: the token's public key with CKA_ID ID (hex), as PEM in
# OUT, read by pkcs11-tool (which writes DER for RSA and EC keys, PEM for
# Ed25519). pkcs11-tool 0.23.0 can fail on any EC public key ("cannot create
# EVP_PKEY", SoftHSM2's too): it frees the parameter arrays its merged list
# points into before EVP_PKEY_fromdata reads them, so the outcome depends on
# what reused that memory (P-384 keys nearly always, P-256 now and then). For
# that error only, p11tool --export reads the key.
pubkey_pem() {
    run pk11 --read-object --type pubkey --id "$1" -o "$2.raw"
    if [[ $RUN_STATUS != 0 && $RUN_OUT == *"cannot create EVP_PKEY"* ]]; then
        note "pkcs11-tool cannot export public key $1 (OpenSC 0.23.0 reads freed memory): p11tool --export reads it"
        ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --outfile "$2.raw" \
            --export "pkcs11:token=$TOKEN_LABEL;id=$(sed 's/../%&/g' <<<"$1");type=public"
    elif [[ $RUN_STATUS != 0 ]]; then
        fail "pkcs11-tool --read-object --type pubkey --id $1 failed: $(summarize "$RUN_OUT")"
    fi
    if ! openssl pkey -pubin -inform der -in "$2.raw" -out "$2" 2>/dev/null &&
        ! openssl pkey -pubin -inform pem -in "$2.raw" -out "$2" 2>/dev/null; then
        fail "openssl pkey could not parse the public key read for id $1 ($(stat -c %s "$2.raw") bytes: $(head -c 24 "$2.raw" | xxd -p))"
    fi
}

# engine_conf: an openssl.cnf (path printed) that loads the libp11 engine
# ("pkcs11", Debian package libengine-pkcs11-openssl) on the module under test.
engine_conf() {
    local dir conf=$TEST_TMP/openssl-engine.cnf
    dir=$(openssl version -e | sed -nE 's/^ENGINESDIR: "(.*)"$/\1/p')
    [[ -f $dir/pkcs11.so ]] ||
        fail "the OpenSSL engine $dir/pkcs11.so is missing (install libengine-pkcs11-openssl; scripts/setup.sh does)"
    cat >"$conf" <<CONF
openssl_conf = openssl_init
[openssl_init]
engines = engine_section
[engine_section]
pkcs11 = pkcs11_section
[pkcs11_section]
engine_id = pkcs11
dynamic_path = $dir/pkcs11.so
MODULE_PATH = $P11KEYCHAIN_MODULE
init = 0
CONF
    echo "$conf"
}

# key_url LABEL: the RFC 7512 URL of the token's private key LABEL, PIN included.
key_url() {
    echo "pkcs11:token=$TOKEN_LABEL;object=$1;type=private;pin-value=$USER_PIN"
}

# protect_etc_pkcs11: /etc/pkcs11 belongs to the machine; put back after the
# test exactly what was there (including its absence). Needs root.
protect_etc_pkcs11() {
    [[ $(id -u) == 0 ]] || fail "needs root to register the module in /etc/pkcs11/modules"
    local saved=$TEST_TMP/saved-etc-pkcs11
    if [[ -e /etc/pkcs11 ]]; then
        cp -a /etc/pkcs11 "$saved"
        defer "rm -rf /etc/pkcs11 && cp -a '$saved' /etc/pkcs11"
    else
        defer "rm -rf /etc/pkcs11"
    fi
}

# engine_self_signed LABEL OUT: `openssl req -x509` through the libp11 engine
# signs a certificate "CN=LABEL" for the token's private key LABEL (PEM in OUT).
engine_self_signed() {
    local conf
    conf=$(engine_conf)
    ok env OPENSSL_CONF="$conf" openssl req -new -x509 -engine pkcs11 -keyform engine \
        -key "$(key_url "$1")" -subj "/CN=$1" -days 30 -out "$2"
    [[ -s $2 ]] || fail "openssl req -engine pkcs11 wrote no certificate for key $1"
}
