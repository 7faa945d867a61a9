/*
 * filter: a recursive-descent parser for syslog-ng filter expressions and
 * an evaluator over the compiled tree.
 *
 *   expr   := and ("or" and)*
 *   and    := unary ("and" unary)*
 *   unary  := "not" unary | "(" expr ")" | func "(" args ")" | operand op operand
 *   operand:= "quoted template" | bare-word template
 */
#include "engine/filter.h"
#include "engine/macros.h"
#include "engine/parsers.h"
#include "engine/rematch.h"
#include "engine/xalloc.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum node_kind { F_AND, F_OR, F_NOT, F_CMP, F_MATCH, F_TAGS, F_LEVEL, F_FACILITY };

enum cmp_op { OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE };

struct filter {
    enum node_kind kind;
    struct filter *a, *b;
    /* F_CMP */
    struct template *left, *right;
    enum cmp_op op;
    bool numeric;
    /* F_MATCH: regex against a value */
    nv_handle value;
    pcre2_code *re;
    pcre2_match_data *md;
    char *literal; /* type(string): substring search */
    size_t literal_len;
    bool nocase;
    /* F_TAGS */
    tag_id *tags;
    size_t ntags;
    /* F_LEVEL, F_FACILITY: bit set of accepted codes */
    uint32_t mask;
};

/* ---- lexer ---- */

enum tok_kind { T_END, T_LPAREN, T_RPAREN, T_COMMA, T_STRING, T_WORD };

struct lexer {
    const char *s;
    size_t len, pos;
    size_t start; /* where the current token began */
    enum tok_kind kind;
    struct buf text; /* current token's text, unquoted */
    struct buf *err;
    bool failed;
};

static void
next(struct lexer *lx)
{
    const char *s = lx->s;

    buf_reset(&lx->text);
    while (lx->pos < lx->len && strchr(" \t\r\n", s[lx->pos])) lx->pos++;
    lx->start = lx->pos;
    if (lx->pos >= lx->len) {
        lx->kind = T_END;
        return;
    }
    switch (s[lx->pos]) {
    case '(':
        lx->kind = T_LPAREN;
        lx->pos++;
        return;
    case ')':
        lx->kind = T_RPAREN;
        lx->pos++;
        return;
    case ',':
        lx->kind = T_COMMA;
        lx->pos++;
        return;
    case '"':
    case '\'': {
        char q = s[lx->pos++];
        while (lx->pos < lx->len && s[lx->pos] != q) {
            char c = s[lx->pos++];
            if (c == '\\' && q == '"' && lx->pos < lx->len) {
                c = s[lx->pos++];
                switch (c) {
                case 'n': c = '\n'; break;
                case 't': c = '\t'; break;
                case 'r': c = '\r'; break;
                default: break;
                }
            }
            buf_putc(&lx->text, c);
        }
        if (lx->pos >= lx->len) {
            if (!lx->failed) buf_printf(lx->err, "unterminated string in filter expression");
            lx->failed = true;
            lx->kind = T_END;
            return;
        }
        lx->pos++;
        lx->kind = T_STRING;
        return;
    }
    default: break;
    }
    while (lx->pos < lx->len && !strchr(" \t\r\n(),\"'", s[lx->pos])) {
        /* a bare word may hold a template function call: keep its parentheses */
        if (s[lx->pos] == '$' && lx->pos + 1 < lx->len && s[lx->pos + 1] == '(') {
            int nest = 0;
            do {
                if (s[lx->pos] == '(') nest++;
                if (s[lx->pos] == ')') nest--;
                buf_putc(&lx->text, s[lx->pos++]);
            } while (lx->pos < lx->len && nest > 0);
            continue;
        }
        buf_putc(&lx->text, s[lx->pos++]);
    }
    lx->kind = T_WORD;
}

static void
fail(struct lexer *lx, const char *msg)
{
    if (!lx->failed) buf_printf(lx->err, "%s at offset %zu of filter expression", msg, lx->pos);
    lx->failed = true;
}

static bool
is_word(const struct lexer *lx, const char *w)
{
    return lx->kind == T_WORD && strcmp(buf_str(&lx->text), w) == 0;
}

/* ---- parser ---- */

static struct filter *parse_or(struct lexer *lx, int depth);

static struct filter *
node(enum node_kind kind)
{
    struct filter *f = xcalloc(1, sizeof(*f));

    f->kind = kind;
    return f;
}

