/*
 * pipeline: the parallel correlation pipeline (see pipeline.h and
 * doc/parallel.md).
 *
 * Batches.  The caller copies each message into the batch being filled
 * (raw bytes, peer, TLS peer: nothing parsed) and hands it over
 * (pipeline_submit) with the clock it was read at.  The batches form a ring
 * of nbatches: one filling, the others with the threads or done; a slot is
 * refilled only once the caller has collected its batch, so the ring is the
 * bounded queue between the caller and the threads (corrald pauses its
 * inputs when it is full; corral match waits).
 *
 * Each batch runs on the N threads in two phases:
 *   A. parse and classify, in chunks of CHUNK messages that any thread takes
 *      (classify_chunk()): syslogfmt, the peer's fields (received_normalise(),
 *      as one engine does it), the rule (pdb_lookup_r, the thread's own
 *      scratch), the time the message moves correlation to (corr_msg_time)
 *      and the shard that owns it (par_owner_steps()).  A message that needs
 *      no shard's state (no context, rate limit or action: solo()) the
 *      thread processes at once, on a corr of its own that never holds any,
 *      into an output of its own: parsed into the thread's own message
 *      (hot), it never leaves that core's cache.  Any other message keeps
 *      the hot one, and the thread takes the slot's message in exchange:
 *      one another core wrote last (its shard, or corrald's loop), which
 *      the thread asks for ahead and parses into two exchanges later (the
 *      spares).  The thread that classifies a batch's last chunk balances
 *      the rest (par_balance()) and releases it to the shards.
 *   B. correlate, once the whole batch is classified: thread k is shard k, a
 *      corr of its own.  It walks the whole batch in input order, moving its
 *      time through every message's (so that its timeouts fire at exactly
 *      the input position where they fire with one engine), and processes
 *      the messages it owns, or its steps of one split between shards
 *      (par_process()).  Of a message it does not own it reads only the
 *      time, packed apart from the items (struct when), and moves its own
 *      time there only when a timeout of its own may fire
 *      (correlate()).  What it emits is rendered into its own buffer (with
 *      a render function, corral match) or referenced (corrald), with a
 *      record: input position, whether a timeout fired it, and the firing
 *      timer's key.
 * The last shard done with a batch calls ready (corrald wakes its loop)
 * and wakes a caller waiting for it.  The caller collects the batches in
 * order, merging the shards' records and the threads' own (solo) into one
 * engine's order (par_merge:
 * per position the timeouts in wheel order, then the input message and
 * what it generated).  The output is that of one engine; nothing is sorted
 * after the fact.
 *
 * Batches are pipelined through the ring: a thread correlates its shard's
 * next batch as soon as that one is classified, else classifies a chunk of
 * the oldest batch handed over with messages left, and sleeps only when
 * there is neither (worker()).  So when one shard owns most of the stateful
 * messages (one busy host's contexts under a host-scoped rate limit), its
 * thread only correlates while the others classify the batches ahead of it,
 * as many as the ring holds.  Phase A touches only its batch's messages and
 * phase B of a batch waits for all of its A, so each shard is only ever
 * touched by its own thread; a shard waiting for another's step of a split
 * message classifies meanwhile (par_sync_set_idle).  The counters (chunks
 * claimed and left, shards left, batches handed over and done) are under
 * the lock, which orders every hand-over between threads: a batch the
 * caller collects is no longer touched by any thread.
 *
 * The number of shards may change at a reload (pipeline_reshard); a thread
 * beyond the shards only classifies.
 *
 * The per-message path allocates nothing once the batches' buffers have
 * grown: slots keep their message, outputs their buffers and records.
 */
#include "engine/pipeline.h"
#include "engine/parsers.h"
#include "engine/pdb.h"
#include "engine/received.h"
#include "engine/sigma.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK 32 /* messages a thread classifies at a time */
#define NONE  SIZE_MAX

struct item {
    struct msg *m;
    const struct pdb_rule *rule;
    unsigned shard; /* owner (of step 0 if split) */
    struct par_steps steps;
    uint8_t by; /* the thread that classified it (par_balance()) */
    bool keep;
    size_t off, len, peer, peerlen, tls, tlslen; /* in the batch's text; NONE: absent */
};

/*
 * What every shard reads of every message of a batch in phase B, packed
 * apart from the items: a shard reads a message's item only if it owns a
 * part of it, and otherwise only its time (correlate()).
 */
struct when {
    uint64_t t;      /* corr_msg_time() */
    uint64_t owners; /* bit k: shard k owns the message or a step of it (after par_balance()) */
};

