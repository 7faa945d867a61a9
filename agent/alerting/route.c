/*
 * route: the routing tree (struct route_table), compiled from the
 * configuration: executor names become indexes, filters are compiled once,
 * tags interned once.
 */
#include "agent/alerting/route.h"
#include "engine/filter.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

struct node {
    size_t *to; /* executor indexes */
    size_t nto;
    bool has_to;
    char *class, *rule;
    tag_id tag;
    bool has_tag;
    struct filter *filter;
    enum conf_select messages;
    bool cont;
    int send_resolved; /* 1 yes, 0 no, -1 as the parent */
    struct node *children;
    size_t nchildren;
};

struct route_table {
    struct node *routes;
    size_t nroutes;
    const char *const *names;
    size_t nnames;
    unsigned char *sent;     /* per message: executor already chosen */
    unsigned char *resolved; /* per message: a route choosing it says send-resolved */
    char **unknown_logged;
    size_t nunknown_logged, capunknown;
    unsigned long unknown;
};

static void
free_node(struct node *n)
{
    size_t i;

    free(n->to);
    free(n->class);
    free(n->rule);
    filter_free(n->filter);
    for (i = 0; i < n->nchildren; i++) free_node(&n->children[i]);
    free(n->children);
}

static ssize_t
index_of(const struct route_table *r, const char *name)
{
    size_t i;

    for (i = 0; i < r->nnames; i++)
        if (strcmp(r->names[i], name) == 0) return (ssize_t)i;
    return -1;
}

static bool
compile(struct route_table *r, struct node *n, const struct conf_route *cr, const char *file,
        struct buf *err)
{
    size_t i;
    bool ok = true;

    memset(n, 0, sizeof(*n));
    n->messages = cr->messages;
    n->cont = cr->cont;
    n->send_resolved = cr->send_resolved;
    n->has_to = cr->nto > 0;
    n->to = xcalloc(cr->nto + 1, sizeof(*n->to));
    for (i = 0; i < cr->nto; i++) {
        ssize_t k = index_of(r, cr->to[i]);
        if (k < 0) {
            buf_printf(err, "%s:%d: route to unknown executor '%s'\n", file, cr->line, cr->to[i]);
            ok = false;
            continue;
        }
        n->to[n->nto++] = (size_t)k;
    }
    if (cr->class) n->class = xstrdup(cr->class);
    if (cr->rule) n->rule = xstrdup(cr->rule);
    if (cr->tag) {
        n->tag = tag_intern(cr->tag, strlen(cr->tag));
        n->has_tag = true;
    }
    if (cr->filter) {
        struct buf e = BUF_INIT;
        n->filter = filter_compile(cr->filter, strlen(cr->filter), &e);
        if (!n->filter) {
            buf_printf(err, "%s:%d: bad route filter '%s': %s\n", file, cr->line, cr->filter,
                       buf_str(&e));
            ok = false;
        }
        buf_free(&e);
    }
    n->children = xcalloc(cr->nchildren + 1, sizeof(*n->children));
    for (i = 0; i < cr->nchildren; i++) {
        n->children[i].messages = cr->children[i].messages;
        if (!compile(r, &n->children[i], &cr->children[i], file, err)) ok = false;
        n->nchildren++;
    }
    return ok;
}

struct route_table *
route_new(const struct conf *c, const char *const *names, size_t nnames, struct buf *err)
{
    struct route_table *r = xcalloc(1, sizeof(*r));
    const char *file = c->file ? c->file : "(built-in configuration)";
    size_t i;
    bool ok = true;

    r->names = names;
    r->nnames = nnames;
    r->sent = xcalloc(nnames + 1, 1);
    r->resolved = xcalloc(nnames + 1, 1);
    r->routes = xcalloc(c->nroutes + 1, sizeof(*r->routes));
    for (i = 0; i < c->nroutes; i++) {
        if (!compile(r, &r->routes[i], &c->routes[i], file, err)) ok = false;
        r->nroutes++;
    }
    if (!ok) {
        route_free(r);
        return NULL;
    }
    return r;
}

void
route_free(struct route_table *r)
{
    size_t i;

    if (!r) return;
    for (i = 0; i < r->nroutes; i++) free_node(&r->routes[i]);
    free(r->routes);
    free(r->sent);
    free(r->resolved);
    for (i = 0; i < r->nunknown_logged; i++) free(r->unknown_logged[i]);
    free(r->unknown_logged);
    free(r);
}

