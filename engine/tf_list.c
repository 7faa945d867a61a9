/*
 * tf_list: syslog-ng lists: the codec (3.38's encoder and scanner, comma
 * separated items quoted when they must be) and the list functions,
 * $(list-*), $(explode), $(implode), $(map) and $(iterate).
 */
#include "engine/tfunc_int.h"
#include "engine/glob.h"
#include "engine/rematch.h"
#include "engine/tfargs.h"
#include "engine/utf8.h"
#include "engine/xalloc.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Appends s escaped the way 3.38's str_repr encoder does inside quotes. */
static void
list_escape(struct buf *out, const char *s, size_t len, char unsafe)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;

    while (p < end) {
        uint32_t c;
        size_t n = utf8_char(p, (size_t)(end - p), &c);

        if (n == 0) {
            buf_printf(out, "\\x%02x", *p);
            p++;
            continue;
        }
        switch (c) {
        case '\b': buf_puts(out, "\\b"); break;
        case '\f': buf_puts(out, "\\f"); break;
        case '\n': buf_puts(out, "\\n"); break;
        case '\r': buf_puts(out, "\\r"); break;
        case '\t': buf_puts(out, "\\t"); break;
        case '\\': buf_puts(out, "\\\\"); break;
        default:
            if (c < 32)
                buf_printf(out, "\\x%02x", (unsigned)c);
            else if (unsafe && c == (unsigned char)unsafe) {
                buf_putc(out, '\\');
                buf_putc(out, unsafe);
            } else
                buf_append(out, p, n);
            break;
        }
        p += n;
    }
}

/* What tf_list_encode() looks for in an item, a table so that one pass over it is enough. */
enum { ITEM_SPECIAL = 1, ITEM_APOS = 2, ITEM_QUOTE = 4 };
static const unsigned char item_char[256] = {
    ['\b'] = ITEM_SPECIAL, ['\f'] = ITEM_SPECIAL, ['\n'] = ITEM_SPECIAL, ['\r'] = ITEM_SPECIAL,
    ['\t'] = ITEM_SPECIAL, ['\\'] = ITEM_SPECIAL, [' '] = ITEM_SPECIAL,  [','] = ITEM_SPECIAL,
    ['\''] = ITEM_APOS,    ['"'] = ITEM_QUOTE,
};

/*
 * Appends one list item: as is when it is plain, else in single quotes when
 * it holds only double quotes, else in double quotes; the empty item is "".
 */
static unsigned
item_seen(const char *s, size_t len)
{
    unsigned seen = 0;
    size_t i;

    for (i = 0; i < len; i++) seen |= item_char[(unsigned char)s[i]];
    return seen;
}

bool
tf_list_plain(const char *s, size_t len)
{
    return len && !item_seen(s, len);
}

void
tf_list_encode(struct buf *out, const char *s, size_t len)
{
    unsigned seen;
    bool apos, quote;

    if (len == 0) {
        buf_puts(out, "\"\"");
        return;
    }
    seen = item_seen(s, len);
    if (!seen) {
        buf_append(out, s, len);
        return;
    }
    apos = (seen & ITEM_APOS) != 0;
    quote = (seen & ITEM_QUOTE) != 0;
    if (quote && !apos) {
        buf_putc(out, '\'');
        list_escape(out, s, len, 0);
        buf_putc(out, '\'');
    } else {
        buf_putc(out, '"');
        list_escape(out, s, len, apos && quote ? '"' : 0);
        buf_putc(out, '"');
    }
}

/*
 * The 3.38 list scanner over a run of arguments: items never span
 * arguments, unquoted empty items are skipped, a quoted item is unescaped,
 * and a malformed one (text after the closing quote, an open quote) is
 * taken raw, up to and including the comma that ends it.
 */
void
tf_list_scan_init(struct tf_list_scan *s, struct buf **args, int nargs)
{
    s->args = args;
    s->nargs = nargs;
    s->ai = 0;
    s->p = nargs ? buf_str(args[0]) : NULL;
    s->end = nargs ? s->p + args[0]->len : NULL;
    s->val = template_scratch_get();
}

void
tf_list_scan_done(struct tf_list_scan *s)
{
    template_scratch_put(s->val);
}

