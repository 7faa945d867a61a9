/*
 * cluster: what a cluster of corralds needs from the distributed engine
 * under it, as one small interface with one backend per engine
 * (cluster_nats.c: NATS JetStream).
 *
 *   - a partitioned log: publish a message to partition p, asynchronously
 *     (acknowledged once the log has stored it, replicated); subscribe to
 *     partition p from a sequence on, in order;
 *   - a key-value store with revisions, in two buckets: one whose entries
 *     expire (leases, node membership: the failure detector) and one whose
 *     entries stay (read positions, checkpoints, silences).  create and
 *     update on a revision are the compare-and-set that makes a revision a
 *     fencing token; a watch reports every change of a set of keys, in
 *     revision order;
 *   - a work queue: messages published to a named consumer (an executor)
 *     under an id, a second publish of an id within the duplicate window
 *     dropped; every node pulls each consumer's messages, and a message
 *     pulled stays the node's until it acknowledges it (done), gives it
 *     back, or stops saying it is in progress for the ack wait: then it is
 *     delivered again, to any node.  An id acknowledged once is not
 *     delivered again for an hour, whatever the servers stored: a copy
 *     is acknowledged unseen and counted;
 *
 * The backend runs threads of its own: deliver and acked are called on
 * them, never on the caller's loop.  The KV calls block (a round trip to
 * the servers) and are made from cluster_node.c's lease thread and, for
 * the silences, the loop (cluster_silences.c); publish never blocks.
 */
#ifndef CORRAL_CLUSTER_H
#define CORRAL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"

struct cluster_log;
struct cluster_watch;

/*
 * A change a watch saw: the key's value at revision rev, or its deletion
 * (val NULL); key NULL once the values the keys had when the watch began
 * have all been reported.
 */
typedef void (*cluster_watch_fn)(void *arg, const char *key, const char *val, size_t len,
                                 uint64_t rev);

/*
 * A message's flags: CLUSTER_SEEN, published only to tell the partition's
 * owner that its host sent (absence detection), not to be correlated.
 */
#define CLUSTER_SEEN 1u
/* Delivered with more of the partition's messages behind it (a backlog being read). */
#define CLUSTER_PENDING 2u
/*
 * Stored after a message its publisher sent later (its publish was sent
 * again after an acknowledgement that did not come): correlated out of
 * the order the receiving node had it.
 */
#define CLUSTER_LATE 4u

/*
 * A message of partition part at sequence seq, stored at stamp_ms (wall; 0:
 * unknown), published with flags, for the subscription of token.
 */
typedef void (*cluster_deliver_fn)(void *arg, unsigned part, uint64_t token, uint64_t seq,
                                   uint64_t stamp_ms, unsigned flags, const char *data, size_t len,
                                   const char *peer, const char *tls_peer, const char *host);
/* A publish was acknowledged (ok) or failed for good. */
typedef void (*cluster_acked_fn)(void *arg, bool ok);

struct cluster_callbacks {
    cluster_deliver_fn deliver;
    cluster_acked_fn acked;
    void *arg;
};

struct cluster_queue;
struct cluster_job; /* one message pulled from the work queue, until acked, given back or freed */

/* A message pulled for consumer cons, published under id (NULL: none), on a backend thread. */
typedef void (*cluster_job_fn)(void *arg, struct cluster_job *job, const char *cons, const char *id,
                               const char *data, size_t len);

struct cluster_wq_stats {
    uint64_t published, stored, failed; /* publishes: queued, stored, failed for good */
    uint64_t copies;   /* pulled, acknowledged unseen: their id was delivered or on its way */
    uint64_t deferred; /* pulled, given back: their delivery record could not be read */
};

enum cluster_bucket {
    CLUSTER_LEASES, /* entries expire lease seconds after their last write */
    CLUSTER_STATE,  /* entries stay */
};

/* KV results */
#define CLUSTER_OK       0
#define CLUSTER_ABSENT   1 /* get: no such key (or it expired); update: the key is gone */
#define CLUSTER_CONFLICT 2 /* create: it exists; update: its revision is not last */
#define CLUSTER_ERROR    (-1)

