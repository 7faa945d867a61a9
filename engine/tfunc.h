/*
 * tfunc: the interface between the template compiler (template.c) and the
 * template functions ($(echo ...), $(context-length), ...; tfuncs.c and tf_*.c).
 * Internal to the engine.
 */
#ifndef CORRAL_TFUNC_H
#define CORRAL_TFUNC_H

#include "engine/buf.h"
#include "engine/template.h"

struct tfunc;

/* One $(name args...) in a compiled template. */
struct tfunc_call {
    const struct tfunc *fn;
    int argc;
    struct template *
        *argv;   /* each argument compiled as a template (unless the function says otherwise) */
    void *state; /* function-specific, made by prepare() */
};

struct tfunc {
    const char *name;
    int min_args, max_args; /* max_args < 0: unbounded */
    /*
     * Optional: takes over argument handling from the default (compile every
     * argument as a template).  raw[] are the arguments with quotes removed;
     * rawq[] with quotes kept, for arguments that are filter expressions.
     */
    bool (*prepare)(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err);
    void (*eval)(const struct tfunc_call *call, const struct template_env *env, struct buf *out);
    void (*free_state)(void *state);
    /*
     * Optional: for tfunc_refs(), whether what the state reads (a filter, a
     * sub-template) is known, marking it in keep; false when it is not.
     */
    bool (*refs)(const struct tfunc_call *call, unsigned char *keep);
};

const struct tfunc *tfunc_lookup(const char *name, size_t len);
/* template_refs() for a function call: what its arguments and state can read. */
bool tfunc_refs(const struct tfunc_call *call, unsigned char *keep);

/* The call when t is one function call and nothing else ("$(f ...)"), else NULL. */
const struct tfunc_call *template_only_call(const struct template *t);

/* Evaluates argument i of a call into out (appending). */
void tfunc_arg(const struct tfunc_call *call, int i, const struct template_env *env,
               struct buf *out);

#endif
