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

/*
 * ECDSA straight into PKCS#11's r ‖ s, through OpenSSL's EC_KEY layer.
 *
 * EVP_PKEY_sign runs the same signing code (ECDSA_do_sign_ex) and then DER-encodes the two
 * integers, which the module would only parse back: about 5 % of a P-256 signature.
 * p11k_ec_key is the key's EC_KEY (OpenSSL's own copy of the provider's key, made once and
 * kept with the EVP_PKEY, in the key's library context, which also draws the nonce), with a
 * reference the caller frees with p11k_ec_key_free. The EC_KEY functions are deprecated
 * since OpenSSL 3.0, so they are reached only here; where OpenSSL is built without them,
 * p11k_ec_key is NULL and the caller signs through EVP_PKEY_sign.
 */
#if !defined(OPENSSL_NO_DEPRECATED_3_0) && !defined(OPENSSL_NO_EC)
#include <openssl/ecdsa.h>
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline struct ec_key_st *p11k_ec_key(EVP_PKEY *pkey) { return EVP_PKEY_get1_EC_KEY(pkey); }
static inline void p11k_ec_key_free(struct ec_key_st *key) { EC_KEY_free(key); }
/* Signs the `length` bytes at `digest` and writes r ‖ s, each `width` bytes, to `output`
 * (2 × width bytes). 1 on success; 0 when OpenSSL fails or r or s is wider than `width`. */
static inline int p11k_ecdsa_sign_raw(struct ec_key_st *key, const unsigned char *digest, int length,
                                      unsigned char *output, int width)
{
    ECDSA_SIG *signature = ECDSA_do_sign(digest, length, key);
    if (signature == NULL)
        return 0;
    int ok = BN_bn2binpad(ECDSA_SIG_get0_r(signature), output, width) == width
             && BN_bn2binpad(ECDSA_SIG_get0_s(signature), output + width, width) == width;
    ECDSA_SIG_free(signature);
    return ok;
}
#pragma clang diagnostic pop
#else
static inline struct ec_key_st *p11k_ec_key(EVP_PKEY *pkey) { (void)pkey; return NULL; }
static inline void p11k_ec_key_free(struct ec_key_st *key) { (void)key; }
static inline int p11k_ecdsa_sign_raw(struct ec_key_st *key, const unsigned char *digest, int length,
                                      unsigned char *output, int width)
{
    (void)key; (void)digest; (void)length; (void)output; (void)width;
    return 0;
}
#endif
