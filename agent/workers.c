/*
 * workers: corrald's parallel engine (see workers.h, doc/parallel.md).
 *
 * Batches.  The loop thread copies each message its inputs read into the
 * batch being filled (raw bytes, peer, TLS peer: nothing parsed), and hands
 * the batch to the workers when it is full, at the end of every loop
 * iteration (a check handle), and with the one-second tick.  When no batch
 * is with the workers (a trickle of messages), a batch that is not full
 * waits up to linger_ms (corrald: WORKERS_LINGER_MS, 5) after its first
 * message for more: handing over a batch wakes every worker (each shard
 * walks every batch), and at a few thousand messages a second a batch per
 * message cost 2 workers 5.6 times the CPU of one (1.9 s against 0.34 s in
 * 10 s at 2,000 UDP messages a second on the 2-CPU development machine;
 * 0.57 s lingering).  The batches form a ring of queue/256 (at least 2):
 * one filling, the others with the workers or done; a batch whose messages
 * the loop has not taken back is not refilled.  That ring is the bounded
 * queue between the stages: when the batch being filled is full and cannot
 * be handed over, workers_full() says so and server.c pauses the stream
 * inputs (the rest of a read still goes in: the batch grows by that much);
 * a datagram is refused and counted.
 *
 * Each batch runs on the N threads, as in engine/par.c, in two phases:
 *   A. the threads parse and classify the batch in chunks of CHUNK, each
 *      taken by the first thread to come (syslogfmt, the peer's fields by
 *      received_normalise() as with one engine, pdb_lookup_r with its own
 *      scratch, the message's time and its owning shard: par_owner());
 *   B. once the batch is classified, thread k is shard k (a corr of its
 *      own): it walks the batch in order, advancing its time to every
 *      message's (so that its timers fire where one engine fires them) and
 *      processes the messages it owns, or its steps of one split between
 *      shards (also-correlate: par_process(), see par.c).  What it emits is
 *      recorded with its position and, for a timeout, the firing timer's
 *      key, its messages referenced.
 * The last shard done with a batch wakes the loop (uv_async).  The loop
 * takes the batches back in order, each once every shard is done with it,
 * and merges the shards' records in one engine's order (par_merge: per
 * position the timeouts in wheel order, then the input message and what it
 * generated) and calls emit for each: outputs, executors, the alert store
 * and silences see exactly what one engine would have given them, in the
 * order the loop read the messages.
 *
 * Batches are pipelined through the ring, as par.c's: a thread correlates
 * its shard's next batch as soon as that one is classified (and its shard
 * is done with the one before), else classifies a chunk of the oldest
 * batch handed over with items left, and sleeps only when there is
 * neither (worker()).  So when one shard owns most of the stateful
 * messages (one busy host's contexts), its thread only correlates while
 * the others classify the batches ahead of it, as many as the ring holds.
 * Phase A touches only its batch's items, and phase B of a batch waits for
 * all of its A, so each shard is only ever touched by its own thread; a
 * shard waiting for another's step of a split message classifies
 * meanwhile (par_sync_set_idle).  The batches' counters (chunks claimed
 * and left, shards left, batches handed over and done) are under the lock,
 * which orders every hand-over between threads: a message the loop takes
 * back is no longer touched by any worker.
 *
 * Time is the steady clock (clock_steady_ms, as corrald gives the shards'
 * corr): each batch carries the clock read when it was handed over (a message's time is its stamp,
 * at most that clock, as corr_process has it), and the tick moves every shard's time on.
 *
 * Anything else the loop thread does with the shards (state save, reload,
 * listing contexts, the metrics) first drains the workers (workers_drain):
 * they then wait on the lock, still, until the next batch.
 */
#include "agent/workers.h"
#include "engine/clock.h"
#include "engine/log.h"
#include "engine/par.h"
#include "engine/parsers.h"
#include "engine/pdb.h"
#include "engine/received.h"
#include "engine/resolver.h"
#include "engine/syslogfmt.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH 256
#define CHUNK 32 /* items a thread classifies at a time */
#define NONE  SIZE_MAX

