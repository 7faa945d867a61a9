/* exconf: an executor's configuration as written, and lookups in it. */
#include "actions/exconf.h"

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
