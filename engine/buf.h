/*
 * buf: a growable byte string.  Always NUL-terminated after its last byte
 * (the terminator is not counted in len), so its contents can be handed to
 * C string functions when they hold no NUL of their own.
 */
#ifndef CORRAL_BUF_H
#define CORRAL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct buf {
    char *p;
    size_t len;
    size_t cap;
};

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void buf_init(struct buf *b);
void buf_free(struct buf *b);
/* Empties the buffer but keeps its memory for reuse. */
void buf_reset(struct buf *b);
/* Makes room for `extra` more bytes (plus the terminator) without changing len. */
void buf_reserve(struct buf *b, size_t extra);
void buf_puts(struct buf *b, const char *s);
/* Appends v in decimal: what "%llu" gives, without printf's cost on a per-message path. */
void buf_put_uint(struct buf *b, unsigned long long v);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Shortens the buffer to `len` bytes (len must not exceed the current length). */
void buf_truncate(struct buf *b, size_t len);
/* Returns the contents as a C string ("" for an empty, never-allocated buffer). */
const char *buf_str(const struct buf *b);

/*
 * Inline: the per-message paths (JSON and list quoting, templates) append a
 * byte or a short run at a time, and a call cost more than the copy.
 */
static inline void
buf_append(struct buf *b, const void *data, size_t len)
{
    if (b->len + len + 1 > b->cap) buf_reserve(b, len);
    if (len) memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}

static inline void
buf_putc(struct buf *b, char c)
{
    if (b->len + 2 > b->cap) buf_reserve(b, 1);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

#endif
