/*
 * The module's two process-wide locks (Sources/PKCS11Token/Module.swift): the call gate,
 * held shared by every call and exclusively by the fork handler, and the session table's
 * lock. Statically initialised C objects, as pthread allows: Swift makes a global lazily,
 * behind a once-check on every access, and two such checks a call were 1 % of an HMAC's
 * C_SignInit + C_Sign.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "p11keychain.h"

/* Writer-preferring, so that a stream of calls cannot starve a fork. */
pthread_rwlock_t p11k_call_gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
pthread_mutex_t p11k_session_table_lock = PTHREAD_MUTEX_INITIALIZER;

void p11k_reinitialize_locks_after_fork(void)
{
    pthread_rwlockattr_t attributes;
    pthread_rwlockattr_init(&attributes);
    pthread_rwlockattr_setkind_np(&attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&p11k_call_gate, &attributes);
    pthread_rwlockattr_destroy(&attributes);
    pthread_mutex_init(&p11k_session_table_lock, NULL);
}
