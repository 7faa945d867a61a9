/*
 * par: the parallel engine's pieces (see par.h and doc/parallel.md): which
 * shard owns a message, split messages, balancing and the merge, which the
 * pipeline (pipeline.c: batches, the threads, the two phases) runs on N
 * threads for `corral match -j N` and corrald's workers.
 *
 * The merge puts out, for each input position, the timeout messages of all shards in the
 * order one timer wheel fires them (expires, then order, then arming
 * number: the shards number their arms by input position, and a position
 * arms at most one timer per step, see below), then the input message and
 * what its match actions generated.  The output is byte for byte that of
 * one thread; nothing is sorted after the fact.
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
 * Sigma correlation rules (sigma.h) feed on messages of any rule: when they
 * all group by the same fields and no patterndb rule has a context, every
 * message goes by the hash of its values of those fields; otherwise one
 * shard.
 *
 * Limits: with split limits (corrald) each shard enforces 1/N of
 * max-contexts, max-context-memory and max-rate-buckets (and of each
 * rule's share of them), so a flood is refused at the same totals, but
 * which message is refused at the brink depends on how keys fall into
 * shards (documented in corral-rules(5)); `corral match -j` gives each
 * shard one engine's limits.
 */
#include "engine/par.h"
#include "engine/corrkey.h"
#include "engine/sigma.h"
#include "engine/hash.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ANY_SHARD       PAR_ANY_SHARD
#define STATEFUL_WEIGHT 4

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
    /* Sigma correlations: their rules match messages of any rule or none, so their groups' events
     * meet in one shard only when every message goes by its group-by values; that holds when all
     * correlations group by the same fields and no patterndb rule needs a context's shard */
    if (pdb_sigma(db) && sigma_ncorrelations(pdb_sigma(db)) && rt->nshards > 1) {
        int k = sigma_correlation_key(pdb_sigma(db), rt->sigma_key);
        bool contexts = false;
        for (i = 0; i < pdb_nrules(db) && !contexts; i++) {
            const struct pdb_rule *r = pdb_rule_at(db, i);
            contexts = r->context_id || rate_limited(r) || r->nalso;
        }
        if (k < 0 || contexts)
            rt->nshards = 1;
        else {
            rt->sigma_route = true;
            rt->nsigma_key = (size_t)k;
        }
    }
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

/* The shard of m's values of the Sigma correlations' group-by fields (an absent one is ""). */
static unsigned
sigma_owner(const struct par_route *rt, const struct msg *m)
{
    struct hash_state st;
    size_t i, n;

    hash_begin(&st);
    for (i = 0; i < rt->nsigma_key; i++) {
        const char *v = msg_get(m, rt->sigma_key[i], &n);
        uint32_t len = v ? (uint32_t)n : 0;
        hash_add(&st, &len, sizeof(len));
        if (v) hash_add(&st, v, n);
    }
    return corrkey_shard(hash_end(&st), rt->nshards);
}

unsigned
par_owner(const struct par_route *rt, const struct msg *m, const struct pdb_rule *r, struct buf *id)
{
    if (rt->nshards <= 1) return 0;
    if (rt->sigma_route) return sigma_owner(rt, m);
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
        uint64_t pos = UINT64_MAX, next = UINT64_MAX;
        unsigned lead = 0;
        for (k = 0; k < n; k++) {
            uint64_t p;
            if (cur[k] == nrecs[k]) continue;
            p = recs[k][cur[k]].pos;
            if (p < pos)
                next = pos, pos = p, lead = k;
            else if (p < next)
                next = p;
        }
        if (pos == UINT64_MAX) return 0;
        /* the usual case: before next, only shard lead has records, and at a position only one
         * shard has records the rules below take them in that shard's order */
        if (pos < next) {
            const struct par_rec *r = &recs[lead][cur[lead]];
            for (; cur[lead] < nrecs[lead] && r->pos < next; r++) {
                if ((rc = fn(arg, lead, r))) return rc;
                cur[lead]++;
            }
            continue;
        }
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

/* ---- balancing ---- */

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
        if (*ITEM_SHARD(i) == PAR_NO_SHARD)
            continue;
        else if (*ITEM_SHARD(i) != ANY_SHARD)
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
