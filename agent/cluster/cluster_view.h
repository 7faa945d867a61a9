/*
 * cluster_view: what a node of a cluster (<cluster>) knows of the others,
 * for the status page and GET /api/v1/cluster: the nodes, whether each is
 * alive, and which node holds which partition's lease.  It watches the
 * cluster's lease bucket (cluster.h) and holds the last change of each
 * key; see cluster_view.c.
 */
#ifndef CORRAL_CLUSTER_VIEW_H
#define CORRAL_CLUSTER_VIEW_H

#include <jansson.h>

#include "agent/cluster/cluster.h"
#include "agent/conf/conf.h"
#include "engine/buf.h"

struct cluster_view;

/* Watches cc's cluster through the backend's connection; NULL with err set. */
struct cluster_view *cluster_view_new(const struct cluster_backend *be, struct cluster_log *log,
                                      const struct conf_cluster *cc, struct buf *err);
/* Stops the watch (before the backend's connection closes). */
void cluster_view_free(struct cluster_view *v);

/*
 * The view as JSON (any thread; the caller owns it):
 * {"name","node","partitions","lease",
 *  "nodes":[{"name","alive","self","lastSeen","partitions":[P, ...]}, ...],
 *  "owners":["NODE" or null, ...]}
 * A node is alive while it wrote its membership within the lease; a
 * partition's owner is the node whose lease on it was renewed within the
 * lease (null: free, or its owner stopped renewing it).  lastSeen: seconds
 * since the node's last membership write.
 */
json_t *cluster_view_json(struct cluster_view *v);

#endif
