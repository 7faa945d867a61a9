/*
 * base64: see base64.h.  The output is reserved once and written in place:
 * $(base64-encode) runs on the per-message path.
 */
#include "engine/base64.h"

#include <stdint.h>

void
base64_encode(struct buf *out, const void *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = p;
    char *o;
    size_t i;

    if (n == 0) return;
    buf_reserve(out, (n + 2) / 3 * 4);
    o = out->p + out->len;
    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    out->len = (size_t)(o - out->p);
    out->p[out->len] = '\0';
}