bool
tf_list_scan_next(struct tf_list_scan *s)
{
    enum { INITIAL, STRING, BACKSLASH, EXPECT_DELIM, ERROR, UNQUOTED } st = INITIAL;
    const char *start;
    char q = 0;

    buf_reset(s->val);
    for (;;) {
        if (s->ai >= s->nargs) return false;
        if (s->p == s->end) {
            if (++s->ai >= s->nargs) return false;
            s->p = buf_str(s->args[s->ai]);
            s->end = s->p + s->args[s->ai]->len;
            continue;
        }
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        break;
    }
    start = s->p;
    while (s->p < s->end) {
        char c = *s->p++;
        switch (st) {
        case INITIAL:
        case UNQUOTED:
            if (c == ',') goto done;
            if (st == INITIAL && (c == '"' || c == '\'')) {
                q = c;
                st = STRING;
            } else {
                buf_putc(s->val, c);
                st = UNQUOTED;
            }
            break;
        case STRING:
            if (c == q)
                st = EXPECT_DELIM;
            else if (c == '\\')
                st = BACKSLASH;
            else
                buf_putc(s->val, c);
            break;
        case BACKSLASH:
            switch (c) {
            case 'b': buf_putc(s->val, '\b'); break;
            case 'f': buf_putc(s->val, '\f'); break;
            case 'n': buf_putc(s->val, '\n'); break;
            case 'r': buf_putc(s->val, '\r'); break;
            case 't': buf_putc(s->val, '\t'); break;
            case '\\': buf_putc(s->val, '\\'); break;
            default:
                /* unknown escapes keep their backslash, except for the quote itself */
                if (c != q) buf_putc(s->val, '\\');
                buf_putc(s->val, c);
                break;
            }
            st = STRING;
            break;
        case EXPECT_DELIM:
        case ERROR:
            if (c == ',') goto done;
            st = ERROR;
            break;
        }
    }
done:
    if (st == STRING || st == BACKSLASH || st == ERROR) {
        buf_reset(s->val);
        buf_append(s->val, start, (size_t)(s->p - start));
    }
    return true;
}

static int
list_count(struct buf **args, int nargs)
{
    struct tf_list_scan s;
    int n = 0;

    tf_list_scan_init(&s, args, nargs);
    while (tf_list_scan_next(&s)) n++;
    tf_list_scan_done(&s);
    return n;
}

/* Appends the comma between list items unless the output already ends in one (as 3.38). */
void
tf_list_comma(struct buf *out, size_t start)
{
    if (out->len > start && out->p[out->len - 1] != ',') buf_putc(out, ',');
}

static void
tf_list_concat(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    struct tf_list_scan s;
    size_t start = out->len;

    tfunc_args_eval(&a, call, 0, env);
    tf_list_scan_init(&s, a.b, a.n);
    while (tf_list_scan_next(&s)) {
        tf_list_comma(out, start);
        tf_list_encode(out, s.val->p, s.val->len);
        if (tfunc_over_cap(out, start)) break;
    }
    tf_list_scan_done(&s);
    tfunc_args_release(&a);
}

/* $(list-append LIST ITEM...): LIST as it is, each ITEM encoded as one item. */
static void
tf_list_append(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    size_t start = out->len;
    int i;

    if (call->argc < 1) return;
    tfunc_arg(call, 0, env, out);
    for (i = 1; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        tf_list_comma(out, start);
        tf_list_encode(out, b->p, b->len);
        template_scratch_put(b);
        if (tfunc_over_cap(out, start)) return;
    }
}

static void
tf_list_count(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    size_t n;

    /* of a context's values that a filter keeps: counted, not written and scanned back */
    if (call->argc == 1 && tf_filter_count(template_only_call(call->argv[0]), env, &n)) {
        buf_put_uint(out, (unsigned)n);
        return;
    }
    tfunc_args_eval(&a, call, 0, env);
    buf_put_uint(out, (unsigned)list_count(a.b, a.n));
    tfunc_args_release(&a);
}

/* The item at ndx (negative counts from the end), decoded. */
static void
list_nth(struct buf **args, int nargs, int ndx, struct buf *out)
{
    struct tf_list_scan s;
    int i = 0;

    if (nargs == 0) return;
    if (ndx < 0) ndx += list_count(args, nargs);
    tf_list_scan_init(&s, args, nargs);
    while (i < ndx && tf_list_scan_next(&s)) i++;
    if (i == ndx && tf_list_scan_next(&s)) buf_append(out, s.val->p, s.val->len);
    tf_list_scan_done(&s);
}

/* Items first..last-1 (negative indices count from the end), re-encoded. */
static void
list_slice(struct buf **args, int nargs, int first, int last, struct buf *out)
{
    struct tf_list_scan s;
    size_t start = out->len;
    int i = 0;

    if (nargs == 0) return;
    if (first < 0 || last < 0) {
        int count = list_count(args, nargs);
        if (first < 0) first += count;
        if (last < 0) last += count;
    }
    tf_list_scan_init(&s, args, nargs);
    while (i < first && tf_list_scan_next(&s)) i++;
    while (i >= first && i < last && tf_list_scan_next(&s)) {
        tf_list_comma(out, start);
        tf_list_encode(out, s.val->p, s.val->len);
        if (tfunc_over_cap(out, start)) break;
        i++;
    }
    tf_list_scan_done(&s);
}

