/*
 * base64: the standard alphabet with padding (RFC 4648 4), as the
 * $(base64-encode) template function and MIME encoded-words (smtp_mime.c)
 * write it.
 */
#ifndef CORRAL_BASE64_H
#define CORRAL_BASE64_H

#include "engine/buf.h"

#include <stddef.h>

/* Appends the n bytes at p, encoded: 4 characters for every 3 bytes begun. */
void base64_encode(struct buf *out, const void *p, size_t n);

#endif
