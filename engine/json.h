/*
 * json: writes a message as one flat JSON object, the output contract of
 * `corral match --json` and of corrald's JSON outputs:
 *
 *   {"ISODATE":"...","HOST":"...","PROGRAM":"...", ..., "TAGS":"a,b"}
 *
 * Every member is a string.  ISODATE, FACILITY and PRIORITY are present when
 * the message was parsed from a syslog line; then come every name-value pair
 * in the order it was first set, under its own name; TAGS comes last.  Bytes
 * that are not valid UTF-8 are written as U+FFFD.
 */
#ifndef CORRAL_JSON_H
#define CORRAL_JSON_H

#include <stddef.h>

#include "engine/buf.h"
#include "engine/msg.h"

/* Appends the message as a JSON object (no trailing newline). */
void json_format_msg(const struct msg *m, struct buf *out);
/*
 * Appends a JSON string literal, quotes included.  (Not json_string: that
 * is jansson's, which corrald links too.)
 */
void json_quote(struct buf *out, const char *s, size_t len);

#endif
