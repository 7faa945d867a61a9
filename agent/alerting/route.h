/*
 * route: decides which executors receive a message.  Two sources, both
 * optional: the route="a,b" attribute of the rule action that generated the
 * message, and the <routes> tree of the configuration, whose routes match on
 * class, rule id, tag or a filter expression, in the spirit of Prometheus
 * Alertmanager: a message goes down the first matching route (and further
 * ones marked continue="yes"), nested routes refine their parent, and a
 * route without to= inherits its parent's executors.  Each executor gets a
 * message at most once.  A route with send-resolved="yes" also has its
 * executors told when the alert resolves (agent/alerting/alerts.h).
 */
#ifndef CORRAL_ROUTE_H
#define CORRAL_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "engine/msg.h"
#include "engine/pdb.h"

/* The routes of one configuration, compiled: filters parsed, executor names resolved. */
struct route_table;

/*
 * Executor names resolve to indexes 0..nnames-1; names is kept, not copied,
 * and must outlive the table.  Returns NULL with "file:line: message" lines
 * in err when a route names an unknown executor or has a bad filter.
 */
struct route_table *route_new(const struct conf *c, const char *const *names, size_t nnames,
                              struct buf *err);
void route_free(struct route_table *r);

/*
 * Calls fn(index) for every executor that gets m.  action is the rule
 * action that generated m (NULL for input messages and absence reports).
 * Rule routes naming an executor that does not exist are counted in
 * route_unknown() and logged once each.
 */
void route_message(struct route_table *r, const struct msg *m, const struct pdb_action *action,
                   void (*fn)(size_t index, void *arg), void *arg);
unsigned long route_unknown(const struct route_table *r);
/*
 * After route_message(): a route that chose executor index says
 * send-resolved="yes" (inherited by nested routes; a rule's route="..."
 * does not), so the executor is told when the alert resolves.
 */
bool route_sends_resolved(const struct route_table *r, size_t index);
/*
 * Every rule action's route="..." names an executor of the table; otherwise
 * -1 with a "rulefile:line: rule ID: ..." line per unknown name in err.
 * Start-up, reload and the configuration checks refuse such rules, so
 * route_message() meets an unknown name only if this was skipped.
 */
int route_check_actions(const struct route_table *r, const struct pdb *db, struct buf *err);

#endif
