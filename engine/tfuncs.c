/*
 * tfuncs: the template functions, $(name args...), that syslog-ng 3.38 offers
 * to patterndb rules: its basicfuncs module plus the context functions.
 * Behaviour, quirks included, follows what 3.38 does as observed with
 * pdbtool; the places that differ on purpose say so ("deviation").
 *
 * Shared conventions:
 *  - syslog-ng lists are comma separated, an item quoted when it holds a
 *    comma, a quote, whitespace or a backslash; list_encode() and struct
 *    lscan reproduce 3.38's encoder and scanner.
 *  - Functions that need raw arguments (options, filter expressions, literal
 *    strings) have a prepare().  It re-derives the argument strings 3.38
 *    would see from the text as written (sng_unquote) and parses options the
 *    way GLib's GOption does, because 3.38 relies on GOption.
 *  - Output added by one call is capped at TF_MAX_OUTPUT, so a template
 *    cannot make memory use explode (a list map, an iterate chain).
 */
#include "engine/tfunc.h"
#include "engine/filter.h"
#include "engine/macros.h"
#include "engine/xalloc.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <arpa/inet.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Most bytes a single function call may add to its output. */
#define TF_MAX_OUTPUT (1024u * 1024u)

/*
 * prepare() compiles sub-templates with tpl_compile(), which starts counting
 * nesting afresh; this bounds how deep such compiles may nest so a hostile
 * template cannot exhaust the stack.
 */
#define MAX_PREPARE_DEPTH 16
static int prepare_depth;

/* ---- small helpers ---- */

/* Cuts what a call added beyond TF_MAX_OUTPUT; true when it had to. */
static bool
over_cap(struct buf *out, size_t start)
{
    if (out->len - start <= TF_MAX_OUTPUT) return false;
    buf_truncate(out, start + TF_MAX_OUTPUT);
    return true;
}

/* Evaluates argument i into a borrowed scratch buffer. */
static struct buf *
arg_get(const struct tfunc_call *call, int i, const struct tpl_env *env)
{
    struct buf *b = tpl_scratch_get();

    tfunc_arg(call, i, env, b);
    return b;
}

/* All arguments from `first` on, evaluated once (3.38 evaluates each argument once per call). */
struct argbufs {
    struct buf *inl[8];
    struct buf **b;
    int n;
};

static void
args_eval(struct argbufs *a, const struct tfunc_call *call, int first, const struct tpl_env *env)
{
    int i;

    a->n = call->argc > first ? call->argc - first : 0;
    a->b = a->n <= (int)ARRAY_LEN(a->inl) ? a->inl : xmalloc((size_t)a->n * sizeof(*a->b));
    for (i = 0; i < a->n; i++) a->b[i] = arg_get(call, first + i, env);
}

static void
args_release(struct argbufs *a)
{
    int i;

    for (i = 0; i < a->n; i++) tpl_scratch_put(a->b[i]);
    if (a->b != a->inl) free(a->b);
}

/* The environment of message i of env alone; $CONTEXT_ID and the clock stay. */
static void
env_one(struct tpl_env *one, const struct tpl_env *env, size_t i)
{
    *one = *env;
    one->msgs = &env->msgs[i];
    one->nmsgs = 1;
}

/* Appends the comma between list items unless the output already ends in one (as 3.38). */
static void
list_comma(struct buf *out, size_t start)
{
    if (out->len > start && out->p[out->len - 1] != ',') buf_putc(out, ',');
}

/* ---- numbers ---- */

/* strtoll over the whole string (leading blanks and a sign allowed), as 3.38's parse_dec_number. */
static bool
parse_int(const char *s, int base, int64_t *v)
{
    char *end;
    long long x;

    errno = 0;
    x = strtoll(s, &end, base);
    if (errno == ERANGE || errno == EINVAL || end == s || *end) return false;
    *v = x;
    return true;
}

static bool
parse_double(const char *s, double *v)
{
    char *end;
    double x;

    errno = 0;
    x = strtod(s, &end);
    /* 3.38 refuses overflow and underflow alike */
    if (errno == ERANGE || end == s || *end) return false;
    *v = x;
    return true;
}

/* An integer when the text is a decimal integer, a double otherwise. */
struct number {
    bool is_float;
    int64_t i;
    double d;
};

static bool
parse_number(const char *s, struct number *n)
{
    n->is_float = false;
    if (parse_int(s, 10, &n->i)) return true;
    n->is_float = true;
    return parse_double(s, &n->d);
}

static double
number_d(const struct number *n)
{
    return n->is_float ? n->d : (double)n->i;
}

/*
 * Converts like x86-64's cvttsd2si, which is what 3.38 prints: out of range and NaN give
 * INT64_MIN.
 */
static int64_t
double_to_int64(double d)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)d;
}

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 character at p (no overlong, surrogate, > U+10FFFF); 0 if invalid. */
static size_t
utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
    uint32_t c;
    size_t len, i;

    if (!n) return 0;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
        c = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        c = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        c = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* How far GLib's g_utf8_next_char() steps from a lead byte (it trusts the lead byte). */
static size_t
glib_skip(unsigned char c)
{
    if (c < 0xc0) return 1;
    if (c < 0xe0) return 2;
    if (c < 0xf0) return 3;
    if (c < 0xf8) return 4;
    if (c < 0xfc) return 5;
    if (c < 0xfe) return 6;
    return 1;
}

