/* json: JSON rendering of messages; see json.h for the format. */
#include "engine/json.h"
#include "engine/macros.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at s, or 0 if the bytes there are not one. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len, i;
    unsigned int cp;

    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n) return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF */
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void
json_string(struct buf *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run;

    buf_putc(out, '"');
    while (i < len) {
        /* copy plain runs in one go */
        run = i;
        while (run < len && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            buf_append(out, s + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            buf_putc(out, '\\');
            buf_putc(out, (char)c);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': buf_puts(out, "\\n"); break;
            case '\r': buf_puts(out, "\\r"); break;
            case '\t': buf_puts(out, "\\t"); break;
            default: buf_printf(out, "\\u%04x", c); break;
            }
            i++;
        } else {
            size_t n = utf8_len(s + i, len - i);
            if (n) {
                buf_append(out, s + i, n);
                i += n;
            } else {
                buf_puts(out, "\\ufffd");
                i++;
            }
        }
    }
    buf_putc(out, '"');
}

static void
member(struct buf *out, int *first, const char *name, size_t nlen, const char *val, size_t vlen)
{
    if (!*first) buf_putc(out, ',');
    *first = 0;
    json_string(out, name, nlen);
    buf_putc(out, ':');
    json_string(out, val, vlen);
}

void
json_format_msg(const struct msg *m, struct buf *out)
{
    size_t i, n = msg_nvalues(m);
    int first = 1;
    struct buf tmp = BUF_INIT;

    buf_putc(out, '{');
    if (msg_flags(m) & (MSG_F_SYSLOG | MSG_F_GENERATED)) {
        struct buf fac = BUF_INIT;
        const char *sev = macro_severity_name(msg_pri(m) & 7);
        macro_format_facility(msg_pri(m), &fac);
        macro_format_iso(msg_stamp(m), msg_stamp(m)->usec ? 6 : 0, &tmp);
        member(out, &first, "ISODATE", 7, tmp.p, tmp.len);
        member(out, &first, "FACILITY", 8, fac.p, fac.len);
        buf_free(&fac);
        member(out, &first, "PRIORITY", 8, sev, strlen(sev));
    }
    for (i = 0; i < n; i++) {
        const char *val, *name;
        size_t vlen, nlen;
        nv_handle h = msg_value_at(m, i, &val, &vlen);
        name = nv_name(h, &nlen);
        member(out, &first, name, nlen, val, vlen);
    }
    if (!first) buf_putc(out, ',');
    json_string(out, "TAGS", 4);
    buf_putc(out, ':');
    buf_reset(&tmp);
    for (i = 0; i < msg_ntags(m); i++) {
        size_t len;
        const char *t = tag_name(msg_tag_at(m, i), &len);
        if (i) buf_putc(&tmp, ',');
        buf_append(&tmp, t, len);
    }
    json_string(out, buf_str(&tmp), tmp.len);
    buf_putc(out, '}');
    buf_free(&tmp);
}
