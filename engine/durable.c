/* durable: crash-safe file writing, reading back whole, the fault hook (see durable.h). */
#include "engine/durable.h"
#include "engine/buf.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
durable_open_regular(const char *path, size_t max)
{
    struct stat st;
    int fd, err;

    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fstat(fd, &st) < 0) goto fail;
    if (!S_ISREG(st.st_mode)) {
        /* a FIFO blocks, /dev/zero never ends: only a regular file has a known end */
        errno = DURABLE_ENOTREG;
        goto fail;
    }
    if ((uintmax_t)st.st_size > max) {
        errno = EFBIG;
        goto fail;
    }
    if (fcntl(fd, F_SETFL, 0) < 0) goto fail; /* reads block again, as on any file */
    return fd;
fail:
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

char *
durable_read_file(const char *path, size_t max, size_t *len)
{
    struct buf b = BUF_INIT;
    struct stat st;
    char chunk[65536];
    ssize_t n;
    int fd, err;

    fd = durable_open_regular(path, max);
    if (fd < 0) return NULL;
    if (fstat(fd, &st) < 0) goto fail;
    buf_reserve(&b, (size_t)st.st_size + 1);
    for (;;) {
        n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) goto fail;
        if (n == 0) break;
        if (b.len + (size_t)n > max) {
            /* grown since the fstat */
            errno = EFBIG;
            goto fail;
        }
        buf_append(&b, chunk, (size_t)n);
    }
    close(fd);
    *len = b.len;
    buf_reserve(&b, 1);
    b.p[b.len] = '\0';
    return b.p;
fail:
    err = errno;
    close(fd);
    buf_free(&b);
    errno = err;
    return NULL;
}

const char *
durable_strerror(int err)
{
    return err == DURABLE_ENOTREG ? "not a regular file" : strerror(err);
}

/*
 * Slicing-by-8: eight bytes a step through eight tables, several times the
 * speed of a byte at a time; it is on the path of every state save and load
 * (hundreds of MB with a million open contexts).
 */
static uint32_t crc_table[8][256];

static void
crc_init(void)
{
    uint32_t k, v;
    int j;

    for (k = 0; k < 256; k++) {
        v = k;
        for (j = 0; j < 8; j++) v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
        crc_table[0][k] = v;
    }
    for (k = 0; k < 256; k++)
        for (j = 1; j < 8; j++)
            crc_table[j][k] = (crc_table[j - 1][k] >> 8) ^ crc_table[0][crc_table[j - 1][k] & 0xff];
}

