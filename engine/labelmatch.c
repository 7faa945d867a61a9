/*
 * labelmatch: parsing and evaluating Alertmanager label matchers (see
 * labelmatch.h).  Names are interned once at parse time, so matching a
 * message is a handle lookup and a compare (or one anchored, JIT-compiled
 * PCRE2 match, bounded by rematch's limits) per matcher, with no
 * allocation.
 */
#include "engine/labelmatch.h"
#include "engine/nv.h"
#include "engine/rematch.h"
#include "engine/xalloc.h"

#include <string.h>

struct matcher {
    char *name, *value;
    size_t vlen;
    nv_handle h;
    enum labelmatch_op op;
    pcre2_code *re;
    pcre2_match_data *md;
};

struct labelmatch {
    struct matcher *m;
    size_t n, cap;
    enum labelmatch_names names;
};

struct labelmatch *
labelmatch_new_names(enum labelmatch_names names)
{
    struct labelmatch *lm = xcalloc(1, sizeof(struct labelmatch));

    lm->names = names;
    return lm;
}

struct labelmatch *
labelmatch_new(void)
{
    return labelmatch_new_names(LABELMATCH_NAMES_LOOKUP);
}

static void
matcher_clear(struct matcher *m)
{
    free(m->name);
    free(m->value);
    if (m->md) pcre2_match_data_free(m->md);
    if (m->re) pcre2_code_free(m->re);
}

void
labelmatch_free(struct labelmatch *lm)
{
    size_t i;

    if (!lm) return;
    for (i = 0; i < lm->n; i++) matcher_clear(&lm->m[i]);
    free(lm->m);
    free(lm);
}

/* The names users know for the classifier's values. */
static const char *
canonical(const char *name, size_t len, size_t *clen)
{
    static const struct {
        const char *alias, *name;
    } aliases[] = {
        {"rule_id", ".classifier.rule_id"},
        {"class", ".classifier.class"},
        {"context_id", ".classifier.context_id"},
    };
    size_t i;

    for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strlen(aliases[i].alias) == len && memcmp(aliases[i].alias, name, len) == 0) {
            *clen = strlen(aliases[i].name);
            return aliases[i].name;
        }
    *clen = len;
    return name;
}

const char *
labelmatch_label(const struct msg *m, const char *name, size_t *len)
{
    size_t clen;
    const char *c = canonical(name, strlen(name), &clen);
    nv_handle h = nv_lookup(c, clen);
    const char *v = h ? msg_get(m, h, len) : NULL;

    if (!v) {
        *len = 0;
        return "";
    }
    return v;
}

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A label name stops at an operator, a separator, a quote or a space. */
static bool
name_char(char c)
{
    return c && !is_space(c) && !strchr("=!~,\"{}", c);
}

struct parser {
    const char *p, *end;
    struct buf *err;
    enum labelmatch_names names;
};

static void
skip_space(struct parser *ps)
{
    while (ps->p < ps->end && is_space(*ps->p)) ps->p++;
}

/* A quoted value, unescaped into out; false with a message on a bad one. */
static bool
quoted(struct parser *ps, struct buf *out)
{
    ps->p++; /* the opening quote */
    while (ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\\') {
            if (ps->p == ps->end) break;
            c = *ps->p++;
            if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
            else if (c != '"' && c != '\\') {
                /* a regex escape such as \. stays as written */
                buf_putc(out, '\\');
            }
        }
        buf_putc(out, c);
    }
    if (ps->p == ps->end) {
        buf_puts(ps->err, "unterminated quoted value");
        return false;
    }
    ps->p++; /* the closing quote */
    return true;
}

static bool
compile(struct matcher *m, struct buf *err)
{
    struct buf anchored = BUF_INIT;
    int code;
    PCRE2_SIZE off;

    buf_puts(&anchored, "^(?:");
    buf_append(&anchored, m->value, m->vlen);
    buf_puts(&anchored, ")$");
    m->re = pcre2_compile((PCRE2_SPTR)anchored.p, anchored.len, PCRE2_DOLLAR_ENDONLY, &code, &off,
                          NULL);
    buf_free(&anchored);
    if (!m->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        buf_printf(err, "bad regular expression \"%s\" for %s: %s", m->value, m->name, (char *)msg);
        return false;
    }
    pcre2_jit_compile(m->re, PCRE2_JIT_COMPLETE);
    m->md = pcre2_match_data_create(1, NULL);
    return true;
}

