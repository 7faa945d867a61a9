/*
 * server: corrald's state and its per-message path.
 *
 *   input --server_submit--> syslog_parse --> corr_process --emit--> outputs
 *                                                     \--> silence tracking
 *
 * Everything runs on one libuv loop.  A message is parsed into one reused
 * struct msg, so the steady-state path allocates nothing of its own.  A
 * one-second timer moves correlation time on while the inputs are idle, and
 * another saves the correlation state periodically.
 */
#include "agent/server.h"
#include "engine/corr.h"
#include "agent/input.h"
#include "engine/json.h"
#include "engine/log.h"
#include "agent/output.h"
#include "engine/pdb.h"
#include "actions/queue.h"
#include "agent/route.h"
#include "agent/silence.h"
#include "engine/syslogfmt.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

struct server {
    uv_loop_t *loop;
    struct conf *conf;
    struct pdb *db;
    struct corr *corr;
    struct silence *silence;
    struct input **inputs;
    size_t ninputs;
    struct output **outputs;
    size_t noutputs;
    struct queue **queues; /* one per executor, in configuration order */
    const char **qnames;
    size_t nqueues;
    struct router *router;
    struct msg *msg; /* reused for every incoming message */
    uv_timer_t tick, save;
    bool timers_started;
    uint64_t received, parsed, truncated_values, reloads, reload_failures, state_saves,
        state_save_failures;
    uint64_t started_ms;
    /* shutdown */
    void (*done)(void *);
    void *done_arg;
    size_t closing;
};

static uint64_t
wall_ms(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

struct server *
server_new(uv_loop_t *loop)
{
    struct server *s = xcalloc(1, sizeof(*s));

    s->loop = loop;
    s->msg = msg_new();
    s->started_ms = wall_ms();
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
    corr_free(s->corr);
    silence_free(s->silence);
    pdb_free(s->db);
    conf_free(s->conf);
    msg_unref(s->msg);
    free(s->inputs);
    free(s->outputs);
    free(s->queues);
    free(s->qnames);
    router_free(s->router);
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

    for (i = 0; i < s->noutputs; i++) output_write(s->outputs[i], m);
}

struct routed {
    struct server *s;
    const struct msg *m;
};

static void
to_queue(size_t index, void *arg)
{
    struct routed *r = arg;

    queue_submit(r->s->queues[index], r->m);
}

static void
route(struct server *s, const struct msg *m, const struct pdb_action *action)
{
    struct routed r = {s, m};

    if (s->router) router_route(s->router, m, action, to_queue, &r);
}

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct server *s = arg;

    if (kind == CORR_INPUT && s->silence) silence_seen(s->silence, m, wall_ms());
    to_outputs(s, m);
    route(s, m, action);
}

static void
on_silence(void *arg, struct msg *m)
{
    to_outputs(arg, m);
    route(arg, m, NULL);
}

static void
on_corr_log(void *arg, const char *text)
{
    (void)arg;
    log_msg(LOG_WARNING, "%s", text);
}

void
server_submit(struct server *s, struct input *in, const char *data, size_t len, const char *peer)
{
    (void)in;
    s->received++;
    syslog_parse(s->msg, data, len, NULL);
    if (peer) msg_set(s->msg, NV_SOURCEIP, peer, strlen(peer));
    s->parsed++;
    if (msg_flags(s->msg) & MSG_F_TRUNCATED) s->truncated_values++;
    corr_process(s->corr, s->msg);
}

/* ---- timers ---- */

static void
on_tick(uv_timer_t *t)
{
    struct server *s = t->data;

    corr_tick(s->corr);
    if (s->silence) silence_tick(s->silence, wall_ms());
}

int
server_save_state(struct server *s)
{
    if (!s->conf || !s->conf->state_file || !s->corr) return 0;
    if (corr_save(s->corr, s->conf->state_file) < 0) {
        s->state_save_failures++;
        log_msg(LOG_ERR, "cannot save state to %s: %s", s->conf->state_file, strerror(errno));
        return -1;
    }
    s->state_saves++;
    return 0;
}

