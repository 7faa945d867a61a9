/*
 * tfargs: template-function arguments as syslog-ng 3.38 sees them: the text
 * re-derived from what was written (3.38 unquotes differently from corral's
 * template parser), options parsed the way GLib's GOption does because 3.38
 * relies on GOption, and sub-templates compiled with a nesting bound.
 */
#include "engine/tfargs.h"
#include "engine/filter.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/*
 * prepare() compiles sub-templates with template_compile(), which starts counting
 * nesting afresh; this bounds how deep such compiles may nest so a hostile
 * template cannot exhaust the stack.
 */
#define MAX_PREPARE_DEPTH 16
static int prepare_depth;

/*
 * Re-derives the argument string 3.38 hands to a function from the text as
 * written: quotes are removed at the top level only (nested parentheses keep
 * theirs), a quoted run ends at the next identical quote (no escapes inside),
 * and a backslash outside quotes takes the next character literally.
 */
static char *
sng_unquote(const char *s)
{
    struct buf b = BUF_INIT;
    size_t i = 0, n = strlen(s);
    int nest = 0;
    char *r;

    while (i < n) {
        char c = s[i];
        if (c == '\\') {
            if (i + 1 < n) buf_putc(&b, s[i + 1]);
            i += 2;
        } else if (c == '"' || c == '\'') {
            const char *q = memchr(s + i + 1, c, n - i - 1);
            size_t end = q ? (size_t)(q - s) : n;
            if (nest == 0)
                buf_append(&b, s + i + 1, end - i - 1);
            else
                buf_append(&b, s + i, (q ? end + 1 : n) - i);
            i = q ? end + 1 : n;
        } else {
            if (c == '(') nest++;
            if (c == ')' && nest > 0) nest--;
            buf_putc(&b, c);
            i++;
        }
    }
    r = xstrndup(buf_str(&b), b.len);
    buf_free(&b);
    return r;
}

/* The unquoted arguments of a prepare() call; freed with tfargs_free(). */
char **
tfargs_unquote(int argc, char **rawq)
{
    char **a = xcalloc((size_t)argc + 1, sizeof(char *));
    int i;

    for (i = 0; i < argc; i++) a[i] = sng_unquote(rawq[i]);
    return a;
}

void
tfargs_free(int argc, char **a)
{
    int i;

    for (i = 0; i < argc; i++) free(a[i]);
    free(a);
}

struct template *
tfargs_template(const char *src, struct buf *err)
{
    struct template *t;

    if (prepare_depth >= MAX_PREPARE_DEPTH) {
        buf_printf(err, "template functions nested too deeply");
        return NULL;
    }
    prepare_depth++;
    t = template_compile_str(src, err);
    prepare_depth--;
    return t;
}

struct filter *
tfargs_filter(const char *fname, const char *src, struct buf *err)
{
    struct buf *e = template_scratch_get();
    struct filter *f = NULL;

    if (prepare_depth >= MAX_PREPARE_DEPTH) {
        buf_printf(err, "template functions nested too deeply");
    } else {
        prepare_depth++;
        f = filter_compile(src, strlen(src), e);
        prepare_depth--;
        if (!f)
            buf_printf(err, "$(%s) Error parsing conditional filter expression: %s", fname,
                       buf_str(e));
    }
    template_scratch_put(e);
    return f;
}

/* Compiles args[from..argc) into call->argv, which template.c frees. */
bool
tfargs_compile(struct tfunc_call *call, char **args, int from, int argc, struct buf *err)
{
    int i;

    call->argc = argc > from ? argc - from : 0;
    call->argv = xcalloc((size_t)call->argc + 1, sizeof(struct template *));
    for (i = 0; i < call->argc; i++) {
        call->argv[i] = tfargs_template(args[from + i], err);
        if (!call->argv[i]) return false;
    }
    return true;
}

static const struct tfargs_opt *
opt_find(const struct tfargs_opt *defs, const char *name, size_t len, char letter)
{
    for (; defs->name; defs++)
        if (name ? strlen(defs->name) == len && memcmp(defs->name, name, len) == 0
                 : letter == defs->letter)
            return defs;
    return NULL;
}

static bool
opt_value(const struct tfargs_opt *d, const char *shown, const char *val, tfargs_cb cb, void *ctx,
          struct buf *err)
{
    char *end;
    long v;