struct item {
    struct msg *m;
    const struct pdb_rule *rule;
    uint64_t t;
    unsigned shard;
    struct par_steps steps; /* a message split between shards (also-correlate) */
    uint8_t by;             /* the thread that classified it (par_balance()) */
    size_t off, len, peer, peerlen, tls, tlslen; /* in the batch's text; NONE: absent */
    bool keep;
};

/* What one shard emitted during a batch: records for par_merge, each rec.off an index in msgs. */
struct shard_out {
    struct par_rec *recs;
    struct emitted {
        struct msg *m;
        enum corr_emit_kind kind;
        const struct pdb_action *action;
    } * msgs;
    size_t n, cap, capmsgs;
    uint64_t truncated; /* phase A, by thread */
};

struct batch {
    struct buf text;
    struct item *items;
    size_t n, cap;
    uint64_t base;  /* position of the tick (if any), then of items[0] on */
    uint64_t clock; /* ms, read when handed over */
    bool tick;
    /* under the lock */
    size_t claimed, chunks_left; /* phase A: chunks handed to a thread, chunks not classified yet */
    bool classified;
    unsigned left;         /* phase B: shards still correlating it */
    struct shard_out *out; /* per thread */
};

struct thread {
    struct workers *w;
    unsigned index;
    pthread_t tid;
    struct corr *corr; /* NULL for a thread beyond the shards: it classifies only */
    struct pdb_scratch *scratch;
    struct buf id;
    struct batch *cur;
    uint64_t next; /* under the lock: the next batch its shard correlates */
    uint64_t pos;
    uint8_t sub;      /* par_rec.sub of what it emits */
    uint64_t busy_ns; /* read by the loop thread: atomic */
};

struct workers {
    uv_loop_t *loop;
    struct pdb *db;
    struct workers_opts o;
    struct corr_opts copts;
    char *hostname;
    struct par_route route;
    struct par_sync *sync; /* split messages: the shards' progress */
    unsigned nthreads, nshards;
    unsigned nalloc; /* threads allocated (started: nthreads) */
    struct thread *threads;
    size_t nbatches, cap;
    struct batch *ring;
    uint64_t base; /* next position */
    bool pending_tick;

    pthread_mutex_t lock;
    pthread_cond_t work, done;
    uint64_t submitted, completed; /* under lock */
    uint64_t claim;                /* under lock: the oldest handed over with chunks left */
    bool quit;
    uint64_t dispatched; /* loop thread only */
    bool dispatching;    /* in dispatch(): emit must not dispatch again */

    /* allocated apart: they outlive w until the loop has closed them */
    uv_async_t *async;
    uv_check_t *check;
    uv_timer_t *linger; /* runs from a batch's first message until it is handed over */
    uint64_t tz_gen;    /* under lock: bumped at a reload, each thread then forgets its time zone */
    struct workers_stats st;
    uint64_t drop_log_ms;
    /* merge scratch */
    const struct par_rec **mrecs;
    size_t *mn;
    struct batch *merging;
};

static uint64_t
mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- on the worker threads ---- */

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct thread *t = arg;
    struct shard_out *so = &t->cur->out[t->index];
    struct par_rec *r;

    so->recs = xgrow(so->recs, &so->cap, so->n + 1, sizeof(*so->recs));
    so->msgs = xgrow(so->msgs, &so->capmsgs, so->n + 1, sizeof(*so->msgs));
    r = &so->recs[so->n];
    r->pos = t->pos;
    r->off = so->n;
    r->len = 0;
    r->expiry = corr_firing_key(t->corr, r->key);
    if (!r->expiry) memset(r->key, 0, sizeof(r->key));
    r->sub = r->expiry ? 0 : t->sub;
    /* the loop thread takes this reference back once the batch is done */
    so->msgs[so->n].m = msg_ref(m);
    so->msgs[so->n].kind = kind;
    so->msgs[so->n].action = action;
    so->n++;
}

