/*
 * corr: the correlation engine.  Takes parsed messages, classifies them with
 * a pattern database, groups them into correlation contexts, runs rule
 * actions (on match and on context timeout) and emits, in order, the
 * timeout messages of contexts that expired, the input message, and the
 * messages its match actions generated — as syslog-ng's db-parser does.
 *
 * Time is the correlation time: max(previous, min(message stamp, clock)),
 * in milliseconds.  Integer context timeouts behave exactly as syslog-ng's
 * whole-second timer (alive at T+N, gone at T+N+1); fractional timeouts are
 * a corral extension measured on the stamps' fractions.
 */
#ifndef CORRAL_CORR_H
#define CORRAL_CORR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/pdb.h"

struct corr;

enum corr_emit_kind {
    CORR_INPUT,     /* the input message, classified */
    CORR_GENERATED, /* made by a rule action */
};

/* Receives every emitted message in order; it must not keep m beyond the call (msg_ref it). */
typedef void (*corr_emit_fn)(void *arg, struct msg *m, enum corr_emit_kind kind,
                             const struct pdb_action *action);
/* Reports notable events (context limit reached, ...) for the caller's log. */
typedef void (*corr_log_fn)(void *arg, const char *text);
/* Wall clock in milliseconds since the epoch. */
typedef uint64_t (*corr_clock_fn)(void *arg);

struct corr_opts {
    corr_emit_fn emit;
    corr_log_fn log;         /* may be NULL */
    corr_clock_fn clock;     /* NULL: the real clock */
    void *arg;               /* passed to the three callbacks */
    size_t max_contexts;     /* 0: 1,000,000 */
    size_t max_context_msgs; /* messages kept per context; 0: 10,000 (oldest dropped) */
    /* 0: 1,000,000; shared among the rules with a rate= as contexts are (context_share), a
     * rule's own buckets evicted (the least used of its least recent) when it has no room */
    size_t max_rate_buckets;
    /*
     * Fairness between rules: each rule that opens contexts is guaranteed
     * context_share contexts and the same fraction of max_context_memory
     * (0: max_contexts divided by the number of such rules).  Beyond its
     * share a rule only gets what the unused shares of the others leave;
     * with no room left it evicts its own smallest, oldest context (at most
     * 4 messages) for a new one, and refuses only when it has none.
     */
    size_t context_share;
    size_t max_context_bytes;  /* memory of one context; 0: 4 MiB (oldest messages dropped) */
    size_t max_context_memory; /* memory of all contexts; 0: 1 GiB */
    /* memory of the Sigma correlations' groups, in equal shares per correlation rule; 0: 256 MiB
     * (sigma_scratch_set_memory()) */
    size_t max_sigma_memory;
    /*
     * The log lines an alert carries (engine/evidence.h): at most
     * evidence_lines lines (0: 5; CORR_EVIDENCE_NONE: none, unless the
     * action sets corral.evidence_lines) and evidence_bytes bytes (0: 2 KiB).
     */
    size_t evidence_lines, evidence_bytes;
};
#define CORR_EVIDENCE_NONE ((size_t)-1)

struct corr_stats {
    uint64_t processed, matched, unknown, generated;
    uint64_t contexts_created, contexts_expired, contexts_open;
    uint64_t contexts_refused; /* not created: max_contexts, a rule's share or memory */
    uint64_t
        contexts_evicted; /* small contexts dropped for a new one of their rule (its share full) */
    uint64_t messages_dropped; /* dropped from full contexts (max_context_msgs) */
    uint64_t bytes_dropped;    /* messages dropped from or not kept in contexts: memory limits */
    uint64_t rate_limited;     /* action runs suppressed by rate= */
    uint64_t rate_buckets;     /* rate= buckets held (a bucket is freed once full again) */
    uint64_t rate_evicted;     /* buckets dropped for a new key of their rule (its share full) */
    uint64_t context_bytes;    /* memory held by open contexts */
    uint64_t sigma_groups;     /* Sigma correlation groups held */
    uint64_t sigma_dropped;    /* Sigma correlation events not counted: their share was full */
    uint64_t sigma_evicted;    /* Sigma correlation groups evicted for room in their share */
    uint64_t sigma_bytes;      /* memory held by Sigma correlation groups */
};

/* Adds o's counters to sum: the totals of several engines or shards. */
void corr_stats_add(struct corr_stats *sum, const struct corr_stats *o);
/* Adds only o's counts of events, not what it holds now (open contexts, buckets, bytes, groups):
 * what an engine that is gone leaves to the totals. */
void corr_stats_add_events(struct corr_stats *sum, const struct corr_stats *o);