static void
utf8_put(struct buf *out, uint32_t c)
{
    char s[4];

    if (c < 0x80) {
        buf_putc(out, (char)c);
    } else if (c < 0x800) {
        s[0] = (char)(0xc0 | (c >> 6));
        s[1] = (char)(0x80 | (c & 0x3f));
        buf_append(out, s, 2);
    } else if (c < 0x10000) {
        s[0] = (char)(0xe0 | (c >> 12));
        s[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        s[2] = (char)(0x80 | (c & 0x3f));
        buf_append(out, s, 3);
    } else {
        s[0] = (char)(0xf0 | (c >> 18));
        s[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        s[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        s[3] = (char)(0x80 | (c & 0x3f));
        buf_append(out, s, 4);
    }
}

/* ---- syslog-ng lists ---- */

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

/*
 * Appends one list item: as is when it is plain, else in single quotes when
 * it holds only double quotes, else in double quotes; the empty item is "".
 */
static void
list_encode(struct buf *out, const char *s, size_t len)
{
    bool apos, quote;
    size_t i;

    if (len == 0) {
        buf_puts(out, "\"\"");
        return;
    }
    apos = memchr(s, '\'', len) != NULL;
    quote = memchr(s, '"', len) != NULL;
    if (!apos && !quote) {
        for (i = 0; i < len; i++)
            if (s[i] && strchr("\b\f\n\r\t\\ ,", s[i])) break;
        if (i == len) {
            buf_append(out, s, len);
            return;
        }
    }
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
struct lscan {
    struct buf **args;
    int nargs, ai;
    const char *p, *end;
    struct buf *val;
};

static void
lscan_init(struct lscan *s, struct buf **args, int nargs)
{
    s->args = args;
    s->nargs = nargs;
    s->ai = 0;
    s->p = nargs ? buf_str(args[0]) : NULL;
    s->end = nargs ? s->p + args[0]->len : NULL;
    s->val = tpl_scratch_get();
}

static void
lscan_done(struct lscan *s)
{
    tpl_scratch_put(s->val);
}

static bool
lscan_next(struct lscan *s)
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
    struct lscan s;
    int n = 0;

    lscan_init(&s, args, nargs);
    while (lscan_next(&s)) n++;
    lscan_done(&s);
    return n;
}

/* ---- compile-time helpers for prepare() ---- */

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

/* The unquoted arguments of a prepare() call; freed with free_args(). */
static char **
unquote_args(int argc, char **rawq)
{
    char **a = xcalloc((size_t)argc + 1, sizeof(char *));
    int i;

    for (i = 0; i < argc; i++) a[i] = sng_unquote(rawq[i]);
    return a;
}

static void
free_args(int argc, char **a)
{
    int i;

    for (i = 0; i < argc; i++) free(a[i]);
    free(a);
}

static struct tpl *
compile_tpl(const char *src, struct buf *err)
{
    struct tpl *t;

    if (prepare_depth >= MAX_PREPARE_DEPTH) {
        buf_printf(err, "template functions nested too deeply");
        return NULL;
    }
    prepare_depth++;
    t = tpl_compile_str(src, err);
    prepare_depth--;
    return t;
}

static struct filter *
compile_filter(const char *fname, const char *src, struct buf *err)
{
    struct buf *e = tpl_scratch_get();
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
    tpl_scratch_put(e);
    return f;
}

/* Compiles args[from..argc) into call->argv, which template.c frees. */
static bool
compile_call_args(struct tfunc_call *call, char **args, int from, int argc, struct buf *err)
{
    int i;

    call->argc = argc > from ? argc - from : 0;
    call->argv = xcalloc((size_t)call->argc + 1, sizeof(struct tpl *));
    for (i = 0; i < call->argc; i++) {
        call->argv[i] = compile_tpl(args[from + i], err);
        if (!call->argv[i]) return false;
    }
    return true;
}

/*
 * Option parsing as GLib's GOption does it for 3.38's functions: "--name
 * value", "--name=value", "-x value", grouped short flags ("-cC"), options
 * anywhere among the arguments, "--" ends the options.  GOption drops the
 * "--" itself unless an argument after it starts with '-'.
 */
enum opt_kind { OPT_FLAG, OPT_STRING, OPT_INT };

/* A positional argument handed to the callback (GOption's G_OPTION_REMAINING). */
#define OPT_REST (-1)

struct opt_def {
    const char *name;
    char letter;
    enum opt_kind kind;
    int id;
};

typedef bool (*opt_cb)(void *ctx, int id, const char *sval, int ival, struct buf *err);

static const struct opt_def *
opt_find(const struct opt_def *defs, const char *name, size_t len, char letter)
{
    for (; defs->name; defs++)
        if (name ? strlen(defs->name) == len && memcmp(defs->name, name, len) == 0
                 : letter == defs->letter)
            return defs;
    return NULL;
}

static bool
opt_value(const struct opt_def *d, const char *shown, const char *val, opt_cb cb, void *ctx,
          struct buf *err)
{
    char *end;
    long v;

    if (d->kind == OPT_STRING) return cb(ctx, d->id, val, 0, err);
    if (d->kind == OPT_FLAG) return cb(ctx, d->id, NULL, 0, err);
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
 * rest_to_cb, to the callback as OPT_REST.  Returns the number of
 * positionals, -1 on error.
 */
static int
parse_options(char **args, int argc, const struct opt_def *defs, opt_cb cb, void *ctx,
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
                const struct opt_def *d;

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
                if (d->kind == OPT_FLAG) {
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
                    const struct opt_def *d = opt_find(defs, NULL, 0, *c);
                    char shown[3] = {'-', *c, 0};
                    if (d->kind == OPT_FLAG) {
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
            if (!cb(ctx, OPT_REST, a, 0, err)) return -1;
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

/* ---- glob patterns: GLib's GPatternSpec, '*' and '?' (one UTF-8 character), no escapes ---- */

static bool
glob_match(const char *pat, const char *s, size_t slen)
{
    const char *p = pat, *star = NULL;
    size_t i = 0, star_i = 0;

    while (i < slen) {
        if (*p == '*') {
            star = ++p;
            star_i = i;
        } else if (*p == '?') {
            p++;
            i += glib_skip((unsigned char)s[i]);
        } else if (*p && *p == s[i]) {
            p++;
            i++;
        } else if (star) {
            p = star;
            star_i += glib_skip((unsigned char)s[star_i]);
            i = star_i;
        } else {
            return false;
        }
    }
    while (*p == '*') p++;
    return *p == 0 && i == slen;
}

/* ---- string functions ---- */

static void
tf_echo(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        if (i) buf_putc(out, ' ');
        tfunc_arg(call, i, env, out);
    }
}

/* Bytes, not characters: 3.38 counts bytes. */
static void
tf_length(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        if (i) buf_putc(out, ' ');
        buf_printf(out, "%zu", b->len);
        tpl_scratch_put(b);
    }
}

/*
 * $(substr STR START [LEN]): byte offsets; a negative START counts from the end, a negative LEN
 * stops that many bytes short of it.
 */
static void
tf_substr(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct buf *s, *a, *b = NULL;
    int64_t start, len, L;
    bool ok;

    if (call->argc < 2 || call->argc > 3) return;
    s = arg_get(call, 0, env);
    a = arg_get(call, 1, env);
    L = (int64_t)s->len;
    ok = parse_int(buf_str(a), 10, &start);
    len = L;
    if (ok && call->argc == 3) {
        b = arg_get(call, 2, env);
        ok = parse_int(buf_str(b), 10, &len);
    }
    if (!ok) goto out;
    if (len < 0 && len < -L) goto out;
    if (len > L) len = L;
    if (start >= L || (start < 0 && start < -L)) goto out;
    if (len < 0 && ((start < 0 && start > len) || (start >= 0 && len + L - start < 0))) goto out;
    if (start < 0) start += L;
    if (len < 0) {
        len = L - start + len;
        if (len < 0) goto out;
    }
    if (start + len > L) len = L - start;
    if (len > 0) buf_append(out, s->p + start, (size_t)len);
out:
    tpl_scratch_put(s);
    tpl_scratch_put(a);
    if (b) tpl_scratch_put(b);
}

/* C-locale isspace, what 3.38's strip uses. */
static bool
is_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static void
tf_strip(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    size_t start = out->len;
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        size_t s = 0, e = b->len;
        while (e > 0 && is_space(b->p[e - 1])) e--;
        while (s < e && is_space(b->p[s])) s++;
        if (s < e) {
            if (out->len > start) buf_putc(out, ' ');
            buf_append(out, b->p + s, e - s);
        }
        tpl_scratch_put(b);
    }
}

/* $(or A B ...): the first non-empty argument. */
static void
tf_or(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        size_t before = out->len;
        tfunc_arg(call, i, env, out);
        if (out->len > before) return;
    }
}

struct sanitize_state {
    bool ctrl;
    char *invalid;
    char repl;
};

enum { SAN_CTRL, SAN_NOCTRL, SAN_INVALID, SAN_REPL };

static const struct opt_def sanitize_opts[] = {
    {"ctrl-chars", 'c', OPT_FLAG, SAN_CTRL},
    {"no-ctrl-chars", 'C', OPT_FLAG, SAN_NOCTRL},
    {"invalid-chars", 'i', OPT_STRING, SAN_INVALID},
    {"replacement", 'r', OPT_STRING, SAN_REPL},
    {NULL, 0, OPT_FLAG, 0},
};

static bool
sanitize_opt(void *ctx, int id, const char *sval, int ival, struct buf *err)
{
    struct sanitize_state *st = ctx;

    (void)ival;
    (void)err;
    switch (id) {
    case SAN_CTRL: st->ctrl = true; break;
    case SAN_NOCTRL: st->ctrl = false; break;
    case SAN_INVALID:
        free(st->invalid);
        st->invalid = xstrdup(sval);
        break;
    case SAN_REPL: st->repl = sval[0]; break;
    default: break;
    }
    return true;
}

static void
sanitize_free(void *p)
{
    struct sanitize_state *st = p;

    free(st->invalid);
    free(st);
}

/* Collects the positional arguments as call->argv after options have been parsed. */
static bool
compile_positionals(struct tfunc_call *call, char **args, const int *pos, int npos, struct buf *err)
{
    int i;

    call->argc = npos;
    call->argv = xcalloc((size_t)npos + 1, sizeof(struct tpl *));
    for (i = 0; i < npos; i++) {
        call->argv[i] = compile_tpl(args[pos[i]], err);
        if (!call->argv[i]) return false;
    }
    return true;
}

static bool
sanitize_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct sanitize_state *st = xcalloc(1, sizeof(*st));
    char **args = unquote_args(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos;
    bool ok;

    (void)raw;
    st->ctrl = true;
    st->repl = '_';
    call->state = st;
    npos = parse_options(args, argc, sanitize_opts, sanitize_opt, st, false, pos, err);
    ok = npos >= 0 && compile_positionals(call, args, pos, npos, err);
    if (!st->invalid) st->invalid = xstrdup("/");
    free(pos);
    free_args(argc, args);
    return ok;
}

/* Control characters (unless -C) and the invalid set become the replacement; joined with '/'. */
static void
tf_sanitize(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct sanitize_state *st = call->state;
    int i;
    size_t k;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        for (k = 0; k < b->len; k++) {
            unsigned char c = (unsigned char)b->p[k];
            /* c == 0 matches too: 3.38 looks it up with strchr(), which finds the terminator */
            if ((st->ctrl && c < 32) || c == 0 || strchr(st->invalid, c))
                buf_putc(out, st->repl);
            else
                buf_putc(out, (char)c);
        }
        if (i < call->argc - 1) buf_putc(out, '/');
        tpl_scratch_put(b);
    }
}

/* ---- case mapping ---- */

/*
 * Unicode case tables, generated from Python's unicodedata (Unicode 14) so
 * that the result matches GLib's g_utf8_strup()/g_utf8_strdown(), which 3.38
 * uses: simple mappings as runs (every `stride`-th code point from lo to hi
 * maps to itself + delta), one-to-many mappings (SpecialCasing) listed apart.
 * Upper-casing covers letters of category Ll and Lt (and U+0345), lower-casing
 * Lu and Lt, as GLib does.
 */
struct case_range {
    uint32_t lo, hi;
    int32_t delta;
    uint8_t stride;
};

struct case_special {
    uint32_t cp;
    const char *utf8;
};

/* clang-format off */
static const struct case_range upper_ranges[] = {
    {0x0061, 0x007a, -32, 1}, {0x00b5, 0x00b5, 743, 1}, {0x00e0, 0x00f6, -32, 1},
    {0x00f8, 0x00fe, -32, 1}, {0x00ff, 0x00ff, 121, 1}, {0x0101, 0x012f, -1, 2},
    {0x0131, 0x0131, -232, 1}, {0x0133, 0x0137, -1, 2}, {0x013a, 0x0148, -1, 2},
    {0x014b, 0x0177, -1, 2}, {0x017a, 0x017e, -1, 2}, {0x017f, 0x017f, -300, 1},
    {0x0180, 0x0180, 195, 1}, {0x0183, 0x0185, -1, 2}, {0x0188, 0x0188, -1, 1},
    {0x018c, 0x018c, -1, 1}, {0x0192, 0x0192, -1, 1}, {0x0195, 0x0195, 97, 1},
    {0x0199, 0x0199, -1, 1}, {0x019a, 0x019a, 163, 1}, {0x019e, 0x019e, 130, 1},
    {0x01a1, 0x01a5, -1, 2}, {0x01a8, 0x01a8, -1, 1}, {0x01ad, 0x01ad, -1, 1},
    {0x01b0, 0x01b0, -1, 1}, {0x01b4, 0x01b6, -1, 2}, {0x01b9, 0x01b9, -1, 1},
    {0x01bd, 0x01bd, -1, 1}, {0x01bf, 0x01bf, 56, 1}, {0x01c5, 0x01c5, -1, 1},
    {0x01c6, 0x01c6, -2, 1}, {0x01c8, 0x01c8, -1, 1}, {0x01c9, 0x01c9, -2, 1},
    {0x01cb, 0x01cb, -1, 1}, {0x01cc, 0x01cc, -2, 1}, {0x01ce, 0x01dc, -1, 2},
    {0x01dd, 0x01dd, -79, 1}, {0x01df, 0x01ef, -1, 2}, {0x01f2, 0x01f2, -1, 1},
    {0x01f3, 0x01f3, -2, 1}, {0x01f5, 0x01f5, -1, 1}, {0x01f9, 0x021f, -1, 2},
    {0x0223, 0x0233, -1, 2}, {0x023c, 0x023c, -1, 1}, {0x023f, 0x0240, 10815, 1},
    {0x0242, 0x0242, -1, 1}, {0x0247, 0x024f, -1, 2}, {0x0250, 0x0250, 10783, 1},
    {0x0251, 0x0251, 10780, 1}, {0x0252, 0x0252, 10782, 1}, {0x0253, 0x0253, -210, 1},
    {0x0254, 0x0254, -206, 1}, {0x0256, 0x0257, -205, 1}, {0x0259, 0x0259, -202, 1},
    {0x025b, 0x025b, -203, 1}, {0x025c, 0x025c, 42319, 1}, {0x0260, 0x0260, -205, 1},
    {0x0261, 0x0261, 42315, 1}, {0x0263, 0x0263, -207, 1}, {0x0265, 0x0265, 42280, 1},
    {0x0266, 0x0266, 42308, 1}, {0x0268, 0x0268, -209, 1}, {0x0269, 0x0269, -211, 1},
    {0x026a, 0x026a, 42308, 1}, {0x026b, 0x026b, 10743, 1}, {0x026c, 0x026c, 42305, 1},
    {0x026f, 0x026f, -211, 1}, {0x0271, 0x0271, 10749, 1}, {0x0272, 0x0272, -213, 1},
    {0x0275, 0x0275, -214, 1}, {0x027d, 0x027d, 10727, 1}, {0x0280, 0x0280, -218, 1},
    {0x0282, 0x0282, 42307, 1}, {0x0283, 0x0283, -218, 1}, {0x0287, 0x0287, 42282, 1},
    {0x0288, 0x0288, -218, 1}, {0x0289, 0x0289, -69, 1}, {0x028a, 0x028b, -217, 1},
    {0x028c, 0x028c, -71, 1}, {0x0292, 0x0292, -219, 1}, {0x029d, 0x029d, 42261, 1},
    {0x029e, 0x029e, 42258, 1}, {0x0345, 0x0345, 84, 1}, {0x0371, 0x0373, -1, 2},
    {0x0377, 0x0377, -1, 1}, {0x037b, 0x037d, 130, 1}, {0x03ac, 0x03ac, -38, 1},
    {0x03ad, 0x03af, -37, 1}, {0x03b1, 0x03c1, -32, 1}, {0x03c2, 0x03c2, -31, 1},
    {0x03c3, 0x03cb, -32, 1}, {0x03cc, 0x03cc, -64, 1}, {0x03cd, 0x03ce, -63, 1},
    {0x03d0, 0x03d0, -62, 1}, {0x03d1, 0x03d1, -57, 1}, {0x03d5, 0x03d5, -47, 1},
    {0x03d6, 0x03d6, -54, 1}, {0x03d7, 0x03d7, -8, 1}, {0x03d9, 0x03ef, -1, 2},
    {0x03f0, 0x03f0, -86, 1}, {0x03f1, 0x03f1, -80, 1}, {0x03f2, 0x03f2, 7, 1},
    {0x03f3, 0x03f3, -116, 1}, {0x03f5, 0x03f5, -96, 1}, {0x03f8, 0x03f8, -1, 1},
    {0x03fb, 0x03fb, -1, 1}, {0x0430, 0x044f, -32, 1}, {0x0450, 0x045f, -80, 1},
    {0x0461, 0x0481, -1, 2}, {0x048b, 0x04bf, -1, 2}, {0x04c2, 0x04ce, -1, 2},
    {0x04cf, 0x04cf, -15, 1}, {0x04d1, 0x052f, -1, 2}, {0x0561, 0x0586, -48, 1},
    {0x10d0, 0x10fa, 3008, 1}, {0x10fd, 0x10ff, 3008, 1}, {0x13f8, 0x13fd, -8, 1},
    {0x1c80, 0x1c80, -6254, 1}, {0x1c81, 0x1c81, -6253, 1}, {0x1c82, 0x1c82, -6244, 1},
    {0x1c83, 0x1c84, -6242, 1}, {0x1c85, 0x1c85, -6243, 1}, {0x1c86, 0x1c86, -6236, 1},
    {0x1c87, 0x1c87, -6181, 1}, {0x1c88, 0x1c88, 35266, 1}, {0x1d79, 0x1d79, 35332, 1},
    {0x1d7d, 0x1d7d, 3814, 1}, {0x1d8e, 0x1d8e, 35384, 1}, {0x1e01, 0x1e95, -1, 2},
    {0x1e9b, 0x1e9b, -59, 1}, {0x1ea1, 0x1eff, -1, 2}, {0x1f00, 0x1f07, 8, 1},
    {0x1f10, 0x1f15, 8, 1}, {0x1f20, 0x1f27, 8, 1}, {0x1f30, 0x1f37, 8, 1},
    {0x1f40, 0x1f45, 8, 1}, {0x1f51, 0x1f57, 8, 2}, {0x1f60, 0x1f67, 8, 1},
    {0x1f70, 0x1f71, 74, 1}, {0x1f72, 0x1f75, 86, 1}, {0x1f76, 0x1f77, 100, 1},
    {0x1f78, 0x1f79, 128, 1}, {0x1f7a, 0x1f7b, 112, 1}, {0x1f7c, 0x1f7d, 126, 1},
    {0x1fb0, 0x1fb1, 8, 1}, {0x1fbe, 0x1fbe, -7205, 1}, {0x1fd0, 0x1fd1, 8, 1},
    {0x1fe0, 0x1fe1, 8, 1}, {0x1fe5, 0x1fe5, 7, 1}, {0x214e, 0x214e, -28, 1},
    {0x2184, 0x2184, -1, 1}, {0x2c30, 0x2c5f, -48, 1}, {0x2c61, 0x2c61, -1, 1},
    {0x2c65, 0x2c65, -10795, 1}, {0x2c66, 0x2c66, -10792, 1}, {0x2c68, 0x2c6c, -1, 2},
    {0x2c73, 0x2c73, -1, 1}, {0x2c76, 0x2c76, -1, 1}, {0x2c81, 0x2ce3, -1, 2},
    {0x2cec, 0x2cee, -1, 2}, {0x2cf3, 0x2cf3, -1, 1}, {0x2d00, 0x2d25, -7264, 1},
    {0x2d27, 0x2d27, -7264, 1}, {0x2d2d, 0x2d2d, -7264, 1}, {0xa641, 0xa66d, -1, 2},
    {0xa681, 0xa69b, -1, 2}, {0xa723, 0xa72f, -1, 2}, {0xa733, 0xa76f, -1, 2},
    {0xa77a, 0xa77c, -1, 2}, {0xa77f, 0xa787, -1, 2}, {0xa78c, 0xa78c, -1, 1},
    {0xa791, 0xa793, -1, 2}, {0xa794, 0xa794, 48, 1}, {0xa797, 0xa7a9, -1, 2},
    {0xa7b5, 0xa7c3, -1, 2}, {0xa7c8, 0xa7ca, -1, 2}, {0xa7d1, 0xa7d1, -1, 1},
    {0xa7d7, 0xa7d9, -1, 2}, {0xa7f6, 0xa7f6, -1, 1}, {0xab53, 0xab53, -928, 1},
    {0xab70, 0xabbf, -38864, 1}, {0xff41, 0xff5a, -32, 1}, {0x10428, 0x1044f, -40, 1},
    {0x104d8, 0x104fb, -40, 1}, {0x10597, 0x105a1, -39, 1}, {0x105a3, 0x105b1, -39, 1},
    {0x105b3, 0x105b9, -39, 1}, {0x105bb, 0x105bc, -39, 1}, {0x10cc0, 0x10cf2, -64, 1},
    {0x118c0, 0x118df, -32, 1}, {0x16e60, 0x16e7f, -32, 1}, {0x1e922, 0x1e943, -34, 1},
};
static const struct case_range lower_ranges[] = {
    {0x0041, 0x005a, 32, 1}, {0x00c0, 0x00d6, 32, 1}, {0x00d8, 0x00de, 32, 1},
    {0x0100, 0x012e, 1, 2}, {0x0132, 0x0136, 1, 2}, {0x0139, 0x0147, 1, 2},
    {0x014a, 0x0176, 1, 2}, {0x0178, 0x0178, -121, 1}, {0x0179, 0x017d, 1, 2},
    {0x0181, 0x0181, 210, 1}, {0x0182, 0x0184, 1, 2}, {0x0186, 0x0186, 206, 1},
    {0x0187, 0x0187, 1, 1}, {0x0189, 0x018a, 205, 1}, {0x018b, 0x018b, 1, 1},
    {0x018e, 0x018e, 79, 1}, {0x018f, 0x018f, 202, 1}, {0x0190, 0x0190, 203, 1},
    {0x0191, 0x0191, 1, 1}, {0x0193, 0x0193, 205, 1}, {0x0194, 0x0194, 207, 1},
    {0x0196, 0x0196, 211, 1}, {0x0197, 0x0197, 209, 1}, {0x0198, 0x0198, 1, 1},
    {0x019c, 0x019c, 211, 1}, {0x019d, 0x019d, 213, 1}, {0x019f, 0x019f, 214, 1},
    {0x01a0, 0x01a4, 1, 2}, {0x01a6, 0x01a6, 218, 1}, {0x01a7, 0x01a7, 1, 1},
    {0x01a9, 0x01a9, 218, 1}, {0x01ac, 0x01ac, 1, 1}, {0x01ae, 0x01ae, 218, 1},
    {0x01af, 0x01af, 1, 1}, {0x01b1, 0x01b2, 217, 1}, {0x01b3, 0x01b5, 1, 2},
    {0x01b7, 0x01b7, 219, 1}, {0x01b8, 0x01b8, 1, 1}, {0x01bc, 0x01bc, 1, 1},
    {0x01c4, 0x01c4, 2, 1}, {0x01c5, 0x01c5, 1, 1}, {0x01c7, 0x01c7, 2, 1},
    {0x01c8, 0x01c8, 1, 1}, {0x01ca, 0x01ca, 2, 1}, {0x01cb, 0x01db, 1, 2},
    {0x01de, 0x01ee, 1, 2}, {0x01f1, 0x01f1, 2, 1}, {0x01f2, 0x01f4, 1, 2},
    {0x01f6, 0x01f6, -97, 1}, {0x01f7, 0x01f7, -56, 1}, {0x01f8, 0x021e, 1, 2},
    {0x0220, 0x0220, -130, 1}, {0x0222, 0x0232, 1, 2}, {0x023a, 0x023a, 10795, 1},
    {0x023b, 0x023b, 1, 1}, {0x023d, 0x023d, -163, 1}, {0x023e, 0x023e, 10792, 1},
    {0x0241, 0x0241, 1, 1}, {0x0243, 0x0243, -195, 1}, {0x0244, 0x0244, 69, 1},
    {0x0245, 0x0245, 71, 1}, {0x0246, 0x024e, 1, 2}, {0x0370, 0x0372, 1, 2},
    {0x0376, 0x0376, 1, 1}, {0x037f, 0x037f, 116, 1}, {0x0386, 0x0386, 38, 1},
    {0x0388, 0x038a, 37, 1}, {0x038c, 0x038c, 64, 1}, {0x038e, 0x038f, 63, 1},
    {0x0391, 0x03a1, 32, 1}, {0x03a3, 0x03ab, 32, 1}, {0x03cf, 0x03cf, 8, 1},
    {0x03d8, 0x03ee, 1, 2}, {0x03f4, 0x03f4, -60, 1}, {0x03f7, 0x03f7, 1, 1},
    {0x03f9, 0x03f9, -7, 1}, {0x03fa, 0x03fa, 1, 1}, {0x03fd, 0x03ff, -130, 1},
    {0x0400, 0x040f, 80, 1}, {0x0410, 0x042f, 32, 1}, {0x0460, 0x0480, 1, 2},
    {0x048a, 0x04be, 1, 2}, {0x04c0, 0x04c0, 15, 1}, {0x04c1, 0x04cd, 1, 2},
    {0x04d0, 0x052e, 1, 2}, {0x0531, 0x0556, 48, 1}, {0x10a0, 0x10c5, 7264, 1},
    {0x10c7, 0x10c7, 7264, 1}, {0x10cd, 0x10cd, 7264, 1}, {0x13a0, 0x13ef, 38864, 1},
    {0x13f0, 0x13f5, 8, 1}, {0x1c90, 0x1cba, -3008, 1}, {0x1cbd, 0x1cbf, -3008, 1},
    {0x1e00, 0x1e94, 1, 2}, {0x1e9e, 0x1e9e, -7615, 1}, {0x1ea0, 0x1efe, 1, 2},
    {0x1f08, 0x1f0f, -8, 1}, {0x1f18, 0x1f1d, -8, 1}, {0x1f28, 0x1f2f, -8, 1},
    {0x1f38, 0x1f3f, -8, 1}, {0x1f48, 0x1f4d, -8, 1}, {0x1f59, 0x1f5f, -8, 2},
    {0x1f68, 0x1f6f, -8, 1}, {0x1f88, 0x1f8f, -8, 1}, {0x1f98, 0x1f9f, -8, 1},
    {0x1fa8, 0x1faf, -8, 1}, {0x1fb8, 0x1fb9, -8, 1}, {0x1fba, 0x1fbb, -74, 1},
    {0x1fbc, 0x1fbc, -9, 1}, {0x1fc8, 0x1fcb, -86, 1}, {0x1fcc, 0x1fcc, -9, 1},
    {0x1fd8, 0x1fd9, -8, 1}, {0x1fda, 0x1fdb, -100, 1}, {0x1fe8, 0x1fe9, -8, 1},
    {0x1fea, 0x1feb, -112, 1}, {0x1fec, 0x1fec, -7, 1}, {0x1ff8, 0x1ff9, -128, 1},
    {0x1ffa, 0x1ffb, -126, 1}, {0x1ffc, 0x1ffc, -9, 1}, {0x2126, 0x2126, -7517, 1},
    {0x212a, 0x212a, -8383, 1}, {0x212b, 0x212b, -8262, 1}, {0x2132, 0x2132, 28, 1},
    {0x2183, 0x2183, 1, 1}, {0x2c00, 0x2c2f, 48, 1}, {0x2c60, 0x2c60, 1, 1},
    {0x2c62, 0x2c62, -10743, 1}, {0x2c63, 0x2c63, -3814, 1}, {0x2c64, 0x2c64, -10727, 1},
    {0x2c67, 0x2c6b, 1, 2}, {0x2c6d, 0x2c6d, -10780, 1}, {0x2c6e, 0x2c6e, -10749, 1},
    {0x2c6f, 0x2c6f, -10783, 1}, {0x2c70, 0x2c70, -10782, 1}, {0x2c72, 0x2c72, 1, 1},
    {0x2c75, 0x2c75, 1, 1}, {0x2c7e, 0x2c7f, -10815, 1}, {0x2c80, 0x2ce2, 1, 2},
    {0x2ceb, 0x2ced, 1, 2}, {0x2cf2, 0x2cf2, 1, 1}, {0xa640, 0xa66c, 1, 2},
    {0xa680, 0xa69a, 1, 2}, {0xa722, 0xa72e, 1, 2}, {0xa732, 0xa76e, 1, 2},
    {0xa779, 0xa77b, 1, 2}, {0xa77d, 0xa77d, -35332, 1}, {0xa77e, 0xa786, 1, 2},
    {0xa78b, 0xa78b, 1, 1}, {0xa78d, 0xa78d, -42280, 1}, {0xa790, 0xa792, 1, 2},
    {0xa796, 0xa7a8, 1, 2}, {0xa7aa, 0xa7aa, -42308, 1}, {0xa7ab, 0xa7ab, -42319, 1},
    {0xa7ac, 0xa7ac, -42315, 1}, {0xa7ad, 0xa7ad, -42305, 1}, {0xa7ae, 0xa7ae, -42308, 1},
    {0xa7b0, 0xa7b0, -42258, 1}, {0xa7b1, 0xa7b1, -42282, 1}, {0xa7b2, 0xa7b2, -42261, 1},
    {0xa7b3, 0xa7b3, 928, 1}, {0xa7b4, 0xa7c2, 1, 2}, {0xa7c4, 0xa7c4, -48, 1},
    {0xa7c5, 0xa7c5, -42307, 1}, {0xa7c6, 0xa7c6, -35384, 1}, {0xa7c7, 0xa7c9, 1, 2},
    {0xa7d0, 0xa7d0, 1, 1}, {0xa7d6, 0xa7d8, 1, 2}, {0xa7f5, 0xa7f5, 1, 1},
    {0xff21, 0xff3a, 32, 1}, {0x10400, 0x10427, 40, 1}, {0x104b0, 0x104d3, 40, 1},
    {0x10570, 0x1057a, 39, 1}, {0x1057c, 0x1058a, 39, 1}, {0x1058c, 0x10592, 39, 1},
    {0x10594, 0x10595, 39, 1}, {0x10c80, 0x10cb2, 64, 1}, {0x118a0, 0x118bf, 32, 1},
    {0x16e40, 0x16e5f, 32, 1}, {0x1e900, 0x1e921, 34, 1},
};
static const struct case_special upper_special[] = {
    {0x00df, "\x53\x53"}, {0x0149, "\xca\xbc\x4e"}, {0x01f0, "\x4a\xcc\x8c"},
    {0x0390, "\xce\x99\xcc\x88\xcc\x81"}, {0x03b0, "\xce\xa5\xcc\x88\xcc\x81"}, {0x0587, "\xd4\xb5\xd5\x92"},
    {0x1e96, "\x48\xcc\xb1"}, {0x1e97, "\x54\xcc\x88"}, {0x1e98, "\x57\xcc\x8a"},
    {0x1e99, "\x59\xcc\x8a"}, {0x1e9a, "\x41\xca\xbe"}, {0x1f50, "\xce\xa5\xcc\x93"},
    {0x1f52, "\xce\xa5\xcc\x93\xcc\x80"}, {0x1f54, "\xce\xa5\xcc\x93\xcc\x81"}, {0x1f56, "\xce\xa5\xcc\x93\xcd\x82"},
    {0x1f80, "\xe1\xbc\x88\xce\x99"}, {0x1f81, "\xe1\xbc\x89\xce\x99"}, {0x1f82, "\xe1\xbc\x8a\xce\x99"},
    {0x1f83, "\xe1\xbc\x8b\xce\x99"}, {0x1f84, "\xe1\xbc\x8c\xce\x99"}, {0x1f85, "\xe1\xbc\x8d\xce\x99"},
    {0x1f86, "\xe1\xbc\x8e\xce\x99"}, {0x1f87, "\xe1\xbc\x8f\xce\x99"}, {0x1f88, "\xe1\xbc\x88\xce\x99"},
    {0x1f89, "\xe1\xbc\x89\xce\x99"}, {0x1f8a, "\xe1\xbc\x8a\xce\x99"}, {0x1f8b, "\xe1\xbc\x8b\xce\x99"},
    {0x1f8c, "\xe1\xbc\x8c\xce\x99"}, {0x1f8d, "\xe1\xbc\x8d\xce\x99"}, {0x1f8e, "\xe1\xbc\x8e\xce\x99"},
    {0x1f8f, "\xe1\xbc\x8f\xce\x99"}, {0x1f90, "\xe1\xbc\xa8\xce\x99"}, {0x1f91, "\xe1\xbc\xa9\xce\x99"},
    {0x1f92, "\xe1\xbc\xaa\xce\x99"}, {0x1f93, "\xe1\xbc\xab\xce\x99"}, {0x1f94, "\xe1\xbc\xac\xce\x99"},
    {0x1f95, "\xe1\xbc\xad\xce\x99"}, {0x1f96, "\xe1\xbc\xae\xce\x99"}, {0x1f97, "\xe1\xbc\xaf\xce\x99"},
    {0x1f98, "\xe1\xbc\xa8\xce\x99"}, {0x1f99, "\xe1\xbc\xa9\xce\x99"}, {0x1f9a, "\xe1\xbc\xaa\xce\x99"},
    {0x1f9b, "\xe1\xbc\xab\xce\x99"}, {0x1f9c, "\xe1\xbc\xac\xce\x99"}, {0x1f9d, "\xe1\xbc\xad\xce\x99"},
    {0x1f9e, "\xe1\xbc\xae\xce\x99"}, {0x1f9f, "\xe1\xbc\xaf\xce\x99"}, {0x1fa0, "\xe1\xbd\xa8\xce\x99"},
    {0x1fa1, "\xe1\xbd\xa9\xce\x99"}, {0x1fa2, "\xe1\xbd\xaa\xce\x99"}, {0x1fa3, "\xe1\xbd\xab\xce\x99"},
    {0x1fa4, "\xe1\xbd\xac\xce\x99"}, {0x1fa5, "\xe1\xbd\xad\xce\x99"}, {0x1fa6, "\xe1\xbd\xae\xce\x99"},
    {0x1fa7, "\xe1\xbd\xaf\xce\x99"}, {0x1fa8, "\xe1\xbd\xa8\xce\x99"}, {0x1fa9, "\xe1\xbd\xa9\xce\x99"},
    {0x1faa, "\xe1\xbd\xaa\xce\x99"}, {0x1fab, "\xe1\xbd\xab\xce\x99"}, {0x1fac, "\xe1\xbd\xac\xce\x99"},
    {0x1fad, "\xe1\xbd\xad\xce\x99"}, {0x1fae, "\xe1\xbd\xae\xce\x99"}, {0x1faf, "\xe1\xbd\xaf\xce\x99"},
    {0x1fb2, "\xe1\xbe\xba\xce\x99"}, {0x1fb3, "\xce\x91\xce\x99"}, {0x1fb4, "\xce\x86\xce\x99"},
    {0x1fb6, "\xce\x91\xcd\x82"}, {0x1fb7, "\xce\x91\xcd\x82\xce\x99"}, {0x1fbc, "\xce\x91\xce\x99"},
    {0x1fc2, "\xe1\xbf\x8a\xce\x99"}, {0x1fc3, "\xce\x97\xce\x99"}, {0x1fc4, "\xce\x89\xce\x99"},
    {0x1fc6, "\xce\x97\xcd\x82"}, {0x1fc7, "\xce\x97\xcd\x82\xce\x99"}, {0x1fcc, "\xce\x97\xce\x99"},
    {0x1fd2, "\xce\x99\xcc\x88\xcc\x80"}, {0x1fd3, "\xce\x99\xcc\x88\xcc\x81"}, {0x1fd6, "\xce\x99\xcd\x82"},
    {0x1fd7, "\xce\x99\xcc\x88\xcd\x82"}, {0x1fe2, "\xce\xa5\xcc\x88\xcc\x80"}, {0x1fe3, "\xce\xa5\xcc\x88\xcc\x81"},
    {0x1fe4, "\xce\xa1\xcc\x93"}, {0x1fe6, "\xce\xa5\xcd\x82"}, {0x1fe7, "\xce\xa5\xcc\x88\xcd\x82"},
    {0x1ff2, "\xe1\xbf\xba\xce\x99"}, {0x1ff3, "\xce\xa9\xce\x99"}, {0x1ff4, "\xce\x8f\xce\x99"},
    {0x1ff6, "\xce\xa9\xcd\x82"}, {0x1ff7, "\xce\xa9\xcd\x82\xce\x99"}, {0x1ffc, "\xce\xa9\xce\x99"},
    {0xfb00, "\x46\x46"}, {0xfb01, "\x46\x49"}, {0xfb02, "\x46\x4c"},
    {0xfb03, "\x46\x46\x49"}, {0xfb04, "\x46\x46\x4c"}, {0xfb05, "\x53\x54"},
    {0xfb06, "\x53\x54"}, {0xfb13, "\xd5\x84\xd5\x86"}, {0xfb14, "\xd5\x84\xd4\xb5"},
    {0xfb15, "\xd5\x84\xd4\xbb"}, {0xfb16, "\xd5\x8e\xd5\x86"}, {0xfb17, "\xd5\x84\xd4\xbd"},
};
/* clang-format on */

static int32_t
case_delta(const struct case_range *r, size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < r[mid].lo)
            hi = mid;
        else if (c > r[mid].hi)
            lo = mid + 1;
        else
            return (c - r[mid].lo) % r[mid].stride == 0 ? r[mid].delta : 0;
    }
    return 0;
}

