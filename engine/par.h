/*
 * par: the pieces of the parallel engine that the pipeline (pipeline.h)
 * runs on N threads with exactly the output of one corr (corr.h) fed the
 * same messages: which shard owns a message (correlation is split into
 * shards by context key), messages split between shards (also-correlate),
 * balancing, and the merge of the per-shard outputs back into one-thread
 * order.  What they guarantee is at the top of par.c and in
 * doc/parallel.md.
 */
#ifndef CORRAL_PAR_H
#define CORRAL_PAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/corr.h"
#include "engine/sigma.h"

/*
 * The default number of threads: the CPUs this process may run on (its
 * affinity mask, so that `taskset -c 0` or a cgroup's cpuset gives one, not
 * the machine's count), at most 64.
 */
unsigned par_default_threads(void);

/*
 * Which shard owns a message (the pipeline's routing, and placing
 * contexts read from a state file).  par_route_init() reads the rules (read-only from then
 * on) and returns the number of shards usable for n threads: n, or 1 when
 * the rules make sharding unsafe (see par.c).
 */
struct par_route {
    unsigned nshards;
    bool noid[4]; /* by scope: the key leaves the context id out (rate limits) */
    /* Sigma correlation rules that all group by these fields (and no patterndb context):
     * every message goes to the shard of its values of them */
    bool sigma_route;
    size_t nsigma_key;
    nv_handle sigma_key[SIGMA_KEY_MAX];
};
#define PAR_ANY_SHARD UINT32_MAX       /* needs no shard's state: any shard may take it */
#define PAR_NO_SHARD  (UINT32_MAX - 1) /* processed already: no shard takes it */
unsigned par_route_init(struct par_route *rt, const struct pdb *db, unsigned n);
/* The owner of m classified as rule (NULL: none), or PAR_ANY_SHARD; id is scratch. */
unsigned par_owner(const struct par_route *rt, const struct msg *m, const struct pdb_rule *rule,
                   struct buf *id);
/*
 * A message whose rule also-correlates joins contexts that other shards may
 * own: it is processed in steps (corr_part_*), step 0 the rule's own
 * context, step 1+i the join of also[i], each on its owner's shard.  n is 0
 * when one shard owns all (par_owner()'s answer), else 1 + nalso.
 * PAR_STEPS also numbers the timers a position arms (at most one per step).
 */
#define PAR_STEPS (1 + PDB_ALSO_MAX)
struct par_steps {
    uint8_t n;
    uint8_t owner[PAR_STEPS];
};
/* par_owner(), and st filled for a message that is split between shards. */
unsigned par_owner_steps(const struct par_route *rt, const struct msg *m,
                         const struct pdb_rule *rule, struct buf *id, struct par_steps *st);

/*
 * The shards' progress through the split messages of a batch: a shard waits
 * for the step before its own (and the owner of step 0 for the last, before
 * emitting the input message).  Positions only grow, so it needs no reset.
 */
struct par_sync;
struct par_sync *par_sync_new(unsigned nshards);
void par_sync_free(struct par_sync *sy);
/*
 * Work a shard may do while it waits for another's step instead of giving
 * up the CPU (pipeline.c: classify a chunk of a later batch).  Called on the
 * waiting shard's thread; it must not wait for any shard.  Returns whether
 * it did anything.
 */
typedef bool (*par_idle_fn)(void *arg, unsigned self);
void par_sync_set_idle(struct par_sync *sy, par_idle_fn fn, void *arg);
/*
 * What shard self does for the message at input position pos (after
 * advancing its time to t): all of it if it owns it (owner, st->n == 0), its
 * steps if st splits it, else nothing.  *sub is set to what on_emit records
 * in par_rec.sub while it emits.
 */
void par_process(struct corr *c, unsigned self, unsigned nshards, struct par_sync *sy, uint64_t pos,
                 struct msg *m, const struct pdb_rule *rule, uint64_t t, unsigned owner,
                 const struct par_steps *st, uint8_t *sub);

/* At most this many shards (and threads). */
#define PAR_MAX_SHARDS 64

/*
 * Balances a classified batch: gives each of its n messages that needs no
 * shard's state (owner PAR_ANY_SHARD) a shard of nshards, preferably the
 * one of the thread that classified it while that shard's load (a message of
 * a context weighing more than one without) is under an even share, else
 * the least loaded ones in input order.  The messages are n records of
 * stride bytes from base, each with its owner (an unsigned) at shard_off
 * and its classifying thread (a uint8_t) at by_off.  Depends on the batch
 * alone (pipeline.c balances every batch so).
 */
void par_balance(void *base, size_t n, size_t stride, size_t shard_off, size_t by_off,
                 unsigned nshards);

/* The shard that owns an open context (to place contexts read from a state file). */
unsigned par_context_owner(const struct par_route *rt, const struct corr_context_info *ci);

/* ---- the pieces, exposed for the unit tests ---- */

/*
 * One emitted message's place in the output: its input position, whether
 * a timeout fired it (before the input message at pos) and the firing
 * timer's (expires, order, arming number).
 */
struct par_rec {
    uint64_t pos;
    uint64_t key[3];
    size_t off, len;
    bool expiry;
    /* not a timeout: 0 for the input message (and, unless split, everything else at pos, in
     * order); for a split message 1 for its rule's actions and 2+i for also[i]'s */
    uint8_t sub;
};
/*
 * Merges n shards' record lists (each in its shard's order) into output
 * order, calling fn for each record: for each position, the timeout
 * records of all shards by key (ties by shard), then the others.  Returns
 * nonzero as soon as fn does.  The others at a position go by sub, then
 * by shard (a split message's parts come from several shards).
 */
int par_merge(const struct par_rec *const *recs, const size_t *nrecs, unsigned n,
              int (*fn)(void *arg, unsigned shard, const struct par_rec *r), void *arg);

#endif
