/*
 * staging: start and reload, one path.  A configuration is made ready to
 * run (a stage: its rules, outputs, executors, routes, alert store and
 * inputs) without touching the running server, then committed, which
 * cannot fail; when preparing fails the running configuration stays as it
 * was.  The running state itself is server.c's (server_int.h).
 */
#include "agent/core/staging.h"
#include "agent/core/server_int.h"
#include "agent/alerting/absence.h"
#include "agent/alerting/alerts.h"
#include "agent/cluster/cluster_node.h"
#include "agent/cluster/cluster_silences.h"
#include "agent/cluster/cluster_alerts.h"
#include "agent/cluster/cluster_delivery.h"
#include "agent/cluster/cluster_view.h"
#include "agent/core/execq.h"
#include "agent/input/input.h"
#include "agent/output/output.h"
#include "agent/alerting/route.h"
#include "agent/alerting/silences.h"
#include "agent/core/workers.h"
#include "engine/alertlabels.h"
#include "engine/clock.h"
#include "engine/corr.h"
#include "engine/durable.h"
#include "engine/log.h"
#include "engine/nv.h"
#include "engine/par.h"
#include "engine/pdb.h"
#include "engine/sigma.h"
#include "engine/syslogfmt.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    struct execq_stage ex; /* per executor: reused from the running server, or opened */
    struct route_table *routes;
    struct alerts *alerts; /* empty: the running one's entries move in at commit */
    struct input **inputs; /* per input: reused, opened by prepare, or NULL: opened at commit */
    bool *input_opened; /* per input: opened by prepare (closed again if the stage is discarded) */
    bool *input_taken;  /* per running input: reused by the stage */
    size_t *input_replaces; /* per input opened at commit: the running input it replaces */
};

static void
free_outputs(struct output **outs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) output_close(outs[i], NULL, NULL);
    free(outs);
}

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

    /* the rule trees are built on as many threads as the engine has workers (its default: one a
     * core), at start and at a reload alike */
    pdb_set_build_threads(db,
                          c->engine_workers ? (unsigned)c->engine_workers : par_default_threads());
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