/* Per rule that opens contexts or has a rate= (or did, before a reload): its contexts, buckets and
 * what its limits refused. */
struct corr_rule_stats {
    const char *rule_id;
    uint64_t contexts, bytes; /* open contexts the rule created, and their memory */
    uint64_t refused;         /* contexts not created */
    uint64_t dropped;         /* messages dropped from its contexts or not kept (all limits) */
    uint64_t evicted;         /* its small contexts dropped for new ones (share full) */
    uint64_t buckets;         /* rate= buckets held */
    uint64_t rate_limited;    /* action runs suppressed by rate=, for want of a bucket included */
    uint64_t rate_refused;    /* of those, for want of a bucket */
    uint64_t rate_evicted;    /* buckets dropped for new keys (share full) */
};

struct corr *corr_new(struct pdb *db, const struct corr_opts *opts);
void corr_free(struct corr *c);

/*
 * Processes one message.  The caller keeps ownership of m; it is classified in
 * place and passed to emit.
 */
void corr_process(struct corr *c, struct msg *m);

/*
 * corr_process in steps, for the parallel engine (par.c), which classifies
 * on other threads and feeds every shard the time of every message:
 * corr_msg_time() is the time a message moves correlation to (its stamp,
 * at most clock), corr_advance() moves time (no-op unless later, firing
 * due timeouts), corr_process_rule() processes m whose rule (NULL: unknown)
 * pdb_lookup*() found, after advancing to `to`.
 */
uint64_t corr_msg_time(const struct msg *m, uint64_t clock);
void corr_advance(struct corr *c, uint64_t to);
/*
 * corr_advance() to a time before this one only moves time: no timeout
 * fires, no rate bucket goes.  A shard skips the messages it does not own
 * up to there and moves its time once, to the latest of theirs.
 */
uint64_t corr_quiet_until(const struct corr *c);
void corr_process_rule(struct corr *c, struct msg *m, const struct pdb_rule *rule, uint64_t to);
/*
 * corr_process_rule() in parts, for the parallel engine (par.c) when a
 * message's also-correlate contexts live in other shards: each part runs on
 * the corr that owns its context, in this order for one message:
 * corr_part_main() (advance, count, the rule's context and values),
 * corr_part_also() for i = 0 .. nalso-1 (joins also[i]'s context, sets its
 * values on m), corr_part_emit() (the input message, the rule's match
 * actions), corr_part_also_actions() for each i.  The first three need the
 * same p; the joins need m as the previous part left it.  A joined rule's
 * match actions read only its context, not m.
 */
struct ctx;
struct corr_part {
    struct ctx *x;
    struct ctx *also[PDB_ALSO_MAX];
};
void corr_part_main(struct corr *c, struct msg *m, const struct pdb_rule *rule, uint64_t to,
                    struct corr_part *p);
void corr_part_also(struct corr *c, struct msg *m, const struct pdb_rule *rule, size_t i,
                    struct corr_part *p);
void corr_part_emit(struct corr *c, struct msg *m, const struct pdb_rule *rule,
                    struct corr_part *p);
/*
 * corr_part_emit() in its two halves: the input message (with every join's
 * values, so after the last corr_part_also()), and the rule's match
 * actions, which read only the rule's context unless it has none
 * (corr_part_actions_read_msg(): then they read m as the joins left it).
 */
void corr_part_input(struct corr *c, struct msg *m, const struct pdb_rule *rule);
void corr_part_actions(struct corr *c, struct msg *m, const struct pdb_rule *rule,
                       struct corr_part *p);
bool corr_part_actions_read_msg(const struct pdb_rule *rule, const struct corr_part *p);
void corr_part_also_actions(struct corr *c, struct msg *m, const struct pdb_rule *rule, size_t i,
                            struct corr_part *p);
/*
 * The arming number the next context timer gets (timers due at the same
 * time with the same order fire by it); the parallel engine numbers arms by
 * input position so that shards' timeouts merge in one-thread order.
 */
void corr_set_arm_seq(struct corr *c, uint64_t seq);
/*
 * The arming number the next context timer gets.  Contexts read from a
 * state file are armed with the number after it plus their index in the
 * file, so that the shards reading one file number them alike, in its
 * (firing) order.
 */
uint64_t corr_arm_seq(const struct corr *c);
/* While timeout actions run (inside emit): the firing timer's (expires, order, seq); else false. */
bool corr_firing_key(const struct corr *c, uint64_t key[3]);

/* What corr_process does with the clock, for a caller that classifies itself (corrald's workers):
 * the next corr_tick() moves time on by the clock's progress since then. */