static const char *
upper_special_of(uint32_t c)
{
    size_t lo = 0, hi = ARRAY_LEN(upper_special);

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < upper_special[mid].cp)
            hi = mid;
        else if (c > upper_special[mid].cp)
            lo = mid + 1;
        else
            return upper_special[mid].utf8;
    }
    return NULL;
}

/* Approximates GLib's "is a letter" test for the final-sigma rule by "has a case mapping". */
static bool
is_cased(uint32_t c)
{
    return (c < 0x80 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) ||
           case_delta(upper_ranges, ARRAY_LEN(upper_ranges), c) ||
           case_delta(lower_ranges, ARRAY_LEN(lower_ranges), c) || upper_special_of(c);
}

/*
 * Maps s the way GLib does: stops at a NUL, steps over bytes as the lead
 * byte says, and copies what is not valid UTF-8 unchanged.
 */
static void
case_map(struct buf *out, const char *s, size_t len, bool upper)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;

    while (p < end && *p) {
        uint32_t c, c2;
        size_t n = utf8_char(p, (size_t)(end - p), &c), skip;
        int32_t d;

        if (n == 0) {
            skip = glib_skip(*p);
            if (skip > (size_t)(end - p)) skip = (size_t)(end - p);
            buf_append(out, p, skip);
            p += skip;
            continue;
        }
        p += n;
        if (upper) {
            const char *sp = upper_special_of(c);
            if (sp) {
                buf_puts(out, sp);
                continue;
            }
            d = case_delta(upper_ranges, ARRAY_LEN(upper_ranges), c);
        } else if (c == 0x3a3) {
            /* GREEK CAPITAL SIGMA: final form unless a letter follows */
            bool letter = p < end && utf8_char(p, (size_t)(end - p), &c2) && is_cased(c2);
            utf8_put(out, letter ? 0x3c3 : 0x3c2);
            continue;
        } else if (c == 0x130) {
            /* LATIN CAPITAL LETTER I WITH DOT ABOVE: i + COMBINING DOT ABOVE */
            buf_puts(out, "i\xcc\x87");
            continue;
        } else {
            d = case_delta(lower_ranges, ARRAY_LEN(lower_ranges), c);
        }
        utf8_put(out, (uint32_t)((int32_t)c + d));
    }
}