static bool
compile_regex(struct filter *f, const char *re, size_t len, bool nocase, struct lexer *lx)
{
    int code;
    PCRE2_SIZE off;

    f->re = pcre2_compile((PCRE2_SPTR)re, len, nocase ? PCRE2_CASELESS : 0, &code, &off, NULL);
    if (!f->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        if (!lx->failed)
            buf_printf(lx->err, "bad regular expression '%.*s': %s", (int)len, re, (char *)msg);
        lx->failed = true;
        return false;
    }
    pcre2_jit_compile(f->re, PCRE2_JIT_COMPLETE);
    f->md = pcre2_match_data_create(1, NULL);
    return true;
}

/* Arguments of match(): the pattern, then options value(), flags(), type(). */
static struct filter *
parse_match(struct lexer *lx, nv_handle value)
{
    struct filter *f = node(F_MATCH);
    struct buf pattern = BUF_INIT;
    bool is_string = false;

    f->value = value;
    if (lx->kind != T_STRING && lx->kind != T_WORD) {
        fail(lx, "expected a pattern");
        goto out;
    }
    buf_append(&pattern, lx->text.p, lx->text.len);
    next(lx);
    while (lx->kind == T_WORD) {
        char opt[32];
        snprintf(opt, sizeof(opt), "%s", buf_str(&lx->text));
        next(lx);
        if (lx->kind != T_LPAREN) {
            fail(lx, "expected '(' after match() option");
            goto out;
        }
        next(lx);
        while (lx->kind == T_STRING || lx->kind == T_WORD || lx->kind == T_COMMA) {
            const char *arg = buf_str(&lx->text);
            if (lx->kind == T_COMMA) {
                next(lx);
                continue;
            }
            if (strcmp(opt, "value") == 0)
                f->value = nv_intern(arg, lx->text.len);
            else if (strcmp(opt, "flags") == 0 && strcmp(arg, "ignore-case") == 0)
                f->nocase = true;
            else if (strcmp(opt, "type") == 0)
                is_string = strcmp(arg, "string") == 0;
            next(lx);
        }
        if (lx->kind != T_RPAREN) {
            fail(lx, "expected ')' after match() option");
            goto out;
        }
        next(lx);
    }
    if (is_string && !f->nocase) {
        f->literal = xstrndup(buf_str(&pattern), pattern.len);
        f->literal_len = pattern.len;
    } else if (is_string) {
        /* a case-insensitive substring search is a quoted regex */
        struct buf q = BUF_INIT;
        buf_printf(&q, "\\Q%s\\E", buf_str(&pattern));
        compile_regex(f, q.p, q.len, true, lx);
        buf_free(&q);
    } else {
        compile_regex(f, buf_str(&pattern), pattern.len, f->nocase, lx);
    }
out:
    buf_free(&pattern);
    return f;
}

static uint32_t
parse_codes(struct lexer *lx, bool facility)
{
    uint32_t mask = 0;

    while (lx->kind == T_WORD || lx->kind == T_STRING || lx->kind == T_COMMA) {
        const char *w = buf_str(&lx->text), *dots;
        int lo, hi;
        if (lx->kind == T_COMMA) {
            next(lx);
            continue;
        }
        dots = strstr(w, "..");
        if (dots) {
            lo = facility ? macro_facility_code(w, (size_t)(dots - w))
                          : macro_severity_code(w, (size_t)(dots - w));
            hi = facility ? macro_facility_code(dots + 2, strlen(dots + 2))
                          : macro_severity_code(dots + 2, strlen(dots + 2));
        } else {
            lo = hi =
                facility ? macro_facility_code(w, strlen(w)) : macro_severity_code(w, strlen(w));
        }
        if (lo < 0 || hi < 0) {
            fail(lx, facility ? "unknown facility" : "unknown level");
            return 0;
        }
        if (lo > hi) {
            int t = lo;
            lo = hi;
            hi = t;
        }
        for (; lo <= hi; lo++) mask |= 1u << lo;
        next(lx);
    }
    return mask;
}

static struct filter *
parse_function(struct lexer *lx, const char *name)
{
    struct filter *f = NULL;

    /* lx is past the '(' */
    if (strcmp(name, "match") == 0)
        f = parse_match(lx, NV_MESSAGE);
    else if (strcmp(name, "message") == 0)
        f = parse_match(lx, NV_MESSAGE);
    else if (strcmp(name, "program") == 0)
        f = parse_match(lx, NV_PROGRAM);
    else if (strcmp(name, "host") == 0)
        f = parse_match(lx, NV_HOST);
    else if (strcmp(name, "tags") == 0) {
        size_t cap = 0;
        f = node(F_TAGS);
        while (lx->kind == T_STRING || lx->kind == T_WORD || lx->kind == T_COMMA) {
            if (lx->kind != T_COMMA) {
                f->tags = xgrow(f->tags, &cap, f->ntags + 1, sizeof(*f->tags));
                f->tags[f->ntags++] = tag_intern(lx->text.p ? lx->text.p : "", lx->text.len);
            }
            next(lx);
        }
    } else if (strcmp(name, "level") == 0 || strcmp(name, "priority") == 0) {
        f = node(F_LEVEL);
        f->mask = parse_codes(lx, false);
    } else if (strcmp(name, "facility") == 0) {
        f = node(F_FACILITY);
        f->mask = parse_codes(lx, true);
    } else {
        fail(lx, "unknown filter function");
        return NULL;
    }
    if (!lx->failed && lx->kind != T_RPAREN) fail(lx, "expected ')'");
    if (!lx->failed) next(lx);
    return f;
}

