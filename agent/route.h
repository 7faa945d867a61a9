/*
 * route: decides which executors receive a message.  Two sources, both
 * optional: the route="a,b" attribute of the rule action that generated the
 * message, and the <routes> tree of the configuration, whose routes match on
 * class, rule id, tag or a filter expression, in the spirit of Prometheus
 * Alertmanager: a message goes down the first matching route (and further
 * ones marked continue="yes"), nested routes refine their parent, and a
 * route without to= inherits its parent's executors.  Each executor gets a
 * message at most once.
 */
#ifndef CORRAL_ROUTE_H
#define CORRAL_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"
#include "agent/conf.h"
#include "engine/msg.h"
#include "engine/pdb.h"

struct router;

/* Executor names resolve to indexes 0..nnames-1. */
struct router *router_new(const struct conf *c, const char *const *names, size_t nnames,
                          struct buf *err);
void router_free(struct router *r);

/*
 * Calls fn(index) for every executor that gets m.  action is the rule
 * action that generated m (NULL for input messages and silence reports).
 * Rule routes naming an executor that does not exist are counted in
 * router_unknown() and logged once each.
 */
void router_route(struct router *r, const struct msg *m, const struct pdb_action *action,
                  void (*fn)(size_t index, void *arg), void *arg);
unsigned long router_unknown(const struct router *r);

#endif
