/*
 * alerts: the active alert store.  An alert is a generated message that a
 * route sends to executors (or, routed or not, one that an <inhibit> source
 * matches, and the clear of an alert the store holds); the store
 * keeps one entry per alert id (the `alert-id` template, by default the
 * executors' default: rule id, HOST and context id, the empty ones left out
 * with their '/', or ${corral.alert_id} when the message sets it) with its
 * labels (the last message's name-value pairs: rule id, class, HOST,
 * PROGRAM, the rule's values), when it was first and last seen, how many
 * times it fired, its state and, per executor, what became of it:
 *
 *   firing     the last occurrence was sent to its executors
 *   resolved   the last occurrence was a clear (tag corral.clear, or
 *              corral.severity "clear") for that alert id
 *   silenced   an active silence matched it: sent to no executor
 *   inhibited  an <inhibit> rule held it back: sent to no executor
 *
 * Inhibition: while an alert that is not resolved matches a rule's source,
 * alerts matching its target whose `equal` labels have the same values are
 * inhibited (an alert does not inhibit itself).
 *
 * The store holds at most max-alerts entries; beyond, the resolved alert
 * seen longest ago is forgotten, or when none is resolved the oldest one;
 * both counted (alerts_forgotten) and logged (at most once a minute).
 *
 * It is saved beside the state file (STATE.alerts, written by the saving
 * child with the correlation state, durable_replace) and read back at start.
 */
#ifndef CORRAL_ALERTS_H
#define CORRAL_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/conf.h"
#include "engine/buf.h"
#include "engine/labelmatch.h"
#include "engine/msg.h"

#define ALERTS_MAX_DEFAULT 10000

enum alert_state { ALERT_FIRING, ALERT_RESOLVED, ALERT_SILENCED, ALERT_INHIBITED, ALERT_NSTATES };

/* What an executor did with an alert (its last occurrence). */
enum alert_delivery {
    ALERT_QUEUED,
    ALERT_DELIVERED,
    ALERT_RETRYING,
    ALERT_DEAD,
    ALERT_DROPPED, /* refused by the queue: full, rate limit or dedupe */
};

struct alerts;

struct alerts_stats {
    uint64_t recorded;  /* occurrences recorded */
    uint64_t silenced;  /* occurrences silenced (not sent) */
    uint64_t inhibited; /* occurrences inhibited (not sent) */
    uint64_t forgotten; /* entries forgotten: max-alerts reached */
    uint64_t load_errors;
};

/*
 * A store for at most max entries; alert_id is the template of the alert
 * id (NULL: the default).  NULL with a message in err when the template or
 * an <inhibit> rule's matchers are bad ("file:line: ..." lines).
 */
struct alerts *alerts_new(const struct conf *c, struct buf *err);
void alerts_free(struct alerts *a);
/* A reload: takes over old's entries (bounded by the new max) and counters; old is emptied. */
void alerts_adopt(struct alerts *a, struct alerts *old);
/* Checks a configuration's alert settings and <inhibit> rules (for corrald -t). */
int alerts_check_conf(const struct conf *c, struct buf *err);

/* m's alert id, into out (cleared first). */
void alerts_id(struct alerts *a, const struct msg *m, struct buf *out);
/* True when m is a clear (tag corral.clear or corral.severity "clear"). */
bool alerts_is_clear(const struct msg *m);
/*
 * True when some <inhibit> source matches m: such a message is recorded even
 * when no route sends it anywhere, so that it can inhibit.
 */
bool alerts_is_inhibit_source(const struct alerts *a, const struct msg *m);
/* The store holds alert id. */
bool alerts_known(const struct alerts *a, const char *id);
/* The id of a firing alert that inhibits m (whose own id is id), or NULL. */
const char *alerts_inhibited_by(struct alerts *a, const struct msg *m, const char *id);
/*
 * Records an occurrence of alert id at now_ms: muted ALERT_SILENCED or
 * ALERT_INHIBITED with by (the silence or the inhibiting alert), else
 * ALERT_FIRING (ALERT_RESOLVED for a clear).
 */
void alerts_record(struct alerts *a, const char *id, const struct msg *m, enum alert_state muted,
                   const char *by, uint64_t now_ms);
/* Executor `executor` reports on the alert whose message is m. */
void alerts_delivery(struct alerts *a, const char *executor, const struct msg *m,
                     enum alert_delivery d, uint64_t now_ms);

/*
 * Appends the alerts as a JSON array, those that match query (NULL: all):
 * [{"id","state","labels":{...},"firstSeen","lastSeen","count","mutedBy",
 *   "executors":{"NAME":{"state":"delivered","at":"..."}}}, ...]
 */
void alerts_json(struct alerts *a, const struct labelmatch *query, struct buf *out);
size_t alerts_count(const struct alerts *a);
size_t alerts_in_state(const struct alerts *a, enum alert_state st);
const char *alerts_state_name(enum alert_state st);
const struct alerts_stats *alerts_get_stats(const struct alerts *a);

/* Writes the store to path (durable_replace); 0 or -1 with errno.  Safe in the saving child. */
int alerts_save(const struct alerts *a, const char *path);
/* Reads a store written by alerts_save; a missing file is no error.  0, or -1 (logged). */
int alerts_load(struct alerts *a, const char *path);

#endif
