/*
 * server: corrald's state and its per-message path.
 *
 *   input --server_submit--> syslogfmt_parse --> corr_process --emit--+--> outputs
 *                                                                  +--> routes --> executors
 *                                                                  \--> absence tracking
 *
 * On the way to the executors, a message that routes select (an alert) is
 * recorded in the alert store (alerts.c); when a silence (silences.c) or an
 * <inhibit> rule mutes it, it is recorded as such and sent to none of them.
 *
 * Everything runs on one libuv loop.  A message is parsed into one reused
 * struct msg, so the steady-state path allocates nothing of its own.  With
 * <engine workers="N"/> above 1, parsing, classification and correlation
 * run on N threads instead (workers.c): server_submit queues the raw
 * message, and the workers hand back, in the same order, what corr_process
 * would have emitted (on_worker_emit); everything from the emit on stays on
 * the loop.  What reads the engine's state (metrics, contexts, save,
 * reload) goes through engines(), which first lets the workers finish.  A
 * one-second timer moves correlation time on while the inputs are idle, and
 * another saves the correlation state periodically, in a forked child
 * (snapshot.c) so that the loop never stops for it; a check handle measures
 * how long the loop works between two waits (the stall gauge).  Start and
 * reload are one path: prepare everything that can fail, then commit
 * (struct stage).
 *
 * Back-pressure: when an output's or an executor's queue is full after a
 * message from a stream input (TCP, unix-stream, file, stdin), every stream
 * input stops reading (input_pause) until all queues are down to their low
 * mark (half); the senders wait in their socket buffers, nothing is lost.
 * The messages of the read being handled when the queue filled are still
 * taken (output_write_keep, queue_submit_keep: beyond the queue's size, by
 * at most one read's worth).  Datagram inputs cannot wait: what their
 * messages find full is dropped and counted by the output or executor.
 *
 * Under privilege separation (doc/privsep.md) the executors' queues are the
 * executor process's: server_set_proxy puts an ipcproxy behind them, and
 * the executor_* helpers submit, read pressure and stats through it.  A
 * reload that changes the executors then waits, its stage prepared, until
 * the executor process has reloaded them (ipcproxy_reload), and commits or
 * discards it on its answer.  The reuse and handover rules for executors
 * are queueset.h's, shared with the executor process.
 */
#include "agent/server.h"
#include "agent/alerts.h"
#include "agent/cluster_node.h"
#include "agent/cluster_silences.h"
#include "agent/apiv2.h"
#include "engine/alertlabels.h"
#include "engine/clock.h"
#include "engine/nv.h"
#include "engine/corr.h"
#include "agent/dnscache.h"
#include "agent/heap.h"
#include "engine/durable.h"
#include "agent/input.h"
#include "agent/metrics.h"
#include "actions/jsonval.h"
#include "engine/log.h"
#include "agent/output.h"
#include "agent/procstat.h"
#include "engine/pdb.h"
#include "engine/sigma.h"
#include "engine/received.h"
#include "engine/rematch.h"
#include "actions/queue.h"
#include "actions/queueset.h"
#include "actions/ipcproxy.h"
#include "agent/route.h"
#include "agent/absence.h"
#include "agent/silences.h"
#include "agent/snapshot.h"
#include "agent/workers.h"
#include "engine/alertlabels.h"
#include "engine/par.h"
#include "engine/durable.h"
#include "engine/syslogfmt.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/uri.h>

struct server {
    uv_loop_t *loop;
    struct conf *conf;
    struct pdb *db;
    struct corr *corr;            /* one engine on the loop thread (<engine workers="1"/>), or */
    struct workers *workers;      /* shards on worker threads (workers.c); one of the two is NULL */
    struct cluster_node *cluster; /* <cluster>: neither of the two; partitions (cluster_node.c) */
    struct cluster_silences *clsil; /* <cluster>: the silences' store, the cluster's bucket */
    struct buf cluster_err;
    struct absence *absence;
    struct input **inputs;
    size_t ninputs;
    struct output **outputs;
    size_t noutputs;
    struct queue **queues; /* one per executor, in configuration order (NULLs under privsep) */
    const char **qnames;
    size_t nqueues;
    /* privilege separation: the executor process's queues, by index (doc/privsep.md) */
    struct ipcproxy *proxy;
    size_t *remote; /* per executor: its index in proxy */
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

struct server *
server_new(uv_loop_t *loop)
{
    struct server *s = xcalloc(1, sizeof(*s));

    s->tag_alert = tag_intern("corral.alert", 12);
    s->loop = loop;
    s->msg = msg_new();
    s->started_ms = clock_mono_ms();
    s->last_reload_ok = true;
    s->last_reload_ok_ms = clock_mono_to_wall(s->started_ms);
    /* for the stall gauge: before the loop first runs, as libuv requires */
    uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
    return s;
}

static void
free_outputs(struct output **outs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) output_close(outs[i], NULL, NULL);
    free(outs);
}

void
server_free(struct server *s)
{
    if (!s) return;
    snapshot_free(s->snap);
    corr_free(s->corr);
    if (s->workers) workers_free(s->workers);
    cluster_silences_free(s->clsil);
    cluster_node_free(s->cluster);
    buf_free(&s->cluster_err);
    absence_free(s->absence);
    pdb_free(s->db);
    conf_free(s->conf);
    msg_unref(s->msg);
    free(s->inputs);
    free(s->outputs);
    free(s->queues);
    free(s->qnames);
    free(s->remote);
    route_free(s->routes);
    alerts_free(s->alerts);
    silences_free(s->silences);
    free(s->targets);
    free(s->alert_targets);
    buf_free(&s->alert_id);
    buf_free(&s->scratch);
    free(s);
}

const struct conf *
server_conf(const struct server *s)
{
    return s->conf;
}

/* ---- message flow ---- */

static void
to_outputs(struct server *s, struct msg *m)
{
    size_t i;

    for (i = 0; i < s->noutputs; i++) {
        if (s->keeping)
            output_write_keep(s->outputs[i], m);
        else
            output_write(s->outputs[i], m);
    }
}

static void
add_target(size_t index, void *arg)
{
    struct server *s = arg;

    s->targets[s->ntargets++] = index;
}

/*
 * Silences and inhibitions first: a muted alert is recorded, counted and
 * sent nowhere.  True when the alert may go to its executors (s->targets).
 */
static bool
record_alert(struct server *s, const struct msg *m, bool routed)
{
    uint64_t now = clock_wall_ms();
    const char *by = NULL;
    enum alert_state muted = ALERT_FIRING;
    const char *id;
    size_t i;

    alerts_id(s->alerts, m, &s->alert_id);
    id = buf_str(&s->alert_id);
    /*
     * Not routed: an <inhibit> source (it must be known to inhibit), or the
     * clear of an alert the store holds (so that it stops inhibiting).
     */
    if (!routed && !alerts_is_inhibit_source(s->alerts, m) && !alerts_known(s->alerts, id))
        return true;
    if (s->silences && (by = silences_match(s->silences, m, now)))
        muted = ALERT_SILENCED;
    else if ((by = alerts_inhibited_by(s->alerts, m, id)))
        muted = ALERT_INHIBITED;
    for (i = 0; i < s->ntargets; i++) {
        s->alert_targets[i].name = s->qnames[s->targets[i]];
        s->alert_targets[i].send_resolved = route_sends_resolved(s->routes, s->targets[i]);
    }
    alerts_record(s->alerts, id, m, muted, by, s->alert_targets, s->ntargets, now);
    /* an inhibition source fired or resolved: what fires now may be held back or released */
    if (alerts_sources_changed(s->alerts)) alerts_reinhibit(s->alerts, now);
    return muted == ALERT_FIRING;
}

/*
 * Executor i's queue: here, or in the executor process (privsep) behind the
 * proxy.  keep: past queue= (within the queue's hard bounds), for what the
 * sender can be paused for (a stream input) and for what no input can be
 * paused for, since it comes all at once with nobody to slow down: the
 * alerts of context timeouts and absence reports, fired by the clock, and
 * the store's resolutions and unmuted alerts.
 */
static void
executor_submit(struct server *s, size_t i, const struct msg *m, bool keep)
{
    if (s->proxy)
        ipcproxy_submit(s->proxy, s->remote[i], m, keep);
    else if (keep)
        queue_submit_keep(s->queues[i], m);
    else
        queue_submit(s->queues[i], m);
}

static bool
executor_full(const struct server *s, size_t i)
{
    return s->proxy ? ipcproxy_full(s->proxy, s->remote[i]) : queue_full(s->queues[i]);
}

static bool
executor_low(const struct server *s, size_t i)
{
    return s->proxy ? ipcproxy_low(s->proxy, s->remote[i]) : queue_low(s->queues[i]);
}

static const struct queue_stats *
executor_stats(const struct server *s, size_t i)
{
    return s->proxy ? ipcproxy_queue_stats(s->proxy, s->remote[i]) : queue_get_stats(s->queues[i]);
}

/*
 * Alert m's page on the status page as users reach it (<stats
 * external-url>) as its value corral.url, for mails and scripts:
 * external-url + "/alert?id=" + the percent-encoded alert id.
 */
static void
add_alert_url(struct server *s, struct msg *m)
{
    static nv_handle h_url;
    xmlChar *id;

    if (!s->conf->stats_external_url || !s->alerts) return;
    if (!h_url) h_url = nv_intern_str("corral.url");
    alerts_id(s->alerts, m, &s->alert_id);
    if (!(id = xmlURIEscapeStr((const xmlChar *)buf_str(&s->alert_id), NULL))) return;
    buf_reset(&s->alert_id);
    buf_printf(&s->alert_id, "%s/alert?id=%s", s->conf->stats_external_url, (const char *)id);
    xmlFree(id);
    msg_set(m, h_url, s->alert_id.p, s->alert_id.len);
}

static void
to_executors(struct server *s, const struct msg *m, const struct pdb_action *action)
{
    struct msg *alert;
    const struct msg *am = m;
    size_t i;
    bool keep;

    if (!s->routes) return;
    /* executors learn the generating rule's id, class and program (rare: generated only) */
    alert = pdb_action_alert(action, m);
    if (alert) am = alert;
    /*
     * An alert's labels made right (engine/alertlabels.h) before it is
     * routed and recorded: on a copy, since m is the outputs' too.
     */
    if ((msg_flags(am) & MSG_F_GENERATED) &&
        (msg_tag_has(am, s->tag_alert) || alerts_is_clear(am))) {
        unsigned found, b;
        if (!alert) am = alert = msg_clone(m);
        found = alertlabels_check_msg(alert, &s->scratch);
        add_alert_url(s, alert);
        for (b = 0; b < ALERTLABELS_NFLAGS; b++)
            if (found & (1u << b)) s->labels_fixed[b]++;
    }
    s->ntargets = 0;
    route_message(s->routes, am, action, add_target, s);
    if (s->ntargets) {
        if (!record_alert(s, am, true)) s->ntargets = 0;
    } else if ((msg_flags(am) & MSG_F_GENERATED) &&
               (alerts_is_inhibit_source(s->alerts, am) || alerts_is_clear(am))) {
        record_alert(s, am, false);
    }
    /* fired by the clock (a timeout action, an absence report): nobody to pause */
    keep = s->keeping || (action ? action->trigger == PDB_TRIGGER_TIMEOUT
                                 : (msg_flags(am) & MSG_F_GENERATED) != 0);
    for (i = 0; i < s->ntargets && !s->refreshing; i++) executor_submit(s, s->targets[i], am, keep);
    if (alert) msg_unref(alert);
}

/* The store hands an alert to an executor: a resolution, or the end of a silence or inhibition. */
static void
on_alert_notify(void *arg, const char *executor, const struct msg *m)
{
    struct server *s = arg;
    size_t i;

    for (i = 0; i < s->nqueues; i++)
        if (strcmp(s->qnames[i], executor) == 0) {
            executor_submit(s, i, m, true);
            return;
        }
    log_msg(LOG_WARNING, "alerts: executor '%s' is no longer configured: not told of %s", executor,
            buf_str(&s->alert_id));
}

/* What the executors did with an alert, for the store's per-executor states. */
static void
on_queue_event(void *arg, const char *executor, const struct msg *m, enum queue_event ev)
{
    struct server *s = arg;
    enum alert_delivery d = ALERT_QUEUED;

    switch (ev) {
    case QUEUE_EV_QUEUED: d = ALERT_QUEUED; break;
    case QUEUE_EV_DELIVERED: d = ALERT_DELIVERED; break;
    case QUEUE_EV_RETRYING: d = ALERT_RETRYING; break;
    case QUEUE_EV_DEAD: d = ALERT_DEAD; break;
    case QUEUE_EV_DROPPED: d = ALERT_DROPPED; break;
    }
    if (s->alerts) alerts_delivery(s->alerts, executor, m, d, clock_wall_ms());
}

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct server *s = arg;

    if (kind == CORR_INPUT && s->absence) absence_seen(s->absence, m, clock_mono_ms());
    to_outputs(s, m);
    to_executors(s, m, action);
}

static const char *full_queue(struct server *s);
static void pause_inputs(struct server *s, const char *which);
static void engine_stats(struct server *s, struct corr_stats *cs);

/* What the workers hand back, in order, on the loop thread. */
static void
on_worker_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action,
               bool keep)
{
    struct server *s = arg;
    const char *full;

    s->keeping = keep;
    on_emit(s, m, kind, action);
    s->keeping = false;
    if (keep && !s->paused && (full = full_queue(s))) pause_inputs(s, full);
}

