/*
 * template: syslog-ng's template language, compiled once and evaluated per
 * message.  "$NAME", "${NAME}", "${NAME:-default}", "${NAME}@N" (the N-th
 * message back in a correlation context), "$(function args...)", "$$" for a
 * dollar sign.  Used by rule values, context ids, generated messages, action
 * conditions and output formats.
 */
#ifndef CORRAL_TEMPLATE_H
#define CORRAL_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"
#include "engine/msg.h"

struct tpl;

/*
 * What a template is evaluated against: a set of messages, the last of which
 * is the current one ("@0").  Outside correlation the set is one message.
 */
struct tpl_env {
    struct msg *const *msgs;
    size_t nmsgs;
    const char *context_id; /* $CONTEXT_ID; NULL outside a context */
    size_t context_id_len;
    const struct msg_time *now; /* for $C_* macros; NULL means the wall clock */
};

/* Compiles a template; on error returns NULL with a message in err. */
struct tpl *tpl_compile(const char *src, size_t len, struct buf *err);
struct tpl *tpl_compile_str(const char *src, struct buf *err);
void tpl_free(struct tpl *t);
/* The source text the template was compiled from. */
const char *tpl_source(const struct tpl *t);
/* True when the template has no references: its text is always the same. */
bool tpl_is_literal(const struct tpl *t, const char **text, size_t *len);

/*
 * Marks in keep[] (indexed by value handle, NV_MAX_NAMES entries) every
 * stored value the template can read, in any message of its environment.
 * Returns false when that cannot be known (a function that lists names at
 * run time, such as $(values) or $SDATA).
 */
bool tpl_refs(const struct tpl *t, unsigned char *keep);

/* Appends the expansion to out.  Names that are not set expand to nothing. */
void tpl_eval(const struct tpl *t, const struct tpl_env *env, struct buf *out);

/*
 * Borrows an empty scratch buffer; give it back with tpl_scratch_put().  Keeps
 * nested evaluation (function arguments, filter operands) free of allocation.
 */
struct buf *tpl_scratch_get(void);
void tpl_scratch_put(struct buf *b);

/* A one-message environment. */
void tpl_env_single(struct tpl_env *env, struct msg *const *m);

#endif