/* The executors, each reused from the running server when configured alike, and the routes. */
static int
prepare_executors(struct server *s, struct stage *st, struct buf *err)
{
    const struct conf *c = st->conf;
    char *dir = server_spool_dir(c);
    int rc;

    rc = execq_prepare(s->ex, &st->ex, s->conf, c, dir, err);
    free(dir);
    if (rc < 0) return -1;
    st->routes = route_new(c, st->ex.names, c->nexecutors, err);
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
        st->inputs[i] = input_open(&s->sink, s->loop, &c->inputs[i], c, err);
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
    execq_discard(&st->ex); /* what it opened closes; the running queues are untouched */
    for (i = 0; st->inputs && i < st->conf->ninputs; i++)
        if (st->inputs[i] && st->input_opened[i]) input_close(st->inputs[i]);
    free_outputs(st->outputs, st->noutputs);
    route_free(st->routes);
    alerts_free(st->alerts);
    pdb_free(st->db);
    conf_free(st->conf);
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

/*
 * <cluster>: the silences and the alert store read from the cluster's bucket, and kept there,
 * and the view of its nodes (server_start fails without).
 */
static void
start_cluster_silences(struct server *s, const struct conf *c)
{
    struct cluster_log *log;
    const struct cluster_backend *be;

    if (!s->cluster) return;
    be = cluster_node_backend(s->cluster, &log);
    s->clsil = cluster_silences_new(s->loop, be, log, s->silences, on_cluster_silences, s,
                                    &s->cluster_err);
    /* the alert store and the view of the cluster, from the same buckets */
    if (s->clsil) s->clal = cluster_alerts_new(s->loop, be, log, &s->alerts, &s->cluster_err);
    if (s->clal) s->clview = cluster_view_new(be, log, c->cluster, &s->cluster_err);
    if (!s->clview) server_stop_cluster(s);
}

/* An alert the work queue gave this node, for its executor of that name (false: none here). */
static bool
on_cluster_alert(void *arg, const char *executor, const struct msg *m)
{
    struct server *s = arg;

    /* from the work queue, which waits for its acknowledgement: nobody to pause */
    return execq_submit_named(s->ex, executor, m, true);
}

/* <cluster>: the executors pull their alerts from the cluster's work queue (server_start fails
 * without). */
static void
start_cluster_delivery(struct server *s)
{
    struct cluster_log *log;
    const struct cluster_backend *be;
    size_t i, n;
    const char **names;

    if (!s->cluster) return;
    be = cluster_node_backend(s->cluster, &log);
    n = execq_count(s->ex);
    names = xcalloc(n + 1, sizeof(*names));
    for (i = 0; i < n; i++) names[i] = execq_name(s->ex, i);
    s->cldel =
        cluster_delivery_new(s->loop, be, log, names, n, on_cluster_alert, s, &s->cluster_err);
    free(names);
    if (!s->cldel) server_stop_cluster(s);
}

/* A reload: the executors it added pull their alerts from the cluster's work queue too, and
 * those it removed no longer do. */
static void
pull_executors(struct server *s)
{
    size_t i, n;
    const char **names;

    if (!s->cldel) return;
    n = execq_count(s->ex);
    names = xcalloc(n + 1, sizeof(*names));
    for (i = 0; i < n; i++) names[i] = execq_name(s->ex, i);
    cluster_delivery_pull(s->cldel, names, n);
    free(names);
}

/* The correlation engine at start: created, and the saved state restored. */
static void
start_corr(struct server *s, const struct conf *conf)
{
    struct corr_opts copts = {0};
    size_t dropped = 0, nworkers;
    long loaded;

    log_msg(LOG_INFO, "loaded %zu rules from %zu files", pdb_nrules(s->db), pdb_nfiles(s->db));
    copts.emit = server_on_emit;
    copts.log = server_on_corr_log;
    copts.clock = steady_clock;
    copts.arg = s;
    conf_corr_limits(conf, &copts);
    if (conf->cluster) {
        struct cluster_node_opts co = {0};
        co.loop = s->loop;
        co.cc = conf->cluster;
        co.hostname = output_local_hostname();
        co.corr = &copts;
        co.emit = server_on_emit;
        co.arg = s;
        /* absence is watched by the owners of the hosts' partitions */
        co.absences = conf->absences;
        co.nabsences = conf->nabsences;
        co.max_absence_sources = conf->max_absence_sources;
        co.absence_emit = server_on_absence;
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
        wo.emit = server_on_worker_emit;
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
            in = input_open(&s->sink, s->loop, &c->inputs[i], c, &err);
            if (in) {
                buf_printf(report, "input opened: %s\n", input_name(in));
            } else {
                ok = false;
                buf_printf(report, "%s\n", buf_str(&err));
                buf_reset(&err);
                in = input_open(&s->sink, s->loop, &was, c, &err);
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

    alerts_set_notify(st->alerts, server_on_alert_notify, s);
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
    struct absence *was;

    /* executors that are gone or changed stop, handing over what they have queued (execq.h) */
    execq_commit(s->ex, &st->ex, starting ? NULL : report);
    route_free(s->routes);
    s->routes = st->routes;
    free(s->targets);
    s->targets = xcalloc(execq_count(s->ex) + 1, sizeof(*s->targets));
    free(s->alert_targets);
    s->alert_targets = xcalloc(execq_count(s->ex) + 1, sizeof(*s->alert_targets));
    if (starting)
        for (i = 0; i < execq_count(s->ex); i++)
            log_msg(LOG_INFO, "executor: %s", execq_name(s->ex, i));
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
        start_cluster_silences(s, c);
        start_cluster_delivery(s);
    } else {
        pull_executors(s);
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
    if (s->cluster)
        cluster_node_set_absence(s->cluster, c->absences, c->nabsences, c->max_absence_sources);
    s->absence = c->nabsences && !s->cluster
                     ? absence_new(c->absences, c->nabsences, c->max_absence_sources,
                                   clock_mono_ms(), server_on_absence, s)
                     : NULL;
    if (s->absence) absence_wall_clock(s->absence, clock_mono_to_wall);
    if (s->absence) absence_adopt(s->absence, was, clock_mono_ms());
    absence_free(was);
    conf_free(s->conf);
    s->conf = st->conf;
    free(st->input_taken);
    free(st->input_opened);
    free(st->input_replaces);
    server_start_timers(s);
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
        if (ok) execq_remap(s->ex);
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
        execq_stage_map(s->ex, &p->st.ex, &p->report);
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
        /* corrald runs one at a time (agent/proc/corrald.c): not expected, but never two stages */
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
    } else if (execq_stage_waits(&p->st.ex)) {
        /* the executor process reads the file itself and answers; the stage waits till then */
        p->done = done;
        p->arg = arg;
        if (execq_reload_remote(s->ex, ++s->reload_gen, on_executors_reloaded, s) == 0) {
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
staging_abandon(struct server *s)
{
    struct pending_reload *p = s->pending;

    if (!p) return;
    /* stopping: the stage is given up (the executor process's answer changes nothing then) */
    s->pending = NULL;
    stage_discard(s, &p->st);
    buf_puts(&p->report, "reload abandoned: corrald is stopping\n");
    reload_failed(s);
    p->done(p->arg, -1, buf_str(&p->report));
    buf_free(&p->report);
    free(p);
}