static void
on_absence(void *arg, struct msg *m)
{
    /* the report carries its alert labels (absence.c) */
    to_outputs(arg, m);
    to_executors(arg, m, NULL);
}

void
server_inject_alert(struct server *s, struct msg *m)
{
    if (!s->alerts) return; /* not started */
    /*
     * Prometheus sends a firing alert again every resend delay (a minute)
     * until it resolves: again, an alert the store holds unresolved is
     * recorded (last seen, resolve time, muting) but not sent to the
     * executors, which were told when it began (Alertmanager repeats only
     * after its repeat_interval).
     */
    alerts_id(s->alerts, m, &s->alert_id);
    s->refreshing = !alerts_is_clear(m) && alerts_firing(s->alerts, buf_str(&s->alert_id));
    to_outputs(s, m);
    to_executors(s, m, NULL);
    s->refreshing = false;
}

uint64_t
server_started_ms(const struct server *s)
{
    return clock_mono_to_wall(s->started_ms);
}

static void
on_corr_log(void *arg, const char *text)
{
    (void)arg;
    log_msg(LOG_WARNING, "%s", text);
}

/* ---- back-pressure ---- */

/* The output or executor whose queue is full, NULL if none. */
static const char *
full_queue(struct server *s)
{
    size_t i;

    for (i = 0; i < s->noutputs; i++)
        if (output_full(s->outputs[i])) return output_name(s->outputs[i]);
    for (i = 0; i < s->nqueues; i++)
        if (executor_full(s, i)) return s->qnames[i];
    if (s->workers && workers_full(s->workers)) return "engine";
    if (s->cluster && cluster_node_full(s->cluster)) return "cluster";
    return NULL;
}

static bool
all_low(struct server *s)
{
    size_t i;

    for (i = 0; i < s->noutputs; i++)
        if (!output_low(s->outputs[i])) return false;
    for (i = 0; i < s->nqueues; i++)
        if (!executor_low(s, i)) return false;
    if (s->cluster && !cluster_node_low(s->cluster)) return false;
    return !s->workers || workers_low(s->workers);
}

static void
set_paused(struct server *s, bool pause)
{
    size_t i;

    for (i = 0; i < s->ninputs; i++) input_pause(s->inputs[i], pause);
}

/* UDP inputs wait in their socket buffers while the workers' queue is full (input_hold). */
static void
set_held(struct server *s, bool hold)
{
    size_t i;

    s->held = hold;
    for (i = 0; i < s->ninputs; i++) input_hold(s->inputs[i], hold);
}

/*
 * After the loop iteration in which a UDP message found the workers' queue
 * full (outside the inputs' read callbacks): hold the UDP inputs until it is
 * half empty.  Apart from the stream inputs' pause: a full output does not
 * hold datagrams (it drops them, as with one engine).
 */
static void
on_hold_check(uv_check_t *h)
{
    struct server *s = h->data;

    if (!s->held) {
        if (!s->workers || !workers_full(s->workers)) {
            uv_check_stop(&s->hold_check);
            return;
        }
        set_held(s, true);
        s->engine_pauses++;
        return;
    }
    if (s->workers && !workers_low(s->workers)) return;
    set_held(s, false);
    uv_check_stop(&s->hold_check);
}

static void
hold_inputs(struct server *s)
{
    if (!s->hold_init) {
        uv_check_init(s->loop, &s->hold_check);
        s->hold_check.data = s;
        s->hold_init = true;
    }
    uv_check_start(&s->hold_check, on_hold_check);
}

static void
on_resume_check(uv_check_t *h)
{
    struct server *s = h->data;

    if (!all_low(s)) return;
    s->paused = false;
    s->paused_ms += uv_now(s->loop) - s->paused_at;
    uv_check_stop(&s->resume_check);
    set_paused(s, false);
}

static void
pause_inputs(struct server *s, const char *which)
{
    uint64_t now = uv_now(s->loop);
    /* once a minute, the workers' queue apart from the outputs' and executors' */
    uint64_t *last = strcmp(which, "engine") == 0 ? &s->engine_pause_log_ms : &s->pause_log_ms;

    s->paused = true;
    /* counted apart: the workers' queue fills in the normal run of things when they are the
     * slowest stage, a full output or executor queue means that one is slow */
    if (last == &s->engine_pause_log_ms)
        s->engine_pauses++;
    else
        s->pauses++;
    s->paused_at = now;

    if (!*last || now - *last >= 60000) {
        *last = now ? now : 1;
        log_msg(LOG_INFO,
                "%s: queue full, stream inputs paused until it drains (back-pressure; "
                "%llu pauses so far)",
                which, (unsigned long long)s->pauses);
    }
    if (!s->check_init) {
        uv_check_init(s->loop, &s->resume_check);
        s->resume_check.data = s;
        s->check_init = true;
    }
    uv_check_start(&s->resume_check, on_resume_check);
    set_paused(s, true);
}

struct server_endpoint_stats *
server_endpoint_stats(struct server *s, enum server_endpoint ep)
{
    return &s->endpoints[ep];
}

void
server_submit(struct server *s, struct input *in, const char *data, size_t len, const char *peer)
{
    const char *full;
    struct received_from from;
    bool can_pause = in && input_can_pause(in); /* a stream input: back-pressure holds it */
    bool can_hold = in && input_can_hold(in);   /* UDP: the workers' queue holds it */

    s->received++;
    if (s->cluster) {
        /* parsed and classified for its partition, published; its owner correlates it */
        if (!cluster_node_submit(s->cluster, data, len, peer, in ? input_tls_peer(in) : NULL,
                                 can_pause))
            return; /* counted there */
        s->parsed++;
        if (can_pause && !s->paused && (full = full_queue(s))) pause_inputs(s, full);
        return;
    }
    if (s->workers) {
        /* parsed on a worker thread, as below */
        /* a held input's batched read still goes in whole (see input_hold) */
        if (!workers_submit(s->workers, data, len, peer, in ? input_tls_peer(in) : NULL, can_pause,
                            can_pause || can_hold))
            return; /* a datagram, the queue full: counted there */
        s->parsed++;
        if (can_pause && !s->paused && (full = full_queue(s))) pause_inputs(s, full);
        if (can_hold && !s->held && workers_full(s->workers)) hold_inputs(s);
        return;
    }
    syslogfmt_parse(s->msg, data, len, NULL);
    from.peer = peer;
    from.peerlen = peer ? strlen(peer) : 0;
    from.tls_peer = in ? input_tls_peer(in) : NULL;
    from.tls_peerlen = from.tls_peer ? strlen(from.tls_peer) : 0;
    from.hostname = output_local_hostname();
    received_normalise(s->msg, &from);
    s->parsed++;
    if (msg_flags(s->msg) & MSG_F_TRUNCATED) s->truncated_values++;
    s->keeping = can_pause;
    corr_process(s->corr, s->msg);
    s->keeping = false;
    if (can_pause && !s->paused && (full = full_queue(s))) pause_inputs(s, full);
}

/* ---- timers ---- */

static void
on_tick(uv_timer_t *t)
{
    struct server *s = t->data;

    if (s->cluster)
        cluster_node_tick(s->cluster);
    else if (s->workers)
        workers_tick(s->workers);
    else
        corr_tick(s->corr);
    if (s->absence) absence_tick(s->absence, clock_mono_ms());
    if (s->silences) silences_tick(s->silences, clock_wall_ms());
    if (s->alerts) {
        uint64_t now = clock_wall_ms();
        size_t active = s->silences ? silences_active(s->silences, now) : 0;
        /*
         * silences that began or ended by their times: everything again;
         * sources that resolved by their timeouts: the inhibitions only
         */
        alerts_tick(s->alerts, now);
        if (active != s->silences_active)
            alerts_remute(s->alerts, s->silences, now);
        else if (alerts_sources_changed(s->alerts))
            alerts_reinhibit(s->alerts, now);
        s->silences_active = active;
    }
    if (++s->ticks % HEAP_TRIM_EVERY_S == 0) heap_trim(HEAP_TRIM_MIN, &s->heap);
}

/* snapshot's write: in the saving child, or in-process at shutdown */
static int
write_state(void *arg)
{
    struct server *s = arg;
    struct buf path = BUF_INIT;
    int rc;

    if (s->workers) {
        const struct corr *all[64];
        unsigned k, n = workers_nshards(s->workers);
        for (k = 0; k < n; k++) all[k] = workers_shard(s->workers, k);
        rc = corr_save_many(all, n, s->conf->state_file);
    } else {
        rc = corr_save(s->corr, s->conf->state_file);
    }

    /* the alert store goes beside it, in the same save */
    if (rc == 0 && s->alerts) {
        buf_printf(&path, "%s.alerts", s->conf->state_file);
        rc = alerts_save(s->alerts, buf_str(&path));
        buf_free(&path);
    }
    return rc;
}

static void
save_failed(void *arg, long pid, const char *why)
{
    struct server *s = arg;
    struct buf tmp = BUF_INIT;

    if (pid > 0) {
        /* a child that died while writing leaves its temporary file */
        durable_tmp_path(&tmp, s->conf->state_file, pid);
        unlink(buf_str(&tmp));
        buf_free(&tmp);
    }
    if (why) log_msg(LOG_ERR, "cannot save state to %s: %s", s->conf->state_file, why);
}

static bool
saving(const struct server *s)
{
    return s->conf && s->conf->state_file && (s->corr || s->workers);
}

/* The child's image must hold no batch half processed: the workers stop between two. */
static void
before_fork(void *arg)
{
    struct server *s = arg;

    if (s->workers) workers_drain(s->workers);
}

static struct snapshot *
snapshot_of(struct server *s)
{
    if (!s->snap) {
        struct snapshot_ops ops = {write_state, save_failed, s, before_fork};
        s->snap = snapshot_new(s->loop, &ops);
    }
    return s->snap;
}

void
server_save_state(struct server *s, void (*done)(void *arg, int rc), void *arg)
{
    if (!saving(s)) {
        if (done) done(arg, 0);
        return;
    }
    snapshot_request(snapshot_of(s), done, arg);
}

static void
on_save(uv_timer_t *t)
{
    server_save_state(t->data, NULL, NULL);
}

static void
on_stall_check(uv_check_t *c)
{
    struct server *s = c->data;
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(s->loop);

    if (s->stall_last_ns && now - s->stall_last_ns > idle - s->stall_last_idle_ns) {
        uint64_t busy = (now - s->stall_last_ns) - (idle - s->stall_last_idle_ns);
        if (busy > s->stall_max_ns) s->stall_max_ns = busy;
    }
    s->stall_last_ns = now;
    s->stall_last_idle_ns = idle;
}

static void
start_timers(struct server *s)
{
    uint64_t every;

    if (!s->timers_started) {
        uv_timer_init(s->loop, &s->tick);
        uv_timer_init(s->loop, &s->save);
        s->tick.data = s->save.data = s;
        uv_check_init(s->loop, &s->stall_check);
        s->stall_check.data = s;
        uv_check_start(&s->stall_check, on_stall_check);
        uv_unref((uv_handle_t *)&s->stall_check);
        s->timers_started = true;
    }
    uv_timer_start(&s->tick, on_tick, 1000, 1000);
    uv_timer_stop(&s->save);
    if (s->conf->state_file && s->conf->state_interval > 0) {
        every = (uint64_t)(s->conf->state_interval * 1000);
        uv_timer_start(&s->save, on_save, every, every);
    }
}

/* ---- start and reload: prepare, then commit ---- */

/*
 * A configuration made ready to run.  stage_prepare() does everything that
 * can fail, without touching the running server: it loads the rules, opens
 * the outputs (unless they are configured as before), the executors that
 * are new or changed, compiles the routes, and at start opens the inputs.
 * stage_commit() then swaps the stage in and cannot fail.  Start is both
 * steps into an empty server; a reload is the same, reusing the inputs,
 * executors and outputs of the running server that are configured alike,
 * and when prepare fails the running configuration stays as it was.
 *
 * Inputs too are opened by prepare, before the running ones close, so that
 * a reload whose new input cannot open (a port another process holds)
 * fails and keeps every running input.  The exception is an input that
 * wants what a running input it replaces holds: the same port (tried first:
 * it is deferred only when opening fails), the same socket path, or for a
 * file the same path or position file.  That one opens at commit, after the
 * running one closed; should it fail even then, the running one's
 * configuration is opened again and the reload reports failure.  (An input
 * configured with port 0 holds a port its configuration does not name: a
 * reload that names that port for another input fails.)
 */
struct stage {
    struct conf *conf;
    struct pdb *db;
    bool new_outputs; /* false: the running outputs are configured alike and stay */
    struct output **outputs;
    size_t noutputs;
    struct queueset_stage qs; /* per executor: reused from the running server, or opened */
    size_t *remote;           /* privsep: per executor, its index in the proxy */
    bool remote_wait; /* privsep: the executors changed; the executor process reloads first */
    const char **qnames;
    struct route_table *routes;
    struct alerts *alerts; /* empty: the running one's entries move in at commit */
    struct input **inputs; /* per input: reused, opened by prepare, or NULL: opened at commit */
    bool *input_opened; /* per input: opened by prepare (closed again if the stage is discarded) */
    bool *input_taken;  /* per running input: reused by the stage */
    size_t *input_replaces; /* per input opened at commit: the running input it replaces */
};

/* What a reload reports of the rules.  A fingerprint of what a rule does tells changed rules
 * from unchanged ones. */