void corr_note_clock(struct corr *c, uint64_t clock);
/* Advances correlation time to the clock (daemon tick), firing due timeouts. */
void corr_tick(struct corr *c);
/*
 * Fires every pending timeout, as pdbtool does at the end of its input: time
 * steps from deadline to deadline (and stays at the last one), so timeout
 * actions see their own time and contexts they create expire in turn.  A
 * chain of contexts creating each other is cut off after a bound (logged).
 */
void corr_expire_all(struct corr *c);

/* The correlation time in milliseconds since the epoch. */
uint64_t corr_now(const struct corr *c);
void corr_stats(const struct corr *c, struct corr_stats *out);
/* Calls fn for every rule that opens contexts, in database order (at most one per rule). */
void corr_foreach_rule(const struct corr *c,
                       void (*fn)(const struct corr_rule_stats *rs, void *arg), void *arg);
/* Adds the counts of events of rs (refused, dropped, evicted and the rate counts; not what is held
 * now) to those of the rule of this id, if c's database has it: the counts of a shard that a
 * reshard replaces go on in a new one (pipeline_reshard). */
void corr_add_rule_counts(struct corr *c, const struct corr_rule_stats *rs);

/*
 * Switches to another pattern database (after a reload).  Open contexts are
 * kept when their last rule still exists (matched by rule id) and dropped
 * otherwise; *kept and *dropped receive the counts.
 */
void corr_set_db(struct corr *c, struct pdb *db, size_t *kept, size_t *dropped);

/* Calls fn for every open context, detached ones last, in no set order (for the status page). */
struct corr_context_info {
    const char *id;
    size_t idlen;
    enum pdb_scope scope;
    const char *host, *program, *pid;
    size_t hostlen, programlen, pidlen;
    const char *rule_id;
    size_t nmsgs;
    uint64_t expires; /* ms */
    bool detached;    /* replaced by a create-context: no longer joined, still times out */
};
void corr_foreach(const struct corr *c, void (*fn)(const struct corr_context_info *ci, void *arg),
                  void *arg);
/*
 * The same for several engines (corrald's shards) in the order the contexts
 * fire, the same on every run and with any number of shards (corr_foreach's
 * follows a hash keyed per process); costs a sort, 32 bytes a context.
 */
void corr_foreach_many(const struct corr *const *cs, size_t n,
                       void (*fn)(const struct corr_context_info *ci, void *arg), void *arg);

/*
 * Writes all open contexts, their messages and remaining timeouts to path
 * atomically (temporary file, fsync, rename, fsync of the directory),
 * encoded and written a piece (1 MiB) at a time.  Returns 0, or -1 with errno set.
 */
int corr_save(const struct corr *c, const char *path);
/*
 * Loads contexts saved by corr_save, with their remaining timeouts.  Contexts
 * whose rule is gone, or whose key an open context already has, are dropped
 * (*dropped counts them).  The file is read record by record: a context
 * whose record is damaged (or cut off) is lost, and how many were is logged
 * (opts.log); the intact ones load.  Returns the number of contexts loaded,
 * or -1 with errno set: EINVAL for a file that is not a state file (its
 * magic or version damaged) or a damaged file of the older versions (1 and
 * 2, one checksum for the whole), of which nothing is loaded.
 */
long corr_load(struct corr *c, const char *path, size_t *dropped);
/* Several engines' contexts (corrald's shards) in one file, read back by corr_load as one's. */
int corr_save_many(const struct corr *const *cs, size_t n, const char *path);
/* corr_load, taking only the contexts keep says yes to (the others are neither kept nor
 * counted as dropped): each shard of corrald's workers reads its own from one file. */
typedef bool (*corr_keep_fn)(void *arg, const struct corr_context_info *ci);
long corr_load_some(struct corr *c, const char *path, size_t *dropped, corr_keep_fn keep,
                    void *arg);
/* The same from an open, seekable stream (read in a bounded window, not whole). */
long corr_load_file(struct corr *c, FILE *f, size_t *dropped);

/*
 * The rate= buckets (their keys, tokens left and last refill), appended to
 * out: what a cluster's checkpoint carries besides the contexts, so that the
 * partition's next owner goes on limiting where this one stopped.
 */
void corr_save_rates(const struct corr *c, struct buf *out);
/*
 * Loads buckets corr_save_rates wrote (len bytes at data).  Those of a rule
 * gone or without rate=, of a key that has a bucket already, or beyond
 * max-rate-buckets are dropped (*dropped counts them).  Returns the number
 * loaded, or -1 (errno EINVAL) for damaged data, of which nothing is loaded
 * after the damage.
 */
long corr_load_rates(struct corr *c, const void *data, size_t len, size_t *dropped);

#endif
