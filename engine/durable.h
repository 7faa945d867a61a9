/*
 * durable: files that must survive a crash (the state file, executor spools
 * and dead letters): a whole write or none, a checksum to tell a torn
 * record, and a replace that is atomic on disk.  Also reading such files,
 * and rule files, back whole; and a hook through which tests make their
 * writes fail.
 */
#ifndef CORRAL_DURABLE_H
#define CORRAL_DURABLE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "engine/buf.h"

/*
 * Reads a whole regular file of at most max bytes into a malloc'ed buffer
 * with a NUL after its len bytes (so text can be parsed in place).  NULL
 * with errno on failure: DURABLE_ENOTREG for what is not a regular file (a
 * FIFO would block, /dev/zero never end), EFBIG past max.  Say why with
 * durable_strerror().
 */
char *durable_read_file(const char *path, size_t max, size_t *len);
/* Opens a regular file of at most max bytes for reading (close-on-exec), as
 * durable_read_file refuses what is not one; -1 with errno as it gives. */
int durable_open_regular(const char *path, size_t max);
/* No errno says "not a regular file": ENODEV is the closest, and nothing else here sets it. */
#define DURABLE_ENOTREG ENODEV
/* strerror(), but "not a regular file" for DURABLE_ENOTREG. */
const char *durable_strerror(int err);
/* The largest state file or spool read back (rule files have their own, smaller, bound). */
#define DURABLE_MAX_STATE ((size_t)1 << (sizeof(size_t) > 4 ? 32 : 30))
/* CRC-32 (IEEE), continuing from crc (0 to start). */
uint32_t durable_crc32(uint32_t crc, const void *data, size_t len);
/* Writes all of data, retrying short writes and EINTR; 0 or -1 with errno. */
int durable_write_all(int fd, const void *data, size_t len);
/* The same for n pieces, one writev() each time (iov is used up: changed); 0 or -1 with errno. */
int durable_writev_all(int fd, struct iovec *iov, size_t n);
/*
 * Replaces path with data atomically: a temporary file beside it, fsync,
 * rename, fsync of the directory.  After a crash the file is either the old
 * or the new one, never a mix.  0 or -1 with errno.
 */
int durable_replace(const char *path, const void *data, size_t len);
/*
 * The same written piece by piece: durable_begin opens the temporary file
 * (write to df->fd), durable_commit makes it path (fsync, rename, fsync of the
 * directory), durable_abort removes it.  Commit and abort end df either way;
 * 0 or -1 with errno.
 */
struct durable_file {
    int fd;
    const char *path; /* not copied */
    struct buf tmp;
};
int durable_begin(struct durable_file *df, const char *path);
int durable_commit(struct durable_file *df);
void durable_abort(struct durable_file *df);
/*
 * The temporary file durable_replace(path) of process pid writes: appended
 * to out.  A process killed while writing leaves it behind for its parent
 * to remove.
 */
void durable_tmp_path(struct buf *out, const char *path, long pid);
/* The directory path is in, malloc'ed: "/var/lib" for "/var/lib/x", "/" for "/x", "." for "x". */
char *durable_dir_of(const char *path);
/* Flushes the directory path is in: a rename or a creation there is durable only after it. */
void durable_sync_dir(const char *path);

/*
 * The system calls that write durable files, each a point where a test can
 * make the disk fail (see durable_fault_set).  Callers writing such files
 * use these rather than the calls themselves, so that every path that
 * handles a full or failing disk runs in ordinary unit tests, without root
 * or a small file system.
 */
/* open(2) for writing (O_CLOEXEC added). */
int durable_open(const char *path, int flags, mode_t mode);
/* One write(2): may be short. */
ssize_t durable_write(int fd, const void *data, size_t len);
/* fsync(2), or fdatasync(2) with data_only. */
int durable_sync(int fd, int data_only);
/* rename(2). */
int durable_rename(const char *from, const char *to);

/*
 * Test hook, after SQLite's test_malloc: the nth call (1 the next one) of
 * op from now fails with err; with DURABLE_FAULT_PERSIST every one after it
 * as well (a disk that stays full); with DURABLE_FAULT_SHORT (writes only)
 * the nth write writes half of what it is given, rounded up, and the next
 * fails with err (a disk that fills up in the middle of a record).  One
 * fault per op; nth 0 disarms it.  Not for use by the daemon; not
 * thread-safe (tests arm it before the writer runs).
 */
enum durable_op {
    DURABLE_OP_OPEN,
    DURABLE_OP_WRITE,
    DURABLE_OP_SYNC,
    DURABLE_OP_RENAME,
    DURABLE_OP_N
};
enum durable_fault_kind { DURABLE_FAULT_ONCE, DURABLE_FAULT_PERSIST, DURABLE_FAULT_SHORT };
void durable_fault_set(enum durable_op op, unsigned nth, enum durable_fault_kind kind, int err);
/* Disarms every fault and zeroes the counts. */
void durable_fault_clear(void);
/* Calls of op made while a fault was armed, and how many of them the hook failed. */
unsigned long durable_fault_calls(enum durable_op op);
unsigned long durable_fault_failed(enum durable_op op);

#endif