static void
rule_fingerprint(const struct pdb_rule *r, struct buf *out)
{
    size_t i;

    buf_reset(out);
    buf_printf(out, "%s|%s|%d|%g|%s|", r->class ? r->class : "",
               r->context_id ? template_source(r->context_id) : "", (int)r->scope, r->timeout,
               r->file);
    for (i = 0; i < r->npatterns; i++) buf_printf(out, "p:%s|", r->patterns[i]);
    for (i = 0; i < r->nalso; i++) buf_printf(out, "also:%s|", r->also_ids[i]);
    for (i = 0; i < r->msg.nvalues; i++)
        buf_printf(out, "v:%s=%s|", nv_name(r->msg.values[i].name, NULL),
                   template_source(r->msg.values[i].tpl));
    for (i = 0; i < r->msg.ntags; i++) buf_printf(out, "t:%s|", tag_name(r->msg.tags[i], NULL));
    for (i = 0; i < r->nactions; i++) {
        size_t k;
        const struct pdb_action *a = &r->actions[i];
        buf_printf(out, "a:%d:%d:%s:%u/%u:%d|", (int)a->trigger, (int)a->kind,
                   a->condition_src ? a->condition_src : "", a->rate_n, a->rate_s,
                   (int)a->message.inherit);
        for (k = 0; k < a->message.nvalues; k++)
            buf_printf(out, "%s=%s|", nv_name(a->message.values[k].name, NULL),
                       template_source(a->message.values[k].tpl));
    }
}

static void
describe_changes(const struct pdb *old, const struct pdb *neu, struct buf *report)
{
    size_t i, added = 0, removed = 0, changed = 0;
    struct buf a = BUF_INIT, b = BUF_INIT;

    for (i = 0; i < pdb_nrules(neu); i++) {
        const struct pdb_rule *r = pdb_rule_at(neu, i), *o = pdb_rule_by_id(old, r->id);
        if (!o) {
            added++;
            if (added <= 20) buf_printf(report, "rule added: %s\n", r->id);
            continue;
        }
        rule_fingerprint(r, &a);
        rule_fingerprint(o, &b);
        if (strcmp(buf_str(&a), buf_str(&b)) != 0) {
            changed++;
            if (changed <= 20) buf_printf(report, "rule changed: %s\n", r->id);
        }
    }
    for (i = 0; i < pdb_nrules(old); i++) {
        const struct pdb_rule *r = pdb_rule_at(old, i);
        if (!pdb_rule_by_id(neu, r->id)) {
            removed++;
            if (removed <= 20) buf_printf(report, "rule removed: %s\n", r->id);
        }
    }
    buf_printf(report, "rules: %zu added, %zu removed, %zu changed, %zu in all\n", added, removed,
               changed, pdb_nrules(neu));
    buf_free(&a);
    buf_free(&b);
}

static size_t
nsigma(const struct pdb *db)
{
    return pdb_sigma(db) ? sigma_nrules(pdb_sigma(db)) : 0;
}

/*
 * The <sigma> rules of c into db: a mapping file or a rules path that
 * cannot be read is an error; a refused rule is a warning (the others load).
 */
static bool
load_sigma(const struct conf *c, struct pdb *db, struct buf *err)
{
    struct sigma *sg;
    size_t i, j, from;

    if (!c->nsigma) return true;
    sg = sigma_new();
    for (i = 0; i < c->nsigma; i++) {
        const char *map = c->sigma[i].mapping ? c->sigma[i].mapping : CORRAL_SIGMA_MAPPING;
        from = sigma_ndiags(sg);
        /* each <sigma> reads its rules with its own mapping: a fresh set per element */
        if (i > 0) {
            buf_printf(err, "%s:%d: only one <sigma> element is supported\n",
                       c->file ? c->file : "-", c->sigma[i].line);
            sigma_free(sg);
            return false;
        }
        sigma_load_mapping(sg, map);
        if (!sigma_nerrors(sg)) sigma_load(sg, c->sigma[i].rules);
        for (j = from; j < sigma_ndiags(sg); j++) {
            const struct sigma_diag *d = sigma_diag_at(sg, j);
            if (d->level == SIGMA_ERROR)
                buf_printf(err, "%s:%d: %s\n", d->file, d->line, d->text);
            else
                log_msg(LOG_WARNING, "%s:%d: %s", d->file, d->line, d->text);
        }
    }
    if (sigma_nerrors(sg)) {
        sigma_free(sg);
        return false;
    }
    log_msg(LOG_INFO, "sigma: %zu rules loaded, %zu refused", sigma_nrules(sg), sigma_nrefused(sg));
    if (sigma_ncorrelations(sg))
        log_msg(LOG_INFO, "sigma: %zu correlation rules loaded", sigma_ncorrelations(sg));
    pdb_set_sigma(db, sg);
    return true;
}

static struct pdb *
load_rules(const struct conf *c, struct buf *err)
{
    struct pdb *db = pdb_new();
    bool *empty = xcalloc(c->nrules + 1, sizeof(*empty));
    size_t i, before;

    if (!load_sigma(c, db, err)) {
        free(empty);
        pdb_free(db);
        return NULL;
    }
    for (i = 0; i < c->nrules; i++) {
        if (!conf_rules_readable(c, i, err)) {
            free(empty);
            pdb_free(db);
            return NULL;
        }
        before = pdb_nrules(db);
        pdb_load(db, c->rules[i]);
        empty[i] = pdb_nrules(db) == before;
    }
    /* a path without a rule: a typo, or rules not installed; corrald with none matches nothing */
    for (i = 0; i < c->nrules && !pdb_nerrors(db); i++) {
        if (!empty[i]) continue;
        if (pdb_nrules(db) == 0 && !nsigma(db)) {
            if (c->file && c->rules_line[i]) buf_printf(err, "%s:%d: ", c->file, c->rules_line[i]);
            buf_printf(err, "rules path %s: no rules in it (no *.xml or *.pdb file with a rule)\n",
                       c->rules[i]);
        } else if (c->file && c->rules_line[i]) {
            log_msg(LOG_WARNING, "%s:%d: rules path %s: no rules in it", c->file, c->rules_line[i],
                    c->rules[i]);
        } else {
            log_msg(LOG_WARNING, "rules path %s: no rules in it", c->rules[i]);
        }
    }
    free(empty);
    if (pdb_nrules(db) == 0 && !nsigma(db) && !pdb_nerrors(db)) {
        if (!c->nrules) buf_puts(err, "no rules: the configuration names no <rules path>\n");
        pdb_free(db);
        return NULL;
    }
    for (i = 0; i < pdb_ndiags(db); i++) {
        const struct pdb_diag *d = pdb_diag_at(db, i);
        if (d->level == PDB_ERROR) {
            buf_printf(err, "%s:%d: %s\n", d->file, d->line, d->text);
        } else {
            log_msg(LOG_WARNING, "%s:%d: %s", d->file, d->line, d->text);
        }
    }
    if (pdb_nerrors(db)) {
        pdb_free(db);
        return NULL;
    }
    alertlabels_warn_pdb(db); /* alerts without their labels: warned, as `corral test` fails them */
    return db;
}

/* Outputs are reopened all together when any of them changed. */
static bool
outputs_alike(const struct conf *a, const struct conf *b)
{
    size_t i;

    if (a->noutputs != b->noutputs) return false;
    for (i = 0; i < a->noutputs; i++)
        if (!conf_output_equal(&a->outputs[i], &b->outputs[i])) return false;
    return true;
}

static int
prepare_outputs(struct server *s, struct stage *st, struct buf *err)
{
    const struct conf *c = st->conf;
    size_t i;

    if (s->conf && outputs_alike(s->conf, c)) {
        /* kept, but a TLS output's certificate and key are read again */
        for (i = 0; i < s->noutputs; i++)
            if (output_reload_prepare(s->outputs[i], &c->outputs[i], c->file, err) < 0) return -1;
        return 0;
    }
    st->new_outputs = true;
    st->outputs = xcalloc(c->noutputs + 1, sizeof(*st->outputs));
    for (i = 0; i < c->noutputs; i++) {
        struct output *o;
        /* the same words, with file:line, as `corrald -t` says */
        if (output_check(&c->outputs[i], c->file, err) < 0) return -1;
        o = output_open(s->loop, &c->outputs[i], err);
        if (!o) return -1;
        st->outputs[st->noutputs++] = o;
    }
    return 0;
}

/* Where executor spools live: configured, or beside the state file, or nowhere (memory only). */
char *
server_spool_dir(const struct conf *c)
{
    struct buf b = BUF_INIT;
    const char *slash;
    char *out;

    if (c->spool_dir) return xstrdup(c->spool_dir);
    if (!c->state_file) return NULL;
    slash = strrchr(c->state_file, '/');
    if (slash)
        buf_printf(&b, "%.*s/spool", (int)(slash - c->state_file), c->state_file);
    else
        buf_puts(&b, "spool");
    out = xstrdup(buf_str(&b));
    buf_free(&b);
    return out;
}

/*
 * Privilege separation: the executors are the executor process's, each
 * found by name in the list it published.  When they are configured as
 * the running ones, that list is still right: mapped now.  Otherwise the
 * executor process reloads them itself first (server_reload sends L, and
 * the mapping is made from its answer, map_remote).
 */
static int
prepare_remote(struct server *s, struct stage *st, struct buf *err)
{
    const struct conf *c = st->conf;
    const char *file = c->file ? c->file : "(built-in)";
    size_t i;
    int idx;

    st->qs.queues = xcalloc(c->nexecutors + 1, sizeof(*st->qs.queues)); /* theirs: NULL here */
    if (s->conf &&
        !queueset_same(s->conf->executors, s->conf->nexecutors, c->executors, c->nexecutors)) {
        st->remote_wait = true;
        return 0;
    }
    st->remote = xcalloc(c->nexecutors + 1, sizeof(*st->remote));
    for (i = 0; i < c->nexecutors; i++) {
        idx = ipcproxy_find(s->proxy, c->executors[i].name);
        if (idx >= 0) {
            st->remote[i] = (size_t)idx;
        } else if (s->conf) {
            st->remote_wait = true; /* not the list it has: it reads the file again */
        } else {
            buf_printf(err, "%s:%d: executor %s: not opened by the executor process\n", file,
                       c->executors[i].line, c->executors[i].name);
            return -1;
        }
    }
    return 0;
}

/*
 * Privilege separation, once the executor process has reloaded: each
 * executor's index in its new list, by name.  One it does not have (the
 * file changed between the two reads) gets none: its alerts are refused
 * (counted in corral_privsep_refused_total) until the next reload.
 */
static void
map_remote(struct server *s, const char *const *names, size_t n, size_t *remote, struct buf *report)
{
    size_t i;
    int idx;

    for (i = 0; i < n; i++) {
        idx = ipcproxy_find(s->proxy, names[i]);
        remote[i] = idx >= 0 ? (size_t)idx : ipcproxy_count(s->proxy);
        if (idx < 0 && report)
            buf_printf(report,
                       "executor %s: not among the executor process's (the file changed while "
                       "reloading?): its alerts are refused until the next reload\n",
                       names[i]);
    }
}

/* The executors, each reused from the running server when configured alike, and the routes. */
static int
prepare_executors(struct server *s, struct stage *st, struct buf *err)
{
    const struct conf *c = st->conf;
    char *dir;
    size_t i;
    int rc;

    st->qnames = xcalloc(c->nexecutors + 1, sizeof(*st->qnames));
    for (i = 0; i < c->nexecutors; i++) st->qnames[i] = c->executors[i].name;
    if (s->proxy) {
        rc = prepare_remote(s, st, err);
    } else {
        dir = server_spool_dir(c);
        rc = queueset_prepare(&st->qs, s->loop, s->queues, s->conf ? s->conf->executors : NULL,
                              s->nqueues, c->executors, c->nexecutors,
                              c->file ? c->file : "(built-in)", dir, err);
        free(dir);
    }
    if (rc < 0) return -1;
    st->routes = route_new(c, st->qnames, c->nexecutors, err);
    if (!st->routes) return -1;
    /* a rule routing to an executor that is not there would lose its alerts */
    return route_check_actions(st->routes, st->db, err);
}

/* The port of "host:port" (NULL: none). */
static const char *
listen_port(const char *listen)
{
    const char *colon = listen ? strrchr(listen, ':') : NULL;

    return colon ? colon + 1 : NULL;
}

/*
 * True when running input `old` holds what the new input ci wants: the same
 * port of the same kind of socket (failed: whether open failed), the same
 * socket path, or for a file the same path or position file.
 */
static bool
input_conflicts(const struct conf_input *old, const struct conf_input *ci, bool failed)
{
    const char *a, *b;

    if (old->type != ci->type) return false;
    switch (ci->type) {
    case CONF_IN_UDP:
    case CONF_IN_TCP:
    case CONF_IN_TLS:
        a = listen_port(old->listen);
        b = listen_port(ci->listen);
        return failed && a && b && strcmp(a, "0") != 0 && strcmp(a, b) == 0;
    case CONF_IN_UNIX_DGRAM:
    case CONF_IN_UNIX_STREAM: return old->path && ci->path && strcmp(old->path, ci->path) == 0;
    case CONF_IN_FILE:
        return (old->path && ci->path && strcmp(old->path, ci->path) == 0) ||
               (old->position_file && ci->position_file &&
                strcmp(old->position_file, ci->position_file) == 0);
    case CONF_IN_STDIN: return true; /* there is one stdin */
    case CONF_IN_SNMP_TRAP:
        return failed && old->listen && ci->listen && strcmp(old->listen, ci->listen) == 0;
    }
    return false;
}

