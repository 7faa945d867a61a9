/*
 * par: the parallel engine.  Replays syslog lines through the correlation
 * engine on N threads with exactly the output of one corr (corr.h) fed the
 * same lines: parsing and classification run on every thread, correlation
 * is split into shards by context key, and the per-shard outputs are merged
 * back into one-thread order.  The design, and what it guarantees, is at
 * the top of par.c and in doc/parallel.md.
 *
 * The caller feeds lines and receives rendered output in order through a
 * write callback; par has no I/O of its own.
 */
#ifndef CORRAL_PAR_H
#define CORRAL_PAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/corr.h"
#include "engine/syslogfmt.h"

struct par;

/*
 * Renders an emitted message, appending to out.  Called on the threads of
 * the engine (any of them, several at once), each with its own out: it must
 * only read m and what is read-only while the engine runs.
 */
typedef void (*par_render_fn)(void *arg, struct msg *m, enum corr_emit_kind kind,
                              const struct pdb_action *action, struct buf *out);
/* Receives the rendered output in order, on the caller's thread; nonzero stops the engine. */
typedef int (*par_write_fn)(void *arg, const char *p, size_t len);

struct par_opts {
    unsigned threads; /* at least 1 */
    par_render_fn render;
    par_write_fn write;
    corr_log_fn log;    /* may be NULL; called on any thread */
    uint64_t fixed_now; /* ms: the clock (corral match --now); 0: the wall clock */
    void *arg;          /* passed to the callbacks */
    /*
     * The limits each shard enforces (only corr_opts' limits are read; 0:
     * corr's defaults): every shard gets the limits of one engine, so that
     * the output is that of one thread unless one thread reaches a limit.
     */
    struct corr_opts limits;
};

/*
 * An engine over db (read-only from now on).  The number of correlation
 * shards is opts->threads, or 1 when the rules make sharding unsafe
 * (create-context, an also-correlate key known only after the rule's values:
 * see par.c); classification uses every thread anyway.
 * NULL when the threads cannot be started.
 */
struct par *par_new(struct pdb *db, const struct par_opts *opts);
void par_free(struct par *p);

/*
 * The default number of threads: the CPUs this process may run on (its
 * affinity mask, so that `taskset -c 0` or a cgroup's cpuset gives one, not
 * the machine's count), at most 64.
 */
unsigned par_default_threads(void);

/* Queues one line (copied; without its newline).  Returns nonzero once writing has failed. */
int par_line(struct par *p, const char *line, size_t len);
/*
 * Processes every queued line and, with expire, fires every pending
 * timeout as corr_expire_all() does.  Returns nonzero if writing failed.
 */
int par_finish(struct par *p, bool expire);

unsigned par_shards(const struct par *p);
/* The sums over the shards. */
void par_stats(const struct par *p, struct corr_stats *out);

/*
 * Which shard owns a message: shared by par and corrald's workers
 * (agent/workers.c).  par_route_init() reads the rules (read-only from then
 * on) and returns the number of shards usable for n threads: n, or 1 when
 * the rules make sharding unsafe (see par.c).
 */
struct par_route {
    unsigned nshards;
    bool noid[4]; /* by scope: the key leaves the context id out (rate limits) */
};
#define PAR_ANY_SHARD UINT32_MAX /* needs no shard's state: any shard may take it */
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
 * up the CPU (par.c: classify a chunk of a later batch).  Called on the
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
 * alone; every user of the pipeline (par, corrald's workers) balances so.
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
