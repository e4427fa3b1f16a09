#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/opensslv.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* Macros Swift does not import. */
static const unsigned long p11k_name_flags_rfc2253 = XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB;
static const int p11k_select_keypair = EVP_PKEY_KEYPAIR;
static const int p11k_select_public_key = EVP_PKEY_PUBLIC_KEY;