static void
classify_item(struct workers *w, struct thread *t, const struct batch *b, struct item *it)
{
    struct shard_out *so = &b->out[t->index];
    struct received_from from;

    syslogfmt_parse(it->m, b->text.p + it->off, it->len, NULL);
    from.peer = it->peer != NONE ? b->text.p + it->peer : NULL;
    from.peerlen = it->peerlen;
    from.tls_peer = it->tls != NONE ? b->text.p + it->tls : NULL;
    from.tls_peerlen = it->tlslen;
    from.hostname = w->hostname;
    received_normalise(it->m, &from);
    if (msg_flags(it->m) & MSG_F_TRUNCATED) so->truncated++;
    it->rule = pdb_lookup_r(w->db, it->m, t->scratch);
    it->t = corr_msg_time(it->m, b->clock);
    it->shard = par_owner_steps(&w->route, it->m, it->rule, &t->id, &it->steps);
    it->by = (uint8_t)t->index;
}

static size_t
nchunks(const struct batch *b)
{
    return (b->n + CHUNK - 1) / CHUNK;
}

static void balance(struct workers *w, struct batch *b);

/*
 * Phase A, with w->lock held: classifies a chunk of the oldest batch handed
 * over with items left (dropping the lock meanwhile), if there is one.
 * Chunks are taken by whichever thread comes first, not a fixed slice each:
 * a thread whose shard lags (one busy host's contexts) finds the batches
 * classified by the others when it arrives (doc/parallel.md, Figures).  The
 * thread that classifies a batch's last chunk balances it and releases it
 * to the shards.
 */
static bool
classify_chunk(struct workers *w, struct thread *t)
{
    struct batch *b;
    size_t c, i, to;

    /* the batches done are classified, and the slot of one the loop took back may be filling */
    if (w->claim < w->completed) w->claim = w->completed;
    while (w->claim < w->submitted &&
           w->ring[w->claim % w->nbatches].claimed == nchunks(&w->ring[w->claim % w->nbatches]))
        w->claim++;
    if (w->claim == w->submitted) return false;
    b = &w->ring[w->claim % w->nbatches];
    c = b->claimed++;
    pthread_mutex_unlock(&w->lock);
    to = (c + 1) * CHUNK < b->n ? (c + 1) * CHUNK : b->n;
    for (i = c * CHUNK; i < to; i++) {
        /* the items' messages were last read and written by other threads
         * (their shard, the loop): own them ahead of the reset */
        if (i + 8 < to) msg_prefetch(b->items[i + 8].m, false, true);
        if (i + 4 < to) msg_prefetch(b->items[i + 4].m, true, true);
        classify_item(w, t, b, &b->items[i]);
    }
    pthread_mutex_lock(&w->lock);
    if (--b->chunks_left == 0) {
        balance(w, b);
        b->classified = true;
        pthread_cond_broadcast(&w->work);
    }
    return true;
}

/*
 * A shard waiting for another's step of a split message (par_process())
 * classifies a chunk of a later batch meanwhile: classifying waits for no
 * shard.
 */
static bool
idle_classify(void *arg, unsigned self)
{
    struct workers *w = arg;
    bool did;

    pthread_mutex_lock(&w->lock);
    did = classify_chunk(w, &w->threads[self]);
    pthread_mutex_unlock(&w->lock);
    return did;
}

/* Messages that need no shard's state: as the parallel engine gives them (par_balance()). */
static void
balance(struct workers *w, struct batch *b)
{
    par_balance(b->items, b->n, sizeof(*b->items), offsetof(struct item, shard),
                offsetof(struct item, by), w->nshards);
}

/* Phase B: shard t->index's part of batch b (classified), after its part of the batch before. */
static void
correlate(struct workers *w, struct thread *t, struct batch *b, unsigned nshards)
{
    size_t i;

    t->cur = b;
    if (b->tick) {
        t->pos = b->base;
        corr_tick(t->corr);
    }
    for (i = 0; i < b->n; i++) {
        struct item *it = &b->items[i];
        /* another thread classified them: ask for the messages this shard owns ahead */
        if (i + 8 < b->n && b->items[i + 8].shard == t->index)
            msg_prefetch(b->items[i + 8].m, false, false);
        if (i + 4 < b->n && b->items[i + 4].shard == t->index)
            msg_prefetch(b->items[i + 4].m, true, false);
        t->pos = b->base + (b->tick ? 1 : 0) + i;
        corr_note_clock(t->corr, b->clock);
        corr_advance(t->corr, it->t);
        /* its part of the message, if any; timers numbered by position and step (see par.c) */
        par_process(t->corr, t->index, nshards, w->sync, t->pos, it->m, it->rule, it->t, it->shard,
                    &it->steps, &t->sub);
    }
}