/* One matcher at ps->p into m; false with a message in err. */
static bool
parse_one(struct parser *ps, struct matcher *m)
{
    const char *name = ps->p, *cname;
    size_t nlen, clen;
    struct buf value = BUF_INIT;

    while (ps->p < ps->end && name_char(*ps->p)) ps->p++;
    nlen = (size_t)(ps->p - name);
    if (!nlen) {
        if (ps->p < ps->end)
            buf_printf(ps->err, "label name expected at '%.*s'",
                       (int)(ps->end - ps->p > 40 ? 40 : ps->end - ps->p), ps->p);
        else
            buf_puts(ps->err, "label name expected");
        return false;
    }
    skip_space(ps);
    if (ps->end - ps->p >= 2 && ps->p[0] == '=' && ps->p[1] == '~') {
        m->op = LABELMATCH_RE;
        ps->p += 2;
    } else if (ps->end - ps->p >= 2 && ps->p[0] == '!' && ps->p[1] == '~') {
        m->op = LABELMATCH_NRE;
        ps->p += 2;
    } else if (ps->end - ps->p >= 2 && ps->p[0] == '!' && ps->p[1] == '=') {
        m->op = LABELMATCH_NE;
        ps->p += 2;
    } else if (ps->p < ps->end && ps->p[0] == '=') {
        m->op = LABELMATCH_EQ;
        ps->p += 1;
    } else {
        buf_printf(ps->err, "matcher '%.*s': operator =, !=, =~ or !~ expected", (int)nlen, name);
        return false;
    }
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == '"') {
        if (!quoted(ps, &value)) {
            buf_free(&value);
            return false;
        }
    } else {
        const char *v = ps->p;
        while (ps->p < ps->end && *ps->p != ',' && *ps->p != '}') {
            if (*ps->p == '"') {
                buf_printf(ps->err, "matcher '%.*s': a quote inside an unquoted value", (int)nlen,
                           name);
                buf_free(&value);
                return false;
            }
            ps->p++;
        }
        while (ps->p > v && is_space(ps->p[-1])) ps->p--;
        buf_append(&value, v, (size_t)(ps->p - v));
    }
    if (value.len > LABELMATCH_MAX_TEXT || nlen > LABELMATCH_MAX_TEXT) {
        buf_printf(ps->err, "matcher '%.*s': longer than %d bytes", (int)(nlen > 40 ? 40 : nlen),
                   name, LABELMATCH_MAX_TEXT);
        buf_free(&value);
        return false;
    }
    cname = canonical(name, nlen, &clen);
    switch (ps->names) {
    case LABELMATCH_NAMES_LOOKUP: m->h = nv_lookup(cname, clen); break; /* 0: absent everywhere */
    case LABELMATCH_NAMES_INPUT: m->h = nv_intern_input(cname, clen); break;
    case LABELMATCH_NAMES_CONFIG: m->h = nv_intern(cname, clen); break;
    }
    if (!m->h && ps->names != LABELMATCH_NAMES_LOOKUP) {
        buf_puts(ps->err, "too many distinct value names");
        buf_free(&value);
        return false;
    }
    m->name = xstrndup(name, nlen);
    m->vlen = value.len;
    m->value = xstrndup(value.p ? value.p : "", value.len);
    buf_free(&value);
    if ((m->op == LABELMATCH_RE || m->op == LABELMATCH_NRE) && !compile(m, ps->err)) return false;
    return true;
}

int
labelmatch_add(struct labelmatch *lm, const char *text, size_t len, struct buf *err)
{
    struct parser ps = {text, text + len, err, lm->names};
    size_t before = lm->n, i;
    bool braces;

    if (memchr(text, '\0', len)) {
        buf_puts(err, "a NUL byte in the matchers");
        return -1;
    }
    skip_space(&ps);
    braces = ps.p < ps.end && *ps.p == '{';
    if (braces) ps.p++;
    for (;;) {
        struct matcher m;
        skip_space(&ps);
        if (ps.p == ps.end || (braces && *ps.p == '}')) {
            if (lm->n == before) {
                buf_puts(err, "empty matcher");
                goto bad;
            }
            break;
        }
        if (lm->n >= LABELMATCH_MAX) {
            buf_printf(err, "more than %d matchers", LABELMATCH_MAX);
            goto bad;
        }
        memset(&m, 0, sizeof(m));
        if (!parse_one(&ps, &m)) {
            matcher_clear(&m);
            goto bad;
        }
        lm->m = xgrow(lm->m, &lm->cap, lm->n + 1, sizeof(*lm->m));
        lm->m[lm->n++] = m;
        skip_space(&ps);
        if (ps.p < ps.end && *ps.p == ',') {
            ps.p++;
            continue;
        }
        if (ps.p == ps.end || (braces && *ps.p == '}')) break;
        buf_printf(err, "',' expected before '%.*s'",
                   (int)(ps.end - ps.p > 40 ? 40 : ps.end - ps.p), ps.p);
        goto bad;
    }
    if (braces) {
        if (ps.p == ps.end || *ps.p != '}') {
            buf_puts(err, "'}' expected");
            goto bad;
        }
        ps.p++;
        skip_space(&ps);
    }
    if (ps.p != ps.end) {
        buf_printf(err, "unexpected '%.*s' after the matchers",
                   (int)(ps.end - ps.p > 40 ? 40 : ps.end - ps.p), ps.p);
        goto bad;
    }
    return 0;
bad:
    for (i = before; i < lm->n; i++) matcher_clear(&lm->m[i]);
    lm->n = before;
    return -1;
}

