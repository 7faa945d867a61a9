/*
 * exconf: an executor's configuration as written, lookups in it, and the
 * readers every executor kind uses for its attributes (see exconf.h).
 */
#include "actions/exconf.h"
#include "actions/executor.h"
#include "engine/template.h"
#include "engine/units.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *
find_attr(const struct exconf_attr *a, size_t n, const char *name)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(a[i].name, name) == 0) return a[i].value;
    return NULL;
}

const char *
exconf_attr(const struct exconf *e, const char *name)
{
    return find_attr(e->attrs, e->nattrs, name);
}

const char *
exconf_node_attr(const struct exconf_node *n, const char *name)
{
    return find_attr(n->attrs, n->nattrs, name);
}

static void
free_attrs(struct exconf_attr *a, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(a[i].name);
        free(a[i].value);
    }
    free(a);
}

void
exconf_free(struct exconf *e)
{
    size_t k;

    free(e->kind);
    free(e->name);
    free_attrs(e->attrs, e->nattrs);
    for (k = 0; k < e->nchildren; k++) {
        free(e->children[k].name);
        free(e->children[k].text);
        free_attrs(e->children[k].attrs, e->children[k].nattrs);
    }
    free(e->children);
}

static bool
same_attrs(const struct exconf_attr *a, const struct exconf_attr *b, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(a[i].name, b[i].name) || strcmp(a[i].value, b[i].value)) return false;
    return true;
}

bool
exconf_equal(const struct exconf *a, const struct exconf *b)
{
    size_t i;

    if (strcmp(a->kind, b->kind) || strcmp(a->name, b->name) || a->nattrs != b->nattrs ||
        a->nchildren != b->nchildren || !same_attrs(a->attrs, b->attrs, a->nattrs))
        return false;
    for (i = 0; i < a->nchildren; i++) {
        const struct exconf_node *x = &a->children[i], *y = &b->children[i];
        if (strcmp(x->name, y->name) || x->nattrs != y->nattrs ||
            strcmp(x->text ? x->text : "", y->text ? y->text : "") ||
            !same_attrs(x->attrs, y->attrs, x->nattrs))
            return false;
    }
    return true;
}

/* ---- errors ---- */

static void
verror(const struct exconf_reader *r, int line, const char *fmt, va_list ap)
{
    const struct exconf *c = r->cfg;

    buf_printf(r->err, "%s:%d: executor %s: ", r->file, line,
               c->name   ? c->name
               : c->kind ? c->kind
                         : "?");
    buf_vprintf(r->err, fmt, ap);
    buf_putc(r->err, '\n');
}

void
exconf_error(const struct exconf_reader *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    verror(r, r->cfg->line, fmt, ap);
    va_end(ap);
}

void
exconf_error_at(const struct exconf_reader *r, int line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    verror(r, line, fmt, ap);
    va_end(ap);
}

static bool
in_list(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return true;
    return false;
}

void
exconf_check_attrs(const struct exconf_reader *r, const char *const *known, const char *const *more)
{
    size_t i;

    for (i = 0; i < r->cfg->nattrs; i++) {
        const char *a = r->cfg->attrs[i].name;
        if (!in_list(known, a) && !in_list(more, a) && !executor_common_attr(a))
            exconf_error(r, "unknown attribute %s= for %s", a, r->cfg->kind);
    }
}

void
exconf_check_node_attrs(const struct exconf_reader *r, const struct exconf_node *n,
                        const char *const *known)
{
    size_t i;

    for (i = 0; i < n->nattrs; i++) {
        if (!known)
            exconf_error_at(r, n->line, "<%s> takes no attributes (%s=)", n->name,
                            n->attrs[i].name);
        else if (!in_list(known, n->attrs[i].name))
            exconf_error_at(r, n->line, "unknown attribute %s= for <%s>", n->attrs[i].name,
                            n->name);
    }
}

bool
exconf_child_is(const struct exconf_reader *r, const struct exconf_node *n, const char *name)
{
    if (strcmp(n->name, name) == 0) return true;
    exconf_error_at(r, n->line, "unknown element <%s> in %s (only <%s>)", n->name, r->cfg->kind,
                    name);
    return false;
}

/* ---- values ---- */

bool
exconf_enum(const struct exconf_reader *r, const char *attr, const char *const *names, int *out)
{
    const char *v = exconf_attr(r->cfg, attr);
    struct buf hint = BUF_INIT;
    int i;

    if (!v) return true;
    for (i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return true;
        }
    for (i = 0; names[i]; i++)
        buf_printf(&hint, "%s%s", i == 0 ? "" : names[i + 1] ? ", " : " or ", names[i]);
    exconf_error(r, "bad %s=\"%s\" (%s)", attr, v, buf_str(&hint));
    buf_free(&hint);
    return false;
}

bool
exconf_bool(const struct exconf_reader *r, const char *attr, bool *out)
{
    static const char *const yes_no[] = {"yes", "no", NULL};
    int i = *out ? 0 : 1;

    if (!exconf_enum(r, attr, yes_no, &i)) return false;
    *out = i == 0;
    return true;
}

/* A limit as written in the configuration: the largest unit that divides it. */
static void
put_duration(struct buf *out, double s)
{
    if (s >= 86400 && s == (long)(s / 86400) * 86400.0)
        buf_printf(out, "%gd", s / 86400);
    else if (s >= 3600 && s == (long)(s / 3600) * 3600.0)
        buf_printf(out, "%gh", s / 3600);
    else if (s >= 60 && s == (long)(s / 60) * 60.0)
        buf_printf(out, "%gm", s / 60);
    else
        buf_printf(out, "%gs", s);
}

