/*
 * durable: files that must survive a crash (the state file, executor spools
 * and dead letters): a whole write or none, a checksum to tell a torn
 * record, and a replace that is atomic on disk.  Also reading such files,
 * and rule files, back whole.
 */
#ifndef CORRAL_DURABLE_H
#define CORRAL_DURABLE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
