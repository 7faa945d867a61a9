/*
 * exconf: an executor's configuration as written (the element's name, its
 * attributes and its child elements), kept generic so that the configuration
 * reader needs to know nothing of executor kinds: each kind reads and checks
 * its own settings (see executor.h).
 */
#ifndef CORRAL_EXCONF_H
#define CORRAL_EXCONF_H

#include <stdbool.h>
#include <stddef.h>

struct exconf_attr {
    char *name;
    char *value;
};

/* A child element: <varbind .../>, <header .../>, <arg>...</arg>. */
struct exconf_node {
    char *name; /* element name */
    char *text; /* element text, NULL if none */
    struct exconf_attr *attrs;
    size_t nattrs;
    int line;
};

struct exconf {
    char *kind; /* the element's name: "snmp", "smtp", "exec" */
    char *name;
    struct exconf_attr *attrs; /* every attribute as written, name included */
    size_t nattrs;
    struct exconf_node *children;
    size_t nchildren;
    int line;
};

/* The value of an attribute, or NULL. */
const char *exconf_attr(const struct exconf *e, const char *name);
const char *exconf_node_attr(const struct exconf_node *n, const char *name);
/* Whether two configurations are written the same (a reload keeps such an executor running). */
bool exconf_equal(const struct exconf *a, const struct exconf *b);
/* Frees what e holds (not e itself). */
void exconf_free(struct exconf *e);

#endif
