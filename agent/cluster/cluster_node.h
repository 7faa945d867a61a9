/*
 * cluster_node: corrald as one node of a cluster (<cluster>, see
 * doc/scaling.md): what its inputs receive is parsed, classified and
 * published to the partition that owns its correlation key; the partitions
 * whose lease this node holds are read back and correlated here, one engine
 * per partition.  The backend is cluster.h's.  See cluster_node.c.
 */
#ifndef CORRAL_CLUSTER_NODE_H
#define CORRAL_CLUSTER_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "engine/corr.h"
#include "engine/pdb.h"

struct cluster_node;
struct cluster_backend;

struct cluster_node_opts {
    uv_loop_t *loop;
    const struct conf_cluster *cc; /* read at creation only */
    const char *hostname;          /* HOST of local messages that name none */
    /* each partition's engine: limits, log and clock (emit and arg are the node's) */
    const struct corr_opts *corr;
    /* what a partition's engine emits, on the loop thread, once its lease is checked */
    corr_emit_fn emit;
    void *arg;
    /*
     * <absence>: each owned partition watches the hosts whose HOST routes to
     * it, from every message of theirs (see cluster_node.c); its reports go to
     * absence_emit (with arg).  The rules stay the caller's.
     */
    const struct conf_absence *absences;
    size_t nabsences, max_absence_sources;
    void (*absence_emit)(void *arg, struct msg *m);
    const struct cluster_backend *backend; /* the engine under it; NULL: cluster_nats */
};

/* Connects and starts the lease thread; NULL with err set. db is read-only while it runs. */
struct cluster_node *cluster_node_new(const struct cluster_node_opts *o, struct pdb *db,
                                      struct buf *err);
/* Gives up its partitions (positions written, leases freed) and disconnects. */
void cluster_node_free(struct cluster_node *n);

/*
 * Publishes one message an input read (peer, tls_peer may be NULL).
 * Returns false when it was dropped (counted): a datagram (!wait) that
 * found max-in-flight publishes unacknowledged, or one the backend refused.
 * A stream input's (wait) is taken beyond the bound; the caller pauses the
 * stream inputs while cluster_node_full().
 */
bool cluster_node_submit(struct cluster_node *n, const char *data, size_t len, const char *peer,
                         const char *tls_peer, bool wait);
bool cluster_node_full(const struct cluster_node *n);
bool cluster_node_low(const struct cluster_node *n);
/* The one-second tick: each owned partition's engine moves its time on. */
void cluster_node_tick(struct cluster_node *n);
/* The engines of the owned partitions (at most max). */
unsigned cluster_node_engines(struct cluster_node *n, struct corr **out, unsigned max);
/* New rules: routing and every partition's engine (corr_set_db). */
void cluster_node_set_db(struct cluster_node *n, struct pdb *db);

/* New <absence> rules: every owned partition's watch takes over what it watched alike. */
void cluster_node_set_absence(struct cluster_node *n, const struct conf_absence *rules,
                              size_t nrules, size_t max_sources);

struct cluster_node_stats {
    uint64_t published, acked, publish_failed, dropped, consumed, fenced, stale, split;
    uint64_t late; /* consumed out of the order their node received them (CLUSTER_LATE) */
    uint64_t acquired, lost, released, checkpoints, suppressed;
    uint64_t ckpt_damaged;        /* checkpoints found incomplete or damaged when taking over */
    uint64_t subscribe_retries;   /* partitions' consumers asked for again (the backend's) */
    uint64_t ckpt_bytes, ckpt_us; /* the last checkpoints of the owned partitions: size, time */
    uint64_t absence_sources, absence_down; /* of the owned partitions (loop thread only) */
    uint64_t seen_published;                /* CLUSTER_SEEN copies to hosts' absence partitions */
    unsigned owned, members, partitions;
    bool balanced; /* owns exactly its share, as every member sees it */
};
void cluster_node_stats(const struct cluster_node *n, struct cluster_node_stats *st);
/* The backend and its connection, for the cluster's other users (cluster_silences.c). */
struct cluster_log;
const struct cluster_backend *cluster_node_backend(const struct cluster_node *n,
                                                   struct cluster_log **log);
/* Whether this node holds partition p's lease now (any thread). */
bool cluster_node_owns(const struct cluster_node *n, unsigned p);

#endif
