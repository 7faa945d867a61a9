/* evidence: the log lines an alert carries; see evidence.h. */
#include "engine/evidence.h"
#include "engine/macros.h"
#include "engine/units.h"
#include "engine/utf8.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_MARK "..."

void
evidence_names_init(struct evidence_names *n)
{
    n->value = nv_intern_str(EVIDENCE_NAME);
    n->lines = nv_intern_str(EVIDENCE_LINES_NAME);
    n->bytes = nv_intern_str(EVIDENCE_BYTES_NAME);
    n->alert = tag_intern("corral.alert", strlen("corral.alert"));
}

bool
evidence_synth_wants(const struct evidence_names *n, const struct pdb_synth *s)
{
    size_t i;

    for (i = 0; i < s->ntags; i++)
        if (s->tags[i] == n->alert) return true;
    for (i = 0; i < s->nvalues; i++)
        if (s->values[i].name == n->lines || s->values[i].name == n->bytes) return true;
    return false;
}

bool
evidence_parse_limit(const char *v, size_t len, bool bytes, size_t *out)
{
    char tmp[32];
    char *end;
    unsigned long long n;

    if (!len || len >= sizeof(tmp)) return false;
    memcpy(tmp, v, len);
    tmp[len] = '\0';
    if (bytes) {
        *out = units_size(tmp);
        return *out >= EVIDENCE_BYTES_MIN && *out <= EVIDENCE_BYTES_MAX;
    }
    if (tmp[0] < '0' || tmp[0] > '9') return false;
    n = strtoull(tmp, &end, 10);
    if (*end || n > EVIDENCE_LINES_MAX) return false;
    *out = (size_t)n;
    return true;
}

/* A limit the generated message sets; false when unset or not valid. */
static bool
read_limit(const struct msg *m, nv_handle h, bool bytes, size_t *out)
{
    size_t len;
    const char *v = msg_get(m, h, &len);

    return v && evidence_parse_limit(v, len, bytes, out);
}

bool
evidence_limits(const struct evidence_names *n, const struct msg *gen, size_t def_lines,
                size_t def_bytes, size_t *lines, size_t *bytes)
{
    bool own_lines = read_limit(gen, n->lines, false, lines);
    bool own_bytes = read_limit(gen, n->bytes, true, bytes);

    if (!own_lines && !own_bytes && !msg_tag_has(gen, n->alert)) return false;
    if (!own_lines) *lines = def_lines;
    if (!own_bytes) *bytes = def_bytes;
    return *lines > 0 && *bytes > 0;
}

/* Appends s as valid UTF-8 on one line: controls (CR and LF included) become spaces. */
static void
put_clean(struct buf *out, const char *s, size_t len)
{
    size_t i, start = out->len;

    utf8_scrub(out, s, len);
    for (i = start; i < out->len; i++)
        if ((unsigned char)out->p[i] < 0x20 || out->p[i] == 0x7f) out->p[i] = ' ';
}

void
evidence_line(const struct msg *m, struct buf *out)
{
    const struct msg_time *t = msg_stamp(m);
    const char *v;
    size_t len;

    macro_format_iso(t, t->usec ? 6 : 0, out);
    if ((v = msg_get(m, NV_HOST, &len)) && len) {
        buf_putc(out, ' ');
        put_clean(out, v, len);
    }
    if ((v = msg_get(m, NV_PROGRAM, &len)) && len) {
        buf_putc(out, ' ');
        put_clean(out, v, len);
        if ((v = msg_get(m, NV_PID, &len)) && len) {
            buf_putc(out, '[');
            put_clean(out, v, len);
            buf_putc(out, ']');
        }
        buf_putc(out, ':');
    }
    if ((v = msg_get(m, NV_MESSAGE, &len))) {
        buf_putc(out, ' ');
        put_clean(out, v, len);
    }
}

static size_t
marker(size_t skipped, char *out, size_t size)
{
    int n = snprintf(out, size, "... %zu more line%s ...", skipped, skipped == 1 ? "" : "s");
    return n > 0 ? (size_t)n : 0;
}

/* The longest prefix of s[0..len) of at most max bytes that ends at a character boundary. */
static size_t
char_cut(const char *s, size_t len, size_t max)
{
    if (len <= max) return len;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80) max--;
    return max;
}

