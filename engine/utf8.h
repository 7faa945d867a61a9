/*
 * utf8: decoding and encoding UTF-8 characters, strictly (utf8_char) and
 * the way GLib steps over text it does not check (utf8_skip), which is
 * what syslog-ng 3.38's functions do.
 */
#ifndef CORRAL_UTF8_H
#define CORRAL_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"

/* Length of the valid UTF-8 character at p (no overlong, surrogate, > U+10FFFF); 0 if invalid. */
size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp);
/* How far GLib's g_utf8_next_char() steps from a lead byte (it trusts the lead byte). */
size_t utf8_skip(unsigned char c);
/* Appends code point c (at most U+10FFFF) as UTF-8. */
void utf8_put(struct buf *out, uint32_t c);
/*
 * Appends s as valid UTF-8: each byte that starts no valid sequence, and
 * each NUL, becomes U+FFFD (what jansson and C strings can take).
 */
void utf8_scrub(struct buf *out, const char *s, size_t len);

#endif