/* What one shard emitted during a batch: records for par_merge, each rec.off into text (rendered)
 * or an index in msgs (referenced). */
struct shard_out {
    struct par_rec *recs;
    struct emitted {
        struct msg *m;
        enum corr_emit_kind kind;
        const struct pdb_action *action;
    } * msgs;
    struct buf text;
    size_t n, cap, capmsgs;
    uint64_t truncated; /* phase A, by thread */
};

struct batch {
    struct buf text;
    struct item *items;
    struct when *when; /* cap of them */
    size_t n, cap;
    uint64_t base;  /* position of the tick (if any), then of items[0] on */
    uint64_t clock; /* ms, given when handed over */
    unsigned flags;
    /* under the lock */
    size_t claimed, chunks_left; /* phase A: chunks handed to a thread, chunks not classified yet */
    bool classified;
    unsigned left;         /* phase B: shards still correlating it */
    struct shard_out *out; /* nout: per thread its shard's, then per thread its solo output */
};

/* Where a corr's emissions go: its thread's output for the batch in hand, at the input position. */
struct emitter {
    struct pipeline *p;
    struct corr *corr;
    struct shard_out *out;
    uint64_t pos;
    uint8_t sub; /* par_rec.sub of what it emits */
};

struct thread {
    struct pipeline *p;
    unsigned index;
    pthread_t tid;
    struct corr *corr;    /* NULL for a thread beyond the shards: it classifies only */
    struct emitter em;    /* corr's */
    struct corr *solo;    /* the messages that need no state, as it classifies them */
    struct msg *hot;      /* the message it parses into next */
    struct msg *spare[2]; /* the ones after, asked for ahead (classify_chunk()) */
    struct emitter solo_em;
    struct pdb_scratch *scratch;
    struct buf id;
    uint64_t next;    /* under the lock: the next batch its shard correlates */
    uint64_t busy_ns; /* read by any thread: atomic */
};

struct pipeline {
    struct pdb *db;
    struct pipeline_opts o;
    struct par_route route;
    struct par_sync *sync; /* split messages: the shards' progress */
    unsigned nthreads, nshards;
    unsigned nalloc; /* threads allocated (started: nthreads) */
    unsigned nout;   /* outputs of a batch: each thread's shard's, then each thread's solo */
    bool solo;       /* threads process the messages that need no state as they classify them */
    struct thread *threads;
    unsigned nbatches;
    struct batch *ring;

    /* the caller's, on cache lines the threads do not write: the loop thread reads them for
     * every message it adds (a copy of submitted beside the lock cost corrald's loop a cache
     * miss a message) */
    uint64_t base;       /* the next position */
    uint64_t nsubmitted; /* = submitted */
    struct batch *fill;  /* the batch being filled: ring[nsubmitted % nbatches] */
    uint64_t collected;
    bool collecting;
    uint64_t truncated;
    /* merge scratch */
    const struct par_rec **mrecs;
    size_t *mn;
    struct batch *merging;
    size_t merge_left; /* records of merging not delivered yet */
    pipeline_deliver_fn deliver;
    void *deliver_arg;
    char pad[64];

    pthread_mutex_t lock;
    pthread_cond_t work, done;
    uint64_t submitted, completed; /* under lock (submitted changes on the caller's thread only) */
    uint64_t claim;                /* under lock: the oldest handed over with chunks left */
    uint64_t want;                 /* under lock: a caller waits until this many are done */
    uint64_t tz_gen; /* under lock: bumped at a reload, each thread then forgets its time zone */
    bool quit;

    /* the counts of events of the shards a reshard replaced, so that the totals only grow; the
     * contexts they held are loaded into the new shards, which count them created again */
    struct corr_stats retired;
    bool resharded; /* until pipeline_loaded(): the new shards' created contexts are moved ones */
};

static uint64_t
mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- on the threads ---- */

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct emitter *em = arg;
    struct shard_out *so = em->out;
    struct pipeline *p = em->p;
    struct par_rec *r;

    so->recs = xgrow(so->recs, &so->cap, so->n + 1, sizeof(*so->recs));
    r = &so->recs[so->n];
    r->pos = em->pos;
    if (p->o.render) {
        r->off = so->text.len;
        p->o.render(p->o.arg, m, kind, action, &so->text);
        r->len = so->text.len - r->off;
    } else {
        so->msgs = xgrow(so->msgs, &so->capmsgs, so->n + 1, sizeof(*so->msgs));
        r->off = so->n;
        r->len = 0;
        /* the collecting thread takes this reference back */
        so->msgs[so->n].m = msg_ref(m);
        so->msgs[so->n].kind = kind;
        so->msgs[so->n].action = action;
    }
    r->expiry = corr_firing_key(em->corr, r->key);
    if (!r->expiry) memset(r->key, 0, sizeof(r->key));
    r->sub = r->expiry ? 0 : em->sub;
    so->n++;
}

