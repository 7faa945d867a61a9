/*
 * template: compiler and evaluator for syslog-ng templates.
 *
 * A template compiles to a flat list of elements (literal text, a value
 * reference, a macro, a function call).  Evaluation walks the list and
 * appends to an output buffer; values are looked up by handle, so evaluating
 * "${user}@${host}" costs two array scans and two memcpy calls.
 *
 * Parsing follows syslog-ng 3.38 as observed with pdbtool: "$$" is a dollar,
 * "$name" takes [A-Za-z0-9_], "${name}@N" is a back-reference (only after the
 * braced form; "${name}@@" yields one '@'), a '$' that starts nothing is
 * literal, function arguments split like a shell command line but keep
 * parenthesised groups together.
 */
#include "engine/template.h"
#include "engine/macros.h"
#include "engine/tfunc.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

enum elem_kind { E_TEXT, E_VALUE, E_MACRO, E_FUNC };

struct elem {
    enum elem_kind kind;
    uint32_t backref; /* @N: 0 is the current message */
    union {
        struct {
            size_t off, len; /* into tpl->text */
        } text;
        struct {
            nv_handle h;
            struct template *def; /* ${name:-default} */
        } value;
        struct {
            int id;
            struct template *def;
        } macro;
        struct tfunc_call func;
    } u;
};

struct template
{
    char *source;
    struct elem *elems;
    size_t nelems, cap;
    struct buf text; /* literal runs */
};

/* Nested function calls deeper than this are refused (bounds the evaluator's recursion). */
#define MAX_DEPTH 32

static struct template *compile(const char *src, size_t len, int depth, struct buf *err);

const struct tfunc_call *
template_only_call(const struct template *t)
{
    return t && t->nelems == 1 && t->elems[0].kind == E_FUNC ? &t->elems[0].u.func : NULL;
}

