/*
 * tf_cond: conditions and the message set of a correlation context: $(if),
 * $(or), $(grep), $(filter) and the context functions $(context-length),
 * $(context-values), $(context-lookup).
 */
#include "engine/tfunc_int.h"
#include "engine/filter.h"
#include "engine/msg.h"
#include "engine/tfargs.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* $(or A B ...): the first non-empty argument. */
static void
tf_or(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        size_t before = out->len;
        tfunc_arg(call, i, env, out);
        if (out->len > before) return;
    }
}

/* Filter plus options shared by $(if), $(grep), $(context-lookup) and $(filter). */
struct cond_state {
    struct filter *f;
    int max_count;
};

static void
cond_free(void *p)
{
    struct cond_state *st = p;

    filter_free(st->f);
    free(st);
}

static bool
cond_opt(void *ctx, int id, const char *sval, int ival, struct buf *err)
{
    struct cond_state *st = ctx;

    (void)id;
    (void)sval;
    (void)err;
    st->max_count = ival;
    return true;
}

static const struct tfargs_opt grep_opts[] = {
    {"max-count", 'm', TFARGS_INT, 0},
    {NULL, 0, TFARGS_FLAG, 0},
};

/*
 * Shared prepare: options (grep and context-lookup only), a filter
 * expression, then nmin..nmax templates (nmax < 0: any number).
 */
static bool
cond_prepare(struct tfunc_call *call, int argc, char **rawq, struct buf *err, const char *fname,
             const struct tfargs_opt *opts, int nmin, int nmax, const char *usage)
{
    struct cond_state *st = xcalloc(1, sizeof(*st));
    char **args = tfargs_unquote(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos, i;
    bool ok = false;

    call->state = st;
    if (opts) {
        npos = tfargs_parse(args, argc, opts, cond_opt, st, false, pos, err);
    } else {
        for (i = 0; i < argc; i++) pos[i] = i;
        npos = argc;
    }
    if (npos < 0) goto out;
    if (npos - 1 < nmin || (nmax >= 0 && npos - 1 > nmax)) {
        buf_printf(err, usage, fname);
        goto out;
    }
    st->f = tfargs_filter(fname, args[pos[0]], err);
    ok = st->f && tfargs_compile_positionals(call, args, pos + 1, npos - 1, err);
out:
    free(pos);
    tfargs_free(argc, args);
    return ok;
}

static bool
if_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    (void)raw;
    return cond_prepare(call, argc, rawq, err, "if", NULL, 2, 2, "$(%s) requires three arguments");
}

static bool
grep_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    (void)raw;
    return cond_prepare(call, argc, rawq, err, "grep", grep_opts, 1, -1,
                        "$(%s) requires at least two arguments");
}

static bool
lookup_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    (void)raw;
    return cond_prepare(call, argc, rawq, err, "context-lookup", grep_opts, 1, -1,
                        "$(%s) requires at least two arguments");
}

static bool
filter_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    (void)raw;
    return cond_prepare(call, argc, rawq, err, "filter", NULL, 1, 1,
                        "Wrong number of arguments. Example: $(%s expr list).");
}

/* $(if (FILTER) THEN ELSE): the filter sees the whole message set. */
static void
tf_if(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct cond_state *st = call->state;

    tfunc_arg(call, filter_eval(st->f, env) ? 0 : 1, env, out);
}

/* A long context's messages are scattered: fetch those read next, the struct first, then its body.
 */
static void
fetch_ahead(const struct template_env *env, size_t i)
{
    if (i + 8 < env->nmsgs) msg_prefetch(env->msgs[i + 8], false, false);
    if (i + 4 < env->nmsgs) msg_prefetch(env->msgs[i + 4], true, false);
}

/*
 * grep and context-lookup: for each message of the set, oldest first, whose
 * filter holds (evaluated on that message alone, without a context id, as in
 * 3.38), every template evaluated on that message.  grep joins the results
 * with commas as they are; context-lookup makes a proper list.
 */