static void
on_save(uv_timer_t *t)
{
    server_save_state(t->data);
}

static void
start_timers(struct server *s)
{
    uint64_t every;

    if (!s->timers_started) {
        uv_timer_init(s->loop, &s->tick);
        uv_timer_init(s->loop, &s->save);
        s->tick.data = s->save.data = s;
        s->timers_started = true;
    }
    uv_timer_start(&s->tick, on_tick, 1000, 1000);
    uv_timer_stop(&s->save);
    if (s->conf->state_file && s->conf->state_interval > 0) {
        every = (uint64_t)(s->conf->state_interval * 1000);
        uv_timer_start(&s->save, on_save, every, every);
    }
}

/* ---- loading ---- */

static struct pdb *
load_rules(const struct conf *c, struct buf *err)
{
    struct pdb *db = pdb_new();
    size_t i;

    for (i = 0; i < c->nrules; i++) pdb_load(db, c->rules[i]);
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
    return db;
}

static int
open_outputs(struct server *s, const struct conf *c, struct output ***outs, size_t *n,
             struct buf *err)
{
    size_t i;

    *outs = xcalloc(c->noutputs + 1, sizeof(**outs));
    *n = 0;
    for (i = 0; i < c->noutputs; i++) {
        struct output *o = output_open(s->loop, &c->outputs[i], err);
        if (!o) {
            free_outputs(*outs, *n);
            *outs = NULL;
            *n = 0;
            return -1;
        }
        (*outs)[(*n)++] = o;
    }
    return 0;
}

/* Where executor spools live: configured, or beside the state file, or nowhere (memory only). */
static char *
spool_dir(const struct conf *c)
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

static void
queue_closed(void *arg)
{
    (void)arg;
}

/*
 * Opens the executors of conf, reusing those of old (whose configuration is
 * unchanged) from the running server.  On failure nothing changes.
 */
static int
open_executors(struct server *s, const struct conf *conf, const struct conf *old,
               struct queue ***out, const char ***names, struct router **router, struct buf *err)
{
    char *dir = spool_dir(conf);
    struct queue **qs = xcalloc(conf->nexecutors + 1, sizeof(*qs));
    const char **ns = xcalloc(conf->nexecutors + 1, sizeof(*ns));
    bool *reused = xcalloc(s->nqueues + 1, sizeof(*reused));
    size_t i, j;
    int rc = 0;

    for (i = 0; i < conf->nexecutors && rc == 0; i++) {
        const struct exconf *e = &conf->executors[i];
        ns[i] = e->name;
        for (j = 0; old && j < s->nqueues; j++)
            if (!reused[j] && exconf_equal(e, &old->executors[j])) {
                qs[i] = s->queues[j];
                reused[j] = true;
                break;
            }
        if (!qs[i]) {
            qs[i] = queue_open(s->loop, e, conf->file ? conf->file : "(built-in)", dir, err);
            if (!qs[i]) rc = -1;
        }
    }
    if (rc == 0) {
        *router = router_new(conf, ns, conf->nexecutors, err);
        if (!*router) rc = -1;
    }
    if (rc < 0) {
        for (i = 0; i < conf->nexecutors; i++) {
            bool was_reused = false;
            for (j = 0; j < s->nqueues; j++)
                if (reused[j] && s->queues[j] == qs[i]) was_reused = true;
            if (qs[i] && !was_reused) queue_close(qs[i], queue_closed, NULL);
        }
        free(qs);
        free(ns);
    } else {
        /* executors that are gone or changed stop; their spools keep what is pending */
        for (j = 0; j < s->nqueues; j++)
            if (!reused[j]) queue_close(s->queues[j], queue_closed, NULL);
        *out = qs;
        *names = ns;
    }
    free(reused);
    free(dir);
    return rc;
}

