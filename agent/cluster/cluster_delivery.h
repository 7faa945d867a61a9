/*
 * cluster_delivery: with <cluster>, the routed alerts reach the executors
 * through the cluster's work queue (cluster.h), not straight from the node
 * whose partition generated them: published under their corral.cluster_id
 * and the executor's name (a replay's second publish is dropped within the
 * duplicate window), pulled by every node that has the executor, submitted
 * to its queue there, and acknowledged once the queue is done with it
 * (delivered, dead-lettered or refused).  See cluster_delivery.c.
 */
#ifndef CORRAL_CLUSTER_DELIVERY_H
#define CORRAL_CLUSTER_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "actions/queue.h"
#include "engine/buf.h"
#include "engine/msg.h"

struct cluster_delivery;
struct cluster_backend;
struct cluster_log;

/*
 * Hands an alert pulled for executor to its queue on this node, on the
 * loop; false when it has no such executor (the alert goes back to the
 * cluster for another node).
 */
typedef bool (*cluster_delivery_fn)(void *arg, const char *executor, const struct msg *m);

/* Pulls for the executors named (copied); NULL with err set. */
struct cluster_delivery *cluster_delivery_new(uv_loop_t *loop, const struct cluster_backend *be,
                                              struct cluster_log *log, const char *const *executors,
                                              size_t nexecutors, cluster_delivery_fn fn, void *arg,
                                              struct buf *err);
/*
 * From now on pulls for the executors named only (a reload): one added is
 * pulled from as soon as the servers make its consumer (until then its
 * alerts wait in the work queue, or go to other nodes that have it), one
 * removed no longer, so that its alerts go to the nodes that have it.
 */
void cluster_delivery_pull(struct cluster_delivery *d, const char *const *executors, size_t n);
/* Stops pulling; what was pulled and not yet acknowledged goes to any node after the ack wait. */
void cluster_delivery_free(struct cluster_delivery *d);
/*
 * Publishes alert m for executor (loop thread); false when it is not for
 * the work queue (it has no corral.cluster_id) or could not be queued
 * (counted): the caller submits it here instead.
 */
bool cluster_delivery_publish(struct cluster_delivery *d, const char *executor,
                              const struct msg *m);
/* What an executor's queue did with an alert (the queue observer's events). */
void cluster_delivery_event(struct cluster_delivery *d, const char *executor, const struct msg *m,
                            enum queue_event ev);
/* The one-second tick: alerts still being delivered are said to be in progress. */
void cluster_delivery_tick(struct cluster_delivery *d);

struct cluster_delivery_stats {
    uint64_t published, stored, publish_failed, pulled, acked, returned, redelivered, copies;
    uint64_t deferred;
    unsigned pending;
};
void cluster_delivery_stats(const struct cluster_delivery *d, struct cluster_delivery_stats *st);

#endif
