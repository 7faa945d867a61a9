/*
 * framer: RFC 6587 octet counting and newline framing, and the "auto"
 * detection between them, as a byte-at-a-time-safe state machine (see
 * framer.h).  Whole messages found in the fed buffer are delivered from it
 * without copying; only a message split across reads is copied, into a
 * buffer bounded by max-message-size.
 */
#include "agent/net/framer.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* What the stream uses (f->mode). */
enum { FR_DETECT, FR_OCTET, FR_PROBE, FR_NEWLINE };

/*
 * Where in a frame we are (f->state).  FR_PROBE is octet counting not yet
 * confirmed: auto framing saw a leading digit and waits for the space and
 * the '<' of the message's priority; the digits and the space are kept in
 * acc so that they can become the start of a line.
 */
enum {
    ST_LEN,     /* octet counting: reading the length */
    ST_PRI,     /* probe: after "LEN ", the '<' that confirms octet counting */
    ST_BODY,    /* octet counting: reading the message */
    ST_SKIP,    /* octet counting: skipping the rest of an over-long frame */
    ST_LINE,    /* newline: reading a line */
    ST_DISCARD, /* newline: skipping the rest of an over-long line */
};

/* Nine digits: a frame of up to 999,999,999 bytes (larger ones are skipped anyway). */
#define MAX_DIGITS 9

void
framer_init(struct framer *f, enum conf_framing framing, size_t max, framer_cb cb, void *arg)
{
    memset(f, 0, sizeof(*f));
    f->framing = framing;
    f->max = max;
    f->cb = cb;
    f->arg = arg;
    framer_reset(f);
}

void
framer_free(struct framer *f)
{
    free(f->acc);
    f->acc = NULL;
    f->len = f->cap = 0;
}

void
framer_reset(struct framer *f)
{
    f->len = 0;
    f->want = f->count = 0;
    f->ndigits = 0;
    switch (f->framing) {
    case CONF_FRAMING_OCTET_COUNTING:
        f->mode = FR_OCTET;
        f->state = ST_LEN;
        break;
    case CONF_FRAMING_NEWLINE:
        f->mode = FR_NEWLINE;
        f->state = ST_LINE;
        break;
    case CONF_FRAMING_AUTO:
    default:
        f->mode = FR_DETECT;
        f->state = ST_LEN;
        break;
    }
}

/* Appends to the partial message; callers never exceed max + 1 bytes in total. */
static void
acc_append(struct framer *f, const char *p, size_t n)
{
    if (f->len + n > f->cap) {
        /* grow geometrically, but never past the bound: a long line costs max, not more */
        size_t cap = f->cap ? f->cap * 2 : 256;
        if (cap > f->max + 1) cap = f->max + 1;
        if (cap < f->len + n) cap = f->len + n;
        f->acc = xrealloc(f->acc, cap);
        f->cap = cap;
    }
    memcpy(f->acc + f->len, p, n);
    f->len += n;
}

/* A complete line (without its LF): drops a CR, cuts it at max, skips it if empty. */
static void
line_done(struct framer *f, const char *p, size_t n)
{
    if (n && p[n - 1] == '\r') n--;
    if (n > f->max)
        f->cb(f->arg, p, f->max, true);
    else if (n)
        f->cb(f->arg, p, n, false);
}

/* A complete octet-counted message: a trailing LF (CRLF) some senders add is not part of it. */
static void
frame_done(struct framer *f, const char *p, size_t n, bool truncated)
{
    if (!truncated) {
        if (n && p[n - 1] == '\n') n--;
        if (n && p[n - 1] == '\r') n--;
    }
    if (n) f->cb(f->arg, p, n, truncated);
}

/* Newline framing over p[0..n), all of which it consumes. */
static void
feed_newline(struct framer *f, const char *p, size_t n)
{
    const char *end = p + n, *nl;
    size_t piece;

    while (p < end) {
        if (f->state == ST_DISCARD) {
            nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) return;
            p = nl + 1;
            f->state = ST_LINE;
            continue;
        }
        nl = memchr(p, '\n', (size_t)(end - p));
        piece = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (nl && f->len == 0) {
            line_done(f, p, piece); /* the common case: a whole line, no copy */
        } else if (f->len + piece <= f->max + 1) {
            /* max + 1: the last byte may be a CR that line_done drops */
            acc_append(f, p, piece);
            if (nl) {
                line_done(f, f->acc, f->len);
                f->len = 0;
            }
        } else {
            /* longer than the limit even without a CR: deliver its start, skip the rest */
            if (f->len < f->max) acc_append(f, p, f->max - f->len);
            f->cb(f->arg, f->acc, f->max, true);
            f->len = 0;
            if (!nl) f->state = ST_DISCARD;
        }
        if (!nl) break;
        p = nl + 1;
    }
}

/*
 * Octet counting from p[0..n).  Returns the bytes consumed, which is less
 * than n only when a probe fails and the rest is newline-framed; -1 on a
 * malformed count.
 */