static void
classify_item(struct pipeline *p, struct thread *t, const struct batch *b, struct item *it,
              struct when *w)
{
    syslogfmt_parse(it->m, b->text.p + it->off, it->len, &p->o.parse);
    if (p->o.hostname) {
        struct received_from from;
        from.peer = it->peer != NONE ? b->text.p + it->peer : NULL;
        from.peerlen = it->peerlen;
        from.tls_peer = it->tls != NONE ? b->text.p + it->tls : NULL;
        from.tls_peerlen = it->tlslen;
        from.hostname = p->o.hostname;
        received_normalise(it->m, &from);
    }
    if (msg_flags(it->m) & MSG_F_TRUNCATED) b->out[t->index].truncated++;
    it->rule = pdb_lookup_r(p->db, it->m, t->scratch);
    w->t = corr_msg_time(it->m, b->clock);
    it->shard = par_owner_steps(&p->route, it->m, it->rule, &t->id, &it->steps);
    it->by = (uint8_t)t->index;
}

/* The input position of the batch's first message (after its tick, if any). */
static uint64_t
first_pos(const struct batch *b)
{
    return b->base + (b->flags & PIPELINE_TICK ? 1 : 0);
}

/*
 * Whether a classified message needs nothing of any shard: no context, no
 * rate limit, no action.  Such a message is processed at once by the thread
 * that classified it, while it is in that core's cache: its output is the
 * message alone, whatever the shard and its time.
 */
static bool
solo(const struct item *it)
{
    return it->shard == PAR_ANY_SHARD && !it->steps.n && (!it->rule || !it->rule->nactions);
}

static size_t
nchunks(const struct batch *b)
{
    return (b->n + CHUNK - 1) / CHUNK;
}

/* The shards that own each message of a balanced batch, or a step of it. */
static void
set_owners(struct batch *b)
{
    size_t i;
    unsigned s;

    for (i = 0; i < b->n; i++) {
        const struct item *it = &b->items[i];
        uint64_t o = it->shard < PAR_MAX_SHARDS ? 1ull << it->shard : 0;
        for (s = 0; s < it->steps.n; s++)
            if (it->steps.owner[s] < PAR_MAX_SHARDS) o |= 1ull << it->steps.owner[s];
        b->when[i].owners = o;
    }
}

/*
 * Phase A, with p->lock held: classifies a chunk of the oldest batch handed
 * over with messages left (dropping the lock meanwhile), if there is one.
 * Chunks are taken by whichever thread comes first, not a fixed slice each:
 * a thread whose shard lags finds the batches classified by the others when
 * it arrives (doc/parallel.md).  The thread that classifies a batch's last
 * chunk balances it and releases it to the shards.
 */
