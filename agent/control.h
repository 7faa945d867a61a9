/*
 * control: corrald's local control socket, a Unix stream socket that
 * `corral ctl` talks to.  One command per connection, one line each way in,
 * the answer until the server closes the connection:
 *
 *   stats      counters in Prometheus text format
 *   contexts   open correlation contexts as JSON
 *   reload     reload configuration and rules; the report of what changed
 *   save       save the correlation state now
 *   queue ...  delivery control: list, retry, drop (queuectl.h)
 */
#ifndef CORRAL_CONTROL_H
#define CORRAL_CONTROL_H

#include <uv.h>

#include "engine/buf.h"

struct server;
struct control;

/* Connections the control socket holds open at once; a new one closes the oldest. */
#define CONTROL_MAX_CONNS 8

/* Handles "reload": the daemon owns configuration loading, so it supplies this. */
typedef int (*control_reload_fn)(void *arg, struct buf *report);

struct control *control_open(uv_loop_t *loop, const char *path, struct server *srv,
                             control_reload_fn reload, void *arg, struct buf *err);
void control_close(struct control *c);

#endif
