/* durable: crash-safe file writing, and reading files back whole (see durable.h). */
#include "engine/durable.h"
#include "engine/buf.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *
durable_read_file(const char *path, size_t max, size_t *len)
{
    struct buf b = BUF_INIT;
    struct stat st;
    char chunk[65536];
    ssize_t n;
    int fd, err;

    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
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

uint32_t
durable_crc32(uint32_t crc, const void *data, size_t len)
{
    static uint32_t table[256];
    const unsigned char *p = data;
    size_t i;

    if (!table[1]) {
        uint32_t k;
        int j;
        for (k = 0; k < 256; k++) {
            uint32_t v = k;
            for (j = 0; j < 8; j++) v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
            table[k] = v;
        }
    }
    crc = ~crc;
    for (i = 0; i < len; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

int
durable_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len) {
        ssize_t w = write(fd, p, len);
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
durable_replace(const char *path, const void *data, size_t len)
{
    struct buf tmp = BUF_INIT;
    char *dir, *slash;
    int fd, saved;

    buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    fd = open(buf_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) goto fail;
    if (durable_write_all(fd, data, len) < 0 || fsync(fd) < 0) {
        saved = errno;
        close(fd);
        unlink(buf_str(&tmp));
        errno = saved;
        goto fail;
    }
    if (close(fd) < 0 || rename(buf_str(&tmp), path) < 0) {
        saved = errno;
        unlink(buf_str(&tmp));
        errno = saved;
        goto fail;
    }
    /* the rename itself is only durable once the directory is */
    dir = xstrdup(path);
    slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
    buf_free(&tmp);
    return 0;
fail:
    saved = errno;
    buf_free(&tmp);
    errno = saved;
    return -1;
}
