/*
 * wire: the binary form of state files and spools: little-endian integers
 * and length-prefixed byte strings, written to a buf and read back by a
 * reader that notes running past the end instead of reading there.
 */
#ifndef CORRAL_WIRE_H
#define CORRAL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"

void wire_put32(struct buf *b, uint32_t v);
void wire_put64(struct buf *b, uint64_t v);
/* A u32 length, then the bytes. */
void wire_put_bytes(struct buf *b, const void *p, size_t n);

/* Four bytes in place, for headers written before their contents are known. */
void wire_store32(unsigned char *p, uint32_t v);
uint32_t wire_load32(const unsigned char *p);

struct wire_reader {
    const unsigned char *p, *end;
    bool bad; /* something ran past the end: every later read returns 0 or "" */
};

void wire_reader_init(struct wire_reader *r, const void *data, size_t len);
uint32_t wire_get32(struct wire_reader *r);
uint64_t wire_get64(struct wire_reader *r);
/* The bytes of a length-prefixed string, in place (not NUL-terminated). */
const char *wire_get_bytes(struct wire_reader *r, size_t *len);

#endif
