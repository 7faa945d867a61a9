/*
 * queue: the delivery machinery in front of one executor.  Every alert
 * routed to the executor is written to an on-disk spool before anything
 * else happens, then delivered at most max_inflight at a time; a failure
 * for now is retried with exponential backoff and jitter; an alert that
 * fails for good, or runs out of attempts, goes to the dead-letter file with
 * the reason.  Rate limits and de-duplication run before the spool, so that
 * a flood of events cannot flood an inbox or fork-bomb the host.
 *
 * Durability: the spool is an append-only file of records (an alert, or
 * "alert N is done"), each with a length and a CRC.  Records appended while
 * handling one batch of input are fdatasync'ed before corrald reads the next
 * batch.  At start, the spool is replayed: alerts without a done record are
 * delivered again (at least once), so after a crash an alert that was
 * delivered but whose done record was not yet on disk is delivered twice; at
 * most max_inflight such duplicates per executor.  A torn last record (the
 * crash happened while writing it) is cut off.  The file is compacted when
 * mostly done records.
 */
#ifndef CORRAL_QUEUE_H
#define CORRAL_QUEUE_H

#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"
#include "actions/executor.h"
#include "engine/msg.h"

struct queue;

/* Dedupe keys an executor always remembers (the newest); from 1.5 times as
 * many, the oldest are forgotten early. */
#define QUEUE_DEDUPE_MAX 65536

struct queue_stats {
    uint64_t submitted;        /* alerts routed here */
    uint64_t delivered;        /* delivered successfully */
    uint64_t retries;          /* delivery attempts that failed for now */
    uint64_t dead;             /* written to the dead-letter file */
    uint64_t dropped_full;     /* refused: queue full */
    uint64_t deduplicated;     /* dropped: same dedupe key within the window */
    uint64_t dedupe_forgotten; /* keys forgotten early: more than QUEUE_DEDUPE_MAX in the window */
    uint64_t rate_limited;     /* dropped: over the rate */
    uint64_t queued;           /* waiting now (including retries) */
    uint64_t inflight;         /* being delivered now */
    uint64_t recovered;        /* taken over from the spool at start */
};

/*
 * Opens the executor described by cfg and its queue; spool_dir holds the
 * spool (NULL: no spool, alerts live in memory only).  Returns NULL with
 * "FILE:LINE: message" lines in err.
 */
struct queue *queue_open(uv_loop_t *loop, const struct exconf *cfg, const char *conf_file,
                         const char *spool_dir, struct buf *err);
/* Routes a generated message to this executor (copied). */
void queue_submit(struct queue *q, const struct msg *m);
/* Makes what was submitted durable now (the server calls it once per input batch). */
void queue_sync(struct queue *q);
/* Writes what the executor would send for m (dry run). */
void queue_render(struct queue *q, const struct msg *m, struct buf *out);
/* Stops delivering; alerts still queued stay in the spool for the next start. */
void queue_close(struct queue *q, void (*done)(void *arg), void *arg);
const char *queue_name(const struct queue *q);
const struct queue_stats *queue_get_stats(const struct queue *q);

#endif
