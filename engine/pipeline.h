/*
 * pipeline: the parallel correlation pipeline, shared by `corral match -j N`
 * (par.c) and corrald's workers (agent/core/workers.c).  The caller fills
 * batches of raw messages (bytes, and for a received one its peer and TLS
 * peer) and hands them over; N threads parse, normalise and classify them
 * in chunks, correlate them in shards by context key (par.h: routing,
 * split messages, balancing) and the caller collects, batch after batch,
 * the input messages and what the rules generated, in exactly the order one
 * corr (corr.h) fed the same messages gives them.
 *
 * No I/O and no event loop: the caller is told that a batch is done through
 * a callback on the worker thread that finished it (corrald wakes its loop
 * with it), or waits for it (pipeline_wait).  The design is at the top of
 * pipeline.c.
 */
#ifndef CORRAL_PIPELINE_H
#define CORRAL_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/corr.h"
#include "engine/par.h"
#include "engine/syslogfmt.h"

struct pipeline;

/*
 * Renders an emitted message, appending to out, on the thread of the shard
 * that emitted it (several at once, each with its own out): it must only
 * read m and what is read-only while the pipeline runs.
 */
typedef void (*pipeline_render_fn)(void *arg, struct msg *m, enum corr_emit_kind kind,
                                   const struct pdb_action *action, struct buf *out);

/* One message handed back by pipeline_collect(). */
struct pipeline_out {
    /* without a render function: the message (valid during the call; msg_ref to keep it) */
    struct msg *m;
    enum corr_emit_kind kind;
    const struct pdb_action *action;
    /* with one: what it rendered, where it stays until the call with batch_end returns (the
     * records of a shard follow each other there: a caller may gather them for writev()) */
    const char *text;
    size_t len;
    bool expiry;    /* a timeout fired it */
    bool keep;      /* not a timeout, and the input it came from was added with keep */
    bool batch_end; /* the last of its batch */
};
/* Receives the messages in order on the collecting thread; nonzero: see pipeline_collect(). */
typedef int (*pipeline_deliver_fn)(void *arg, const struct pipeline_out *o);

struct pipeline_opts {
    unsigned threads;      /* 1 to PAR_MAX_SHARDS */
    size_t batch;          /* messages a batch holds before it is full (it may grow beyond) */
    unsigned nbatches;     /* the ring: at least 2 (one filling, the others handed over) */
    struct corr_opts corr; /* each shard's corr: limits, log, clock (emit and arg are set here) */
    /* the limits of corr are totals, each shard enforces its part (else each has them all) */
    bool split_limits;
    struct syslogfmt_opts parse;
    /* this host, for received_normalise(); NULL: messages are not normalised (a replay) */
    const char *hostname;
    pipeline_render_fn render; /* NULL: messages are handed back by reference */
    /* a batch is done (on the worker thread that finished it): it can be collected */
    void (*ready)(void *arg);
    /* at the start of every thread, on it (may be NULL) */
    void (*thread_start)(void *arg, unsigned thread);
    void *arg;
};

/*
 * Starts the threads over db (read-only while they run).  The number of
 * correlation shards is par_route_init()'s for opts->threads.  NULL when
 * the threads cannot start.
 */
struct pipeline *pipeline_new(struct pdb *db, const struct pipeline_opts *o);
/*
 * Waits for the batches handed over, stops the threads, frees it all (what
 * was not collected is dropped).
 */
void pipeline_free(struct pipeline *p);

/*
 * Adds a message to the batch being filled (copied; peer and tls_peer may
 * be NULL, see received.h).  Returns how many the batch now holds.
 */
size_t pipeline_add(struct pipeline *p, const char *data, size_t len, const char *peer,
                    size_t peerlen, const char *tls_peer, size_t tls_peerlen, bool keep);
/* Messages in the batch being filled. */
size_t pipeline_filling(const struct pipeline *p);
/* Whether a batch can be handed over now: the ring slot after it is collected. */
bool pipeline_can_submit(const struct pipeline *p);

#define PIPELINE_TICK   1u /* corr_tick on every shard, before the batch's messages */
#define PIPELINE_EXPIRE 2u /* corr_expire_all on every shard, after them */
/*
 * Hands the batch being filled over (clock: ms, the time its messages were
 * read, see corr_msg_time) with flags, if pipeline_can_submit().  A batch
 * with no message and no flag is not handed over.  Returns whether it was.
 */
bool pipeline_submit(struct pipeline *p, uint64_t clock, unsigned flags);

/* Batches handed over, and batches collected, since the start. */
uint64_t pipeline_submitted(const struct pipeline *p);
uint64_t pipeline_collected(const struct pipeline *p);
/* Blocks until the batches before upto are done (collectable). */
void pipeline_wait(struct pipeline *p, uint64_t upto);
/*
 * Hands back the batches done, in order, merging their shards' outputs
 * (par_merge), and frees their slots.  A nonzero from deliver ends that
 * batch's delivery and is returned (the batches after it are delivered).
 * Called from deliver, it does nothing.
 */
int pipeline_collect(struct pipeline *p, pipeline_deliver_fn deliver, void *arg);
/* Whether pipeline_collect() is running (its deliver is being called). */
bool pipeline_collecting(const struct pipeline *p);
/* Messages handed over and not yet collected, and those filling. */
size_t pipeline_queued(const struct pipeline *p);

/*
 * The shards.  Read or change them only when no batch is with the threads
 * (every batch handed over collected: they wait on the lock, still).
 */
unsigned pipeline_nthreads(const struct pipeline *p);
unsigned pipeline_nshards(const struct pipeline *p);
struct corr *pipeline_shard(struct pipeline *p, unsigned k);
const struct par_route *pipeline_route(const struct pipeline *p);
/*
 * The rules change (every batch collected): every shard takes db
 * (corr_set_db, sums of kept and dropped), each thread forgets its time
 * zone.  *rt is the routing under db; when it differs from the running one
 * (pipeline_route), the caller moves the contexts: saves them, calls
 * pipeline_reshard and loads them.
 */
void pipeline_set_db(struct pipeline *p, struct pdb *db, struct par_route *rt, size_t *kept,
                     size_t *dropped);
/* Replaces every shard by an empty one, routed by rt (every batch collected); the contexts the
 * caller then loads into them are moved ones until pipeline_loaded().  The per-rule counts of
 * events of the shards replaced go on in the first new one (corr_add_rule_counts). */
void pipeline_reshard(struct pipeline *p, const struct par_route *rt);
/*
 * Contexts were read into the shards from a state file (every batch
 * collected): the timers the messages to come arm are numbered after
 * theirs, as one engine numbers them (corr_arm_seq).
 */
void pipeline_loaded(struct pipeline *p);

/* The sums of the correlation counters (as pipeline_shard: every batch collected): the shards', and
 * those of the messages that need no shard, which the threads process as they classify them.  The
 * counts of events only grow: a reshard keeps those of the shards it replaces, and the contexts
 * moved (loaded before pipeline_loaded()) are not counted created twice. */
void pipeline_stats(struct pipeline *p, struct corr_stats *out);
/* Per thread: ns spent classifying and correlating (any thread may read it). */
uint64_t pipeline_busy_ns(const struct pipeline *p, unsigned thread);
/* Messages with a value cut (MSG_F_TRUNCATED) among those collected. */
uint64_t pipeline_truncated(const struct pipeline *p);

#endif
