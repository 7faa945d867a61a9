/*
 * tf_string: the string functions of syslog-ng 3.38's basicfuncs, $(echo),
 * $(substr), $(sanitize), $(uppercase), $(url-encode), $(padding) and the
 * like.  Behaviour, quirks included, follows what 3.38 does as observed with
 * pdbtool; the places that differ on purpose say so ("deviation").
 */
#include "engine/tfunc_int.h"
#include "engine/base64.h"
#include "engine/tfargs.h"
#include "engine/unicase.h"
#include "engine/xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void
tf_echo(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        if (i) buf_putc(out, ' ');
        tfunc_arg(call, i, env, out);
    }
}

/* Bytes, not characters: 3.38 counts bytes. */
static void
tf_length(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        if (i) buf_putc(out, ' ');
        buf_put_uint(out, b->len);
        template_scratch_put(b);
    }
}

/*
 * $(substr STR START [LEN]): byte offsets; a negative START counts from the end, a negative LEN
 * stops that many bytes short of it.
 */
static void
tf_substr(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct buf *s, *a, *b = NULL;
    int64_t start, len, L;
    bool ok;

    if (call->argc < 2 || call->argc > 3) return;
    s = tfunc_arg_get(call, 0, env);
    a = tfunc_arg_get(call, 1, env);
    L = (int64_t)s->len;
    ok = tf_num_parse_int(buf_str(a), 10, &start);
    len = L;
    if (ok && call->argc == 3) {
        b = tfunc_arg_get(call, 2, env);
        ok = tf_num_parse_int(buf_str(b), 10, &len);
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
    template_scratch_put(s);
    template_scratch_put(a);
    if (b) template_scratch_put(b);
}

/* C-locale isspace, what 3.38's strip uses. */
static bool
is_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static void
tf_strip(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    size_t start = out->len;
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        size_t s = 0, e = b->len;
        while (e > 0 && is_space(b->p[e - 1])) e--;
        while (s < e && is_space(b->p[s])) s++;
        if (s < e) {
            if (out->len > start) buf_putc(out, ' ');
            buf_append(out, b->p + s, e - s);
        }
        template_scratch_put(b);
    }
}

struct sanitize_state {
    bool ctrl;
    char *invalid;
    char repl;
};

enum { SAN_CTRL, SAN_NOCTRL, SAN_INVALID, SAN_REPL };

static const struct tfargs_opt sanitize_opts[] = {
    {"ctrl-chars", 'c', TFARGS_FLAG, SAN_CTRL},
    {"no-ctrl-chars", 'C', TFARGS_FLAG, SAN_NOCTRL},
    {"invalid-chars", 'i', TFARGS_STRING, SAN_INVALID},
    {"replacement", 'r', TFARGS_STRING, SAN_REPL},
    {NULL, 0, TFARGS_FLAG, 0},
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

static bool
sanitize_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct sanitize_state *st = xcalloc(1, sizeof(*st));
    char **args = tfargs_unquote(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos;
    bool ok;

    (void)raw;
    st->ctrl = true;
    st->repl = '_';
    call->state = st;
    npos = tfargs_parse(args, argc, sanitize_opts, sanitize_opt, st, false, pos, err);
    ok = npos >= 0 && tfargs_compile_positionals(call, args, pos, npos, err);
    if (!st->invalid) st->invalid = xstrdup("/");
    free(pos);
    tfargs_free(argc, args);
    return ok;
}

/* Control characters (unless -C) and the invalid set become the replacement; joined with '/'. */
static void
tf_sanitize(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct sanitize_state *st = call->state;
    int i;
    size_t k;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        for (k = 0; k < b->len; k++) {
            unsigned char c = (unsigned char)b->p[k];
            /* c == 0 matches too: 3.38 looks it up with strchr(), which finds the terminator */
            if ((st->ctrl && c < 32) || c == 0 || strchr(st->invalid, c))
                buf_putc(out, st->repl);
            else
                buf_putc(out, (char)c);
        }
        if (i < call->argc - 1) buf_putc(out, '/');
        template_scratch_put(b);
    }
}

static void
case_args(const struct tfunc_call *call, const struct template_env *env, struct buf *out,
          bool upper)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        unicase_map(out, buf_str(b), b->len, upper);
        if (i < call->argc - 1) buf_putc(out, ' ');
        template_scratch_put(b);
    }
}

static void
tf_lowercase(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    case_args(call, env, out, false);
}

static void
tf_uppercase(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    case_args(call, env, out, true);
}

/* $(replace-delimiter SET NEW TEXT): every byte of SET in TEXT becomes the first byte of NEW. */
static void
tf_replace_delimiter(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct tfunc_args a;
    const char *text;
    size_t i, n;
    char repl;

    if (call->argc != 3) return;
    tfunc_args_eval(&a, call, 0, env);
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
    tfunc_args_release(&a);
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
    args = tfargs_unquote(argc, rawq);
    st = xcalloc(1, sizeof(*st));
    call->state = st;
    if (!tf_num_parse_int(args[1], 10, &w)) {
        buf_printf(err, "Padding template function requires a number as second argument!");
    } else if (w < 0 || w > (int64_t)TF_MAX_OUTPUT) {
        /* 3.38 aborts on a negative width and runs out of memory on a huge one */
        buf_printf(err, "$(padding) width %" PRId64 " out of range (0..%u)", w, TF_MAX_OUTPUT);
    } else {
        st->width = (size_t)w;
        st->pad = xmalloc(st->width + 1);
        plen = argc >= 3 ? strlen(args[2]) : 0;
        for (i = 0; i < st->width; i++) st->pad[i] = plen ? args[2][i % plen] : ' ';
        ok = tfargs_compile(call, args, 0, 1, err);
    }
    tfargs_free(argc, args);
    return ok;
}