int
server_start(struct server *s, struct conf *conf, struct buf *err)
{
    struct corr_opts copts = {0};
    size_t i, dropped = 0;
    long loaded;

    s->conf = conf;
    s->db = load_rules(conf, err);
    if (!s->db) return -1;
    log_msg(LOG_INFO, "loaded %zu rules from %zu files", pdb_nrules(s->db), pdb_nfiles(s->db));
    copts.emit = on_emit;
    copts.log = on_corr_log;
    copts.arg = s;
    copts.max_contexts = conf->max_contexts;
    copts.max_context_msgs = conf->max_context_messages;
    s->corr = corr_new(s->db, &copts);
    if (conf->nsilences)
        s->silence = silence_new(conf->silences, conf->nsilences, 100000, wall_ms(), on_silence, s);

    if (conf->state_file) {
        loaded = corr_load(s->corr, conf->state_file, &dropped);
        if (loaded >= 0) {
            log_msg(LOG_INFO, "state %s: %ld open contexts restored, %zu dropped (rules gone)",
                    conf->state_file, loaded, dropped);
        } else if (errno == ENOENT) {
            log_msg(LOG_INFO, "state %s: none yet, starting afresh", conf->state_file);
        } else {
            /* keep the bad file for inspection; never refuse to start over it */
            struct buf bad = BUF_INIT;
            buf_printf(&bad, "%s.corrupt", conf->state_file);
            rename(conf->state_file, buf_str(&bad));
            log_msg(LOG_ERR, "state %s unusable (%s), moved to %s; starting afresh",
                    conf->state_file, strerror(errno), buf_str(&bad));
            buf_free(&bad);
        }
    }

    if (open_outputs(s, conf, &s->outputs, &s->noutputs, err) < 0) return -1;
    if (open_executors(s, conf, NULL, &s->queues, &s->qnames, &s->router, err) < 0) return -1;
    s->nqueues = conf->nexecutors;
    for (i = 0; i < s->nqueues; i++) log_msg(LOG_INFO, "executor: %s", s->qnames[i]);
    s->inputs = xcalloc(conf->ninputs + 1, sizeof(*s->inputs));
    for (i = 0; i < conf->ninputs; i++) {
        struct input *in = input_open(s, s->loop, &conf->inputs[i], conf, err);
        if (!in) return -1;
        s->inputs[s->ninputs++] = in;
        log_msg(LOG_INFO, "listening: %s", input_name(in));
    }
    start_timers(s);
    return 0;
}

/* ---- reload ---- */

