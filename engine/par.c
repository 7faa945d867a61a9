/*
 * par: the parallel engine (see par.h and doc/parallel.md).
 *
 * Lines go through in batches of BATCH, each in two phases on the same N
 * threads:
 *
 *   A. parse and classify (stateless), in chunks of CHUNK lines that any
 *      thread takes: parse each line into its slot's message, find its rule
 *      (pdb_lookup_r, the thread's own scratch), compute the time the
 *      message moves correlation to (corr_msg_time) and the shard that owns
 *      it (par_owner(), below).
 *   B. correlate, once the whole batch is classified: thread k is shard k,
 *      a corr of its own (contexts, timer wheel, rate buckets).  It walks the
 *      whole batch in input order: for every message it advances its time
 *      to the message's time (so a shard that owns no message still sees
 *      time pass, and its timeouts fire at exactly the input position where
 *      they fire with one thread), and it processes the messages it owns.
 *      Everything it emits is rendered into its own buffer, with a record:
 *      input position, whether a timeout fired it, and the firing timer's
 *      (expires, order, arming number).
 *
 * Batches are pipelined: the caller hands them over into a ring of RING, and
 * a thread correlates its shard's next batch when that one is classified,
 * else classifies a chunk of the oldest batch with lines left (worker()).
 * So when one shard owns most of the stateful messages (one busy host under
 * a host-scoped rate limit), its thread correlates without a pause while the
 * others classify the batches ahead of it: with a barrier per batch instead,
 * the busy shard classified its share of every batch and the others waited
 * for it.  The thread that classifies a batch's last chunk balances it
 * (balance()).  The caller's thread queues lines and merges the batches
 * every shard is done with, in order (par_merge; each shard keeps one output
 * set per slot of the ring); it waits only when the ring is full, and then
 * until half of it is done (a sleep every RING / 2 batches: the shards wake
 * it only when the batch it waits for is done).  The merge puts out,
 * for each input position, the timeout messages of all shards in the
 * order one timer wheel fires them (expires, then order, then arming
 * number: the shards number their arms by input position, and a position
 * arms at most one timer per step, see below), then the input message and what
 * its match actions generated.  The output is byte for byte that of one
 * thread; nothing is sorted after the fact.
 *
 * Which shard owns a message (par_owner()): one whose rule has no context and
 * no rate-limited action needs no shared state (its actions see only the
 * message and the correlation time, which every shard has): any shard, the
 * least busy (balance()).  Otherwise the hash of its context key (corrkey.h,
 * the key corr's tables use): the scope, the scope's fields (HOST, PROGRAM,
 * PID) and the evaluated context id.  A rate limit is
 * shared by every context of its rule with the same scope fields, whatever
 * their id (the bucket key is the scope fields and rule:action), so when any
 * rule of a scope has a rate-limited action, that scope's key leaves the id
 * out: all contexts and buckets with the same fields live in one shard and
 * rate limits keep their exact one-thread semantics.
 *
 * Rate buckets are keyed by the scope fields after the rule's <values>, so a
 * database where a rule's values set HOST, PROGRAM or PID and some action is
 * rate-limited correlates in one shard too.
 *
 * create-context reaches a context whose key is only known when the action
 * runs, at a time only the firing order across shards fixes (timeout
 * actions create contexts that may fire in the same advance, detach
 * others...).  Rather than approximate, a database with a create-context
 * action runs correlation in one shard (classification stays parallel):
 * correct by construction.
 *
 * also-correlate: a message joins contexts of other rules' keys, which other
 * shards may own.  Classification finds each join's owner
 * (par_owner_steps(); split_safe() checks at load that the keys can be known
 * then, else one shard); a message whose contexts are not all in one shard
 * is split into steps, run each on its owner in one thread's order with a
 * wait on the step before (par_process(), corr_part_*()).  Timers are
 * numbered pos * PAR_STEPS + step, and the merge orders a position's parts
 * by par_rec.sub.
 *
 * Limits: each shard enforces 1/N of max-contexts, max-context-memory and
 * max-rate-buckets (and of each rule's share of them), so a flood is refused
 * at the same totals, but which message is refused at the brink depends on
 * how keys fall into shards (documented in corral-rules(5)).
 *
 * The per-message path allocates nothing once the batch's buffers have
 * grown: slots keep their message, shards their output buffer and records.
 */
#include "engine/par.h"
#include "engine/clock.h"
#include "engine/corrkey.h"
#include "engine/hash.h"
#include "engine/parsers.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <pthread.h>
#include <stddef.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH           256
#define RING            8  /* batches in flight (see top) */
#define CHUNK           32 /* lines a thread classifies at a time */
#define ANY_SHARD       PAR_ANY_SHARD
#define STATEFUL_WEIGHT 4