/* The running input not reused that conflicts with ci, or SIZE_MAX. */
static size_t
replaced_input(struct server *s, struct stage *st, const struct conf_input *ci, bool failed)
{
    size_t j;

    for (j = 0; j < s->ninputs; j++)
        if (!st->input_taken[j] && input_conflicts(input_conf(s->inputs[j]), ci, failed)) return j;
    return SIZE_MAX;
}

/*
 * The running inputs configured alike are reused; the others are opened
 * now, while the running ones still run (see struct stage for the few
 * opened at commit).  Any that cannot open fails the stage.
 */
static int
prepare_inputs(struct server *s, struct stage *st, struct buf *err)
{
    const struct conf *c = st->conf;
    size_t i, j, mark;

    st->inputs = xcalloc(c->ninputs + 1, sizeof(*st->inputs));
    st->input_opened = xcalloc(c->ninputs + 1, sizeof(*st->input_opened));
    st->input_replaces = xcalloc(c->ninputs + 1, sizeof(*st->input_replaces));
    st->input_taken = xcalloc(s->ninputs + 1, sizeof(*st->input_taken));
    for (i = 0; i < c->ninputs; i++) {
        st->input_replaces[i] = SIZE_MAX;
        for (j = 0; j < s->ninputs; j++)
            if (!st->input_taken[j] && conf_input_equal(input_conf(s->inputs[j]), &c->inputs[i])) {
                /* kept, but its certificate and key are read again (TLS) */
                if (input_reload_prepare(s->inputs[j], &c->inputs[i], c, err) < 0) return -1;
                st->inputs[i] = s->inputs[j];
                st->input_taken[j] = true;
                break;
            }
    }
    for (i = 0; i < c->ninputs; i++) {
        if (st->inputs[i]) continue;
        if (s->conf) {
            /* what a running input holds cannot be had until it closes: at commit */
            j = replaced_input(s, st, &c->inputs[i], false);
            if (j != SIZE_MAX) {
                /* what could not be opened then anyway fails the reload now */
                if (input_check(&c->inputs[i], c, err) < 0) return -1;
                st->input_replaces[i] = j;
                st->input_taken[j] = true; /* closed at commit, replaced by this one */
                continue;
            }
        }
        mark = err->len;
        st->inputs[i] = input_open(s, s->loop, &c->inputs[i], c, err);
        if (st->inputs[i]) {
            st->input_opened[i] = true;
            continue;
        }
        if (s->conf && (j = replaced_input(s, st, &c->inputs[i], true)) != SIZE_MAX) {
            /* its port is probably ours: try again once the running input has closed */
            buf_truncate(err, mark);
            st->input_replaces[i] = j;
            st->input_taken[j] = true;
            continue;
        }
        if (err->len > mark && err->p[err->len - 1] != '\n') buf_putc(err, '\n');
        return -1;
    }
    return 0;
}

static void
queue_checked(void *arg)
{
    (*(size_t *)arg)++;
}

static int state_path_check(const struct conf *conf, struct buf *err);

int
server_check_files(const struct conf *c, struct buf *err)
{
    size_t i;
    int rc = 0;

    if (state_path_check(c, err) < 0) rc = -1;
    for (i = 0; i < c->noutputs; i++)
        if (output_check(&c->outputs[i], c->file, err) < 0) rc = -1;
    return rc;
}