static bool
parse_op(const char *w, enum cmp_op *op, bool *numeric)
{
    static const struct {
        const char *name;
        enum cmp_op op;
        bool numeric;
    } ops[] = {
        {"==", OP_EQ, true},  {"!=", OP_NE, true},  {"<", OP_LT, true},   {">", OP_GT, true},
        {"<=", OP_LE, true},  {">=", OP_GE, true},  {"eq", OP_EQ, false}, {"ne", OP_NE, false},
        {"lt", OP_LT, false}, {"gt", OP_GT, false}, {"le", OP_LE, false}, {"ge", OP_GE, false},
    };
    size_t i;

    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(ops[i].name, w) == 0) {
            *op = ops[i].op;
            *numeric = ops[i].numeric;
            return true;
        }
    return false;
}

static struct template *
operand(struct lexer *lx)
{
    struct template *t;

    if (lx->kind != T_STRING && lx->kind != T_WORD) {
        fail(lx, "expected a value");
        return NULL;
    }
    t = template_compile(buf_str(&lx->text), lx->text.len, lx->err);
    if (!t) lx->failed = true;
    next(lx);
    return t;
}

static struct filter *
parse_unary(struct lexer *lx, int depth)
{
    struct filter *f;

    if (depth > 64) {
        fail(lx, "expression nested too deeply");
        return NULL;
    }
    if (is_word(lx, "not")) {
        next(lx);
        f = node(F_NOT);
        f->a = parse_unary(lx, depth + 1);
        return f;
    }
    if (lx->kind == T_LPAREN) {
        next(lx);
        f = parse_or(lx, depth + 1);
        if (lx->kind != T_RPAREN)
            fail(lx, "expected ')'");
        else
            next(lx);
        return f;
    }
    if (lx->kind == T_WORD) {
        /* a function if the next token is '(' */
        size_t save = lx->start;
        char name[32];
        snprintf(name, sizeof(name), "%s", buf_str(&lx->text));
        next(lx);
        if (lx->kind == T_LPAREN) {
            next(lx);
            return parse_function(lx, name);
        }
        /* not a function: read the word again as an operand */
        lx->pos = save;
        next(lx);
    }
    f = node(F_CMP);
    f->left = operand(lx);
    if (lx->failed) return f;
    if (lx->kind != T_WORD || !parse_op(buf_str(&lx->text), &f->op, &f->numeric)) {
        fail(lx, "expected a comparison operator (== != < > <= >= eq ne lt gt le ge)");
        return f;
    }
    next(lx);
    f->right = operand(lx);
    return f;
}

static struct filter *
parse_and(struct lexer *lx, int depth)
{
    struct filter *f = parse_unary(lx, depth);

    while (!lx->failed && is_word(lx, "and")) {
        struct filter *n = node(F_AND);
        next(lx);
        n->a = f;
        n->b = parse_unary(lx, depth);
        f = n;
    }
    return f;
}

static struct filter *
parse_or(struct lexer *lx, int depth)
{
    struct filter *f = parse_and(lx, depth);

    while (!lx->failed && is_word(lx, "or")) {
        struct filter *n = node(F_OR);
        next(lx);
        n->a = f;
        n->b = parse_and(lx, depth);
        f = n;
    }
    return f;
}

struct filter *
filter_compile(const char *src, size_t len, struct buf *err)
{
    struct lexer lx = {.s = src, .len = len, .err = err};
    struct filter *f;

    next(&lx);
    if (lx.kind == T_END && !lx.failed) {
        buf_printf(err, "empty filter expression");
        buf_free(&lx.text);
        return NULL;
    }
    f = parse_or(&lx, 0);
    if (!lx.failed && lx.kind != T_END) fail(&lx, "unexpected text");
    buf_free(&lx.text);
    if (lx.failed) {
        filter_free(f);
        return NULL;
    }
    return f;
}