static long
feed_octet(struct framer *f, const char *p, size_t n)
{
    size_t i = 0, take, room;

    while (i < n) {
        switch (f->state) {
        case ST_LEN: {
            unsigned char c = (unsigned char)p[i];
            if (c >= '0' && c <= '9') {
                if (f->ndigits == MAX_DIGITS) goto bad;
                f->count = f->count * 10 + (size_t)(c - '0');
                f->ndigits++;
                if (f->mode == FR_PROBE) acc_append(f, p + i, 1);
                i++;
            } else if (c == ' ' && f->ndigits > 0 && f->count > 0 && f->mode == FR_PROBE) {
                /*
                 * "30 connections dropped" is a line: RFC 6587 frames carry
                 * syslog messages, which begin with "<PRI>"
                 */
                acc_append(f, p + i, 1);
                i++;
                f->state = ST_PRI;
            } else if (c == ' ' && f->ndigits > 0 && f->count > 0) {
                i++;
                f->mode = FR_OCTET;
                f->len = 0;
                f->want = f->count;
                f->state = ST_BODY;
            } else if (f->ndigits == 0 && (c == '\n' || c == '\r')) {
                /* some senders end every frame with a newline as well: tolerated */
                i++;
            } else {
                goto bad;
            }
            break;
        }
        case ST_PRI:
            if (p[i] != '<') goto bad;
            f->mode = FR_OCTET; /* a probe is confirmed by its first frame; '<' is its first byte */
            f->len = 0;
            f->want = f->count;
            f->state = ST_BODY;
            break;
        case ST_BODY:
            take = n - i < f->want ? n - i : f->want;
            if (f->len == 0 && take == f->count && f->count <= f->max) {
                /* the whole frame is in this buffer: deliver it in place */
                f->want = 0;
                frame_done(f, p + i, take, false);
            } else {
                room = f->max - f->len;
                acc_append(f, p + i, take < room ? take : room);
                f->want -= take;
                if (f->count > f->max && f->len == f->max) {
                    /* deliver the cut message now; the rest is skipped, not stored */
                    f->cb(f->arg, f->acc, f->len, true);
                    f->len = 0;
                    f->state = f->want ? ST_SKIP : ST_LEN;
                } else if (f->want == 0) {
                    frame_done(f, f->acc, f->len, false);
                    f->len = 0;
                }
            }
            i += take;
            if (f->want == 0 && f->state == ST_BODY) {
                f->state = ST_LEN;
            }
            if (f->state == ST_LEN) f->count = f->ndigits = 0;
            break;
        case ST_SKIP:
            take = n - i < f->want ? n - i : f->want;
            f->want -= take;
            i += take;
            if (f->want == 0) {
                f->state = ST_LEN;
                f->count = f->ndigits = 0;
            }
            break;
        default: return -1;
        }
    }
    return (long)i;

bad:
    if (f->mode == FR_PROBE) {
        /* not octet counting after all: the digits begin a line (acc holds them) */
        f->mode = FR_NEWLINE;
        f->state = ST_LINE;
        f->count = f->ndigits = 0;
        return (long)i;
    }
    return -1;
}

int
framer_feed(struct framer *f, const char *data, size_t len)
{
    long used;

    while (len > 0) {
        if (f->mode == FR_DETECT) {
            unsigned char c = (unsigned char)data[0];
            if (c >= '0' && c <= '9') {
                f->mode = FR_PROBE;
                f->state = ST_LEN;
            } else {
                f->mode = FR_NEWLINE;
                f->state = ST_LINE;
            }
        }
        if (f->mode == FR_NEWLINE) {
            feed_newline(f, data, len);
            return 0;
        }
        used = feed_octet(f, data, len);
        if (used < 0) {
            framer_reset(f);
            return -1;
        }
        data += used;
        len -= (size_t)used;
    }
    return 0;
}

int
framer_eof(struct framer *f)
{
    int rc = 0;

    switch (f->mode) {
    case FR_NEWLINE:
    case FR_PROBE: /* digits and no space: a line of digits */
        if (f->state == ST_LINE || f->mode == FR_PROBE) {
            if (f->len) line_done(f, f->acc, f->len);
        }
        break;
    case FR_OCTET:
        if (f->state == ST_BODY) {
            /* the sender went away mid-frame: keep what came, but it is an error */
            if (f->len) f->cb(f->arg, f->acc, f->len, false);
            rc = -1;
        } else if (f->state == ST_LEN && f->ndigits) {
            rc = -1;
        }
        break;
    default: break;
    }
    framer_reset(f);
    return rc;
}

size_t
framer_pending(const struct framer *f)
{
    switch (f->mode) {
    case FR_NEWLINE: return f->state == ST_LINE ? f->len : 0;
    case FR_PROBE: return f->len;
    case FR_OCTET:
        if (f->state == ST_BODY) return f->ndigits + 1 + (f->count - f->want);
        if (f->state == ST_LEN) return f->ndigits;
        return 0;
    default: return 0;
    }
}