static int
check(const struct conf *c, size_t *nrules, bool files, bool executors, struct buf *err)
{
    const char *file = c->file ? c->file : "(built-in)";
    struct pdb *db = load_rules(c, err);
    struct route_table *routes = NULL;
    const char **names = xcalloc(c->nexecutors + 1, sizeof(*names));
    uv_loop_t loop;
    size_t i, closed = 0, opened = 0;
    int rc = db ? 0 : -1;

    if (db && nrules) *nrules = pdb_nrules(db);
    if (files && server_check_files(c, err) < 0) rc = -1;
    /*
     * The executors are opened as start-up opens them (each kind reads and
     * checks its attributes, secrets and files), on a loop of their own that
     * never delivers, and without a spool, so nothing is written.
     */
    uv_loop_init(&loop);
    for (i = 0; i < c->nexecutors; i++) {
        struct queue *q;
        names[i] = c->executors[i].name;
        if (!executors) continue;
        q = queue_open(&loop, &c->executors[i], file, NULL, err);
        if (!q) {
            rc = -1;
            continue;
        }
        opened++;
        queue_close(q, queue_checked, &closed);
    }
    while (closed < opened && uv_run(&loop, UV_RUN_ONCE)) {
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* whatever the executors still had open */
    uv_loop_close(&loop);
    routes = route_new(c, names, c->nexecutors, err);
    if (!routes)
        rc = -1;
    else if (db && route_check_actions(routes, db, err) < 0)
        rc = -1;
    for (i = 0; i < c->ninputs; i++)
        if (input_check(&c->inputs[i], c, err) < 0) rc = -1;
    if (alerts_check_conf(c, err) < 0) rc = -1;
    route_free(routes);
    free(names);
    pdb_free(db);
    return rc;
}

int
server_check(const struct conf *c, size_t *nrules, bool files, struct buf *err)
{
    return check(c, nrules, files, true, err);
}

int
server_check_reload(const struct conf *c, bool executors, struct buf *err)
{
    return check(c, NULL, false, executors, err);
}

/* Undoes a stage that failed to prepare: closes what it opened, frees conf. */
static void
stage_discard(struct server *s, struct stage *st)
{
    size_t i;

    (void)s;
    queueset_discard(&st->qs); /* what it opened closes; the running queues are untouched */
    for (i = 0; st->inputs && i < st->conf->ninputs; i++)
        if (st->inputs[i] && st->input_opened[i]) input_close(st->inputs[i]);
    free_outputs(st->outputs, st->noutputs);
    route_free(st->routes);
    alerts_free(st->alerts);
    pdb_free(st->db);
    conf_free(st->conf);
    free(st->remote);
    free(st->qnames);
    free(st->inputs);
    free(st->input_opened);
    free(st->input_taken);
    free(st->input_replaces);
}

/* A state file is read back whole and replaced by a rename: a FIFO would hang us, a device be
 * replaced.  What is not there yet is fine: the first save creates it. */
static int
state_path_check(const struct conf *conf, struct buf *err)
{
    struct stat sb;

    if (conf->state_file && stat(conf->state_file, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        buf_printf(err, "%s: state file %s: not a regular file\n",
                   conf->file ? conf->file : "configuration", conf->state_file);
        return -1;
    }
    return 0;
}

/*
 * Everything that can fail, into st; conf is owned by st from here on.
 * Returns 0, or -1 with "file:line: message" lines in err and nothing changed.
 */
static int
stage_prepare(struct server *s, struct stage *st, struct conf *conf, struct buf *err)
{
    memset(st, 0, sizeof(*st));
    st->conf = conf;
    if (state_path_check(conf, err) < 0) {
        stage_discard(s, st); /* frees conf, which st owns */
        return -1;
    }
    st->db = load_rules(conf, err);
    st->alerts = alerts_new(conf, err);
    if (!st->db || !st->alerts || prepare_outputs(s, st, err) < 0 ||
        prepare_executors(s, st, err) < 0 || prepare_inputs(s, st, err) < 0) {
        stage_discard(s, st);
        return -1;
    }
    return 0;
}

/* Correlation time's clock: never stepped (clock.h). */
static uint64_t
steady_clock(void *arg)
{
    (void)arg;
    return clock_steady_ms();
}

/* Another node changed the silences: the alerts muted again. */
static void
on_cluster_silences(void *arg)
{
    struct server *s = arg;

    if (s->alerts) alerts_remute(s->alerts, s->silences, clock_wall_ms());
}

/* <cluster>: the silences read from the cluster's bucket, and kept there (server_start fails
 * without). */
static void
start_cluster_silences(struct server *s)
{
    struct cluster_log *log;
    const struct cluster_backend *be;

    if (!s->cluster) return;
    be = cluster_node_backend(s->cluster, &log);
    s->clsil = cluster_silences_new(s->loop, be, log, s->silences, on_cluster_silences, s,
                                    &s->cluster_err);
    if (!s->clsil) {
        cluster_node_free(s->cluster);
        s->cluster = NULL;
    }
}

/* The correlation engine at start: created, and the saved state restored. */
static void
start_corr(struct server *s, const struct conf *conf)
{
    struct corr_opts copts = {0};
    size_t dropped = 0, nworkers;
    long loaded;

    log_msg(LOG_INFO, "loaded %zu rules from %zu files", pdb_nrules(s->db), pdb_nfiles(s->db));
    copts.emit = on_emit;
    copts.log = on_corr_log;
    copts.clock = steady_clock;
    copts.arg = s;
    conf_corr_limits(conf, &copts);
    if (conf->cluster) {
        struct cluster_node_opts co = {0};
        co.loop = s->loop;
        co.cc = conf->cluster;
        co.hostname = output_local_hostname();
        co.corr = &copts;
        co.emit = on_emit;
        co.arg = s;
        /* no local state: the partitions' are the cluster's (server_start fails without) */
        s->cluster = cluster_node_new(&co, s->db, &s->cluster_err);
        return;
    }
    nworkers = conf->engine_workers;
    if (!nworkers) {
        /* the default: one per core this process may run on */
        nworkers = par_default_threads();
    }
    if (nworkers > 1) {
        struct workers_opts wo = {0};
        wo.threads = (unsigned)nworkers;
        wo.queue = conf->engine_queue ? conf->engine_queue : 4096;
        wo.hostname = output_local_hostname();
        wo.corr = &copts;
        wo.emit = on_worker_emit;
        wo.arg = s;
        wo.linger_ms = WORKERS_LINGER_MS;
        s->workers = workers_new(s->loop, s->db, &wo);
    }
    if (!s->workers) s->corr = corr_new(s->db, &copts);
    if (!conf->state_file) return;
    if (s->workers)
        loaded = workers_load(s->workers, conf->state_file, &dropped);
    else
        loaded = corr_load(s->corr, conf->state_file, &dropped);
    if (loaded >= 0) {
        log_msg(LOG_INFO, "state %s: %ld open contexts restored, %zu dropped (rules gone)",
                conf->state_file, loaded, dropped);
    } else if (errno == ENOENT) {
        log_msg(LOG_INFO, "state %s: none yet, starting afresh", conf->state_file);
    } else if (errno == DURABLE_ENOTREG) {
        /* replaced since stage_prepare looked: not ours to move aside */
        log_msg(LOG_ERR, "state %s: not a regular file, not read", conf->state_file);
    } else {
        /* keep the bad file for inspection; never refuse to start over it */
        struct buf bad = BUF_INIT;
        buf_printf(&bad, "%s.corrupt", conf->state_file);
        rename(conf->state_file, buf_str(&bad));
        log_msg(LOG_ERR, "state %s unusable (%s), moved to %s; starting afresh", conf->state_file,
                strerror(errno), buf_str(&bad));
        buf_free(&bad);
    }
}

/*
 * The inputs of a stage: the running ones not reused close, and those that
 * had to wait for them (see struct stage) open now.  Returns false when one
 * of these could not open (the configuration it replaced runs again).
 */
static bool
commit_inputs(struct server *s, struct stage *st, struct buf *report)
{
    const struct conf *c = st->conf;
    bool starting = s->conf == NULL, ok = true;
    struct buf err = BUF_INIT;
    size_t i, j;

    for (i = 0; i < c->ninputs; i++)
        if (st->input_replaces[i] != SIZE_MAX) st->input_taken[st->input_replaces[i]] = false;
    for (j = 0; j < s->ninputs; j++)
        if (!st->input_taken[j] && !starting) {
            bool replaced = false;
            for (i = 0; i < c->ninputs; i++)
                if (st->input_replaces[i] == j) replaced = true;
            if (replaced) continue; /* closed just before its successor opens */
            buf_printf(report, "input closed: %s\n", input_name(s->inputs[j]));
            input_close(s->inputs[j]);
        }
    for (i = 0; i < c->ninputs; i++) {
        struct input *in = st->inputs[i], *old;
        struct conf_input was;
        if (starting) {
            log_msg(LOG_INFO, "listening: %s", input_name(in));
        } else if (st->input_opened[i]) {
            buf_printf(report, "input opened: %s\n", input_name(in));
        } else if (in) {
            input_set_limits(in, c);
            input_reload_commit(in);
        } else {
            old = s->inputs[st->input_replaces[i]];
            conf_input_copy(&was, input_conf(old)); /* to open it again, should this fail */
            buf_printf(report, "input closed: %s\n", input_name(old));
            input_close(old);
            buf_reset(&err);
            in = input_open(s, s->loop, &c->inputs[i], c, &err);
            if (in) {
                buf_printf(report, "input opened: %s\n", input_name(in));
            } else {
                ok = false;
                buf_printf(report, "%s\n", buf_str(&err));
                buf_reset(&err);
                in = input_open(s, s->loop, &was, c, &err);
                if (in)
                    buf_printf(report, "input %s opened again as before\n", input_name(in));
                else
                    buf_printf(report, "input %s not opened again: %s\n", was.name, buf_str(&err));
            }
            conf_input_clear(&was);
        }
        if (in && s->paused) input_pause(in, true); /* a new input waits with the others */
        if (in && s->held) input_hold(in, true);
        st->inputs[i] = in;
    }
    free(s->inputs);
    s->inputs = st->inputs;
    s->ninputs = 0;
    for (i = 0; i < c->ninputs; i++)
        if (st->inputs[i]) s->inputs[s->ninputs++] = st->inputs[i];
    buf_free(&err);
    return ok;
}

/*
 * The alert store and the silences.  At start both are read back: the store
 * from beside the state file, the silences from their own file.  On a
 * reload the store's entries move to the new one (new max-alerts, new
 * inhibit rules) and the silences stay, with the new limits, saved beside
 * the new state file if the reload names another.
 */
static void
start_alerts(struct server *s, struct stage *st, const struct conf *c, bool starting)
{
    struct buf path = BUF_INIT;

    alerts_set_notify(st->alerts, on_alert_notify, s);
    if (starting && c->state_file) {
        buf_printf(&path, "%s.alerts", c->state_file);
        alerts_load(st->alerts, buf_str(&path));
        buf_reset(&path);
    }
    /* with <cluster>, the cluster's bucket is their store (start_cluster_silences), not a file */
    if (c->state_file && !c->cluster) buf_printf(&path, "%s.silences", c->state_file);
    if (starting) {
        s->silences = silences_new(path.len ? buf_str(&path) : NULL, c->silence_retention,
                                   c->max_silences, clock_wall_ms());
    } else {
        alerts_adopt(st->alerts, s->alerts);
        silences_set_limits(s->silences, c->silence_retention, c->max_silences);
        /* they follow the state file, as the store (saved beside it) does */
        silences_set_path(s->silences, path.len ? buf_str(&path) : NULL);
    }
    alerts_free(s->alerts);
    s->alerts = st->alerts;
    st->alerts = NULL;
    buf_free(&path);
}

/*
 * Swaps a prepared stage in.  At start (an empty server) it logs what runs;
 * on a reload it writes what changed to report.
 */
static bool
stage_commit(struct server *s, struct stage *st, struct buf *report)
{
    const struct conf *c = st->conf;
    bool starting = s->conf == NULL, ok;
    size_t i, kept = 0, dropped = 0;
    struct queue **queues;
    struct absence *was;

    /*
     * Executors that are gone or changed stop.  A changed one hands what it
     * has queued to its successor (queueset.h); a gone one's spool keeps it
     * for the next start.  Under privilege separation the executor process
     * has done this already (or, unchanged, had nothing to do).
     */
    queues = st->qs.queues;
    if (s->proxy) {
        st->qs.queues = NULL;
        queueset_discard(&st->qs);
    } else {
        queueset_commit(&st->qs, starting ? NULL : report);
    }
    free(s->queues);
    free(s->qnames);
    free(s->remote);
    route_free(s->routes);
    s->queues = queues;
    s->remote = st->remote;
    s->qnames = st->qnames;
    s->nqueues = c->nexecutors;
    s->routes = st->routes;
    free(s->targets);
    s->targets = xcalloc(s->nqueues + 1, sizeof(*s->targets));
    free(s->alert_targets);
    s->alert_targets = xcalloc(s->nqueues + 1, sizeof(*s->alert_targets));
    for (i = 0; i < s->nqueues && !s->proxy; i++)
        queue_set_observer(s->queues[i], on_queue_event, s);
    if (starting)
        for (i = 0; i < s->nqueues; i++) log_msg(LOG_INFO, "executor: %s", s->qnames[i]);
    start_alerts(s, st, c, starting);

    ok = commit_inputs(s, st, report);

    if (st->new_outputs) {
        free_outputs(s->outputs, s->noutputs);
        s->outputs = st->outputs;
        s->noutputs = st->noutputs;
        if (!starting) buf_printf(report, "outputs reopened (%zu)\n", s->noutputs);
    } else {
        for (i = 0; i < s->noutputs; i++) output_reload_commit(s->outputs[i]);
    }

    if (starting) {
        s->db = st->db;
        start_corr(s, c);
        start_cluster_silences(s);
    } else {
        describe_changes(s->db, st->db, report);
        if (s->cluster)
            cluster_node_set_db(s->cluster, st->db);
        else if (s->workers)
            workers_set_db(s->workers, st->db, st->conf->state_file, &kept, &dropped);
        else
            corr_set_db(s->corr, st->db, &kept, &dropped);
        buf_printf(report, "contexts: %zu kept, %zu dropped (their rule is gone)\n", kept, dropped);
        pdb_free(s->db);
        s->db = st->db;
        syslogfmt_tz_reset();
    }
    /* the sources watched keep their state: a reload must not forget an absence nor repeat one */
    was = s->absence;
    s->absence = c->nabsences ? absence_new(c->absences, c->nabsences, c->max_absence_sources,
                                            clock_mono_ms(), on_absence, s)
                              : NULL;
    if (s->absence) absence_wall_clock(s->absence, clock_mono_to_wall);
    if (s->absence) absence_adopt(s->absence, was, clock_mono_ms());
    absence_free(was);
    conf_free(s->conf);
    s->conf = st->conf;
    free(st->input_taken);
    free(st->input_opened);
    free(st->input_replaces);
    start_timers(s);
    return ok;
}

int
server_start(struct server *s, struct conf *conf, struct buf *err)
{
    struct stage st;

    if (stage_prepare(s, &st, conf, err) < 0) return -1;
    stage_commit(s, &st, NULL);
    if (s->conf->cluster && !s->cluster) {
        buf_printf(err, "%s:%d: %s\n", s->conf->file ? s->conf->file : "-", s->conf->cluster->line,
                   buf_str(&s->cluster_err));
        return -1;
    }
    return 0;
}

/* A reload waiting for the executor process (privilege separation): the stage and who asked. */
struct pending_reload {
    struct stage st;
    struct buf report;
    server_reload_fn done;
    void *arg;
};

/* A reload failed: counted, and corral_config_last_reload_successful says so till the next. */
static void
reload_failed(struct server *s)
{
    s->reload_failures++;
    s->last_reload_ok = false;
}

/* The end of a reload whose stage is prepared: commit, and tell whoever asked. */
static void
reload_commit(struct server *s, struct stage *st, struct buf *report, server_reload_fn done,
              void *arg)
{
    int rc = 0;

    if (!stage_commit(s, st, report)) {
        /* an input that had to wait for its predecessor could not open: not what was asked */
        buf_printf(report, "reload failed: an input could not be opened (see above)\n");
        reload_failed(s);
        rc = -1;
    } else {
        s->last_reload_ok = true;
        s->last_reload_ok_ms = clock_wall_ms();
    }
    done(arg, rc, buf_str(report));
}

/*
 * Privilege separation: the executor process has reloaded its executors
 * (ok: the proxy has its new list), or could not (nothing changed there).
 */
static void
on_executors_reloaded(void *arg, bool ok, const char *text, size_t len)
{
    struct server *s = arg;
    struct pending_reload *p = s->pending;

    s->pending = NULL;
    if (!p) {
        /* the stage was given up (stopping): what runs finds its executors in the new list */
        if (ok && s->remote) map_remote(s, s->qnames, s->nqueues, s->remote, NULL);
        return;
    }
    if (!ok) {
        buf_printf(&p->report, "reload failed, the running configuration stays:\n%.*s", (int)len,
                   text);
        stage_discard(s, &p->st);
        reload_failed(s);
        p->done(p->arg, -1, buf_str(&p->report));
    } else {
        buf_append(&p->report, text, len); /* what it opened, changed and closed */
        p->st.remote = xcalloc(p->st.conf->nexecutors + 1, sizeof(*p->st.remote));
        map_remote(s, p->st.qnames, p->st.conf->nexecutors, p->st.remote, &p->report);
        reload_commit(s, &p->st, &p->report, p->done, p->arg);
    }
    buf_free(&p->report);
    free(p);
}

void
server_reload(struct server *s, struct conf *conf, server_reload_fn done, void *arg)
{
    struct pending_reload *p = xcalloc(1, sizeof(*p));
    struct buf err = BUF_INIT;

    s->reloads++;
    buf_init(&p->report);
    if (s->pending) {
        /* corrald runs one at a time (agent/corrald.c): not expected, but never two stages */
        conf_free(conf);
        buf_puts(&p->report, "reload failed: another reload is still waiting for the executor "
                             "process\n");
        reload_failed(s);
        done(arg, -1, buf_str(&p->report));
    } else if (stage_prepare(s, &p->st, conf, &err) < 0) {
        buf_printf(&p->report, "reload failed, the running configuration stays:\n%s",
                   buf_str(&err));
        reload_failed(s);
        done(arg, -1, buf_str(&p->report));
    } else if (p->st.remote_wait) {
        /* the executor process reads the file itself and answers; the stage waits till then */
        p->done = done;
        p->arg = arg;
        if (ipcproxy_reload(s->proxy, ++s->reload_gen, on_executors_reloaded, s) == 0) {
            s->pending = p;
            buf_free(&err);
            return;
        }
        stage_discard(s, &p->st);
        buf_puts(&p->report, "reload failed, the running configuration stays:\nthe executor "
                             "process is gone\n");
        reload_failed(s);
        done(arg, -1, buf_str(&p->report));
    } else {
        reload_commit(s, &p->st, &p->report, done, arg);
    }
    buf_free(&err);
    buf_free(&p->report);
    free(p);
}

void
server_reload_failed(struct server *s)
{
    s->reloads++;
    reload_failed(s);
}

void
server_reopen_outputs(struct server *s)
{
    size_t i;

    for (i = 0; i < s->noutputs; i++) output_reopen(s->outputs[i]);
}

/* ---- shutdown ---- */

static void
output_closed(void *arg)
{
    struct server *s = arg;

    if (--s->closing == 0) {
        if (s->timers_started) {
            uv_close((uv_handle_t *)&s->tick, NULL);
            uv_close((uv_handle_t *)&s->save, NULL);
            uv_close((uv_handle_t *)&s->stall_check, NULL);
        }
        if (s->check_init) uv_close((uv_handle_t *)&s->resume_check, NULL);
        if (s->hold_init) uv_close((uv_handle_t *)&s->hold_check, NULL);
        if (s->done) s->done(s->done_arg);
    }
}

void
server_shutdown(struct server *s, void (*done)(void *), void *arg)
{
    size_t i;

    s->done = done;
    s->done_arg = arg;
    if (s->pending) {
        /* stopping: the stage is given up (the executor process's answer changes nothing then) */
        struct pending_reload *p = s->pending;
        s->pending = NULL;
        stage_discard(s, &p->st);
        buf_puts(&p->report, "reload abandoned: corrald is stopping\n");
        reload_failed(s);
        p->done(p->arg, -1, buf_str(&p->report));
        buf_free(&p->report);
        free(p);
    }
    for (i = 0; i < s->ninputs; i++) input_close(s->inputs[i]);
    s->ninputs = 0;
    if (s->check_init) uv_check_stop(&s->resume_check);
    if (s->hold_init) uv_check_stop(&s->hold_check);
    if (s->timers_started) {
        uv_timer_stop(&s->tick);
        uv_timer_stop(&s->save);
    }
    /*
     * contexts are not expired at shutdown: they go to the state file and
     * live on.  In-process: the loop is stopping, and a save running in a
     * child holds older state (snapshot_final kills it).
     */
    if (s->workers) workers_drain(s->workers); /* what was read is processed and written */
    {
        /* what an operator (and engine_workers.sh) checks after a stop: nothing read was lost */
        struct corr_stats cs;
        engine_stats(s, &cs);
        log_msg(LOG_INFO, "stopping: %llu messages received, %llu processed, %llu open contexts",
                (unsigned long long)s->received, (unsigned long long)cs.processed,
                (unsigned long long)cs.contexts_open);
    }
    if (saving(s) && snapshot_final(snapshot_of(s)) < 0) s->final_save_failed = true;
    if (s->cluster) {
        /* partitions given back to the cluster, in-flight publishes acknowledged */
        cluster_silences_free(s->clsil);
        s->clsil = NULL;
        cluster_node_free(s->cluster);
        s->cluster = NULL;
        s->corr = corr_new(s->db, &(struct corr_opts){0});
    }
    if (s->workers) {
        /* the counters the metrics and `corral ctl` read stay in a corr of the loop's */
        workers_free(s->workers);
        s->workers = NULL;
        s->corr = corr_new(s->db, &(struct corr_opts){0});
    }
    /* privsep: the executor process closes its queues when the engine terminates it */
    s->closing = s->noutputs + (s->proxy ? 0 : s->nqueues) + 1;
    for (i = 0; i < s->noutputs; i++) output_close(s->outputs[i], output_closed, s);
    for (i = 0; i < s->nqueues && !s->proxy; i++) queue_close(s->queues[i], output_closed, s);
    s->noutputs = 0;
    s->nqueues = 0;
    output_closed(s);
}

bool
server_final_save_failed(const struct server *s)
{
    return s && s->final_save_failed;
}

/* ---- the engine's state, in one corr or in the workers' shards ---- */

/* The shards, still (workers_drain) until the end of this loop iteration; n of them. */
static unsigned
engines(struct server *s, struct corr **out, unsigned max)
{
    unsigned k, n;

    if (s->cluster) return cluster_node_engines(s->cluster, out, max);
    if (!s->workers) {
        out[0] = s->corr;
        return s->corr ? 1 : 0;
    }
    workers_drain(s->workers);
    n = workers_nshards(s->workers);
    for (k = 0; k < n && k < max; k++) out[k] = workers_shard(s->workers, k);
    return k;
}

static void
engine_stats(struct server *s, struct corr_stats *cs)
{
    struct corr *all[64];
    unsigned k, n = engines(s, all, 64);

    memset(cs, 0, sizeof(*cs));
    for (k = 0; k < n; k++) {
        struct corr_stats o;
        corr_stats(all[k], &o);
        cs->processed += o.processed;
        cs->matched += o.matched;
        cs->unknown += o.unknown;
        cs->generated += o.generated;
        cs->contexts_created += o.contexts_created;
        cs->contexts_expired += o.contexts_expired;
        cs->contexts_open += o.contexts_open;
        cs->contexts_refused += o.contexts_refused;
        cs->messages_dropped += o.messages_dropped;
        cs->bytes_dropped += o.bytes_dropped;
        cs->rate_limited += o.rate_limited;
        cs->rate_buckets += o.rate_buckets;
        cs->context_bytes += o.context_bytes;
        cs->sigma_groups += o.sigma_groups;
        cs->sigma_dropped += o.sigma_dropped;
        cs->sigma_evicted += o.sigma_evicted;
        cs->sigma_bytes += o.sigma_bytes;
    }
}

static void
engine_foreach(struct server *s, void (*fn)(const struct corr_context_info *ci, void *arg),
               void *arg)
{
    struct corr *all[64];
    unsigned k, n = engines(s, all, 64);

    for (k = 0; k < n; k++) corr_foreach(all[k], fn, arg);
}

/* Per rule, summed over the shards (one series per rule, as with one engine). */
struct rule_sums {
    struct corr_rule_stats *r;
    size_t n, cap;
};

static void
rule_add(const struct corr_rule_stats *rs, void *arg)
{
    struct rule_sums *sum = arg;
    size_t i;

    for (i = 0; i < sum->n; i++)
        if (strcmp(sum->r[i].rule_id, rs->rule_id) == 0) break;
    if (i == sum->n) {
        sum->r = xgrow(sum->r, &sum->cap, sum->n + 1, sizeof(*sum->r));
        sum->r[sum->n++] = *rs;
        return;
    }
    sum->r[i].contexts += rs->contexts;
    sum->r[i].bytes += rs->bytes;
    sum->r[i].refused += rs->refused;
    sum->r[i].dropped += rs->dropped;
    sum->r[i].evicted += rs->evicted;
    sum->r[i].buckets += rs->buckets;
    sum->r[i].rate_limited += rs->rate_limited;
    sum->r[i].rate_refused += rs->rate_refused;
    sum->r[i].rate_evicted += rs->rate_evicted;
}

static void
engine_foreach_rule(struct server *s, void (*fn)(const struct corr_rule_stats *rs, void *arg),
                    void *arg)
{
    struct corr *all[64];
    struct rule_sums sum = {0};
    unsigned k, n = engines(s, all, 64);
    size_t i;

    if (n == 1) {
        corr_foreach_rule(all[0], fn, arg);
        return;
    }
    for (k = 0; k < n; k++) corr_foreach_rule(all[k], rule_add, &sum);
    for (i = 0; i < sum.n; i++) fn(&sum.r[i], arg);
    free(sum.r);
}

size_t
server_nqueues(const struct server *s)
{
    return s->nqueues;
}

struct queue *
server_queue_at(const struct server *s, size_t i)
{
    return s->queues[i];
}

void
server_set_proxy(struct server *s, struct ipcproxy *proxy)
{
    s->proxy = proxy;
    ipcproxy_set_observer(proxy, on_queue_event, s);
}

struct ipcproxy *
server_proxy(const struct server *s)
{
    return s->proxy;
}

void
server_set_dnscache(struct server *s, struct dnscache *dns)
{
    s->dns = dns;
}

/* ---- metrics: a table of descriptors (metrics.h) ---- */

/*
 * What one rendering reads: the server and the stats gathered once for it.
 * The sources of the table are its parts; a NULL source is a feature that is
 * not configured, and its metrics are left out.
 */
struct mctx {
    struct server *s;
    struct corr_stats cs;
    struct workers_stats ws;
    struct nv_stats nvs;
    struct dnscache_stats ds;
    struct cluster_node_stats cls;
    struct cluster_silences_stats clsil;
};

enum msrc {
    M_ALWAYS,   /* the struct server */
    M_CORR,     /* struct corr_stats: all engines summed */
    M_SNAP,     /* struct snapshot_stats */
    M_ABSENCE,  /* the absence watcher: its values come from getters */
    M_ALERTS,   /* struct alerts_stats */
    M_SILENCES, /* struct silences_stats */
    M_DNS,      /* struct dnscache_stats */
    M_WORKERS,  /* struct workers_stats */
    M_PROXY,    /* struct ipcproxy_stats */
    M_QUEUES,   /* the struct server, if executors are configured */
    M_CLUSTER,  /* struct cluster_node_stats */
    M_CLSIL,    /* struct cluster_silences_stats */
    M_NSRC
};

/* a field the renderer reads: the _Generic refuses to compile unless it is a uint64_t or double */
#define F(type, member)                                                                            \
    .field = offsetof(type, member) +                                                              \
             0 * sizeof(_Generic(((type *)0)->member, uint64_t : 1, double : 1))
#define SERVER(member) F(struct server, member)
#define CORR(member)   F(struct corr_stats, member)

/* A getter of one value: m is the struct mctx, s its server. */
#define MGETTER(type, fn, expr)                                                                    \
    static type fn(void *c)                                                                        \
    {                                                                                              \
        const struct mctx *m = c;                                                                  \
        const struct server *s = m->s;                                                             \
        (void)m;                                                                                   \
        (void)s;                                                                                   \
        return (expr);                                                                             \
    }
#define MGET(fn, expr)  MGETTER(uint64_t, fn, expr)
#define MGETD(fn, expr) MGETTER(double, fn, expr)

MGET(m_uptime, (clock_mono_ms() - s->started_ms) / 1000)
MGET(m_rules, pdb_nrules(s->db))
MGET(m_sigma_rules, pdb_sigma(s->db) ? sigma_nrules(pdb_sigma(s->db)) : 0)
MGET(m_sigma_refused, pdb_sigma(s->db) ? sigma_nrefused(pdb_sigma(s->db)) : 0)
MGET(m_sigma_correlations, pdb_sigma(s->db) ? sigma_ncorrelations(pdb_sigma(s->db)) : 0)
MGET(m_names, m->nvs.names)
MGET(m_input_names, m->nvs.input_names)
MGET(m_names_refused, m->nvs.refused)
MGET(m_reload_ok, s->last_reload_ok)
MGETD(m_reload_ok_time, (double)s->last_reload_ok_ms / 1000.0)
MGET(m_save_running, s->snap ? snapshot_get_stats(s->snap)->running : 0)
MGETD(m_stall_max, (double)s->stall_max_ns / 1e9)
MGET(m_absence_sources, absence_tracked(s->absence))
MGET(m_absence_down, absence_down(s->absence))
MGET(m_absence_untracked, absence_untracked(s->absence))
MGET(m_absence_forgotten, absence_forgotten(s->absence))
MGET(m_absence_evicted, absence_evicted(s->absence))
MGET(m_absence_foreign, absence_foreign(s->absence))
MGET(m_cluster_owned, m->cls.owned)
MGET(m_cluster_members, m->cls.members)
MGET(m_cluster_partitions, m->cls.partitions)
MGET(m_cluster_balanced, m->cls.balanced)
MGET(m_silences, silences_count(s->silences))
MGET(m_silences_active, silences_active(s->silences, clock_wall_ms()))
MGET(m_dns_entries, m->ds.entries)
MGET(m_regex_limit_hits, rematch_limit_hits())
MGET(m_paused_seconds, (s->paused_ms + (s->paused ? uv_now(s->loop) - s->paused_at : 0)) / 1000)
MGET(m_shards, workers_nshards(s->workers))
MGET(m_engine_pauses, s->engine_pauses)
MGET(m_engine_queued, m->ws.queued)

/* corral_dropped_total, by reason */
static void
m_dropped(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct mctx *m = c;

    metrics_sample(out, d->name, "reason", "context_limit", m->cs.contexts_refused);
    metrics_sample(out, d->name, "reason", "context_full", m->cs.messages_dropped);
    metrics_sample(out, d->name, "reason", "context_bytes", m->cs.bytes_dropped);
    metrics_sample(out, d->name, "reason", "rate_limit", m->cs.rate_limited);
    metrics_sample(out, d->name, "reason", "value_truncated",
                   m->s->truncated_values + m->ws.truncated);
}

static void
m_resolved(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct alerts_stats *as = alerts_get_stats(((struct mctx *)c)->s->alerts);

    metrics_sample(out, d->name, "by", "clear", as->resolved_clear);
    metrics_sample(out, d->name, "by", "timeout", as->resolved_timeout);
    metrics_sample(out, d->name, "by", "hand", as->resolved_hand);
}

static void
m_labels_fixed(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    unsigned i;

    for (i = 0; i < ALERTLABELS_NFLAGS; i++)
        metrics_sample(out, d->name, "what", alertlabels_flag_name(1u << i), s->labels_fixed[i]);
}

static void
m_alert_states(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    enum alert_state st;

    for (st = ALERT_FIRING; st < ALERT_NSTATES; st++)
        metrics_sample(out, d->name, "state", alerts_state_name(st),
                       alerts_in_state(s->alerts, st));
}

static void
m_busy(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    unsigned k, n = workers_nthreads(s->workers);

    for (k = 0; k < n; k++)
        buf_printf(out, "%s{worker=\"%u\"} %.6f\n", d->name, k,
                   workers_busy_seconds(s->workers, k));
}

static void
m_cluster_owned_parts(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    unsigned p, n = ((struct mctx *)c)->cls.partitions;

    for (p = 0; p < n; p++)
        if (cluster_node_owns(s->cluster, p))
            buf_printf(out, "%s{partition=\"%u\"} 1\n", d->name, p);
}

/* Per rule that opens contexts: at most one series per rule and metric. */
struct rule_metric {
    struct buf *out;
    const struct metrics_desc *d;
};

static void
rule_sample(const struct corr_rule_stats *rs, void *arg)
{
    const struct rule_metric *rm = arg;

    metrics_sample(rm->out, rm->d->name, "rule", rs->rule_id, metrics_field(rm->d, rs));
}

static void
m_per_rule(struct buf *out, const struct metrics_desc *d, void *c)
{
    struct rule_metric rm = {out, d};

    engine_foreach_rule(((struct mctx *)c)->s, rule_sample, &rm);
}

static void
m_per_input(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;

    for (i = 0; i < s->ninputs; i++)
        metrics_sample(out, d->name, "input", input_name(s->inputs[i]),
                       metrics_field(d, input_get_stats(s->inputs[i])));
}

static void
m_per_output(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;

    for (i = 0; i < s->noutputs; i++)
        metrics_sample(out, d->name, "output", output_name(s->outputs[i]),
                       metrics_field(d, output_get_stats(s->outputs[i])));
}

static void
m_per_executor(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;

    for (i = 0; i < s->nqueues; i++)
        metrics_sample(out, d->name, "executor", s->qnames[i],
                       metrics_field(d, executor_stats(s, i)));
}

static void
m_per_endpoint(struct buf *out, const struct metrics_desc *d, void *c)
{
    static const char *const names[SERVER_EP_N] = {"control", "stats"};
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;

    for (i = 0; i < SERVER_EP_N; i++)
        metrics_sample(out, d->name, "endpoint", names[i], metrics_field(d, &s->endpoints[i]));
}

/* TLS handshakes that failed, per TLS input and output and per reason (tls.h). */
static void
tls_fail_samples(struct buf *out, const char *name, const char *label, const char *value,
                 const uint64_t *failures)
{
    int f;

    for (f = 0; f < TLS_FAIL_N; f++) {
        buf_printf(out, "%s{%s=\"", name, label);
        metrics_label_value(out, value);
        buf_printf(out, "\",reason=\"%s\"} %llu\n", tls_fail_name(f),
                   (unsigned long long)failures[f]);
    }
}

static void
m_tls_failures(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;

    for (i = 0; i < s->ninputs; i++)
        if (input_conf(s->inputs[i])->type == CONF_IN_TLS)
            tls_fail_samples(out, d->name, "input", input_name(s->inputs[i]),
                             input_get_stats(s->inputs[i])->tls_failures);
    for (i = 0; i < s->noutputs; i++)
        if (output_is_tls(s->outputs[i]))
            tls_fail_samples(out, d->name, "output", output_name(s->outputs[i]),
                             output_get_stats(s->outputs[i])->tls_failures);
}

/* snmp-trap inputs: datagrams that became no message, per reason (in_snmptrap.h) */
static void
m_snmp_dropped(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;
    int r;

    for (i = 0; i < s->ninputs; i++) {
        if (input_conf(s->inputs[i])->type != CONF_IN_SNMP_TRAP) continue;
        for (r = 0; r < SNMPTRAP_DROP_N; r++) {
            buf_printf(out, "%s{input=\"", d->name);
            metrics_label_value(out, input_name(s->inputs[i]));
            buf_printf(out, "\",reason=\"%s\"} %llu\n", snmptrap_drop_name(r),
                       (unsigned long long)input_get_stats(s->inputs[i])->snmp_dropped[r]);
        }
    }
}

static void
m_snmp_informs(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct server *s = ((struct mctx *)c)->s;
    size_t i;

    for (i = 0; i < s->ninputs; i++)
        if (input_conf(s->inputs[i])->type == CONF_IN_SNMP_TRAP)
            metrics_sample(out, d->name, "input", input_name(s->inputs[i]),
                           input_get_stats(s->inputs[i])->snmp_informs);
}

#define RULE(member)     .series = m_per_rule, F(struct corr_rule_stats, member)
#define INPUT(member)    .series = m_per_input, F(struct input_stats, member)
#define OUTPUT(member)   .series = m_per_output, F(struct output_stats, member)
#define ENDPOINT(member) .series = m_per_endpoint, F(struct server_endpoint_stats, member)
#define EXECUTOR(member) .series = m_per_executor, F(struct queue_stats, member)

/* Every metric of /metrics after those of apiv2 and procstat, in the order served. */
static const struct metrics_desc server_mtab[] = {
    {"corral_uptime_seconds", "gauge", "Seconds since corrald started.", M_ALWAYS, .get = m_uptime},
    {"corral_rules", "gauge", "Rules loaded.", M_ALWAYS, .get = m_rules},
    {"corral_sigma_rules", "gauge", "Sigma detection rules loaded.", M_ALWAYS,
     .get = m_sigma_rules},
    {"corral_sigma_rules_refused", "gauge",
     "Sigma rules refused when the rules were last loaded (each logged with file:line).", M_ALWAYS,
     .get = m_sigma_refused},
    {"corral_sigma_correlation_rules", "gauge", "Sigma correlation rules loaded.", M_ALWAYS,
     .get = m_sigma_correlations},
    {"corral_value_names", "gauge", "Value names registered (at most 65536).", M_ALWAYS,
     .get = m_names},
    {"corral_value_names_input", "gauge",
     "Value names registered from input (structured data; at most 16384).", M_ALWAYS,
     .get = m_input_names},
    {"corral_value_names_refused_total", "counter",
     "Structured-data parameters whose new name input may not register: kept in "
     ".corral.sdata_unregistered.",
     M_ALWAYS, .get = m_names_refused},
    {"corral_messages_received_total", "counter", "Messages received from all inputs.", M_ALWAYS,
     SERVER(received)},
    {"corral_messages_parsed_total", "counter", "Messages parsed.", M_ALWAYS, SERVER(parsed)},
    {"corral_messages_matched_total", "counter", "Messages a rule classified.", M_CORR,
     CORR(matched)},
    {"corral_messages_unknown_total", "counter", "Messages no rule classified.", M_CORR,
     CORR(unknown)},
    {"corral_messages_generated_total", "counter", "Messages generated by rule actions.", M_CORR,
     CORR(generated)},
    {"corral_contexts_open", "gauge", "Open correlation contexts.", M_CORR, CORR(contexts_open)},
    {"corral_contexts_created_total", "counter", "Correlation contexts created.", M_CORR,
     CORR(contexts_created)},
    {"corral_contexts_expired_total", "counter", "Correlation contexts that timed out.", M_CORR,
     CORR(contexts_expired)},
    {"corral_context_bytes", "gauge", "Memory held by open contexts.", M_CORR, CORR(context_bytes)},
    {"corral_rate_buckets", "gauge", "Rate-limit buckets held (rate= of rule actions).", M_CORR,
     CORR(rate_buckets)},
    {"corral_sigma_correlation_groups", "gauge",
     "Sigma correlation groups held (group-by values in their timespan).", M_CORR,
     CORR(sigma_groups)},
    {"corral_sigma_correlation_dropped_total", "counter",
     "Sigma correlation events not counted: their rule's memory share had no room.", M_CORR,
     CORR(sigma_dropped)},
    {"corral_sigma_correlation_groups_evicted_total", "counter",
     "Sigma correlation groups evicted to make room in their rule's memory share.", M_CORR,
     CORR(sigma_evicted)},
    {"corral_sigma_correlation_bytes", "gauge", "Memory held by Sigma correlation groups.", M_CORR,
     CORR(sigma_bytes)},
    {"corral_dropped_total", "counter", "Things dropped, by reason.", M_ALWAYS,
     .series = m_dropped},
    {"corral_reloads_total", "counter", "Configuration reloads attempted.", M_ALWAYS,
     SERVER(reloads)},
    {"corral_reload_failures_total", "counter", "Reloads that failed (old configuration kept).",
     M_ALWAYS, SERVER(reload_failures)},
    {"corral_config_last_reload_successful", "gauge",
     "1 if the last reload succeeded (or none was asked since the start), 0 if it failed.",
     M_ALWAYS, .get = m_reload_ok},
    {"corral_config_last_reload_success_timestamp_seconds", "gauge",
     "When the configuration was last loaded (the start or a reload that succeeded), "
     "in seconds since the epoch.",
     M_ALWAYS, .getd = m_reload_ok_time, .decimals = 3},
    {"corral_state_save_requests_total", "counter",
     "State saves asked for (periodic, ctl save); those made while one ran share the next.", M_SNAP,
     F(struct snapshot_stats, requests)},
    {"corral_state_saves_total", "counter", "Correlation state saves.", M_SNAP,
     F(struct snapshot_stats, saves)},
    {"corral_state_save_failures_total", "counter", "Failed correlation state saves.", M_SNAP,
     F(struct snapshot_stats, failures)},
    {"corral_state_save_running", "gauge", "1 while a save runs in the background.", M_SNAP,
     .get = m_save_running},
    {"corral_state_save_seconds", "gauge", "Duration of the last state save.", M_SNAP,
     F(struct snapshot_stats, last_seconds), .decimals = 6},
    {"corral_state_save_fork_seconds", "gauge",
     "How long the loop stopped to fork the last background save.", M_SNAP,
     F(struct snapshot_stats, last_fork_seconds), .decimals = 6},
    {"corral_loop_stall_max_seconds", "gauge",
     "Longest time the loop worked without waiting for events, since start.", M_ALWAYS,
     .getd = m_stall_max, .decimals = 6},
    {"corral_absence_sources", "gauge", "Sources watched by <absence>.", M_ABSENCE,
     .get = m_absence_sources},
    {"corral_absence_down", "gauge", "Sources reported absent (down) now.", M_ABSENCE,
     .get = m_absence_down},
    {"corral_absence_untracked_total", "counter",
     "Messages from sources not watched by <absence>: max-absence-sources reached.", M_ABSENCE,
     .get = m_absence_untracked},
    {"corral_absence_forgotten_total", "counter",
     "Sources forgotten after sending nothing for forget=.", M_ABSENCE, .get = m_absence_forgotten},
    {"corral_absence_evicted_total", "counter",
     "Sources seen once dropped to make room for a new one (max-absence-sources).", M_ABSENCE,
     .get = m_absence_evicted},
    {"corral_absence_foreign_total", "counter",
     "Messages naming a watched source from another address than the one it is bound "
     "to: not taken as the source's.",
     M_ABSENCE, .get = m_absence_foreign},
    {"corral_alerts_recorded_total", "counter",
     "Alerts recorded in the alert store (every occurrence).", M_ALERTS,
     F(struct alerts_stats, recorded)},
    {"corral_alerts_silenced_total", "counter",
     "Alerts a silence muted: recorded, sent to no executor.", M_ALERTS,
     F(struct alerts_stats, silenced)},
    {"corral_alerts_inhibited_total", "counter",
     "Alerts an inhibit rule muted: recorded, sent to no executor.", M_ALERTS,
     F(struct alerts_stats, inhibited)},
    {"corral_alerts_forgotten_total", "counter",
     "Resolved alerts forgotten from the store: max-alerts reached.", M_ALERTS,
     F(struct alerts_stats, forgotten)},
    {"corral_alerts_unrecorded_total", "counter",
     "New alerts sent but not recorded: max-alerts alerts, none resolved.", M_ALERTS,
     F(struct alerts_stats, unrecorded)},
    {"corral_alerts_resolved_total", "counter", "Alerts resolved, by how.", M_ALERTS,
     .series = m_resolved},
    {"corral_alert_labels_fixed_total", "counter",
     "Alerts whose labels were missing or made right, by what.", M_ALERTS,
     .series = m_labels_fixed},
    {"corral_alerts_unmuted_total", "counter",
     "Alerts sent when the silence or inhibition that held them ended.", M_ALERTS,
     F(struct alerts_stats, unmuted)},
    {"corral_alerts_resolved_notifications_total", "counter",
     "Resolved notifications handed to executors (send-resolved).", M_ALERTS,
     F(struct alerts_stats, notified_resolved)},
    {"corral_alerts", "gauge", "Alerts in the store, by state.", M_ALERTS,
     .series = m_alert_states},
    {"corral_silences", "gauge", "Silences kept (active, pending and ended).", M_SILENCES,
     .get = m_silences},
    {"corral_silences_active", "gauge", "Silences active now.", M_SILENCES,
     .get = m_silences_active},
    {"corral_silences_save_errors_total", "counter",
     "Silence changes that could not be saved to the silences file.", M_SILENCES,
     F(struct silences_stats, save_errors)},
    {"corral_dns_hits_total", "counter", "$(dns-resolve-ip) answers from the cache.", M_DNS,
     F(struct dnscache_stats, hits)},
    {"corral_dns_misses_total", "counter",
     "$(dns-resolve-ip) addresses not in the cache (answered with the address).", M_DNS,
     F(struct dnscache_stats, misses)},
    {"corral_dns_lookups_total", "counter", "Reverse lookups started.", M_DNS,
     F(struct dnscache_stats, lookups)},
    {"corral_dns_failures_total", "counter", "Reverse lookups that found no name.", M_DNS,
     F(struct dnscache_stats, failures)},
    {"corral_dns_refused_total", "counter", "Reverse lookups not started: too many in flight.",
     M_DNS, F(struct dnscache_stats, refused)},
    {"corral_dns_evicted_total", "counter", "Cache entries dropped for room.", M_DNS,
     F(struct dnscache_stats, evicted)},
    {"corral_dns_entries", "gauge", "Names and failures cached now.", M_DNS, .get = m_dns_entries},
    {"corral_regex_limit_hits_total", "counter",
     "Regular expression matches stopped by the match, depth or heap limit (taken as no "
     "match).",
     M_ALWAYS, .get = m_regex_limit_hits},
    {"corral_alerts_load_errors_total", "counter",
     "Damaged stretches of the alert store file skipped when it was read.", M_ALERTS,
     F(struct alerts_stats, load_errors)},
    {"corral_silences_load_errors_total", "counter",
     "Damaged records of the silences file skipped when it was read.", M_SILENCES,
     F(struct silences_stats, load_errors)},
    {"corral_heap_trims_total", "counter",
     "Times freed heap memory was given back to the system (after a flood).", M_ALWAYS,
     SERVER(heap.trims)},
    {"corral_heap_returned_bytes_total", "counter",
     "Bytes the resident size fell by when freed heap memory was given back.", M_ALWAYS,
     SERVER(heap.returned_bytes)},
    {"corral_backpressure_pauses_total", "counter",
     "Times stream inputs were paused because a queue was full.", M_ALWAYS, SERVER(pauses)},
    {"corral_backpressure_paused_seconds_total", "counter",
     "Seconds stream inputs have spent paused.", M_ALWAYS, .get = m_paused_seconds},
    {"corral_engine_shards", "gauge",
     "Correlation shards of the worker threads (<engine workers>).", M_WORKERS, .get = m_shards},
    {"corral_engine_queued", "gauge",
     "Messages waiting for the worker threads or being processed by them.", M_WORKERS,
     .get = m_engine_queued},
    {"corral_engine_batches_total", "counter", "Batches of messages handed to the worker threads.",
     M_WORKERS, F(struct workers_stats, batches)},
    {"corral_engine_pauses_total", "counter",
     "Times stream inputs were paused because the queue to the worker threads was full.", M_WORKERS,
     .get = m_engine_pauses},
    {"corral_engine_dropped_total", "counter",
     "Datagrams dropped: the queue to the worker threads was full.", M_WORKERS,
     F(struct workers_stats, dropped)},
    {"corral_engine_busy_seconds_total", "counter",
     "Seconds each worker thread spent parsing, classifying and correlating.", M_WORKERS,
     .series = m_busy},
#define CLUSTER(member) F(struct cluster_node_stats, member)
    {"corral_cluster_published_total", "counter",
     "Messages this node's inputs published to the cluster's stream.", M_CLUSTER,
     CLUSTER(published)},
    {"corral_cluster_acked_total", "counter",
     "Publishes the stream acknowledged (stored on its replicas).", M_CLUSTER, CLUSTER(acked)},
    {"corral_cluster_publish_failed_total", "counter",
     "Publishes refused or not acknowledged: the message is lost.", M_CLUSTER,
     CLUSTER(publish_failed)},
    {"corral_cluster_dropped_total", "counter",
     "Messages not published: datagrams that found max-in-flight publishes unacknowledged, or "
     "refused by the client library.",
     M_CLUSTER, CLUSTER(dropped)},
    {"corral_cluster_consumed_total", "counter",
     "Messages of owned partitions correlated by this node.", M_CLUSTER, CLUSTER(consumed)},
    {"corral_cluster_fenced_total", "counter",
     "Messages and generated messages not processed or emitted: the partition's lease was no "
     "longer valid.",
     M_CLUSTER, CLUSTER(fenced)},
    {"corral_cluster_split_total", "counter",
     "Messages whose also-correlate joins contexts of another partition (joined in their own).",
     M_CLUSTER, CLUSTER(split)},
    {"corral_cluster_acquired_total", "counter", "Partition leases this node took.", M_CLUSTER,
     CLUSTER(acquired)},
    {"corral_cluster_lost_total", "counter",
     "Partition leases this node lost (not renewed in time, or taken).", M_CLUSTER, CLUSTER(lost)},
    {"corral_cluster_released_total", "counter",
     "Partition leases this node gave back (to the node that should own them, or at stop).",
     M_CLUSTER, CLUSTER(released)},
    {"corral_cluster_checkpoints_total", "counter",
     "Checkpoints of owned partitions written (their contexts and the sequence they cover).",
     M_CLUSTER, CLUSTER(checkpoints)},
    {"corral_cluster_replay_suppressed_total", "counter",
     "Messages replayed after taking a partition over whose output its previous owner had "
     "emitted (not emitted again).",
     M_CLUSTER, CLUSTER(suppressed)},
    {"corral_cluster_silences_applied_total", "counter",
     "Silence changes made on other nodes and applied here (from the cluster's bucket).", M_CLSIL,
     F(struct cluster_silences_stats, applied)},
    {"corral_cluster_silences_stale_total", "counter",
     "Silence changes seen in the bucket that were not newer than the silence here: left.", M_CLSIL,
     F(struct cluster_silences_stats, stale)},
    {"corral_cluster_silences_damaged_total", "counter",
     "Damaged silence records in the cluster's bucket, skipped.", M_CLSIL,
     F(struct cluster_silences_stats, apply_errors)},
    {"corral_cluster_silences_conflicts_total", "counter",
     "Silence writes that met a concurrent change of the same silence and were tried again.",
     M_CLSIL, F(struct cluster_silences_stats, conflicts)},
    {"corral_cluster_partitions", "gauge", "Partitions of the cluster.", M_CLUSTER,
     .get = m_cluster_partitions},
    {"corral_cluster_partitions_owned", "gauge", "Partitions whose lease this node holds.",
     M_CLUSTER, .get = m_cluster_owned},
    {"corral_cluster_partition_owned", "gauge",
     "1 for each partition whose lease this node holds (the others are absent).", M_CLUSTER,
     .series = m_cluster_owned_parts},
    {"corral_cluster_members", "gauge", "Live nodes of the cluster, as this node sees them.",
     M_CLUSTER, .get = m_cluster_members},
    {"corral_cluster_balanced", "gauge",
     "1 when this node owns exactly the partitions it should among the live nodes.", M_CLUSTER,
     .get = m_cluster_balanced},
    {"corral_privsep_sent_total", "counter",
     "Alerts the engine process sent to the executor process.", M_PROXY,
     F(struct ipcproxy_stats, sent)},
    {"corral_privsep_refused_total", "counter",
     "Alerts not sent to the executor process (too long for a frame, or it is gone).", M_PROXY,
     F(struct ipcproxy_stats, refused)},
    {"corral_privsep_bad_frames_total", "counter",
     "Frames from the executor process that did not parse (ignored).", M_PROXY,
     F(struct ipcproxy_stats, bad)},
    {"corral_privsep_rejected_total", "counter",
     "Requests of the engine process the executor process refused.", M_PROXY,
     F(struct ipcproxy_stats, served_rejected)},
    {"corral_rule_contexts_open", "gauge", "Open contexts a rule created.", M_ALWAYS,
     RULE(contexts)},
    {"corral_rule_contexts_refused_total", "counter",
     "Contexts of a rule not created: limits or its share of them.", M_ALWAYS, RULE(refused)},
    {"corral_rule_context_messages_dropped_total", "counter",
     "Messages dropped from a rule's contexts or not kept in them: limits.", M_ALWAYS,
     RULE(dropped)},
    {"corral_rule_contexts_evicted_total", "counter",
     "Small contexts of a rule dropped for new ones of the rule: its share was full.", M_ALWAYS,
     RULE(evicted)},
    {"corral_rule_rate_refused_total", "counter",
     "Action runs of a rule suppressed for want of a rate-limit bucket.", M_ALWAYS,
     RULE(rate_refused)},
    {"corral_rule_rate_buckets_evicted_total", "counter",
     "Rate-limit buckets of a rule dropped for new keys: its share was full.", M_ALWAYS,
     RULE(rate_evicted)},
    {"corral_input_messages_total", "counter", "Messages received, per input.", M_ALWAYS,
     INPUT(received)},
    {"corral_input_bytes_total", "counter", "Bytes received, per input.", M_ALWAYS, INPUT(bytes)},
    {"corral_input_truncated_total", "counter", "Messages cut at max-message-size.", M_ALWAYS,
     INPUT(truncated)},
    {"corral_input_errors_total", "counter", "Framing and read errors.", M_ALWAYS, INPUT(errors)},
    {"corral_input_connections_total", "counter", "Connections accepted.", M_ALWAYS,
     INPUT(connections)},
    {"corral_input_rejected_total", "counter", "Connections refused at max-connections-per-peer.",
     M_ALWAYS, INPUT(rejected)},
    {"corral_input_evicted_total", "counter",
     "Connections closed at max-connections for a new one (the one idle longest).", M_ALWAYS,
     INPUT(evicted)},
    {"corral_input_idle_closed_total", "counter", "Connections closed for idling.", M_ALWAYS,
     INPUT(idle_closed)},
    {"corral_input_read_yields_total", "counter",
     "Times a connection stopped reading until the next loop iteration so that "
     "other connections and the control and HTTP endpoints had their turn.",
     M_ALWAYS, INPUT(yields)},
    {"corral_input_connections_active", "gauge", "Connections open now.", M_ALWAYS, INPUT(active)},
    {"corral_input_kernel_drops_total", "counter",
     "Datagrams the kernel dropped, the receive buffer full (UDP inputs).", M_ALWAYS,
     INPUT(kernel_drops)},
    {"corral_tls_handshake_failures_total", "counter",
     "TLS handshakes that failed, per TLS input or output and reason.", M_ALWAYS,
     .series = m_tls_failures},
    {"corral_snmp_trap_dropped_total", "counter",
     "SNMP datagrams that became no message, per snmp-trap input and reason.", M_ALWAYS,
     .series = m_snmp_dropped},
    {"corral_snmp_informs_answered_total", "counter", "Informs answered, per snmp-trap input.",
     M_ALWAYS, .series = m_snmp_informs},
    {"corral_output_written_total", "counter", "Messages written, per output.", M_ALWAYS,
     OUTPUT(written)},
    {"corral_output_dropped_total", "counter", "Messages dropped, per output.", M_ALWAYS,
     OUTPUT(dropped)},
    {"corral_output_generated_dropped_total", "counter",
     "Generated messages (alerts) dropped, per output: their lane was full too.", M_ALWAYS,
     OUTPUT(generated_dropped)},
    {"corral_output_errors_total", "counter", "Write and connection errors.", M_ALWAYS,
     OUTPUT(errors)},
    {"corral_output_queued", "gauge", "Messages waiting, per output.", M_ALWAYS, OUTPUT(queued)},
    {"corral_endpoint_timeouts_total", "counter",
     "Control and stats connections closed: not done in time.", M_ALWAYS, ENDPOINT(timed_out)},
    {"corral_endpoint_evicted_total", "counter",
     "Control and stats connections closed for a new one (the cap was reached).", M_ALWAYS,
     ENDPOINT(evicted)},
    {"corral_endpoint_accept_errors_total", "counter",
     "Control and stats connections that could not be accepted.", M_ALWAYS,
     ENDPOINT(accept_errors)},
    {"corral_endpoint_unauthorized_total", "counter",
     "Requests refused for want of valid credentials (the stats API token).", M_ALWAYS,
     ENDPOINT(unauthorized)},
    {"corral_endpoint_bad_requests_total", "counter", "Requests refused as malformed or too large.",
     M_ALWAYS, ENDPOINT(bad_requests)},
    {"corral_executor_submitted_total", "counter", "Alerts routed to an executor.", M_QUEUES,
     EXECUTOR(submitted)},
    {"corral_executor_delivered_total", "counter", "Alerts delivered.", M_QUEUES,
     EXECUTOR(delivered)},
    {"corral_executor_retries_total", "counter", "Delivery attempts that failed for now.", M_QUEUES,
     EXECUTOR(retries)},
    {"corral_executor_dead_total", "counter", "Alerts given up (dead-letter file).", M_QUEUES,
     EXECUTOR(dead)},
    {"corral_executor_dead_retried_total", "counter",
     "Dead letters queued again (corral queue retry).", M_QUEUES, EXECUTOR(retried)},
    {"corral_executor_operator_dropped_total", "counter",
     "Queued alerts and dead letters dropped (corral queue drop).", M_QUEUES, EXECUTOR(dropped)},
    {"corral_executor_dropped_full_total", "counter", "Alerts refused: queue full.", M_QUEUES,
     EXECUTOR(dropped_full)},
    {"corral_executor_deduplicated_total", "counter", "Alerts dropped as duplicates.", M_QUEUES,
     EXECUTOR(deduplicated)},
    {"corral_executor_dedupe_forgotten_total", "counter",
     "Dedupe keys forgotten before their window ended (too many keys).", M_QUEUES,
     EXECUTOR(dedupe_forgotten)},
    {"corral_executor_rate_limited_total", "counter", "Alerts dropped over the rate.", M_QUEUES,
     EXECUTOR(rate_limited)},
    {"corral_executor_queued", "gauge", "Alerts waiting, per executor.", M_QUEUES,
     EXECUTOR(queued)},
    {"corral_executor_inflight", "gauge", "Alerts being delivered now.", M_QUEUES,
     EXECUTOR(inflight)},
    {"corral_executor_spool_corrupt_total", "counter",
     "Bad stretches of the spool skipped at start (records lost).", M_QUEUES,
     EXECUTOR(spool_corrupt)},
    {"corral_executor_spool_errors_total", "counter",
     "Spool writes, syncs and rewrites that failed.", M_QUEUES, EXECUTOR(spool_errors)},
    {"corral_executor_memory_only_total", "counter",
     "Alerts accepted while the spool could not be written.", M_QUEUES, EXECUTOR(memory_only)},
    {"corral_executor_unspooled", "gauge", "Alerts queued in memory only now (spool not writable).",
     M_QUEUES, EXECUTOR(unspooled)},
};

#undef MGETTER
#undef MGET
#undef MGETD
#undef F
#undef SERVER
#undef CORR
#undef RULE
#undef INPUT
#undef OUTPUT
#undef ENDPOINT
#undef EXECUTOR

void
server_metrics(struct server *s, struct buf *out)
{
    static const struct snapshot_stats no_snapshot;
    struct mctx m = {.s = s};
    const void *src[M_NSRC] = {0};

    engine_stats(s, &m.cs);
    nv_stats(&m.nvs);
    if (s->workers) workers_get_stats(s->workers, &m.ws);
    if (s->dns) dnscache_stats(s->dns, &m.ds);
    src[M_ALWAYS] = s;
    src[M_CORR] = &m.cs;
    src[M_SNAP] = s->snap ? snapshot_get_stats(s->snap) : &no_snapshot;
    src[M_ABSENCE] = s->absence;
    src[M_ALERTS] = s->alerts ? alerts_get_stats(s->alerts) : NULL;
    src[M_SILENCES] = s->silences ? silences_get_stats(s->silences) : NULL;
    src[M_DNS] = s->dns ? &m.ds : NULL;
    src[M_WORKERS] = s->workers ? &m.ws : NULL;
    src[M_PROXY] = s->proxy ? ipcproxy_get_stats(s->proxy) : NULL;
    src[M_QUEUES] = s->nqueues ? s : NULL;
    if (s->cluster) cluster_node_stats(s->cluster, &m.cls);
    src[M_CLUSTER] = s->cluster ? &m.cls : NULL;
    if (s->clsil) cluster_silences_stats(s->clsil, &m.clsil);
    src[M_CLSIL] = s->clsil ? &m.clsil : NULL;
    apiv2_metrics(out);
    procstat_metrics(out);
    metrics_render(out, server_mtab, sizeof(server_mtab) / sizeof(server_mtab[0]), src, &m);
}

static void
context_json(const struct corr_context_info *ci, void *arg)
{
    json_array_append_new(
        arg,
        json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:I, s:I}", "id", jsonval_text(ci->id, ci->idlen),
                  "scope", pdb_scope_name(ci->scope), "host", jsonval_text(ci->host, ci->hostlen),
                  "program", jsonval_text(ci->program, ci->programlen), "pid",
                  jsonval_text(ci->pid, ci->pidlen), "rule", jsonval_str(ci->rule_id), "messages",
                  (json_int_t)ci->nmsgs, "expires_ms", (json_int_t)ci->expires));
}

