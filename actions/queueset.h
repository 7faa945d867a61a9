/*
 * queueset: the executors' queues across a reload.  corrald reloads them
 * the same way in one process (agent/core/server.c) and, under privilege
 * separation, in the executor process (agent/proc/execproc.c on an L frame,
 * doc/privsep.md), so the rules live here once:
 *
 *   prepare  every executor configured as before (exconf_equal) keeps its
 *            running queue; each other one is opened (queue_open: its
 *            secrets are read, its spool replayed).  Nothing running is
 *            touched; when one cannot open, prepare fails with its
 *            "FILE:LINE: ..." lines and closes again what it opened.
 *   commit   each running queue that is not kept closes; a changed one
 *            first hands what it holds to its successor (the executor of
 *            the same name and kind: queue_handover), a removed one's spool
 *            keeps what is undelivered for a later start.  Cannot fail.
 *   discard  instead of commit: closes what prepare opened.
 *
 * Both steps run in one loop callback (no delivery runs between them): a
 * changed executor's new queue reads the spool its predecessor still has
 * open, and that predecessor must close before it delivers any more.
 */
#ifndef CORRAL_QUEUESET_H
#define CORRAL_QUEUESET_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "actions/exconf.h"
#include "actions/queue.h"
#include "engine/buf.h"

struct queueset_stage {
    struct queue **queues; /* per executor of the new configuration: kept or opened */
    size_t n;
    bool *kept;   /* per running queue: kept by the stage */
    bool *opened; /* per new executor: opened by prepare */
    struct queue *const *running;
    const struct exconf *was; /* the running queues' configurations (nrunning of them) */
    const struct exconf *now; /* the new configuration's executors (n of them) */
    size_t nrunning;
};

/*
 * Prepares st for the executors now[0..n) beside the running queues
 * running[0..nrunning), configured as was[0..nrunning) (both arrays, and
 * running, must live until commit or discard).  New queues open on loop with
 * spool_dir (NULL: memory only).  0, or -1 with lines in err (st discarded).
 */
int queueset_prepare(struct queueset_stage *st, uv_loop_t *loop, struct queue *const *running,
                     const struct exconf *was, size_t nrunning, const struct exconf *now, size_t n,
                     const char *conf_file, const char *spool_dir, struct buf *err);
/*
 * Closes the running queues not kept (handing over first, as above) and
 * writes what changed to report (NULL: not wanted), one line per executor
 * added, changed or removed.  st->queues (n of them) is the caller's from
 * now on; the rest of st is freed.
 */
void queueset_commit(struct queueset_stage *st, struct buf *report);
/* Closes what prepare opened and frees st's arrays (a zeroed st: nothing to do). */
void queueset_discard(struct queueset_stage *st);
/* Whether the executors now[0..n) are was[0..nwas) (each configured alike, none added or removed).
 */
bool queueset_same(const struct exconf *was, size_t nwas, const struct exconf *now, size_t n);

#endif