struct slot {
    struct msg *m;
    const struct pdb_rule *rule;
    uint64_t t;     /* corr_msg_time() */
    unsigned shard; /* owner (of step 0 if split) */
    struct par_steps steps;
    uint8_t by; /* the thread that classified it */
};

/*
 * A batch: lines queued by the caller, then classified in chunks by any
 * thread, then correlated by every shard.  The ring's slot is refilled once
 * the caller has merged its output.
 */
struct batch {
    struct slot slots[BATCH];
    struct buf text;
    size_t off[BATCH + 1]; /* of each line in text */
    size_t n;
    uint64_t base;  /* input position of slots[0] */
    uint64_t clock; /* the clock when it was handed over */
    bool expire;    /* no lines: every shard runs corr_expire_all */
    /* under par.lock */
    unsigned claimed, chunks_left; /* chunks handed to a thread, chunks not classified yet */
    bool classified;
    unsigned left; /* shards still correlating it */
};

struct par;

struct shard {
    struct par *par;
    unsigned index;
    pthread_t thread;
    struct corr *corr;
    struct pdb_scratch *scratch; /* classifying */
    struct buf id;               /* classifying: a context id */
    /* correlating: rendered messages and their records, one set per batch of the ring, the one
     * of batch seq at seq % RING (the caller merges them in order) */
    struct buf out[RING];
    struct par_rec *recs[RING];
    size_t nrecs[RING], caprecs[RING];
    int ob;       /* the set being written */
    uint64_t pos; /* position being processed */
    uint8_t sub;  /* par_rec.sub of what it emits */
};

struct par {
    struct pdb *db;
    struct par_opts o;
    struct syslogfmt_opts parse;
    struct msg_time now;
    unsigned nthreads, nshards;
    struct par_route route; /* which shard owns a message */
    struct par_sync *sync;  /* split messages */
    struct shard *shards;

    struct batch *ring; /* RING batches: batch seq is ring[seq % RING] */
    uint64_t filling;   /* caller: seq of the batch being filled (= batches handed over) */
    uint64_t merged;    /* caller: batches merged (their ring slots are free) */
    uint64_t nextpos;   /* caller: input position of the next line */
    bool failed;
    unsigned nalloc; /* shards allocated (threads started: nthreads) */

    pthread_mutex_t lock;
    pthread_cond_t work, done;
    uint64_t submitted; /* batches handed over */
    uint64_t completed; /* batches every shard is done with (in order, see worker()) */
    uint64_t claim;     /* the oldest handed over with chunks left to claim */
    uint64_t want;      /* the caller sleeps until the batches before this one are done */
    bool quit;

    /* merge scratch */
    const struct par_rec **mrecs;
    size_t *mn;
    int merge_ob;
};

/* ---- which shard owns a message ---- */

static bool
rate_limited(const struct pdb_rule *r)
{
    size_t i;

    for (i = 0; i < r->nactions; i++)
        if (r->actions[i].rate_n) return true;
    return false;
}

/*
 * Whether the keys of r's also-correlate contexts can be known when the
 * message is classified (par_owner_steps() evaluates them over the parsed
 * message): corr evaluates also[i]'s context-id and takes its scope fields
 * after r's values (and .classifier.context_id) and those of also[0..i-1]
 * are set.  So none of them may read what those set.  refs is scratch.
 */
static bool
split_safe(const struct pdb_rule *r, unsigned char *refs)
{
    size_t i, j, v;

    for (i = 0; i < r->nalso; i++) {
        const struct pdb_rule *a = r->also[i];
        if (!a) continue;
        memset(refs, 0, NV_MAX_NAMES + 1);
        if (a->context_id && !template_refs(a->context_id, refs)) return false;
        /* $TAGS reads what the rules' tags set, which template_refs() does not say */
        if (a->context_id && strstr(template_source(a->context_id), "TAGS")) return false;
        /* the scope fields its key takes (par_owner_steps() reads them from the parsed message) */
        switch (a->scope) {
        case PDB_SCOPE_PROCESS: refs[NV_PID] = 1;     /* fall through */
        case PDB_SCOPE_PROGRAM: refs[NV_PROGRAM] = 1; /* fall through */
        case PDB_SCOPE_HOST: refs[NV_HOST] = 1;       /* fall through */
        case PDB_SCOPE_GLOBAL: break;
        }
        if (r->context_id && refs[NV_CONTEXT_ID]) return false;
        for (j = 0; j <= i; j++) {
            const struct pdb_rule *w = j == 0 ? r : r->also[j - 1];
            if (!w) continue;
            for (v = 0; v < w->msg.nvalues; v++)
                if (refs[w->msg.values[v].name]) return false;
        }
    }
    return true;
}