/*
 * A thread takes work in this order (as par.c's): its shard's next batch
 * if it is classified (correlation is each shard's own sequence: a shard
 * that lags should not also classify), else a chunk of the oldest batch
 * with items left to classify, else it sleeps.  A thread beyond the shards
 * only classifies.  The last shard done with a batch wakes the loop.
 */
static void *
worker(void *arg)
{
    struct thread *t = arg;
    struct workers *w = t->w;
    uint64_t tz = 0, t0;
    unsigned nshards;
    struct batch *b;
    bool last;

    resolver_off_thread(); /* see corrald.conf(5), <engine> */
    pthread_mutex_lock(&w->lock);
    for (;;) {
        if (tz != w->tz_gen) {
            tz = w->tz_gen;
            syslogfmt_tz_reset(); /* this thread's cache: a reload reads the time zone anew */
        }
        /* a thread that was not a shard (before a reload) has nothing of the batches done */
        if (t->next < w->completed) t->next = w->completed;
        nshards = w->nshards;
        if (t->index < nshards && t->next < w->submitted &&
            w->ring[t->next % w->nbatches].classified) {
            b = &w->ring[t->next % w->nbatches];
            pthread_mutex_unlock(&w->lock);
            t0 = mono_ns();
            correlate(w, t, b, nshards);
            __atomic_add_fetch(&t->busy_ns, mono_ns() - t0, __ATOMIC_RELAXED);
            pthread_mutex_lock(&w->lock);
            t->next++;
            last = --b->left == 0;
            if (last) {
                w->completed++;
                pthread_cond_broadcast(&w->done);
                pthread_mutex_unlock(&w->lock);
                uv_async_send(w->async);
                pthread_mutex_lock(&w->lock);
            }
            continue;
        }
        /* timed here: a chunk classified while a split step waits is in correlate()'s time */
        t0 = mono_ns();
        if (classify_chunk(w, t)) {
            __atomic_add_fetch(&t->busy_ns, mono_ns() - t0, __ATOMIC_RELAXED);
            continue;
        }
        if (w->quit) break;
        pthread_cond_wait(&w->work, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    template_scratch_release();
    parser_match_data_release();
    return NULL;
}

/* ---- on the loop thread ---- */

static struct batch *
filling(struct workers *w)
{
    return &w->ring[(w->submitted) % w->nbatches]; /* submitted only changes on this thread */
}

static int
dispatch_rec(void *arg, unsigned k, const struct par_rec *r)
{
    struct workers *w = arg;
    struct batch *b = w->merging;
    struct emitted *e = &b->out[k].msgs[r->off];
    uint64_t first = b->base + (b->tick ? 1 : 0);
    bool keep = !r->expiry && r->pos >= first && b->items[r->pos - first].keep;

    /* a shard's records come mostly in the order of its messages, which it
     * wrote on another core: ask for the next ones ahead of the emit */
    if (r->off + 8 < b->out[k].n) __builtin_prefetch(b->out[k].msgs[r->off + 8].m);
    w->o.emit(w->o.arg, e->m, e->kind, e->action, keep);
    return 0;
}

/* Hands back the batches done, in order; their slots can be filled again. */
static void
dispatch(struct workers *w)
{
    uint64_t completed;
    unsigned k;
    size_t i;

    if (w->dispatching) return;
    w->dispatching = true;
    pthread_mutex_lock(&w->lock);
    completed = w->completed;
    pthread_mutex_unlock(&w->lock);
    while (w->dispatched < completed) {
        struct batch *b = &w->ring[w->dispatched % w->nbatches];
        for (k = 0; k < w->nthreads; k++) {
            w->mrecs[k] = b->out[k].recs;
            w->mn[k] = b->out[k].n;
            w->st.truncated += b->out[k].truncated;
        }
        w->merging = b;
        par_merge(w->mrecs, w->mn, w->nthreads, dispatch_rec, w);
        for (k = 0; k < w->nthreads; k++) {
            struct shard_out *so = &b->out[k];
            for (i = 0; i < so->n; i++) msg_unref(so->msgs[i].m);
            so->n = 0;
            so->truncated = 0;
        }
        b->n = 0;
        b->tick = false;
        buf_reset(&b->text);
        w->dispatched++;
    }
    w->dispatching = false;
}

/* Hands the batch being filled to the workers, if it holds anything and a slot is free. */
static void
submit(struct workers *w)
{
    struct batch *b = filling(w);

    if (!b->n && !w->pending_tick) return;
    /* the next batch to fill must be free: taken back by the loop */
    if (w->submitted + 1 - w->dispatched >= w->nbatches) return;
    b->tick = w->pending_tick;
    w->pending_tick = false;
    b->base = w->base;
    w->base += b->n + (b->tick ? 1 : 0);
    b->clock = clock_steady_ms();
    w->st.batches++;
    uv_timer_stop(w->linger);
    pthread_mutex_lock(&w->lock);
    b->claimed = 0;
    b->chunks_left = nchunks(b);
    b->classified = b->chunks_left == 0; /* a tick alone */
    b->left = w->nshards;
    w->submitted++;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->lock);
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
 * After every loop iteration: hands over the batch being filled, unless
 * no batch is with the workers and the linger timer, started with this
 * batch's first message, is still running (see the top): then the timer
 * hands it over, if nothing has before.  A full batch went already.
 */
static void
on_check(uv_check_t *c)
{
    struct workers *w = c->data;

    if (uv_is_active((uv_handle_t *)w->linger) && !w->pending_tick && w->submitted == w->dispatched)
        return;
    submit(w);
}

bool
workers_submit(struct workers *w, const char *data, size_t len, const char *peer,
               const char *tls_peer, bool keep, bool overflow)
{
    struct batch *b = filling(w);
    struct item *it;

    if (b->n >= w->cap) {
        submit(w);
        b = filling(w);
    }
    if (b->n >= w->cap && !overflow) {
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
    if (b->n == b->cap) {
        size_t old = b->cap;
        b->items = xgrow(b->items, &b->cap, b->n + 1, sizeof(*b->items));
        for (; old < b->cap; old++) b->items[old].m = msg_new();
    }
    /* started here, not in on_check(): a message submitted before the loop's poll (from a
     * timer) must not wait for the poll's next event */
    if (!b->n && w->o.linger_ms) uv_timer_start(w->linger, on_linger, w->o.linger_ms, 0);
    it = &b->items[b->n++];
    it->off = b->text.len;
    it->len = len;
    buf_append(&b->text, data, len);
    it->peer = it->tls = NONE;
    if (peer) {
        it->peer = b->text.len;
        it->peerlen = strlen(peer);
        buf_append(&b->text, peer, it->peerlen);
    }
    if (tls_peer) {
        it->tls = b->text.len;
        it->tlslen = strlen(tls_peer);
        buf_append(&b->text, tls_peer, it->tlslen);
    }
    it->keep = keep;
    if (b->n >= w->cap) submit(w);
    return true;
}

bool
workers_full(const struct workers *w)
{
    return w->ring[w->submitted % w->nbatches].n >= w->cap;
}

bool
workers_low(const struct workers *w)
{
    return w->ring[w->submitted % w->nbatches].n <= w->cap / 2;
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
        pthread_mutex_lock(&w->lock);
        while (w->completed < w->submitted) pthread_cond_wait(&w->done, &w->lock);
        pthread_mutex_unlock(&w->lock);
        /* called from an emit (dispatch() running): the shards are still, which is enough */
        if (w->dispatching) return;
        dispatch(w);
        if (!filling(w)->n && !w->pending_tick) return;
        submit(w);
    }
}

unsigned
workers_nshards(const struct workers *w)
{
    return w->nshards;
}

unsigned
workers_nthreads(const struct workers *w)
{
    return w->nthreads;
}

struct corr *
workers_shard(struct workers *w, unsigned k)
{
    return k < w->nshards ? w->threads[k].corr : NULL;
}

void
workers_get_stats(const struct workers *w, struct workers_stats *st)
{
    uint64_t q;

    *st = w->st;
    st->queued = 0;
    for (q = w->dispatched; q <= w->submitted; q++) st->queued += w->ring[q % w->nbatches].n;
}

double
workers_busy_seconds(const struct workers *w, unsigned thread)
{
    return (double)__atomic_load_n(&w->threads[thread].busy_ns, __ATOMIC_RELAXED) / 1e9;
}

struct owner_arg {
    struct workers *w;
    unsigned k;
};

static bool
owns(void *arg, const struct corr_context_info *ci)
{
    struct owner_arg *oa = arg;

    return par_context_owner(&oa->w->route, ci) == oa->k;
}

long
workers_load(struct workers *w, const char *path, size_t *dropped)
{
    long total = 0, n;
    size_t d;
    unsigned k;

    workers_drain(w);
    if (dropped) *dropped = 0;
    for (k = 0; k < w->nshards; k++) {
        struct owner_arg oa = {w, k};
        n = corr_load_some(w->threads[k].corr, path, &d, owns, &oa);
        if (n < 0) return -1; /* the same file for every shard: the first says it */
        total += n;
        if (dropped) *dropped += d;
    }
    return total;
}

static struct corr *
new_shard(struct workers *w, unsigned k)
{
    struct corr_opts c = w->copts;

    c.emit = on_emit;
    c.arg = &w->threads[k];
    /* the limits are totals: each shard its part */
    c.max_contexts = (c.max_contexts ? c.max_contexts : 1000000) / w->nshards;
    c.max_context_memory =
        (c.max_context_memory ? c.max_context_memory : (size_t)1 << 30) / w->nshards;
    c.max_rate_buckets = (c.max_rate_buckets ? c.max_rate_buckets : 1000000) / w->nshards;
    if (c.context_share) c.context_share = (c.context_share + w->nshards - 1) / w->nshards;
    if (!c.max_contexts) c.max_contexts = 1;
    if (!c.max_context_memory) c.max_context_memory = 1;
    if (!c.max_rate_buckets) c.max_rate_buckets = 1;
    if (c.context_share > c.max_contexts) c.context_share = c.max_contexts;
    return corr_new(w->db, &c);
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
    struct par_route rt;
    size_t kk, dd;
    unsigned k, n;

    workers_drain(w);
    *kept = *dropped = 0;
    (void)pdb_context_keep(db);
    for (k = 0; k < w->nshards; k++) {
        corr_set_db(w->threads[k].corr, db, &kk, &dd);
        *kept += kk;
        *dropped += dd;
    }
    w->db = db;
    pthread_mutex_lock(&w->lock);
    w->tz_gen++;
    pthread_mutex_unlock(&w->lock);
    n = par_route_init(&rt, db, w->nthreads);
    if (n != w->nshards || memcmp(rt.noid, w->route.noid, sizeof(rt.noid)) != 0) {
        const struct corr **all = xcalloc(w->nshards, sizeof(*all));
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
        for (k = 0; k < w->nshards; k++) all[k] = w->threads[k].corr;
        saved = fd >= 0 && corr_save_many(all, w->nshards, path) == 0;
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
        for (k = 0; k < w->nshards; k++) {
            corr_free(w->threads[k].corr);
            w->threads[k].corr = NULL;
        }
        w->route = rt;
        pthread_mutex_lock(&w->lock); /* the threads read it under the lock */
        w->nshards = n;
        pthread_mutex_unlock(&w->lock);
        for (k = 0; k < w->nshards; k++) w->threads[k].corr = new_shard(w, k);
        workers_load(w, path, &dd);
        unlink(path);
        buf_free(&tmp);
        log_msg(LOG_INFO, "reload: contexts moved to %u shard%s", n, n == 1 ? "" : "s");
    }
}

struct workers *
workers_new(uv_loop_t *loop, struct pdb *db, const struct workers_opts *o)
{
    struct workers *w = xcalloc(1, sizeof(*w));
    unsigned k;
    size_t i;

    w->loop = loop;
    w->db = db;
    w->o = *o;
    w->copts = *o->corr;
    w->hostname = xstrdup(o->hostname);
    w->nthreads = o->threads < 2 ? 2 : o->threads > 64 ? 64 : o->threads;
    (void)pdb_context_keep(db); /* computed now, read by every thread later */
    w->nshards = par_route_init(&w->route, db, w->nthreads);
    w->cap = o->queue < 2 * BATCH ? (o->queue + 1) / 2 : BATCH;
    if (w->cap < 1) w->cap = 1;
    w->nbatches = o->queue / w->cap;
    if (w->nbatches < 2) w->nbatches = 2;
    w->ring = xcalloc(w->nbatches, sizeof(*w->ring));
    for (i = 0; i < w->nbatches; i++) {
        struct batch *b = &w->ring[i];
        b->cap = w->cap;
        b->items = xcalloc(b->cap, sizeof(*b->items));
        for (k = 0; k < b->cap; k++) b->items[k].m = msg_new();
        b->out = xcalloc(w->nthreads, sizeof(*b->out));
    }
    w->mrecs = xcalloc(w->nthreads, sizeof(*w->mrecs));
    w->sync = par_sync_new(w->nthreads); /* as many as the shards may ever be */
    par_sync_set_idle(w->sync, idle_classify, w);
    w->mn = xcalloc(w->nthreads, sizeof(*w->mn));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
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
    w->threads = xcalloc(w->nthreads, sizeof(*w->threads));
    w->nalloc = w->nthreads;
    for (k = 0; k < w->nthreads; k++) {
        struct thread *t = &w->threads[k];
        t->w = w;
        t->index = k;
        t->scratch = pdb_scratch_new();
        if (k < w->nshards) t->corr = new_shard(w, k);
    }
    for (k = 0; k < w->nthreads; k++)
        if (pthread_create(&w->threads[k].tid, NULL, worker, &w->threads[k]) != 0) {
            log_msg(LOG_ERR, "cannot start worker thread %u", k);
            w->nthreads = k; /* workers_free joins those */
            workers_free(w);
            return NULL;
        }
    log_msg(LOG_INFO, "engine: %u workers, %u correlation shard%s, queue of %zu messages",
            w->nthreads, w->nshards, w->nshards == 1 ? "" : "s", w->cap * w->nbatches);
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
    unsigned k;
    size_t i, j;

    if (!w) return;
    workers_drain(w);
    pthread_mutex_lock(&w->lock);
    w->quit = true;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->lock);
    for (k = 0; k < w->nthreads; k++) pthread_join(w->threads[k].tid, NULL);
    for (k = 0; k < w->nalloc; k++) {
        corr_free(w->threads[k].corr);
        pdb_scratch_free(w->threads[k].scratch);
        buf_free(&w->threads[k].id);
    }
    free(w->threads);
    for (i = 0; i < w->nbatches; i++) {
        struct batch *b = &w->ring[i];
        for (j = 0; j < b->cap; j++) msg_unref(b->items[j].m);
        free(b->items);
        for (k = 0; k < w->nalloc; k++) {
            free(b->out[k].recs);
            free(b->out[k].msgs);
        }
        free(b->out);
        buf_free(&b->text);
    }
    free(w->ring);
    free(w->mrecs);
    par_sync_free(w->sync);
    free(w->mn);
    free(w->hostname);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    /* the handles are freed once the loop has closed them (at a failed start, never: the
     * process is ending, and the loop still holds them) */
    uv_close((uv_handle_t *)w->async, handle_closed);
    uv_close((uv_handle_t *)w->check, handle_closed);
    uv_close((uv_handle_t *)w->linger, handle_closed);
    free(w);
}
