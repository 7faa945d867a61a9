/*
 * corr: correlation contexts, their timers, rule actions and generated
 * messages.  The flow for one message follows syslog-ng 3.38's db-parser:
 *
 *   1. advance time to min(stamp, clock), expiring contexts (timeout actions)
 *   2. classify; if the rule has a context-id, find or create its context,
 *      record .classifier.context_id, apply the rule's values over the
 *      context, append the message and re-arm the context's timer
 *   3. emit the message, then run the rule's match actions
 *
 * Contexts live in a hash table (hash.c) keyed by scope fields and id; their
 * timers are embedded in them (timerwheel.c).  A context stores compact
 * copies of its messages.
 *
 * Limits (corral's own, against floods): the number of contexts, messages
 * and bytes per context (the oldest messages go), and bytes of all contexts.
 * The global limits are shared fairly: each rule that opens contexts is
 * guaranteed a share, and beyond it may only use what the unused shares of
 * the other rules leave free (may_open(), fits()), so that a flood matching
 * one rule cannot keep another from correlating; a rule with no room left
 * evicts its own smallest, oldest contexts rather than refuse a new key
 * (evict_small()).  Rate-limit buckets are shared the same way, a rule
 * without room evicting its least-used bucket (make_room()), and freed once
 * full again (they then mean nothing), from a timer wheel of their own.
 *
 * tests/compat/corr_diff.py compares this engine with syslog-ng 3.38's
 * pdbtool on random scenarios.  Behaviours of 3.38 kept on purpose, as they
 * are deterministic: contexts due in the same second fire in the order they
 * entered that second (arm()); timeout actions run with the clock at the
 * context's target (action_now()); a create-context over an open context
 * detaches it, and an expiring context detaches whatever holds its key
 * (detach()); pdbtool's final expiry steps through time (corr_expire_all()).
 *
 * syslog-ng bugs that corral does not copy (the tests avoid them):
 *   - rate="N/S" with N > 256*S: syslog-ng dies of a division by zero at the
 *     second run of the action; corral refills elapsed*N/S (rate_allows()).
 *   - a context created with timeout 0 by a timeout action: syslog-ng puts
 *     it in the timer slot being fired and loses it (it never fires, pdbtool
 *     never ends, a message joining it corrupts the timer lists); corral
 *     fires it a second later (arm()).
 *   - a timeout action that creates a context of its own rule repeats for
 *     ever: pdbtool never ends; corral's final expiry stops after a bound.
 *   - a context-timeout of exactly 1024 armed at a second s with s % 1024 == 0
 *     (the first second of a rotation of the wheel's first level): its
 *     target, s + 1024, is not beyond that level, so 3.38 files it in slot
 *     0, the slot it is in, which it fires on the next advance: the context
 *     expires at the next second the wheel sees, up to 1023 s early.  corral
 *     keeps it through second s + 1024, as any other.
 * Differences of corral's own: generated messages from a context carry its
 * .classifier.context_id (run_actions()); a rule's also-correlate names
 * further rules whose contexts its messages join (join_also(); syslog-ng
 * ignores the attribute).
 */
#include "engine/corr.h"
#include "engine/clock.h"
#include "engine/corrkey.h"
#include "engine/durable.h"
#include "engine/evidence.h"
#include "engine/filter.h"
#include "engine/hash.h"
#include "engine/sigma.h"
#include "engine/timerwheel.h"
#include "engine/wire.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ctx {
    struct tw_timer timer; /* first member: the timer callback gets the context back */
    /* in corr.contexts; a detached context is in no table and its node.next
     * links the detached list instead */
    struct hash_node node;
    struct ctx *dprev; /* detached list */
    bool detached;     /* replaced: no longer found by its key, still times out */
    enum pdb_scope scope;
    uint32_t hostlen, proglen, pidlen, idlen;
    char *key; /* host, program, pid and id, back to back */
    /* The live messages are msgs[0..nmsgs), a window into base[0..capmsgs):
     * dropping the oldest moves msgs forward instead of shifting the array,
     * and one slot past the window is always free so ctx_env can lend the
     * array to templates with the message being built appended, uncopied. */
    struct msg **base;
    struct msg **msgs;
    size_t nmsgs, capmsgs;
    const struct pdb_rule *rule; /* the last rule that matched: its timeout actions run */
    struct share *share;         /* the rule that opened it, whose share it counts in */
    uint64_t target; /* last moment the context is alive (ms); the timer fires just after */
    size_t bytes;
    size_t msgbytes; /* of bytes, what the live messages hold (msg_memory): what emptying frees */
    /* in its share's list of small contexts (see evict_small()): lclass is the message
     * count it is listed under, 0 when in no list */
    struct ctx *lprev, *lnext;
    unsigned lclass;
};

/*
 * A full share makes room by evicting its own contexts that hold at most
 * EVICT_MSGS messages, the fewest first and, among those, the oldest (see
 * evict_small()).  EVICT_SAMPLE bounds how far one eviction looks past
 * contexts that may not go (those the message being processed uses).
 */
#define EVICT_MSGS   4
#define EVICT_SAMPLE 8
/* Evictions one new context or message may cause at most (memory: several small for one large). */
#define EVICT_ROUNDS 64

/* The contexts a rule opened, against its share of the limits (see may_open()). */
struct share {
    const struct pdb_rule *rule;
    bool opens; /* the rule has a context-id or a create-context: it has a share */
    bool rates; /* the rule has a rate-limited action: it has a share of the buckets */
    size_t contexts, bytes, buckets;
    /* kept across reloads, by rule id */
    uint64_t refused, dropped, evicted;
    uint64_t rate_limited, rate_refused, rate_evicted;
    /* contexts of 1 .. EVICT_MSGS messages, a list per count, oldest first */
    struct ctx *small[EVICT_MSGS], *small_tail[EVICT_MSGS];
    /* its buckets, least recently used first */
    struct bucket *lru, *lru_tail;
};

/* rate="N/S" state for one (rule, action, scope fields[, rate-key]) */
struct bucket {
    struct tw_timer timer;      /* first member; in corr.bucket_wheel, due when full again */
    struct hash_node node;      /* in corr.rates */
    struct bucket *prev, *next; /* in its share's LRU list */
    struct share *share;
    char *key; /* the rule id and a NUL first (a reload finds the rule by it), then the rest */
    size_t keylen;
    uint64_t last_check; /* seconds */
    uint32_t tokens, span, rate;
};

struct corr {
    struct pdb *db;
    struct sigma_scratch *sigma; /* for the Sigma rules of db, made on first use */
    struct corr_opts opts;
    struct tw *wheel;
    uint64_t last_tick; /* clock at the last message or tick */

    struct hash_table contexts;
    struct ctx *detached; /* see detach() */
    size_t ndetached;

    struct hash_table rates;
    struct tw *bucket_wheel;
    uint64_t buckets_refused; /* action runs suppressed for want of a bucket */

    /* by rule index; the sums of the guarantees each rule has not used yet */
    struct share *shares;
    size_t nshares;
    size_t share_contexts, share_bytes; /* guaranteed to each rule that opens contexts */
    size_t share_buckets;               /* guaranteed to each rule with a rate-limited action */
    size_t reserved_contexts, reserved_bytes, reserved_buckets;
    /*
     * While a message's own rule or a join places it (corr_part_main(),
     * corr_part_also()): the contexts it uses, which no eviction may take.
     * NULL elsewhere, and then nothing is evicted: timeout and match actions
     * (create-context) hold contexts this engine does not track.
     */
    const struct corr_part *pins;

    /*
     * While a timeout action runs: the expiring context's target.  syslog-ng
     * runs timeout actions with its clock at the target second, not at the
     * time that made it expire; rate limits and contexts created there count
     * from it.
     */
    uint64_t firing;
    const struct ctx *expiring; /* the context whose timeout actions run, for corr_firing_key() */

    struct corr_stats stats;
    struct msg **env; /* scratch: a context's messages plus one */
    size_t capenv;
    struct buf id, key; /* scratch */
    struct buf value;
    struct evidence_names ev;
};

static uint64_t
clock_now(const struct corr *c)
{
    return c->opts.clock ? c->opts.clock(c->opts.arg) : clock_wall_ms();
}

/* The context after x in the detached list. */
static struct ctx *
detached_next(const struct ctx *x)
{
    return x->node.next ? hash_entry(x->node.next, struct ctx, node) : NULL;
}

/* The context a node of corr.contexts belongs to (NULL for NULL). */
static struct ctx *
ctx_of(const struct hash_node *n)
{
    return n ? hash_entry(n, struct ctx, node) : NULL;
}

