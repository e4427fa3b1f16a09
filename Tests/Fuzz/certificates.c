/*
 * Certificate DER for p11fuzz: the valid certificates the script made with `openssl req
 * -x509`, and mutations of them (bit flips, truncation, DER length bytes, splices), each
 * handed over in a buffer of exactly its length.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

enum { MAX_CERTS = 16 };
static uint8_t *certs[MAX_CERTS];
static size_t cert_lengths[MAX_CERTS];
static int cert_count;

static int der_file(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 4 && strcmp(e->d_name + n - 4, ".der") == 0;
}

/* Reads every *.der file of `dir`, in name order: the same files give the same calls. */
int load_certificates(const char *dir)
{
    struct dirent **names;
    int found = scandir(dir, &names, der_file, alphasort);
    if (found < 0)
        return -1;
    for (int k = 0; k < found; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]->d_name);
        free(names[k]);
        FILE *f = cert_count < MAX_CERTS ? fopen(path, "rb") : NULL;
        if (!f)
            continue;
        uint8_t buf[16384];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        uint8_t *copy = len ? malloc(len) : NULL;
        if (!copy)
            continue;
        memcpy(copy, buf, len);
        certs[cert_count] = copy;
        cert_lengths[cert_count++] = len;
    }
    free(names);
    return cert_count;
}

/* One mutation of `der` in place or into a new scratch buffer; returns the new length. */
uint8_t *mutate_bytes(uint8_t *der, size_t *len)
{
    size_t n = *len;
    switch (below(9)) {
    case 0: /* flip a bit */
        if (n)
            der[below(n)] ^= (uint8_t)(1u << below(8));
        return der;
    case 1: { /* an interesting byte */
        static const uint8_t bytes[] = { 0x00, 0xff, 0x80, 0x7f, 0x81, 0x82, 0x84, 0x30, 0x05 };
        if (n)
            der[below(n)] = PICK(bytes);
        return der;
    }
    case 2: /* truncate */
        *len = below(n + 1);
        return der;
    case 3: { /* append */
        size_t extra = 1 + below(64);
        uint8_t *out = scratch(n + extra);
        memcpy(out, der, n);
        for (size_t i = 0; i < extra; i++)
            out[n + i] = (uint8_t)rnd();
        *len = n + extra;
        return out;
    }
    case 4: { /* delete a range */
        if (n < 2)
            return der;
        size_t at = below(n), cut = 1 + below(n - at);
        memmove(der + at, der + at + cut, n - at - cut);
        *len = n - cut;
        return der;
    }
    case 5: { /* duplicate a range */
        if (!n)
            return der;
        size_t at = below(n), span = 1 + below(n - at < 64 ? n - at : 64);
        uint8_t *out = scratch(n + span);
        memcpy(out, der, at + span);
        memcpy(out + at + span, der + at, n - at);
        *len = n + span;
        return out;
    }
    case 6: { /* a DER length byte after a tag: off by one, long form, indefinite */
        for (int tries = 0; tries < 16 && n > 2; tries++) {
            size_t at = below(n - 1);
            uint8_t tag = der[at];
            if (tag != 0x30 && tag != 0x31 && tag != 0x02 && tag != 0x03 && tag != 0x04
                && tag != 0x06 && tag != 0xa0 && tag != 0xa3 && tag != 0x17 && tag != 0x0c)
                continue;
            static const uint8_t lens[] = { 0x80, 0x81, 0x84, 0x88, 0xff, 0x00, 0x7f };
            der[at + 1] = percent(50) ? (uint8_t)(der[at + 1] + (percent(50) ? 1 : -1)) : PICK(lens);
            break;
        }
        return der;
    }
    case 7: { /* splice the tail of another certificate */
        if (!cert_count || !n)
            return der;
        int other = (int)below((uint64_t)cert_count);
        size_t at = below(n), from = below(cert_lengths[other]);
        size_t tail = cert_lengths[other] - from;
        uint8_t *out = scratch(at + tail);
        memcpy(out, der, at);
        memcpy(out + at, certs[other] + from, tail);
        *len = at + tail;
        return out;
    }
    default: /* an overlong first length: claims more than is there */
        if (n > 4 && der[1] == 0x82)
            der[2] = (uint8_t)(der[2] + 1 + below(4));
        return der;
    }
}

uint8_t *certificate_der(size_t *len, int mutating)
{
    if (!cert_count) {
        *len = small_length();
        return scratch_random(*len);
    }
    int i = (int)below((uint64_t)cert_count);
    size_t n = cert_lengths[i];
    uint8_t *der = scratch_copy(certs[i], n);
    if (mutating) {
        int rounds = 1 + (int)below(4);
        for (int r = 0; r < rounds; r++)
            der = mutate_bytes(der, &n);
    }
    /* Exactly n bytes, so that a read past the DER's end is caught. */
    *len = n;
    return scratch_copy(der, n);
}