bool
exconf_duration(const struct exconf_reader *r, const char *attr, bool zero_ok, double max,
                double *out)
{
    const char *v = exconf_attr(r->cfg, attr);
    struct buf hint = BUF_INIT;
    double d;

    if (!v) return true;
    d = units_duration(v);
    if (d >= 0 && (d > 0 || zero_ok) && (max <= 0 || d <= max)) {
        *out = d;
        return true;
    }
    buf_puts(&hint, zero_ok ? "0" : "above 0");
    if (max > 0) {
        buf_puts(&hint, zero_ok ? " to " : ", at most ");
        put_duration(&hint, max);
    } else if (zero_ok) {
        buf_puts(&hint, " or more");
    }
    exconf_error(r, "bad %s=\"%s\" (a duration such as 30s, 250ms, 5m or 2h; %s)", attr, v,
                 buf_str(&hint));
    buf_free(&hint);
    return false;
}

bool
exconf_duration_ms(const struct exconf_reader *r, const char *attr, bool zero_ok, double max,
                   uint64_t *out)
{
    double d = -1;

    if (!exconf_duration(r, attr, zero_ok, max, &d)) return false;
    if (d >= 0) *out = (uint64_t)(d * 1000 + 0.5);
    return true;
}

bool
exconf_size(const struct exconf_reader *r, const char *attr, size_t min, size_t max, size_t *out)
{
    const char *v = exconf_attr(r->cfg, attr);
    size_t n;

    if (!v) return true;
    n = units_size(v);
    if (v[0] == '-' || n < min || n > max || (n == 0 && strspn(v, "0") != strlen(v))) {
        exconf_error(r, "bad %s=\"%s\" (a size such as 65536, 64k or 10M; %zu to %zu bytes)", attr,
                     v, min, max);
        return false;
    }
    *out = n;
    return true;
}

bool
exconf_uint(const struct exconf_reader *r, const char *attr, unsigned long min, unsigned long max,
            unsigned long *out)
{
    const char *v = exconf_attr(r->cfg, attr);
    char *end;
    unsigned long n;

    if (!v) return true;
    errno = 0;
    n = strtoul(v, &end, 10);
    if (*end || end == v || strchr(v, '-') || errno || n < min || (max && n > max)) {
        if (max)
            exconf_error(r, "bad %s=\"%s\" (a whole number from %lu to %lu)", attr, v, min, max);
        else
            exconf_error(r, "bad %s=\"%s\" (a whole number, at least %lu)", attr, v, min);
        return false;
    }
    *out = n;
    return true;
}

bool
exconf_path(const struct exconf_reader *r, const char *attr, const char **out)
{
    const char *v = exconf_attr(r->cfg, attr);

    if (!v) return true;
    if (v[0] != '/') {
        exconf_error(r, "%s=\"%s\" must be an absolute path", attr, v);
        return false;
    }
    *out = v;
    return true;
}

bool
exconf_list_next(const char **pos, const char **item, size_t *len)
{
    static const char space[] = " \t\r\n";
    const char *p = *pos, *s, *e;

    while (*p) {
        s = p;
        e = s + strcspn(s, ",");
        p = *e ? e + 1 : e;
        s += strspn(s, space);
        while (e > s && strchr(space, e[-1])) e--;
        if (s < e) {
            *pos = p;
            *item = s;
            *len = (size_t)(e - s);
            return true;
        }
    }
    *pos = p;
    return false;
}

/* ---- templates ---- */

struct template *
exconf_compile(const struct exconf_reader *r, int line, const char *what, const char *src)
{
    struct buf e = BUF_INIT;
    struct template *t = template_compile_str(src, &e);

    if (!t) exconf_error_at(r, line, "bad %s template: %s", what, buf_str(&e));
    buf_free(&e);
    return t;
}

struct template *
exconf_template(const struct exconf_reader *r, const char *attr, const char *def)
{
    const char *v = exconf_attr(r->cfg, attr);

    if (!v) v = def;
    return v ? exconf_compile(r, r->cfg->line, attr, v) : NULL;
}

/* ---- secrets ---- */

bool
exconf_secret_given(const struct exconf_reader *r, const char *attr)
{
    char key[64];
    bool given;

    snprintf(key, sizeof(key), "%s-file", attr);
    given = exconf_attr(r->cfg, key) != NULL;
    snprintf(key, sizeof(key), "%s-env", attr);
    return given || exconf_attr(r->cfg, key) != NULL;
}

char *
exconf_secret(const struct exconf_reader *r, const char *attr)
{
    char key[64], line[4096];
    const char *path, *var;
    char *s;
    FILE *f;

    snprintf(key, sizeof(key), "%s-file", attr);
    path = exconf_attr(r->cfg, key);
    snprintf(key, sizeof(key), "%s-env", attr);
    var = exconf_attr(r->cfg, key);
    if (path && var) {
        exconf_error(r, "give %s-file or %s-env, not both", attr, attr);
        return NULL;
    }
    if (var) {
        const char *v = getenv(var);
        if (!v) {
            exconf_error(r, "environment variable %s (%s-env) is not set", var, attr);
            return NULL;
        }
        return xstrdup(v);
    }
    if (!path) return NULL;
    f = fopen(path, "r");
    if (!f) {
        exconf_error(r, "cannot read %s-file %s: %s", attr, path, strerror(errno));
        return NULL;
    }
    if (!fgets(line, sizeof(line), f)) line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    s = xstrdup(line);
    explicit_bzero(line, sizeof(line));
    return s;
}

void
exconf_secret_free(char *secret)
{
    if (!secret) return;
    explicit_bzero(secret, strlen(secret));
    free(secret);
}
