/*
 * cluster_alerts: the alert store of a cluster (<cluster>): every change a
 * node makes to an alert (fired, resolved, muted, notified) is written to
 * the cluster's state bucket (cluster.h), and every node watches the
 * bucket and merges the others' changes into its own store (alerts_merge:
 * field by field, in any order: a resolution stands unless a later firing
 * is known; deliveries and histories are joined), so that
 * each node lists, and inhibits with, the alerts of the whole cluster.
 * See cluster_alerts.c.
 */
#ifndef CORRAL_CLUSTER_ALERTS_H
#define CORRAL_CLUSTER_ALERTS_H

#include <stdint.h>

#include <uv.h>

#include "agent/alerting/alerts.h"
#include "agent/cluster/cluster.h"
#include "engine/buf.h"

struct cluster_alerts;

/*
 * Reads the alerts the bucket holds into *store (waiting for them: a node
 * that starts shows the cluster's alerts), watches the bucket and becomes
 * the replica of *store (and of the stores that a reload puts there:
 * alerts_adopt keeps it); NULL with err set.
 */
struct cluster_alerts *cluster_alerts_new(uv_loop_t *loop, const struct cluster_backend *be,
                                          struct cluster_log *log, struct alerts **store,
                                          struct buf *err);
/* Writes what is left to write, stops the watch and the writer. */
void cluster_alerts_free(struct cluster_alerts *c);

struct cluster_alerts_stats {
    uint64_t exported;     /* records written for the other nodes */
    uint64_t applied;      /* other nodes' records merged */
    uint64_t stale;        /* records not newer than the store's (a node's own among them) */
    uint64_t damaged;      /* records that did not decode */
    uint64_t write_errors; /* writes the bucket refused */
    uint64_t dropped; /* changes not written: the queue was full, or the servers gone at a stop */
};
void cluster_alerts_stats(const struct cluster_alerts *c, struct cluster_alerts_stats *st);

#endif
