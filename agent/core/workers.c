/*
 * workers: corrald's parallel engine (see workers.h, doc/parallel.md): the
 * loop's side of the pipeline (engine/pipeline.c), which parses, normalises,
 * classifies and correlates the messages on the worker threads and hands
 * them back in one engine's order.
 *
 * Batches.  The loop thread copies each message its inputs read into the
 * batch being filled (raw bytes, peer, TLS peer: nothing parsed), and hands
 * the batch to the workers when it is full.  A batch that is not full goes
 * only while no batch is with the workers (see submit()): when the last one
 * comes back, with the one-second tick, or at the end of a loop iteration (a
 * check handle), but then only linger_ms (corrald: WORKERS_LINGER_MS, 5)
 * after its first message: handing over a batch wakes every worker (each
 * shard walks every batch), and at a few thousand messages a second a batch
 * per message cost 2 workers 5.6 times the CPU of one (1.9 s against 0.34 s
 * in 10 s at 2,000 UDP messages a second on the 2-CPU development machine;
 * 0.57 s lingering).  The batches form a ring of queue/256 (at least 2): one
 * filling, the others with the workers or done; a batch whose messages the
 * loop has not taken back is not refilled.  That ring is the bounded queue
 * between the stages: when the batch being filled is full and cannot be
 * handed over, workers_full() says so and server.c pauses the stream inputs
 * (the rest of a read still goes in: the batch grows by that much); a
 * datagram is refused and counted.
 *
 * The last shard done with a batch wakes the loop (uv_async, the pipeline's
 * ready callback).  The loop takes the batches back in order and calls emit
 * for each message: outputs, executors, the alert store and silences see
 * exactly what one engine would have given them, in the order the loop
 * read the messages.
 *
 * Time is the steady clock (clock_steady_ms, as corrald gives the shards'
 * corr): each batch carries the clock read when it was handed over (a
 * message's time is its stamp, at most that clock, as corr_process has it),
 * and the tick moves every shard's time on.
 *
 * Anything else the loop thread does with the shards (state save, reload,
 * listing contexts, the metrics) first drains the workers (workers_drain):
 * they then wait on the lock, still, until the next batch.
 */
#include "agent/core/workers.h"
#include "engine/clock.h"
#include "engine/log.h"
#include "engine/par.h"
#include "engine/pdb.h"
#include "engine/pipeline.h"
#include "engine/resolver.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 256

struct workers {
    uv_loop_t *loop;
    struct pipeline *pl;
    struct workers_opts o;
    char *hostname;
    size_t cap; /* messages a batch takes before it is full */
    bool pending_tick;
    /* allocated apart: they outlive w until the loop has closed them */
    uv_async_t *async;
    uv_check_t *check;
    uv_timer_t *linger; /* runs from a batch's first message until it is handed over */
    struct workers_stats st;
    uint64_t drop_log_ms;
};

/* ---- on the worker threads ---- */

static void
on_ready(void *arg)
{
    struct workers *w = arg;

    uv_async_send(w->async);
}

static void
on_thread_start(void *arg, unsigned thread)
{
    (void)arg;
    (void)thread;
    resolver_off_thread(); /* see corrald.conf(5), <engine> */
}

/* ---- on the loop thread ---- */

static int
deliver(void *arg, const struct pipeline_out *o)
{
    struct workers *w = arg;

    w->o.emit(w->o.arg, o->m, o->kind, o->action, o->keep);
    return 0;
}

/* Hands back the batches done, in order; their slots can be filled again. */
static void
dispatch(struct workers *w)
{
    (void)pipeline_collect(w->pl, deliver, w);
}

/*
 * Hands the batch being filled to the workers, if it holds anything and a
 * slot is free, and it is full or no batch is with the workers: otherwise
 * the next batch back hands it over (on_async).  So at most one batch that
 * is not full is ever with them, and the ring holds full batches: handing
 * over whatever had been read at every loop iteration, or when the linger
 * ran out, filled the ring with batches of a few messages each under load,
 * and the queue refused datagrams while nearly empty.  A tick waits the
 * same way, or goes with the next full batch.
 */
static void
submit(struct workers *w)
{
    unsigned flags = w->pending_tick ? PIPELINE_TICK : 0;

    if (!pipeline_filling(w->pl) && !flags) return;
    if (pipeline_filling(w->pl) < w->cap && pipeline_submitted(w->pl) != pipeline_collected(w->pl))
        return;
    if (!pipeline_can_submit(w->pl)) return;
    w->pending_tick = false;
    w->st.batches++;
    uv_timer_stop(w->linger);
    (void)pipeline_submit(w->pl, clock_steady_ms(), flags);
}

