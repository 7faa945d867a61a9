/*
 * server_int: what server.c (the running server and its per-message path)
 * and staging.c (start and reload: preparing a configuration, committing
 * it) share, and nothing else includes: the server's state, and the
 * callbacks of server.c that a committed stage wires into the engine, the
 * alert store and the absence watcher.
 */
#ifndef CORRAL_SERVER_INT_H
#define CORRAL_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "agent/core/server.h"
#include "agent/core/heap.h"
#include "agent/input/input.h"
#include "engine/alertlabels.h"
#include "engine/buf.h"
#include "engine/corr.h"
#include "engine/msg.h"
#include "engine/pdb.h"

struct pending_reload; /* staging.c */

struct server {
    uv_loop_t *loop;
    struct conf *conf;
    struct pdb *db;
    struct corr *corr;            /* one engine on the loop thread (<engine workers="1"/>), or */
    struct workers *workers;      /* shards on worker threads (workers.c); one of the two is NULL */
    struct cluster_node *cluster; /* <cluster>: neither of the two; partitions (cluster_node.c) */
    struct cluster_silences *clsil; /* <cluster>: the silences' store, the cluster's bucket */
    struct cluster_delivery *cldel; /* <cluster>: routed alerts through the work queue */
    struct cluster_alerts *clal;    /* <cluster>: the alert store's replica in the bucket */
    struct cluster_view *clview;    /* <cluster>: the nodes and the partitions' owners */
    struct buf cluster_err;
    struct absence *absence;
    struct input **inputs;
    size_t ninputs;
    struct input_sink sink; /* what the inputs deliver to: server_submit */
    struct output **outputs;
    size_t noutputs;
    struct execq *ex; /* the executors' queues, here or in the executor process (execq.h) */
    struct route_table *routes;
    struct alerts *alerts;              /* the active alert store */
    struct silences *silences;          /* created at start, kept across reloads */
    size_t *targets;                    /* per alert: the executors its routes chose */
    struct alert_target *alert_targets; /* the same, for the store */
    size_t ntargets;
    size_t silences_active; /* at the last tick: a change calls for alerts_remute */
    tag_id tag_alert;       /* corral.alert */
    uint64_t labels_fixed[ALERTLABELS_NFLAGS]; /* alerts whose labels were missing or made right */
    struct buf scratch;
    struct buf alert_id;
    struct msg *msg; /* reused for every incoming message */
    uv_timer_t tick, save;
    bool timers_started;
    unsigned ticks;
    struct heap_stats heap; /* heap.h: freed memory given back after a flood */
    uint64_t received, parsed, truncated_values, reloads, reload_failures;
    /* the outcome of the last reload (the start counts as one) and when one last succeeded */
    bool last_reload_ok;
    uint64_t last_reload_ok_ms; /* wall clock */
    struct snapshot *snap;
    bool final_save_failed; /* the save at shutdown failed: the state is lost */
    /* loop stall: work time of the longest loop iteration (check to check, less idle time) */
    uv_check_t stall_check;
    uint64_t stall_last_ns, stall_last_idle_ns, stall_max_ns;
    uint64_t started_ms;
    /* back-pressure */
    bool keeping;          /* the message being handled comes from a stream input */
    bool refreshing;       /* server_inject_alert: an alert that fires already, recorded only */
    bool paused;           /* stream inputs are paused */
    bool held;             /* UDP inputs held: the workers' queue is full (input_hold) */
    uv_check_t hold_check; /* while the queue is full: after every loop iteration */
    bool hold_init;
    uv_check_t resume_check; /* while paused: after every loop iteration, can they go on? */
    bool check_init;
    uint64_t paused_at, paused_ms, pauses, pause_log_ms, engine_pause_log_ms, engine_pauses;
    struct server_endpoint_stats endpoints[SERVER_EP_N];
    struct dnscache *dns; /* $(dns-resolve-ip)'s cache, for its counters; may be NULL */
    /* privilege separation: a reload waiting for the executor process to reload its executors */
    struct pending_reload *pending;
    uint64_t reload_gen;
    /* shutdown */
    void (*done)(void *);
    void *done_arg;
    size_t closing;
};

/* server.c's callbacks, for staging.c. */
void server_on_emit(void *arg, struct msg *m, enum corr_emit_kind kind,
                    const struct pdb_action *action);
void server_on_worker_emit(void *arg, struct msg *m, enum corr_emit_kind kind,
                           const struct pdb_action *action, bool keep);
void server_on_absence(void *arg, struct msg *m);
void server_on_corr_log(void *arg, const char *text);
void server_on_alert_notify(void *arg, const char *executor, const struct msg *m);
/* The tick, save and stall timers: created at the first commit, set anew by every one. */
void server_start_timers(struct server *s);
/* Stops what runs of <cluster>, last to first (the partitions given back last), and forgets it. */
void server_stop_cluster(struct server *s);

#endif