static uint32_t
load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t
durable_crc32(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t a, b;

    if (!crc_table[0][1]) crc_init();
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        a = load_le32(p) ^ crc;
        b = load_le32(p + 4);
        crc = crc_table[7][a & 0xff] ^ crc_table[6][(a >> 8) & 0xff] ^
              crc_table[5][(a >> 16) & 0xff] ^ crc_table[4][a >> 24] ^ crc_table[3][b & 0xff] ^
              crc_table[2][(b >> 8) & 0xff] ^ crc_table[1][(b >> 16) & 0xff] ^
              crc_table[0][b >> 24];
    }
    for (; len; p++, len--) crc = crc_table[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/*
 * The fault hook: per operation, the calls counted and the fault armed.
 * A plain flag is tested first, so that the daemon, where nothing is ever
 * armed, pays one load per call and shares no counter between threads;
 * calls are counted while something is armed.
 */
struct fault {
    unsigned long calls, failed;
    unsigned long at; /* the call that fails; 0: none armed */
    enum durable_fault_kind kind;
    int err;
};
static struct fault faults[DURABLE_OP_N];
static int faults_armed;

void
durable_fault_set(enum durable_op op, unsigned nth, enum durable_fault_kind kind, int err)
{
    struct fault *f = &faults[op];
    int i;

    f->at = nth ? f->calls + nth : 0;
    f->kind = kind;
    f->err = err;
    faults_armed = 0;
    for (i = 0; i < DURABLE_OP_N; i++)
        if (faults[i].at) faults_armed = 1;
}

void
durable_fault_clear(void)
{
    memset(faults, 0, sizeof(faults));
    faults_armed = 0;
}

unsigned long
durable_fault_calls(enum durable_op op)
{
    return faults[op].calls;
}

unsigned long
durable_fault_failed(enum durable_op op)
{
    return faults[op].failed;
}

/*
 * Counts a call of op: 0 to go ahead, -1 with errno set to fail it, 1 for a
 * short write.
 */
static int
fault_check(enum durable_op op)
{
    struct fault *f = &faults[op];

    f->calls++;
    if (!f->at || f->calls < f->at) return 0;
    if (f->kind == DURABLE_FAULT_SHORT && f->calls == f->at) return 1;
    if (f->kind == DURABLE_FAULT_ONCE && f->calls > f->at) return 0;
    if (f->kind == DURABLE_FAULT_SHORT && f->calls > f->at + 1) return 0;
    f->failed++;
    errno = f->err;
    return -1;
}

int
durable_open(const char *path, int flags, mode_t mode)
{
    if (faults_armed && fault_check(DURABLE_OP_OPEN) < 0) return -1;
    return open(path, flags | O_CLOEXEC, mode);
}

ssize_t
durable_write(int fd, const void *data, size_t len)
{
    int f = 0;

    if (faults_armed) {
        f = fault_check(DURABLE_OP_WRITE);
        if (f < 0) return -1;
    }
    if (f == 1 && len > 1) len = (len + 1) / 2;
    return write(fd, data, len);
}

int
durable_sync(int fd, int data_only)
{
    if (faults_armed && fault_check(DURABLE_OP_SYNC) < 0) return -1;
    return data_only ? fdatasync(fd) : fsync(fd);
}

int
durable_rename(const char *from, const char *to)
{
    if (faults_armed && fault_check(DURABLE_OP_RENAME) < 0) return -1;
    return rename(from, to);
}

int
durable_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len) {
        ssize_t w = durable_write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int
durable_writev_all(int fd, struct iovec *iov, size_t n)
{
    while (n) {
        /* with faults armed, a piece at a time through durable_write(), which they cut short */
        ssize_t w = faults_armed ? durable_write(fd, iov->iov_base, iov->iov_len)
                                 : writev(fd, iov, n > IOV_MAX ? IOV_MAX : (int)n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        /* a pipe may take part of it */
        for (; n && (size_t)w >= iov->iov_len; iov++, n--) w -= (ssize_t)iov->iov_len;
        if (n) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

void
durable_tmp_path(struct buf *out, const char *path, long pid)
{
    buf_printf(out, "%s.tmp.%ld", path, pid);
}

int
durable_begin(struct durable_file *df, const char *path)
{
    int saved;

    df->path = path;
    buf_init(&df->tmp);
    durable_tmp_path(&df->tmp, path, (long)getpid());
    df->fd = durable_open(buf_str(&df->tmp), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (df->fd < 0) {
        saved = errno;
        buf_free(&df->tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

void
durable_abort(struct durable_file *df)
{
    int saved = errno;

    close(df->fd);
    unlink(buf_str(&df->tmp));
    buf_free(&df->tmp);
    errno = saved;
}

char *
durable_dir_of(const char *path)
{
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');

    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    return dir;
}

void
durable_sync_dir(const char *path)
{
    char *dir = durable_dir_of(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

int
durable_commit(struct durable_file *df)
{
    if (durable_sync(df->fd, 0) < 0) {
        durable_abort(df);
        return -1;
    }
    if (close(df->fd) < 0 || durable_rename(buf_str(&df->tmp), df->path) < 0) {
        df->fd = -1;
        durable_abort(df);
        return -1;
    }
    durable_sync_dir(df->path); /* the rename itself is only durable once the directory is */
    buf_free(&df->tmp);
    return 0;
}

int
durable_replace(const char *path, const void *data, size_t len)
{
    struct durable_file df;

    if (durable_begin(&df, path) < 0) return -1;
    if (durable_write_all(df.fd, data, len) < 0) {
        durable_abort(&df);
        return -1;
    }
    return durable_commit(&df);
}
