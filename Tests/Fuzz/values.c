/*
 * The seeded generator, per-iteration memory, lengths and handle pools of p11fuzz.
 * Everything random comes from one stream seeded from the command line, so a seed and an
 * iteration count replay a run (see README.md).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* ---------------------------------------------------------------- generator */

/* xoshiro256** (Blackman and Vigna), seeded through splitmix64: small, fast, and good
   enough that the sequence of calls is not visibly patterned. */
static uint64_t state[4];

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        state[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rnd(void)
{
    uint64_t result = rotl(state[1] * 5, 7) * 9;
    uint64_t t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return result;
}

uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
int one_in(uint64_t n) { return below(n) == 0; }
int percent(unsigned p) { return below(100) < p; }

/* ---------------------------------------------------------------- scratch memory */

enum { SCRATCH_MAX = 4096 };
static void *allocations[SCRATCH_MAX];
static size_t allocation_count;

void *scratch(size_t n)
{
    if (allocation_count == SCRATCH_MAX)
        scratch_release(); /* cannot happen within one call; keeps the array bounded */
    /* Exactly n bytes (1 for n == 0, so the pointer is non-NULL and unique). */
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    allocations[allocation_count++] = p;
    return p;
}

void *scratch_copy(const void *bytes, size_t n)
{
    void *p = scratch(n);
    if (n)
        memcpy(p, bytes, n);
    return p;
}

uint8_t *scratch_random(size_t n)
{
    uint8_t *p = scratch(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
    return p;
}

void scratch_release(void)
{
    for (size_t i = 0; i < allocation_count; i++)
        free(allocations[i]);
    allocation_count = 0;
}

static uint8_t big_buffer[OUT_BIG];
static CK_OBJECT_HANDLE handle_buffer[OUT_HANDLES];
uint8_t *out_big(void) { return big_buffer; }
CK_OBJECT_HANDLE *out_handles(void) { return handle_buffer; }

/* ---------------------------------------------------------------- lengths */

int huge_class(const char *cls) { return !skipped("huge") && !skipped(cls); }

CK_ULONG impossible_length(void)
{
    static const CK_ULONG values[] = {
        0x7fffffffffffffffUL, 0x8000000000000000UL, 0x8000000000000001UL,
        0xfffffffffffffffeUL, 0xffffffffffffffffUL, 0x8000000000000000UL | 0x10,
        0xffffffffffffff00UL,
    };
    return PICK(values);
}

size_t small_length(void)
{
    static const size_t edges[] = { 0, 1, 2, 15, 16, 17, 20, 28, 31, 32, 33, 48, 64, 65,
                                    127, 128, 255, 256, 257, 511, 512, 1024, 4096 };
    if (percent(60))
        return PICK(edges);
    return (size_t)below(percent(90) ? 300 : 70000);
}

/* ---------------------------------------------------------------- handle pools */

pool_t live_sessions, stale_sessions, live_objects, stale_objects;

void pool_add(pool_t *pool, CK_ULONG value)
{
    for (int i = 0; i < pool->n; i++)
        if (pool->v[i] == value)
            return;
    if (pool->n < POOL_SIZE)
        pool->v[pool->n++] = value;
    else
        pool->v[below(POOL_SIZE)] = value;
}

int pool_remove(pool_t *pool, CK_ULONG value)
{
    for (int i = 0; i < pool->n; i++) {
        if (pool->v[i] == value) {
            pool->v[i] = pool->v[--pool->n];
            return 1;
        }
    }
    return 0;
}

CK_ULONG pool_pick(const pool_t *pool) { return pool->n ? pool->v[below((uint64_t)pool->n)] : 0; }
void pool_clear(pool_t *pool) { pool->n = 0; }

fuzz_key keys[KEY_POOL];
int key_count;

void key_add(CK_OBJECT_HANDLE h, CK_OBJECT_CLASS cls, CK_KEY_TYPE type)
{
    fuzz_key k = { h, cls, type, 0 };
    if (key_count < KEY_POOL) {
        keys[key_count++] = k;
        return;
    }
    int i = (int)below(KEY_POOL);
    if (!keys[i].anchor)
        keys[i] = k;
}

int key_is_anchor(CK_OBJECT_HANDLE h)
{
    for (int i = 0; i < key_count; i++)
        if (keys[i].handle == h)
            return keys[i].anchor;
    return 0;
}

void key_forget(CK_OBJECT_HANDLE h)
{
    for (int i = 0; i < key_count; i++) {
        if (keys[i].handle == h) {
            keys[i] = keys[--key_count];
            return;
        }
    }
}

void keys_stale(void)
{
    for (int i = 0; i < key_count; i++)
        pool_add(&stale_objects, keys[i].handle);
    key_count = 0;
}

static void key_anchor(CK_OBJECT_HANDLE h)
{
    for (int i = 0; i < key_count; i++)
        if (keys[i].handle == h)
            keys[i].anchor = 1;
}

void key_add_anchor(CK_OBJECT_HANDLE h, CK_OBJECT_CLASS cls, CK_KEY_TYPE type)
{
    /* Anchors go first and are never replaced by newer keys. */
    if (key_count == KEY_POOL)
        return;
    key_add(h, cls, type);
    key_anchor(h);
}

/* A value no module gave out: 0, all ones, small numbers, random bits. */
static CK_ULONG wild_handle(void)
{
    static const CK_ULONG values[] = { 0, 1, 2, 3, 0xffffffffUL, 0xffffffffffffffffUL,
                                       0x7fffffffffffffffUL, 0x8000000000000000UL };
    return percent(60) ? PICK(values) : rnd();
}

CK_SESSION_HANDLE pick_session(void)
{
    unsigned p = (unsigned)below(100);
    if (p < 80 && live_sessions.n)
        return pool_pick(&live_sessions);
    if (p < 90 && stale_sessions.n)
        return pool_pick(&stale_sessions);
    if (live_sessions.n && p < 95)
        return pool_pick(&live_sessions) + 1 + below(3);
    return wild_handle();
}

CK_OBJECT_HANDLE pick_object(void)
{
    unsigned p = (unsigned)below(100);
    if (p < 60 && live_objects.n)
        return pool_pick(&live_objects);
    if (p < 70 && key_count)
        return keys[below((uint64_t)key_count)].handle;
    if (p < 80 && stale_objects.n)
        return pool_pick(&stale_objects);
    if (p < 92) {
        /* Forged: a slot in the top byte, maybe the session bit, a small or wild row. */
        CK_ULONG slot = below(4);
        CK_ULONG row = percent(70) ? below(5000) : rnd();
        return (slot << 56) | (percent(30) ? (1UL << 55) : 0) | (row & ((1UL << 55) - 1));
    }
    return wild_handle();
}

CK_OBJECT_HANDLE pick_key(CK_OBJECT_CLASS cls, CK_KEY_TYPE type)
{
    if (percent(85)) {
        int matches[KEY_POOL], n = 0;
        for (int i = 0; i < key_count; i++)
            if (keys[i].cls == cls && (type == (CK_KEY_TYPE)-1 || keys[i].type == type))
                matches[n++] = i;
        if (n)
            return keys[matches[below((uint64_t)n)]].handle;
        if (key_count && percent(50))
            return keys[below((uint64_t)key_count)].handle;
    }
    return pick_object();
}

CK_SLOT_ID pick_slot(void)
{
    /* The configuration has two tokens: slots 0 and 1. */
    unsigned p = (unsigned)below(100);
    if (p < 75)
        return 0;
    if (p < 92)
        return 1;
    return wild_handle();
}
