/* sigma_cond: Sigma's condition language, parsed into a tree of nodes (see sigma_cond.h). */
#include "engine/sigma_cond.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/xalloc.h"

enum kind { N_SEL, N_NOT, N_AND, N_OR, N_OF };

struct node {
    enum kind kind;
    uint32_t a, b;   /* children (N_NOT: a; N_AND, N_OR: a, b); N_SEL: the identifier */
    uint32_t need;   /* N_OF: how many must hold; 0: all */
    uint32_t off, n; /* N_OF: the identifiers, ids[off .. off+n) */
};

struct sigma_cond {
    struct node *nodes;
    size_t nnodes, cap;
    uint32_t *ids;
    size_t nids, idcap;
    uint32_t root;
};

/* Nesting deeper than this is refused: the parser recurses. */
#define MAX_DEPTH 200

struct parser {
    struct sigma_cond *c;
    const char *p;
    const char *const *names;
    size_t nnames;
    char *err;
    size_t errlen;
    int depth;
    bool failed;
};

static void
fail(struct parser *ps, const char *fmt, ...)
{
    va_list ap;

    if (ps->failed) return;
    ps->failed = true;
    va_start(ap, fmt);
    vsnprintf(ps->err, ps->errlen, fmt, ap);
    va_end(ap);
}

/* ---- tokens ---- */

enum tok { T_END, T_LP, T_RP, T_WORD, T_BAD };

static bool
word_char(char ch)
{
    return ch && !strchr(" \t\r\n()|", ch);
}

/* The next token; a word is [start, start+len). */
static enum tok
peek(struct parser *ps, const char **start, size_t *len)
{
    const char *p = ps->p;

    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    *start = p;
    *len = 0;
    if (!*p) return T_END;
    if (*p == '(') return T_LP;
    if (*p == ')') return T_RP;
    if (*p == '|') return T_BAD;
    while (word_char(p[*len])) (*len)++;
    return T_WORD;
}

static void
take(struct parser *ps, const char *start, size_t len)
{
    ps->p = start + (len ? len : 1);
}

static bool
is_kw(const char *w, size_t len, const char *kw)
{
    return len == strlen(kw) && strncasecmp(w, kw, len) == 0;
}

static bool
is_keyword(const char *w, size_t len)
{
    return is_kw(w, len, "and") || is_kw(w, len, "or") || is_kw(w, len, "not") ||
           is_kw(w, len, "of") || is_kw(w, len, "them");
}

static uint32_t
add_node(struct parser *ps, enum kind k, uint32_t a, uint32_t b)
{
    struct sigma_cond *c = ps->c;
    struct node *n;

    if (c->nnodes >= SIGMA_COND_MAX_NODES) {
        fail(ps, "condition too long (more than %d nodes)", SIGMA_COND_MAX_NODES);
        return 0;
    }
    if (c->nnodes == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->nodes = xrealloc(c->nodes, c->cap * sizeof(*c->nodes));
    }
    n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof(*n));
    n->kind = k;
    n->a = a;
    n->b = b;
    return (uint32_t)c->nnodes++;
}

static void
add_id(struct sigma_cond *c, uint32_t id)
{
    if (c->nids == c->idcap) {
        c->idcap = c->idcap ? c->idcap * 2 : 16;
        c->ids = xrealloc(c->ids, c->idcap * sizeof(*c->ids));
    }
    c->ids[c->nids++] = id;
}