/* A fingerprint of what a rule does, to tell changed rules from unchanged ones. */
static void
rule_fingerprint(const struct pdb_rule *r, struct buf *out)
{
    size_t i;

    buf_reset(out);
    buf_printf(out, "%s|%s|%d|%g|%s|", r->class ? r->class : "",
               r->context_id ? tpl_source(r->context_id) : "", (int)r->scope, r->timeout, r->file);
    for (i = 0; i < r->npatterns; i++) buf_printf(out, "p:%s|", r->patterns[i]);
    for (i = 0; i < r->msg.nvalues; i++)
        buf_printf(out, "v:%s=%s|", nv_name(r->msg.values[i].name, NULL),
                   tpl_source(r->msg.values[i].tpl));
    for (i = 0; i < r->msg.ntags; i++) buf_printf(out, "t:%s|", tag_name(r->msg.tags[i], NULL));
    for (i = 0; i < r->nactions; i++) {
        size_t k;
        const struct pdb_action *a = &r->actions[i];
        buf_printf(out, "a:%d:%d:%s:%u/%u:%d|", (int)a->trigger, (int)a->kind,
                   a->condition_src ? a->condition_src : "", a->rate_n, a->rate_s,
                   (int)a->message.inherit);
        for (k = 0; k < a->message.nvalues; k++)
            buf_printf(out, "%s=%s|", nv_name(a->message.values[k].name, NULL),
                       tpl_source(a->message.values[k].tpl));
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

static bool
same_output(const struct conf_output *a, const struct conf_output *b)
{
    return a->type == b->type && a->format == b->format && a->select == b->select &&
           a->tcp == b->tcp && a->queue == b->queue && !strcmp(a->name, b->name) &&
           !strcmp(a->path ? a->path : "", b->path ? b->path : "") &&
           !strcmp(a->to ? a->to : "", b->to ? b->to : "");
}

int
server_reload(struct server *s, struct conf *conf, struct buf *report)
{
    struct buf err = BUF_INIT;
    struct pdb *db = load_rules(conf, &err);
    struct input **inputs;
    struct output **outputs = NULL;
    struct queue **queues = NULL;
    const char **qnames = NULL;
    struct router *router = NULL;
    size_t ninputs = 0, noutputs = 0, i, j, kept = 0, dropped = 0;
    bool outputs_changed = conf->noutputs != s->conf->noutputs;

    s->reloads++;
    if (!db) {
        buf_printf(report, "reload failed, the running configuration stays:\n%s", buf_str(&err));
        goto fail;
    }
    for (i = 0; i < conf->noutputs && !outputs_changed; i++)
        if (!same_output(&conf->outputs[i], &s->conf->outputs[i])) outputs_changed = true;
    if (outputs_changed && open_outputs(s, conf, &outputs, &noutputs, &err) < 0) {
        buf_printf(report, "reload failed, the running configuration stays:\n%s", buf_str(&err));
        pdb_free(db);
        goto fail;
    }
    if (open_executors(s, conf, s->conf, &queues, &qnames, &router, &err) < 0) {
        buf_printf(report, "reload failed, the running configuration stays:\n%s", buf_str(&err));
        if (outputs) free_outputs(outputs, noutputs);
        pdb_free(db);
        goto fail;
    }
    router_free(s->router);
    free(s->queues);
    free(s->qnames);
    s->router = router;
    s->queues = queues;
    s->qnames = qnames;
    s->nqueues = conf->nexecutors;
    /*
     * inputs: keep those configured the same (they may hold privileged ports);
     * close the others before opening new ones, which may want the same address
     */
    inputs = xcalloc(conf->ninputs + 1, sizeof(*inputs));
    for (i = 0; i < conf->ninputs; i++)
        for (j = 0; j < s->ninputs; j++)
            if (s->inputs[j] && input_same(s->inputs[j], &conf->inputs[i])) {
                inputs[i] = s->inputs[j];
                s->inputs[j] = NULL;
                input_set_limits(inputs[i], conf);
                break;
            }
    for (j = 0; j < s->ninputs; j++)
        if (s->inputs[j]) {
            buf_printf(report, "input closed: %s\n", input_name(s->inputs[j]));
            input_close(s->inputs[j]);
        }
    for (i = 0; i < conf->ninputs; i++) {
        struct input *in = inputs[i];
        if (!in) {
            buf_reset(&err);
            in = input_open(s, s->loop, &conf->inputs[i], conf, &err);
            if (!in) {
                /* a new input that cannot open does not stop the rest of the reload */
                buf_printf(report, "input %s not opened: %s", conf->inputs[i].name, buf_str(&err));
                continue;
            }
            buf_printf(report, "input opened: %s\n", input_name(in));
        }
        inputs[ninputs++] = in;
    }
    free(s->inputs);
    s->inputs = inputs;
    s->ninputs = ninputs;
    if (outputs_changed) {
        free_outputs(s->outputs, s->noutputs);
        s->outputs = outputs;
        s->noutputs = noutputs;
        buf_printf(report, "outputs reopened (%zu)\n", noutputs);
    }

    describe_changes(s->db, db, report);
    corr_set_db(s->corr, db, &kept, &dropped);
    buf_printf(report, "contexts: %zu kept, %zu dropped (their rule is gone)\n", kept, dropped);
    pdb_free(s->db);
    s->db = db;
    silence_free(s->silence);
    s->silence = conf->nsilences ? silence_new(conf->silences, conf->nsilences, 100000, wall_ms(),
                                               on_silence, s)
                                 : NULL;
    conf_free(s->conf);
    s->conf = conf;
    syslog_tz_reset();
    start_timers(s);
    buf_free(&err);
    return 0;

fail:
    s->reload_failures++;
    conf_free(conf);
    buf_free(&err);
    return -1;
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
        }
        if (s->done) s->done(s->done_arg);
    }
}

