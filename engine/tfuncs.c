/*
 * tfuncs: the catalogue of template functions, $(name args...), that
 * syslog-ng 3.38 offers to patterndb rules (its basicfuncs module plus the
 * context functions), and the helpers every function uses to evaluate its
 * arguments.  The functions themselves live by family in tf_cond.c,
 * tf_list.c, tf_net.c, tf_num.c, tf_string.c and tf_value.c; tfunc_int.h
 * says what they share.  Behaviour, quirks included, follows what 3.38 does
 * as observed with pdbtool; the places that differ on purpose say so
 * ("deviation").
 */
#include "engine/tfunc_int.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Cuts what a call added beyond TF_MAX_OUTPUT; true when it had to. */
bool
tfunc_over_cap(struct buf *out, size_t start)
{
    if (out->len - start <= TF_MAX_OUTPUT) return false;
    buf_truncate(out, start + TF_MAX_OUTPUT);
    return true;
}

/* Evaluates argument i into a borrowed scratch buffer. */
struct buf *
tfunc_arg_get(const struct tfunc_call *call, int i, const struct template_env *env)
{
    struct buf *b = template_scratch_get();

    tfunc_arg(call, i, env, b);
    return b;
}

/* All arguments from `first` on, evaluated once (3.38 evaluates each argument once per call). */
void
tfunc_args_eval(struct tfunc_args *a, const struct tfunc_call *call, int first,
                const struct template_env *env)
{
    int i;

    a->n = call->argc > first ? call->argc - first : 0;
    a->b = a->n <= (int)ARRAY_LEN(a->inl) ? a->inl : xmalloc((size_t)a->n * sizeof(*a->b));
    for (i = 0; i < a->n; i++) a->b[i] = tfunc_arg_get(call, first + i, env);
}

void
tfunc_args_release(struct tfunc_args *a)
{
    int i;

    for (i = 0; i < a->n; i++) template_scratch_put(a->b[i]);
    if (a->b != a->inl) free(a->b);
}

/* The environment of message i of env alone; $CONTEXT_ID and the clock stay. */
void
tfunc_env_one(struct template_env *one, const struct template_env *env, size_t i)
{
    *one = *env;
    one->msgs = &env->msgs[i];
    one->nmsgs = 1;
}

/* $(template NAME) calls a named template of a syslog-ng configuration; rule files have none. */
static bool
template_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    (void)call;
    (void)argc;
    (void)raw;
    (void)rawq;
    buf_printf(err, "$(template) is not supported in rule files: it needs named templates from a "
                    "syslog-ng configuration");
    return false;
}

static void
tf_unreachable(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    (void)call;
    (void)env;
    (void)out;
}

/* A named template reads whatever the configuration's template reads. */
static bool
no_refs(const struct tfunc_call *call, unsigned char *keep)
{
    (void)call;
    (void)keep;
    return false;
}

static const struct tfunc tfuncs_misc[] = {
    {"template", 0, -1, template_prepare, tf_unreachable, NULL, no_refs},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};

static const struct tfunc *const families[] = {
    tf_cond_funcs, tf_string_funcs, tf_list_funcs, tf_value_funcs,
    tf_num_funcs,  tf_net_funcs,    tfuncs_misc,
};

bool
tfunc_refs(const struct tfunc_call *call, unsigned char *keep)
{
    int i;

    for (i = 0; i < call->argc; i++)
        if (call->argv && !template_refs(call->argv[i], keep)) return false;
    return !call->fn->refs || call->fn->refs(call, keep);
}

const struct tfunc *
tfunc_lookup(const char *name, size_t len)
{
    const struct tfunc *f;
    size_t i;

    for (i = 0; i < ARRAY_LEN(families); i++)
        for (f = families[i]; f->name; f++)
            if (strlen(f->name) == len && memcmp(f->name, name, len) == 0) return f;
    return NULL;
}