unsigned
par_route_init(struct par_route *rt, const struct pdb *db, unsigned n)
{
    size_t i, j;
    bool rates = false, scope_values = false;
    unsigned char *refs = xcalloc(NV_MAX_NAMES + 1, 1);

    memset(rt, 0, sizeof(*rt));
    rt->nshards = n ? n : 1;
    for (i = 0; i < pdb_nrules(db); i++) {
        const struct pdb_rule *r = pdb_rule_at(db, i);
        if (rate_limited(r)) rates = true, rt->noid[r->scope] = true;
        for (j = 0; j < r->nactions; j++)
            if (r->actions[j].kind == PDB_ACTION_CREATE_CONTEXT) rt->nshards = 1;
        /* also-correlate: one message joins contexts of other keys (split_safe()) */
        if (r->nalso && !split_safe(r, refs)) rt->nshards = 1;
        for (j = 0; j < r->msg.nvalues; j++) {
            nv_handle h = r->msg.values[j].name;
            if (h == NV_HOST || h == NV_PROGRAM || h == NV_PID) scope_values = true;
        }
    }
    /* a bucket is keyed by the scope fields after the rule's values: a rule that rewrites them
     * could share a bucket across the shards its input fields hash to */
    if (rates && scope_values) rt->nshards = 1;
    free(refs);
    return rt->nshards;
}

/* The shard of the key a context of scope with context-id tpl (NULL: none) has for m. */
static unsigned
key_owner(const struct par_route *rt, const struct msg *m, enum pdb_scope scope,
          const struct template *tpl, struct buf *id)
{
    struct corrkey k;

    /* a scope with a rate-limited rule routes without the id (see the top of this file) */
    corrkey_for_rule(&k, scope, rt->noid[scope] ? NULL : tpl, m, id);
    return corrkey_shard(corrkey_hash(&k), rt->nshards);
}

unsigned
par_owner(const struct par_route *rt, const struct msg *m, const struct pdb_rule *r, struct buf *id)
{
    if (rt->nshards <= 1) return 0;
    if (!r || (!r->context_id && !rate_limited(r))) return PAR_ANY_SHARD;
    return key_owner(rt, m, r->scope, r->context_id, id);
}

unsigned
par_owner_steps(const struct par_route *rt, const struct msg *m, const struct pdb_rule *r,
                struct buf *id, struct par_steps *st)
{
    unsigned o = par_owner(rt, m, r, id);
    size_t i;
    bool split = false;

    st->n = 0;
    if (rt->nshards <= 1 || !r || !r->nalso) return o;
    for (i = 0; i < r->nalso; i++) {
        const struct pdb_rule *a = r->also[i];
        /* the key split_safe() vouches for: the parsed message's fields and id */
        unsigned ao = a ? key_owner(rt, m, a->scope, a->context_id, id) : PAR_ANY_SHARD;
        if (o == PAR_ANY_SHARD) o = ao; /* step 0 needs no state: with the first join */
        st->owner[1 + i] = (uint8_t)ao;
    }
    if (o == PAR_ANY_SHARD) return o;
    st->owner[0] = (uint8_t)o;
    for (i = 1; i <= r->nalso; i++) {
        /* an unresolved also-correlate joins nothing: its step stays with the step before */
        if (st->owner[i] == (uint8_t)PAR_ANY_SHARD) st->owner[i] = st->owner[i - 1];
        if (st->owner[i] != o) split = true;
    }
    if (split) st->n = (uint8_t)(1 + r->nalso);
    return o;
}

/* ---- split messages ---- */

/* One shard's progress, on a cache line of its own: pos * PAR_STEPS + step + 1 of the last step
 * it did. */
struct progress {
    uint64_t v;
    char pad[56];
};
struct par_sync {
    unsigned n;
    struct progress *p;
    par_idle_fn idle; /* see par_sync_set_idle() */
    void *idle_arg;
};

struct par_sync *
par_sync_new(unsigned nshards)
{
    struct par_sync *sy = xcalloc(1, sizeof(*sy));

    sy->n = nshards ? nshards : 1;
    sy->p = xcalloc(sy->n, sizeof(*sy->p));
    return sy;
}

void
par_sync_free(struct par_sync *sy)
{
    if (!sy) return;
    free(sy->p);
    free(sy);
}

static uint64_t
step_mark(uint64_t pos, unsigned step)
{
    return pos * PAR_STEPS + step + 1;
}