static void
case_args(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out, bool upper)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        case_map(out, buf_str(b), b->len, upper);
        if (i < call->argc - 1) buf_putc(out, ' ');
        tpl_scratch_put(b);
    }
}

static void
tf_lowercase(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    case_args(call, env, out, false);
}

static void
tf_uppercase(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    case_args(call, env, out, true);
}

/* $(replace-delimiter SET NEW TEXT): every byte of SET in TEXT becomes the first byte of NEW. */
static void
tf_replace_delimiter(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;
    const char *text;
    size_t i, n;
    char repl;

    if (call->argc != 3) return;
    args_eval(&a, call, 0, env);
    text = buf_str(a.b[2]);
    n = strlen(text); /* 3.38 works on a C string copy */
    repl = buf_str(a.b[1])[0];
    for (i = 0; i < n; i++) {
        if (strchr(buf_str(a.b[0]), text[i])) {
            /* an empty NEW puts a NUL there, which ends 3.38's string */
            if (!repl) break;
            buf_putc(out, repl);
        } else {
            buf_putc(out, text[i]);
        }
    }
    args_release(&a);
}

struct padding_state {
    char *pad;
    size_t width;
};

static void
padding_free(void *p)
{
    struct padding_state *st = p;

    free(st->pad);
    free(st);
}

/* $(padding TEXT WIDTH [PAD]): WIDTH and PAD are literal, fixed at compile time. */
static bool
padding_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct padding_state *st;
    char **args;
    int64_t w;
    size_t plen, i;
    bool ok = false;

    (void)raw;
    if (argc < 2) {
        buf_printf(
            err,
            "$(padding) Not enough arguments, usage $(padding <input> <width> [padding string])");
        return false;
    }
    args = unquote_args(argc, rawq);
    st = xcalloc(1, sizeof(*st));
    call->state = st;
    if (!parse_int(args[1], 10, &w)) {
        buf_printf(err, "Padding template function requires a number as second argument!");
    } else if (w < 0 || w > (int64_t)TF_MAX_OUTPUT) {
        /* 3.38 aborts on a negative width and runs out of memory on a huge one */
        buf_printf(err, "$(padding) width %" PRId64 " out of range (0..%u)", w, TF_MAX_OUTPUT);
    } else {
        st->width = (size_t)w;
        st->pad = xmalloc(st->width + 1);
        plen = argc >= 3 ? strlen(args[2]) : 0;
        for (i = 0; i < st->width; i++) st->pad[i] = plen ? args[2][i % plen] : ' ';
        ok = compile_call_args(call, args, 0, 1, err);
    }
    free_args(argc, args);
    return ok;
}

static void
tf_padding(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct padding_state *st = call->state;
    struct buf *b = arg_get(call, 0, env);

    if (b->len <= st->width) buf_append(out, st->pad, st->width - b->len);
    buf_append(out, b->p, b->len);
    tpl_scratch_put(b);
}

/* $(binary N...): the bytes, fixed at compile time. */
static bool
binary_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct buf *octets;
    char **args;
    int i;
    bool ok = true;

    (void)raw;
    if (argc < 1) {
        buf_printf(err, "$(binary) Incorrect parameters, usage $(binary <number> <number> ...)");
        return false;
    }
    args = unquote_args(argc, rawq);
    octets = xcalloc(1, sizeof(*octets));
    call->state = octets;
    for (i = 0; i < argc && ok; i++) {
        int64_t v;
        if (!parse_int(args[i], 0, &v)) {
            const char *base = args[i][0] != '0' ? "dec" : args[i][1] == 'x' ? "hex" : "oct";
            buf_printf(err,
                       "$(binary) template function requires list of dec/hex/oct numbers as "
                       "arguments, unable to parse %s as a %s number",
                       args[i], base);
            ok = false;
        } else if (v > 0xff) {
            buf_printf(err,
                       "$(binary) template function only supports 8 bit values as characters, "
                       "%" PRId64 " is above 255",
                       v);
            ok = false;
        } else {
            buf_putc(octets, (char)(unsigned char)v); /* negative numbers wrap, as in 3.38 */
        }
    }
    free_args(argc, args);
    return ok;
}

static void
binary_free(void *p)
{
    buf_free(p);
    free(p);
}

