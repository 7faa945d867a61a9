/*
 * sigma: Sigma detection and correlation rules (YAML, the Sigma specification v2), loaded
 * with a mapping file and evaluated on every message beside the patterndb
 * rules.
 *
 * The mapping file (doc/corral-sigma.5) says which messages a rule's
 * logsource stands for (PROGRAM names, syslog facilities, patterndb classes
 * or rule ids) and which corral value each Sigma field name reads.  A rule
 * whose logsource or one of whose fields has no mapping is refused, as is
 * one that uses a feature this module does not implement: each refusal has
 * the file, the line and the reason, and a refused rule contributes nothing
 * (a rule is loaded whole or not at all).
 *
 * Matching follows the specification: values are compared without regard
 * to ASCII case, with '*' and '?' as wildcards (escaped with '\'); a map
 * is AND over its fields, a list OR over its items; |all makes a value
 * list AND.  A rule is evaluated for a message only when its logsource
 * holds for it, and, when it cannot match without one of its |contains
 * literals, only when the literal scan (one pass over the field for all
 * rules) found one; its selections are evaluated lazily, as the condition
 * asks for them; regular expressions run through rematch() with its
 * limits, and only on values that hold the literal they cannot match
 * without, when one can be told (relit.h).
 *
 * Correlation rules (the Sigma correlation specification 2.1: event_count,
 * value_count, temporal, temporal_ordered, value_sum, value_avg) refer to
 * rules by name or id, chained or not; they are linked when a load
 * returns.  Their groups (by group-by values) and sliding windows live in
 * the scratch, in the correlation time the caller sets, within a memory
 * budget shared equally by the correlation rules.
 *
 * The set is read-only once loaded; sigma_match() needs a scratch of the
 * caller's (one per thread).  A match is reported to the caller, which
 * makes the alert with sigma_alert().
 */
#ifndef CORRAL_SIGMA_H
#define CORRAL_SIGMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/msg.h"
#include "engine/pdb.h"

struct sigma;
struct sigma_scratch;

struct sigma_rule {
    char *id; /* the rule's id, or its file's name without .yml when it has none */
    char *title;
    char *level;          /* as written; NULL when absent */
    char *author;         /* as written (the DRL 1.1 asks alerts to name it); NULL when absent */
    const char *severity; /* corral.severity the level maps to */
    const char *file;
    int line;
    /* what routing, alerts and executors see of the rule: class "sigma" */
    struct pdb_rule prule;
    struct pdb_action action;
    /* internals (sigma.c) */
    struct sigma_impl *impl;
};

enum sigma_diag_level { SIGMA_WARNING, SIGMA_ERROR };

struct sigma_diag {
    enum sigma_diag_level level;
    const char *file;
    int line;
    char *text;
};

struct sigma *sigma_new(void);
void sigma_free(struct sigma *s);

/*
 * Loads the mapping file; must come before the rules.  Returns 0, or -1
 * with errors (file:line) in the diagnostics.
 */
int sigma_load_mapping(struct sigma *s, const char *file);
int sigma_load_mapping_memory(struct sigma *s, const char *name, const char *text, size_t len);

/*
 * Loads a rule file, or every *.yml and *.yaml file under a directory
 * (recursively, in name order).  A rule that cannot be loaded is refused
 * with a warning (file:line: sigma rule refused: reason) and the others
 * load; returns -1 only when a file or directory cannot be read at all.
 */
int sigma_load(struct sigma *s, const char *path);
int sigma_load_memory(struct sigma *s, const char *name, const char *text, size_t len);

size_t sigma_nrules(const struct sigma *s);
const struct sigma_rule *sigma_rule_at(const struct sigma *s, size_t i);
/* Correlation rules loaded (linked to what they refer to); not counted in sigma_nrules(). */
size_t sigma_ncorrelations(const struct sigma *s);
const struct sigma_rule *sigma_correlation_at(const struct sigma *s, size_t i);
/*
 * The group-by fields of the correlation rules when they are the same list
 * for every correlation and every rule it refers to (aliases included),
 * into key (at most SIGMA_KEY_MAX); returns their number, or -1 when they
 * differ.  A message whose values of them go to one engine meets every
 * event of its groups there.
 */
#define SIGMA_KEY_MAX 16
int sigma_correlation_key(const struct sigma *s, nv_handle *key);
/* Rules refused so far. */
size_t sigma_nrefused(const struct sigma *s);

size_t sigma_ndiags(const struct sigma *s);
const struct sigma_diag *sigma_diag_at(const struct sigma *s, size_t i);
size_t sigma_nerrors(const struct sigma *s);
/* Prints the diagnostics as "file:line: error: text" (or warning). */
void sigma_print_diags(const struct sigma *s, FILE *out);

struct sigma_scratch *sigma_scratch_new(void);
void sigma_scratch_free(struct sigma_scratch *sc);

/*
 * The correlation time (ms) of the next sigma_match(): the timespans of
 * the correlation rules, whose state the scratch keeps, are measured in it.
 */
void sigma_scratch_set_time(struct sigma_scratch *sc, uint64_t now_ms);
/*
 * The memory the correlations' groups may hold in sc, in bytes (0: 256 MiB),
 * shared equally by the correlation rules: a correlation whose share is
 * full evicts its own groups furthest from firing (the fewest events, the
 * least recently fed first) for a new group or a growing one.
 */
void sigma_scratch_set_memory(struct sigma_scratch *sc, size_t bytes);
/* Events left uncounted: their correlation's share had no room even after evictions. */
uint64_t sigma_scratch_dropped(const struct sigma_scratch *sc);
/* Groups evicted (with events in their timespan) to make room in their correlation's share. */
uint64_t sigma_scratch_evicted(const struct sigma_scratch *sc);
/* Correlation groups held, and their memory in bytes. */
size_t sigma_scratch_groups(const struct sigma_scratch *sc);
size_t sigma_scratch_bytes(const struct sigma_scratch *sc);

/*
 * Calls fn for every rule that matches m, in load order; returns their
 * number.  A detection rule that correlations refer to feeds them (and is
 * not reported itself when all of them have generate: false); fn is called
 * for every correlation that fires (right after the rule that made it), and
 * it feeds the correlations chained on it.  Does not change m; allocates only while sc grows to the
 * set's size (the first messages).
 */
size_t sigma_match(const struct sigma *s, const struct msg *m, struct sigma_scratch *sc,
                   void (*fn)(void *arg, const struct sigma_rule *r), void *arg);

/*
 * The alert of rule r for message m (engine/alertlabels.h): a generated
 * message tagged corral.alert with HOST, PROGRAM and MESSAGE of m, the
 * rule's title as corral.summary, its level as corral.severity,
 * corral.alert_id sigma/ID/HOST, corral.event sigma.ID, class sigma and
 * the rule id as .classifier.rule_id, and every field the rule reads that
 * m has, under its corral name.
 */
struct msg *sigma_alert(const struct sigma_rule *r, const struct msg *m);
/*
 * The alert of rule r as fn of sigma_match() reports it with scratch sc:
 * sigma_alert(), and for a correlation rule its group-by values as labels
 * (under the field's corral name, or the alias's name) and, joined by '/',
 * in corral.alert_id sigma/ID/VALUES.
 */
struct msg *sigma_alert_fired(const struct sigma_rule *r, const struct msg *m,
                              const struct sigma_scratch *sc);

#endif