void
server_shutdown(struct server *s, void (*done)(void *), void *arg)
{
    size_t i;

    s->done = done;
    s->done_arg = arg;
    for (i = 0; i < s->ninputs; i++) input_close(s->inputs[i]);
    s->ninputs = 0;
    if (s->timers_started) {
        uv_timer_stop(&s->tick);
        uv_timer_stop(&s->save);
    }
    /* contexts are not expired at shutdown: they go to the state file and live on */
    server_save_state(s);
    s->closing = s->noutputs + s->nqueues + 1;
    for (i = 0; i < s->noutputs; i++) output_close(s->outputs[i], output_closed, s);
    for (i = 0; i < s->nqueues; i++) queue_close(s->queues[i], output_closed, s);
    s->noutputs = 0;
    s->nqueues = 0;
    output_closed(s);
}

/* ---- metrics ---- */

static void
metric(struct buf *out, const char *name, const char *help, const char *type)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
label_value(struct buf *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') buf_putc(out, '\\');
        if (*v == '\n')
            buf_puts(out, "\\n");
        else
            buf_putc(out, *v);
    }
}

static void
input_metric(struct buf *out, struct server *s, const char *name, const char *help, size_t field)
{
    size_t i;

    metric(out, name, help, strstr(name, "_total") ? "counter" : "gauge");
    for (i = 0; i < s->ninputs; i++) {
        const struct input_stats *st = input_get_stats(s->inputs[i]);
        buf_printf(out, "%s{input=\"", name);
        label_value(out, input_name(s->inputs[i]));
        buf_printf(out, "\"} %llu\n",
                   (unsigned long long)*(const uint64_t *)((const char *)st + field));
    }
}

static void
output_metric(struct buf *out, struct server *s, const char *name, const char *help, size_t field)
{
    size_t i;

    metric(out, name, help, strstr(name, "_total") ? "counter" : "gauge");
    for (i = 0; i < s->noutputs; i++) {
        const struct output_stats *st = output_get_stats(s->outputs[i]);
        buf_printf(out, "%s{output=\"", name);
        label_value(out, output_name(s->outputs[i]));
        buf_printf(out, "\"} %llu\n",
                   (unsigned long long)*(const uint64_t *)((const char *)st + field));
    }
}

static void
queue_metric(struct buf *out, struct server *s, const char *name, const char *help, size_t field)
{
    size_t i;

    metric(out, name, help, strstr(name, "_total") ? "counter" : "gauge");
    for (i = 0; i < s->nqueues; i++) {
        const struct queue_stats *st = queue_get_stats(s->queues[i]);
        buf_printf(out, "%s{executor=\"", name);
        label_value(out, queue_name(s->queues[i]));
        buf_printf(out, "\"} %llu\n",
                   (unsigned long long)*(const uint64_t *)((const char *)st + field));
    }
}

