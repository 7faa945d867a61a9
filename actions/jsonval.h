/*
 * jsonval: building blocks for the JSON that corrald and corral write of
 * cold data (alerts, dead letters, contexts, control answers, reports),
 * with jansson: a string from bytes that may not be UTF-8, a message as a
 * JSON object, and a value appended to a buffer in compact form.  The
 * per-message writer of JSON outputs is engine/json.c, which these reuse
 * for a message so that it has one JSON form everywhere.
 */
#ifndef CORRAL_JSONVAL_H
#define CORRAL_JSONVAL_H

#include <jansson.h>
#include <stddef.h>

#include "engine/buf.h"
#include "engine/msg.h"

/* The bytes as a JSON string: each byte that is not UTF-8, and NUL, becomes U+FFFD. */
json_t *jsonval_text(const char *s, size_t len);
/* jsonval_text of a C string; JSON null for NULL. */
json_t *jsonval_str(const char *s);
/* The message as an object with the members json_format_msg writes, in its order. */
json_t *jsonval_msg(const struct msg *m);
/*
 * Appends j compactly (no blanks, members in the order they were set) and
 * releases it; "null" when j is NULL (an allocation that failed).
 */
void jsonval_put_new(struct buf *out, json_t *j);

#endif
