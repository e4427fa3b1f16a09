#!/usr/bin/env python3
"""Makes the trust fixtures of this directory (run once; the PEMs are committed).

Python's `cryptography` package is used only because OpenSSL 3.0's command line cannot set
arbitrary validity dates or an unknown critical extension. Keys are EC P-256 and thrown away,
except leaf.key (for the PKCS#12 file). See README.md here for what each file is for.
"""
import datetime
import ipaddress
import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HERE = Path(__file__).resolve().parent
UTC = datetime.timezone.utc
START = datetime.datetime(2020, 1, 1, tzinfo=UTC)
END = datetime.datetime(2099, 1, 1, tzinfo=UTC)
serial = 100


def name(common):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "p11keychain trust tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make(common, issuer=None, ca=False, path_length=None, sans=(), eku=None, start=START, end=END,
         critical_unknown=False, permitted=None, key=None):
    global serial
    serial += 1
    key = key or ec.generate_private_key(ec.SECP256R1())
    subject = name(common)
    issuer_name, issuer_key = (issuer[0].subject, issuer[1]) if issuer else (subject, key)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name)
               .public_key(key.public_key()).serial_number(serial)
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if issuer:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                          encipher_only=False, decipher_only=False), critical=True)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage(eku), critical=False)
    if critical_unknown:
        builder = builder.add_extension(
            x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.55555.1"), b"\x05\x00"), critical=True)
    if permitted:
        builder = builder.add_extension(
            x509.NameConstraints(permitted_subtrees=[x509.DNSName(permitted)], excluded_subtrees=None), critical=True)
    certificate = builder.sign(issuer_key, hashes.SHA256())
    return certificate, key


def write(file, *certificates):
    (HERE / file).write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates))


server = [ExtendedKeyUsageOID.SERVER_AUTH]
root = make("Trust Test Root CA", ca=True)
intermediate = make("Trust Test Intermediate CA", issuer=root, ca=True, path_length=0)
leaf = make("www.example.test", issuer=intermediate, eku=server,
            sans=[x509.DNSName("www.example.test"), x509.DNSName("*.wild.example.test"),
                  x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
write("root.pem", root[0])
write("intermediate.pem", intermediate[0])
write("leaf.pem", leaf[0])
(HERE / "leaf.key").write_bytes(leaf[1].private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

write("expired.pem", make("expired.example.test", issuer=intermediate, eku=server,
                          sans=[x509.DNSName("expired.example.test")],
                          start=START, end=datetime.datetime(2021, 1, 1, tzinfo=UTC))[0])
write("future.pem", make("future.example.test", issuer=intermediate, eku=server,
                         sans=[x509.DNSName("future.example.test")],
                         start=datetime.datetime(2090, 1, 1, tzinfo=UTC))[0])
write("client.pem", make("client.example.test", issuer=intermediate, eku=[ExtendedKeyUsageOID.CLIENT_AUTH],
                         sans=[x509.DNSName("client.example.test")])[0])
write("critical.pem", make("critical.example.test", issuer=intermediate, eku=server,
                           sans=[x509.DNSName("critical.example.test")], critical_unknown=True)[0])
write("dns-ip.pem", make("10.0.0.1", issuer=intermediate, eku=server, sans=[x509.DNSName("10.0.0.1")])[0])

other_root = make("Other Test Root CA", ca=True)
write("other-root.pem", other_root[0])
write("other-leaf.pem", make("www.example.test", issuer=other_root, eku=server,
                             sans=[x509.DNSName("www.example.test")])[0])

# Two CAs each issued by the other, and a leaf under one: a loop with no anchor.
key_a, key_b = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
a = make("Loop CA A", issuer=(make("Loop CA B", ca=True, key=key_b)[0], key_b), ca=True, key=key_a)
b = make("Loop CA B", issuer=(a[0], key_a), ca=True, key=key_b)
write("loop.pem", a[0], b[0])
write("loop-leaf.pem", make("loop.example.test", issuer=a, sans=[x509.DNSName("loop.example.test")])[0])

# Twelve CAs in a line under the root, and a leaf: deeper than the bound of 10.
issuer = root
deep = []
for level in range(12):
    issuer = make(f"Deep CA {level}", issuer=issuer, ca=True)
    deep.append(issuer[0])
write("deep-chain.pem", *reversed(deep))
write("deep-leaf.pem", make("deep.example.test", issuer=issuer, sans=[x509.DNSName("deep.example.test")])[0])

# An intermediate constrained to .allowed.test, and leaves inside and outside.
constrained = make("Constrained CA", issuer=root, ca=True, permitted="allowed.test")
write("constrained.pem", constrained[0])
write("allowed.pem", make("www.allowed.test", issuer=constrained, eku=server,
                          sans=[x509.DNSName("www.allowed.test")])[0])
write("denied.pem", make("www.denied.test", issuer=constrained, eku=server,
                         sans=[x509.DNSName("www.denied.test")])[0])

# The leaf, its key and the chain as PKCS#12 (password "trust"), as OpenSSL writes it.
subprocess.run(["openssl", "pkcs12", "-export", "-in", HERE / "leaf.pem", "-inkey", HERE / "leaf.key",
                "-certfile", HERE / "intermediate.pem", "-name", "Trust Test Leaf",
                "-passout", "pass:trust", "-out", HERE / "leaf.p12"], check=True)