static void
tf_binary(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct buf *octets = call->state;

    (void)env;
    buf_append(out, octets->p, octets->len);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Encodes the concatenated arguments; input beyond 3/4 of TF_MAX_OUTPUT is dropped. */
static void
tf_base64_encode(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct buf *in = tpl_scratch_get();
    const unsigned char *p;
    size_t i, n;
    int k;

    for (k = 0; k < call->argc && in->len <= TF_MAX_OUTPUT / 4 * 3; k++)
        tfunc_arg(call, k, env, in);
    n = in->len < TF_MAX_OUTPUT / 4 * 3 ? in->len : TF_MAX_OUTPUT / 4 * 3;
    p = (const unsigned char *)in->p;
    for (i = 0; i + 2 < n; i += 3) {
        char q[4] = {b64[p[i] >> 2], b64[((p[i] & 3) << 4) | (p[i + 1] >> 4)],
                     b64[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)], b64[p[i + 2] & 63]};
        buf_append(out, q, 4);
    }
    if (n - i == 1) {
        char q[4] = {b64[p[i] >> 2], b64[(p[i] & 3) << 4], '=', '='};
        buf_append(out, q, 4);
    } else if (n - i == 2) {
        char q[4] = {b64[p[i] >> 2], b64[((p[i] & 3) << 4) | (p[i + 1] >> 4)],
                     b64[(p[i + 1] & 15) << 2], '='};
        buf_append(out, q, 4);
    }
    tpl_scratch_put(in);
}

/* Percent-encodes all but A-Z a-z 0-9 - . _ ~ (g_uri_escape_string); arguments concatenate. */
static void
tf_url_encode(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    size_t start = out->len;
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        const char *s = buf_str(b);
        for (; *s; s++) {
            unsigned char c = (unsigned char)*s;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                strchr("-._~", c))
                buf_putc(out, (char)c);
            else
                buf_printf(out, "%%%02X", c);
        }
        tpl_scratch_put(b);
        if (over_cap(out, start)) return;
    }
}

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes %XX; an argument with a broken escape or an encoded NUL is dropped whole (as 3.38). */
static void
tf_url_decode(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        const char *s = buf_str(b);
        size_t before = out->len;
        for (; *s; s++) {
            if (*s == '%') {
                int hi = hexval(s[1]), lo = hi >= 0 ? hexval(s[2]) : -1;
                if (lo < 0 || (hi | lo) == 0) {
                    buf_truncate(out, before);
                    break;
                }
                buf_putc(out, (char)(hi * 16 + lo));
                s += 2;
            } else {
                buf_putc(out, *s);
            }
        }
        tpl_scratch_put(b);
    }
}

/* $(env NAME...): unset names are skipped; a space follows each found one but the last argument. */
static void
tf_env(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        const char *v = getenv(buf_str(b));
        tpl_scratch_put(b);
        if (!v) continue;
        buf_puts(out, v);
        if (i < call->argc - 1) buf_putc(out, ' ');
    }
}

/* GLib's g_path_get_dirname(): "." without a slash; slashes before the last part dropped. */
static void
tf_dirname(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct buf *b;
    const char *s, *slash;

    if (call->argc < 1) return;
    b = arg_get(call, 0, env);
    s = buf_str(b);
    slash = strrchr(s, '/');
    if (!slash) {
        buf_putc(out, '.');
    } else {
        while (slash > s && *slash == '/') slash--;
        buf_append(out, s, (size_t)(slash - s) + 1);
    }
    tpl_scratch_put(b);
}

/* GLib's g_path_get_basename(): "." for "", "/" for only slashes, trailing slashes ignored. */
static void
tf_basename(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct buf *b;
    const char *s;
    size_t last, base;

    if (call->argc < 1) return;
    b = arg_get(call, 0, env);
    s = buf_str(b);
    last = strlen(s);
    if (last == 0) {
        buf_putc(out, '.');
    } else {
        while (last > 0 && s[last - 1] == '/') last--;
        if (last == 0) {
            buf_putc(out, '/');
        } else {
            base = last;
            while (base > 0 && s[base - 1] != '/') base--;
            buf_append(out, s + base, last - base);
        }
    }
    tpl_scratch_put(b);
}

/*
 * Arguments joined with ' ', then a tab after every newline not already
 * followed by one.  Deviation: 3.38 indents everything the template produced
 * up to this point, not only this function's output.
 */
static void
tf_indent_multi_line(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct buf *t = tpl_scratch_get();
    size_t i, start = out->len;

    tf_echo(call, env, t);
    for (i = 0; i < t->len; i++) {
        buf_putc(out, t->p[i]);
        if (t->p[i] == '\n' && (i + 1 == t->len || t->p[i + 1] != '\t')) buf_putc(out, '\t');
        if (out->len - start > TF_MAX_OUTPUT) break;
    }
    over_cap(out, start);
    tpl_scratch_put(t);
}

/*
 * $(ipv4-to-int ADDR...), comma separated.  inet_aton() accepts what 3.38's
 * g_inet_aton() does.  Deviation: an invalid address yields an empty item;
 * 3.38 prints whatever was on its stack.
 */
static void
tf_ipv4_to_int(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        struct in_addr ina;
        if (inet_aton(buf_str(b), &ina)) buf_printf(out, "%lu", (unsigned long)ntohl(ina.s_addr));
        if (i < call->argc - 1) buf_putc(out, ',');
        tpl_scratch_put(b);
    }
}

/* ---- dns-resolve-ip ---- */

struct dns_state {
    bool use_fqdn, use_dns, normalize;
};

enum { DNS_FQDN, DNS_USE, DNS_CACHE, DNS_NORMALIZE };

static const struct opt_def dns_opts[] = {
    {"use-fqdn", 'f', OPT_STRING, DNS_FQDN},
    {"use-dns", 'd', OPT_STRING, DNS_USE},
    {"dns-cache", 'c', OPT_STRING, DNS_CACHE},
    {"normalize-hostnames", 'n', OPT_STRING, DNS_NORMALIZE},
    {NULL, 0, OPT_FLAG, 0},
};

static bool
yesno(const char *s)
{
    return !strcasecmp(s, "yes") || !strcasecmp(s, "y") || !strcasecmp(s, "on") || !strcmp(s, "1");
}

static bool
dns_opt(void *ctx, int id, const char *sval, int ival, struct buf *err)
{
    struct dns_state *st = ctx;

    (void)ival;
    (void)err;
    if (id == DNS_FQDN) st->use_fqdn = yesno(sval);
    if (id == DNS_USE) st->use_dns = yesno(sval);
    if (id == DNS_NORMALIZE) st->normalize = yesno(sval);
    return true; /* there is no cache to switch: every call resolves */
}

static bool
dns_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct dns_state *st = xcalloc(1, sizeof(*st));
    char **args = unquote_args(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos;
    bool ok = false;

    (void)raw;
    st->use_dns = true; /* syslog-ng's global defaults: use-dns(yes), use-fqdn(no) */
    call->state = st;
    npos = parse_options(args, argc, dns_opts, dns_opt, st, false, pos, err);
    if (npos > 1)
        buf_printf(
            err,
            "dns-resolve-ip: too many arguments provided. usage: $(dns-resolve-ip [OPTIONS] IP)");
    else if (npos >= 0)
        ok = compile_positionals(call, args, pos, npos, err);
    free(pos);
    free_args(argc, args);
    return ok;
}

/*
 * The host name of an address, or the address itself when it has none.  This
 * is slow: a blocking reverse DNS lookup on every evaluation, without a cache.
 */
static void
tf_dns_resolve_ip(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct dns_state *st = call->state;
    struct sockaddr_storage ss;
    socklen_t sl;
    char host[NI_MAXHOST], addr[INET6_ADDRSTRLEN];
    struct buf *b;
    size_t start = out->len, i;

    if (call->argc < 1) return;
    b = arg_get(call, 0, env);
    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, buf_str(b), &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
        sl = sizeof(struct sockaddr_in);
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
    } else if (inet_pton(AF_INET6, buf_str(b), &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ss.ss_family = AF_INET6;
        sl = sizeof(struct sockaddr_in6);
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
    } else {
        tpl_scratch_put(b);
        return;
    }
    tpl_scratch_put(b);
    if (st->use_dns &&
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), NULL, 0, NI_NAMEREQD) == 0) {
        size_t n = strlen(host);
        if (!st->use_fqdn) {
            const char *dot = strchr(host, '.');
            if (dot) n = (size_t)(dot - host);
        }
        buf_append(out, host, n);
        if (st->normalize)
            for (i = start; i < out->len; i++)
                if (out->p[i] >= 'A' && out->p[i] <= 'Z') out->p[i] = (char)(out->p[i] + 32);
    } else {
        buf_puts(out, addr);
    }
}

/* ---- numeric functions ---- */

enum arith { A_ADD, A_SUB, A_MUL, A_DIV, A_MOD };

/*
 * Two numbers: integer arithmetic (wrapping on overflow) when both are
 * decimal integers, double arithmetic printed with 20 decimals otherwise;
 * "NaN" for a non-number, a wrong argument count or a zero divisor.
 */
static void
arith(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out, enum arith op)
{
    struct number a, b;
    struct buf *x, *y;
    bool ok;

    if (call->argc != 2) {
        buf_puts(out, "NaN");
        return;
    }
    x = arg_get(call, 0, env);
    y = arg_get(call, 1, env);
    ok = parse_number(buf_str(x), &a) && parse_number(buf_str(y), &b);
    tpl_scratch_put(x);
    tpl_scratch_put(y);
    if (ok && (op == A_DIV || op == A_MOD)) ok = b.is_float ? fabs(b.d) >= DBL_EPSILON : b.i != 0;
    if (!ok) {
        buf_puts(out, "NaN");
        return;
    }
    if (!a.is_float && !b.is_float) {
        uint64_t u = (uint64_t)a.i, v = (uint64_t)b.i, r = 0;
        switch (op) {
        case A_ADD: r = u + v; break;
        case A_SUB: r = u - v; break;
        case A_MUL: r = u * v; break;
        /* deviation: INT64_MIN / -1 kills 3.38 with SIGFPE; here it wraps */
        case A_DIV: r = b.i == -1 ? 0 - u : (uint64_t)(a.i / b.i); break;
        case A_MOD: r = b.i == -1 ? 0 : (uint64_t)(a.i % b.i); break;
        }
        buf_printf(out, "%" PRId64, (int64_t)r);
    } else {
        double u = number_d(&a), v = number_d(&b), r = 0;
        switch (op) {
        case A_ADD: r = u + v; break;
        case A_SUB: r = u - v; break;
        case A_MUL: r = u * v; break;
        case A_DIV: r = u / v; break;
        case A_MOD: r = fmod(u, v); break;
        }
        buf_printf(out, "%.20f", r);
    }
}

static void
tf_add(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    arith(call, env, out, A_ADD);
}

static void
tf_sub(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    arith(call, env, out, A_SUB);
}

static void
tf_mul(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    arith(call, env, out, A_MUL);
}

static void
tf_div(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    arith(call, env, out, A_DIV);
}

static void
tf_mod(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    arith(call, env, out, A_MOD);
}

/* The one argument as a number, or false (and "NaN" written) for round/ceil/floor. */
static bool
unary_number(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out, int maxargs,
             double *d)
{
    struct number n;
    struct buf *b;
    bool ok;

    if (call->argc < 1 || call->argc > maxargs) {
        buf_puts(out, "NaN");
        return false;
    }
    b = arg_get(call, 0, env);
    ok = parse_number(buf_str(b), &n);
    tpl_scratch_put(b);
    if (!ok) buf_puts(out, "NaN");
    *d = number_d(&n);
    return ok;
}

/* $(round X [DIGITS]): half away from zero, DIGITS 0..20, printed with exactly DIGITS decimals. */
static void
tf_round(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    int64_t prec = 0;
    double d, m;

    if (call->argc == 2) {
        struct buf *b = arg_get(call, 1, env);
        bool ok = parse_int(buf_str(b), 10, &prec) && prec >= 0 && prec <= 20;
        tpl_scratch_put(b);
        if (!ok) {
            buf_puts(out, "NaN");
            return;
        }
    }
    if (!unary_number(call, env, out, 2, &d)) return;
    m = pow(10, (double)prec);
    buf_printf(out, "%.*f", (int)prec, round(d * m) / m);
}

static void
tf_ceil(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    double d;

    if (unary_number(call, env, out, 1, &d)) buf_printf(out, "%" PRId64, double_to_int64(ceil(d)));
}

static void
tf_floor(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    double d;

    if (unary_number(call, env, out, 1, &d)) buf_printf(out, "%" PRId64, double_to_int64(floor(d)));
}

enum aggr { AG_SUM, AG_MIN, AG_MAX, AG_AVG };

/*
 * $(sum T), $(min T), $(max T), $(average T): T is evaluated on every
 * message of the set alone; values that are not decimal integers are
 * skipped; nothing at all when none is.  Integer arithmetic throughout.
 */