/* The bytes line i of the candidates takes when shown: what is kept of it, and the cut mark. */
static size_t
shown(const size_t *full, const size_t *keep, size_t i)
{
    return keep[i] + (keep[i] < full[i] ? sizeof(CUT_MARK) - 1 : 0);
}

/* Cuts line i of the candidates to at most room bytes, the cut mark included. */
static void
cut_to(const struct buf *text, const size_t *off, const size_t *full, size_t *keep, size_t i,
       size_t room)
{
    if (shown(full, keep, i) <= room) return;
    keep[i] = char_cut(text->p + off[i], keep[i], room - (sizeof(CUT_MARK) - 1));
}

static void
put_line(struct buf *out, bool *first, const char *s, size_t len, bool cut)
{
    if (!*first) buf_putc(out, '\n');
    *first = false;
    buf_append(out, s, len);
    if (cut) buf_puts(out, CUT_MARK);
}

void
evidence_render(struct msg *const *msgs, size_t n, size_t max_lines, size_t max_bytes,
                struct buf *out)
{
    struct buf text = BUF_INIT;
    size_t *off, *full, *keep, head, tail, h, t, i, m, total, skipped, marklen;
    char mark[64];
    bool first = true;

    if (!n) return;
    if (max_lines < 1) max_lines = 1;
    if (max_lines > EVIDENCE_LINES_MAX) max_lines = EVIDENCE_LINES_MAX;
    if (max_bytes < EVIDENCE_BYTES_MIN) max_bytes = EVIDENCE_BYTES_MIN;
    if (max_bytes > EVIDENCE_BYTES_MAX) max_bytes = EVIDENCE_BYTES_MAX;
    /* the candidates: the first (m+1)/2 and the last m/2 messages, each rendered once */
    m = n < max_lines ? n : max_lines;
    head = (m + 1) / 2;
    tail = m / 2;
    off = xcalloc(m, sizeof(*off));
    full = xcalloc(m, sizeof(*full));
    keep = xcalloc(m, sizeof(*keep));
    for (i = 0; i < m; i++) {
        off[i] = text.len;
        evidence_line(msgs[i < head ? i : n - m + i], &text);
        full[i] = text.len - off[i];
        /* no line is ever shown longer than the whole evidence may be */
        keep[i] = full[i] <= max_bytes
                      ? full[i]
                      : char_cut(text.p + off[i], full[i], max_bytes - (sizeof(CUT_MARK) - 1));
        buf_truncate(&text, off[i] + keep[i]);
    }

    /* while too long, lines go from the middle (next to the marker); the first and last stay */
    h = head;
    t = tail;
    for (;;) {
        skipped = n - h - t;
        marklen = skipped ? marker(skipped, mark, sizeof(mark)) : 0;
        /* the line ends between lines and the marker line */
        total = h + t + (skipped ? 1 : 0) - 1 + marklen;
        for (i = 0; i < h; i++) total += shown(full, keep, i);
        for (i = m - t; i < m; i++) total += shown(full, keep, i);
        if (total <= max_bytes || h + t <= 2) break;
        if (h > t)
            h--;
        else
            t--;
    }

    /* still too long, with one or two lines left: they share what the marker leaves */
    if (total > max_bytes) {
        size_t a = 0, b = m - 1, la = shown(full, keep, a), lb = t ? shown(full, keep, b) : 0;
        size_t avail = max_bytes - (total - la - lb);
        if (!t) {
            cut_to(&text, off, full, keep, a, avail);
        } else if (la <= avail / 2) {
            cut_to(&text, off, full, keep, b, avail - la);
        } else if (lb <= avail / 2) {
            cut_to(&text, off, full, keep, a, avail - lb);
        } else {
            cut_to(&text, off, full, keep, a, avail / 2);
            cut_to(&text, off, full, keep, b, avail - avail / 2);
        }
    }

    for (i = 0; i < h; i++) put_line(out, &first, text.p + off[i], keep[i], keep[i] < full[i]);
    if (skipped) put_line(out, &first, mark, marklen, false);
    for (i = m - t; i < m; i++) put_line(out, &first, text.p + off[i], keep[i], keep[i] < full[i]);
    free(off);
    free(full);
    free(keep);
    buf_free(&text);
}
