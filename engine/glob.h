/*
 * glob: GLib's GPatternSpec matching, which syslog-ng 3.38 uses for
 * $(list-search --mode glob) and the key patterns of $(values)/$(names):
 * '*' is any run, '?' one UTF-8 character, there are no escapes.
 */
#ifndef CORRAL_GLOB_H
#define CORRAL_GLOB_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the s[0..slen) matches the NUL-terminated pattern pat. */
bool glob_match(const char *pat, const char *s, size_t slen);

#endif
