#!/usr/bin/python3
"""An independent model of Apple's ECIES and ECDH key exchange, for the Swift tests.

Written from Apple's documentation of the SecKeyAlgorithm constants (SecKey.h) with the
Python `cryptography` package (Debian's python3-cryptography), sharing no code with the
project:

  ECIES message = ephemeral public key (X9.63 uncompressed 04 || X || Y)
                  || AES-GCM ciphertext || 16-byte tag
  key material  = ANSI X9.63 KDF(ECDH(ephemeral private, recipient public),
                                 SharedInfo = ephemeral public key)
  AES key       = 16 bytes for curves of at most 256 bits, else 32
  GCM IV        = the 16 bytes after the key in the KDF output (VariableIV forms), or
                  16 zero bytes (legacy forms); no additional data

Reads a JSON request on stdin: {"operations": [...]}, each operation one of
  {"op": "generate", "curve": "P-256"}                 -> {"private": hex K, "public": hex point}
  {"op": "encrypt", "curve", "public", "digest", "variableIV", "plaintext"}  -> {"message": hex}
  {"op": "decrypt", "curve", "private", "digest", "variableIV", "message"}   -> {"plaintext": hex}
                                                        (or {"error": "..."} when the tag fails)
  {"op": "exchange", "curve", "private", "peer", "digest" (or null), "sharedInfo", "size"}
                                                        -> {"secret": hex}
and writes {"results": [...]} on stdout, one result per operation.
"""

import json
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

CURVES = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}
DIGESTS = {
    "sha1": hashes.SHA1,
    "sha224": hashes.SHA224,
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
    "sha512": hashes.SHA512,
}


def point(public_key):
    return public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)


def private_key(curve, scalar_hex):
    return ec.derive_private_key(int(scalar_hex, 16), CURVES[curve])


def public_key(curve, point_hex):
    return ec.EllipticCurvePublicKey.from_encoded_point(CURVES[curve], bytes.fromhex(point_hex))


def x963(digest, secret, shared_info, length):
    return X963KDF(algorithm=DIGESTS[digest](), length=length, sharedinfo=shared_info).derive(secret)


def key_and_iv(curve, digest, variable_iv, secret, ephemeral):
    key_length = 16 if CURVES[curve].key_size <= 256 else 32
    material = x963(digest, secret, ephemeral, key_length + (16 if variable_iv else 0))
    iv = material[key_length:] if variable_iv else bytes(16)
    return material[:key_length], iv


def generate(operation):
    key = ec.generate_private_key(CURVES[operation["curve"]])
    width = (CURVES[operation["curve"]].key_size + 7) // 8
    scalar = key.private_numbers().private_value.to_bytes(width, "big")
    return {"private": scalar.hex(), "public": point(key.public_key()).hex()}


def encrypt(operation):
    curve = operation["curve"]
    recipient = public_key(curve, operation["public"])
    ephemeral_key = ec.generate_private_key(CURVES[curve])
    ephemeral = point(ephemeral_key.public_key())
    secret = ephemeral_key.exchange(ec.ECDH(), recipient)
    key, iv = key_and_iv(curve, operation["digest"], operation["variableIV"], secret, ephemeral)
    sealed = AESGCM(key).encrypt(iv, bytes.fromhex(operation["plaintext"]), None)
    return {"message": (ephemeral + sealed).hex()}


def decrypt(operation):
    curve = operation["curve"]
    message = bytes.fromhex(operation["message"])
    width = (CURVES[curve].key_size + 7) // 8
    ephemeral, sealed = message[: 1 + 2 * width], message[1 + 2 * width :]
    key = private_key(curve, operation["private"])
    secret = key.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(CURVES[curve], ephemeral))
    aes_key, iv = key_and_iv(curve, operation["digest"], operation["variableIV"], secret, ephemeral)
    try:
        return {"plaintext": AESGCM(aes_key).decrypt(iv, sealed, None).hex()}
    except InvalidTag:
        return {"error": "the tag does not verify"}


def exchange(operation):
    curve = operation["curve"]
    secret = private_key(curve, operation["private"]).exchange(
        ec.ECDH(), public_key(curve, operation["peer"])
    )
    if operation.get("digest"):
        secret = x963(operation["digest"], secret, bytes.fromhex(operation["sharedInfo"]), operation["size"])
    return {"secret": secret.hex()}


def main():
    handlers = {"generate": generate, "encrypt": encrypt, "decrypt": decrypt, "exchange": exchange}
    request = json.load(sys.stdin)
    results = [handlers[operation["op"]](operation) for operation in request["operations"]]
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