static void
aggregate(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out, enum aggr op)
{
    struct buf *b = tpl_scratch_get();
    int64_t acc = 0, v;
    uint64_t count = 0;
    size_t i;

    for (i = 0; i < env->nmsgs; i++) {
        struct tpl_env one;
        env_one(&one, env, i);
        buf_reset(b);
        tfunc_arg(call, 0, &one, b);
        if (!parse_int(buf_str(b), 10, &v)) continue;
        if (count++ == 0)
            acc = v;
        else if (op == AG_SUM || op == AG_AVG)
            acc = (int64_t)((uint64_t)acc + (uint64_t)v);
        else if ((op == AG_MIN && v < acc) || (op == AG_MAX && v > acc))
            acc = v;
    }
    tpl_scratch_put(b);
    if (!count) return;
    if (op == AG_AVG) acc /= (int64_t)count;
    buf_printf(out, "%" PRId64, acc);
}

static void
tf_sum(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_SUM);
}

static void
tf_min(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_MIN);
}

static void
tf_max(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_MAX);
}

static void
tf_average(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_AVG);
}

/* ---- list functions ---- */

static void
tf_list_concat(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;
    struct lscan s;
    size_t start = out->len;

    args_eval(&a, call, 0, env);
    lscan_init(&s, a.b, a.n);
    while (lscan_next(&s)) {
        list_comma(out, start);
        list_encode(out, s.val->p, s.val->len);
        if (over_cap(out, start)) break;
    }
    lscan_done(&s);
    args_release(&a);
}

/* $(list-append LIST ITEM...): LIST as it is, each ITEM encoded as one item. */
static void
tf_list_append(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    size_t start = out->len;
    int i;

    if (call->argc < 1) return;
    tfunc_arg(call, 0, env, out);
    for (i = 1; i < call->argc; i++) {
        struct buf *b = arg_get(call, i, env);
        list_comma(out, start);
        list_encode(out, b->p, b->len);
        tpl_scratch_put(b);
        if (over_cap(out, start)) return;
    }
}

static void
tf_list_count(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;

    args_eval(&a, call, 0, env);
    buf_printf(out, "%d", list_count(a.b, a.n));
    args_release(&a);
}

/* The item at ndx (negative counts from the end), decoded. */
static void
list_nth(struct buf **args, int nargs, int ndx, struct buf *out)
{
    struct lscan s;
    int i = 0;

    if (nargs == 0) return;
    if (ndx < 0) ndx += list_count(args, nargs);
    lscan_init(&s, args, nargs);
    while (i < ndx && lscan_next(&s)) i++;
    if (i == ndx && lscan_next(&s)) buf_append(out, s.val->p, s.val->len);
    lscan_done(&s);
}

/* Items first..last-1 (negative indices count from the end), re-encoded. */
static void
list_slice(struct buf **args, int nargs, int first, int last, struct buf *out)
{
    struct lscan s;
    size_t start = out->len;
    int i = 0;

    if (nargs == 0) return;
    if (first < 0 || last < 0) {
        int count = list_count(args, nargs);
        if (first < 0) first += count;
        if (last < 0) last += count;
    }
    lscan_init(&s, args, nargs);
    while (i < first && lscan_next(&s)) i++;
    while (i >= first && i < last && lscan_next(&s)) {
        list_comma(out, start);
        list_encode(out, s.val->p, s.val->len);
        if (over_cap(out, start)) break;
        i++;
    }
    lscan_done(&s);
}

static void
tf_list_head(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;

    args_eval(&a, call, 0, env);
    list_nth(a.b, a.n, 0, out);
    args_release(&a);
}

/* Indices are read as 64-bit numbers and then used as C ints, as 3.38 does. */
static void
tf_list_nth(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;
    int64_t ndx;

    if (call->argc < 1) return;
    args_eval(&a, call, 0, env);
    if (parse_int(buf_str(a.b[0]), 10, &ndx)) list_nth(a.b + 1, a.n - 1, (int)ndx, out);
    args_release(&a);
}

static void
tf_list_tail(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;

    args_eval(&a, call, 0, env);
    list_slice(a.b, a.n, 1, INT_MAX, out);
    args_release(&a);
}

/* $(list-slice FIRST:LAST LIST...), either bound may be left out. */
static void
tf_list_slice(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;
    struct buf *f;
    int64_t first = 0, last = INT_MAX;
    const char *spec, *colon;
    bool ok;

    if (call->argc < 1) return;
    args_eval(&a, call, 0, env);
    spec = buf_str(a.b[0]);
    colon = strchr(spec, ':');
    f = tpl_scratch_get();
    buf_append(f, spec, colon ? (size_t)(colon - spec) : strlen(spec));
    ok = f->len == 0 || parse_int(buf_str(f), 10, &first);
    if (ok && colon && colon[1]) ok = parse_int(colon + 1, 10, &last);
    if (ok) list_slice(a.b + 1, a.n - 1, (int)first, (int)last, out);
    tpl_scratch_put(f);
    args_release(&a);
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

static const struct opt_def search_opts[] = {
    {"mode", 0, OPT_STRING, LS_MODE},
    {"start-index", 0, OPT_INT, LS_START},
    {NULL, 0, OPT_FLAG, 0},
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
    char **args = unquote_args(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos, i, ecode;
    PCRE2_SIZE eoff;
    bool ok = false;

    (void)raw;
    call->state = st;
    npos = parse_options(args, argc, search_opts, search_opt, st, false, pos, err);
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
    ok = compile_positionals(call, args, pos + 1, npos - 1, err);
out:
    free(pos);
    free_args(argc, args);
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
    case SM_PCRE: return pcre2_match(st->re, (PCRE2_SPTR)s, v->len, 0, 0, st->md, NULL) >= 0;
    }
    return false;
}

/* The index of the first matching item at or after --start-index (which also offsets the count). */
static void
tf_list_search(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct search_state *st = call->state;
    struct argbufs a;
    struct lscan s;
    int i, index = st->start;

    args_eval(&a, call, 0, env);
    lscan_init(&s, a.b, a.n);
    for (i = 0; i < index && lscan_next(&s); i++) continue;
    while (lscan_next(&s)) {
        if (search_match(st, s.val)) {
            buf_printf(out, "%d", index);
            break;
        }
        index++;
    }
    lscan_done(&s);
    args_release(&a);
}

/* $(explode SEP TEXT...): TEXT split at every SEP (a string), each piece a list item. */
static void
tf_explode(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;
    size_t start = out->len, slen;
    const char *sep;
    int i;

    if (call->argc < 1) return;
    args_eval(&a, call, 0, env);
    sep = buf_str(a.b[0]);
    slen = strlen(sep);
    for (i = 1; i < a.n && slen; i++) {
        const char *s = buf_str(a.b[i]), *hit;
        if (!*s) continue; /* GLib splits "" into no pieces at all */
        for (;;) {
            hit = strstr(s, sep);
            list_comma(out, start);
            list_encode(out, s, hit ? (size_t)(hit - s) : strlen(s));
            if (over_cap(out, start) || !hit) break;
            s = hit + slen;
        }
        if (out->len - start >= TF_MAX_OUTPUT) break;
    }
    args_release(&a);
}

/* $(implode SEP LIST...): the items, decoded, joined with SEP. */
static void
tf_implode(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct argbufs a;
    struct lscan s;
    size_t start = out->len;

    if (call->argc < 1) return;
    args_eval(&a, call, 0, env);
    lscan_init(&s, a.b + 1, a.n - 1);
    while (lscan_next(&s)) {
        /* as 3.38: no separator while nothing has been written (after empty items) */
        if (out->len > start) buf_append(out, a.b[0]->p, a.b[0]->len);
        buf_append(out, s.val->p, s.val->len);
        if (over_cap(out, start)) break;
    }
    lscan_done(&s);
    args_release(&a);
}

/* ---- names and values ---- */

enum {
    VPS_NV = 1 << 0,
    VPS_DOT = 1 << 1,
    VPS_SDATA = 1 << 2,
    VPS_RFC3164 = 1 << 3,
    VPS_RFC5424 = 1 << 4,
    VPS_SELECTED = 1 << 5,
    VPS_ALL_MACROS = 1 << 6,
};

enum xform_kind { X_ADD_PREFIX, X_REPLACE_PREFIX, X_SHIFT };

struct vp_xform {
    enum xform_kind kind;
    char *a, *b;
    int n;
};

/* A --rekey/--key glob with the transformations that follow it. */
struct vp_set {
    char *glob;
    struct vp_xform *x;
    size_t nx, capx;
};

struct vp_glob {
    char *pat;
    bool include;
};

struct vp_pair {
    char *name;
    struct tpl *t;
};

struct vp_state {
    bool values;
    unsigned scopes;
    struct vp_glob *globs;
    size_t nglobs, capglobs;
    struct vp_set *sets;
    size_t nsets, capsets;
    struct vp_pair *pairs;
    size_t npairs, cappairs;
    /* while parsing: the key of a pending --rekey, and whether sets[nsets-1] is still open */
    char *key;
    bool set_open;
};

enum {
    VP_SCOPE,
    VP_EXCLUDE,
    VP_KEY,
    VP_REKEY,
    VP_PAIR,
    VP_SHIFT,
    VP_ADD_PREFIX,
    VP_REPLACE_PREFIX,
    VP_SUBKEYS
};

static const struct opt_def vp_opts[] = {
    {"scope", 's', OPT_STRING, VP_SCOPE},
    {"exclude", 'x', OPT_STRING, VP_EXCLUDE},
    {"key", 'k', OPT_STRING, VP_KEY},
    {"rekey", 'r', OPT_STRING, VP_REKEY},
    {"pair", 'p', OPT_STRING, VP_PAIR},
    {"shift", 'S', OPT_STRING, VP_SHIFT},
    {"add-prefix", 'A', OPT_STRING, VP_ADD_PREFIX},
    {"replace-prefix", 'R', OPT_STRING, VP_REPLACE_PREFIX},
    {"replace", 0, OPT_STRING, VP_REPLACE_PREFIX},
    {"subkeys", 0, OPT_STRING, VP_SUBKEYS},
    {NULL, 0, OPT_FLAG, 0},
};

static void
vp_finish_key(struct vp_state *st)
{
    st->set_open = false;
    free(st->key);
    st->key = NULL;
}

static void
vp_start_key(struct vp_state *st, const char *key)
{
    vp_finish_key(st);
    st->key = xstrdup(key);
}

/* Adds comma separated globs. */
static void
vp_add_globs(struct vp_state *st, const char *list, bool include)
{
    const char *p = list;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        st->globs = xgrow(st->globs, &st->capglobs, st->nglobs + 1, sizeof(*st->globs));
        st->globs[st->nglobs].pat = xstrndup(p, n);
        st->globs[st->nglobs++].include = include;
        if (!comma) break;
        p = comma + 1;
    }
}

/* The open transformation set, made from the pending key if there is none. */
static struct vp_set *
vp_open_set(struct vp_state *st, const char *opt, struct buf *err)
{
    struct vp_set *set;

    if (st->set_open) return &st->sets[st->nsets - 1];
    if (!st->key) {
        buf_printf(err, "Error parsing value-pairs: --%s used without --key or --rekey", opt);
        return NULL;
    }
    st->sets = xgrow(st->sets, &st->capsets, st->nsets + 1, sizeof(*st->sets));
    set = &st->sets[st->nsets++];
    memset(set, 0, sizeof(*set));
    set->glob = st->key;
    st->key = NULL;
    st->set_open = true;
    return set;
}

static void
vp_add_xform(struct vp_set *set, enum xform_kind kind, const char *a, const char *b, int n)
{
    struct vp_xform *x;

    set->x = xgrow(set->x, &set->capx, set->nx + 1, sizeof(*set->x));
    x = &set->x[set->nx++];
    x->kind = kind;
    x->a = a ? xstrdup(a) : NULL;
    x->b = b ? xstrdup(b) : NULL;
    x->n = n;
}

static bool
vp_add_scopes(struct vp_state *st, const char *list, struct buf *err)
{
    static const struct {
        const char *name;
        unsigned bits;
    } scopes[] = {
        {"none", 0},
        {"nv-pairs", VPS_NV},
        {"dot-nv-pairs", VPS_DOT},
        {"all-nv-pairs", VPS_NV | VPS_DOT},
        {"rfc3164", VPS_RFC3164},
        {"core", VPS_RFC3164},
        {"base", VPS_RFC3164},
        {"rfc5424", VPS_RFC5424},
        {"syslog-proto", VPS_RFC5424},
        {"selected-macros", VPS_SELECTED},
        {"all-macros", VPS_ALL_MACROS},
        {"sdata", VPS_SDATA},
        {"everything", VPS_ALL_MACROS | VPS_NV | VPS_DOT},
    };
    const char *p = list;
    size_t i;

    if (!*p) return true; /* GLib splits "" into nothing */
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        for (i = 0; i < ARRAY_LEN(scopes); i++)
            if (strlen(scopes[i].name) == n && !memcmp(scopes[i].name, p, n)) break;
        if (i == ARRAY_LEN(scopes)) {
            buf_printf(err, "Error parsing value-pairs: unknown scope %.*s", (int)n, p);
            return false;
        }
        st->scopes |= scopes[i].bits;
        if (!comma) return true;
        p = comma + 1;
    }
}