static void
step_done(struct par_sync *sy, unsigned self, uint64_t pos, unsigned step)
{
    __atomic_store_n(&sy->p[self].v, step_mark(pos, step), __ATOMIC_RELEASE);
}

void
par_sync_set_idle(struct par_sync *sy, par_idle_fn fn, void *arg)
{
    sy->idle = fn;
    sy->idle_arg = arg;
}

/*
 * Waits until shard k has done step of pos.  k walks the batch in input
 * order and never waits for a later step than the one it is at, so this
 * ends (see par_process()).  A short spin, then other work if the idle
 * function has some (it must not wait for any shard), else the CPU is
 * given up: on a loaded machine k may not be running.
 */
static void
step_wait(struct par_sync *sy, unsigned self, unsigned k, uint64_t pos, unsigned step)
{
    uint64_t want = step_mark(pos, step);
    unsigned spins = 0;

    while (__atomic_load_n(&sy->p[k].v, __ATOMIC_ACQUIRE) < want) {
        if (++spins < 200) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        if (!sy->idle || !sy->idle(sy->idle_arg, self)) sched_yield();
    }
}

/*
 * A split message (st->n > 0): the steps run on their owners, each after
 * the step before it, which changed m (values), so a shard that owns step
 * s waits for step s-1's owner.  The owner of the last step emits the input
 * message (every join's values are then on m); the owner of step 0 runs the
 * rule's match actions without waiting for that, as they read only the
 * rule's context, unless the rule has none (corr_part_actions_read_msg():
 * then they read m, and it waits for the last step); each join's owner runs
 * that rule's match actions (they read only its context).  So a split
 * message costs the shards one meeting, not a round trip: step 0's shard
 * goes on to its next message while the others finish this one.  Every
 * wait is for an earlier step of the same position, or for the last step by
 * a shard whose steps never wait for step 0's actions: no cycle.  Timers
 * are numbered pos * PAR_STEPS + step: one arm per step, in one thread's
 * order.  The records' sub orders the parts in the merge as
 * corr_process_rule() orders them: 0 the input message, 1 the rule's
 * actions, 2 + i also[i]'s actions.
 */
void
par_process(struct corr *c, unsigned self, unsigned nshards, struct par_sync *sy, uint64_t pos,
            struct msg *m, const struct pdb_rule *rule, uint64_t t, unsigned owner,
            const struct par_steps *st, uint8_t *sub)
{
    struct corr_part part;
    unsigned s, last;
    bool mine = false;

    if (!st->n) {
        if (owner != self) return;
        if (nshards > 1) corr_set_arm_seq(c, pos * PAR_STEPS);
        *sub = 0;
        corr_process_rule(c, m, rule, t);
        return;
    }
    for (s = 0; s < st->n; s++) mine |= st->owner[s] == self;
    if (!mine) return;
    memset(&part, 0, sizeof(part));
    for (s = 0; s < st->n; s++) {
        if (st->owner[s] != self) continue;
        if (s > 0 && st->owner[s - 1] != self) step_wait(sy, self, st->owner[s - 1], pos, s - 1);
        corr_set_arm_seq(c, pos * PAR_STEPS + s);
        if (s == 0)
            corr_part_main(c, m, rule, t, &part);
        else
            corr_part_also(c, m, rule, s - 1, &part);
        step_done(sy, self, pos, s);
    }
    last = st->n - 1u;
    if (st->owner[last] == self) {
        *sub = 0;
        corr_part_input(c, m, rule);
    }
    if (st->owner[0] == self) {
        if (st->owner[last] != self && corr_part_actions_read_msg(rule, &part))
            step_wait(sy, self, st->owner[last], pos, last);
        *sub = 1;
        corr_part_actions(c, m, rule, &part);
    }
    for (s = 1; s < st->n; s++)
        if (st->owner[s] == self) {
            *sub = (uint8_t)(1 + s);
            corr_part_also_actions(c, m, rule, s - 1, &part);
        }
    *sub = 0;
}

unsigned
par_context_owner(const struct par_route *rt, const struct corr_context_info *ci)
{
    struct corrkey k;

    if (rt->nshards <= 1) return 0;
    memset(&k, 0, sizeof(k));
    k.scope = ci->scope;
    k.host = ci->host;
    k.hostlen = ci->hostlen;
    k.prog = ci->program;
    k.proglen = ci->programlen;
    k.pid = ci->pid;
    k.pidlen = ci->pidlen;
    if (!rt->noid[ci->scope]) {
        k.id = ci->id;
        k.idlen = ci->idlen;
    }
    return corrkey_shard(corrkey_hash(&k), rt->nshards);
}