static void
select_messages(const struct tfunc_call *call, const struct template_env *env, struct buf *out,
                bool encode)
{
    const struct cond_state *st = call->state;
    struct buf *b = template_scratch_get();
    size_t i, start = out->len;
    int count = 0, k;
    bool first = true;

    for (i = 0; i < env->nmsgs; i++) {
        struct template_env one, bare;
        fetch_ahead(env, i);
        tfunc_env_one(&one, env, i);
        bare = one;
        bare.context_id = NULL;
        bare.context_id_len = 0;
        if (!filter_eval(st->f, &bare)) continue;
        count++;
        for (k = 0; k < call->argc; k++) {
            if (!first) buf_putc(out, ',');
            first = false;
            if (encode) {
                buf_reset(b);
                tfunc_arg(call, k, &one, b);
                tf_list_encode(out, b->p, b->len);
            } else {
                tfunc_arg(call, k, &one, out);
            }
        }
        if (tfunc_over_cap(out, start)) break;
        if (st->max_count && count >= st->max_count) break;
    }
    template_scratch_put(b);
}

static void
tf_grep(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    select_messages(call, env, out, false);
}

static void
tf_context_lookup(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    select_messages(call, env, out, true);
}

/* $(context-values T...): every template on every message of the set, oldest first, as a list;
 * of the oldest `limit` messages. */
static void
context_values(const struct tfunc_call *call, const struct template_env *env, size_t limit,
               struct buf *out)
{
    struct buf *b = template_scratch_get();
    size_t i, start = out->len;
    int k;

    for (i = 0; i < env->nmsgs && i < limit; i++) {
        struct template_env one;
        fetch_ahead(env, i);
        tfunc_env_one(&one, env, i);
        for (k = 0; k < call->argc; k++) {
            if (i || k) buf_putc(out, ',');
            buf_reset(b);
            tfunc_arg(call, k, &one, b);
            tf_list_encode(out, b->p, b->len);
        }
        if (tfunc_over_cap(out, start)) break;
    }
    template_scratch_put(b);
}

static void
tf_context_values(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    context_values(call, env, SIZE_MAX, out);
}

bool
tf_context_values_oldest(const struct tfunc_call *call, const struct template_env *env,
                         struct buf *out)
{
    if (!call || call->fn->eval != tf_context_values) return false;
    context_values(call, env, 1, out);
    return true;
}

static void
tf_context_length(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    (void)call;
    buf_put_uint(out, env->nmsgs);
}

/* Whether EXPR holds with $_ = item; if so, the item is appended raw.  False once out is full. */
static bool
filter_item(const struct filter_each *fe, struct template_env *e, const char *item, size_t len,
            struct buf *out, size_t start)
{
    e->context_id = item;
    e->context_id_len = len;
    if (!filter_each_eval(fe, e)) return true;
    tf_list_comma(out, start);
    buf_append(out, item, len);
    return !tfunc_over_cap(out, start);
}

/*
 * $(filter (EXPR) $(context-values T...)), as in "how many of the context's
 * lines have this line's address": the items of the list, in its order,
 * without writing the list and scanning it back (a tenth of the time of
 * corral.sshd.auth.failures_by_user went there).  A plain item
 * (tf_list_plain) is encoded as itself, so it reads back as itself; any
 * other is scanned from its encoding as the list's scanner would.  False,
 * with nothing appended, when the list would be longer than TF_MAX_OUTPUT:
 * context-values cuts it there, mid-item, and the general path reproduces
 * that.
 *
 * With count (tf_filter_count), nothing is written: *count is how many
 * items the output would hold.  Those are its plain items joined by commas,
 * as many as the scanner reads back; an item that is not plain (empty, or
 * quoted: written raw, it may read back as several or none) or an output
 * past TF_MAX_OUTPUT returns false, for the caller to write and scan.
 */
