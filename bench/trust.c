/*
 * trust: X509_verify_cert in a loop, the reference for bench/trust.sh.
 *
 *     trust ANCHORS.pem LEAF.pem INTERMEDIATE.pem HOSTNAME SECONDS
 *
 * What `openssl verify -purpose sslserver -verify_hostname HOSTNAME -CAfile ANCHORS.pem
 * -untrusted INTERMEDIATE.pem LEAF.pem` does, in one process: the anchors and the two
 * certificates are read once; each round makes a verification context, sets the SSL-server
 * purpose and the host name, verifies and frees the context. Prints
 * `evaluations=N seconds=S per_second=R`; every verification must succeed.
 */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static X509 *read_certificate(const char *path) {
    FILE *file = fopen(path, "r");
    if (file == NULL) return NULL;
    X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    return certificate;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int verify_once(X509_STORE *store, X509 *leaf, STACK_OF(X509) *untrusted, const char *host) {
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    if (context == NULL || X509_STORE_CTX_init(context, store, leaf, untrusted) != 1) {
        X509_STORE_CTX_free(context);
        return 0;
    }
    X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM *parameters = X509_STORE_CTX_get0_param(context);
    X509_VERIFY_PARAM_set_hostflags(parameters, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    X509_VERIFY_PARAM_set1_host(parameters, host, 0);
    int ok = X509_verify_cert(context) == 1;
    X509_STORE_CTX_free(context);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: trust ANCHORS.pem LEAF.pem INTERMEDIATE.pem HOSTNAME SECONDS\n");
        return 2;
    }
    X509_STORE *store = X509_STORE_new();
    X509 *leaf = read_certificate(argv[2]);
    X509 *intermediate = read_certificate(argv[3]);
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    double seconds = atof(argv[5]);
    if (store == NULL || leaf == NULL || intermediate == NULL || untrusted == NULL ||
        X509_STORE_load_file(store, argv[1]) != 1 || sk_X509_push(untrusted, intermediate) <= 0) {
        fprintf(stderr, "trust: cannot read the certificates\n");
        return 1;
    }
    if (!verify_once(store, leaf, untrusted, argv[4])) {
        fprintf(stderr, "trust: the chain does not verify\n");
        return 1;
    }
    long count = 0;
    double start = now(), elapsed;
    do {
        for (int i = 0; i < 50; i++) {
            if (!verify_once(store, leaf, untrusted, argv[4])) {
                fprintf(stderr, "trust: a verification failed\n");
                return 1;
            }
        }
        count += 50;
        elapsed = now() - start;
    } while (elapsed < seconds);
    printf("evaluations=%ld seconds=%.3f per_second=%.1f\n", count, elapsed, (double)count / elapsed);
    sk_X509_pop_free(untrusted, X509_free);
    X509_free(leaf);
    X509_STORE_free(store);
    return 0;
}