static void
on_async(uv_async_t *a)
{
    struct workers *w = a->data;

    dispatch(w);
    submit(w);
}

static void
on_linger(uv_timer_t *t)
{
    submit(t->data);
}

/*
 * After every loop iteration: hands over the batch being filled (as submit()
 * allows), unless the linger timer, started with this batch's first
 * message, is still running (see the top): then the timer hands it over,
 * if nothing has before.  A full batch went already.
 */
static void
on_check(uv_check_t *c)
{
    struct workers *w = c->data;

    if (uv_is_active((uv_handle_t *)w->linger) && !w->pending_tick) return;
    submit(w);
}

bool
workers_submit(struct workers *w, const char *data, size_t len, const char *peer,
               const char *tls_peer, bool keep, bool overflow)
{
    if (pipeline_filling(w->pl) >= w->cap) submit(w);
    if (pipeline_filling(w->pl) >= w->cap && !overflow) {
        uint64_t now = uv_now(w->loop);
        w->st.dropped++;
        if (!w->drop_log_ms || now - w->drop_log_ms >= 60000) {
            w->drop_log_ms = now ? now : 1;
            log_msg(LOG_WARNING,
                    "engine queue full: datagrams dropped (%llu so far, "
                    "corral_engine_dropped_total)",
                    (unsigned long long)w->st.dropped);
        }
        return false;
    }
    /* started here, not in on_check(): a message submitted before the loop's poll (from a
     * timer) must not wait for the poll's next event */
    if (!pipeline_filling(w->pl) && w->o.linger_ms)
        uv_timer_start(w->linger, on_linger, w->o.linger_ms, 0);
    if (pipeline_add(w->pl, data, len, peer, peer ? strlen(peer) : 0, tls_peer,
                     tls_peer ? strlen(tls_peer) : 0, keep) >= w->cap)
        submit(w);
    return true;
}

bool
workers_full(const struct workers *w)
{
    return pipeline_filling(w->pl) >= w->cap;
}

bool
workers_low(const struct workers *w)
{
    return pipeline_filling(w->pl) <= w->cap / 2;
}

void
workers_tick(struct workers *w)
{
    w->pending_tick = true;
    submit(w);
}

void
workers_drain(struct workers *w)
{
    for (;;) {
        pipeline_wait(w->pl, pipeline_submitted(w->pl));
        /* called from an emit (dispatch() running): the shards are still, which is enough */
        if (pipeline_collecting(w->pl)) return;
        dispatch(w);
        if (!pipeline_filling(w->pl) && !w->pending_tick) return;
        submit(w);
    }
}

unsigned
workers_nshards(const struct workers *w)
{
    return pipeline_nshards(w->pl);
}

unsigned
workers_nthreads(const struct workers *w)
{
    return pipeline_nthreads(w->pl);
}

struct corr *
workers_shard(struct workers *w, unsigned k)
{
    return pipeline_shard(w->pl, k);
}

void
workers_corr_stats(struct workers *w, struct corr_stats *cs)
{
    pipeline_stats(w->pl, cs);
}

void
workers_get_stats(const struct workers *w, struct workers_stats *st)
{
    *st = w->st;
    st->truncated = pipeline_truncated(w->pl);
    st->queued = pipeline_queued(w->pl);
}

double
workers_busy_seconds(const struct workers *w, unsigned thread)
{
    return (double)pipeline_busy_ns(w->pl, thread) / 1e9;
}

struct owner_arg {
    struct workers *w;
    unsigned k;
};

static bool
owns(void *arg, const struct corr_context_info *ci)
{
    struct owner_arg *oa = arg;

    return par_context_owner(pipeline_route(oa->w->pl), ci) == oa->k;
}

long
workers_load(struct workers *w, const char *path, size_t *dropped)
{
    long total = 0, n;
    size_t d;
    unsigned k;

    workers_drain(w);
    if (dropped) *dropped = 0;
    for (k = 0; k < pipeline_nshards(w->pl); k++) {
        struct owner_arg oa = {w, k};
        n = corr_load_some(pipeline_shard(w->pl, k), path, &d, owns, &oa);
        if (n < 0) return -1; /* the same file for every shard: the first says it */
        total += n;
        if (dropped) *dropped += d;
    }
    pipeline_loaded(w->pl);
    return total;
}

/*
 * The rules change: every shard takes the new ones; when they route
 * messages differently (another number of shards, rate limits that key
 * without the id), the contexts move to their new owners through a
 * temporary state file.
 */
