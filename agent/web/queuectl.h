/*
 * queuectl: the control socket's `queue` commands, delivery control over
 * every executor's queue (actions/queue.h), which `corral queue` sends:
 *
 *   queue list [EXECUTOR]             JSON: {"executors": [queue_list_json...]}
 *   queue retry EXECUTOR/ID           a dead letter back into its queue
 *   queue retry --all-dead [EXECUTOR] every dead letter (of one executor)
 *   queue drop EXECUTOR/ID            a queued alert (ID qSEQ) or a dead letter
 *
 * The answer to retry and drop is one or more lines; the first word of the
 * first says how it went: "OK", "ERROR" (unknown executor or id, a bad
 * command: nothing changed) or "FAILED" (an I/O error, see the text).
 */
#ifndef CORRAL_QUEUECTL_H
#define CORRAL_QUEUECTL_H

#include <stddef.h>

#include "engine/buf.h"

struct server;

/* Entries listed per executor and list (the totals count them all). */
#define QUEUECTL_LIST_MAX 1000

/*
 * {"executors": [queue_list_json of each, or of executor name only]}, what
 * `queue list` answers, for the HTTP API and status page to serve alike.
 * The caller owns it (json_decref).  NULL under privilege separation: the
 * queues are the executor process's (`queue list` on the control socket
 * asks it).
 */
struct json_t;
struct json_t *queuectl_list_json(struct server *s, const char *name);

/* args: what follows "queue " in the request. */
void queuectl_command(struct server *s, const char *args, struct buf *out);
/*
 * The same on queues[0..n): the executor process's, when corrald runs
 * privilege-separated (ipcserve_set_control) and the engine forwards the
 * command to it.
 */
struct queue;
void queuectl_command_queues(struct queue **queues, size_t n, const char *args, struct buf *out);

#endif