static void
tf_list_head(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;

    /* $(list-head $(context-values T)), a context's first-seen value: the
     * first item is the oldest message's, so the others are not evaluated (a
     * summary of a context of 4,000 lines formatted 4,000 dates to keep one) */
    if (call->argc == 1) {
        struct buf *b = template_scratch_get();
        bool done = tf_context_values_oldest(template_only_call(call->argv[0]), env, b);
        if (done) list_nth(&b, 1, 0, out);
        template_scratch_put(b);
        if (done) return;
    }
    tfunc_args_eval(&a, call, 0, env);
    list_nth(a.b, a.n, 0, out);
    tfunc_args_release(&a);
}

/* Indices are read as 64-bit numbers and then used as C ints, as 3.38 does. */
static void
tf_list_nth(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    int64_t ndx;

    if (call->argc < 1) return;
    tfunc_args_eval(&a, call, 0, env);
    if (tf_num_parse_int(buf_str(a.b[0]), 10, &ndx)) list_nth(a.b + 1, a.n - 1, (int)ndx, out);
    tfunc_args_release(&a);
}

static void
tf_list_tail(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;

    tfunc_args_eval(&a, call, 0, env);
    list_slice(a.b, a.n, 1, INT_MAX, out);
    tfunc_args_release(&a);
}

/* $(list-slice FIRST:LAST LIST...), either bound may be left out. */
static void
tf_list_slice(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    struct buf *f;
    int64_t first = 0, last = INT_MAX;
    const char *spec, *colon;
    bool ok;

    if (call->argc < 1) return;
    tfunc_args_eval(&a, call, 0, env);
    spec = buf_str(a.b[0]);
    colon = strchr(spec, ':');
    f = template_scratch_get();
    buf_append(f, spec, colon ? (size_t)(colon - spec) : strlen(spec));
    ok = f->len == 0 || tf_num_parse_int(buf_str(f), 10, &first);
    if (ok && colon && colon[1]) ok = tf_num_parse_int(colon + 1, 10, &last);
    if (ok) list_slice(a.b + 1, a.n - 1, (int)first, (int)last, out);
    template_scratch_put(f);
    tfunc_args_release(&a);
}

enum smode { SM_LITERAL, SM_PREFIX, SM_SUBSTRING, SM_GLOB, SM_PCRE };

struct search_state {
    enum smode mode;
    int start;
    char *pattern;
    pcre2_code *re;
    pcre2_match_data *md;
    bool bad_mode;
    char *mode_name;
};

enum { LS_MODE, LS_START };

static const struct tfargs_opt search_opts[] = {
    {"mode", 0, TFARGS_STRING, LS_MODE},
    {"start-index", 0, TFARGS_INT, LS_START},
    {NULL, 0, TFARGS_FLAG, 0},
};

static bool
search_opt(void *ctx, int id, const char *sval, int ival, struct buf *err)
{
    struct search_state *st = ctx;

    (void)err;
    if (id == LS_START) {
        st->start = ival;
    } else {
        free(st->mode_name);
        st->mode_name = xstrdup(sval);
    }
    return true;
}

static void
search_free(void *p)
{
    struct search_state *st = p;

    free(st->pattern);
    free(st->mode_name);
    if (st->md) pcre2_match_data_free(st->md);
    if (st->re) pcre2_code_free(st->re);
    free(st);
}