/* NAME=TEMPLATE; a type hint written as TYPE(TEMPLATE) is dropped, corral has no typed values. */
static bool
vp_add_pair(struct vp_state *st, const char *spec, struct buf *err)
{
    const char *eq = strchr(spec, '='), *v, *sp;
    char *tsrc;
    struct vp_pair *p;
    size_t vlen;

    if (!eq) {
        buf_printf(err, "Error parsing value-pairs: expected an equal sign in key=value pair");
        return false;
    }
    v = eq + 1;
    vlen = strlen(v);
    sp = v;
    while (*sp == '_' || (*sp >= 'a' && *sp <= 'z') || (*sp >= 'A' && *sp <= 'Z') ||
           (*sp >= '0' && *sp <= '9'))
        sp++;
    while (*sp == ' ' || *sp == '\t') sp++;
    if (*sp == '(' && (v[0] == '_' || ((v[0] | 0x20) >= 'a' && (v[0] | 0x20) <= 'z')) &&
        strchr(sp, ')') == v + vlen - 1) {
        tsrc = xstrndup(sp + 1, (size_t)(v + vlen - 1 - (sp + 1)));
    } else {
        tsrc = xstrdup(v);
    }
    st->pairs = xgrow(st->pairs, &st->cappairs, st->npairs + 1, sizeof(*st->pairs));
    p = &st->pairs[st->npairs++];
    p->name = xstrndup(spec, (size_t)(eq - spec));
    p->t = compile_tpl(tsrc, err);
    free(tsrc);
    return p->t != NULL;
}

static bool
vp_opt(void *ctx, int id, const char *v, int ival, struct buf *err)
{
    struct vp_state *st = ctx;
    struct vp_set *set;
    char *glob;
    const char *eq;

    (void)ival;
    switch (id) {
    case VP_SCOPE: vp_finish_key(st); return vp_add_scopes(st, v, err);
    case VP_EXCLUDE:
        vp_finish_key(st);
        vp_add_globs(st, v, false);
        return true;
    case VP_KEY:
        vp_start_key(st, v);
        vp_add_globs(st, v, true);
        return true;
    case VP_REKEY: vp_start_key(st, v); return true;
    case VP_PAIR: vp_finish_key(st); return vp_add_pair(st, v, err);
    case OPT_REST:
        if (strchr(v, '=')) return vp_add_pair(st, v, err);
        vp_start_key(st, v);
        vp_add_globs(st, v, true);
        return true;
    case VP_SHIFT:
        if (!(set = vp_open_set(st, "shift", err))) return false;
        vp_add_xform(set, X_SHIFT, NULL, NULL, atoi(v));
        return true;
    case VP_ADD_PREFIX:
        if (!(set = vp_open_set(st, "add-prefix", err))) return false;
        vp_add_xform(set, X_ADD_PREFIX, v, NULL, 0);
        return true;
    case VP_REPLACE_PREFIX:
        if (!(set = vp_open_set(st, "replace-prefix", err))) return false;
        if (!(eq = strchr(v, '='))) {
            buf_printf(err, "Error parsing value-pairs: rekey replace-prefix construct should be "
                            "in the format string=replacement");
            return false;
        }
        glob = xstrndup(v, (size_t)(eq - v));
        vp_add_xform(set, X_REPLACE_PREFIX, glob, eq + 1, 0);
        free(glob);
        return true;
    case VP_SUBKEYS:
        glob = xmalloc(strlen(v) + 2);
        strcpy(glob, v);
        strcat(glob, "*");
        vp_add_globs(st, glob, true);
        vp_start_key(st, glob);
        free(glob);
        set = vp_open_set(st, "subkeys", err);
        vp_add_xform(set, X_REPLACE_PREFIX, v, "", 0);
        return true;
    default: return true;
    }
}

static void
vp_free(void *p)
{
    struct vp_state *st = p;
    size_t i, k;

    for (i = 0; i < st->nglobs; i++) free(st->globs[i].pat);
    for (i = 0; i < st->nsets; i++) {
        for (k = 0; k < st->sets[i].nx; k++) {
            free(st->sets[i].x[k].a);
            free(st->sets[i].x[k].b);
        }
        free(st->sets[i].x);
        free(st->sets[i].glob);
    }
    for (i = 0; i < st->npairs; i++) {
        free(st->pairs[i].name);
        tpl_free(st->pairs[i].t);
    }
    free(st->globs);
    free(st->sets);
    free(st->pairs);
    free(st->key);
    free(st);
}

static bool
vp_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err, bool values)
{
    struct vp_state *st = xcalloc(1, sizeof(*st));
    char **args = unquote_args(argc, rawq);
    int npos;

    (void)raw;
    st->values = values;
    call->state = st;
    npos = parse_options(args, argc, vp_opts, vp_opt, st, true, NULL, err);
    vp_finish_key(st);
    free_args(argc, args);
    return npos >= 0;
}

static bool
values_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    return vp_prepare(call, argc, raw, rawq, err, true);
}

static bool
names_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    return vp_prepare(call, argc, raw, rawq, err, false);
}

/* One collected name-value pair: offsets into the arena, seq orders duplicates. */
struct vp_entry {
    size_t name, nlen, val, vlen, seq;
};

static const char *vp_sort_arena;

