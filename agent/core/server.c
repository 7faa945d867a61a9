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
 * (staging.c, which shares the server's state through server_int.h).
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
 * execq.c hides which of the two runs them.  A reload that changes the
 * executors then waits, its stage prepared, until the executor process has
 * reloaded them (execq_reload_remote), and commits or discards it on its
 * answer.  The reuse and handover rules for executors
 * are queueset.h's, shared with the executor process.
 */
#include "agent/core/server_int.h"
#include "agent/core/staging.h"
#include "agent/alerting/alerts.h"
#include "agent/cluster/cluster_node.h"
#include "agent/cluster/cluster_delivery.h"
#include "agent/cluster/cluster_silences.h"
#include "agent/cluster/cluster_alerts.h"
#include "agent/cluster/cluster_view.h"
#include "engine/alertlabels.h"
#include "engine/clock.h"
#include "engine/nv.h"
#include "engine/corr.h"
#include "agent/net/dnscache.h"
#include "agent/core/execq.h"
#include "agent/core/heap.h"
#include "engine/durable.h"
#include "agent/input/input.h"
#include "agent/core/metrics.h"
#include "actions/jsonval.h"
#include "engine/log.h"
#include "agent/output/output.h"
#include "agent/core/procstat.h"
#include "engine/pdb.h"
#include "engine/sigma.h"
#include "engine/received.h"
#include "engine/rematch.h"
#include "agent/alerting/route.h"
#include "agent/alerting/absence.h"
#include "agent/alerting/silences.h"
#include "agent/core/snapshot.h"
#include "agent/core/workers.h"
#include "engine/syslogfmt.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/uri.h>

static void on_queue_event(void *arg, const char *executor, const struct msg *m,
                           enum queue_event ev);
static void on_input(void *arg, struct input *in, const char *data, size_t len, const char *peer);

struct server *
server_new(uv_loop_t *loop)
{
    struct server *s = xcalloc(1, sizeof(*s));

    s->ex = execq_new(loop, on_queue_event, s);
    s->sink.deliver = on_input;
    s->sink.ctx = s;
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

void
server_stop_cluster(struct server *s)
{
    cluster_delivery_free(s->cldel);
    s->cldel = NULL;
    cluster_view_free(s->clview);
    s->clview = NULL;
    cluster_alerts_free(s->clal);
    s->clal = NULL;
    cluster_silences_free(s->clsil);
    s->clsil = NULL;
    cluster_node_free(s->cluster);
    s->cluster = NULL;
}

void
server_free(struct server *s)
{
    if (!s) return;
    snapshot_free(s->snap);
    corr_free(s->corr);
    if (s->workers) workers_free(s->workers);
    server_stop_cluster(s);
    buf_free(&s->cluster_err);
    absence_free(s->absence);
    pdb_free(s->db);
    conf_free(s->conf);
    msg_unref(s->msg);
    free(s->inputs);
    free(s->outputs);
    execq_free(s->ex);
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
 * The executors its routes chose for an alert, as the store records them,
 * then the store's word (alerts_admit): recorded, silenced or inhibited;
 * s->targets keeps those to send it to.
 */
static void
admit_alert(struct server *s, const struct msg *m)
{
    size_t i;

    for (i = 0; i < s->ntargets; i++) {
        s->alert_targets[i].name = execq_name(s->ex, s->targets[i]);
        s->alert_targets[i].send_resolved = route_sends_resolved(s->routes, s->targets[i]);
    }
    s->ntargets = alerts_admit(s->alerts, s->silences, m, s->alert_targets, s->ntargets,
                               &s->alert_id, clock_wall_ms());
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
    /* not routed, not generated: no alert (the per-message case, no clock read) */
    if (s->ntargets || (msg_flags(am) & MSG_F_GENERATED)) admit_alert(s, am);
    /* fired by the clock (a timeout action, an absence report): nobody to pause */
    keep = s->keeping || (action ? action->trigger == PDB_TRIGGER_TIMEOUT
                                 : (msg_flags(am) & MSG_F_GENERATED) != 0);
    for (i = 0; i < s->ntargets && !s->refreshing; i++) {
        /* <cluster>: a partition's alert goes to the work queue, any node delivers it */
        if (s->cldel && cluster_delivery_publish(s->cldel, execq_name(s->ex, s->targets[i]), am))
            continue;
        execq_submit(s->ex, s->targets[i], am, keep);
    }
    if (alert) msg_unref(alert);
}

/* The store hands an alert to an executor: a resolution, or the end of a silence or inhibition. */
void
server_on_alert_notify(void *arg, const char *executor, const struct msg *m)
{
    struct server *s = arg;

    if (execq_submit_named(s->ex, executor, m, true)) return;
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
    if (s->cldel) cluster_delivery_event(s->cldel, executor, m, ev);
}

void
server_on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
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
void
server_on_worker_emit(void *arg, struct msg *m, enum corr_emit_kind kind,
                      const struct pdb_action *action, bool keep)
{
    struct server *s = arg;
    const char *full;

    s->keeping = keep;
    server_on_emit(s, m, kind, action);
    s->keeping = false;
    if (keep && !s->paused && (full = full_queue(s))) pause_inputs(s, full);
}

void
server_on_absence(void *arg, struct msg *m)
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

void
server_on_corr_log(void *arg, const char *text)
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
    for (i = 0; i < execq_count(s->ex); i++)
        if (execq_full(s->ex, i)) return execq_name(s->ex, i);
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
    for (i = 0; i < execq_count(s->ex); i++)
        if (!execq_low(s->ex, i)) return false;
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

/* The inputs' sink (input.h). */
static void
on_input(void *arg, struct input *in, const char *data, size_t len, const char *peer)
{
    server_submit(arg, in, data, len, peer);
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
    cluster_delivery_tick(s->cldel);
    if (s->silences) silences_tick(s->silences, clock_wall_ms());
    if (s->alerts) alerts_step(s->alerts, s->silences, &s->silences_active, clock_wall_ms());
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

void
server_start_timers(struct server *s)
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
    staging_abandon(s); /* a reload waiting for the executor process is given up */
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
        server_stop_cluster(s);
        s->corr = corr_new(s->db, &(struct corr_opts){0});
    }
    if (s->workers) {
        /* the counters the metrics and `corral ctl` read stay in a corr of the loop's */
        workers_free(s->workers);
        s->workers = NULL;
        s->corr = corr_new(s->db, &(struct corr_opts){0});
    }
    /* privsep: the executor process closes its queues when the engine terminates it */
    s->closing = s->noutputs + execq_closing(s->ex) + 1;
    for (i = 0; i < s->noutputs; i++) output_close(s->outputs[i], output_closed, s);
    execq_close(s->ex, output_closed, s);
    s->noutputs = 0;
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
    unsigned k, n;

    memset(cs, 0, sizeof(*cs));
    if (!s->cluster && s->workers) {
        /* the shards and what the worker threads processed without one */
        workers_drain(s->workers);
        workers_corr_stats(s->workers, cs);
        return;
    }
    n = engines(s, all, 64);
    for (k = 0; k < n; k++) {
        struct corr_stats o;
        corr_stats(all[k], &o);
        corr_stats_add(cs, &o);
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
    return execq_count(s->ex);
}

struct queue *
server_queue_at(const struct server *s, size_t i)
{
    return execq_queue(s->ex, i);
}

void
server_set_proxy(struct server *s, struct ipcproxy *proxy)
{
    execq_set_proxy(s->ex, proxy);
}

struct ipcproxy *
server_proxy(const struct server *s)
{
    return execq_proxy(s->ex);
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
    struct cluster_delivery_stats cldel;
    struct cluster_alerts_stats clal;
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
    M_CLDEL,    /* struct cluster_delivery_stats */
    M_CLAL,     /* struct cluster_alerts_stats */
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
MGETD(m_cluster_ckpt_seconds, (double)m->cls.ckpt_us / 1e6)
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

    for (i = 0; i < execq_count(s->ex); i++)
        metrics_sample(out, d->name, "executor", execq_name(s->ex, i),
                       metrics_field(d, execq_stats(s->ex, i)));
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

/* Every metric of /metrics after those of procstat, in the order served (apiv2_metrics follows). */
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
    {"corral_cluster_out_of_order_total", "counter",
     "Messages correlated after later ones of the node that received them (a publish sent again).",
     M_CLUSTER, CLUSTER(late)},
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
    {"corral_cluster_subscribe_retries_total", "counter",
     "Times a partition's consumer was asked for again: the servers did not create it (no "
     "answer, or refused); the lease is kept meanwhile.",
     M_CLUSTER, CLUSTER(subscribe_retries)},
    {"corral_cluster_checkpoints_total", "counter",
     "Checkpoints of owned partitions written (their contexts and the sequence they cover).",
     M_CLUSTER, CLUSTER(checkpoints)},
    {"corral_cluster_checkpoints_damaged_total", "counter",
     "Checkpoints found incomplete or damaged (a chunk missing, size or SHA-256 wrong) when "
     "taking a partition over: the one before it loaded instead, or, none whole, the partition "
     "replayed from the start of the stream.",
     M_CLUSTER, CLUSTER(ckpt_damaged)},
    {"corral_cluster_replay_suppressed_total", "counter",
     "Messages replayed after taking a partition over whose output its previous owner had "
     "emitted (not emitted again).",
     M_CLUSTER, CLUSTER(suppressed)},
    {"corral_cluster_absence_sources", "gauge",
     "Sources watched by <absence> in the partitions this node owns.", M_CLUSTER,
     CLUSTER(absence_sources)},
    {"corral_cluster_absence_down", "gauge",
     "Sources of the partitions this node owns reported absent (down) now.", M_CLUSTER,
     CLUSTER(absence_down)},
    {"corral_cluster_absence_seen_published_total", "counter",
     "Copies of messages published to their host's partition for absence only (their rule "
     "correlates them in another).",
     M_CLUSTER, CLUSTER(seen_published)},
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
#define CLDEL(member) F(struct cluster_delivery_stats, member)
    {"corral_cluster_alerts_published_total", "counter",
     "Routed alerts this node published to the cluster's work queue (per executor).", M_CLDEL,
     CLDEL(published)},
    {"corral_cluster_alerts_stored_total", "counter",
     "Publishes to the work queue it acknowledged (stored, or dropped as a duplicate id).", M_CLDEL,
     CLDEL(stored)},
    {"corral_cluster_alerts_publish_failed_total", "counter",
     "Alerts the work queue did not take: submitted to this node's executors instead, or (not "
     "acknowledged in a minute) lost.",
     M_CLDEL, CLDEL(publish_failed)},
    {"corral_cluster_alerts_pulled_total", "counter",
     "Alerts this node pulled from the work queue for its executors.", M_CLDEL, CLDEL(pulled)},
    {"corral_cluster_alerts_acked_total", "counter",
     "Pulled alerts acknowledged: delivered, dead-lettered or refused by the executor's queue.",
     M_CLDEL, CLDEL(acked)},
    {"corral_cluster_alerts_returned_total", "counter",
     "Pulled alerts given back for another node: no executor of that name here.", M_CLDEL,
     CLDEL(returned)},
    {"corral_cluster_alerts_duplicates_total", "counter",
     "Copies of an alert delivered or on its way, pulled from the work queue and acknowledged "
     "without a delivery.",
     M_CLDEL, CLDEL(copies)},
    {"corral_cluster_alerts_deferred_total", "counter",
     "Pulled alerts given back to the work queue for a second: their delivery record could not "
     "be read.",
     M_CLDEL, CLDEL(deferred)},
    {"corral_cluster_alerts_redelivered_total", "counter",
     "Alerts the work queue delivered again to this node while its executor still had them.",
     M_CLDEL, CLDEL(redelivered)},
    {"corral_cluster_store_exported_total", "counter",
     "Alert changes made here and written to the cluster's bucket.", M_CLAL,
     F(struct cluster_alerts_stats, exported)},
    {"corral_cluster_store_applied_total", "counter",
     "Alert changes made on other nodes and merged into the store here.", M_CLAL,
     F(struct cluster_alerts_stats, applied)},
    {"corral_cluster_store_stale_total", "counter",
     "Alert records seen in the bucket that were not newer than the store's (this node's own "
     "writes among them): left.",
     M_CLAL, F(struct cluster_alerts_stats, stale)},
    {"corral_cluster_store_damaged_total", "counter",
     "Damaged alert records in the cluster's bucket, skipped.", M_CLAL,
     F(struct cluster_alerts_stats, damaged)},
    {"corral_cluster_store_write_errors_total", "counter",
     "Alert records the cluster's bucket refused (the alert's next change is written whole).",
     M_CLAL, F(struct cluster_alerts_stats, write_errors)},
    {"corral_cluster_store_dropped_total", "counter",
     "Alert changes not written: 65536 records were waiting for the bucket, or the servers did "
     "not answer at a stop.",
     M_CLAL, F(struct cluster_alerts_stats, dropped)},
    {"corral_cluster_partitions", "gauge", "Partitions of the cluster.", M_CLUSTER,
     .get = m_cluster_partitions},
    {"corral_cluster_partitions_owned", "gauge", "Partitions whose lease this node holds.",
     M_CLUSTER, .get = m_cluster_owned},
    {"corral_cluster_partition_owned", "gauge",
     "1 for each partition whose lease this node holds (the others are absent).", M_CLUSTER,
     .series = m_cluster_owned_parts},
    {"corral_cluster_members", "gauge", "Live nodes of the cluster, as this node sees them.",
     M_CLUSTER, .get = m_cluster_members},
    {"corral_cluster_checkpoint_bytes", "gauge",
     "Bytes of the last checkpoint of each partition this node owns, summed (contexts and rate "
     "limit buckets).",
     M_CLUSTER, CLUSTER(ckpt_bytes)},
    {"corral_cluster_checkpoint_seconds", "gauge",
     "Seconds the last checkpoint of each partition this node owns took on the event loop, "
     "summed.",
     M_CLUSTER, .getd = m_cluster_ckpt_seconds, .decimals = 6},
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
    src[M_PROXY] = execq_proxy_stats(s->ex);
    src[M_QUEUES] = execq_count(s->ex) ? s : NULL;
    if (s->cluster) cluster_node_stats(s->cluster, &m.cls);
    src[M_CLUSTER] = s->cluster ? &m.cls : NULL;
    if (s->clsil) cluster_silences_stats(s->clsil, &m.clsil);
    src[M_CLSIL] = s->clsil ? &m.clsil : NULL;
    if (s->cldel) cluster_delivery_stats(s->cldel, &m.cldel);
    src[M_CLDEL] = s->cldel ? &m.cldel : NULL;
    if (s->clal) cluster_alerts_stats(s->clal, &m.clal);
    src[M_CLAL] = s->clal ? &m.clal : NULL;
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

json_t *
server_cluster_json(struct server *s)
{
    return s->clview ? cluster_view_json(s->clview) : NULL;
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

    for (i = 0; i < execq_count(s->ex); i++) fn(execq_name(s->ex, i), execq_stats(s->ex, i), arg);
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
