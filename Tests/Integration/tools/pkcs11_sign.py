"""Finds token objects by label, signs and verifies through python-pkcs11 (PyPI).

    python pkcs11_sign.py MODULE TOKEN PIN DATA OUTDIR [--generate] LABEL...

For each LABEL: finds the certificate (if any), the private key and the public key with
that CKA_LABEL, signs DATA on the token (CKM_ECDSA_SHA256 or CKM_SHA256_RSA_PKCS by key
type), verifies the signature on the token with the public key, and writes
OUTDIR/LABEL.sig (ECDSA as DER, the form openssl reads) and, when there is a certificate,
OUTDIR/LABEL.der, for openssl to check outside PKCS#11. With --generate each LABEL is first
made as a new P-256 key pair on the token (C_GenerateKeyPair, token objects), its
public key written to OUTDIR/LABEL.pub.der.
Prints one line per label; exits 1 on the first failure.
"""

import sys
from pathlib import Path

import pkcs11
from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from pkcs11.util.ec import encode_ec_public_key, encode_ecdsa_signature, encode_named_curve_parameters


def generate(session, label, out):
    parameters = session.create_domain_parameters(
        KeyType.EC, {Attribute.EC_PARAMS: encode_named_curve_parameters("secp256r1")}, local=True
    )
    public, _ = parameters.generate_keypair(store=True, label=label)
    spki = encode_ec_public_key(public)
    (out / f"{label}.pub.der").write_bytes(spki)
    print(f"generated {label}: EC P-256, public key {len(spki)} bytes DER")


def sign_and_verify(session, label, data, out):
    certificates = list(session.get_objects({Attribute.CLASS: ObjectClass.CERTIFICATE, Attribute.LABEL: label}))
    private = session.get_key(ObjectClass.PRIVATE_KEY, label=label)
    public = session.get_key(ObjectClass.PUBLIC_KEY, label=label)
    if private.key_type == KeyType.EC:
        mechanism, name = Mechanism.ECDSA_SHA256, "ECDSA-SHA256"
    else:
        mechanism, name = Mechanism.SHA256_RSA_PKCS, "SHA256-RSA-PKCS"
    signature = private.sign(data, mechanism=mechanism)
    verified = public.verify(data, signature, mechanism=mechanism)
    # A different message must not verify: the check can fail.
    forged = public.verify(data + b"!", signature, mechanism=mechanism)
    stored = encode_ecdsa_signature(signature) if private.key_type == KeyType.EC else signature
    (out / f"{label}.sig").write_bytes(stored)
    if certificates:
        (out / f"{label}.der").write_bytes(certificates[0][Attribute.VALUE])
    print(
        f"signed {label} {name}: {len(signature)} bytes, "
        f"{'verified' if verified else 'NOT verified'} on the token, "
        f"altered message {'ACCEPTED' if forged else 'rejected'}, "
        f"{len(certificates)} certificate(s)"
    )
    return verified and not forged


def main(argv):
    if len(argv) < 7:
        print(__doc__, file=sys.stderr)
        return 2
    module, token_label, pin, data_path, out_dir = argv[1:6]
    labels = argv[6:]
    make = labels[:1] == ["--generate"]
    labels = labels[1:] if make else labels
    data = Path(data_path).read_bytes()
    out = Path(out_dir)
    token = pkcs11.lib(module).get_token(token_label=token_label)
    with token.open(user_pin=pin, rw=True) as session:
        for label in labels:
            try:
                if make:
                    generate(session, label, out)
                if not sign_and_verify(session, label, data, out):
                    return 1
            except pkcs11.PKCS11Error as error:
                print(f"failed {label}: {type(error).__name__} {error}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
