#include <sqlite3.h>
#include <errno.h>
#include <linux/stat.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* sqlite3_db_config is variadic, which Swift cannot call: the options that take
 * one int and report the new setting through an int* (the store's opening turns
 * off triggers, views and untrusted schema functions: KeychainStorage/Database.swift). */
static inline int p11k_db_config_flag(sqlite3 *db, int option, int value)
{
    int now = -1;
    int result = sqlite3_db_config(db, option, value, &now);
    return result == SQLITE_OK ? now : -1;
}

/* The link count and size of an open file, for the change counter's look at its file
 * (KeychainStorage/ChangeCounter.swift), by statx asking for those two only. An fstat
 * asks for the times too, and on a file system with fine-grained timestamps (ext4, xfs,
 * btrfs, tmpfs since Linux 6.13) a reader of the change time makes the next write of the
 * file stamp a new one and dirty the inode: a writer's fstat before its pwrite cost an
 * ext4 journal handle on every write transaction. Glibc declares statx only for
 * _GNU_SOURCE, hence the system call; where it is missing or filtered (ENOSYS, EPERM
 * under an old seccomp policy), fstat. Returns 0, or -1 with errno set. */
static inline int p11k_links_and_size(int fd, uint64_t *links, int64_t *size)
{
    const int empty_path = 0x1000; /* AT_EMPTY_PATH, which glibc names only for _GNU_SOURCE */
    const unsigned int wanted = STATX_NLINK | STATX_SIZE;
    struct statx info;
    long result = syscall(SYS_statx, fd, "", empty_path, wanted, &info);
    if (result == 0 && (info.stx_mask & wanted) == wanted) {
        *links = info.stx_nlink;
        *size = (int64_t)info.stx_size;
        return 0;
    }
    if (result != 0 && errno != ENOSYS && errno != EPERM)
        return -1;
    struct stat old;
    if (fstat(fd, &old) != 0)
        return -1;
    *links = (uint64_t)old.st_nlink;
    *size = (int64_t)old.st_size;
    return 0;
}