struct cluster_backend {
    const char *name;
    /* Connects, creates or updates the stream and the buckets; NULL with err set. */
    struct cluster_log *(*open)(const struct conf_cluster *cc, const struct cluster_callbacks *cb,
                                struct buf *err);
    void (*close)(struct cluster_log *l);
    /*
     * Queues m for partition part, with the receiving input's peer, TLS
     * peer (NULL: none), the receiving node's host name and flags; false
     * when it could not even be queued (acked is not called then).
     */
    bool (*publish)(struct cluster_log *l, unsigned part, const char *data, size_t len,
                    const char *peer, const char *tls_peer, const char *host, unsigned flags);
    /*
     * Delivers partition part from sequence from (1: the start) on, tagged with token.  The
     * backend may start reading later (a consumer the servers do not create at once is
     * asked for again, with backoff, until unsubscribe): 0 then too.
     */
    int (*subscribe)(struct cluster_log *l, unsigned part, uint64_t from, uint64_t token,
                     struct buf *err);
    void (*unsubscribe)(struct cluster_log *l, unsigned part);
    /* How many times a subscription was asked for again, for /metrics. */
    uint64_t (*subscribe_retries)(struct cluster_log *l);
    int (*kv_get)(struct cluster_log *l, enum cluster_bucket b, const char *key, struct buf *val,
                  uint64_t *rev);
    int (*kv_create)(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val,
                     size_t len, uint64_t *rev);
    int (*kv_update)(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val,
                     size_t len, uint64_t last, uint64_t *rev);
    int (*kv_put)(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val,
                  size_t len);
    int (*kv_delete)(struct cluster_log *l, enum cluster_bucket b, const char *key);
    /* The most bytes one value may hold (the servers' max payload, less room for headers). */
    size_t (*max_value)(struct cluster_log *l);
    /* Calls fn for every key of b that starts with prefix (deleted ones left out). */
    int (*kv_keys)(struct cluster_log *l, enum cluster_bucket b, const char *prefix,
                   void (*fn)(void *arg, const char *key), void *arg);
    /*
     * Reports the keys of b that start with prefix (ending with a dot):
     * each one's value first, then a NULL key, then each change, all on a
     * thread of the backend's, in revision order.  NULL with err set.
     */
    struct cluster_watch *(*kv_watch)(struct cluster_log *l, enum cluster_bucket b,
                                      const char *prefix, cluster_watch_fn fn, void *arg,
                                      struct buf *err);
    /* Stops a watch: fn is not called any more once this returns. */
    void (*kv_unwatch)(struct cluster_watch *w);
    /*
     * Creates or binds the work queue and one consumer per name of cons, and
     * pulls each (at most pending jobs not yet acked, freed or given back,
     * per consumer); fn gets the jobs.  NULL with err set.
     */
    struct cluster_queue *(*wq_open)(struct cluster_log *l, const char *const *cons, size_t ncons,
                                     unsigned pending, cluster_job_fn fn, void *arg,
                                     struct buf *err);
    /*
     * From now on pulls for the consumers of cons only (a reload): one not
     * pulled yet is bound as wq_open does, on a thread of the backend's and
     * again until the servers make it (logged); one not named is no longer
     * pulled from (its jobs pulled already end as usual).  Loop thread.
     */
    void (*wq_pull)(struct cluster_queue *q, const char *const *cons, size_t ncons);
    /* Stops pulling; the jobs not yet acked are the servers' again after the ack wait. */
    void (*wq_close)(struct cluster_queue *q);
    /*
     * Queues data for consumer cons under id, asynchronously (sent again
     * until stored, the id making it stored once); false when it could not
     * even be queued.  Any thread.
     */
    bool (*wq_publish)(struct cluster_queue *q, const char *cons, const char *id, const char *data,
                       size_t len);
    /* Done: the job is gone from the queue; j is freed. */
    void (*wq_ack)(struct cluster_job *j);
    /* Still at work on it: its ack wait starts again. */
    void (*wq_progress)(struct cluster_job *j);
    /* Given back, to be delivered again (to any node) after delay_ms; j is freed. */
    void (*wq_nak)(struct cluster_job *j, unsigned delay_ms);
    /* Forgotten here (the servers deliver it again after the ack wait); j is freed. */
    void (*wq_free)(struct cluster_job *j);
    /* Counters of the work queue. */
    void (*wq_stats)(struct cluster_queue *q, struct cluster_wq_stats *st);
    /* The last error of the calls above made by this thread, for logs. */
    const char *(*error)(struct cluster_log *l);
};

extern const struct cluster_backend cluster_nats;

/*
 * Tests only (agent/corrald-test, CORRAL_TEST_HOOK=lose-done:N; corrald
 * never calls it): the Nth "done" record of a delivery the NATS backend
 * writes fails as if the servers did not answer, and that job's
 * acknowledgement is dropped, as when the server a node talks to dies
 * between a delivery and its acknowledgement.  0: off.
 */
void cluster_nats_fault_lose_done(unsigned nth);

#endif