void
workers_set_db(struct workers *w, struct pdb *db, const char *near, size_t *kept, size_t *dropped)
{
    const struct par_route *cur;
    struct par_route rt;
    size_t dd;
    unsigned k, nshards;

    workers_drain(w);
    pipeline_set_db(w->pl, db, &rt, kept, dropped);
    cur = pipeline_route(w->pl);
    nshards = pipeline_nshards(w->pl);
    if (rt.nshards != nshards || memcmp(rt.noid, cur->noid, sizeof(rt.noid)) != 0) {
        const struct corr **all = xcalloc(nshards, sizeof(*all));
        struct buf tmp = BUF_INIT;
        char *path;
        int fd;
        bool saved;

        /* beside the state file: a directory of corrald's own, on disk (else $TMPDIR or /tmp) */
        if (near)
            buf_printf(&tmp, "%s.reshard-XXXXXX", near);
        else
            buf_printf(&tmp, "%s/corrald-reshard-XXXXXX",
                       getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        path = (char *)buf_str(&tmp);
        fd = mkstemp(path);
        for (k = 0; k < nshards; k++) all[k] = pipeline_shard(w->pl, k);
        saved = fd >= 0 && corr_save_many(all, nshards, path) == 0;
        free(all);
        if (fd >= 0) close(fd);
        if (!saved) {
            /* keep the running routing: correct for the old rules' keys, logged */
            log_msg(LOG_ERR, "reload: cannot move contexts between shards (%s): routing kept",
                    path);
            if (fd >= 0) unlink(path);
            buf_free(&tmp);
            return;
        }
        pipeline_reshard(w->pl, &rt);
        workers_load(w, path, &dd);
        unlink(path);
        buf_free(&tmp);
        log_msg(LOG_INFO, "reload: contexts moved to %u shard%s", rt.nshards,
                rt.nshards == 1 ? "" : "s");
    }
}

struct workers *
workers_new(uv_loop_t *loop, struct pdb *db, const struct workers_opts *o)
{
    struct workers *w = xcalloc(1, sizeof(*w));
    struct pipeline_opts po;

    w->loop = loop;
    w->o = *o;
    w->hostname = xstrdup(o->hostname);
    w->cap = o->queue < 2 * BATCH ? (o->queue + 1) / 2 : BATCH;
    if (w->cap < 1) w->cap = 1;
    w->async = xcalloc(1, sizeof(*w->async));
    w->check = xcalloc(1, sizeof(*w->check));
    uv_async_init(loop, w->async, on_async);
    w->async->data = w;
    uv_check_init(loop, w->check);
    w->check->data = w;
    uv_check_start(w->check, on_check);
    uv_unref((uv_handle_t *)w->check);
    w->linger = xcalloc(1, sizeof(*w->linger));
    uv_timer_init(loop, w->linger);
    w->linger->data = w;
    uv_unref((uv_handle_t *)w->linger);
    memset(&po, 0, sizeof(po));
    po.threads = o->threads < 2 ? 2 : o->threads > PAR_MAX_SHARDS ? PAR_MAX_SHARDS : o->threads;
    po.batch = w->cap;
    po.nbatches = (unsigned)(o->queue / w->cap);
    po.corr = *o->corr;
    po.split_limits = true; /* the limits are totals */
    po.hostname = w->hostname;
    po.ready = on_ready;
    po.thread_start = on_thread_start;
    po.arg = w;
    w->pl = pipeline_new(db, &po);
    if (!w->pl) {
        log_msg(LOG_ERR, "cannot start the worker threads");
        workers_free(w);
        return NULL;
    }
    log_msg(LOG_INFO, "engine: %u workers, %u correlation shard%s, queue of %zu messages",
            pipeline_nthreads(w->pl), pipeline_nshards(w->pl),
            pipeline_nshards(w->pl) == 1 ? "" : "s", w->cap * (po.nbatches < 2 ? 2 : po.nbatches));
    return w;
}

static void
handle_closed(uv_handle_t *h)
{
    free(h);
}

void
workers_free(struct workers *w)
{
    if (!w) return;
    if (w->pl) workers_drain(w);
    pipeline_free(w->pl);
    free(w->hostname);
    /* the handles are freed once the loop has closed them (at a failed start, never: the
     * process is ending, and the loop still holds them) */
    uv_close((uv_handle_t *)w->async, handle_closed);
    uv_close((uv_handle_t *)w->check, handle_closed);
    uv_close((uv_handle_t *)w->linger, handle_closed);
    free(w);
}