/* ---- merge ---- */

static int
key_cmp(const struct par_rec *a, const struct par_rec *b)
{
    int i;

    for (i = 0; i < 3; i++)
        if (a->key[i] != b->key[i]) return a->key[i] < b->key[i] ? -1 : 1;
    return 0;
}

int
par_merge(const struct par_rec *const *recs, const size_t *nrecs, unsigned n,
          int (*fn)(void *arg, unsigned shard, const struct par_rec *r), void *arg)
{
    size_t cur[64] = {0};
    unsigned k;
    int rc;

    if (n > 64) return -1;
    for (;;) {
        uint64_t pos = UINT64_MAX;
        for (k = 0; k < n; k++)
            if (cur[k] < nrecs[k] && recs[k][cur[k]].pos < pos) pos = recs[k][cur[k]].pos;
        if (pos == UINT64_MAX) return 0;
        /* timeouts fired before the input message at pos, in one wheel's order */
        for (;;) {
            const struct par_rec *best = NULL;
            unsigned bk = 0;
            for (k = 0; k < n; k++) {
                const struct par_rec *r = cur[k] < nrecs[k] ? &recs[k][cur[k]] : NULL;
                if (!r || r->pos != pos || !r->expiry) continue;
                if (!best || key_cmp(r, best) < 0) best = r, bk = k;
            }
            if (!best) break;
            if ((rc = fn(arg, bk, best))) return rc;
            cur[bk]++;
        }
        /* the input message and what it generated: one shard, or a split message's parts by sub */
        for (;;) {
            const struct par_rec *best = NULL;
            unsigned bk = 0;
            for (k = 0; k < n; k++) {
                const struct par_rec *r = cur[k] < nrecs[k] ? &recs[k][cur[k]] : NULL;
                if (!r || r->pos != pos) continue;
                if (!best || r->sub < best->sub) best = r, bk = k;
            }
            if (!best) break;
            if ((rc = fn(arg, bk, best))) return rc;
            cur[bk]++;
        }
    }
}

static int
write_rec(void *arg, unsigned shard, const struct par_rec *r)
{
    struct par *p = arg;

    return p->o.write(p->o.arg, p->shards[shard].out[p->merge_ob].p + r->off, r->len);
}

/* Writes the output of batch p->merged (every shard is done with it) and frees its ring slot. */
static void
merge(struct par *p)
{
    unsigned k;

    p->merge_ob = (int)(p->merged % RING);
    for (k = 0; k < p->nshards; k++) {
        p->mrecs[k] = p->shards[k].recs[p->merge_ob];
        p->mn[k] = p->shards[k].nrecs[p->merge_ob];
    }
    if (!p->failed && par_merge(p->mrecs, p->mn, p->nshards, write_rec, p) != 0) p->failed = true;
    p->merged++;
}

/* ---- the threads' work ---- */

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct shard *s = arg;
    int ob = s->ob;
    struct buf *out = &s->out[ob];
    struct par_rec *r;
    size_t off = out->len;

    s->par->o.render(s->par->o.arg, m, kind, action, out);
    s->recs[ob] = xgrow(s->recs[ob], &s->caprecs[ob], s->nrecs[ob] + 1, sizeof(*s->recs[ob]));
    r = &s->recs[ob][s->nrecs[ob]++];
    r->pos = s->pos;
    r->off = off;
    r->len = out->len - off;
    r->expiry = corr_firing_key(s->corr, r->key);
    if (!r->expiry) memset(r->key, 0, sizeof(r->key));
    r->sub = r->expiry ? 0 : s->sub;
}

/* Parses and classifies lines [from, to) of b. */
static void
classify(struct par *p, struct shard *s, struct batch *b, size_t from, size_t to)
{
    size_t i;

    for (i = from; i < to; i++) {
        struct slot *sl = &b->slots[i];
        /* the slots' messages were last read and written by other threads
         * (their shard, the merge): own them ahead of the reset */
        if (i + 8 < to) msg_prefetch(b->slots[i + 8].m, false, true);
        if (i + 4 < to) msg_prefetch(b->slots[i + 4].m, true, true);
        syslogfmt_parse(sl->m, b->text.p + b->off[i], b->off[i + 1] - b->off[i], &p->parse);
        sl->rule = pdb_lookup_r(p->db, sl->m, s->scratch);
        sl->t = corr_msg_time(sl->m, b->clock);
        sl->shard = par_owner_steps(&p->route, sl->m, sl->rule, &s->id, &sl->steps);
        sl->by = (uint8_t)s->index;
    }
}

