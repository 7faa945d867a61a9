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

struct template;

/*
 * What a template is evaluated against: a set of messages, the last of which
 * is the current one ("@0").  Outside correlation the set is one message.
 */
struct template_env {
    struct msg *const *msgs;
    size_t nmsgs;
    const char *context_id; /* $CONTEXT_ID; NULL outside a context */
    size_t context_id_len;
    const struct msg_time *now; /* for $C_* macros; NULL means the wall clock */
};

/* Compiles a template; on error returns NULL with a message in err. */
struct template *template_compile(const char *src, size_t len, struct buf *err);
struct template *template_compile_str(const char *src, struct buf *err);
void template_free(struct template *t);
/* The source text the template was compiled from. */
const char *template_source(const struct template *t);
/* True when the template has no references: its text is always the same. */
bool template_is_literal(const struct template *t, const char **text, size_t *len);
/* True when it reads only the messages' values (text and ${NAME}s, no macro or function): over the
 * same messages it gives the same text, whatever else the environment holds ($_ included). */
bool template_values_only(const struct template *t);

/*
 * Marks in keep[] (indexed by value handle, NV_MAX_NAMES entries) every
 * stored value the template can read, in any message of its environment.
 * Returns false when that cannot be known (a function that lists names at
 * run time, such as $(values) or $SDATA).
 */
bool template_refs(const struct template *t, unsigned char *keep);

/* Appends the expansion to out.  Names that are not set expand to nothing. */
void template_eval(const struct template *t, const struct template_env *env, struct buf *out);

/*
 * Borrows an empty scratch buffer; give it back with template_scratch_put().  Keeps
 * nested evaluation (function arguments, filter operands) free of allocation.
 */
struct buf *template_scratch_get(void);
void template_scratch_put(struct buf *b);
/* Frees the calling thread's spare scratch buffers (a worker thread calls it before it ends). */
void template_scratch_release(void);

/* A one-message environment. */
void template_env_single(struct template_env *env, struct msg *const *m);

#endif
