/*
 * libFuzzer harness for the stream framer (agent/net/framer.c).  The first three
 * bytes choose the framing, the limit (1..64) and a chunk size; the rest is
 * the stream.  It is fed twice, whole and in chunks, and both runs must give
 * the same messages and the same error: a socket may split a stream
 * anywhere.  No message may be empty or longer than the limit, and the
 * framer's buffer must stay within its bound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/net/framer.h"

struct record {
    unsigned char out[1 << 16];
    size_t len;
    size_t max;
};

static struct record whole, chunked;

static void
collect(void *arg, const char *data, size_t len, bool truncated)
{
    struct record *r = arg;
    size_t i;

    if (len == 0 || len > r->max) abort();
    for (i = 0; i < len && r->len < sizeof(r->out) - 2; i++)
        r->out[r->len++] = (unsigned char)data[i];
    if (r->len < sizeof(r->out) - 2) {
        r->out[r->len++] = truncated ? 1 : 0;
        r->out[r->len++] = 0xff; /* separator */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct framer f1, f2;
    enum conf_framing framing;
    size_t max, step, at, n, bound;
    int e1, e2 = 0;

    if (size < 3) return 0;
    framing = (enum conf_framing)(data[0] % 3);
    max = 1 + data[1] % 64;
    step = 1 + data[2] % 17;
    data += 3;
    size -= 3;
    /* the buffer holds max + 1 bytes, or the digits of a probed octet count */
    bound = max + 1 > 256 ? max + 1 : 256;

    memset(&whole, 0, sizeof(whole));
    memset(&chunked, 0, sizeof(chunked));
    whole.max = chunked.max = max;
    framer_init(&f1, framing, max, collect, &whole);
    framer_init(&f2, framing, max, collect, &chunked);

    e1 = framer_feed(&f1, (const char *)data, size);
    for (at = 0; at < size && e2 == 0; at += step) {
        n = size - at < step ? size - at : step;
        e2 = framer_feed(&f2, (const char *)data + at, n);
        if (f2.cap > bound) abort();
    }
    if (e1 == 0) e1 = framer_eof(&f1) < 0 ? -2 : 0;
    if (e2 == 0) e2 = framer_eof(&f2) < 0 ? -2 : 0;
    if (e1 != e2 || whole.len != chunked.len || memcmp(whole.out, chunked.out, whole.len) != 0)
        abort();
    framer_free(&f1);
    framer_free(&f2);
    return 0;
}