/* Shard s's part of batch seq (classified), into its output set seq % RING. */
static void
correlate(struct par *p, struct shard *s, struct batch *b, uint64_t seq)
{
    size_t i;

    s->ob = (int)(seq % RING);
    s->nrecs[s->ob] = 0;
    buf_reset(&s->out[s->ob]);
    if (b->expire) {
        s->pos = UINT64_MAX - 1;
        corr_expire_all(s->corr);
        return;
    }
    for (i = 0; i < b->n; i++) {
        struct slot *sl = &b->slots[i];
        /* another thread classified them: ask for the messages this shard owns ahead */
        if (i + 8 < b->n && b->slots[i + 8].shard == s->index)
            msg_prefetch(b->slots[i + 8].m, false, false);
        if (i + 4 < b->n && b->slots[i + 4].shard == s->index)
            msg_prefetch(b->slots[i + 4].m, true, false);
        s->pos = b->base + i;
        corr_advance(s->corr, sl->t);
        /* timers numbered by position and step (see top) */
        par_process(s->corr, s->index, p->nshards, p->sync, s->pos, sl->m, sl->rule, sl->t,
                    sl->shard, &sl->steps, &s->sub);
    }
}

static void balance(struct par *p, struct batch *b);

static size_t
nchunks(const struct batch *b)
{
    return (b->n + CHUNK - 1) / CHUNK;
}

/*
 * With p->lock held: classifies a chunk of the oldest batch with lines left
 * (dropping the lock meanwhile), if there is one.  The thread that
 * classifies a batch's last chunk balances it and releases it to the shards.
 */
static bool
classify_chunk(struct par *p, struct shard *s)
{
    struct batch *b;
    size_t c, to;

    /* the batches done are classified, and the slot of one the caller merged may be filling:
     * never look at it through a claim left behind (corrald's workers hand over batches with
     * nothing to classify, which leave the claim where it was) */
    if (p->claim < p->completed) p->claim = p->completed;
    while (p->claim < p->submitted &&
           p->ring[p->claim % RING].claimed == nchunks(&p->ring[p->claim % RING]))
        p->claim++;
    if (p->claim == p->submitted) return false;
    b = &p->ring[p->claim % RING];
    c = b->claimed++;
    pthread_mutex_unlock(&p->lock);
    to = (c + 1) * CHUNK < b->n ? (c + 1) * CHUNK : b->n;
    classify(p, s, b, c * CHUNK, to);
    pthread_mutex_lock(&p->lock);
    if (--b->chunks_left == 0) {
        balance(p, b);
        b->classified = true;
        pthread_cond_broadcast(&p->work);
    }
    return true;
}

/*
 * A shard waiting for another's step of a split message (par_process())
 * classifies a chunk meanwhile: classifying waits for no shard.
 */
static bool
idle_classify(void *arg, unsigned self)
{
    struct par *p = arg;
    bool did;

    pthread_mutex_lock(&p->lock);
    did = classify_chunk(p, &p->shards[self]);
    pthread_mutex_unlock(&p->lock);
    return did;
}

/*
 * A thread takes work in this order: its shard's next batch if it is
 * classified (correlation is each shard's own sequence: a shard that lags
 * should not also classify), else a chunk of the oldest batch with lines
 * left to classify, else it sleeps.  So the thread of a busy shard (one
 * host's contexts under a host-scoped rate limit) correlates while the
 * others classify the batches ahead of it.  The thread that classifies a
 * batch's last chunk balances it and releases it to the shards.  A shard
 * waiting for another's step of a split message (par_process()) waits for a
 * batch that is classified, so the other is correlating it or will once
 * its chunk is done, never asleep; meanwhile it classifies chunks of later
 * batches, if any are left (idle_classify()).
 */