static void
tf_padding(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct padding_state *st = call->state;
    struct buf *b = tfunc_arg_get(call, 0, env);

    if (b->len <= st->width) buf_append(out, st->pad, st->width - b->len);
    buf_append(out, b->p, b->len);
    template_scratch_put(b);
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
    args = tfargs_unquote(argc, rawq);
    octets = xcalloc(1, sizeof(*octets));
    call->state = octets;
    for (i = 0; i < argc && ok; i++) {
        int64_t v;
        if (!tf_num_parse_int(args[i], 0, &v)) {
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
    tfargs_free(argc, args);
    return ok;
}

static void
binary_free(void *p)
{
    buf_free(p);
    free(p);
}

static void
tf_binary(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct buf *octets = call->state;

    (void)env;
    buf_append(out, octets->p, octets->len);
}

/* Encodes the concatenated arguments; input beyond 3/4 of TF_MAX_OUTPUT is dropped. */
static void
tf_base64_encode(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct buf *in = template_scratch_get();
    size_t n;
    int k;

    for (k = 0; k < call->argc && in->len <= TF_MAX_OUTPUT / 4 * 3; k++)
        tfunc_arg(call, k, env, in);
    n = in->len < TF_MAX_OUTPUT / 4 * 3 ? in->len : TF_MAX_OUTPUT / 4 * 3;
    base64_encode(out, in->p, n);
    template_scratch_put(in);
}

/* Percent-encodes all but A-Z a-z 0-9 - . _ ~ (g_uri_escape_string); arguments concatenate. */
static void
tf_url_encode(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    size_t start = out->len;
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        const char *s = buf_str(b);
        for (; *s; s++) {
            unsigned char c = (unsigned char)*s;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                strchr("-._~", c))
                buf_putc(out, (char)c);
            else
                buf_printf(out, "%%%02X", c);
        }
        template_scratch_put(b);
        if (tfunc_over_cap(out, start)) return;
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
tf_url_decode(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
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
        template_scratch_put(b);
    }
}

/* $(env NAME...): unset names are skipped; a space follows each found one but the last argument. */
static void
tf_env(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        const char *v = getenv(buf_str(b));
        template_scratch_put(b);
        if (!v) continue;
        buf_puts(out, v);
        if (i < call->argc - 1) buf_putc(out, ' ');
    }
}

/* GLib's g_path_get_dirname(): "." without a slash; slashes before the last part dropped. */
static void
tf_dirname(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct buf *b;
    const char *s, *slash;

    if (call->argc < 1) return;
    b = tfunc_arg_get(call, 0, env);
    s = buf_str(b);
    slash = strrchr(s, '/');
    if (!slash) {
        buf_putc(out, '.');
    } else {
        while (slash > s && *slash == '/') slash--;
        buf_append(out, s, (size_t)(slash - s) + 1);
    }
    template_scratch_put(b);
}

/* GLib's g_path_get_basename(): "." for "", "/" for only slashes, trailing slashes ignored. */
static void
tf_basename(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct buf *b;
    const char *s;
    size_t last, base;

    if (call->argc < 1) return;
    b = tfunc_arg_get(call, 0, env);
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
    template_scratch_put(b);
}

/*
 * Arguments joined with ' ', then a tab after every newline not already
 * followed by one.  Deviation: 3.38 indents everything the template produced
 * up to this point, not only this function's output.
 */
static void
tf_indent_multi_line(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    struct buf *t = template_scratch_get();
    size_t i, start = out->len;

    tf_echo(call, env, t);
    for (i = 0; i < t->len; i++) {
        buf_putc(out, t->p[i]);
        if (t->p[i] == '\n' && (i + 1 == t->len || t->p[i + 1] != '\t')) buf_putc(out, '\t');
        if (out->len - start > TF_MAX_OUTPUT) break;
    }
    tfunc_over_cap(out, start);
    template_scratch_put(t);
}

const struct tfunc tf_string_funcs[] = {
    {"echo", 0, -1, NULL, tf_echo, NULL, NULL},
    {"length", 0, -1, NULL, tf_length, NULL, NULL},
    {"substr", 0, -1, NULL, tf_substr, NULL, NULL},
    {"strip", 0, -1, NULL, tf_strip, NULL, NULL},
    {"sanitize", 0, -1, sanitize_prepare, tf_sanitize, sanitize_free, NULL},
    {"lowercase", 0, -1, NULL, tf_lowercase, NULL, NULL},
    {"uppercase", 0, -1, NULL, tf_uppercase, NULL, NULL},
    {"replace-delimiter", 0, -1, NULL, tf_replace_delimiter, NULL, NULL},
    {"padding", 0, -1, padding_prepare, tf_padding, padding_free, NULL},
    {"binary", 0, -1, binary_prepare, tf_binary, binary_free, NULL},
    {"base64-encode", 0, -1, NULL, tf_base64_encode, NULL, NULL},
    {"url-encode", 0, -1, NULL, tf_url_encode, NULL, NULL},
    {"url-decode", 0, -1, NULL, tf_url_decode, NULL, NULL},
    {"indent-multi-line", 0, -1, NULL, tf_indent_multi_line, NULL, NULL},
    {"env", 0, -1, NULL, tf_env, NULL, NULL},
    {"dirname", 0, -1, NULL, tf_dirname, NULL, NULL},
    {"basename", 0, -1, NULL, tf_basename, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};
