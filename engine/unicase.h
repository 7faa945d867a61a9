/*
 * unicase: Unicode upper- and lower-casing as GLib's g_utf8_strup() and
 * g_utf8_strdown() do it, for $(uppercase) and $(lowercase).  The tables
 * are generated (unicase_tab.h, by contrib/gen-unicase.py).
 */
#ifndef CORRAL_UNICASE_H
#define CORRAL_UNICASE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"

/*
 * Appends s[0..len) upper- or lower-cased.  As GLib: stops at a NUL, steps
 * over bytes as the lead byte says, and copies what is not valid UTF-8
 * unchanged.
 */
void unicase_map(struct buf *out, const char *s, size_t len, bool upper);

#endif
