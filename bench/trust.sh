#!/usr/bin/env bash
# bench/trust.sh: trust evaluations per second, SecTrustEvaluateWithError beside OpenSSL's
# X509_verify_cert in a loop in one C process (Speed; target >= 0.8x).
#
# The chain: an EC P-256 leaf (SAN www.bench.test, EKU serverAuth), an intermediate and a root.
# The system bundle (P11KEYCHAIN_SYSTEM_ANCHORS) holds 150 roots: 149 others and the chain's.
# The keychain holds 10,000 certificates, 5 of them marked trusted roots (add-trusted-cert), so
# every evaluation reads the keychain's trust settings among 10,000 certificates.
#
# trust-bench (bench/TrustBench, release) makes a fresh SecTrust per round from the same two
# SecCertificates with SecPolicyCreateSSL(true, "www.bench.test") and evaluates it; bench/trust.c
# makes a fresh X509_STORE_CTX per round with the SSL-server purpose and the host name, over one
# X509_STORE loaded from the same 150-root bundle. Both run single-threaded for
# BENCH_TRUST_SECONDS, interleaved, BENCH_TRUST_ROUNDS times; figures are medians.
# Prints a markdown table (also bench/results/trust.md).
#
# Settings (environment):
#   BENCH_TRUST_SECONDS=5   seconds per measurement
#   BENCH_TRUST_ROUNDS=3    rounds
#   BENCH_TRUST_CERTS=10000 certificates in the keychain
#   BENCH_TRUST_BUILT=DIR   use trust-bench and p11keychain from DIR (a release build) instead
#                           of building them
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${BENCH_TRUST_SECONDS:-5}
rounds=${BENCH_TRUST_ROUNDS:-3}
certs=${BENCH_TRUST_CERTS:-10000}
results=$here/results
build=$here/build
work=$(mktemp -d "${TMPDIR:-/tmp}/p11trust.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { printf '== %s\n' "$*" >&2; }
fail() { printf 'bench/trust.sh: %s\n' "$*" >&2; exit 1; }

for cmd in gcc python3; do
    command -v "$cmd" >/dev/null 2>&1 || fail "$cmd is missing (scripts/setup.sh installs it)"
done
python3 -c 'import cryptography' 2>/dev/null || fail "python3-cryptography is missing (scripts/setup.sh installs it)"
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH=$PATH:/opt/swift/usr/bin
fi
mkdir -p "$build" "$results"
log "building trust (C)"
gcc -O2 -Wall -Wextra -std=gnu11 -o "$build/trust" "$here/trust.c" -lcrypto
bin=${BENCH_TRUST_BUILT:-}
if [ -z "$bin" ]; then
    command -v swift >/dev/null 2>&1 || fail "swift not found: trust-bench is a Swift program"
    log "building trust-bench and p11keychain (release)"
    (cd "$root" && swift build -c release --product trust-bench && swift build -c release --product p11keychain) >&2
    bin=$root/.build/release
fi

log "making 150 anchors, the chain and $certs keychain certificates"
python3 - "$work" "$certs" <<'EOF'
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

out, count = sys.argv[1], int(sys.argv[2])
start, end = datetime.datetime(2020, 1, 1), datetime.datetime(2099, 1, 1)
pem = lambda c: c.public_bytes(serialization.Encoding.PEM)

def make(cn, key, issuer=None, ca=True, serial=1, extra=()):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    issuer_name, issuer_key = (issuer[0].subject, issuer[1]) if issuer else (name, key)
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name).public_key(key.public_key())
         .serial_number(serial).not_valid_before(start).not_valid_after(end)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    for e in extra:
        b = b.add_extension(e, critical=False)
    return b.sign(issuer_key, hashes.SHA256()), key

root = make("Bench Root", ec.generate_private_key(ec.SECP256R1()))
inter = make("Bench Intermediate", ec.generate_private_key(ec.SECP256R1()), issuer=root, serial=2)
leaf = make("www.bench.test", ec.generate_private_key(ec.SECP256R1()), issuer=inter, ca=False, serial=3,
            extra=[x509.SubjectAlternativeName([x509.DNSName("www.bench.test")]),
                   x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])])
with open(f"{out}/system.pem", "wb") as f:
    for i in range(149):
        f.write(pem(make(f"Bench Other Root {i}", ec.generate_private_key(ec.SECP256R1()), serial=10 + i)[0]))
    f.write(pem(root[0]))
open(f"{out}/leaf.pem", "wb").write(pem(leaf[0]))
open(f"{out}/intermediate.pem", "wb").write(pem(inter[0]))
key = ec.generate_private_key(ec.SECP256R1())
with open(f"{out}/keychain.pem", "wb") as f:
    for i in range(count):
        f.write(pem(make(f"Bench Keychain {i}", key, serial=1000 + i)[0]))
for i in range(5):
    open(f"{out}/trusted-{i}.pem", "wb").write(pem(make(f"Bench Keychain Trusted {i}", ec.generate_private_key(ec.SECP256R1()), serial=90 + i)[0]))
EOF

export P11KEYCHAIN_DIR=$work/store P11KEYCHAIN_CONF=/dev/null P11KEYCHAIN_SYSTEM_ANCHORS=$work/system.pem
"$bin/p11keychain" add-certificates "$work/keychain.pem" >&2
for i in 0 1 2 3 4; do "$bin/p11keychain" add-trusted-cert "$work/trusted-$i.pem" >/dev/null; done

rate() { sed -n 's/.*per_second=\([0-9.]*\).*/\1/p'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
: >"$work/c.txt"
: >"$work/swift.txt"
for round in $(seq "$rounds"); do
    log "round $round of $rounds: X509_verify_cert, then SecTrustEvaluateWithError, ${seconds} s each"
    "$build/trust" "$work/system.pem" "$work/leaf.pem" "$work/intermediate.pem" www.bench.test "$seconds" |
        rate >>"$work/c.txt"
    "$bin/trust-bench" "$work/leaf.pem" "$work/intermediate.pem" www.bench.test "$seconds" | rate >>"$work/swift.txt"
done
c=$(median <"$work/c.txt")
s=$(median <"$work/swift.txt")
ratio=$(awk -v a="$s" -v b="$c" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.8) ? "met" : "NOT met" }')

{
    cat <<EOF
# Trust evaluation: SecTrustEvaluateWithError vs X509_verify_cert

- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end
- commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none), release build; OpenSSL $(openssl version | cut -d' ' -f2)
- chain: EC P-256 leaf + intermediate + root; 150 system anchors; $certs certificates in the keychain (5 trusted roots)
- $rounds rounds of ${seconds} s each, interleaved, one thread; medians (per round: C $(paste -sd' ' "$work/c.txt"); Swift $(paste -sd' ' "$work/swift.txt"))

| | evaluations/s |
|---|---|
| X509_verify_cert loop (C, one process) | $c |
| SecTrustEvaluateWithError (fresh SecTrust per evaluation) | $s |
| ratio | ${ratio}x (target >= 0.8x: $verdict) |
EOF
} | tee "$results/trust.md"
