/*
 * control: corrald's local control socket, a Unix stream socket that
 * `corral ctl` talks to.  One command per connection, one line each way in,
 * the answer until the server closes the connection:
 *
 *   stats      counters in Prometheus text format
 *   contexts   open correlation contexts as JSON
 *   reload     reload configuration and rules; the report of what changed
 *              (answered once the reload is over)
 *   save       save the correlation state now
 *
 * and a request that is one JSON object (a line starting with '{', at most
 * 16 KiB), answered {"status":"success","data":...} or
 * {"status":"error","error":"what is wrong"} (and nothing changed):
 *
 *   {"command":"alerts", "matchers":["HOST=web1"]}        alerts_json()
 *   {"command":"silence-add", "silence":{...}}            silences_add_json(): {"silenceID":ID}
 *   {"command":"silence-list", "expired":true}            silences_json()
 *   {"command":"silence-query", "matchers":[...]}         silences_json() with a query
 *   {"command":"silence-expire", "ids":[ID, ...]}
 *   {"command":"silence-update", "id":ID, "silence":{...}}
 *                                    silences_update_json(): {"silenceID":ID or a new one}
 *   {"command":"alerts-resolve", "ids":[ID, ...]}
 *   {"command":"alert-add", "alerts":[postableAlert, ...]}
 *                                    apiv2_receive_alerts(): routed as a rule's alert
 *   queue ...  delivery control: list, retry, drop (queuectl.h)
 */
#ifndef CORRAL_CONTROL_H
#define CORRAL_CONTROL_H

#include <sys/types.h>
#include <uv.h>

#include "engine/buf.h"
#include "agent/net/connlimits.h"

struct server;
struct control;

/* CONTROL_MAX_CONNS: connlimits.h */

/*
 * Handles "reload": the daemon owns configuration loading, so it supplies
 * this.  It calls done(conn, rc, report) once, with 0 or -1 and the report's
 * lines: before returning, or later (under privilege separation the
 * executor process may reload too, doc/privsep.md).
 */
typedef void (*control_reload_done)(void *conn, int rc, const char *report);
typedef void (*control_reload_fn)(void *arg, control_reload_done done, void *conn);

/*
 * The socket at path, created with group gid ((gid_t)-1: this process's)
 * and mode (0600 or 0660): connecting needs write permission.  NULL with a
 * line in err when it cannot listen; a socket that could not be given to
 * gid is its owner's only, with a line in err.
 */
struct control *control_open(uv_loop_t *loop, const char *path, gid_t gid, mode_t mode,
                             struct server *srv, control_reload_fn reload, void *arg,
                             struct buf *err);
void control_close(struct control *c);
/*
 * One JSON request (see above) answered into answer: what the control
 * socket does with it, for the HTTP API as well.  0, or -1 when the request
 * is refused (the answer says why).
 */
int control_request_json(struct server *srv, const char *req, size_t len, struct buf *answer);

#endif