static bool
value_is(const struct msg *m, nv_handle h, const char *want)
{
    size_t len;
    const char *v = msg_get(m, h, &len);

    return v && len == strlen(want) && memcmp(v, want, len) == 0;
}

static bool
matches(const struct node *n, const struct msg *m)
{
    bool generated = msg_flags(m) & MSG_F_GENERATED;
    struct template_env env;
    struct msg *mm = (struct msg *)m;

    if (n->messages == CONF_SELECT_GENERATED && !generated) return false;
    if (n->messages == CONF_SELECT_CLASSIFIED &&
        (generated || value_is(m, NV_CLASS, "unknown") || !msg_get(m, NV_CLASS, NULL)))
        return false;
    if (n->class && !value_is(m, NV_CLASS, n->class)) return false;
    if (n->rule && !value_is(m, NV_RULE_ID, n->rule)) return false;
    if (n->has_tag && !msg_tag_has(m, n->tag)) return false;
    if (n->filter) {
        template_env_single(&env, &mm);
        if (!filter_eval(n->filter, &env)) return false;
    }
    return true;
}

struct target {
    struct route_table *r;
    void (*fn)(size_t, void *);
    void *arg;
};

/* index is chosen; resolved: by a route with send-resolved (another route may add it later) */
static void
send_to(struct target *t, size_t index, bool resolved)
{
    if (resolved) t->r->resolved[index] = 1;
    if (t->r->sent[index]) return;
    t->r->sent[index] = 1;
    t->fn(index, t->arg);
}

static bool
walk(struct target *t, const struct node *list, size_t n, const struct msg *m, const size_t *to,
     size_t nto, bool resolved)
{
    bool any = false;
    size_t i, k;

    for (i = 0; i < n; i++) {
        const struct node *r = &list[i];
        const size_t *rto = r->has_to ? r->to : to;
        size_t rnto = r->has_to ? r->nto : nto;
        bool res = r->send_resolved < 0 ? resolved : r->send_resolved > 0;
        if (!matches(r, m)) continue;
        any = true;
        if (!walk(t, r->children, r->nchildren, m, rto, rnto, res))
            for (k = 0; k < rnto; k++) send_to(t, rto[k], res);
        if (!r->cont) break;
    }
    return any;
}

void
route_message(struct route_table *r, const struct msg *m, const struct pdb_action *action,
              void (*fn)(size_t, void *), void *arg)
{
    struct target t = {r, fn, arg};
    size_t i, k;

    memset(r->sent, 0, r->nnames);
    memset(r->resolved, 0, r->nnames);
    if (action) {
        for (i = 0; i < action->nroutes; i++) {
            ssize_t idx = index_of(r, action->routes[i]);
            if (idx >= 0) {
                send_to(&t, (size_t)idx, false);
                continue;
            }
            r->unknown++;
            for (k = 0; k < r->nunknown_logged; k++)
                if (strcmp(r->unknown_logged[k], action->routes[i]) == 0) break;
            if (k == r->nunknown_logged && r->nunknown_logged < 100) {
                log_msg(LOG_WARNING, "a rule routes to executor '%s', which is not configured",
                        action->routes[i]);
                r->unknown_logged = xgrow(r->unknown_logged, &r->capunknown, r->nunknown_logged + 1,
                                          sizeof(char *));
                r->unknown_logged[r->nunknown_logged++] = xstrdup(action->routes[i]);
            }
        }
    }
    walk(&t, r->routes, r->nroutes, m, NULL, 0, false);
}

bool
route_sends_resolved(const struct route_table *r, size_t index)
{
    return index < r->nnames && r->resolved[index];
}

int
route_check_actions(const struct route_table *r, const struct pdb *db, struct buf *err)
{
    size_t i, j, k;
    int rc = 0;

    for (i = 0; i < pdb_nrules(db); i++) {
        const struct pdb_rule *rule = pdb_rule_at(db, i);
        for (j = 0; j < rule->nactions; j++) {
            const struct pdb_action *a = &rule->actions[j];
            for (k = 0; k < a->nroutes; k++) {
                if (index_of(r, a->routes[k]) >= 0) continue;
                buf_printf(err,
                           "%s:%d: rule %s: action routes to executor '%s', which the "
                           "configuration does not define\n",
                           rule->file, a->line > 0 ? a->line : rule->line, rule->id, a->routes[k]);
                rc = -1;
            }
        }
    }
    return rc;
}

unsigned long
route_unknown(const struct route_table *r)
{
    return r->unknown;
}
