/* buf: growable byte strings used for template output, JSON and I/O. */
#include "engine/buf.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
buf_init(struct buf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
}

void
buf_free(struct buf *b)
{
    free(b->p);
    buf_init(b);
}

void
buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

void
buf_reserve(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    size_t cap = b->cap;

    if (need <= cap) return;
    if (cap < 64) cap = 64;
    while (cap < need) cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
    b->p[b->len] = '\0'; /* the contents stay a C string even before anything is appended */
}

void
buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    int n;

    va_copy(copy, ap);
    buf_reserve(b, 64);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, copy);
    va_end(copy);
    if (n < 0) return;
    if ((size_t)n >= b->cap - b->len) {
        buf_reserve(b, (size_t)n);
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    }
    b->len += (size_t)n;
}

void
buf_put_uint(struct buf *b, unsigned long long v)
{
    char tmp[20]; /* 2^64 has 20 digits */
    size_t n = 0;

    do {
        tmp[sizeof(tmp) - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    buf_append(b, tmp + sizeof(tmp) - n, n);
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void
buf_truncate(struct buf *b, size_t len)
{
    if (len >= b->len) return;
    b->len = len;
    b->p[len] = '\0';
}

const char *
buf_str(const struct buf *b)
{
    return b->p ? b->p : "";
}