/* $(list-search [--mode M] [--start-index N] PATTERN LIST...): PATTERN is literal text. */
static bool
search_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    static const char *const modes[] = {"literal", "prefix", "substring", "glob", "pcre"};
    struct search_state *st = xcalloc(1, sizeof(*st));
    char **args = tfargs_unquote(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos, i, ecode;
    PCRE2_SIZE eoff;
    bool ok = false;

    (void)raw;
    call->state = st;
    npos = tfargs_parse(args, argc, search_opts, search_opt, st, false, pos, err);
    if (npos < 0) goto out;
    st->mode = SM_LITERAL;
    if (st->mode_name) {
        for (i = 0; i < (int)ARRAY_LEN(modes); i++)
            if (!strcmp(st->mode_name, modes[i])) break;
        if (i == (int)ARRAY_LEN(modes)) {
            buf_printf(err,
                       "$(list-search) Invalid list-search mode: %s. Valid modes are: literal, "
                       "prefix, substring, glob, pcre",
                       st->mode_name);
            goto out;
        }
        st->mode = (enum smode)i;
    }
    if (npos < 1) {
        buf_printf(
            err,
            "$(list-search) Pattern is missing. Usage: $(list-search [options] <pattern> ${list})");
        goto out;
    }
    if (npos < 2) {
        buf_printf(
            err,
            "$(list-search) List is missing. Usage: $(list-search [options] <pattern> ${list}");
        goto out;
    }
    st->pattern = xstrdup(args[pos[0]]);
    if (st->mode == SM_PCRE) {
        st->re =
            pcre2_compile((PCRE2_SPTR)st->pattern, PCRE2_ZERO_TERMINATED, 0, &ecode, &eoff, NULL);
        if (!st->re) {
            buf_printf(err, "$(list-search) Failed to prepare pattern: %s", st->pattern);
            goto out;
        }
        st->md = pcre2_match_data_create_from_pattern(st->re, NULL);
    }
    ok = tfargs_compile_positionals(call, args, pos + 1, npos - 1, err);
out:
    free(pos);
    tfargs_free(argc, args);
    return ok;
}

static bool
search_match(const struct search_state *st, const struct buf *v)
{
    const char *s = buf_str(v);

    switch (st->mode) {
    case SM_LITERAL: return strcmp(s, st->pattern) == 0;
    case SM_PREFIX: return strncmp(s, st->pattern, strlen(st->pattern)) == 0;
    case SM_SUBSTRING: return strstr(s, st->pattern) != NULL;
    case SM_GLOB: return glob_match(st->pattern, v->p ? v->p : "", v->len);
    case SM_PCRE: return rematch(st->re, s, v->len, st->md) >= 0; /* bounded: rematch.h */
    }
    return false;
}

/* The index of the first matching item at or after --start-index (which also offsets the count). */
static void
tf_list_search(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct search_state *st = call->state;
    struct tfunc_args a;
    struct tf_list_scan s;
    int i, index = st->start;

    tfunc_args_eval(&a, call, 0, env);
    tf_list_scan_init(&s, a.b, a.n);
    for (i = 0; i < index && tf_list_scan_next(&s); i++) continue;
    while (tf_list_scan_next(&s)) {
        if (search_match(st, s.val)) {
            buf_printf(out, "%d", index);
            break;
        }
        index++;
    }
    tf_list_scan_done(&s);
    tfunc_args_release(&a);
}

/* $(explode SEP TEXT...): TEXT split at every SEP (a string), each piece a list item. */
static void
tf_explode(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    size_t start = out->len, slen;
    const char *sep;
    int i;

    if (call->argc < 1) return;
    tfunc_args_eval(&a, call, 0, env);
    sep = buf_str(a.b[0]);
    slen = strlen(sep);
    for (i = 1; i < a.n && slen; i++) {
        const char *s = buf_str(a.b[i]), *hit;
        if (!*s) continue; /* GLib splits "" into no pieces at all */
        for (;;) {
            hit = strstr(s, sep);
            tf_list_comma(out, start);
            tf_list_encode(out, s, hit ? (size_t)(hit - s) : strlen(s));
            if (tfunc_over_cap(out, start) || !hit) break;
            s = hit + slen;
        }
        if (out->len - start >= TF_MAX_OUTPUT) break;
    }
    tfunc_args_release(&a);
}

/* $(implode SEP LIST...): the items, decoded, joined with SEP. */
static void
tf_implode(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    struct tf_list_scan s;
    size_t start = out->len;

    if (call->argc < 1) return;
    tfunc_args_eval(&a, call, 0, env);
    tf_list_scan_init(&s, a.b + 1, a.n - 1);
    while (tf_list_scan_next(&s)) {
        /* as 3.38: no separator while nothing has been written (after empty items) */
        if (out->len > start) buf_append(out, a.b[0]->p, a.b[0]->len);
        buf_append(out, s.val->p, s.val->len);
        if (tfunc_over_cap(out, start)) break;
    }
    tf_list_scan_done(&s);
    tfunc_args_release(&a);
}

/* $(map TEMPLATE LIST), $(iterate TEMPLATE INITIAL): TEMPLATE sees the item/value as $_. */
struct map_state {
    struct template *t;
    struct buf cur; /* iterate: the value the next evaluation returns */
};

static void
map_free(void *p)
{
    struct map_state *st = p;

    template_free(st->t);
    buf_free(&st->cur);
    free(st);
}