/* '*' matches any run of characters in identifier patterns; nothing else is special. */
static bool
pattern_match(const char *pat, size_t plen, const char *s)
{
    size_t pi = 0, si = 0, star = (size_t)-1, mark = 0, slen = strlen(s);

    while (si < slen) {
        if (pi < plen && pat[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < plen && pat[pi] == s[si]) {
            pi++;
            si++;
        } else if (star != (size_t)-1) {
            pi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (pi < plen && pat[pi] == '*') pi++;
    return pi == plen;
}

static uint32_t parse_or(struct parser *ps);

static uint32_t
parse_of(struct parser *ps, uint32_t need)
{
    const char *w;
    size_t len, i, before = ps->c->nids;
    uint32_t n;
    bool them;

    if (peek(ps, &w, &len) != T_WORD || !is_kw(w, len, "of")) {
        fail(ps, "'of' expected after a count");
        return 0;
    }
    take(ps, w, len);
    if (peek(ps, &w, &len) != T_WORD || (is_keyword(w, len) && !is_kw(w, len, "them"))) {
        fail(ps, "'them' or an identifier pattern expected after 'of'");
        return 0;
    }
    take(ps, w, len);
    them = is_kw(w, len, "them");
    for (i = 0; i < ps->nnames; i++) {
        if (them ? ps->names[i][0] == '_' : !pattern_match(w, len, ps->names[i])) continue;
        add_id(ps->c, (uint32_t)i);
    }
    if (ps->c->nids == before) {
        fail(ps, "'%.*s' matches no detection identifier", (int)len, w);
        return 0;
    }
    if (need > ps->c->nids - before) {
        fail(ps, "'%u of %.*s': only %zu identifiers match", need, (int)len, w,
             ps->c->nids - before);
        return 0;
    }
    n = add_node(ps, N_OF, 0, 0);
    if (ps->failed) return 0;
    ps->c->nodes[n].need = need;
    ps->c->nodes[n].off = (uint32_t)before;
    ps->c->nodes[n].n = (uint32_t)(ps->c->nids - before);
    return n;
}

static uint32_t
parse_factor(struct parser *ps)
{
    const char *w;
    size_t len, i;
    enum tok t;
    uint32_t n;

    if (ps->failed) return 0;
    if (++ps->depth > MAX_DEPTH) {
        fail(ps, "condition nested deeper than %d", MAX_DEPTH);
        return 0;
    }
    t = peek(ps, &w, &len);
    if (t == T_END) {
        fail(ps, "condition ends where an identifier was expected");
        n = 0;
    } else if (t == T_BAD) {
        fail(ps, "'|' in a condition: aggregations (count() and the like) are not supported; "
                 "write a correlation rule");
        n = 0;
    } else if (t == T_RP) {
        fail(ps, "')' where an identifier was expected");
        n = 0;
    } else if (t == T_LP) {
        take(ps, w, 1);
        n = parse_or(ps);
        if (!ps->failed && peek(ps, &w, &len) != T_RP) fail(ps, "')' expected");
        if (!ps->failed) take(ps, w, 1);
    } else if (is_kw(w, len, "not")) {
        take(ps, w, len);
        n = parse_factor(ps);
        n = add_node(ps, N_NOT, n, 0);
    } else if (is_kw(w, len, "all")) {
        take(ps, w, len);
        n = parse_of(ps, 0);
    } else if (w[0] >= '1' && w[0] <= '9' && strspn(w, "0123456789") >= len) {
        unsigned long need = strtoul(w, NULL, 10);
        take(ps, w, len);
        if (len > 6 || need > SIGMA_COND_MAX_NODES) {
            fail(ps, "count %.*s too large", (int)len, w);
            n = 0;
        } else {
            n = parse_of(ps, (uint32_t)need);
        }
    } else if (is_keyword(w, len)) {
        fail(ps, "'%.*s' where an identifier was expected", (int)len, w);
        n = 0;
    } else {
        for (i = 0; i < ps->nnames; i++)
            if (strlen(ps->names[i]) == len && memcmp(ps->names[i], w, len) == 0) break;
        if (i == ps->nnames) {
            fail(ps, "unknown detection identifier '%.*s'", (int)len, w);
            n = 0;
        } else {
            take(ps, w, len);
            n = add_node(ps, N_SEL, (uint32_t)i, 0);
        }
    }
    ps->depth--;
    return n;
}

static uint32_t
parse_and(struct parser *ps)
{
    uint32_t n = parse_factor(ps);
    const char *w;
    size_t len;

    while (!ps->failed && peek(ps, &w, &len) == T_WORD && is_kw(w, len, "and")) {
        take(ps, w, len);
        n = add_node(ps, N_AND, n, parse_factor(ps));
    }
    return n;
}

static uint32_t
parse_or(struct parser *ps)
{
    uint32_t n = parse_and(ps);
    const char *w;
    size_t len;

    while (!ps->failed && peek(ps, &w, &len) == T_WORD && is_kw(w, len, "or")) {
        take(ps, w, len);
        n = add_node(ps, N_OR, n, parse_and(ps));
    }
    return n;
}

struct sigma_cond *
sigma_cond_parse(const char *src, const char *const *names, size_t nnames, char *err, size_t errlen)
{
    struct parser ps = {0};
    const char *w;
    size_t len;
    enum tok t;

    ps.c = xcalloc(1, sizeof(*ps.c));
    ps.p = src;
    ps.names = names;
    ps.nnames = nnames;
    ps.err = err;
    ps.errlen = errlen;
    if (errlen) err[0] = '\0';
    ps.c->root = parse_or(&ps);
    if (!ps.failed && (t = peek(&ps, &w, &len)) != T_END) {
        if (t == T_BAD)
            fail(&ps, "'|' in a condition: aggregations (count() and the like) are not "
                      "supported; write a correlation rule");
        else
            fail(&ps, "unexpected '%.*s'", (int)(len ? len : 1), w);
    }
    if (ps.failed) {
        sigma_cond_free(ps.c);
        return NULL;
    }
    return ps.c;
}

void
sigma_cond_free(struct sigma_cond *c)
{
    if (!c) return;
    free(c->nodes);
    free(c->ids);
    free(c);
}

static bool
eval(const struct sigma_cond *c, uint32_t i, bool (*sel)(void *, size_t), void *arg)
{
    const struct node *n = &c->nodes[i];
    uint32_t k, hits = 0;

    switch (n->kind) {
    case N_SEL: return sel(arg, n->a);
    case N_NOT: return !eval(c, n->a, sel, arg);
    case N_AND: return eval(c, n->a, sel, arg) && eval(c, n->b, sel, arg);
    case N_OR: return eval(c, n->a, sel, arg) || eval(c, n->b, sel, arg);
    case N_OF:
        for (k = 0; k < n->n; k++) {
            if (sel(arg, c->ids[n->off + k])) {
                if (n->need && ++hits >= n->need) return true;
            } else if (!n->need) {
                return false;
            }
        }
        return !n->need;
    }
    return false;
}

bool
sigma_cond_eval(const struct sigma_cond *c, bool (*sel)(void *arg, size_t i), void *arg)
{
    return eval(c, c->root, sel, arg);
}

static enum sigma_tv
tv_not(enum sigma_tv a)
{
    return a == SIGMA_UNKNOWN ? a : a == SIGMA_TRUE ? SIGMA_FALSE : SIGMA_TRUE;
}

static enum sigma_tv
tv_and(enum sigma_tv a, enum sigma_tv b)
{
    if (a == SIGMA_FALSE || b == SIGMA_FALSE) return SIGMA_FALSE;
    return a == SIGMA_TRUE && b == SIGMA_TRUE ? SIGMA_TRUE : SIGMA_UNKNOWN;
}

static enum sigma_tv
tv_or(enum sigma_tv a, enum sigma_tv b)
{
    return tv_not(tv_and(tv_not(a), tv_not(b)));
}

static enum sigma_tv
eval3(const struct sigma_cond *c, uint32_t i, enum sigma_tv (*sel)(void *, size_t), void *arg)
{
    const struct node *n = &c->nodes[i];
    enum sigma_tv acc;
    uint32_t k, t = 0, u = 0;

    switch (n->kind) {
    case N_SEL: return sel(arg, n->a);
    case N_NOT: return tv_not(eval3(c, n->a, sel, arg));
    case N_AND: return tv_and(eval3(c, n->a, sel, arg), eval3(c, n->b, sel, arg));
    case N_OR: return tv_or(eval3(c, n->a, sel, arg), eval3(c, n->b, sel, arg));
    case N_OF:
        for (k = 0; k < n->n; k++) {
            acc = sel(arg, c->ids[n->off + k]);
            t += acc == SIGMA_TRUE;
            u += acc == SIGMA_UNKNOWN;
        }
        if (!n->need) return t == n->n ? SIGMA_TRUE : t + u == n->n ? SIGMA_UNKNOWN : SIGMA_FALSE;
        return t >= n->need ? SIGMA_TRUE : t + u >= n->need ? SIGMA_UNKNOWN : SIGMA_FALSE;
    }
    return SIGMA_UNKNOWN;
}

enum sigma_tv
sigma_cond_eval3(const struct sigma_cond *c, enum sigma_tv (*sel)(void *arg, size_t i), void *arg)
{
    return eval3(c, c->root, sel, arg);
}

bool
sigma_cond_uses(const struct sigma_cond *c, size_t id)
{
    size_t i;

    for (i = 0; i < c->nnodes; i++)
        if (c->nodes[i].kind == N_SEL && c->nodes[i].a == id) return true;
    for (i = 0; i < c->nids; i++)
        if (c->ids[i] == id) return true;
    return false;
}