static bool
classify_chunk(struct pipeline *p, struct thread *t)
{
    struct batch *b;
    size_t c, i, to;
    bool solo_on;

    /* the batches done are classified, and the slot of one the caller collected may be filling:
     * never look at it through a claim left behind (a batch with nothing to classify, a tick
     * alone, leaves the claim where it was) */
    if (p->claim < p->completed) p->claim = p->completed;
    while (p->claim < p->submitted &&
           p->ring[p->claim % p->nbatches].claimed == nchunks(&p->ring[p->claim % p->nbatches]))
        p->claim++;
    if (p->claim == p->submitted) return false;
    b = &p->ring[p->claim % p->nbatches];
    c = b->claimed++;
    solo_on = p->solo;
    pthread_mutex_unlock(&p->lock);
    to = (c + 1) * CHUNK < b->n ? (c + 1) * CHUNK : b->n;
    for (i = c * CHUNK; i < to; i++) {
        struct item *it = &b->items[i];
        struct msg *slot = it->m;
        if (!solo_on) {
            /* the items' messages were last read and written by other threads
             * (their shard, the collecting one): own them ahead of the reset */
            if (i + 8 < to) msg_prefetch(b->items[i + 8].m, false, true);
            if (i + 4 < to) msg_prefetch(b->items[i + 4].m, true, true);
            classify_item(p, t, b, it, &b->when[i]);
            continue;
        }
        it->m = t->hot;
        classify_item(p, t, b, it, &b->when[i]);
        if (solo(it)) {
            t->solo_em.out = &b->out[p->nalloc + t->index];
            t->solo_em.pos = first_pos(b) + i;
            corr_process_rule(t->solo, it->m, it->rule, b->when[i].t);
            it->shard = PAR_NO_SHARD;
            if (p->o.render) {
                it->m = slot;
                continue;
            }
        }
        /* the message given up is the slot's, last written by another core: parsed into at
         * once, its cache lines would arrive one store at a time (msg_set_stamp alone had 3.5% of
         * -j 2's samples).  It waits behind two spares instead, its header asked for
         * now and its body (whose address is in the header) at the next exchange, so that
         * both are here when it becomes hot */
        t->hot = t->spare[0];
        t->spare[0] = t->spare[1];
        msg_prefetch(t->spare[0], true, true);
        t->spare[1] = slot;
        msg_prefetch(slot, false, true);
    }
    pthread_mutex_lock(&p->lock);
    if (--b->chunks_left == 0) {
        par_balance(b->items, b->n, sizeof(*b->items), offsetof(struct item, shard),
                    offsetof(struct item, by), p->nshards);
        set_owners(b);
        b->classified = true;
        pthread_cond_broadcast(&p->work);
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
    struct pipeline *p = arg;
    bool did;

    pthread_mutex_lock(&p->lock);
    did = classify_chunk(p, &p->threads[self]);
    pthread_mutex_unlock(&p->lock);
    return did;
}

/*
 * Phase B: shard t->index's part of batch b (classified), after its part of
 * the batch before.  Its time moves through every message's, so that its
 * timeouts fire at the input position where one engine fires them.  But
 * moving it to a time before corr_quiet_until() fires nothing, so of a
 * message it does not own it reads only the time (when[]), and moves its
 * time there only once it reaches that bound, or before the next message it
 * processes (now: the latest time seen; the shard's own may lag behind it).
 */
static void
correlate(struct pipeline *p, struct thread *t, struct batch *b, unsigned nshards)
{
    size_t i;
    uint64_t first = first_pos(b);
    uint64_t self = 1ull << t->index, now, quiet = 0;
    bool known = false; /* quiet is up to date */

    t->em.out = &b->out[t->index];
    if (b->flags & PIPELINE_TICK) {
        t->em.pos = b->base;
        corr_tick(t->corr);
    }
    if (b->n) corr_note_clock(t->corr, b->clock);
    now = corr_now(t->corr);
    for (i = 0; i < b->n; i++) {
        const struct when *w = &b->when[i];
        struct item *it;
        /* another thread classified them: ask for the messages this shard owns ahead (alone: the
         * step of a split message before this shard's may be writing it) */
        if (i + 8 < b->n && b->when[i + 8].owners == self)
            msg_prefetch(b->items[i + 8].m, false, false);
        if (i + 4 < b->n && b->when[i + 4].owners == self)
            msg_prefetch(b->items[i + 4].m, true, false);
        if (!(w->owners & self)) {
            if (w->t <= now) continue;
            if (!known) quiet = corr_quiet_until(t->corr), known = true;
            now = w->t;
            if (now < quiet) continue;
            /* a timeout of this shard may fire here */
            t->em.pos = first + i;
            corr_advance(t->corr, now);
            known = false;
            continue;
        }
        it = &b->items[i];
        t->em.pos = first + i;
        corr_advance(t->corr, now); /* to the time of those skipped: fires nothing */
        if (w->t > now) now = w->t;
        /* its part of the message (moving time to its own first); timers numbered by position
         * and step (see par.c) */
        corr_advance(t->corr, w->t);
        par_process(t->corr, t->index, nshards, p->sync, t->em.pos, it->m, it->rule, w->t,
                    it->shard, &it->steps, &t->em.sub);
        known = false;
    }
    corr_advance(t->corr, now);
    if (b->flags & PIPELINE_EXPIRE) {
        t->em.pos = UINT64_MAX - 1;
        corr_expire_all(t->corr);
    }
}

/*
 * A thread takes work in this order: its shard's next batch if it is
 * classified (correlation is each shard's own sequence: a shard that lags
 * should not also classify), else a chunk of the oldest batch with
 * messages left to classify, else it sleeps.  A thread beyond the shards
 * only classifies.  A shard waiting for another's step of a split message
 * (par_process()) waits for a batch that is classified, so the other is
 * correlating it or will once its chunk is done, never asleep.  The last
 * shard done with a batch wakes the caller.
 */
static void *
worker(void *arg)
{
    struct thread *t = arg;
    struct pipeline *p = t->p;
    uint64_t tz = 0, t0;
    unsigned nshards;
    struct batch *b;

    if (p->o.thread_start) p->o.thread_start(p->o.arg, t->index);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (tz != p->tz_gen) {
            tz = p->tz_gen;
            syslogfmt_tz_reset(); /* this thread's cache: a reload reads the time zone anew */
        }
        /* a thread that was not a shard (before a reshard) has nothing of the batches done */
        if (t->next < p->completed) t->next = p->completed;
        nshards = p->nshards;
        if (t->index < nshards && t->next < p->submitted &&
            p->ring[t->next % p->nbatches].classified) {
            b = &p->ring[t->next % p->nbatches];
            pthread_mutex_unlock(&p->lock);
            t0 = mono_ns();
            correlate(p, t, b, nshards);
            __atomic_add_fetch(&t->busy_ns, mono_ns() - t0, __ATOMIC_RELAXED);
            pthread_mutex_lock(&p->lock);
            t->next++;
            /* batches are done in order (every shard takes them in order) */
            if (--b->left == 0) {
                p->completed++;
                if (p->completed >= p->want) pthread_cond_broadcast(&p->done);
                if (p->o.ready) {
                    pthread_mutex_unlock(&p->lock);
                    p->o.ready(p->o.arg);
                    pthread_mutex_lock(&p->lock);
                }
            }
            continue;
        }
        /* timed here: a chunk classified while a split step waits is in correlate()'s time */
        t0 = mono_ns();
        if (classify_chunk(p, t)) {
            __atomic_add_fetch(&t->busy_ns, mono_ns() - t0, __ATOMIC_RELAXED);
            continue;
        }
        if (p->quit) break;
        pthread_cond_wait(&p->work, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    template_scratch_release();
    parser_match_data_release();
    return NULL;
}

/* ---- on the caller's thread ---- */

static struct batch *
filling(const struct pipeline *p)
{
    return p->fill;
}

size_t
pipeline_add(struct pipeline *p, const char *data, size_t len, const char *peer, size_t peerlen,
             const char *tls_peer, size_t tls_peerlen, bool keep)
{
    struct batch *b = filling(p);
    struct item *it;

    if (b->n == b->cap) {
        size_t old = b->cap;
        b->items = xgrow(b->items, &b->cap, b->n + 1, sizeof(*b->items));
        b->when = xrealloc(b->when, b->cap * sizeof(*b->when));
        for (; old < b->cap; old++) b->items[old].m = msg_new();
    }
    it = &b->items[b->n++];
    it->off = b->text.len;
    it->len = len;
    buf_append(&b->text, data, len);
    it->peer = it->tls = NONE;
    if (peer) {
        it->peer = b->text.len;
        it->peerlen = peerlen;
        buf_append(&b->text, peer, peerlen);
    }
    if (tls_peer) {
        it->tls = b->text.len;
        it->tlslen = tls_peerlen;
        buf_append(&b->text, tls_peer, tls_peerlen);
    }
    it->keep = keep;
    return b->n;
}

size_t
pipeline_filling(const struct pipeline *p)
{
    return filling(p)->n;
}

bool
pipeline_can_submit(const struct pipeline *p)
{
    /* the next batch to fill must be free: collected */
    return p->nsubmitted + 1 - p->collected < p->nbatches;
}

bool
pipeline_submit(struct pipeline *p, uint64_t clock, unsigned flags)
{
    struct batch *b = filling(p);

    if (!b->n && !flags) return false;
    if (!pipeline_can_submit(p)) return false;
    b->flags = flags;
    b->base = p->base;
    p->base += b->n + (flags & PIPELINE_TICK ? 1 : 0);
    b->clock = clock;
    pthread_mutex_lock(&p->lock);
    b->claimed = 0;
    b->chunks_left = nchunks(b);
    b->classified = b->chunks_left == 0; /* a tick or an expiry alone */
    b->left = p->nshards;
    p->submitted++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    p->nsubmitted++;
    p->fill = &p->ring[p->nsubmitted % p->nbatches];
    return true;
}

uint64_t
pipeline_submitted(const struct pipeline *p)
{
    return p->nsubmitted;
}

uint64_t
pipeline_collected(const struct pipeline *p)
{
    return p->collected;
}

void
pipeline_wait(struct pipeline *p, uint64_t upto)
{
    pthread_mutex_lock(&p->lock);
    if (upto > p->submitted) upto = p->submitted;
    /* the last shard done with batch upto - 1 wakes us, not every batch's */
    p->want = upto;
    while (p->completed < upto) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static int
deliver_rec(void *arg, unsigned k, const struct par_rec *r)
{
    struct pipeline *p = arg;
    struct batch *b = p->merging;
    struct shard_out *so = &b->out[k];
    uint64_t first = first_pos(b);
    struct pipeline_out o;

    memset(&o, 0, sizeof(o));
    o.expiry = r->expiry;
    o.keep =
        !r->expiry && r->pos >= first && r->pos - first < b->n && b->items[r->pos - first].keep;
    o.batch_end = --p->merge_left == 0;
    if (p->o.render) {
        o.text = so->text.p + r->off;
        o.len = r->len;
    } else {
        const struct emitted *e = &so->msgs[r->off];
        /* a shard's records come mostly in the order of its messages, which it
         * wrote on another core: ask for the next ones ahead of the delivery */
        if (r->off + 8 < so->n) __builtin_prefetch(so->msgs[r->off + 8].m);
        o.m = e->m;
        o.kind = e->kind;
        o.action = e->action;
    }
    return p->deliver(p->deliver_arg, &o);
}

int
pipeline_collect(struct pipeline *p, pipeline_deliver_fn deliver, void *arg)
{
    uint64_t completed;
    unsigned k;
    size_t i;
    int rc = 0, r;

    if (p->collecting) return 0;
    p->collecting = true;
    p->deliver = deliver;
    p->deliver_arg = arg;
    pthread_mutex_lock(&p->lock);
    completed = p->completed;
    pthread_mutex_unlock(&p->lock);
    while (p->collected < completed) {
        struct batch *b = &p->ring[p->collected % p->nbatches];
        p->merge_left = 0;
        for (k = 0; k < p->nout; k++) {
            p->mrecs[k] = b->out[k].recs;
            p->mn[k] = b->out[k].n;
            p->merge_left += b->out[k].n;
            p->truncated += b->out[k].truncated;
        }
        p->merging = b;
        if ((r = par_merge(p->mrecs, p->mn, p->nout, deliver_rec, p)) != 0 && !rc) rc = r;
        for (k = 0; k < p->nout; k++) {
            struct shard_out *so = &b->out[k];
            if (!p->o.render)
                for (i = 0; i < so->n; i++) msg_unref(so->msgs[i].m);
            so->n = 0;
            so->truncated = 0;
            buf_reset(&so->text);
        }
        b->n = 0;
        b->flags = 0;
        buf_reset(&b->text);
        p->collected++;
    }
    p->collecting = false;
    return rc;
}

bool
pipeline_collecting(const struct pipeline *p)
{
    return p->collecting;
}

size_t
pipeline_queued(const struct pipeline *p)
{
    size_t n = 0;
    uint64_t q;

    for (q = p->collected; q <= p->nsubmitted; q++) n += p->ring[q % p->nbatches].n;
    return n;
}

unsigned
pipeline_nthreads(const struct pipeline *p)
{
    return p->nthreads;
}

unsigned
pipeline_nshards(const struct pipeline *p)
{
    return p->nshards;
}

struct corr *
pipeline_shard(struct pipeline *p, unsigned k)
{
    return k < p->nshards ? p->threads[k].corr : NULL;
}

const struct par_route *
pipeline_route(const struct pipeline *p)
{
    return &p->route;
}

uint64_t
pipeline_busy_ns(const struct pipeline *p, unsigned thread)
{
    return __atomic_load_n(&p->threads[thread].busy_ns, __ATOMIC_RELAXED);
}

uint64_t
pipeline_truncated(const struct pipeline *p)
{
    return p->truncated;
}

static void
add_stats(struct corr_stats *sum, const struct corr *c)
{
    struct corr_stats s;

    corr_stats(c, &s);
    corr_stats_add(sum, &s);
}

/* The running shards' counters alone. */
static void
pipeline_stats_shards(struct pipeline *p, struct corr_stats *out)
{
    unsigned k;

    memset(out, 0, sizeof(*out));
    for (k = 0; k < p->nshards; k++) add_stats(out, p->threads[k].corr);
}

void
pipeline_stats(struct pipeline *p, struct corr_stats *out)
{
    unsigned k;

    pipeline_stats_shards(p, out);
    /* what the threads processed as they classified it, and the shards a reshard replaced */
    for (k = 0; k < p->nalloc; k++) add_stats(out, p->threads[k].solo);
    corr_stats_add_events(out, &p->retired);
}

static struct corr *
new_shard(struct pipeline *p, unsigned k)
{
    struct corr_opts c = p->o.corr;

    c.emit = on_emit;
    c.arg = &p->threads[k].em;
    p->threads[k].em.p = p;
    if (p->o.split_limits) {
        /* the limits are totals: each shard its part */
        c.max_contexts = (c.max_contexts ? c.max_contexts : 1000000) / p->nshards;
        c.max_context_memory =
            (c.max_context_memory ? c.max_context_memory : (size_t)1 << 30) / p->nshards;
        c.max_rate_buckets = (c.max_rate_buckets ? c.max_rate_buckets : 1000000) / p->nshards;
        c.max_sigma_memory =
            (c.max_sigma_memory ? c.max_sigma_memory : (size_t)256 << 20) / p->nshards;
        if (!c.max_sigma_memory) c.max_sigma_memory = 1;
        if (c.context_share) c.context_share = (c.context_share + p->nshards - 1) / p->nshards;
        if (!c.max_contexts) c.max_contexts = 1;
        if (!c.max_context_memory) c.max_context_memory = 1;
        if (!c.max_rate_buckets) c.max_rate_buckets = 1;
        if (c.context_share > c.max_contexts) c.context_share = c.max_contexts;
    }
    return p->threads[k].em.corr = corr_new(p->db, &c);
}

/* A thread's corr for the messages that need no state (solo()): it never holds any. */
static struct corr *
new_solo(struct pipeline *p, struct thread *t)
{
    struct corr_opts c = p->o.corr;

    c.emit = on_emit;
    c.arg = &t->solo_em;
    t->solo_em.p = p;
    return t->solo_em.corr = corr_new(p->db, &c);
}

/* Solo processing needs shards to spare a message from, and no Sigma rule (they run on every
 * message at the correlation time of its shard). */
static void
set_solo(struct pipeline *p)
{
    const struct sigma *sg = pdb_sigma(p->db);

    pthread_mutex_lock(&p->lock); /* the threads read it under the lock */
    p->solo = p->nshards > 1 && !(sg && sigma_nrules(sg));
    pthread_mutex_unlock(&p->lock);
}

void
pipeline_set_db(struct pipeline *p, struct pdb *db, struct par_route *rt, size_t *kept,
                size_t *dropped)
{
    size_t kk, dd;
    unsigned k;

    *kept = *dropped = 0;
    (void)pdb_context_keep(db); /* computed now, read by every thread later */
    for (k = 0; k < p->nshards; k++) {
        corr_set_db(p->threads[k].corr, db, &kk, &dd);
        *kept += kk;
        *dropped += dd;
    }
    for (k = 0; k < p->nalloc; k++) corr_set_db(p->threads[k].solo, db, &kk, &dd);
    p->db = db;
    set_solo(p);
    pthread_mutex_lock(&p->lock);
    p->tz_gen++;
    pthread_mutex_unlock(&p->lock);
    par_route_init(rt, db, p->nthreads);
}

static void
carry_rule_counts(const struct corr_rule_stats *rs, void *arg)
{
    corr_add_rule_counts(arg, rs);
}

void
pipeline_reshard(struct pipeline *p, const struct par_route *rt)
{
    struct corr *old[PAR_MAX_SHARDS];
    unsigned k, nold = p->nshards;
    struct corr_stats s;

    for (k = 0; k < nold; k++) old[k] = p->threads[k].corr;
    p->resharded = true;
    p->route = *rt;
    pthread_mutex_lock(&p->lock); /* the threads read it under the lock */
    p->nshards = rt->nshards;
    pthread_mutex_unlock(&p->lock);
    for (k = 0; k < p->nshards; k++) p->threads[k].corr = new_shard(p, k);
    for (; k < nold; k++) p->threads[k].corr = NULL; /* fewer shards now */
    /* the replaced shards' counts of events go on: the totals in retired, a rule's series (sums
     * over the shards) in the first new shard */
    for (k = 0; k < nold; k++) {
        corr_stats(old[k], &s);
        corr_stats_add_events(&p->retired, &s);
        corr_foreach_rule(old[k], carry_rule_counts, p->threads[0].corr);
        corr_free(old[k]);
    }
    set_solo(p);
}

void
pipeline_loaded(struct pipeline *p)
{
    uint64_t seq = 0, s;
    unsigned k;

    if (p->resharded) {
        /* the contexts moved were counted created by the shards they came from */
        struct corr_stats now;
        pipeline_stats_shards(p, &now);
        p->retired.contexts_created -= now.contexts_created < p->retired.contexts_created
                                           ? now.contexts_created
                                           : p->retired.contexts_created;
        p->resharded = false;
    }
    /* one shard numbers its arms itself (par_process()); several by position and step */
    if (p->nshards <= 1) return;
    for (k = 0; k < p->nshards; k++)
        if ((s = corr_arm_seq(p->threads[k].corr)) > seq) seq = s;
    /* positions only need to grow: the next one starts after the loaded contexts' numbers */
    if (p->base * PAR_STEPS < seq) p->base = (seq + PAR_STEPS - 1) / PAR_STEPS;
}

struct pipeline *
pipeline_new(struct pdb *db, const struct pipeline_opts *o)
{
    struct pipeline *p = xcalloc(1, sizeof(*p));
    unsigned k;
    size_t i;

    p->db = db;
    p->o = *o;
    p->nthreads = o->threads < 1 ? 1 : o->threads > PAR_MAX_SHARDS ? PAR_MAX_SHARDS : o->threads;
    (void)pdb_context_keep(db); /* computed now, read by every thread later */
    p->nshards = par_route_init(&p->route, db, p->nthreads);
    p->nbatches = o->nbatches < 2 ? 2 : o->nbatches;
    if (!p->o.batch) p->o.batch = 1;
    p->nout = 2 * p->nthreads;
    p->ring = xcalloc(p->nbatches, sizeof(*p->ring));
    p->fill = &p->ring[0];
    for (i = 0; i < p->nbatches; i++) {
        struct batch *b = &p->ring[i];
        b->cap = p->o.batch;
        b->items = xcalloc(b->cap, sizeof(*b->items));
        b->when = xcalloc(b->cap, sizeof(*b->when));
        for (k = 0; k < b->cap; k++) b->items[k].m = msg_new();
        b->out = xcalloc(p->nout, sizeof(*b->out));
    }
    p->mrecs = xcalloc(p->nout, sizeof(*p->mrecs));
    p->mn = xcalloc(p->nout, sizeof(*p->mn));
    p->sync = par_sync_new(p->nthreads); /* as many as the shards may ever be */
    par_sync_set_idle(p->sync, idle_classify, p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = xcalloc(p->nthreads, sizeof(*p->threads));
    p->nalloc = p->nthreads;
    for (k = 0; k < p->nthreads; k++) {
        struct thread *t = &p->threads[k];
        t->p = p;
        t->index = k;
        t->scratch = pdb_scratch_new();
        if (k < p->nshards) t->corr = new_shard(p, k);
        t->solo = new_solo(p, t);
        t->hot = msg_new();
        t->spare[0] = msg_new();
        t->spare[1] = msg_new();
    }
    set_solo(p);
    for (k = 0; k < p->nthreads; k++)
        if (pthread_create(&p->threads[k].tid, NULL, worker, &p->threads[k]) != 0) {
            p->nthreads = k; /* pipeline_free joins those */
            pipeline_free(p);
            return NULL;
        }
    return p;
}

void
pipeline_free(struct pipeline *p)
{
    unsigned k;
    size_t i, j;

    if (!p) return;
    /* the threads finish what was handed over: a shard is never left in the middle of a batch */
    pipeline_wait(p, p->nsubmitted);
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (k = 0; k < p->nthreads; k++) pthread_join(p->threads[k].tid, NULL);
    for (k = 0; k < p->nalloc; k++) {
        corr_free(p->threads[k].corr);
        corr_free(p->threads[k].solo);
        msg_unref(p->threads[k].hot);
        msg_unref(p->threads[k].spare[0]);
        msg_unref(p->threads[k].spare[1]);
        pdb_scratch_free(p->threads[k].scratch);
        buf_free(&p->threads[k].id);
    }
    free(p->threads);
    for (i = 0; i < p->nbatches; i++) {
        struct batch *b = &p->ring[i];
        for (j = 0; j < b->cap; j++) msg_unref(b->items[j].m);
        free(b->items);
        free(b->when);
        for (k = 0; k < p->nout; k++) {
            struct shard_out *so = &b->out[k];
            if (!p->o.render)
                for (j = 0; j < so->n; j++) msg_unref(so->msgs[j].m);
            free(so->recs);
            free(so->msgs);
            buf_free(&so->text);
        }
        free(b->out);
        buf_free(&b->text);
    }
    free(p->ring);
    free(p->mrecs);
    free(p->mn);
    par_sync_free(p->sync);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}