static void *
worker(void *arg)
{
    struct shard *s = arg;
    struct par *p = s->par;
    uint64_t next = 0; /* the next batch this shard correlates */

    pthread_mutex_lock(&p->lock);
    for (;;) {
        struct batch *b;
        if (s->index < p->nshards && next < p->submitted && p->ring[next % RING].classified) {
            b = &p->ring[next % RING];
            pthread_mutex_unlock(&p->lock);
            correlate(p, s, b, next);
            pthread_mutex_lock(&p->lock);
            /* batches are done in order (every shard takes them in order):
             * the caller wakes once, when what it waits for is done */
            if (--b->left == 0) {
                p->completed++;
                if (next + 1 >= p->want) pthread_cond_broadcast(&p->done);
            }
            next++;
            continue;
        }
        if (classify_chunk(p, s)) continue;
        if (p->quit) break;
        pthread_cond_wait(&p->work, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    template_scratch_release();
    parser_match_data_release();
    return NULL;
}

/* ---- the pipeline ---- */

/*
 * Gives the messages that need no shard's state to the thread that parsed
 * them while its shard is under an even share, else to the shards with the
 * fewest (in input order, filling one after the other): a log where one key
 * dominates (one busy host under a host-scoped rate limit) still keeps
 * every shard busy, and most messages stay in the cache of one core.  It depends
 * on the input alone, and such a message's output does not depend on the
 * shard that processes it (every shard has the same time).
 */
#define ITEM_SHARD(i) ((unsigned *)(void *)((char *)base + (i)*stride + shard_off))
#define ITEM_BY(i)    (*((const uint8_t *)base + (i)*stride + by_off))
void
par_balance(void *base, size_t n, size_t stride, size_t shard_off, size_t by_off, unsigned nshards)
{
    size_t count[PAR_MAX_SHARDS] = {0}, target, total = 0, i;
    unsigned k, w;

    if (nshards <= 1) return;
    /* weights: a message of a context costs some STATEFUL_WEIGHT times one without (measured on
     * sshd rules: a template over the context, its timer, its kept copy) */
    for (i = 0; i < n; i++)
        if (*ITEM_SHARD(i) != ANY_SHARD)
            count[*ITEM_SHARD(i)] += STATEFUL_WEIGHT;
        else
            total++;
    for (k = 0; k < nshards; k++) total += count[k];
    target = (total + nshards - 1) / nshards;
    for (k = 0, i = 0; i < n; i++) {
        if (*ITEM_SHARD(i) != ANY_SHARD) continue;
        /* preferably the thread that parsed it, whose cache holds it */
        w = ITEM_BY(i);
        if (w < nshards && count[w] < target) {
            *ITEM_SHARD(i) = w;
            count[w]++;
            continue;
        }
        while (k + 1 < nshards && count[k] >= target) k++;
        *ITEM_SHARD(i) = k;
        count[k]++;
    }
}
#undef ITEM_SHARD
#undef ITEM_BY

static void
balance(struct par *p, struct batch *b)
{
    par_balance(b->slots, b->n, sizeof(*b->slots), offsetof(struct slot, shard),
                offsetof(struct slot, by), p->nshards);
}

/*
 * Merges the batches every shard is done with, in order; with wait, until
 * batch upto (exclusive) is merged.
 */
static void
merge_done(struct par *p, uint64_t upto)
{
    for (;;) {
        struct batch *b;
        bool ready;
        if (p->merged == p->filling) return;
        b = &p->ring[p->merged % RING];
        pthread_mutex_lock(&p->lock);
        if (p->merged < upto) {
            p->want = upto;
            while (b->left) pthread_cond_wait(&p->done, &p->lock);
        }
        ready = b->left == 0;
        pthread_mutex_unlock(&p->lock);
        if (!ready) return;
        merge(p);
    }
}

/*
 * Hands the batch being filled to the threads and returns: the caller
 * merges what is done and queues the next lines while it runs, into the next
 * slot of the ring once that slot's output is merged.
 */
static void
submit(struct par *p, bool expire)
{
    struct batch *b = &p->ring[p->filling % RING];
    uint64_t need;

    b->expire = expire;
    b->base = p->nextpos;
    p->nextpos += b->n;
    b->clock = p->o.fixed_now ? p->o.fixed_now : clock_wall_ms();
    b->claimed = 0;
    b->chunks_left = (unsigned)nchunks(b);
    b->classified = b->chunks_left == 0;
    b->left = p->nshards;
    pthread_mutex_lock(&p->lock);
    p->submitted++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    p->filling++;
    /* the next slot must be free, and what is done is written meanwhile; when
     * the ring is full, the caller sleeps until half of it is done rather
     * than one batch: a sleep and a wake-up every RING / 2 batches, not every
     * batch, while the busiest shard sets the pace (doc/parallel.md) */
    need = p->filling >= RING ? p->filling - RING + 1 : 0;
    if (p->merged < need) need = p->filling - RING / 2 + 1;
    merge_done(p, need);
    b = &p->ring[p->filling % RING];
    b->n = 0;
    buf_reset(&b->text);
}

int
par_line(struct par *p, const char *line, size_t len)
{
    struct batch *b = &p->ring[p->filling % RING];

    if (p->failed) return -1;
    buf_append(&b->text, line, len);
    b->off[++b->n] = b->text.len;
    if (b->n == BATCH) submit(p, false);
    return p->failed ? -1 : 0;
}

int
par_finish(struct par *p, bool expire_all)
{
    if (p->ring[p->filling % RING].n) submit(p, false);
    merge_done(p, p->filling);
    if (expire_all && !p->failed) {
        submit(p, true);
        merge_done(p, p->filling);
    }
    return p->failed ? -1 : 0;
}

unsigned
par_default_threads(void)
{
    cpu_set_t set;
    long online;
    int n = 0;

    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) {
        online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int)(online > 64 ? 64 : online) : 1;
    }
    return n > 64 ? 64 : (unsigned)n;
}