void
filter_free(struct filter *f)
{
    if (!f) return;
    filter_free(f->a);
    filter_free(f->b);
    template_free(f->left);
    template_free(f->right);
    if (f->md) pcre2_match_data_free(f->md);
    if (f->re) pcre2_code_free(f->re);
    free(f->literal);
    free(f->tags);
    free(f);
}

bool
filter_refs(const struct filter *f, unsigned char *keep)
{
    if (!f) return true;
    if (f->kind == F_MATCH) keep[f->value] = 1;
    return filter_refs(f->a, keep) && filter_refs(f->b, keep) && template_refs(f->left, keep) &&
           template_refs(f->right, keep);
}

/* ---- evaluation ---- */

/* atoi() as syslog-ng 3.38 applies it: leading blanks, a sign, digits; anything else is 0. */
static long long
to_int(const char *s)
{
    long long v = 0;
    int neg = 0;

    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v') s++;
    if (*s == '-' || *s == '+') neg = *s++ == '-';
    while (*s >= '0' && *s <= '9') {
        if (v < 100000000000000000LL) v = v * 10 + (*s - '0');
        s++;
    }
    return neg ? -v : v;
}

/* The comparison's verdict on its two sides' texts. */
static bool
verdict(const struct filter *f, const char *l, const char *r)
{
    int c;

    if (f->numeric) {
        long long a = to_int(l), b = to_int(r);
        c = a < b ? -1 : a > b;
    } else {
        c = strcmp(l, r);
    }
    switch (f->op) {
    case OP_EQ: return c == 0;
    case OP_NE: return c != 0;
    case OP_LT: return c < 0;
    case OP_GT: return c > 0;
    case OP_LE: return c <= 0;
    case OP_GE: return c >= 0;
    }
    return false;
}

static bool
compare(const struct filter *f, const struct template_env *env)
{
    struct buf *l = template_scratch_get(), *r = template_scratch_get();
    bool v;

    template_eval(f->left, env, l);
    template_eval(f->right, env, r);
    v = verdict(f, buf_str(l), buf_str(r));
    template_scratch_put(l);
    template_scratch_put(r);
    return v;
}

void
filter_each_begin(struct filter_each *fe, const struct filter *f, const struct template_env *env)
{
    fe->f = f;
    fe->fixed = NULL;
    if (f->kind != F_CMP) return;
    /* one side, and only one: a comparison of two such sides does not depend on $_ at all, and
     * is rare enough to evaluate as it is */
    if (template_values_only(f->right) == template_values_only(f->left)) return;
    fe->fixed_left = template_values_only(f->left);
    fe->fixed = template_scratch_get();
    template_eval(fe->fixed_left ? f->left : f->right, env, fe->fixed);
}

bool
filter_each_eval(const struct filter_each *fe, const struct template_env *env)
{
    struct buf *other;
    bool v;

    if (!fe->fixed) return filter_eval(fe->f, env);
    other = template_scratch_get();
    template_eval(fe->fixed_left ? fe->f->right : fe->f->left, env, other);
    v = fe->fixed_left ? verdict(fe->f, buf_str(fe->fixed), buf_str(other))
                       : verdict(fe->f, buf_str(other), buf_str(fe->fixed));
    template_scratch_put(other);
    return v;
}

void
filter_each_end(struct filter_each *fe)
{
    if (fe->fixed) template_scratch_put(fe->fixed);
    fe->fixed = NULL;
}

bool
filter_eval(const struct filter *f, const struct template_env *env)
{
    const struct msg *m = env->nmsgs ? env->msgs[env->nmsgs - 1] : NULL;
    const char *v;
    size_t len, i;

    switch (f->kind) {
    case F_AND: return filter_eval(f->a, env) && filter_eval(f->b, env);
    case F_OR: return filter_eval(f->a, env) || filter_eval(f->b, env);
    case F_NOT: return !filter_eval(f->a, env);
    case F_CMP: return compare(f, env);
    case F_MATCH:
        if (!m) return false;
        v = msg_get(m, f->value, &len);
        if (!v) v = "", len = 0;
        if (f->literal) return memmem(v, len, f->literal, f->literal_len) != NULL;
        /* the thread's match data: filters run on several threads at once (par.c) */
        return rematch(f->re, v, len, parser_match_data()) >= 0; /* bounded: rematch.h */
    case F_TAGS:
        if (!m) return false;
        for (i = 0; i < f->ntags; i++)
            if (msg_tag_has(m, f->tags[i])) return true;
        return false;
    case F_LEVEL: return m && (f->mask & (1u << (msg_pri(m) & 7)));
    case F_FACILITY: return m && (f->mask & (1u << ((msg_pri(m) >> 3) & 31)));
    }
    return false;
}
