/* libp11-kit's RFC 7512 URI functions (p11_kit_uri_*): the CLI parses and formats every
 * pkcs11: URI with them (Sources/p11keychain/PKCS11URI.swift). */
#include <p11-kit/uri.h>