struct alerts *
server_alerts(struct server *s)
{
    return s->alerts;
}

struct silences *
server_silences(struct server *s)
{
    return s->silences;
}

void
server_contexts_json(struct server *s, struct buf *out)
{
    json_t *arr = json_array();
    struct corr *all[64];
    unsigned n = engines(s, all, 64);

    /* in firing order: the same list on every run, whatever the shards */
    corr_foreach_many((const struct corr *const *)all, n, context_json, arr);
    jsonval_put_new(out, arr);
    buf_putc(out, '\n');
}

void
server_foreach_input(struct server *s,
                     void (*fn)(const char *name, const struct input_stats *st, void *arg),
                     void *arg)
{
    size_t i;

    for (i = 0; i < s->ninputs; i++)
        fn(input_name(s->inputs[i]), input_get_stats(s->inputs[i]), arg);
}

void
server_foreach_queue(struct server *s,
                     void (*fn)(const char *name, const struct queue_stats *st, void *arg),
                     void *arg)
{
    size_t i;

    for (i = 0; i < s->nqueues; i++) fn(s->qnames[i], executor_stats(s, i), arg);
}

void
server_foreach_rule(struct server *s, void (*fn)(const struct corr_rule_stats *rs, void *arg),
                    void *arg)
{
    engine_foreach_rule(s, fn, arg);
}

void
server_foreach_context(struct server *s, void (*fn)(const struct corr_context_info *ci, void *arg),
                       void *arg)
{
    engine_foreach(s, fn, arg);
}

void
server_counts(struct server *s, uint64_t *received, uint64_t *generated)
{
    struct corr_stats cs = {0};

    engine_stats(s, &cs);
    *received = s->received;
    *generated = cs.generated;
}