struct labelmatch *
labelmatch_parse_names(const char *text, enum labelmatch_names names, struct buf *err)
{
    struct labelmatch *lm = labelmatch_new_names(names);

    if (labelmatch_add(lm, text, strlen(text), err) < 0) {
        labelmatch_free(lm);
        return NULL;
    }
    return lm;
}

struct labelmatch *
labelmatch_parse(const char *text, struct buf *err)
{
    return labelmatch_parse_names(text, LABELMATCH_NAMES_LOOKUP, err);
}

/* Whether a matcher holds for a value (NULL: absent, as the empty value). */
static bool
value_holds(const struct matcher *mt, const char *v, size_t len)
{
    bool eq;
    int rc;

    if (!v) {
        v = "";
        len = 0;
    }
    switch (mt->op) {
    case LABELMATCH_EQ:
    case LABELMATCH_NE:
        eq = len == mt->vlen && memcmp(v, mt->value, len) == 0;
        return mt->op == LABELMATCH_EQ ? eq : !eq;
    case LABELMATCH_RE:
    case LABELMATCH_NRE:
        rc = rematch(mt->re, v, len, mt->md);
        /* stopped by a limit: neither =~ nor !~ holds (a silence hides nothing it cannot tell) */
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) return false;
        return mt->op == LABELMATCH_RE ? rc >= 0 : rc < 0;
    }
    return false;
}

static bool
matcher_holds(const struct matcher *mt, const struct msg *m)
{
    size_t len = 0;
    const char *v = msg_get(m, mt->h, &len);

    return value_holds(mt, v, len);
}

bool
labelmatch_match_labels(const struct labelmatch *lm, labelmatch_get_fn get, void *arg)
{
    size_t i, len;

    for (i = 0; i < lm->n; i++) {
        const char *v;
        len = 0;
        v = get(arg, lm->m[i].name, &len);
        if (!value_holds(&lm->m[i], v, len)) return false;
    }
    return true;
}

bool
labelmatch_match(const struct labelmatch *lm, const struct msg *m)
{
    size_t i;

    for (i = 0; i < lm->n; i++)
        if (!matcher_holds(&lm->m[i], m)) return false;
    return true;
}

bool
labelmatch_matches_empty(const struct labelmatch *lm)
{
    size_t i;
    int rc;

    for (i = 0; i < lm->n; i++) {
        const struct matcher *mt = &lm->m[i];
        switch (mt->op) {
        case LABELMATCH_EQ:
            if (mt->vlen) return false;
            break;
        case LABELMATCH_NE:
            if (!mt->vlen) return false;
            break;
        case LABELMATCH_RE:
        case LABELMATCH_NRE:
            rc = rematch(mt->re, "", 0, mt->md);
            if ((mt->op == LABELMATCH_RE) != (rc >= 0)) return false;
            break;
        }
    }
    return true;
}

size_t
labelmatch_count(const struct labelmatch *lm)
{
    return lm->n;
}

void
labelmatch_at(const struct labelmatch *lm, size_t i, const char **name, enum labelmatch_op *op,
              const char **value)
{
    *name = lm->m[i].name;
    *op = lm->m[i].op;
    *value = lm->m[i].value;
}

bool
labelmatch_first_eq(const struct labelmatch *lm, uint32_t *handle, const char **value, size_t *len)
{
    size_t i;

    for (i = 0; i < lm->n; i++)
        if (lm->m[i].op == LABELMATCH_EQ) {
            *handle = lm->m[i].h;
            *value = lm->m[i].value;
            *len = lm->m[i].vlen;
            return true;
        }
    return false;
}

const char *
labelmatch_op_name(enum labelmatch_op op)
{
    switch (op) {
    case LABELMATCH_EQ: return "=";
    case LABELMATCH_NE: return "!=";
    case LABELMATCH_RE: return "=~";
    case LABELMATCH_NRE: return "!~";
    }
    return "?";
}

void
labelmatch_to_msg(const struct labelmatch *lm, struct msg *m)
{
    size_t i;

    for (i = 0; i < lm->n; i++)
        if (lm->m[i].h) msg_set(m, lm->m[i].h, lm->m[i].value, lm->m[i].vlen);
}

void
labelmatch_format(const struct labelmatch *lm, struct buf *out)
{
    size_t i, k;

    for (i = 0; i < lm->n; i++) {
        const struct matcher *m = &lm->m[i];
        if (i) buf_putc(out, ',');
        buf_puts(out, m->name);
        buf_puts(out, labelmatch_op_name(m->op));
        buf_putc(out, '"');
        for (k = 0; k < m->vlen; k++) {
            char c = m->value[k];
            if (c == '"')
                buf_puts(out, "\\\"");
            else if (c == '\n')
                buf_puts(out, "\\n");
            else if (c == '\\' && (k + 1 == m->vlen || strchr("\"\\\nnt", m->value[k + 1])))
                /* doubled where it would start an escape when read back; \. stays as written */
                buf_puts(out, "\\\\");
            else
                buf_putc(out, c);
        }
        buf_putc(out, '"');
    }
}
