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

/* sqlite3_db_config is variadic, which Swift cannot call: the options that take
 * one int and report the new setting through an int* (the store's opening turns
 * off triggers, views and untrusted schema functions: KeychainStorage/Database.swift). */
static inline int p11k_db_config_flag(sqlite3 *db, int option, int value)
{
    int now = -1;
    int result = sqlite3_db_config(db, option, value, &now);
    return result == SQLITE_OK ? now : -1;
}
