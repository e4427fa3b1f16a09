#include <sqlite3.h>
#include <stdint.h>

/* The store's change counter lives in a small file every process maps shared
 * (KeychainStorage/ChangeCounter.swift). Swift has no atomic access to memory it
 * does not own, so the two accesses are these sequentially consistent builtins. */
static inline uint64_t p11k_counter_load(const volatile uint64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}

static inline void p11k_counter_store(volatile uint64_t *counter, uint64_t value)
{
    __atomic_store_n(counter, value, __ATOMIC_SEQ_CST);
}