static int
vp_cmp(const void *x, const void *y)
{
    const struct vp_entry *a = x, *b = y;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int c = memcmp(vp_sort_arena + a->name, vp_sort_arena + b->name, n);

    if (c) return c;
    if (a->nlen != b->nlen) return a->nlen < b->nlen ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Whether a name is in the set: the last glob it matches decides, else the scope does. */
static bool
vp_selected(const struct vp_state *st, const char *name, size_t len, bool in_scope)
{
    size_t i;

    for (i = 0; i < st->nglobs; i++)
        if (glob_match(st->globs[i].pat, name, len)) in_scope = st->globs[i].include;
    return in_scope;
}

/* Appends name (rekeyed) and value to the arena and an entry for them. */
static void
vp_collect(const struct vp_state *st, struct buf *arena, struct buf *ents, const char *name,
           size_t nlen, const char *val, size_t vlen)
{
    struct vp_entry e;
    struct buf *key = tpl_scratch_get(), *tmp;
    size_t i, k;

    buf_append(key, name, nlen);
    for (i = 0; i < st->nsets; i++) {
        const struct vp_set *set = &st->sets[i];
        if (!glob_match(set->glob, key->p, key->len)) continue;
        for (k = 0; k < set->nx; k++) {
            const struct vp_xform *x = &set->x[k];
            size_t alen = x->a ? strlen(x->a) : 0;
            tmp = tpl_scratch_get();
            if (x->kind == X_ADD_PREFIX) {
                buf_puts(tmp, x->a);
                buf_append(tmp, key->p, key->len);
            } else if (x->kind == X_REPLACE_PREFIX && key->len >= alen &&
                       !memcmp(key->p, x->a, alen)) {
                buf_puts(tmp, x->b);
                buf_append(tmp, key->p + alen, key->len - alen);
            } else if (x->kind == X_SHIFT && x->n >= 0 && (size_t)x->n <= key->len) {
                buf_append(tmp, key->p + x->n, key->len - (size_t)x->n);
            } else {
                /* no change; 3.38 also ignores a shift beyond the end */
                buf_append(tmp, key->p, key->len);
            }
            buf_reset(key);
            buf_append(key, tmp->p, tmp->len);
            tpl_scratch_put(tmp);
        }
    }
    e.name = arena->len;
    e.nlen = key->len;
    buf_append(arena, key->p, key->len);
    e.val = arena->len;
    e.vlen = vlen;
    buf_append(arena, val, vlen);
    e.seq = ents->len / sizeof(e);
    buf_append(ents, &e, sizeof(e));
    tpl_scratch_put(key);
}

/* Macros of the rfc3164/rfc5424/selected-macros/all-macros scopes. */
static const char *const vp_macros_rfc3164[] = {"FACILITY", "PRIORITY", "DATE",    "HOST",
                                                "PROGRAM",  "PID",      "MESSAGE", NULL};
static const char *const vp_macros_rfc5424[] = {"MSGID", NULL};
static const char *const vp_macros_selected[] = {"TAGS", "SOURCEIP", "SEQNUM", NULL};
static const char *const vp_macros_all[] = {"FACILITY",
                                            "FACILITY_NUM",
                                            "PRIORITY",
                                            "LEVEL",
                                            "SEVERITY",
                                            "LEVEL_NUM",
                                            "SEVERITY_NUM",
                                            "PRI",
                                            "TAG",
                                            "TAGS",
                                            "MSGHDR",
                                            "SDATA",
                                            "LOGHOST",
                                            "DATE",
                                            "FULLDATE",
                                            "ISODATE",
                                            "STAMP",
                                            "YEAR",
                                            "MONTH",
                                            "MONTH_ABBREV",
                                            "MONTH_NAME",
                                            "DAY",
                                            "HOUR",
                                            "HOUR12",
                                            "AMPM",
                                            "MIN",
                                            "SEC",
                                            "MSEC",
                                            "USEC",
                                            "WEEKDAY",
                                            "WEEK_DAY_ABBREV",
                                            "WEEK_DAY_NAME",
                                            "WEEK_DAY",
                                            "WEEK",
                                            "DAY_OF_YEAR",
                                            "TZOFFSET",
                                            "TZ",
                                            "UNIXTIME",
                                            "HOST",
                                            "HOST_FROM",
                                            "PROGRAM",
                                            "PID",
                                            "MSGID",
                                            "MESSAGE",
                                            "SOURCEIP",
                                            NULL};

static void
vp_collect_macros(const struct vp_state *st, const struct tpl_env *env, const struct msg *m,
                  const char *const *names, struct buf *arena, struct buf *ents)
{
    struct buf *v = tpl_scratch_get();

    for (; *names; names++) {
        size_t nlen = strlen(*names);
        int id = macro_lookup(*names, nlen);
        if (!vp_selected(st, *names, nlen, true)) continue;
        buf_reset(v);
        if (id >= 0) {
            macro_eval(id, env, m, v);
        } else {
            nv_handle h = nv_lookup(*names, nlen);
            size_t len;
            const char *s = h ? msg_get(m, h, &len) : NULL;
            if (s) buf_append(v, s, len);
        }
        /* unset macros are left out (3.38's output could not be observed: pdbtool crashes) */
        if (v->len) vp_collect(st, arena, ents, *names, nlen, v->p, v->len);
    }
    tpl_scratch_put(v);
}

/*
 * $(names [value-pairs options]) and $(values ...): the selected name-value
 * pairs of the current message sorted by name, as a list.  Without --scope
 * nothing is selected, as in 3.38.
 */
static void
vp_eval(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct vp_state *st = call->state;
    struct buf *arena, *ents, *v;
    struct tpl_env one;
    const struct msg *m;
    struct vp_entry *e;
    size_t i, n, start = out->len;

    if (!env->nmsgs) return;
    m = env->msgs[env->nmsgs - 1];
    arena = tpl_scratch_get();
    ents = tpl_scratch_get();
    if (st->scopes & (VPS_RFC3164 | VPS_RFC5424 | VPS_SELECTED))
        vp_collect_macros(st, env, m, vp_macros_rfc3164, arena, ents);
    if (st->scopes & VPS_RFC5424) vp_collect_macros(st, env, m, vp_macros_rfc5424, arena, ents);
    if (st->scopes & VPS_SELECTED) vp_collect_macros(st, env, m, vp_macros_selected, arena, ents);
    if (st->scopes & VPS_ALL_MACROS) vp_collect_macros(st, env, m, vp_macros_all, arena, ents);
    for (i = 0; i < msg_nvalues(m); i++) {
        const char *val, *name;
        size_t vlen, nlen;
        nv_handle h = msg_value_at(m, i, &val, &vlen);
        bool in;
        name = nv_name(h, &nlen);
        if (!name) continue;
        in = (name[0] == '.' && (st->scopes & VPS_DOT)) ||
             (name[0] != '.' && (st->scopes & VPS_NV)) ||
             (nlen > 7 && !memcmp(name, ".SDATA.", 7) && (st->scopes & (VPS_SDATA | VPS_RFC5424)));
        if (vp_selected(st, name, nlen, in)) vp_collect(st, arena, ents, name, nlen, val, vlen);
    }
    /* explicit pairs are always included and override a value of the same name */
    env_one(&one, env, env->nmsgs - 1);
    v = tpl_scratch_get();
    for (i = 0; i < st->npairs; i++) {
        buf_reset(v);
        tpl_eval(st->pairs[i].t, &one, v);
        vp_collect(st, arena, ents, st->pairs[i].name, strlen(st->pairs[i].name), v->p, v->len);
    }
    tpl_scratch_put(v);
    e = (struct vp_entry *)ents->p;
    n = ents->len / sizeof(*e);
    vp_sort_arena = arena->p;
    if (n > 1) qsort(e, n, sizeof(*e), vp_cmp);
    for (i = 0; i < n; i++) {
        /* of equal names the one collected last wins */
        if (i + 1 < n && e[i].nlen == e[i + 1].nlen &&
            !memcmp(arena->p + e[i].name, arena->p + e[i + 1].name, e[i].nlen))
            continue;
        list_comma(out, start);
        if (st->values)
            list_encode(out, arena->p + e[i].val, e[i].vlen);
        else
            list_encode(out, arena->p + e[i].name, e[i].nlen);
        if (over_cap(out, start)) break;
    }
    tpl_scratch_put(arena);
    tpl_scratch_put(ents);
}

/* ---- conditions and the message set ---- */

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

static const struct opt_def grep_opts[] = {
    {"max-count", 'm', OPT_INT, 0},
    {NULL, 0, OPT_FLAG, 0},
};

/*
 * Shared prepare: options (grep and context-lookup only), a filter
 * expression, then nmin..nmax templates (nmax < 0: any number).
 */
static bool
cond_prepare(struct tfunc_call *call, int argc, char **rawq, struct buf *err, const char *fname,
             const struct opt_def *opts, int nmin, int nmax, const char *usage)
{
    struct cond_state *st = xcalloc(1, sizeof(*st));
    char **args = unquote_args(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos, i;
    bool ok = false;

    call->state = st;
    if (opts) {
        npos = parse_options(args, argc, opts, cond_opt, st, false, pos, err);
    } else {
        for (i = 0; i < argc; i++) pos[i] = i;
        npos = argc;
    }
    if (npos < 0) goto out;
    if (npos - 1 < nmin || (nmax >= 0 && npos - 1 > nmax)) {
        buf_printf(err, usage, fname);
        goto out;
    }
    st->f = compile_filter(fname, args[pos[0]], err);
    ok = st->f && compile_positionals(call, args, pos + 1, npos - 1, err);
out:
    free(pos);
    free_args(argc, args);
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
tf_if(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct cond_state *st = call->state;

    tfunc_arg(call, filter_eval(st->f, env) ? 0 : 1, env, out);
}

/*
 * grep and context-lookup: for each message of the set, oldest first, whose
 * filter holds (evaluated on that message alone, without a context id, as in
 * 3.38), every template evaluated on that message.  grep joins the results
 * with commas as they are; context-lookup makes a proper list.
 */
static void
select_messages(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out,
                bool encode)
{
    const struct cond_state *st = call->state;
    struct buf *b = tpl_scratch_get();
    size_t i, start = out->len;
    int count = 0, k;
    bool first = true;

    for (i = 0; i < env->nmsgs; i++) {
        struct tpl_env one, bare;
        env_one(&one, env, i);
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
                list_encode(out, b->p, b->len);
            } else {
                tfunc_arg(call, k, &one, out);
            }
        }
        if (over_cap(out, start)) break;
        if (st->max_count && count >= st->max_count) break;
    }
    tpl_scratch_put(b);
}

static void
tf_grep(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    select_messages(call, env, out, false);
}

static void
tf_context_lookup(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    select_messages(call, env, out, true);
}

/* $(context-values T...): every template on every message of the set, oldest first, as a list. */
static void
tf_context_values(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct buf *b = tpl_scratch_get();
    size_t i, start = out->len;
    int k;

    for (i = 0; i < env->nmsgs; i++) {
        struct tpl_env one;
        env_one(&one, env, i);
        for (k = 0; k < call->argc; k++) {
            if (i || k) buf_putc(out, ',');
            buf_reset(b);
            tfunc_arg(call, k, &one, b);
            list_encode(out, b->p, b->len);
        }
        if (over_cap(out, start)) break;
    }
    tpl_scratch_put(b);
}

static void
tf_context_length(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    (void)call;
    buf_printf(out, "%zu", env->nmsgs);
}

/* $(filter (EXPR) LIST): the items for which EXPR holds with $_ = the item, written raw (3.38). */
static void
tf_filter(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct cond_state *st = call->state;
    struct buf *list = arg_get(call, 0, env);
    struct tpl_env e = *env;
    struct lscan s;
    size_t start = out->len;

    lscan_init(&s, &list, 1);
    while (lscan_next(&s)) {
        e.context_id = buf_str(s.val);
        e.context_id_len = s.val->len;
        if (!filter_eval(st->f, &e)) continue;
        list_comma(out, start);
        buf_append(out, s.val->p, s.val->len);
        if (over_cap(out, start)) break;
    }
    lscan_done(&s);
    tpl_scratch_put(list);
}

/* $(map TEMPLATE LIST), $(iterate TEMPLATE INITIAL): TEMPLATE sees the item/value as $_. */
struct map_state {
    struct tpl *t;
    struct buf cur; /* iterate: the value the next evaluation returns */
};

static void
map_free(void *p)
{
    struct map_state *st = p;

    tpl_free(st->t);
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

static const struct opt_def no_opts[] = {{NULL, 0, OPT_FLAG, 0}};

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
    args = unquote_args(argc, rawq);
    st->t = compile_tpl(args[0], err);
    if (st->t && compile_call_args(call, args, 1, 2, err)) {
        free_args(argc, args);
        return true;
    }
    free_args(argc, args);
    return false;
}

/* As in 3.38 the template is evaluated on the oldest message of the set (its messages[0]). */
static void
tf_map(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    const struct map_state *st = call->state;
    struct buf *list = arg_get(call, 0, env), *b = tpl_scratch_get();
    struct tpl_env one;
    struct lscan s;
    size_t start = out->len;

    if (env->nmsgs)
        env_one(&one, env, 0);
    else
        one = *env;
    lscan_init(&s, &list, 1);
    while (lscan_next(&s)) {
        one.context_id = buf_str(s.val);
        one.context_id_len = s.val->len;
        list_comma(out, start);
        buf_reset(b);
        tpl_eval(st->t, &one, b);
        list_encode(out, b->p, b->len);
        if (over_cap(out, start)) break;
    }
    lscan_done(&s);
    tpl_scratch_put(b);
    tpl_scratch_put(list);
}

static bool
iterate_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct map_state *st = xcalloc(1, sizeof(*st));
    char **args = unquote_args(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos;
    bool ok = false;

    (void)raw;
    call->state = st;
    npos = parse_options(args, argc, no_opts, no_opt, NULL, false, pos, err);
    if (npos >= 0 && npos != 2)
        buf_printf(err, "Wrong number of arguments. Example: $(iterate template initial-value).");
    if (npos == 2) {
        st->t = compile_tpl(args[pos[0]], err);
        buf_puts(&st->cur, args[pos[1]]); /* the initial value is literal text */
        ok = st->t != NULL;
    }
    free(pos);
    free_args(argc, args);
    return ok;
}

/*
 * Returns the current value, then replaces it with TEMPLATE evaluated with
 * $_ = that value (on the oldest message, as 3.38).  The state lives in the
 * compiled template, so it advances once per evaluation; it is capped at
 * TF_MAX_OUTPUT.
 */
static void
tf_iterate(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    struct map_state *st = call->state;
    struct buf *next = tpl_scratch_get();
    struct tpl_env one;

    buf_append(out, st->cur.p, st->cur.len);
    if (env->nmsgs)
        env_one(&one, env, 0);
    else
        one = *env;
    one.context_id = buf_str(&st->cur);
    one.context_id_len = st->cur.len;
    tpl_eval(st->t, &one, next);
    if (next->len > TF_MAX_OUTPUT) buf_truncate(next, TF_MAX_OUTPUT);
    buf_reset(&st->cur);
    buf_append(&st->cur, next->p, next->len);
    tpl_scratch_put(next);
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
tf_unreachable(const struct tfunc_call *call, const struct tpl_env *env, struct buf *out)
{
    (void)call;
    (void)env;
    (void)out;
}

static const struct tfunc functions[] = {
    /* conditions */
    {"if", 0, -1, if_prepare, tf_if, cond_free},
    {"or", 0, -1, NULL, tf_or, NULL},
    {"grep", 0, -1, grep_prepare, tf_grep, cond_free},
    /* strings */
    {"echo", 0, -1, NULL, tf_echo, NULL},
    {"length", 0, -1, NULL, tf_length, NULL},
    {"substr", 0, -1, NULL, tf_substr, NULL},
    {"strip", 0, -1, NULL, tf_strip, NULL},
    {"sanitize", 0, -1, sanitize_prepare, tf_sanitize, sanitize_free},
    {"lowercase", 0, -1, NULL, tf_lowercase, NULL},
    {"uppercase", 0, -1, NULL, tf_uppercase, NULL},
    {"replace-delimiter", 0, -1, NULL, tf_replace_delimiter, NULL},
    {"padding", 0, -1, padding_prepare, tf_padding, padding_free},
    {"binary", 0, -1, binary_prepare, tf_binary, binary_free},
    {"base64-encode", 0, -1, NULL, tf_base64_encode, NULL},
    {"url-encode", 0, -1, NULL, tf_url_encode, NULL},
    {"url-decode", 0, -1, NULL, tf_url_decode, NULL},
    {"indent-multi-line", 0, -1, NULL, tf_indent_multi_line, NULL},
    {"env", 0, -1, NULL, tf_env, NULL},
    {"dirname", 0, -1, NULL, tf_dirname, NULL},
    {"basename", 0, -1, NULL, tf_basename, NULL},
    {"ipv4-to-int", 0, -1, NULL, tf_ipv4_to_int, NULL},
    {"dns-resolve-ip", 0, -1, dns_prepare, tf_dns_resolve_ip, free},
    {"template", 0, -1, template_prepare, tf_unreachable, NULL},
    /* lists */
    {"implode", 0, -1, NULL, tf_implode, NULL},
    {"explode", 0, -1, NULL, tf_explode, NULL},
    {"values", 0, -1, values_prepare, vp_eval, vp_free},
    {"names", 0, -1, names_prepare, vp_eval, vp_free},
    {"list-concat", 0, -1, NULL, tf_list_concat, NULL},
    {"list-head", 0, -1, NULL, tf_list_head, NULL},
    {"list-nth", 0, -1, NULL, tf_list_nth, NULL},
    {"list-tail", 0, -1, NULL, tf_list_tail, NULL},
    {"list-slice", 0, -1, NULL, tf_list_slice, NULL},
    {"list-count", 0, -1, NULL, tf_list_count, NULL},
    {"list-append", 0, -1, NULL, tf_list_append, NULL},
    {"list-search", 0, -1, search_prepare, tf_list_search, search_free},
    {"map", 0, -1, map_prepare, tf_map, map_free},
    {"filter", 0, -1, filter_prepare, tf_filter, cond_free},
    {"iterate", 0, -1, iterate_prepare, tf_iterate, map_free},
    /* numbers */
    {"+", 0, -1, NULL, tf_add, NULL},
    {"-", 0, -1, NULL, tf_sub, NULL},
    {"*", 0, -1, NULL, tf_mul, NULL},
    {"/", 0, -1, NULL, tf_div, NULL},
    {"%", 0, -1, NULL, tf_mod, NULL},
    {"sum", 1, 1, NULL, tf_sum, NULL},
    {"min", 1, 1, NULL, tf_min, NULL},
    {"max", 1, 1, NULL, tf_max, NULL},
    {"average", 1, 1, NULL, tf_average, NULL},
    {"round", 0, -1, NULL, tf_round, NULL},
    {"ceil", 0, -1, NULL, tf_ceil, NULL},
    {"floor", 0, -1, NULL, tf_floor, NULL},
    /* the message set (correlation context) */
    {"context-length", 0, -1, NULL, tf_context_length, NULL},
    {"context-values", 0, -1, NULL, tf_context_values, NULL},
    {"context-lookup", 0, -1, lookup_prepare, tf_context_lookup, cond_free},
};

bool
tfunc_refs(const struct tfunc_call *call, unsigned char *keep)
{
    const char *name = call->fn->name;
    int i;

    /* these list names at run time, or read what the configuration names */
    if (!strcmp(name, "values") || !strcmp(name, "names") || !strcmp(name, "template"))
        return false;
    for (i = 0; i < call->argc; i++)
        if (call->argv && !tpl_refs(call->argv[i], keep)) return false;
    if (call->fn->free_state == cond_free && call->state) {
        const struct cond_state *st = call->state;
        if (!filter_refs(st->f, keep)) return false;
    }
    if (call->fn->free_state == map_free && call->state) {
        const struct map_state *st = call->state;
        if (!tpl_refs(st->t, keep)) return false;
    }
    return true;
}

const struct tfunc *
tfunc_lookup(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < ARRAY_LEN(functions); i++)
        if (strlen(functions[i].name) == len && memcmp(functions[i].name, name, len) == 0)
            return &functions[i];
    return NULL;
}