static bool
no_opt(void *ctx, int id, const char *sval, int ival, struct buf *err)
{
    (void)ctx;
    (void)id;
    (void)sval;
    (void)ival;
    (void)err;
    return true;
}

static const struct tfargs_opt no_opts[] = {{NULL, 0, TFARGS_FLAG, 0}};

static bool
map_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct map_state *st;
    char **args;

    (void)raw;
    if (argc != 2) {
        buf_printf(err, "Wrong number of arguments. Example: $(map template list).");
        return false;
    }
    st = xcalloc(1, sizeof(*st));
    call->state = st;
    args = tfargs_unquote(argc, rawq);
    st->t = tfargs_template(args[0], err);
    if (st->t && tfargs_compile(call, args, 1, 2, err)) {
        tfargs_free(argc, args);
        return true;
    }
    tfargs_free(argc, args);
    return false;
}

/* As in 3.38 the template is evaluated on the oldest message of the set (its messages[0]). */
static void
tf_map(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct map_state *st = call->state;
    struct buf *list = tfunc_arg_get(call, 0, env), *b = template_scratch_get();
    struct template_env one;
    struct tf_list_scan s;
    size_t start = out->len;

    if (env->nmsgs)
        tfunc_env_one(&one, env, 0);
    else
        one = *env;
    tf_list_scan_init(&s, &list, 1);
    while (tf_list_scan_next(&s)) {
        one.context_id = buf_str(s.val);
        one.context_id_len = s.val->len;
        tf_list_comma(out, start);
        buf_reset(b);
        template_eval(st->t, &one, b);
        tf_list_encode(out, b->p, b->len);
        if (tfunc_over_cap(out, start)) break;
    }
    tf_list_scan_done(&s);
    template_scratch_put(b);
    template_scratch_put(list);
}

static bool
iterate_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct map_state *st = xcalloc(1, sizeof(*st));
    char **args = tfargs_unquote(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos;
    bool ok = false;

    (void)raw;
    call->state = st;
    npos = tfargs_parse(args, argc, no_opts, no_opt, NULL, false, pos, err);
    if (npos >= 0 && npos != 2)
        buf_printf(err, "Wrong number of arguments. Example: $(iterate template initial-value).");
    if (npos == 2) {
        st->t = tfargs_template(args[pos[0]], err);
        buf_puts(&st->cur, args[pos[1]]); /* the initial value is literal text */
        ok = st->t != NULL;
    }
    free(pos);
    tfargs_free(argc, args);
    return ok;
}

/*
 * Returns the current value, then replaces it with TEMPLATE evaluated with
 * $_ = that value (on the oldest message, as 3.38).  The state lives in the
 * compiled template, so it advances once per evaluation; it is capped at
 * TF_MAX_OUTPUT.
 */
static void
tf_iterate(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct map_state *st = call->state;
    struct buf *next = template_scratch_get();
    struct template_env one;

    buf_append(out, st->cur.p, st->cur.len);
    if (env->nmsgs)
        tfunc_env_one(&one, env, 0);
    else
        one = *env;
    one.context_id = buf_str(&st->cur);
    one.context_id_len = st->cur.len;
    template_eval(st->t, &one, next);
    if (next->len > TF_MAX_OUTPUT) buf_truncate(next, TF_MAX_OUTPUT);
    buf_reset(&st->cur);
    buf_append(&st->cur, next->p, next->len);
    template_scratch_put(next);
}

static bool
map_refs(const struct tfunc_call *call, unsigned char *keep)
{
    const struct map_state *st = call->state;

    return !st || template_refs(st->t, keep);
}

const struct tfunc tf_list_funcs[] = {
    {"implode", 0, -1, NULL, tf_implode, NULL, NULL},
    {"explode", 0, -1, NULL, tf_explode, NULL, NULL},
    {"list-concat", 0, -1, NULL, tf_list_concat, NULL, NULL},
    {"list-head", 0, -1, NULL, tf_list_head, NULL, NULL},
    {"list-nth", 0, -1, NULL, tf_list_nth, NULL, NULL},
    {"list-tail", 0, -1, NULL, tf_list_tail, NULL, NULL},
    {"list-slice", 0, -1, NULL, tf_list_slice, NULL, NULL},
    {"list-count", 0, -1, NULL, tf_list_count, NULL, NULL},
    {"list-append", 0, -1, NULL, tf_list_append, NULL, NULL},
    {"list-search", 0, -1, search_prepare, tf_list_search, search_free, NULL},
    {"map", 0, -1, map_prepare, tf_map, map_free, map_refs},
    {"iterate", 0, -1, iterate_prepare, tf_iterate, map_free, map_refs},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};
