/*
 * execq: the executors' queues as the server sees them, one interface
 * whether they run in this process (actions/queue.h, reused or opened on a
 * reload by actions/queueset.h) or, under privilege separation
 * (doc/privsep.md), in the executor process behind an ipcproxy
 * (actions/ipcproxy.h).  The server submits alerts, reads back-pressure and
 * counters by executor index, and stages a reload's executors here; which
 * of the two runs them is this module's business alone.
 *
 * A reload under privilege separation whose executors changed cannot map
 * them before the executor process has reloaded them itself
 * (execq_stage_waits): the caller then asks for that (execq_reload_remote)
 * and maps the stage from the answer (execq_stage_map) before committing.
 */
#ifndef CORRAL_EXECQ_H
#define CORRAL_EXECQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "actions/ipcproxy.h"
#include "actions/queue.h"
#include "actions/queueset.h"
#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "engine/msg.h"

struct execq;

/* A configuration's executors made ready (execq_prepare), not yet running. */
struct execq_stage {
    struct queueset_stage qs; /* in-process: per executor, reused or opened */
    const char **names;       /* per executor, the configuration's names (NULL-terminated) */
    size_t n;
    size_t *remote;   /* privsep: per executor, its index in the proxy */
    bool remote_wait; /* privsep: the executors changed; the executor process reloads first */
};

/* An empty set; fn learns what became of each alert (queue_observer_fn), in both modes. */
struct execq *execq_new(uv_loop_t *loop, queue_observer_fn fn, void *arg);
void execq_free(struct execq *q);
/* Privilege separation: from now on the executors are the proxy's (before the first prepare). */
void execq_set_proxy(struct execq *q, struct ipcproxy *proxy);
/* The proxy, or NULL: the executors run in this process. */
struct ipcproxy *execq_proxy(const struct execq *q);

size_t execq_count(const struct execq *q);
const char *execq_name(const struct execq *q, size_t i);
/* Executor i's queue in this process; NULL under privilege separation. */
struct queue *execq_queue(const struct execq *q, size_t i);

/*
 * An alert for executor i.  keep: past queue= (within the queue's hard
 * bounds), for what a sender can be paused for or what nobody can be.
 */
void execq_submit(struct execq *q, size_t i, const struct msg *m, bool keep);
/* The same for the executor named name; false when none has that name (nothing submitted). */
bool execq_submit_named(struct execq *q, const char *name, const struct msg *m, bool keep);
/* Back-pressure: executor i's queue is full, or down to its low mark. */
bool execq_full(const struct execq *q, size_t i);
bool execq_low(const struct execq *q, size_t i);
const struct queue_stats *execq_stats(const struct execq *q, size_t i);
/* The proxy's own counters, or NULL without privilege separation. */
const struct ipcproxy_stats *execq_proxy_stats(const struct execq *q);

/*
 * Stages the executors of c; old is the running configuration (NULL at
 * start), spool_dir where in-process spools live (NULL: memory only).
 * Returns 0, or -1 with "file:line: message" lines in err (the stage is then
 * to be discarded).
 */
int execq_prepare(struct execq *q, struct execq_stage *st, const struct conf *old,
                  const struct conf *c, const char *spool_dir, struct buf *err);
/* The stage waits for the executor process to reload its executors (privsep). */
bool execq_stage_waits(const struct execq_stage *st);
/* Asks the executor process to reload (ipcproxy_reload); -1: it is gone. */
int execq_reload_remote(struct execq *q, uint64_t generation, ipcproxy_reload_fn fn, void *arg);
/*
 * The executor process has reloaded: each staged executor's index in its new
 * list, by name; one it does not have is written to report and refused until
 * the next reload.
 */
void execq_stage_map(struct execq *q, struct execq_stage *st, struct buf *report);
/* The same for the running executors (a reload given up while it waited). */
void execq_remap(struct execq *q);
/*
 * Swaps the stage in: in-process, executors gone or changed stop and hand
 * over (queueset_commit, written to report unless NULL).
 */
void execq_commit(struct execq *q, struct execq_stage *st, struct buf *report);
/* Undoes a stage: closes what it opened; the running executors are untouched. */
void execq_discard(struct execq_stage *st);
/*
 * Closes the executors at shutdown; done is called execq_closing() times
 * (never under privilege separation: the executor process closes its queues
 * when it is terminated).
 */
size_t execq_closing(const struct execq *q);
void execq_close(struct execq *q, void (*done)(void *arg), void *arg);

#endif