static bool
filter_context_values(const struct tfunc_call *call, const struct tfunc_call *cv,
                      const struct template_env *env, struct buf *out, size_t *count)
{
    const struct cond_state *st = call->state;
    struct template_env e = *env;
    struct buf *val = template_scratch_get(), *enc = template_scratch_get();
    size_t i, listlen = 0, outlen = 0, start = out ? out->len : 0;
    bool more = true, fits = true, plain;
    struct filter_each fe;
    int k;

    filter_each_begin(&fe, st->f, &e);
    for (i = 0; i < env->nmsgs && more && fits; i++) {
        struct template_env one;
        fetch_ahead(env, i);
        tfunc_env_one(&one, env, i);
        for (k = 0; k < cv->argc && more && fits; k++) {
            buf_reset(val);
            tfunc_arg(cv, k, &one, val);
            plain = tf_list_plain(val->p, val->len);
            if (!plain) {
                buf_reset(enc);
                tf_list_encode(enc, val->p, val->len);
            }
            listlen += (i || k ? 1 : 0) + (plain ? val->len : enc->len);
            if (listlen > TF_MAX_OUTPUT || (count && !plain)) {
                fits = false;
                break;
            }
            if (count) {
                e.context_id = buf_str(val);
                e.context_id_len = val->len;
                if (!filter_each_eval(&fe, &e)) continue;
                outlen += (*count ? 1 : 0) + val->len;
                (*count)++;
                fits = outlen <= TF_MAX_OUTPUT;
            } else if (plain) {
                more = filter_item(&fe, &e, buf_str(val), val->len, out, start);
            } else {
                struct tf_list_scan s;
                tf_list_scan_init(&s, &enc, 1);
                if (tf_list_scan_next(&s))
                    more = filter_item(&fe, &e, buf_str(s.val), s.val->len, out, start);
                tf_list_scan_done(&s);
            }
        }
    }
    filter_each_end(&fe);
    template_scratch_put(enc);
    template_scratch_put(val);
    if (!fits && out) buf_truncate(out, start);
    return fits;
}

/* $(filter (EXPR) LIST): the items for which EXPR holds with $_ = the item, written raw (3.38). */
static void
tf_filter(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct cond_state *st = call->state;
    const struct tfunc_call *cv = call->argc == 1 ? template_only_call(call->argv[0]) : NULL;
    struct buf *list;
    struct template_env e = *env;
    struct tf_list_scan s;
    struct filter_each fe;
    size_t start = out->len;

    if (cv && cv->fn->eval == tf_context_values && filter_context_values(call, cv, env, out, NULL))
        return;
    list = tfunc_arg_get(call, 0, env);
    filter_each_begin(&fe, st->f, &e);
    tf_list_scan_init(&s, &list, 1);
    while (tf_list_scan_next(&s))
        if (!filter_item(&fe, &e, buf_str(s.val), s.val->len, out, start)) break;
    tf_list_scan_done(&s);
    filter_each_end(&fe);
    template_scratch_put(list);
}

bool
tf_filter_count(const struct tfunc_call *call, const struct template_env *env, size_t *n)
{
    const struct tfunc_call *cv;

    if (!call || call->fn->eval != tf_filter || call->argc != 1) return false;
    cv = template_only_call(call->argv[0]);
    if (!cv || cv->fn->eval != tf_context_values) return false;
    *n = 0;
    return filter_context_values(call, cv, env, NULL, n);
}

static bool
cond_refs(const struct tfunc_call *call, unsigned char *keep)
{
    const struct cond_state *st = call->state;

    return !st || filter_refs(st->f, keep);
}

const struct tfunc tf_cond_funcs[] = {
    {"if", 0, -1, if_prepare, tf_if, cond_free, cond_refs},
    {"or", 0, -1, NULL, tf_or, NULL, NULL},
    {"grep", 0, -1, grep_prepare, tf_grep, cond_free, cond_refs},
    {"filter", 0, -1, filter_prepare, tf_filter, cond_free, cond_refs},
    {"context-length", 0, -1, NULL, tf_context_length, NULL, NULL},
    {"context-values", 0, -1, NULL, tf_context_values, NULL, NULL},
    {"context-lookup", 0, -1, lookup_prepare, tf_context_lookup, cond_free, cond_refs},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};
