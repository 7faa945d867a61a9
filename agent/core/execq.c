/*
 * execq: the executors' queues behind one interface, in this process or in
 * the executor process (see execq.h).  Each call picks one of the two; the
 * server never does.
 */
#include "agent/core/execq.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct execq {
    uv_loop_t *loop;
    queue_observer_fn observer;
    void *observer_arg;
    struct queue **queues; /* one per executor, in configuration order (NULLs under privsep) */
    const char **names;
    size_t n;
    /* privilege separation: the executor process's queues, by index (doc/privsep.md) */
    struct ipcproxy *proxy;
    size_t *remote; /* per executor: its index in proxy */
};

struct execq *
execq_new(uv_loop_t *loop, queue_observer_fn fn, void *arg)
{
    struct execq *q = xcalloc(1, sizeof(*q));

    q->loop = loop;
    q->observer = fn;
    q->observer_arg = arg;
    return q;
}

void
execq_free(struct execq *q)
{
    if (!q) return;
    free(q->queues);
    free(q->names);
    free(q->remote);
    free(q);
}

void
execq_set_proxy(struct execq *q, struct ipcproxy *proxy)
{
    q->proxy = proxy;
    ipcproxy_set_observer(proxy, q->observer, q->observer_arg);
}

struct ipcproxy *
execq_proxy(const struct execq *q)
{
    return q->proxy;
}

size_t
execq_count(const struct execq *q)
{
    return q->n;
}

const char *
execq_name(const struct execq *q, size_t i)
{
    return q->names[i];
}

struct queue *
execq_queue(const struct execq *q, size_t i)
{
    return q->queues[i];
}

/* ---- the per-alert path ---- */

void
execq_submit(struct execq *q, size_t i, const struct msg *m, bool keep)
{
    if (q->proxy)
        ipcproxy_submit(q->proxy, q->remote[i], m, keep);
    else if (keep)
        queue_submit_keep(q->queues[i], m);
    else
        queue_submit(q->queues[i], m);
}

bool
execq_submit_named(struct execq *q, const char *name, const struct msg *m, bool keep)
{
    size_t i;

    for (i = 0; i < execq_count(q); i++)
        if (strcmp(execq_name(q, i), name) == 0) {
            execq_submit(q, i, m, keep);
            return true;
        }
    return false;
}

bool
execq_full(const struct execq *q, size_t i)
{
    return q->proxy ? ipcproxy_full(q->proxy, q->remote[i]) : queue_full(q->queues[i]);
}

bool
execq_low(const struct execq *q, size_t i)
{
    return q->proxy ? ipcproxy_low(q->proxy, q->remote[i]) : queue_low(q->queues[i]);
}

const struct queue_stats *
execq_stats(const struct execq *q, size_t i)
{
    return q->proxy ? ipcproxy_queue_stats(q->proxy, q->remote[i]) : queue_get_stats(q->queues[i]);
}

const struct ipcproxy_stats *
execq_proxy_stats(const struct execq *q)
{
    return q->proxy ? ipcproxy_get_stats(q->proxy) : NULL;
}

/* ---- reload: prepare, then commit ---- */

/*
 * Privilege separation: the executors are the executor process's, each
 * found by name in the list it published.  When they are configured as
 * the running ones, that list is still right: mapped now.  Otherwise the
 * executor process reloads them itself first (the caller sends L, and the
 * mapping is made from its answer, execq_stage_map).
 */
static int
prepare_remote(struct execq *q, struct execq_stage *st, const struct conf *old,
               const struct conf *c, struct buf *err)
{
    const char *file = c->file ? c->file : "(built-in)";
    size_t i;
    int idx;

    st->qs.queues = xcalloc(c->nexecutors + 1, sizeof(*st->qs.queues)); /* theirs: NULL here */
    if (old && !queueset_same(old->executors, old->nexecutors, c->executors, c->nexecutors)) {
        st->remote_wait = true;
        return 0;
    }
    st->remote = xcalloc(c->nexecutors + 1, sizeof(*st->remote));
    for (i = 0; i < c->nexecutors; i++) {
        idx = ipcproxy_find(q->proxy, c->executors[i].name);
        if (idx >= 0) {
            st->remote[i] = (size_t)idx;
        } else if (old) {
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
map_remote(struct execq *q, const char *const *names, size_t n, size_t *remote, struct buf *report)
{
    size_t i;
    int idx;

    for (i = 0; i < n; i++) {
        idx = ipcproxy_find(q->proxy, names[i]);
        remote[i] = idx >= 0 ? (size_t)idx : ipcproxy_count(q->proxy);
        if (idx < 0 && report)
            buf_printf(report,
                       "executor %s: not among the executor process's (the file changed while "
                       "reloading?): its alerts are refused until the next reload\n",
                       names[i]);
    }
}

int
execq_prepare(struct execq *q, struct execq_stage *st, const struct conf *old, const struct conf *c,
              const char *spool_dir, struct buf *err)
{
    size_t i;

    st->n = c->nexecutors;
    st->names = xcalloc(c->nexecutors + 1, sizeof(*st->names));
    for (i = 0; i < c->nexecutors; i++) st->names[i] = c->executors[i].name;
    if (q->proxy) return prepare_remote(q, st, old, c, err);
    return queueset_prepare(&st->qs, q->loop, q->queues, old ? old->executors : NULL, q->n,
                            c->executors, c->nexecutors, c->file ? c->file : "(built-in)",
                            spool_dir, err);
}

bool
execq_stage_waits(const struct execq_stage *st)
{
    return st->remote_wait;
}

int
execq_reload_remote(struct execq *q, uint64_t generation, ipcproxy_reload_fn fn, void *arg)
{
    return ipcproxy_reload(q->proxy, generation, fn, arg);
}

void
execq_stage_map(struct execq *q, struct execq_stage *st, struct buf *report)
{
    st->remote = xcalloc(st->n + 1, sizeof(*st->remote));
    map_remote(q, st->names, st->n, st->remote, report);
}

void
execq_remap(struct execq *q)
{
    /* the executors run in the executor process's new list */
    if (q->remote) map_remote(q, q->names, q->n, q->remote, NULL);
}

void
execq_commit(struct execq *q, struct execq_stage *st, struct buf *report)
{
    struct queue **queues = st->qs.queues;
    size_t i;

    /*
     * Executors that are gone or changed stop.  A changed one hands what it
     * has queued to its successor (queueset.h); a gone one's spool keeps it
     * for the next start.  Under privilege separation the executor process
     * has done this already (or, unchanged, had nothing to do).
     */
    if (q->proxy) {
        st->qs.queues = NULL;
        queueset_discard(&st->qs);
    } else {
        queueset_commit(&st->qs, report);
    }
    free(q->queues);
    free(q->names);
    free(q->remote);
    q->queues = queues;
    q->remote = st->remote;
    q->names = st->names;
    q->n = st->n;
    for (i = 0; i < q->n && !q->proxy; i++)
        queue_set_observer(q->queues[i], q->observer, q->observer_arg);
    memset(st, 0, sizeof(*st));
}

void
execq_discard(struct execq_stage *st)
{
    queueset_discard(&st->qs); /* what it opened closes; the running queues are untouched */
    free(st->remote);
    free(st->names);
    memset(st, 0, sizeof(*st));
}

size_t
execq_closing(const struct execq *q)
{
    return q->proxy ? 0 : q->n;
}

void
execq_close(struct execq *q, void (*done)(void *arg), void *arg)
{
    size_t i, n = execq_closing(q);

    for (i = 0; i < n; i++) queue_close(q->queues[i], done, arg);
    q->n = 0;
}
