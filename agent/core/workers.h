/*
 * workers: corrald's parallel engine, <engine workers="N"/> with N > 1.
 *
 * The loop thread queues the raw messages its inputs read; N worker threads
 * parse and classify them and correlate them in shards by context key (the
 * pipeline of engine/pipeline.h), and hand back, in the loop thread's
 * order, the input messages and what the rules generated, for outputs,
 * executors and the alert store, which stay on the loop thread.  See
 * workers.c.
 */
#ifndef CORRAL_WORKERS_H
#define CORRAL_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"
#include "engine/corr.h"

struct workers;

/*
 * Receives every message on the loop thread, in order (see workers.c);
 * keep: it came from a stream input (back-pressure holds those, see server.c).
 */
typedef void (*workers_emit_fn)(void *arg, struct msg *m, enum corr_emit_kind kind,
                                const struct pdb_action *action, bool keep);

struct workers_opts {
    unsigned threads;             /* more than 1 */
    size_t queue;                 /* messages waiting for the workers, at least 2 */
    const char *hostname;         /* HOST of local messages that name none */
    const struct corr_opts *corr; /* limits (totals, each shard its part) and log; emit unused */
    workers_emit_fn emit;
    void *arg;
    /* with no batch at the workers, how long a batch that is not full waits for more (see
     * workers.c); 0: handed over at the end of the loop iteration */
    unsigned linger_ms;
};
#define WORKERS_LINGER_MS 5 /* corrald's */

/* Starts the threads over db (read-only while they run); NULL when they cannot start. */
struct workers *workers_new(uv_loop_t *loop, struct pdb *db, const struct workers_opts *o);
/* Processes everything queued, then stops the threads and frees it all. */
void workers_free(struct workers *w);

/*
 * Queues one message read by an input (peer, tls_peer may be NULL); keep:
 * it comes from a stream input (for the outputs' back-pressure).  With
 * overflow (an input the caller pauses or holds when the queue is full) it
 * is always taken, beyond the queue's size by at most what one read brings;
 * otherwise it is refused (false, and counted) when the queue is full.
 */
bool workers_submit(struct workers *w, const char *data, size_t len, const char *peer,
                    const char *tls_peer, bool keep, bool overflow);
bool workers_full(const struct workers *w);
bool workers_low(const struct workers *w);
/* The one-second tick: every shard moves its time on by the clock (corr_tick). */
void workers_tick(struct workers *w);
/*
 * Waits until every queued message has been processed and handed back: the
 * shards are then still, and may be read and changed from the loop thread
 * until the next workers_submit or the end of this loop iteration.
 */
void workers_drain(struct workers *w);

unsigned workers_nshards(const struct workers *w);
struct corr *workers_shard(struct workers *w, unsigned k);
/* The correlation counters of every shard and of what the threads processed without one
 * (pipeline_stats()); after workers_drain(). */
void workers_corr_stats(struct workers *w, struct corr_stats *cs);
/* Restores the state file: each shard takes its own contexts.  As corr_load. */
long workers_load(struct workers *w, const char *path, size_t *dropped);
/* Drained first.  Swaps the rules in every shard (corr_set_db); contexts move to the shard
 * that owns them under the new rules, through a temporary file named after near (the state
 * file; NULL: in $TMPDIR).  Sums of kept and dropped. */
void workers_set_db(struct workers *w, struct pdb *db, const char *near, size_t *kept,
                    size_t *dropped);

struct workers_stats {
    uint64_t dropped;   /* datagrams refused, the queue full */
    uint64_t truncated; /* messages with a value cut (MSG_F_TRUNCATED) */
    uint64_t batches;
    size_t queued; /* messages waiting or being processed now */
};
void workers_get_stats(const struct workers *w, struct workers_stats *st);
/* Per thread: seconds spent working (classifying or correlating), for the metrics. */
double workers_busy_seconds(const struct workers *w, unsigned thread);
unsigned workers_nthreads(const struct workers *w);

#endif