void
server_metrics(struct server *s, struct buf *out)
{
    struct corr_stats cs;

    corr_stats(s->corr, &cs);
#define SIMPLE(name, type, help, value)                                                            \
    do {                                                                                           \
        metric(out, name, help, type);                                                             \
        buf_printf(out, "%s %llu\n", name, (unsigned long long)(value));                           \
    } while (0)
    SIMPLE("corral_uptime_seconds", "gauge", "Seconds since corrald started.",
           (wall_ms() - s->started_ms) / 1000);
    SIMPLE("corral_rules", "gauge", "Rules loaded.", pdb_nrules(s->db));
    SIMPLE("corral_messages_received_total", "counter", "Messages received from all inputs.",
           s->received);
    SIMPLE("corral_messages_parsed_total", "counter", "Messages parsed.", s->parsed);
    SIMPLE("corral_messages_matched_total", "counter", "Messages a rule classified.", cs.matched);
    SIMPLE("corral_messages_unknown_total", "counter", "Messages no rule classified.", cs.unknown);
    SIMPLE("corral_messages_generated_total", "counter", "Messages generated by rule actions.",
           cs.generated);
    SIMPLE("corral_contexts_open", "gauge", "Open correlation contexts.", cs.contexts_open);
    SIMPLE("corral_contexts_created_total", "counter", "Correlation contexts created.",
           cs.contexts_created);
    SIMPLE("corral_contexts_expired_total", "counter", "Correlation contexts that timed out.",
           cs.contexts_expired);
    SIMPLE("corral_context_bytes", "gauge", "Memory held by open contexts.", cs.context_bytes);
    metric(out, "corral_dropped_total", "Things dropped, by reason.", "counter");
    buf_printf(out, "corral_dropped_total{reason=\"context_limit\"} %llu\n",
               (unsigned long long)cs.contexts_refused);
    buf_printf(out, "corral_dropped_total{reason=\"context_full\"} %llu\n",
               (unsigned long long)cs.messages_dropped);
    buf_printf(out, "corral_dropped_total{reason=\"rate_limit\"} %llu\n",
               (unsigned long long)cs.rate_limited);
    buf_printf(out, "corral_dropped_total{reason=\"value_truncated\"} %llu\n",
               (unsigned long long)s->truncated_values);
    SIMPLE("corral_reloads_total", "counter", "Configuration reloads attempted.", s->reloads);
    SIMPLE("corral_reload_failures_total", "counter",
           "Reloads that failed (old configuration kept).", s->reload_failures);
    SIMPLE("corral_state_saves_total", "counter", "Correlation state saves.", s->state_saves);
    SIMPLE("corral_state_save_failures_total", "counter", "Failed correlation state saves.",
           s->state_save_failures);
    if (s->silence) {
        SIMPLE("corral_silence_sources", "gauge", "Sources watched for silence.",
               silence_tracked(s->silence));
        SIMPLE("corral_silence_silent", "gauge", "Sources silent now.", silence_silent(s->silence));
    }
#undef SIMPLE
    input_metric(out, s, "corral_input_messages_total", "Messages received, per input.",
                 offsetof(struct input_stats, received));
    input_metric(out, s, "corral_input_bytes_total", "Bytes received, per input.",
                 offsetof(struct input_stats, bytes));
    input_metric(out, s, "corral_input_truncated_total", "Messages cut at max-message-size.",
                 offsetof(struct input_stats, truncated));
    input_metric(out, s, "corral_input_errors_total", "Framing and read errors.",
                 offsetof(struct input_stats, errors));
    input_metric(out, s, "corral_input_connections_total", "Connections accepted.",
                 offsetof(struct input_stats, connections));
    input_metric(out, s, "corral_input_rejected_total", "Connections refused at max-connections.",
                 offsetof(struct input_stats, rejected));
    input_metric(out, s, "corral_input_idle_closed_total", "Connections closed for idling.",
                 offsetof(struct input_stats, idle_closed));
    input_metric(out, s, "corral_input_connections_active", "Connections open now.",
                 offsetof(struct input_stats, active));
    output_metric(out, s, "corral_output_written_total", "Messages written, per output.",
                  offsetof(struct output_stats, written));
    output_metric(out, s, "corral_output_dropped_total", "Messages dropped, per output.",
                  offsetof(struct output_stats, dropped));
    output_metric(out, s, "corral_output_errors_total", "Write and connection errors.",
                  offsetof(struct output_stats, errors));
    output_metric(out, s, "corral_output_queued", "Messages waiting, per output.",
                  offsetof(struct output_stats, queued));
    if (s->nqueues) {
        queue_metric(out, s, "corral_executor_submitted_total", "Alerts routed to an executor.",
                     offsetof(struct queue_stats, submitted));
        queue_metric(out, s, "corral_executor_delivered_total", "Alerts delivered.",
                     offsetof(struct queue_stats, delivered));
        queue_metric(out, s, "corral_executor_retries_total",
                     "Delivery attempts that failed for now.",
                     offsetof(struct queue_stats, retries));
        queue_metric(out, s, "corral_executor_dead_total", "Alerts given up (dead-letter file).",
                     offsetof(struct queue_stats, dead));
        queue_metric(out, s, "corral_executor_dropped_full_total", "Alerts refused: queue full.",
                     offsetof(struct queue_stats, dropped_full));
        queue_metric(out, s, "corral_executor_deduplicated_total", "Alerts dropped as duplicates.",
                     offsetof(struct queue_stats, deduplicated));
        queue_metric(out, s, "corral_executor_dedupe_forgotten_total",
                     "Dedupe keys forgotten before their window ended (too many keys).",
                     offsetof(struct queue_stats, dedupe_forgotten));
        queue_metric(out, s, "corral_executor_rate_limited_total", "Alerts dropped over the rate.",
                     offsetof(struct queue_stats, rate_limited));
        queue_metric(out, s, "corral_executor_queued", "Alerts waiting, per executor.",
                     offsetof(struct queue_stats, queued));
        queue_metric(out, s, "corral_executor_inflight", "Alerts being delivered now.",
                     offsetof(struct queue_stats, inflight));
        queue_metric(out, s, "corral_executor_spool_corrupt_total",
                     "Bad stretches of the spool skipped at start (records lost).",
                     offsetof(struct queue_stats, spool_corrupt));
        queue_metric(out, s, "corral_executor_spool_errors_total",
                     "Spool writes, syncs and rewrites that failed.",
                     offsetof(struct queue_stats, spool_errors));
        queue_metric(out, s, "corral_executor_memory_only_total",
                     "Alerts accepted while the spool could not be written.",
                     offsetof(struct queue_stats, memory_only));
        queue_metric(out, s, "corral_executor_unspooled",
                     "Alerts queued in memory only now (spool not writable).",
                     offsetof(struct queue_stats, unspooled));
    }
}

struct ctx_json {
    struct buf *out;
    size_t n;
};

static void
context_json(const struct corr_context_info *ci, void *arg)
{
    struct ctx_json *cj = arg;
    struct buf *out = cj->out;

    if (cj->n++) buf_putc(out, ',');
    buf_puts(out, "{\"id\":");
    json_string(out, ci->id, ci->idlen);
    buf_printf(out, ",\"scope\":\"%s\",\"host\":", pdb_scope_name(ci->scope));
    json_string(out, ci->host, ci->hostlen);
    buf_puts(out, ",\"program\":");
    json_string(out, ci->program, ci->programlen);
    buf_puts(out, ",\"pid\":");
    json_string(out, ci->pid, ci->pidlen);
    buf_puts(out, ",\"rule\":");
    json_string(out, ci->rule_id, strlen(ci->rule_id));
    buf_printf(out, ",\"messages\":%zu,\"expires_ms\":%llu}", ci->nmsgs,
               (unsigned long long)ci->expires);
}

void
server_contexts_json(struct server *s, struct buf *out)
{
    struct ctx_json cj = {out, 0};

    buf_putc(out, '[');
    corr_foreach(s->corr, context_json, &cj);
    buf_puts(out, "]\n");
}