    if (d->kind == TFARGS_STRING) return cb(ctx, d->id, val, 0, err);
    if (d->kind == TFARGS_FLAG) return cb(ctx, d->id, NULL, 0, err);
    errno = 0;
    v = strtol(val, &end, 0);
    if (!*val || *end) {
        buf_printf(err, "Cannot parse integer value \xe2\x80\x9c%s\xe2\x80\x9d for %s", val, shown);
        return false;
    }
    if (errno == ERANGE || v > INT_MAX || v < INT_MIN) {
        buf_printf(err, "Integer value \xe2\x80\x9c%s\xe2\x80\x9d for %s out of range", val, shown);
        return false;
    }
    return cb(ctx, d->id, val, (int)v, err);
}

/*
 * Parses args[0..argc); positional arguments go to pos[] (indices) or, with
 * rest_to_cb, to the callback as TFARGS_REST.  Returns the number of
 * positionals, -1 on error.
 */
int
tfargs_parse(char **args, int argc, const struct tfargs_opt *defs, tfargs_cb cb, void *ctx,
             bool rest_to_cb, int *pos, struct buf *err)
{
    int i, npos = 0, sep = -1;
    bool stop = false, keep_sep = false;

    for (i = 0; i < argc; i++) {
        const char *a = args[i];

        if (!stop && a[0] == '-' && a[1]) {
            if (a[1] == '-') {
                const char *name = a + 2, *eq = strchr(name, '=');
                size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
                const struct tfargs_opt *d;

                if (!*name) {
                    stop = true;
                    /* with a handler for the rest GOption drops the "--" in any case */
                    if (!rest_to_cb) {
                        sep = npos;
                        pos[npos++] = i;
                    }
                    continue;
                }
                d = opt_find(defs, name, nlen, 0);
                if (!d) {
                    buf_printf(err, "Unknown option %s", a);
                    return -1;
                }
                if (d->kind == TFARGS_FLAG) {
                    if (!opt_value(d, a, NULL, cb, ctx, err)) return -1;
                } else if (eq) {
                    if (!opt_value(d, a, eq + 1, cb, ctx, err)) return -1;
                } else if (i + 1 < argc) {
                    i++;
                    if (!opt_value(d, a, args[i], cb, ctx, err)) return -1;
                } else {
                    buf_printf(err, "Missing argument for %s", a);
                    return -1;
                }
            } else {
                int next = i + 1;
                const char *c;

                /* check the whole group first: GOption refuses it if any letter is unknown */
                for (c = a + 1; *c; c++)
                    if (!opt_find(defs, NULL, 0, *c)) {
                        buf_printf(err, "Unknown option %s", a);
                        return -1;
                    }
                for (c = a + 1; *c; c++) {
                    const struct tfargs_opt *d = opt_find(defs, NULL, 0, *c);
                    char shown[3] = {'-', *c, 0};
                    if (d->kind == TFARGS_FLAG) {
                        if (!opt_value(d, shown, NULL, cb, ctx, err)) return -1;
                    } else if (next < argc) {
                        if (!opt_value(d, shown, args[next++], cb, ctx, err)) return -1;
                    } else {
                        buf_printf(err, "Missing argument for %s", shown);
                        return -1;
                    }
                }
                i = next - 1;
            }
            continue;
        }
        if (rest_to_cb) {
            if (!cb(ctx, TFARGS_REST, a, 0, err)) return -1;
        } else {
            if (stop && a[0] == '-') keep_sep = true;
            pos[npos++] = i;
        }
    }
    if (sep >= 0 && !keep_sep) {
        memmove(&pos[sep], &pos[sep + 1], (size_t)(npos - sep - 1) * sizeof(int));
        npos--;
    }
    return npos;
}

/* Collects the positional arguments as call->argv after options have been parsed. */
bool
tfargs_compile_positionals(struct tfunc_call *call, char **args, const int *pos, int npos,
                           struct buf *err)
{
    int i;

    call->argc = npos;
    call->argv = xcalloc((size_t)npos + 1, sizeof(struct template *));
    for (i = 0; i < npos; i++) {
        call->argv[i] = tfargs_template(args[pos[i]], err);
        if (!call->argv[i]) return false;
    }
    return true;
}
