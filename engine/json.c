/* json: JSON rendering of messages; see json.h for the format. */
#include "engine/json.h"
#include "engine/macros.h"
#include "engine/utf8.h"

#include <string.h>

/* The bytes json_quote() copies as they are: printable ASCII but the quote (0x22) and the
 * backslash (0x5c). */
/* clang-format off */
static const unsigned char json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x70 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x80 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x90 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xa0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xb0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xc0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xd0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xe0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xf0 */
};
/* clang-format on */

void
json_quote(struct buf *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run;

    buf_putc(out, '"');
    while (i < len) {
        /* copy plain runs in one go (every value of every message a JSON output writes) */
        run = i;
        while (run < len && json_plain[s[run]]) run++;
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
            uint32_t cp;
            size_t n = utf8_char(s + i, len - i, &cp);
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
    json_quote(out, name, nlen);
    buf_putc(out, ':');
    json_quote(out, val, vlen);
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
    json_quote(out, "TAGS", 4);
    buf_putc(out, ':');
    buf_reset(&tmp);
    for (i = 0; i < msg_ntags(m); i++) {
        size_t len;
        const char *t = tag_name(msg_tag_at(m, i), &len);
        if (i) buf_putc(&tmp, ',');
        buf_append(&tmp, t, len);
    }
    json_quote(out, buf_str(&tmp), tmp.len);
    buf_putc(out, '}');
    buf_free(&tmp);
}
