/*
 * utf8: UTF-8 characters, strictly and as GLib steps over them; see utf8.h.
 */
#include "engine/utf8.h"

/* Length of the valid UTF-8 character at p (no overlong, surrogate, > U+10FFFF); 0 if invalid. */
size_t
utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
    uint32_t c;
    size_t len, i;

    if (!n) return 0;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
        c = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        c = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        c = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* How far GLib's g_utf8_next_char() steps from a lead byte (it trusts the lead byte). */
size_t
utf8_skip(unsigned char c)
{
    if (c < 0xc0) return 1;
    if (c < 0xe0) return 2;
    if (c < 0xf0) return 3;
    if (c < 0xf8) return 4;
    if (c < 0xfc) return 5;
    if (c < 0xfe) return 6;
    return 1;
}

void
utf8_put(struct buf *out, uint32_t c)
{
    char s[4];

    if (c < 0x80) {
        buf_putc(out, (char)c);
    } else if (c < 0x800) {
        s[0] = (char)(0xc0 | (c >> 6));
        s[1] = (char)(0x80 | (c & 0x3f));
        buf_append(out, s, 2);
    } else if (c < 0x10000) {
        s[0] = (char)(0xe0 | (c >> 12));
        s[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        s[2] = (char)(0x80 | (c & 0x3f));
        buf_append(out, s, 3);
    } else {
        s[0] = (char)(0xf0 | (c >> 18));
        s[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        s[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        s[3] = (char)(0x80 | (c & 0x3f));
        buf_append(out, s, 4);
    }
}

void
utf8_scrub(struct buf *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, n;
    uint32_t cp;

    while (i < len) {
        n = utf8_char(p + i, len - i, &cp);
        if (n && cp) {
            buf_append(out, s + i, n);
            i += n;
        } else {
            utf8_put(out, 0xFFFD);
            i++;
        }
    }
}