static struct elem *
add_elem(struct template *t, enum elem_kind kind)
{
    struct elem *e;

    t->elems = xgrow(t->elems, &t->cap, t->nelems + 1, sizeof(*t->elems));
    e = &t->elems[t->nelems++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    return e;
}

static void
add_text(struct template *t, const char *s, size_t len)
{
    struct elem *last = t->nelems ? &t->elems[t->nelems - 1] : NULL;

    if (!len) return;
    if (last && last->kind == E_TEXT && last->u.text.off + last->u.text.len == t->text.len) {
        last->u.text.len += len;
    } else {
        struct elem *e = add_elem(t, E_TEXT);
        e->u.text.off = t->text.len;
        e->u.text.len = len;
    }
    buf_append(&t->text, s, len);
}

static inline bool
is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool
add_reference(struct template *t, const char *name, size_t len, const char *def, size_t deflen,
              struct buf *err)
{
    int id = macro_lookup(name, len);
    struct template *dt = NULL;
    struct elem *e;

    if (def) {
        /* a literal template: the default is used as written */
        dt = xcalloc(1, sizeof(*dt));
        dt->source = xstrndup(def, deflen);
        add_text(dt, def, deflen);
    }
    if (id >= 0) {
        e = add_elem(t, E_MACRO);
        e->u.macro.id = id;
        e->u.macro.def = dt;
        return true;
    }
    e = add_elem(t, E_VALUE);
    e->u.value.h = nv_intern(name, len);
    e->u.value.def = dt;
    if (!e->u.value.h) {
        buf_printf(err, "too many distinct value names");
        return false;
    }
    return true;
}

/*
 * Finds the ')' closing the function call that starts at src[start] (just
 * after "$(").  Quotes and nested parentheses are honoured.
 */
static bool
find_close(const char *src, size_t len, size_t start, size_t *close)
{
    size_t i = start;
    int nest = 1;

    while (i < len) {
        char c = src[i];
        if (c == '\\' && i + 1 < len) {
            i += 2;
            continue;
        }
        if (c == '"' || c == '\'') {
            /* syslog-ng 3.38: a quote runs to the next quote of its kind, no escapes inside */
            const char *q = memchr(src + i + 1, c, len - i - 1);
            if (!q) return false;
            i = (size_t)(q - src) + 1;
            continue;
        }
        if (c == '(')
            nest++;
        else if (c == ')' && --nest == 0) {
            *close = i;
            return true;
        }
        i++;
    }
    return false;
}

/*
 * Splits a function call into words: whitespace separates them, except inside
 * quotes or parentheses.  A quote runs to the next quote of its kind and is
 * removed; a backslash outside quotes escapes the next character; inside
 * parentheses (a nested call or a filter) everything is kept as written.
 * raw receives each word unquoted, rawq as written.
 */
static int
split_args(const char *s, size_t len, char ***raw, char ***rawq)
{
    size_t i = 0, cap = 0;
    int n = 0;
    struct buf arg = BUF_INIT;

    *raw = NULL;
    *rawq = NULL;
    for (;;) {
        size_t start;
        int nest = 0;

        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
        if (i >= len) break;
        start = i;
        buf_reset(&arg);
        while (i < len) {
            char c = s[i];
            if (nest == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) break;
            if (nest > 0) {
                if (c == '(') nest++;
                if (c == ')') nest--;
                buf_putc(&arg, c);
                i++;
            } else if (c == '\\' && i + 1 < len) {
                buf_putc(&arg, s[i + 1]);
                i += 2;
            } else if (c == '\'' || c == '"') {
                for (i++; i < len && s[i] != c; i++) buf_putc(&arg, s[i]);
                i++;
            } else {
                if (c == '(') nest++;
                buf_putc(&arg, c);
                i++;
            }
        }
        if (i > len) i = len;
        if ((size_t)n + 1 > cap) {
            size_t c2 = cap;
            *raw = xgrow(*raw, &cap, (size_t)n + 1, sizeof(char *));
            *rawq = xgrow(*rawq, &c2, (size_t)n + 1, sizeof(char *));
        }
        (*raw)[n] = xstrndup(buf_str(&arg), arg.len);
        (*rawq)[n] = xstrndup(s + start, i - start);
        n++;
    }
    buf_free(&arg);
    return n;
}

static bool
add_function(struct template *t, const char *s, size_t len, int depth, struct buf *err)
{
    const struct tfunc *fn;
    struct elem *e;
    char **raw, **rawq;
    int argc, k;
    bool ok = true;

    /* the function name is the first word, quotes allowed ($("echo" a) works in 3.38) */
    argc = split_args(s, len, &raw, &rawq);
    if (argc == 0) {
        /* "$()" expands to nothing */
        free(raw);
        free(rawq);
        return true;
    }
    fn = tfunc_lookup(raw[0], strlen(raw[0]));
    if (!fn) {
        buf_printf(err, "unknown template function \"%s\"", raw[0]);
        ok = false;
        goto out;
    }
    if (argc - 1 < fn->min_args || (fn->max_args >= 0 && argc - 1 > fn->max_args)) {
        if (fn->max_args == fn->min_args)
            buf_printf(err, "$(%s) takes %d argument%s, %d given", fn->name, fn->min_args,
                       fn->min_args == 1 ? "" : "s", argc - 1);
        else if (fn->max_args < 0)
            buf_printf(err, "$(%s) takes at least %d argument%s, %d given", fn->name, fn->min_args,
                       fn->min_args == 1 ? "" : "s", argc - 1);
        else
            buf_printf(err, "$(%s) takes %d to %d arguments, %d given", fn->name, fn->min_args,
                       fn->max_args, argc - 1);
        ok = false;
        goto out;
    }

    e = add_elem(t, E_FUNC);
    e->u.func.fn = fn;
    if (fn->prepare) {
        ok = fn->prepare(&e->u.func, argc - 1, raw + 1, rawq + 1, err);
    } else {
        e->u.func.argc = argc - 1;
        e->u.func.argv = xcalloc((size_t)argc, sizeof(struct template *));
        for (k = 1; k < argc && ok; k++) {
            e->u.func.argv[k - 1] = compile(raw[k], strlen(raw[k]), depth + 1, err);
            if (!e->u.func.argv[k - 1]) ok = false;
        }
    }
out:
    for (k = 0; k < argc; k++) {
        free(raw[k]);
        free(rawq[k]);
    }
    free(raw);
    free(rawq);
    return ok;
}

/*
 * The suffix after "${name}" or "$(...)": "@N" makes the reference look N
 * messages back in the context, "@@" is one literal '@'.
 */
static size_t
parse_backref(struct template *t, const char *src, size_t len, size_t i, bool have_elem)
{
    if (i >= len || src[i] != '@') return i;
    if (i + 1 < len && src[i + 1] >= '0' && src[i + 1] <= '9') {
        uint32_t n = 0;
        i++;
        while (i < len && src[i] >= '0' && src[i] <= '9') {
            if (n < 100000000) n = n * 10 + (uint32_t)(src[i] - '0');
            i++;
        }
        if (have_elem) t->elems[t->nelems - 1].backref = n;
    } else if (i + 1 < len && src[i + 1] == '@') {
        add_text(t, "@", 1);
        i += 2;
    }
    return i;
}

static struct template *
compile(const char *src, size_t len, int depth, struct buf *err)
{
    struct template *t;
    size_t i = 0;

    if (depth > MAX_DEPTH) {
        buf_printf(err, "template nested too deeply");
        return NULL;
    }
    t = xcalloc(1, sizeof(*t));
    t->source = xstrndup(src, len);
    while (i < len) {
        size_t run = i;
        while (run < len && src[run] != '$') run++;
        add_text(t, src + i, run - i);
        i = run;
        if (i >= len) break;

        /* src[i] == '$' */
        if (i + 1 >= len) {
            add_text(t, "$", 1);
            i++;
        } else if (src[i + 1] == '$') {
            add_text(t, "$", 1);
            i += 2;
        } else if (src[i + 1] == '{') {
            const char *close = memchr(src + i + 2, '}', len - i - 2);
            const char *name = src + i + 2, *def = NULL;
            size_t nlen, deflen = 0, k;

            if (!close) {
                buf_printf(err, "'}' is missing after '${' at offset %zu", i);
                goto fail;
            }
            nlen = (size_t)(close - name);
            for (k = 0; k < nlen; k++)
                if (name[k] == ':') {
                    if (k + 1 < nlen && name[k + 1] == '-') {
                        /* ${name:-default}: the default is plain text, as in 3.38 */
                        def = name + k + 2;
                        deflen = nlen - k - 2;
                        nlen = k;
                        break;
                    }
                    buf_printf(err,
                               "unknown substitution '%.*s' in '${%.*s}' (only ':-' is supported)",
                               (int)(nlen - k), name + k, (int)nlen, name);
                    goto fail;
                }
            if (!add_reference(t, name, nlen, def, deflen, err)) goto fail;
            i = parse_backref(t, src, len, (size_t)(close - src) + 1, true);
        } else if (src[i + 1] == '(') {
            size_t close;
            if (!find_close(src, len, i + 2, &close)) {
                buf_printf(err, "unbalanced '(' in function call at offset %zu", i);
                goto fail;
            }
            {
                size_t before = t->nelems;
                if (!add_function(t, src + i + 2, close - i - 2, depth, err)) goto fail;
                i = parse_backref(t, src, len, close + 1, t->nelems > before);
            }
        } else if (is_name_char(src[i + 1])) {
            size_t end = i + 1;
            while (end < len && is_name_char(src[end])) end++;
            if (!add_reference(t, src + i + 1, end - i - 1, NULL, 0, err)) goto fail;
            i = end;
        } else {
            add_text(t, "$", 1);
            i++;
        }
    }
    return t;

fail:
    template_free(t);
    return NULL;
}

struct template *
template_compile(const char *src, size_t len, struct buf *err)
{
    return compile(src, len, 0, err);
}

struct template *
template_compile_str(const char *src, struct buf *err)
{
    return compile(src, strlen(src), 0, err);
}

void
template_free(struct template *t)
{
    size_t i;
    int k;

    if (!t) return;
    for (i = 0; i < t->nelems; i++) {
        struct elem *e = &t->elems[i];
        switch (e->kind) {
        case E_VALUE: template_free(e->u.value.def); break;
        case E_MACRO: template_free(e->u.macro.def); break;
        case E_FUNC:
            for (k = 0; k < e->u.func.argc; k++) template_free(e->u.func.argv[k]);
            free(e->u.func.argv);
            if (e->u.func.state && e->u.func.fn->free_state)
                e->u.func.fn->free_state(e->u.func.state);
            break;
        default: break;
        }
    }
    free(t->elems);
    free(t->source);
    buf_free(&t->text);
    free(t);
}

const char *
template_source(const struct template *t)
{
    return t->source;
}

bool
template_is_literal(const struct template *t, const char **text, size_t *len)
{
    if (t->nelems > 1 || (t->nelems == 1 && t->elems[0].kind != E_TEXT)) return false;
    *text = buf_str(&t->text);
    *len = t->text.len;
    return true;
}

void
template_env_single(struct template_env *env, struct msg *const *m)
{
    memset(env, 0, sizeof(*env));
    env->msgs = m;
    env->nmsgs = 1;
}

bool
template_values_only(const struct template *t)
{
    size_t i;

    /* a ${name:-default}'s default is plain text */
    for (i = 0; i < t->nelems; i++)
        if (t->elems[i].kind != E_TEXT && t->elems[i].kind != E_VALUE) return false;
    return true;
}

bool
template_refs(const struct template *t, unsigned char *keep)
{
    size_t i;

    if (!t) return true;
    for (i = 0; i < t->nelems; i++) {
        const struct elem *e = &t->elems[i];
        switch (e->kind) {
        case E_TEXT: break;
        case E_VALUE: keep[e->u.value.h] = 1; break;
        case E_MACRO:
            if (!macro_refs(e->u.macro.id, keep)) return false;
            break;
        case E_FUNC:
            if (!tfunc_refs(&e->u.func, keep)) return false;
            break;
        }
    }
    return true;
}

static struct msg *
pick(const struct template_env *env, uint32_t backref)
{
    if (backref >= env->nmsgs) return NULL;
    return env->msgs[env->nmsgs - 1 - backref];
}

void
template_eval(const struct template *t, const struct template_env *env, struct buf *out)
{
    size_t i;

    for (i = 0; i < t->nelems; i++) {
        const struct elem *e = &t->elems[i];
        struct msg *m;
        const char *v;
        size_t vlen, before;

        switch (e->kind) {
        case E_TEXT: buf_append(out, t->text.p + e->u.text.off, e->u.text.len); break;
        case E_VALUE:
            /* a reference past the start of the context is empty, default included (3.38) */
            m = pick(env, e->backref);
            if (!m) break;
            v = msg_get(m, e->u.value.h, &vlen);
            if (v && vlen)
                buf_append(out, v, vlen);
            else if (e->u.value.def)
                template_eval(e->u.value.def, env, out);
            break;
        case E_MACRO:
            m = pick(env, e->backref);
            if (!m && e->backref) break;
            before = out->len;
            macro_eval(e->u.macro.id, env, m, out);
            if (out->len == before && e->u.macro.def) template_eval(e->u.macro.def, env, out);
            break;
        case E_FUNC:
            if (e->backref == 0) {
                e->u.func.fn->eval(&e->u.func, env, out);
            } else if (e->backref < env->nmsgs) {
                /* $(f ...)@N sees the context as it was N messages ago */
                struct template_env back = *env;
                back.nmsgs -= e->backref;
                e->u.func.fn->eval(&e->u.func, &back, out);
            }
            break;
        }
    }
}

void
tfunc_arg(const struct tfunc_call *call, int i, const struct template_env *env, struct buf *out)
{
    if (i < call->argc && call->argv && call->argv[i]) template_eval(call->argv[i], env, out);
}

/* ---- scratch buffers ---- */

/* per thread: the parallel engine (par.c) evaluates templates on several threads */
static _Thread_local struct buf *scratch[64];
static _Thread_local int nscratch;

void
template_scratch_release(void)
{
    while (nscratch > 0) {
        struct buf *b = scratch[--nscratch];
        buf_free(b);
        free(b);
    }
}

struct buf *
template_scratch_get(void)
{
    struct buf *b;

    if (nscratch > 0) {
        b = scratch[--nscratch];
    } else {
        b = xmalloc(sizeof(*b));
        buf_init(b);
    }
    buf_reset(b);
    return b;
}

void
template_scratch_put(struct buf *b)
{
    if (nscratch < (int)(sizeof(scratch) / sizeof(scratch[0])) && b->cap <= 65536) {
        scratch[nscratch++] = b;
    } else {
        buf_free(b);
        free(b);
    }
}