struct par *
par_new(struct pdb *db, const struct par_opts *o)
{
    struct par *p = xcalloc(1, sizeof(*p));
    struct corr_opts copts;
    size_t i;
    unsigned k;

    p->db = db;
    p->o = *o;
    p->nthreads = o->threads ? o->threads : 1;
    if (p->nthreads > 64) p->nthreads = 64;
    /* computed now, read by every thread later */
    (void)pdb_context_keep(db);
    p->nshards = par_route_init(&p->route, db, p->nthreads);
    p->sync = par_sync_new(p->nshards);
    par_sync_set_idle(p->sync, idle_classify, p);
    if (o->fixed_now) {
        p->now.sec = (int64_t)(o->fixed_now / 1000);
        p->now.usec = (int32_t)(o->fixed_now % 1000) * 1000;
        p->parse.now = &p->now;
    }
    p->ring = xcalloc(RING, sizeof(*p->ring));
    for (k = 0; k < RING; k++)
        for (i = 0; i < BATCH; i++) p->ring[k].slots[i].m = msg_new();
    p->mrecs = xcalloc(p->nthreads, sizeof(*p->mrecs));
    p->mn = xcalloc(p->nthreads, sizeof(*p->mn));
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->shards = xcalloc(p->nthreads, sizeof(*p->shards));
    p->nalloc = p->nthreads;
    for (k = 0; k < p->nthreads; k++) {
        struct shard *s = &p->shards[k];
        s->par = p;
        s->index = k;
        s->scratch = pdb_scratch_new();
        if (k < p->nshards) {
            copts = o->limits;
            copts.emit = on_emit;
            copts.log = o->log;
            copts.clock = NULL;
            copts.arg = s;
            s->corr = corr_new(db, &copts);
        }
    }
    for (k = 0; k < p->nthreads; k++)
        if (pthread_create(&p->shards[k].thread, NULL, worker, &p->shards[k]) != 0) {
            p->nthreads = k; /* par_free joins those */
            par_free(p);
            return NULL;
        }
    return p;
}

void
par_free(struct par *p)
{
    unsigned k, n;
    size_t i;

    if (!p) return;
    n = p->nthreads;
    /* the threads finish what was handed over (not merged: par_finish was not called) */
    pthread_mutex_lock(&p->lock);
    p->want = p->submitted;
    while (p->submitted > p->merged && p->ring[(p->submitted - 1) % RING].left)
        pthread_cond_wait(&p->done, &p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (k = 0; k < n; k++) pthread_join(p->shards[k].thread, NULL);
    for (k = 0; k < p->nalloc; k++) {
        struct shard *s = &p->shards[k];
        corr_free(s->corr);
        pdb_scratch_free(s->scratch);
        buf_free(&s->id);
        for (i = 0; i < RING; i++) {
            buf_free(&s->out[i]);
            free(s->recs[i]);
        }
    }
    free(p->shards);
    for (k = 0; k < RING; k++) {
        for (i = 0; i < BATCH; i++) msg_unref(p->ring[k].slots[i].m);
        buf_free(&p->ring[k].text);
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

unsigned
par_shards(const struct par *p)
{
    return p->nshards;
}

void
par_stats(const struct par *p, struct corr_stats *out)
{
    unsigned k;

    memset(out, 0, sizeof(*out));
    for (k = 0; k < p->nshards; k++) {
        struct corr_stats s;
        corr_stats(p->shards[k].corr, &s);
        out->processed += s.processed;
        out->matched += s.matched;
        out->unknown += s.unknown;
        out->generated += s.generated;
        out->contexts_created += s.contexts_created;
        out->contexts_expired += s.contexts_expired;
        out->contexts_open += s.contexts_open;
        out->contexts_refused += s.contexts_refused;
        out->contexts_evicted += s.contexts_evicted;
        out->rate_evicted += s.rate_evicted;
        out->messages_dropped += s.messages_dropped;
        out->bytes_dropped += s.bytes_dropped;
        out->rate_limited += s.rate_limited;
        out->rate_buckets += s.rate_buckets;
        out->context_bytes += s.context_bytes;
    }
}
