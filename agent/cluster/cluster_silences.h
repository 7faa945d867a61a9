/*
 * cluster_silences: the silences of a cluster (<cluster>), kept in its
 * state bucket (cluster.h) instead of the silences file: every change made
 * on a node (CLI, API) is written there before it is answered, and every
 * node watches the bucket and applies the others' changes to its own set
 * (silences_apply: the newer updatedAt wins).  See cluster_silences.c.
 */
#ifndef CORRAL_CLUSTER_SILENCES_H
#define CORRAL_CLUSTER_SILENCES_H

#include <stdint.h>

#include <uv.h>

#include "agent/cluster/cluster.h"
#include "agent/alerting/silences.h"
#include "engine/buf.h"

struct cluster_silences;

/* Called on the loop thread after another node's change altered the set. */
typedef void (*cluster_silences_changed_fn)(void *arg);

/*
 * Sets sil's store to the bucket, reads the silences it holds into sil
 * (waiting for them: a node that starts mutes as the cluster does) and
 * watches it; NULL with err set.
 */
struct cluster_silences *cluster_silences_new(uv_loop_t *loop, const struct cluster_backend *be,
                                              struct cluster_log *log, struct silences *sil,
                                              cluster_silences_changed_fn changed, void *arg,
                                              struct buf *err);
/* Stops the watch (before the backend's connection closes) and the store. */
void cluster_silences_free(struct cluster_silences *c);

struct cluster_silences_stats {
    uint64_t applied;      /* changes of other nodes taken */
    uint64_t stale;        /* changes older than the silence here: left */
    uint64_t apply_errors; /* damaged records in the bucket */
    uint64_t conflicts;    /* writes that met a concurrent one and were tried again */
};
void cluster_silences_stats(const struct cluster_silences *c, struct cluster_silences_stats *st);

#endif
