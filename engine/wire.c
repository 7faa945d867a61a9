/*
 * wire: little-endian integers and length-prefixed strings (see wire.h).
 */
#include "engine/wire.h"

void
wire_store32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

uint32_t
wire_load32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void
wire_put32(struct buf *b, uint32_t v)
{
    unsigned char x[4];

    wire_store32(x, v);
    buf_append(b, x, 4);
}

void
wire_put64(struct buf *b, uint64_t v)
{
    wire_put32(b, (uint32_t)v);
    wire_put32(b, (uint32_t)(v >> 32));
}

void
wire_put_bytes(struct buf *b, const void *p, size_t n)
{
    wire_put32(b, (uint32_t)n);
    buf_append(b, p, n);
}

void
wire_reader_init(struct wire_reader *r, const void *data, size_t len)
{
    r->p = data;
    r->end = r->p + len;
    r->bad = false;
}

uint32_t
wire_get32(struct wire_reader *r)
{
    uint32_t v;

    if (r->bad || r->end - r->p < 4) {
        r->bad = true;
        return 0;
    }
    v = wire_load32(r->p);
    r->p += 4;
    return v;
}

uint64_t
wire_get64(struct wire_reader *r)
{
    uint64_t lo = wire_get32(r);

    return lo | (uint64_t)wire_get32(r) << 32;
}

const char *
wire_get_bytes(struct wire_reader *r, size_t *len)
{
    const char *s;

    *len = wire_get32(r);
    if (r->bad || (size_t)(r->end - r->p) < *len) {
        r->bad = true;
        *len = 0;
        return "";
    }
    s = (const char *)r->p;
    r->p += *len;
    return s;
}