static void logf_(struct corr *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
logf_(struct corr *c, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;

    if (!c->opts.log) return;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    c->opts.log(c->opts.arg, buf_str(&b));
    buf_free(&b);
}

/* ---- shares of the limits ---- */

static bool
opens_contexts(const struct pdb_rule *r)
{
    size_t i;

    if (r->context_id) return true;
    for (i = 0; i < r->nactions; i++)
        if (r->actions[i].kind == PDB_ACTION_CREATE_CONTEXT) return true;
    return false;
}

static bool
has_rates(const struct pdb_rule *r)
{
    size_t i;

    for (i = 0; i < r->nactions; i++)
        if (r->actions[i].rate_n) return true;
    return false;
}

static size_t
unused(size_t guarantee, size_t used)
{
    return used < guarantee ? guarantee - used : 0;
}

/* Sets a rule's usage, keeping the sums of unused guarantees. */
static void
share_use(struct corr *c, struct share *s, size_t contexts, size_t bytes)
{
    size_t gc = s->opens ? c->share_contexts : 0, gb = s->opens ? c->share_bytes : 0;

    /* unsigned arithmetic wraps back: the sums never go below zero */
    c->reserved_contexts += unused(gc, contexts) - unused(gc, s->contexts);
    c->reserved_bytes += unused(gb, bytes) - unused(gb, s->bytes);
    s->contexts = contexts;
    s->bytes = bytes;
}

/* Sets the number of rate buckets a rule holds, keeping the sum of unused guarantees. */
static void
bucket_use(struct corr *c, struct share *s, size_t buckets)
{
    size_t g = s->rates ? c->share_buckets : 0;

    c->reserved_buckets += unused(g, buckets) - unused(g, s->buckets);
    s->buckets = buckets;
}

/*
 * The shares for db, every rule's usage zero; counters carried over from
 * the old shares (of olddb) by rule id.  Open contexts are counted in again
 * by the caller (share_use()).
 */
static void
shares_init(struct corr *c, struct pdb *db, const struct pdb *olddb, const struct share *old,
            size_t nold)
{
    size_t i, owners = 0, raters = 0, n = pdb_nrules(db);

    c->shares = xcalloc(n + 1, sizeof(*c->shares));
    c->nshares = n;
    for (i = 0; i < n; i++) {
        struct share *s = &c->shares[i];
        const struct pdb_rule *o;
        s->rule = pdb_rule_at(db, i);
        s->opens = opens_contexts(s->rule);
        s->rates = has_rates(s->rule);
        owners += s->opens;
        raters += s->rates;
        if (old && (o = pdb_rule_by_id((struct pdb *)olddb, s->rule->id)) && o->index < nold) {
            const struct share *os = &old[o->index];
            s->refused = os->refused;
            s->dropped = os->dropped;
            s->evicted = os->evicted;
            s->rate_limited = os->rate_limited;
            s->rate_refused = os->rate_refused;
            s->rate_evicted = os->rate_evicted;
        }
    }
    c->share_contexts = c->opts.context_share ? c->opts.context_share
                                              : c->opts.max_contexts / (owners ? owners : 1);
    if (!c->share_contexts) c->share_contexts = 1;
    if (c->share_contexts > c->opts.max_contexts) c->share_contexts = c->opts.max_contexts;
    /* the same fraction of the memory */
    c->share_bytes = (size_t)((double)c->opts.max_context_memory * (double)c->share_contexts /
                              (double)c->opts.max_contexts);
    c->reserved_contexts = owners * c->share_contexts;
    c->reserved_bytes = owners * c->share_bytes;
    /* buckets alike: a flood of keys under one rule's rate= cannot take another rule's */
    c->share_buckets = c->opts.max_rate_buckets / (raters ? raters : 1);
    if (!c->share_buckets) c->share_buckets = 1;
    c->reserved_buckets = raters * c->share_buckets;
}

static void reshare(struct corr *c, struct pdb *db);

/* The share of a rule of the current database. */
static struct share *
share_of(struct corr *c, const struct pdb_rule *r)
{
    /* rules loaded into the database after corr_new(): shares for them too */
    if (r->index >= c->nshares) reshare(c, c->db);
    return &c->shares[r->index];
}

/*
 * Whether rule s may open a context now.  Beyond its guaranteed share, a
 * rule leaves the unused shares of the others free: a flood matching one
 * rule fills its share and what nobody reserves, never another rule's.
 */
static bool
may_open(const struct corr *c, const struct share *s)
{
    size_t open = c->contexts.count + c->ndetached, mem = c->stats.context_bytes;
    size_t gc = s->opens ? c->share_contexts : 0, gb = s->opens ? c->share_bytes : 0;

    if (open >= c->opts.max_contexts || mem >= c->opts.max_context_memory) return false;
    /* over its share, s reserves nothing itself: the sums are the others' */
    if (s->contexts >= gc && open + c->reserved_contexts >= c->opts.max_contexts) return false;
    if (s->bytes >= gb && mem + c->reserved_bytes >= c->opts.max_context_memory) return false;
    return true;
}

/* ---- eviction of small contexts ---- */

/*
 * A rule's share full of its own contexts must not keep a new key of the
 * same rule out: 30,000 spoofed one-off lines from distinct addresses would
 * otherwise fill corral.sshd.auth.failed's share and the real brute force
 * that follows would get no context.  So a rule at its limits evicts one of
 * its own contexts that hold few messages (at most EVICT_MSGS), the fewest
 * first, the oldest of those first: a context that has grown shows that its
 * key repeats (an attacking address, a session), a one-line context is what
 * a flood of spoofed keys leaves behind, and a new key deserves the chance
 * the oldest one-liner has had.  Contexts of more than EVICT_MSGS messages
 * are never evicted: a flood that wants to keep a share full must send that
 * many lines per key within the context timeout, and such contexts then
 * look like what they are (five failures raise the brute-force alert).  The
 * lists cost a few pointer writes while a context has at most EVICT_MSGS
 * messages, nothing after.  An evicted context is dropped as a context of a
 * removed rule is at a reload: its timeout actions do not run (they would
 * report on a burst that did not end), and it is logged and counted per rule.
 */

static void
small_unlink(struct share *s, struct ctx *x)
{
    unsigned i = x->lclass - 1;

    if (!x->lclass) return;
    if (x->lprev)
        x->lprev->lnext = x->lnext;
    else
        s->small[i] = x->lnext;
    if (x->lnext)
        x->lnext->lprev = x->lprev;
    else
        s->small_tail[i] = x->lprev;
    x->lclass = 0;
}

/* Lists x by its message count, last (the newest) of its list. */
static void
small_link(struct share *s, struct ctx *x)
{
    unsigned i;

    if (!x->nmsgs || x->nmsgs > EVICT_MSGS) return;
    i = (unsigned)x->nmsgs - 1;
    x->lclass = i + 1;
    x->lnext = NULL;
    x->lprev = s->small_tail[i];
    if (x->lprev)
        x->lprev->lnext = x;
    else
        s->small[i] = x;
    s->small_tail[i] = x;
}

/* After x's message count changed. */
static void
small_update(struct ctx *x)
{
    if (x->lclass == (x->nmsgs <= EVICT_MSGS ? x->nmsgs : 0)) return;
    small_unlink(x->share, x);
    small_link(x->share, x);
}

static bool
pinned(const struct corr *c, const struct ctx *x)
{
    size_t i;

    if (x == c->pins->x) return true;
    for (i = 0; i < PDB_ALSO_MAX; i++)
        if (x == c->pins->also[i]) return true;
    return false;
}

static void ctx_destroy(struct corr *c, struct ctx *x);

/*
 * Evicts the context of s with the fewest messages, the oldest of them,
 * never self nor a pinned one; false when there is none (or eviction is off).
 */
static bool
evict_small(struct corr *c, struct share *s, const struct ctx *self)
{
    struct ctx *x;
    unsigned i, n;

    if (!c->pins) return false;
    for (i = 0; i < EVICT_MSGS; i++)
        for (x = s->small[i], n = 0; x && n < EVICT_SAMPLE; x = x->lnext, n++) {
            if (x == self || pinned(c, x)) continue;
            c->stats.contexts_evicted++;
            if (s->evicted++ % 10000 == 0)
                logf_(c,
                      "rule %s: correlation context of %zu message(s) evicted for a new one: the "
                      "rule is at its share (%zu contexts, %zu bytes); %llu evicted for this rule "
                      "so far",
                      s->rule->id, x->nmsgs, s->contexts, s->bytes, (unsigned long long)s->evicted);
            ctx_destroy(c, x);
            return true;
        }
    return false;
}

static void
refuse(struct corr *c, struct share *s)
{
    c->stats.contexts_refused++;
    if (s->refused++ % 10000 == 0)
        logf_(c,
              "rule %s: correlation context not created: %zu open (max-contexts %zu), %zu of "
              "them the rule's (share %zu), %zu bytes (max-context-memory %zu); %llu refused "
              "for this rule so far",
              s->rule->id, c->contexts.count + c->ndetached, c->opts.max_contexts, s->contexts,
              c->share_contexts, (size_t)c->stats.context_bytes, c->opts.max_context_memory,
              (unsigned long long)s->refused);
}

struct corr *
corr_new(struct pdb *db, const struct corr_opts *opts)
{
    struct corr *c = xcalloc(1, sizeof(*c));

    c->db = db;
    c->opts = *opts;
    if (!c->opts.max_contexts) c->opts.max_contexts = 1000000;
    if (!c->opts.max_context_msgs) c->opts.max_context_msgs = 10000;
    if (!c->opts.max_rate_buckets) c->opts.max_rate_buckets = 1000000;
    if (!c->opts.max_context_bytes) c->opts.max_context_bytes = (size_t)4 << 20;
    if (!c->opts.max_context_memory) c->opts.max_context_memory = (size_t)1 << 30;
    if (!c->opts.evidence_lines) c->opts.evidence_lines = EVIDENCE_LINES;
    if (c->opts.evidence_lines == CORR_EVIDENCE_NONE) c->opts.evidence_lines = 0;
    if (!c->opts.evidence_bytes) c->opts.evidence_bytes = EVIDENCE_BYTES;
    evidence_names_init(&c->ev);
    c->last_tick = clock_now(c);
    c->wheel = tw_new(0);
    c->bucket_wheel = tw_new(0);
    hash_table_init(&c->contexts, 1024);
    hash_table_init(&c->rates, 256);
    shares_init(c, db, NULL, NULL, 0);
    return c;
}

static void
ctx_free(struct ctx *x)
{
    size_t i;

    for (i = 0; i < x->nmsgs; i++) msg_unref(x->msgs[i]);
    free(x->base);
    free(x->key);
    free(x);
}

void
corr_free(struct corr *c)
{
    size_t i;
    struct hash_node *n, *next;
    struct ctx *x, *xnext;

    if (!c) return;
    sigma_scratch_free(c->sigma);
    for (n = hash_table_iter(&c->contexts, &i, NULL); n; n = next) {
        next = hash_table_iter(&c->contexts, &i, n);
        ctx_free(ctx_of(n));
    }
    for (x = c->detached; x; x = xnext) {
        xnext = detached_next(x);
        ctx_free(x);
    }
    hash_table_free(&c->contexts);
    for (n = hash_table_iter(&c->rates, &i, NULL); n; n = next) {
        struct bucket *b = hash_entry(n, struct bucket, node);
        next = hash_table_iter(&c->rates, &i, n);
        free(b->key);
        free(b);
    }
    hash_table_free(&c->rates);
    tw_free(c->wheel);
    tw_free(c->bucket_wheel);
    free(c->shares);
    free(c->env);
    buf_free(&c->id);
    buf_free(&c->key);
    buf_free(&c->value);
    free(c);
}

uint64_t
corr_now(const struct corr *c)
{
    return tw_now(c->wheel);
}

void
corr_stats(const struct corr *c, struct corr_stats *out)
{
    *out = c->stats;
    out->contexts_open = c->contexts.count + c->ndetached;
    out->rate_buckets = c->rates.count;
    out->sigma_groups = c->sigma ? sigma_scratch_groups(c->sigma) : 0;
    out->sigma_dropped = c->sigma ? sigma_scratch_dropped(c->sigma) : 0;
    out->sigma_evicted = c->sigma ? sigma_scratch_evicted(c->sigma) : 0;
    out->sigma_bytes = c->sigma ? sigma_scratch_bytes(c->sigma) : 0;
}

void
corr_stats_add_events(struct corr_stats *sum, const struct corr_stats *o)
{
    sum->processed += o->processed;
    sum->matched += o->matched;
    sum->unknown += o->unknown;
    sum->generated += o->generated;
    sum->contexts_created += o->contexts_created;
    sum->contexts_expired += o->contexts_expired;
    sum->contexts_refused += o->contexts_refused;
    sum->contexts_evicted += o->contexts_evicted;
    sum->messages_dropped += o->messages_dropped;
    sum->bytes_dropped += o->bytes_dropped;
    sum->rate_limited += o->rate_limited;
    sum->rate_evicted += o->rate_evicted;
    sum->sigma_dropped += o->sigma_dropped;
    sum->sigma_evicted += o->sigma_evicted;
}

void
corr_stats_add(struct corr_stats *sum, const struct corr_stats *o)
{
    corr_stats_add_events(sum, o);
    sum->contexts_open += o->contexts_open;
    sum->rate_buckets += o->rate_buckets;
    sum->context_bytes += o->context_bytes;
    sum->sigma_groups += o->sigma_groups;
    sum->sigma_bytes += o->sigma_bytes;
}

void
corr_foreach_rule(const struct corr *c, void (*fn)(const struct corr_rule_stats *, void *),
                  void *arg)
{
    struct corr_rule_stats rs;
    size_t i;

    for (i = 0; i < c->nshares; i++) {
        const struct share *s = &c->shares[i];
        if (!s->opens && !s->rates && !s->contexts && !s->refused && !s->dropped && !s->evicted &&
            !s->rate_limited)
            continue;
        rs.rule_id = s->rule->id;
        rs.contexts = s->contexts;
        rs.bytes = s->bytes;
        rs.refused = s->refused;
        rs.dropped = s->dropped;
        rs.evicted = s->evicted;
        rs.buckets = s->buckets;
        rs.rate_limited = s->rate_limited;
        rs.rate_refused = s->rate_refused;
        rs.rate_evicted = s->rate_evicted;
        fn(&rs, arg);
    }
}

void
corr_add_rule_counts(struct corr *c, const struct corr_rule_stats *rs)
{
    const struct pdb_rule *r = pdb_rule_by_id(c->db, rs->rule_id);
    struct share *s;

    if (!r) return;
    s = share_of(c, r);
    s->refused += rs->refused;
    s->dropped += rs->dropped;
    s->evicted += rs->evicted;
    s->rate_limited += rs->rate_limited;
    s->rate_refused += rs->rate_refused;
    s->rate_evicted += rs->rate_evicted;
}

/* ---- context keys (corrkey.h) ---- */

static bool
key_equal(const struct ctx *x, const struct corrkey *k)
{
    const char *p = x->key;

    if (x->scope != k->scope || x->hostlen != k->hostlen || x->proglen != k->proglen ||
        x->pidlen != k->pidlen || x->idlen != k->idlen)
        return false;
    if (memcmp(p, k->host, k->hostlen)) return false;
    p += k->hostlen;
    if (memcmp(p, k->prog, k->proglen)) return false;
    p += k->proglen;
    if (memcmp(p, k->pid, k->pidlen)) return false;
    p += k->pidlen;
    return memcmp(p, k->id, k->idlen) == 0;
}

static struct ctx *
ctx_lookup(struct corr *c, const struct corrkey *k, uint64_t h)
{
    struct hash_node *n;

    for (n = hash_table_find(&c->contexts, h); n; n = hash_table_find_next(n))
        if (key_equal(ctx_of(n), k)) return ctx_of(n);
    return NULL;
}

/* Takes a context out of the hash table; its timer keeps running. */
static void
table_remove(struct corr *c, struct ctx *x)
{
    hash_table_remove(&c->contexts, &x->node);
}

static void
table_insert(struct corr *c, struct ctx *x)
{
    hash_table_add(&c->contexts, &x->node, x->node.hash);
}

static void
detached_push(struct corr *c, struct ctx *x)
{
    x->detached = true;
    x->dprev = NULL;
    x->node.next = c->detached ? &c->detached->node : NULL;
    if (c->detached) c->detached->dprev = x;
    c->detached = x;
    c->ndetached++;
}

/*
 * syslog-ng 3.38 keeps contexts in a hash table by key and, separately, in
 * its timer wheel, and a create-context action inserts its new context
 * without looking for an old one under the same key.  The old context is
 * then only gone from the table: messages no longer find it, but its timer
 * still runs and its timeout actions fire when it expires.  When any context
 * expires, syslog-ng removes from the table whatever context holds that key
 * at the time, which detaches a context that took the key over in the
 * meantime.  corral keeps both behaviours (emulated, they are deterministic):
 * such contexts are "detached".
 */
static void
detach(struct corr *c, struct ctx *x)
{
    if (x->detached) return;
    table_remove(c, x);
    detached_push(c, x);
}

/* Removes a context from the table or the detached list and frees it. */
static void
ctx_destroy(struct corr *c, struct ctx *x)
{
    if (x->detached) {
        struct ctx *next = detached_next(x);
        if (x->dprev)
            x->dprev->node.next = x->node.next;
        else
            c->detached = next;
        if (next) next->dprev = x->dprev;
        c->ndetached--;
    } else {
        table_remove(c, x);
    }
    tw_cancel(c->wheel, &x->timer);
    c->stats.context_bytes -= x->bytes;
    if (x->share) {
        small_unlink(x->share, x);
        share_use(c, x->share, x->share->contexts - 1, x->share->bytes - x->bytes);
    }
    ctx_free(x);
}

/* Counts a context (its bytes counted already) in its rule's share, and lists it there if small
 * (the lists of a share it had before a reload went with that share). */
static void
ctx_own(struct corr *c, struct ctx *x, struct share *s)
{
    x->share = s;
    share_use(c, s, s->contexts + 1, s->bytes + x->bytes);
    x->lclass = 0;
    small_link(s, x);
}

static void
ctx_grow(struct corr *c, struct ctx *x, size_t n)
{
    x->bytes += n;
    c->stats.context_bytes += n;
    share_use(c, x->share, x->share->contexts, x->share->bytes + n);
}

static void
ctx_shrink(struct corr *c, struct ctx *x, size_t n)
{
    x->bytes -= n;
    c->stats.context_bytes -= n;
    share_use(c, x->share, x->share->contexts, x->share->bytes - n);
}

/* A new context of rule r, in neither the table nor the detached list; NULL at the limits. */
static struct ctx *
ctx_alloc(struct corr *c, const struct corrkey *k, uint64_t h, const struct pdb_rule *r)
{
    struct share *s = share_of(c, r);
    struct ctx *x;
    int rounds = 0;

    while (!may_open(c, s))
        if (rounds++ == EVICT_ROUNDS || !evict_small(c, s, NULL)) {
            refuse(c, s);
            return NULL;
        }
    x = xcalloc(1, sizeof(*x));
    tw_timer_init(&x->timer);
    x->node.hash = h;
    x->scope = k->scope;
    x->hostlen = (uint32_t)k->hostlen;
    x->proglen = (uint32_t)k->proglen;
    x->pidlen = (uint32_t)k->pidlen;
    x->idlen = (uint32_t)k->idlen;
    x->bytes = corrkey_parts_len(k) + 1;
    x->key = xmalloc(x->bytes);
    *corrkey_put_parts(k, x->key) = '\0';
    x->bytes += sizeof(*x);
    c->stats.contexts_created++;
    c->stats.context_bytes += x->bytes;
    ctx_own(c, x, s);
    return x;
}

static struct ctx *
ctx_create(struct corr *c, const struct corrkey *k, uint64_t h, const struct pdb_rule *r)
{
    struct ctx *x = ctx_alloc(c, k, h, r);

    if (x) table_insert(c, x);
    return x;
}

/* The key of a context, pointing into it. */
static void
ctx_key(const struct ctx *x, struct corrkey *k)
{
    k->scope = x->scope;
    k->host = x->key;
    k->hostlen = x->hostlen;
    k->prog = x->key + x->hostlen;
    k->proglen = x->proglen;
    k->pid = k->prog + x->proglen;
    k->pidlen = x->pidlen;
    k->id = k->pid + x->pidlen;
    k->idlen = x->idlen;
}

/* Drop the oldest message (the newest are kept: back-references count from
 * the end) and return the memory it held. */
static size_t
ctx_drop_oldest(struct ctx *x)
{
    size_t freed = msg_memory(x->msgs[0]);

    x->msgbytes -= freed;
    msg_unref(x->msgs[0]);
    x->msgs++;
    x->nmsgs--;
    /* a context at its limit drops one on each append: the next to go has
     * long left the cache, so ask for it now rather than stall then */
    if (x->nmsgs) msg_prefetch(x->msgs[0], false, true);
    return freed;
}

/* Append m (size: its msg_memory), keeping the spare slot; returns how many bytes the array grew.
 */
static size_t
ctx_push(struct ctx *x, struct msg *m, size_t size)
{
    size_t head = (size_t)(x->msgs - x->base), before = x->capmsgs;

    if (head + x->nmsgs + 2 > x->capmsgs) {
        if (head >= x->capmsgs / 4 && x->nmsgs + 2 <= x->capmsgs) {
            /* a quarter of the array is dead: compacting costs at most
             * three pointer moves per message appended since the last one */
            memmove(x->base, x->msgs, x->nmsgs * sizeof(*x->msgs));
        } else {
            /* most contexts hold a few messages: start small */
            if (head) memmove(x->base, x->msgs, x->nmsgs * sizeof(*x->msgs));
            x->capmsgs = x->capmsgs ? x->capmsgs * 2 : 4;
            x->base = xrealloc(x->base, x->capmsgs * sizeof(*x->base));
        }
        x->msgs = x->base;
    }
    x->msgs[x->nmsgs++] = m;
    x->msgbytes += size;
    return (x->capmsgs - before) * sizeof(*x->base);
}

/*
 * Whether all contexts may hold size more bytes in x once freed bytes of x's
 * messages are gone: within max_context_memory, and, beyond the rule's
 * share, within what the other rules' unused shares leave.
 */
static bool
memory_fits(const struct corr *c, const struct ctx *x, size_t freed, size_t size)
{
    const struct share *s = x->share;
    size_t gb = s->opens ? c->share_bytes : 0;
    size_t mem = c->stats.context_bytes - freed + size;
    size_t others = c->reserved_bytes - unused(gb, s->bytes);

    if (mem > c->opts.max_context_memory) return false;
    return s->bytes - freed + size <= gb || mem + others <= c->opts.max_context_memory;
}

static bool
fits(const struct corr *c, const struct ctx *x, size_t size)
{
    return x->bytes + size <= c->opts.max_context_bytes && memory_fits(c, x, 0, size);
}

static void
drop_for_bytes(struct corr *c, struct ctx *x)
{
    c->stats.bytes_dropped++;
    if (x->share->dropped++ % 10000 == 0)
        logf_(c,
              "rule %s: messages dropped from correlation contexts: %zu bytes in this context "
              "(max-context-bytes %zu), %llu in all (max-context-memory %zu, the rule's share "
              "%zu); %llu dropped from this rule's contexts so far",
              x->share->rule->id, x->bytes, c->opts.max_context_bytes,
              (unsigned long long)c->stats.context_bytes, c->opts.max_context_memory,
              c->share_bytes, (unsigned long long)x->share->dropped);
}

/*
 * Keeps m (owned) in x.  The window slides: the oldest messages go while
 * the context is over max_context_msgs or its memory limits, so that it
 * keeps the newest (back-references count from the end).  A message larger
 * than max_context_bytes on its own is kept alone.  When all contexts are
 * out of memory for this rule even with x emptied, m is not kept: the
 * context stays as it was (a new context always gets its first message; it
 * was admitted by may_open()).
 */
static void
ctx_append(struct corr *c, struct ctx *x, struct msg *m)
{
    size_t grown, size = msg_memory(m);

    if (x->nmsgs && !fits(c, x, size)) {
        if (!memory_fits(c, x, 0, size)) {
            /* kept as a sum: adding up a context of 10,000 messages on every append made a
             * context under memory pressure cost the square of its length */
            int rounds = 0;
            while (!memory_fits(c, x, x->msgbytes, size))
                if (rounds++ == EVICT_ROUNDS || !evict_small(c, x->share, x)) {
                    drop_for_bytes(c, x);
                    msg_unref(m);
                    return;
                }
        }
        while (x->nmsgs && !fits(c, x, size)) {
            ctx_shrink(c, x, ctx_drop_oldest(x));
            drop_for_bytes(c, x);
        }
    }
    if (x->nmsgs >= c->opts.max_context_msgs) {
        ctx_shrink(c, x, ctx_drop_oldest(x));
        c->stats.messages_dropped++;
        x->share->dropped++;
    }
    grown = ctx_push(x, m, size);
    ctx_grow(c, x, size + grown);
    small_update(x);
}

/* The time actions see: the correlation time, or a firing context's target. */
static uint64_t
action_now(const struct corr *c)
{
    return c->firing ? c->firing : tw_now(c->wheel);
}

/* ---- evaluation environments ---- */

static struct template_env
ctx_env(struct corr *c, struct ctx *x, struct msg *extra)
{
    struct template_env env;

    memset(&env, 0, sizeof(env));
    if (!x->base) {
        /* a context just created holds nothing yet */
        c->env = xgrow(c->env, &c->capenv, 1, sizeof(*c->env));
        c->env[0] = extra;
        env.msgs = c->env;
        env.nmsgs = extra ? 1 : 0;
    } else {
        /* the spare slot past the window takes extra: a borrowed pointer
         * that is never counted as a context message */
        if (extra) x->msgs[x->nmsgs] = extra;
        env.msgs = x->msgs;
        env.nmsgs = x->nmsgs + (extra ? 1 : 0);
    }
    env.context_id = x->key + x->hostlen + x->proglen + x->pidlen;
    env.context_id_len = x->idlen;
    return env;
}

/* ---- rate limits ---- */

/*
 * Buckets are shared among the rules with a rate= as contexts are (a
 * guaranteed share each, bucket_use(), may_hold_bucket()), so that 1,000,000
 * spoofed root logins with distinct hosts cannot take the buckets of the
 * brute-force alerts.  A rule with no room left makes it among its own
 * buckets (make_room()): a bucket past its window is what no bucket is and
 * goes first; else, of the EVICT_SAMPLE least recently used, the one with
 * the most tokens left, i.e. that has limited least (a key that ran once).
 * An evicted key starts again with a full bucket: at worst a few more
 * messages of a key that came back, never a new key silenced.
 */

/*
 * A bucket is due when full again, S seconds after its last refill: then it
 * is what a new bucket would be, and is freed.  One second more, as the
 * timeout actions of a context not yet fired run at its target (action_now()),
 * which may lie up to a second before the wheel's time.
 */
static void
bucket_arm(struct corr *c, struct bucket *b)
{
    tw_arm(c->bucket_wheel, &b->timer, (b->last_check + b->span + 1) * 1000);
}

static void
lru_unlink(struct share *s, struct bucket *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        s->lru = b->next;
    if (b->next)
        b->next->prev = b->prev;
    else
        s->lru_tail = b->prev;
}

/* Puts b last in its share's LRU list (b in no list). */
static void
lru_push(struct share *s, struct bucket *b)
{
    b->next = NULL;
    b->prev = s->lru_tail;
    if (b->prev)
        b->prev->next = b;
    else
        s->lru = b;
    s->lru_tail = b;
}

/* Frees a bucket (the wheel's callback, which has disarmed it). */
static void
bucket_free(struct tw_timer *t, void *arg)
{
    struct corr *c = arg;
    struct bucket *b = (struct bucket *)t;

    hash_table_remove(&c->rates, &b->node);
    if (b->share) {
        lru_unlink(b->share, b);
        bucket_use(c, b->share, b->share->buckets - 1);
    }
    free(b->key);
    free(b);
}

static void
bucket_drop(struct corr *c, struct bucket *b)
{
    tw_cancel(c->bucket_wheel, &b->timer);
    bucket_free(&b->timer, c);
}

/*
 * Credits a bucket gains in elapsed seconds: syslog-ng's fixed-point refill,
 * 8 bits of fraction, the clock moves on whole credits.  syslog-ng bug: with
 * N > 256*S the quantum is 0 and it dies of a division by zero (SIGFPE);
 * corral refills elapsed*N/S then.
 */
static uint64_t
credits(uint32_t n, uint32_t span, uint64_t elapsed)
{
    uint64_t quantum = ((uint64_t)span << 8) / n;

    return quantum ? (elapsed << 8) / quantum : elapsed * n / span;
}

/* The tokens b would have now, capped at its rate. */
static uint64_t
tokens_at(const struct bucket *b, uint64_t now)
{
    uint64_t t = (uint64_t)b->tokens +
                 credits(b->rate, b->span, now > b->last_check ? now - b->last_check : 0);

    return t > b->rate ? b->rate : t;
}

/* Whether rule s may take one more bucket (see may_open()). */
static bool
may_hold_bucket(const struct corr *c, const struct share *s)
{
    size_t held = c->rates.count, g = s->rates ? c->share_buckets : 0;

    if (held >= c->opts.max_rate_buckets) return false;
    if (s->buckets >= g && held + c->reserved_buckets >= c->opts.max_rate_buckets) return false;
    return true;
}

/* Frees one of s's buckets for a new key (see above); false when s holds none. */
static bool
make_room(struct corr *c, struct share *s, uint64_t now)
{
    struct bucket *b, *best = NULL;
    uint64_t best_t = 0;
    unsigned n;

    for (b = s->lru, n = 0; b && n < EVICT_SAMPLE; b = b->next, n++) {
        uint64_t t = tokens_at(b, now);
        if (t == b->rate) {
            /* past its window: as good as no bucket */
            bucket_drop(c, b);
            return true;
        }
        /* the larger share of its rate left (t/rate > best_t/best->rate) */
        if (!best || t * best->rate > best_t * b->rate) best = b, best_t = t;
    }
    if (!best) return false;
    c->stats.rate_evicted++;
    if (s->rate_evicted++ % 10000 == 0)
        logf_(c,
              "rule %s: rate limit bucket evicted for a new key: the rule holds %zu (its share "
              "%zu, max-rate-buckets %zu); %llu evicted for this rule so far",
              s->rule->id, s->buckets, c->share_buckets, c->opts.max_rate_buckets,
              (unsigned long long)s->rate_evicted);
    bucket_drop(c, best);
    return true;
}

/*
 * Whether action a of rule may run now.  The bucket is syslog-ng's: one per
 * rule, action and the rule's scope fields (of x's last message, or of m
 * without a context); a rate-key (a corral extension) adds its value to the
 * key, so that, say, each attacking address has a bucket of its own.
 */
static bool
rate_allows(struct corr *c, const struct pdb_rule *rule, const struct pdb_action *a, struct ctx *x,
            struct msg *m)
{
    struct corrkey k;
    struct bucket *b = NULL;
    struct share *s;
    struct hash_node *n;
    const struct msg *last = x ? x->msgs[x->nmsgs - 1] : m;
    uint64_t h, now = action_now(c) / 1000;
    size_t idx = (size_t)(a - rule->actions);

    if (!a->rate_n) return true;
    buf_reset(&c->key);
    buf_puts(&c->key, rule->id);
    buf_putc(&c->key, ':');
    buf_put_uint(&c->key, idx);
    if (a->rate_key) {
        struct template_env env;
        if (x)
            env = ctx_env(c, x, NULL);
        else
            template_env_single(&env, &m);
        buf_putc(&c->key, '\0');
        template_eval(a->rate_key, &env, &c->key);
    }
    corrkey_from_msg(&k, rule->scope, last, c->key.p, c->key.len);
    h = corrkey_hash(&k);
    /* the bucket key: the rule id, then the flattened struct corrkey (scope fields, "rule:action",
     * the rate-key) */
    buf_reset(&c->id);
    buf_puts(&c->id, rule->id);
    buf_putc(&c->id, '\0');
    buf_append(&c->id, &k.scope, sizeof(k.scope));
    buf_put_uint(&c->id, k.hostlen);
    buf_putc(&c->id, ':');
    buf_put_uint(&c->id, k.proglen);
    buf_putc(&c->id, ':');
    buf_put_uint(&c->id, k.pidlen);
    buf_putc(&c->id, ':');
    buf_append(&c->id, k.host, k.hostlen);
    buf_append(&c->id, k.prog, k.proglen);
    buf_append(&c->id, k.pid, k.pidlen);
    buf_append(&c->id, k.id, k.idlen);
    s = share_of(c, rule);
    for (n = hash_table_find(&c->rates, h); n; n = hash_table_find_next(n)) {
        b = hash_entry(n, struct bucket, node);
        if (b->keylen == c->id.len && memcmp(b->key, c->id.p, b->keylen) == 0) break;
    }
    if (!n) {
        while (!may_hold_bucket(c, s))
            if (!make_room(c, s, now)) {
                c->stats.rate_limited++;
                s->rate_limited++;
                s->rate_refused++;
                if (c->buckets_refused++ % 10000 == 0)
                    logf_(c,
                          "rule %s: rate limit buckets full (max-rate-buckets %zu, the rule "
                          "holds none): action runs suppressed until buckets free up",
                          rule->id, c->opts.max_rate_buckets);
                return false;
            }
        b = xcalloc(1, sizeof(*b));
        tw_timer_init(&b->timer);
        b->key = xmemdup(c->id.p, c->id.len);
        b->keylen = c->id.len;
        b->last_check = now;
        b->tokens = a->rate_n;
        b->span = a->rate_s;
        b->rate = a->rate_n;
        b->share = s;
        hash_table_add(&c->rates, &b->node, h);
        lru_push(s, b);
        bucket_use(c, s, s->buckets + 1);
        bucket_arm(c, b);
    } else {
        uint64_t got = credits(a->rate_n, a->rate_s, now > b->last_check ? now - b->last_check : 0);
        if (got) {
            uint64_t t = (uint64_t)b->tokens + got;
            b->tokens = t > a->rate_n ? a->rate_n : (uint32_t)t;
            b->last_check = now;
            b->span = a->rate_s;
            b->rate = a->rate_n;
            bucket_arm(c, b);
        }
        if (b->share) {
            lru_unlink(b->share, b);
            lru_push(b->share, b);
        }
    }
    if (b->tokens) {
        b->tokens--;
        return true;
    }
    c->stats.rate_limited++;
    s->rate_limited++;
    return false;
}

/* ---- generated messages ---- */

/* inherit-mode="context": the last message plus every value it lacks, newest first. */
static void
merge_context(struct msg *gen, struct ctx *x)
{
    size_t i, j;

    for (i = x->nmsgs - 1; i-- > 0;) {
        const struct msg *m = x->msgs[i];
        for (j = 0; j < msg_nvalues(m); j++) {
            const char *v;
            size_t len;
            nv_handle h = msg_value_at(m, j, &v, &len);
            if (!msg_get(gen, h, NULL)) msg_set(gen, h, v, len);
        }
    }
}

static void
apply_synth(struct corr *c, const struct pdb_synth *s, struct msg *gen,
            const struct template_env *env)
{
    size_t i;

    for (i = 0; i < s->ntags; i++) msg_tag_set(gen, s->tags[i]);
    for (i = 0; i < s->nvalues; i++) {
        buf_reset(&c->value);
        template_eval(s->values[i].tpl, env, &c->value);
        msg_set(gen, s->values[i].name, c->value.p, c->value.len);
    }
}

static struct msg *
generate(struct corr *c, const struct pdb_synth *s, struct ctx *x, struct msg *trigger)
{
    struct msg *gen, *last = x ? x->msgs[x->nmsgs - 1] : trigger;
    uint64_t t = action_now(c);
    struct msg_time now = {(int64_t)(t / 1000), (int32_t)(t % 1000) * 1000, 0};
    struct template_env env;

    if (s->inherit == PDB_INHERIT_NONE) {
        gen = msg_new();
        msg_set_stamp(gen, msg_stamp(last));
    } else {
        gen = msg_clone(last);
        if (x && s->inherit == PDB_INHERIT_CONTEXT) merge_context(gen, x);
    }
    msg_set_flags(gen, (msg_flags(gen) & ~MSG_F_SYSLOG) | MSG_F_GENERATED);
    msg_set_recvd(gen, &now);
    if (x) {
        const char *p = x->key;
        switch (x->scope) {
        case PDB_SCOPE_PROCESS:
            msg_set(gen, NV_PID, p + x->hostlen + x->proglen, x->pidlen); /* fall through */
        case PDB_SCOPE_PROGRAM:
            msg_set(gen, NV_PROGRAM, p + x->hostlen, x->proglen);  /* fall through */
        case PDB_SCOPE_HOST: msg_set(gen, NV_HOST, p, x->hostlen); /* fall through */
        case PDB_SCOPE_GLOBAL: break;
        }
        env = ctx_env(c, x, gen);
    } else {
        struct msg *pair[2] = {trigger, gen};
        c->env = xgrow(c->env, &c->capenv, 2, sizeof(*c->env));
        memcpy(c->env, pair, sizeof(pair));
        memset(&env, 0, sizeof(env));
        env.msgs = c->env;
        env.nmsgs = 2;
    }
    apply_synth(c, s, gen, &env);
    return gen;
}

/*
 * corral (not syslog-ng): an alert carries the lines that made it, those
 * of its context (or the triggering message), as corral.evidence.  Only
 * generated messages that ask for it pay for it (see evidence.h).
 */
static void
attach_evidence(struct corr *c, struct msg *gen, struct ctx *x, struct msg *trigger)
{
    size_t lines, bytes;

    if (!evidence_limits(&c->ev, gen, c->opts.evidence_lines, c->opts.evidence_bytes, &lines,
                         &bytes))
        return;
    buf_reset(&c->value);
    if (x)
        evidence_render(x->msgs, x->nmsgs, lines, bytes, &c->value);
    else
        evidence_render(&trigger, 1, lines, bytes, &c->value);
    msg_set(gen, c->ev.value, c->value.p ? c->value.p : "", c->value.len);
}

static void
emit(struct corr *c, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    if (kind == CORR_GENERATED) c->stats.generated++;
    if (c->opts.emit) c->opts.emit(c->opts.arg, m, kind, a);
}

static void arm(struct corr *c, struct ctx *x, double timeout);

static void
create_context(struct corr *c, const struct pdb_rule *rule, const struct pdb_action *a,
               struct ctx *trigger_ctx, struct msg *trigger)
{
    struct msg *m = generate(c, &a->message, trigger_ctx, trigger);
    struct template_env env;
    struct corrkey k;
    struct ctx *x, *old;
    uint64_t h;
    char *id;
    size_t idlen;

    /* the id is evaluated over the triggering context (or message), not the new message */
    if (trigger_ctx)
        env = ctx_env(c, trigger_ctx, NULL);
    else
        template_env_single(&env, &trigger);
    buf_reset(&c->id);
    template_eval(a->cc_id, &env, &c->id);
    id = xmemdup(buf_str(&c->id), c->id.len + 1);
    idlen = c->id.len;
    corrkey_from_msg(&k, a->cc_scope, m, id, idlen);
    h = corrkey_hash(&k);
    /* an old context under this key is detached: it still times out (see detach()) */
    if ((old = ctx_lookup(c, &k, h))) detach(c, old);
    x = ctx_create(c, &k, h, rule);
    free(id);
    if (!x) {
        msg_unref(m);
        return;
    }
    /* syslog-ng does not set .classifier.context_id here: back-references see that */
    {
        struct msg *kept = msg_clone_kept(m, pdb_context_keep(c->db));
        msg_unref(m);
        ctx_append(c, x, kept);
    }
    x->rule = rule;
    /* syslog-ng 3.38 arms the new context with the creating rule's timeout */
    arm(c, x, rule->timeout);
}

static void
run_actions(struct corr *c, const struct pdb_rule *rule, enum pdb_trigger trigger, struct ctx *x,
            struct msg *m)
{
    size_t i;

    for (i = 0; i < rule->nactions; i++) {
        const struct pdb_action *a = &rule->actions[i];
        struct template_env env;

        if (a->trigger != trigger) continue;
        if (a->condition) {
            if (x)
                env = ctx_env(c, x, NULL);
            else
                template_env_single(&env, &m);
            if (!filter_eval(a->condition, &env)) continue;
        }
        if (!rate_allows(c, rule, a, x, m)) continue;
        if (a->kind == PDB_ACTION_MESSAGE) {
            struct msg *gen = generate(c, &a->message, x, m);
            attach_evidence(c, gen, x, m);
            /*
             * corral (not syslog-ng): an emitted message says which context it
             * came from.  Set last, so that the action's templates and the
             * messages kept in contexts look exactly as in syslog-ng.
             */
            if (x)
                msg_set(gen, NV_CONTEXT_ID, x->key + x->hostlen + x->proglen + x->pidlen, x->idlen);
            emit(c, gen, CORR_GENERATED, a);
            msg_unref(gen);
        } else {
            create_context(c, rule, a, x, m);
        }
    }
}

/* ---- time ---- */

static void
expire(struct tw_timer *t, void *arg)
{
    struct corr *c = arg;
    struct ctx *x = (struct ctx *)t, *holder;
    uint64_t saved = c->firing;
    struct corrkey k;

    c->stats.contexts_expired++;
    /*
     * As in syslog-ng, the context stays in the table while its timeout
     * actions run (a create-context with its key replaces it, see detach()),
     * and what holds its key afterwards leaves the table.
     */
    c->firing = x->target;
    {
        const struct ctx *outer = c->expiring;
        c->expiring = x;
        if (x->rule && x->nmsgs)
            run_actions(c, x->rule, PDB_TRIGGER_TIMEOUT, x, x->msgs[x->nmsgs - 1]);
        c->expiring = outer;
    }
    c->firing = saved;
    ctx_key(x, &k);
    holder = ctx_lookup(c, &k, x->node.hash);
    if (holder && holder != x) detach(c, holder);
    ctx_destroy(c, x);
}

/*
 * Sets the last moment a context armed at now lives and returns its timer's
 * deadline, just after.  Integer timeouts count whole seconds, as syslog-ng's
 * timer wheel does: armed at T.xxx with N, alive through second T+N, gone at
 * T+N+1.
 */
static uint64_t
set_target(struct ctx *x, uint64_t now, double timeout)
{
    if (timeout == floor(timeout)) {
        x->target = (now / 1000 + (uint64_t)timeout) * 1000;
        return x->target + 1000;
    }
    x->target = now + (uint64_t)llround(timeout * 1000);
    return x->target + 1;
}

/*
 * Where a timer armed at second now for second target stands among the
 * timers due in the same second, as in syslog-ng 3.38's wheel: levels of
 * 1024, 64, 64 and 64 slots (seconds, then 1024 s, ...); a slot's timers fire
 * in the order they entered it.  A timer due within the current or next
 * rotation of level 0 goes straight there; a later one waits at a higher level
 * and is moved down (in its order there) just before its rotation starts,
 * after the timers armed directly until then.  So the order is: when it
 * entered level 0, then when it entered level 1; the wheel adds arming order.
 * Times are doubled so that "just after second s" is 2s+1.
 */
static uint64_t
wheel_order(uint64_t now, uint64_t target)
{
    static const unsigned shift[] = {0, 10, 16, 22}, bits[] = {10, 6, 6, 6};
    uint64_t e0, e1 = 0, rotation = target & ~(uint64_t)1023;
    int level;

    for (level = 0; level < 4; level++) {
        uint64_t span = (uint64_t)1 << (shift[level] + bits[level]), mask = (1u << bits[level]) - 1;
        uint64_t base = now & ~(span - 1);
        if (target <= base + span) break;
        if (target < base + 2 * span &&
            ((now >> shift[level]) & mask) > ((target >> shift[level]) & mask))
            break;
    }
    if (level == 0) {
        e0 = 2 * now;
    } else {
        e0 = 2 * (rotation - 1) + 1;
        /* from level 2 and up: moved to level 1 a rotation before its block starts */
        e1 = level == 1 ? 2 * now : 2 * ((target & ~(uint64_t)65535) - 1025) + 1;
    }
    /* only ties matter: distances back from the target, reversed */
    return ((((uint64_t)1 << 24) - (2 * target - e0)) << 32) |
           (e1 ? ((uint64_t)1 << 32) - 1 - (2 * target - e1) : ((uint64_t)1 << 32) - 1);
}

/* (Re)arms a context's timer. */
static void
arm(struct corr *c, struct ctx *x, double timeout)
{
    uint64_t now = action_now(c), dl = set_target(x, now, timeout), order = 0;

    /*
     * syslog-ng bug: a context a timeout action creates with timeout 0 goes
     * into the wheel slot being fired and is lost (never fires, pdbtool's
     * final expiry never ends, a later message joining it corrupts the
     * wheel).  corral arms it from the wheel's time instead, so it fires in
     * a later second, never in the batch that made it: a chain of them
     * cannot spin.
     */
    if (c->firing && dl <= tw_now(c->wheel))
        dl = set_target(x, tw_now(c->wheel), timeout);
    else if (timeout == floor(timeout))
        order = wheel_order(now / 1000, x->target / 1000);
    /*
     * syslog-ng fires the contexts due in one second in the order they were
     * put in that second's slot; re-arming to the same second leaves a timer
     * where it is.  The wheel breaks ties by arming order: keep ours.
     */
    if (tw_armed(&x->timer) && x->timer.expires == dl) return;
    tw_arm_ordered(c->wheel, &x->timer, dl, order);
}

static void
advance(struct corr *c, uint64_t to)
{
    if (to > tw_now(c->wheel)) {
        tw_advance(c->wheel, to, expire, c);
        tw_advance(c->bucket_wheel, to, bucket_free, c);
    }
}

void
corr_tick(struct corr *c)
{
    uint64_t clock = clock_now(c);

    /* like syslog-ng, an idle engine moves on by the real time elapsed since it last heard */
    if (clock > c->last_tick) {
        advance(c, tw_now(c->wheel) + (clock - c->last_tick));
        c->last_tick = clock;
    } else {
        c->last_tick = clock; /* the clock went back: wait for the next tick */
    }
}

/*
 * pdbtool's end of input: syslog-ng moves its clock second by second to the
 * end of time, so contexts fire in deadline order, each with the clock at its
 * target (rate limits refill as time passes), and contexts created by
 * timeout actions fire in turn when their time comes.  A timeout action that
 * creates a context of its own rule makes an endless chain (syslog-ng never
 * returns); corral stops after a bounded number of expiries and drops what is
 * left.
 */
void
corr_expire_all(struct corr *c)
{
    uint64_t limit = (uint64_t)(c->contexts.count + c->ndetached) + 100000;
    uint64_t fired = c->stats.contexts_expired;
    struct hash_node *n, *next;
    size_t i;

    while (tw_count(c->wheel) && c->stats.contexts_expired - fired < limit)
        tw_advance(c->wheel, tw_next_expiry(c->wheel), expire, c);
    if (!tw_count(c->wheel)) return;
    logf_(c,
          "expiring all contexts: stopped after %llu expiries, dropping %zu contexts "
          "(timeout actions keep creating contexts)",
          (unsigned long long)limit, c->contexts.count + c->ndetached);
    for (n = hash_table_iter(&c->contexts, &i, NULL); n; n = next) {
        next = hash_table_iter(&c->contexts, &i, n);
        ctx_destroy(c, ctx_of(n));
    }
    while (c->detached) ctx_destroy(c, c->detached);
}

/* ---- processing ---- */

/*
 * corral extension also-correlate: m, classified by another rule, joins the
 * context of rule r as if r had matched it, except that m keeps its
 * classification, tags and .classifier.context_id: r's context-id, scope and
 * timeout place it, r's values are set over r's context (as a matching rule's
 * are), and the caller runs r's match actions after the classifying rule's.
 * r's timeout actions run when that context expires.  Returns the context, or
 * NULL when the limits refused it.
 */
static struct ctx *
join_also(struct corr *c, const struct pdb_rule *r, struct msg *m)
{
    struct template_env env;
    struct corrkey k;
    struct ctx *y;
    uint64_t h;
    size_t i;

    template_env_single(&env, &m);
    buf_reset(&c->id);
    template_eval(r->context_id, &env, &c->id);
    corrkey_from_msg(&k, r->scope, m, buf_str(&c->id), c->id.len);
    h = corrkey_hash(&k);
    y = ctx_lookup(c, &k, h);
    if (!y && !(y = ctx_create(c, &k, h, r))) return NULL;
    env = ctx_env(c, y, m);
    for (i = 0; i < r->msg.nvalues; i++) {
        buf_reset(&c->value);
        template_eval(r->msg.values[i].tpl, &env, &c->value);
        msg_set(m, r->msg.values[i].name, c->value.p, c->value.len);
    }
    ctx_append(c, y, msg_clone_kept(m, pdb_context_keep(c->db)));
    y->rule = r;
    arm(c, y, r->timeout);
    return y;
}

void
corr_process(struct corr *c, struct msg *m)
{
    uint64_t clock = clock_now(c);

    c->last_tick = clock;
    corr_process_rule(c, m, pdb_lookup(c->db, m), corr_msg_time(m, clock));
}

uint64_t
corr_msg_time(const struct msg *m, uint64_t clock)
{
    const struct msg_time *st = msg_stamp(m);
    uint64_t stamp = st->sec > 0 ? (uint64_t)st->sec * 1000 + (uint64_t)st->usec / 1000 : 0;

    return stamp < clock ? stamp : clock;
}

void
corr_advance(struct corr *c, uint64_t to)
{
    advance(c, to);
}

uint64_t
corr_quiet_until(const struct corr *c)
{
    uint64_t a = tw_quiet_until(c->wheel), b = tw_quiet_until(c->bucket_wheel);

    return a < b ? a : b;
}

void
corr_note_clock(struct corr *c, uint64_t clock)
{
    c->last_tick = clock;
}

void
corr_set_arm_seq(struct corr *c, uint64_t seq)
{
    tw_set_seq(c->wheel, seq);
}

uint64_t
corr_arm_seq(const struct corr *c)
{
    return tw_seq(c->wheel);
}

bool
corr_firing_key(const struct corr *c, uint64_t key[3])
{
    if (!c->expiring) return false;
    key[0] = c->expiring->timer.expires;
    key[1] = c->expiring->timer.order;
    key[2] = c->expiring->timer.seq;
    return true;
}

/*
 * corr_process_rule() in the parts the parallel engine runs on different
 * shards when a message's also-correlate contexts live elsewhere (par.c):
 * the classifying rule's context and values, each also-correlate join in
 * order, the input message with the rule's match actions, each joined
 * rule's match actions.  Run in this order on one corr they are
 * corr_process_rule().
 */
void
corr_part_main(struct corr *c, struct msg *m, const struct pdb_rule *rule, uint64_t to,
               struct corr_part *p)
{
    struct ctx *x = NULL;
    struct template_env env;

    memset(p, 0, sizeof(*p));
    c->stats.processed++;
    advance(c, to);
    if (!rule) return;
    c->stats.matched++;
    c->pins = p;
    if (rule->context_id) {
        struct corrkey k;
        uint64_t h;

        template_env_single(&env, &m);
        buf_reset(&c->id);
        template_eval(rule->context_id, &env, &c->id);
        msg_set(m, NV_CONTEXT_ID, c->id.p, c->id.len);
        corrkey_from_msg(&k, rule->scope, m, buf_str(&c->id), c->id.len);
        h = corrkey_hash(&k);
        x = ctx_lookup(c, &k, h);
        if (!x) x = ctx_create(c, &k, h, rule);
    }
    if (x) {
        env = ctx_env(c, x, m);
        pdb_apply_r(rule, m, &env, &c->value);
        /* a context keeps only the values some rule's templates can read */
        ctx_append(c, x, msg_clone_kept(m, pdb_context_keep(c->db)));
        x->rule = rule;
        arm(c, x, rule->timeout);
    } else {
        template_env_single(&env, &m);
        pdb_apply_r(rule, m, &env, &c->value);
    }
    p->x = x;
    c->pins = NULL;
}

void
corr_part_also(struct corr *c, struct msg *m, const struct pdb_rule *rule, size_t i,
               struct corr_part *p)
{
    c->pins = p;
    p->also[i] = rule->also[i] ? join_also(c, rule->also[i], m) : NULL;
    c->pins = NULL;
}

void
corr_part_emit(struct corr *c, struct msg *m, const struct pdb_rule *rule, struct corr_part *p)
{
    corr_part_input(c, m, rule);
    corr_part_actions(c, m, rule, p);
}

struct sigma_fire {
    struct corr *c;
    struct msg *m;
};

/* A Sigma rule matched: its alert, with the line as evidence, follows the input message. */
static void
sigma_fire(void *arg, const struct sigma_rule *r)
{
    struct sigma_fire *f = arg;
    struct msg *gen = sigma_alert_fired(r, f->m, f->c->sigma);
    uint64_t t = action_now(f->c);
    struct msg_time now = {(int64_t)(t / 1000), (int32_t)(t % 1000) * 1000, 0};

    msg_set_recvd(gen, &now);
    attach_evidence(f->c, gen, NULL, f->m);
    emit(f->c, gen, CORR_GENERATED, &r->action);
    msg_unref(gen);
}

void
corr_part_input(struct corr *c, struct msg *m, const struct pdb_rule *rule)
{
    const struct sigma *sg = pdb_sigma(c->db);

    if (!rule) c->stats.unknown++;
    emit(c, m, CORR_INPUT, NULL);
    /* Sigma rules run on the classified message, so they can read what patterndb extracted */
    if (sg && sigma_nrules(sg)) {
        struct sigma_fire f = {c, m};
        if (!c->sigma) {
            c->sigma = sigma_scratch_new();
            sigma_scratch_set_memory(c->sigma, c->opts.max_sigma_memory);
        }
        /* correlation rules measure their timespans in correlation time */
        sigma_scratch_set_time(c->sigma, action_now(c));
        sigma_match(sg, m, c->sigma, sigma_fire, &f);
    }
}

bool
corr_part_actions_read_msg(const struct pdb_rule *rule, const struct corr_part *p)
{
    return rule && rule->nactions && !p->x;
}

void
corr_part_actions(struct corr *c, struct msg *m, const struct pdb_rule *rule, struct corr_part *p)
{
    if (rule && rule->nactions) run_actions(c, rule, PDB_TRIGGER_MATCH, p->x, m);
}

void
corr_part_also_actions(struct corr *c, struct msg *m, const struct pdb_rule *rule, size_t i,
                       struct corr_part *p)
{
    if (p->also[i]) run_actions(c, rule->also[i], PDB_TRIGGER_MATCH, p->also[i], m);
}

void
corr_process_rule(struct corr *c, struct msg *m, const struct pdb_rule *rule, uint64_t to)
{
    struct corr_part p;
    size_t i;

    corr_part_main(c, m, rule, to, &p);
    if (!rule) {
        corr_part_emit(c, m, rule, &p);
        return;
    }
    for (i = 0; i < rule->nalso; i++) corr_part_also(c, m, rule, i, &p);
    corr_part_emit(c, m, rule, &p);
    for (i = 0; i < rule->nalso; i++) corr_part_also_actions(c, m, rule, i, &p);
}

/* ---- reload and inspection ---- */

/* Keeps a context across a reload if its rule is still there; true if kept. */
static bool
rebind(struct corr *c, struct ctx *x, struct pdb *db)
{
    const struct pdb_rule *r = x->rule ? pdb_rule_by_id(db, x->rule->id) : NULL;

    if (r) {
        x->rule = r;
        return true;
    }
    ctx_destroy(c, x);
    return false;
}

/* The context's rule share in the new database: its creator's if still there, else its last rule's.
 */
static void
reshare_one(struct corr *c, struct ctx *x, struct pdb *db)
{
    const struct pdb_rule *r = pdb_rule_by_id(db, x->share->rule->id);

    ctx_own(c, x, &c->shares[(r ? r : x->rule)->index]);
}

/* New shares for db (the number of rules that open contexts may have changed), the contexts counted
 * in again. */
static void
reshare(struct corr *c, struct pdb *db)
{
    struct share *old = c->shares;
    size_t nold = c->nshares, i;
    struct hash_node *n, *next;
    struct ctx *x;

    shares_init(c, db, c->db, old, nold);
    for (n = hash_table_iter(&c->contexts, &i, NULL); n; n = hash_table_iter(&c->contexts, &i, n))
        reshare_one(c, ctx_of(n), db);
    for (x = c->detached; x; x = detached_next(x)) reshare_one(c, x, db);
    /* buckets by their rule id; those of a rule gone or without rate= any more go (their keys
     * name the rule and action: nothing would find them) */
    for (n = hash_table_iter(&c->rates, &i, NULL); n; n = next) {
        struct bucket *b = hash_entry(n, struct bucket, node);
        const struct pdb_rule *r = pdb_rule_by_id(db, b->key);
        next = hash_table_iter(&c->rates, &i, n);
        b->share = NULL;
        if (!r || !c->shares[r->index].rates) {
            bucket_drop(c, b);
            continue;
        }
        b->share = &c->shares[r->index];
        lru_push(b->share, b);
        bucket_use(c, b->share, b->share->buckets + 1);
    }
    free(old);
}

void
corr_set_db(struct corr *c, struct pdb *db, size_t *kept, size_t *dropped)
{
    size_t i, k = 0, d = 0;
    struct hash_node *n, *nnext;
    struct ctx *x, *next;

    for (n = hash_table_iter(&c->contexts, &i, NULL); n; n = nnext) {
        nnext = hash_table_iter(&c->contexts, &i, n);
        if (rebind(c, ctx_of(n), db))
            k++;
        else
            d++;
    }
    for (x = c->detached; x; x = next) {
        next = detached_next(x);
        if (rebind(c, x, db))
            k++;
        else
            d++;
    }
    reshare(c, db);
    /* the Sigma correlations' groups are by rule index in their set: a new set starts afresh */
    if (pdb_sigma(db) != pdb_sigma(c->db)) {
        sigma_scratch_free(c->sigma);
        c->sigma = NULL;
    }
    c->db = db;
    if (kept) *kept = k;
    if (dropped) *dropped = d;
}

static void
ctx_info(const struct ctx *x, struct corr_context_info *ci)
{
    struct corrkey k;

    ctx_key(x, &k);
    ci->scope = k.scope;
    ci->host = k.host;
    ci->hostlen = k.hostlen;
    ci->program = k.prog;
    ci->programlen = k.proglen;
    ci->pid = k.pid;
    ci->pidlen = k.pidlen;
    ci->id = k.id;
    ci->idlen = k.idlen;
    ci->rule_id = x->rule ? x->rule->id : "";
    ci->nmsgs = x->nmsgs;
    ci->expires = x->timer.expires;
    ci->detached = x->detached;
}

void
corr_foreach(const struct corr *c, void (*fn)(const struct corr_context_info *, void *), void *arg)
{
    struct corr_context_info ci;
    const struct hash_node *n;
    const struct ctx *x;
    size_t i;

    for (n = hash_table_iter(&c->contexts, &i, NULL); n; n = hash_table_iter(&c->contexts, &i, n)) {
        ctx_info(ctx_of(n), &ci);
        fn(&ci, arg);
    }
    for (x = c->detached; x; x = detached_next(x)) {
        ctx_info(x, &ci);
        fn(&ci, arg);
    }
}

/* ---- state file ---- */

#define STATE_MAGIC "CORRALST"
/*
 * Little-endian.  Version 3, written since, is record by record, so that
 * damage costs the contexts it hits and no more:
 *   header: "CORRALST" u32 version, u64 now_ms, u64 ncontexts, u32 crc32 of the header
 *   record: u32 STATE_RECORD, u32 length, context (length bytes),
 *           u32 crc32 of length and context
 *   context: u32 scope, bytes host, program, pid, id, rule id, u64 expires_ms,
 *            u64 target_ms, u64 order, u32 flags, u32 nmsgs, messages
 *   (bytes = u32 length + data; contexts in firing order)
 * A reader that meets a record whose checksum fails looks for the next
 * STATE_RECORD from the byte after its start (resynchronises): a damaged
 * length or marker cannot take the records after it along.
 * Versions 1 and 2 (still read) had one crc32 over the whole file, after
 * the last context, and no records; version 1 lacks target, order and flags.
 */
#define STATE_VERSION  3
#define STATE_RECORD   0x7843d1e5u /* bytes e5 d1 43 78 */
#define STATE_DETACHED 1u

/* A context with its firing position copied out: sorting these touches no context. */
struct firing {
    uint64_t expires, order, seq;
    struct ctx *x;
};

static int
by_firing_order(const void *a, const void *b)
{
    const struct firing *x = a, *y = b;

    if (x->expires != y->expires) return x->expires < y->expires ? -1 : 1;
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void
firing_add(struct firing *f, struct ctx *x)
{
    f->expires = x->timer.expires;
    f->order = x->timer.order;
    f->seq = x->timer.seq;
    f->x = x;
}

/* What corr_save buffers before writing: the file is written piece by piece. */
#define STATE_CHUNK (1024 * 1024)

/* Writes out what b holds. */
static int
state_flush(struct durable_file *df, struct buf *b)
{
    if (durable_write_all(df->fd, b->p, b->len) < 0) return -1;
    buf_reset(b);
    return 0;
}

int
corr_save(const struct corr *c, const char *path)
{
    return corr_save_many(&c, 1, path);
}

/* The shards of corrald's workers go into one file, as one corr's contexts: any number of
 * workers reads it back. */
int
corr_save_many(const struct corr *const *cs, size_t ncs, const char *path)
{
    struct buf b = BUF_INIT;
    struct durable_file df;
    size_t i, j, n = 0, total = 0, start;
    int rc = -1, saved;
    struct ctx *x;
    struct firing *all;
    const struct hash_node *node;
    struct corrkey k;
    uint64_t now = 0;

    if (durable_begin(&df, path) < 0) return -1;
    for (j = 0; j < ncs; j++) total += cs[j]->contexts.count + cs[j]->ndetached;
    all = xcalloc(total + 1, sizeof(*all));
    for (j = 0; j < ncs; j++) {
        const struct corr *c = cs[j];
        for (node = hash_table_iter(&c->contexts, &i, NULL); node;
             node = hash_table_iter(&c->contexts, &i, node))
            firing_add(&all[n++], ctx_of(node));
        for (x = c->detached; x; x = detached_next(x)) firing_add(&all[n++], x);
        if (tw_now(c->wheel) > now) now = tw_now(c->wheel);
    }
    /* in firing order: loading arms them in file order, which keeps ties in order */
    qsort(all, n, sizeof(*all), by_firing_order);

    buf_append(&b, STATE_MAGIC, 8);
    wire_put32(&b, STATE_VERSION);
    wire_put64(&b, now);
    wire_put64(&b, n);
    wire_put32(&b, durable_crc32(0, b.p, b.len));
    for (i = 0; i < n; i++) {
        x = all[i].x;
        ctx_key(x, &k);
        start = b.len;
        wire_put32(&b, STATE_RECORD);
        wire_put32(&b, 0); /* the length, once known */
        wire_put32(&b, (uint32_t)k.scope);
        wire_put_bytes(&b, k.host, k.hostlen);
        wire_put_bytes(&b, k.prog, k.proglen);
        wire_put_bytes(&b, k.pid, k.pidlen);
        wire_put_bytes(&b, k.id, k.idlen);
        wire_put_bytes(&b, x->rule ? x->rule->id : "", x->rule ? strlen(x->rule->id) : 0);
        wire_put64(&b, x->timer.expires);
        wire_put64(&b, x->target);
        wire_put64(&b, x->timer.order);
        wire_put32(&b, x->detached ? STATE_DETACHED : 0);
        wire_put32(&b, (uint32_t)x->nmsgs);
        for (j = 0; j < x->nmsgs; j++) msg_encode(x->msgs[j], &b);
        wire_store32((unsigned char *)b.p + start + 4, (uint32_t)(b.len - start - 8));
        wire_put32(&b, durable_crc32(0, b.p + start + 4, b.len - start - 4));
        if (b.len >= STATE_CHUNK && state_flush(&df, &b) < 0) goto out;
    }
    if (state_flush(&df, &b) < 0) goto out;
    rc = durable_commit(&df);
    df.fd = -1;
out:
    if (rc < 0 && df.fd >= 0) durable_abort(&df);
    saved = errno;
    free(all);
    buf_free(&b);
    errno = saved;
    return rc;
}

static struct msg *
get_msg(struct wire_reader *r, struct msg *scratch)
{
    size_t used = r->bad ? 0 : msg_decode(scratch, (const char *)r->p, (size_t)(r->end - r->p));

    if (!used) {
        r->bad = true;
        return NULL;
    }
    r->p += used;
    /* decoded into a reused message, kept as an exact-size copy, as live contexts keep theirs */
    return msg_clone(scratch);
}

/* A context read from a state file, not yet in the engine. */
struct loaded {
    struct ctx *x;
    uint64_t expires, order;
};

/*
 * The state file is read in a window, not whole: start-up with a large state
 * then needs little more memory than the contexts themselves.  The window
 * holds buf[start, len) unparsed; left is what of the contexts is unread.
 */
#define STATE_WINDOW  (1024 * 1024)
#define STATE_HEADER  (8 + 4 + 8 + 8)
#define STATE_TRAILER 4

struct state_in {
    FILE *f;
    uint64_t left;
    char *buf;
    size_t cap, start, len;
};

/* More bytes into the window, keeping the unparsed ones; false at the end or on error. */
static bool
state_fill(struct state_in *in)
{
    size_t want, n;

    if (!in->left) return false;
    if (in->start) {
        memmove(in->buf, in->buf + in->start, in->len - in->start);
        in->len -= in->start;
        in->start = 0;
    }
    if (in->len == in->cap) {
        /* one context larger than the window */
        in->cap *= 2;
        in->buf = xrealloc(in->buf, in->cap);
    }
    want = in->cap - in->len;
    if (want > in->left) want = (size_t)in->left;
    n = fread(in->buf + in->len, 1, want, in->f);
    in->len += n;
    in->left -= n;
    return n > 0;
}

/*
 * Reads one context at r.  NULL with r->bad when the bytes ran out (the
 * window may just be short), NULL without it when the context is invalid.
 */
static struct ctx *
read_context(struct corr *c, struct wire_reader *r, struct msg *scratch, uint32_t version,
             uint64_t *expires, uint64_t *order)
{
    struct corrkey k;
    size_t rlen, j;
    const char *rid;
    const struct pdb_rule *rule;
    uint64_t target;
    uint32_t nmsgs, flags = 0;
    struct ctx *x;
    char *id;

    *order = 0;
    memset(&k, 0, sizeof(k));
    k.scope = (enum pdb_scope)wire_get32(r);
    k.host = wire_get_bytes(r, &k.hostlen);
    k.prog = wire_get_bytes(r, &k.proglen);
    k.pid = wire_get_bytes(r, &k.pidlen);
    k.id = wire_get_bytes(r, &k.idlen);
    rid = wire_get_bytes(r, &rlen);
    *expires = wire_get64(r);
    /* version 1 lacks the target: whole seconds are by far the most common */
    if (version >= 2) {
        target = wire_get64(r);
        *order = wire_get64(r);
        flags = wire_get32(r);
    } else {
        target = *expires % 1000 ? *expires - 1 : *expires - 1000;
    }
    nmsgs = wire_get32(r);
    if (r->bad || k.scope > PDB_SCOPE_GLOBAL || flags & ~STATE_DETACHED) return NULL;
    id = xstrndup(rid, rlen);
    rule = pdb_rule_by_id(c->db, id);
    free(id);
    /* not counted against the limit yet: that happens when it is taken in */
    x = xcalloc(1, sizeof(*x));
    tw_timer_init(&x->timer);
    x->node.hash = corrkey_hash(&k);
    x->scope = k.scope;
    x->hostlen = (uint32_t)k.hostlen;
    x->proglen = (uint32_t)k.proglen;
    x->pidlen = (uint32_t)k.pidlen;
    x->idlen = (uint32_t)k.idlen;
    x->key = xmalloc(k.hostlen + k.proglen + k.pidlen + k.idlen + 1);
    memcpy(x->key, k.host, k.hostlen);
    memcpy(x->key + k.hostlen, k.prog, k.proglen);
    memcpy(x->key + k.hostlen + k.proglen, k.pid, k.pidlen);
    memcpy(x->key + k.hostlen + k.proglen + k.pidlen, k.id, k.idlen);
    x->bytes = sizeof(*x) + k.hostlen + k.proglen + k.pidlen + k.idlen + 1;
    x->rule = rule;
    x->target = target;
    x->detached = (flags & STATE_DETACHED) != 0;
    for (j = 0; j < nmsgs && !r->bad; j++) {
        struct msg *m = get_msg(r, scratch);
        if (!m) break;
        /* the newest are kept, as ctx_append would */
        size_t size = msg_memory(m);
        if (x->nmsgs >= c->opts.max_context_msgs) x->bytes -= ctx_drop_oldest(x);
        ctx_push(x, m, size);
        x->bytes += size;
        while (x->nmsgs > 1 && x->bytes > c->opts.max_context_bytes) x->bytes -= ctx_drop_oldest(x);
    }
    if (r->bad) {
        ctx_free(x);
        return NULL;
    }
    return x;
}

/* Checks the CRC of a whole version 1 or 2 stream, in the window's buffer; leaves f after the
 * header. */
static bool
state_check(struct state_in *in, off_t size)
{
    unsigned char tail[STATE_TRAILER];
    uint32_t crc = 0;
    uint64_t rest;

    if (size < STATE_HEADER + STATE_TRAILER || fseeko(in->f, 0, SEEK_SET) < 0) goto invalid;
    for (rest = (uint64_t)size - STATE_TRAILER; rest;) {
        size_t n = rest < in->cap ? (size_t)rest : in->cap;
        if (fread(in->buf, 1, n, in->f) != n) goto short_read;
        crc = durable_crc32(crc, in->buf, n);
        rest -= n;
    }
    if (fread(tail, 1, sizeof(tail), in->f) != sizeof(tail)) goto short_read;
    if (crc != wire_load32(tail) || fseeko(in->f, STATE_HEADER, SEEK_SET) < 0) goto invalid;
    in->left = (uint64_t)size - STATE_HEADER - STATE_TRAILER;
    return true;
short_read:
    if (ferror(in->f)) return false; /* errno from the read */
invalid:
    errno = EINVAL;
    return false;
}

/* The contexts read from a state file, before they are taken in. */
struct loaded_set {
    struct loaded *l;
    size_t n, cap;
};

static void
loaded_add(struct loaded_set *ls, struct ctx *x, uint64_t expires, uint64_t order)
{
    ls->l = xgrow(ls->l, &ls->cap, ls->n + 1, sizeof(*ls->l));
    ls->l[ls->n].x = x;
    ls->l[ls->n].order = order;
    ls->l[ls->n++].expires = expires;
}

/* Versions 1 and 2, checked whole: every context, or false (errno) and none. */
static bool
read_v12(struct corr *c, struct state_in *in, uint32_t version, uint64_t count, struct msg *scratch,
         struct loaded_set *ls)
{
    struct wire_reader r;
    uint64_t i;

    for (i = 0; i < count; i++) {
        struct ctx *x;
        uint64_t expires, order;

        for (;;) {
            wire_reader_init(&r, in->buf + in->start, in->len - in->start);
            x = read_context(c, &r, scratch, version, &expires, &order);
            if (x) break;
            /* invalid, or cut by the window's end: then the window needs more */
            if (!r.bad || !state_fill(in)) {
                errno = ferror(in->f) ? EIO : EINVAL;
                return false;
            }
        }
        in->start = (size_t)((const char *)r.p - in->buf);
        loaded_add(ls, x, expires, order);
    }
    /* nothing may follow the last context */
    if (in->start != in->len || in->left) {
        errno = EINVAL;
        return false;
    }
    return true;
}

/*
 * Version 3, record by record: every record whose checksum holds is read;
 * bytes that are not such a record are skipped until the next one.  Counts
 * the bytes skipped and the stretches of them (*damaged).
 */
static bool
read_v3(struct corr *c, struct state_in *in, struct msg *scratch, struct loaded_set *ls,
        uint64_t *skipped, uint64_t *damaged)
{
    bool skipping = false;

    for (;;) {
        const unsigned char *p = (const unsigned char *)in->buf + in->start;
        size_t avail = in->len - in->start;
        uint64_t len, need;
        struct wire_reader r;
        uint64_t expires, order;
        struct ctx *x;

        if (avail < 8 && state_fill(in)) continue;
        if (avail < 8) {
            if (ferror(in->f)) {
                errno = EIO;
                return false;
            }
            if (avail) {
                *skipped += avail;
                if (!skipping) ++*damaged;
            }
            return true;
        }
        len = wire_load32(p + 4);
        need = 8 + len + 4;
        if (wire_load32(p) != STATE_RECORD || need > avail + in->left) goto skip;
        if (need > avail) {
            if (!state_fill(in)) goto skip;
            continue;
        }
        if (durable_crc32(0, p + 4, 4 + (size_t)len) != wire_load32(p + 8 + len)) goto skip;
        wire_reader_init(&r, p + 8, (size_t)len);
        x = read_context(c, &r, scratch, STATE_VERSION, &expires, &order);
        if (!x || r.p != p + 8 + len) {
            /* checksummed, yet not a context: not ours to understand, skipped whole */
            if (x) ctx_free(x);
            *skipped += need;
            ++*damaged;
            skipping = false;
            in->start += (size_t)need;
            continue;
        }
        loaded_add(ls, x, expires, order);
        in->start += (size_t)need;
        skipping = false;
        continue;
    skip:
        if (!skipping) ++*damaged;
        skipping = true;
        ++*skipped;
        in->start++;
    }
}

static long load_file(struct corr *c, FILE *f, size_t *dropped, corr_keep_fn keep, void *arg);

long
corr_load(struct corr *c, const char *path, size_t *dropped)
{
    return corr_load_some(c, path, dropped, NULL, NULL);
}

long
corr_load_some(struct corr *c, const char *path, size_t *dropped, corr_keep_fn keep, void *arg)
{
    int fd = durable_open_regular(path, DURABLE_MAX_STATE), saved;
    FILE *f;
    long rc;

    if (dropped) *dropped = 0;
    if (fd < 0) return -1;
    if (!(f = fdopen(fd, "rb"))) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    rc = load_file(c, f, dropped, keep, arg);
    saved = errno;
    fclose(f);
    errno = saved;
    return rc;
}

/*
 * The contexts are read in a window, every one before any is taken in.  A
 * version 3 file is read record by record: a damaged record is skipped and
 * the loss logged (opts.log), the others are taken in.  A version 1 or 2
 * file has one checksum, checked first: damaged, it is refused whole.
 */
long
corr_load_file(struct corr *c, FILE *f, size_t *dropped)
{
    return load_file(c, f, dropped, NULL, NULL);
}

static long
load_file(struct corr *c, FILE *f, size_t *dropped, corr_keep_fn keep, void *arg)
{
    struct state_in in = {f, 0, NULL, STATE_WINDOW, 0, 0};
    unsigned char head[STATE_HEADER + 4];
    struct wire_reader r;
    struct loaded_set ls = {NULL, 0, 0};
    struct loaded *l;
    size_t d = 0, nl, got;
    uint64_t count = 0, i, saved_now = 0, skipped = 0, damaged = 0, seq0;
    long loaded = 0;
    uint32_t version;
    int err = EINVAL;
    off_t size;
    struct msg *scratch = msg_new();

    if (dropped) *dropped = 0;
    in.buf = xmalloc(in.cap);
    if (fseeko(f, 0, SEEK_END) < 0 || (size = ftello(f)) < 0 || fseeko(f, 0, SEEK_SET) < 0) {
        err = errno;
        goto invalid;
    }
    got = fread(head, 1, sizeof(head), f);
    if (got < 12 || memcmp(head, STATE_MAGIC, 8) != 0) {
        if (ferror(f)) err = EIO;
        goto invalid;
    }
    wire_reader_init(&r, head + 8, got - 8);
    version = wire_get32(&r);
    if (version < 1 || version > STATE_VERSION) goto invalid;
    if (version < 3) {
        if (!state_check(&in, size)) {
            err = errno;
            goto invalid;
        }
        saved_now = wire_get64(&r);
        count = wire_get64(&r);
        if (!read_v12(c, &in, version, count, scratch, &ls)) {
            err = errno;
            goto invalid;
        }
    } else {
        /* a damaged header costs its time and count, not the contexts */
        bool header = got == sizeof(head) &&
                      durable_crc32(0, head, STATE_HEADER) == wire_load32(head + STATE_HEADER);
        if (header) {
            saved_now = wire_get64(&r);
            count = wire_get64(&r);
        }
        if (fseeko(f, (off_t)got, SEEK_SET) < 0) {
            err = errno;
            goto invalid;
        }
        in.left = (uint64_t)size - got;
        if (!read_v3(c, &in, scratch, &ls, &skipped, &damaged)) {
            err = errno;
            goto invalid;
        }
        if (!header)
            logf_(c,
                  "state file: header damaged; %zu contexts read (%llu bytes skipped; damaged "
                  "stretches: %llu)",
                  ls.n, (unsigned long long)skipped, (unsigned long long)damaged);
        else if (damaged || ls.n != count)
            logf_(c,
                  "state file: %llu of %llu saved contexts lost to damage (%llu bytes skipped; "
                  "damaged stretches: %llu); %zu read",
                  (unsigned long long)(count > ls.n ? count - ls.n : 0), (unsigned long long)count,
                  (unsigned long long)skipped, (unsigned long long)damaged, ls.n);
    }
    l = ls.l;
    nl = ls.n;
    free(in.buf);
    in.buf = NULL;
    msg_unref(scratch);
    scratch = NULL;

    /* the file is good: take the contexts in, in file (firing) order, each numbered by its index
     * in the file: shards that each take their own from one file then agree on the order of
     * the ties between them (corr_arm_seq) */
    if (saved_now > tw_now(c->wheel)) advance(c, saved_now);
    seq0 = tw_seq(c->wheel);
    for (i = 0; i < nl; i++) {
        struct ctx *x = l[i].x;
        struct corrkey k;

        if (keep) {
            struct corr_context_info ci;
            ctx_info(x, &ci);
            if (!keep(arg, &ci)) {
                ctx_free(x); /* another's: not dropped */
                continue;
            }
        }
        ctx_key(x, &k);
        if (!x->rule || !x->nmsgs || (!x->detached && ctx_lookup(c, &k, x->node.hash))) {
            ctx_free(x);
            d++;
            continue;
        }
        if (!may_open(c, share_of(c, x->rule))) {
            refuse(c, share_of(c, x->rule));
            ctx_free(x);
            d++;
            continue;
        }
        x->bytes += x->capmsgs * sizeof(*x->base);
        c->stats.contexts_created++;
        c->stats.context_bytes += x->bytes;
        ctx_own(c, x, share_of(c, x->rule));
        if (x->detached) {
            x->detached = false;
            detached_push(c, x);
        } else {
            table_insert(c, x);
        }
        tw_set_seq(c->wheel, seq0 + i);
        tw_arm_ordered(c->wheel, &x->timer, l[i].expires, l[i].order);
        loaded++;
    }
    tw_set_seq(c->wheel, seq0 + nl);
    free(l);
    if (dropped) *dropped = d;
    return loaded;

invalid:
    for (i = 0; i < ls.n; i++) ctx_free(ls.l[i].x);
    free(ls.l);
    free(in.buf);
    msg_unref(scratch);
    errno = err;
    return -1;
}

/* ---- listing in firing order ---- */

void
corr_foreach_many(const struct corr *const *cs, size_t ncs,
                  void (*fn)(const struct corr_context_info *, void *), void *arg)
{
    struct corr_context_info ci;
    const struct hash_node *node;
    struct firing *all;
    struct ctx *x;
    size_t i, j, n = 0, total = 0;

    for (j = 0; j < ncs; j++) total += cs[j]->contexts.count + cs[j]->ndetached;
    all = xcalloc(total + 1, sizeof(*all));
    for (j = 0; j < ncs; j++) {
        for (node = hash_table_iter(&cs[j]->contexts, &i, NULL); node;
             node = hash_table_iter(&cs[j]->contexts, &i, node))
            firing_add(&all[n++], ctx_of(node));
        for (x = cs[j]->detached; x; x = detached_next(x)) firing_add(&all[n++], x);
    }
    /* the table's order follows a hash keyed per process, and which shard holds a context too:
     * firing order is the same on every run and with any number of shards */
    qsort(all, n, sizeof(*all), by_firing_order);
    for (i = 0; i < n; i++) {
        ctx_info(all[i].x, &ci);
        fn(&ci, arg);
    }
    free(all);
}

/* ---- rate= buckets, for a cluster's checkpoints ---- */

#define RATES_MAGIC 0x53544152u /* "RATS" */

void
corr_save_rates(const struct corr *c, struct buf *out)
{
    size_t i, start = out->len;
    const struct hash_node *n;

    wire_put32(out, RATES_MAGIC);
    wire_put64(out, c->rates.count);
    for (n = hash_table_iter(&c->rates, &i, NULL); n; n = hash_table_iter(&c->rates, &i, n)) {
        const struct bucket *b = hash_entry(n, struct bucket, node);
        wire_put_bytes(out, b->key, b->keylen);
        wire_put64(out, b->last_check);
        wire_put32(out, b->tokens);
        wire_put32(out, b->span);
        wire_put32(out, b->rate);
    }
    wire_put32(out, durable_crc32(0, out->p + start, out->len - start));
}

/* A decimal length and its ':' at *p (before end); false when there is none. */
static bool
key_len(const char **p, const char *end, size_t *len)
{
    char *e;
    unsigned long long v;

    if (*p >= end || **p < '0' || **p > '9') return false;
    v = strtoull(*p, &e, 10);
    if (e >= end || *e != ':' || v > (size_t)(end - e)) return false;
    *len = (size_t)v;
    *p = e + 1;
    return true;
}

/* The corrkey a bucket's key (see rate_allows()) flattens, for its hash; false: damaged. */
static bool
bucket_corrkey(const char *key, size_t keylen, struct corrkey *k)
{
    const char *end = key + keylen, *p = memchr(key, '\0', keylen);

    if (!p || (size_t)(end - ++p) < sizeof(k->scope)) return false;
    memcpy(&k->scope, p, sizeof(k->scope));
    p += sizeof(k->scope);
    if (!key_len(&p, end, &k->hostlen) || !key_len(&p, end, &k->proglen) ||
        !key_len(&p, end, &k->pidlen) || k->hostlen + k->proglen + k->pidlen > (size_t)(end - p))
        return false;
    k->host = p;
    k->prog = p + k->hostlen;
    k->pid = k->prog + k->proglen;
    k->id = k->pid + k->pidlen;
    k->idlen = (size_t)(end - k->id);
    return true;
}

long
corr_load_rates(struct corr *c, const void *data, size_t len, size_t *dropped)
{
    struct wire_reader r;
    uint64_t count, i, now;
    size_t drop = 0, keylen;
    long loaded = 0;
    const char *key;
    struct corrkey k;
    struct hash_node *n;

    if (dropped) *dropped = 0;
    if (len < 16 ||
        wire_load32((const unsigned char *)data + len - 4) != durable_crc32(0, data, len - 4)) {
        errno = EINVAL;
        return -1;
    }
    wire_reader_init(&r, data, len - 4);
    if (wire_get32(&r) != RATES_MAGIC) {
        errno = EINVAL;
        return -1;
    }
    count = wire_get64(&r);
    now = tw_now(c->wheel) / 1000;
    for (i = 0; i < count && !r.bad; i++) {
        const struct pdb_rule *rule;
        struct share *s;
        struct bucket *b = NULL;
        uint64_t h, last;
        uint32_t tokens, span, rate;

        key = wire_get_bytes(&r, &keylen);
        last = wire_get64(&r);
        tokens = wire_get32(&r);
        span = wire_get32(&r);
        rate = wire_get32(&r);
        if (r.bad) break;
        rule = memchr(key, '\0', keylen) ? pdb_rule_by_id(c->db, key) : NULL;
        if (!rule || !bucket_corrkey(key, keylen, &k) || !share_of(c, rule)->rates || !rate ||
            !span || tokens > rate) {
            drop++;
            continue;
        }
        s = share_of(c, rule);
        h = corrkey_hash(&k);
        for (n = hash_table_find(&c->rates, h); n; n = hash_table_find_next(n)) {
            b = hash_entry(n, struct bucket, node);
            if (b->keylen == keylen && memcmp(b->key, key, keylen) == 0) break;
        }
        if (n || !may_hold_bucket(c, s)) {
            drop++; /* one of its own already (it counts), or no room */
            continue;
        }
        b = xcalloc(1, sizeof(*b));
        tw_timer_init(&b->timer);
        b->key = xmemdup(key, keylen);
        b->keylen = keylen;
        b->last_check = last > now && now ? now : last;
        b->tokens = tokens;
        b->span = span;
        b->rate = rate;
        b->share = s;
        hash_table_add(&c->rates, &b->node, h);
        lru_push(s, b);
        bucket_use(c, s, s->buckets + 1);
        bucket_arm(c, b);
        loaded++;
    }
    if (r.bad) {
        errno = EINVAL;
        return -1;
    }
    if (dropped) *dropped = drop;
    return loaded;
}
