/*
 * alerts: the active alert store.  An alert is a generated message that a
 * route sends to executors (or, routed or not, one that an <inhibit> source
 * matches, and the clear of an alert the store holds); the store
 * keeps one entry per alert id (the `alert-id` template, by default the
 * executors' default: rule id, HOST and context id, the empty ones left out
 * with their '/', or ${corral.alert_id} when the message sets it) with its
 * labels (the last message's name-value pairs: rule id, class, HOST,
 * PROGRAM, the rule's values), when it was first and last seen, how many
 * times it fired, its state, the executors its routes chose and, per
 * executor, what became of it, and the history of its notifications:
 *
 *   firing     the last occurrence was sent to its executors
 *   resolved   a clear (tag corral.clear, or corral.severity "clear") for
 *              that alert id came, or it was not raised again for its
 *              resolve timeout (value corral.resolve_after, else the
 *              configured resolve-timeout; 0: never), or it was resolved by
 *              hand (corral alerts resolve)
 *   silenced   an active silence matches it: sent to no executor
 *   inhibited  an <inhibit> rule holds it back: sent to no executor
 *
 * Muting is live, as in Alertmanager: alerts_remute() evaluates silences
 * and inhibitions again for every alert that is not resolved (the server
 * calls it when a silence is added, expires, begins or ends), and
 * alerts_reinhibit() the inhibitions (when an inhibition source fires or
 * resolves).  An alert that stops being muted is sent then
 * to the executors its routes chose; one that resolves is announced to the
 * executors that were told it fired and whose route says send-resolved
 * (alerts_set_notify), once each.
 *
 * Inhibition: while an alert that is not resolved matches a rule's source,
 * alerts matching its target whose `equal` labels have the same values are
 * inhibited (an alert does not inhibit itself).  A source that resolved
 * still inhibits targets whose own time (the message's stamp: the time of
 * the line that raised them) falls within the time it was active, from its
 * corral.since label (else when it was first seen) to its resolution: the
 * lines a host queued while it could not send, which arrive after its
 * absence has resolved, raise inhibited alerts.  The store remembers the
 * last INHIBIT_WINDOWS such periods per rule, for at most an hour.
 *
 * The store holds at most max-alerts entries; beyond, the resolved alert
 * seen longest ago is forgotten (counted in alerts_forgotten, logged at
 * most once a minute).  An alert that is not resolved is never forgotten:
 * when every entry is unresolved, a new alert is still sent (its silences
 * and inhibitions are evaluated) but not recorded, counted in
 * alerts_unrecorded.
 *
 * It is saved beside the state file (STATE.alerts, written by the saving
 * child with the correlation state, durable_replace) and read back at start.
 * In a cluster, every node's store holds the whole cluster's alerts
 * (alerts_set_replica, alerts_merge; cluster_alerts.h).
 */
#ifndef CORRAL_ALERTS_H
#define CORRAL_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "engine/labelmatch.h"
#include "engine/msg.h"

#define ALERTS_MAX_DEFAULT 10000
/* resolve-timeout's default, Alertmanager's resolve_timeout (5 minutes) */
#define ALERTS_RESOLVE_TIMEOUT_DEFAULT 300.0
/* notifications kept per alert */
#define ALERTS_HISTORY 32

struct silences;

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

/* How an alert resolved. */
enum alert_resolution { ALERT_BY_NONE, ALERT_BY_CLEAR, ALERT_BY_TIMEOUT, ALERT_BY_HAND };

struct alerts_stats {
    uint64_t recorded;   /* occurrences recorded */
    uint64_t silenced;   /* occurrences silenced (not sent) */
    uint64_t inhibited;  /* occurrences inhibited (not sent) */
    uint64_t forgotten;  /* entries forgotten: max-alerts reached */
    uint64_t unrecorded; /* new alerts not recorded: max-alerts entries, none resolved */
    uint64_t resolved_timeout, resolved_hand, resolved_clear;
    uint64_t unmuted;           /* alerts sent when their silence or inhibition ended */
    uint64_t notified_resolved; /* resolved notifications handed to executors */
    uint64_t load_errors;
};

/* An executor that a route chose for an alert. */
struct alert_target {
    const char *name;
    bool send_resolved; /* its route says send-resolved="yes" */
};

/*
 * Hands m to executor `executor` (a resolved notification, tagged
 * corral.clear, or an alert whose silence or inhibition ended).
 */
typedef void (*alerts_notify_fn)(void *arg, const char *executor, const struct msg *m);

/*
 * A store for at most max entries; alert_id is the template of the alert
 * id (NULL: the default).  NULL with a message in err when the template or
 * an <inhibit> rule's matchers are bad ("file:line: ..." lines).
 */
struct alerts *alerts_new(const struct conf *c, struct buf *err);
void alerts_free(struct alerts *a);
/* A reload: takes over old's entries (bounded by the new max) and counters; old is emptied. */
void alerts_adopt(struct alerts *a, struct alerts *old);
/* Who receives resolved notifications and unmuted alerts (none until set). */
void alerts_set_notify(struct alerts *a, alerts_notify_fn fn, void *arg);
/*
 * Replication (a cluster, cluster_alerts.c): fn is called with the id of an
 * alert that changed here (recorded, resolved, muted, notified, forgotten),
 * once until alerts_export() reads it.  Changes alerts_merge() makes are not
 * reported; an alert whose entry here held what the merged record lacked
 * is, so that the last record written is the union of both.
 */
typedef void (*alerts_changed_fn)(void *arg, const char *id);
void alerts_set_replica(struct alerts *a, alerts_changed_fn fn, void *arg);
/* Appends the record of alert id for the other nodes; -1 when the store no longer holds it. */
int alerts_export(struct alerts *a, const char *id, struct buf *out);
/*
 * Merges a record another node exported, field by field, so that the
 * result does not depend on the order the records come in: the later
 * occurrence gives the labels and times; a resolution stands unless a later
 * firing is known (a change of another kind, such as a delivery made here
 * later, does not undo it); each executor's latest delivery and the union
 * of the histories are kept; the muting of the newer record.  An alert
 * that resolves so is announced to the executors told here that it fired;
 * an alert new here is sent to none.  1 when it changed the store, 0 when
 * the store knew all of it (or had no room), -1 when damaged.
 */
int alerts_merge(struct alerts *a, const char *rec, size_t len);
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
/* The store holds alert id, not resolved. */
bool alerts_firing(const struct alerts *a, const char *id);
/* The id of a firing alert that inhibits m (whose own id is id), or NULL. */
const char *alerts_inhibited_by(struct alerts *a, const struct msg *m, const char *id);
/*
 * Records an occurrence of alert id at now_ms: muted ALERT_SILENCED or
 * ALERT_INHIBITED with by (the silence or the inhibiting alert), else
 * ALERT_FIRING (ALERT_RESOLVED for a clear).  targets are the executors the
 * routes chose for m (sent to them now unless muted).  A clear of an alert
 * that fired announces the resolution to the executors that were told it
 * fired with send_resolved, except those among targets (which get the clear
 * itself).  False when the alert could not be recorded (max-alerts entries,
 * none resolved: counted).
 */
bool alerts_record(struct alerts *a, const char *id, const struct msg *m, enum alert_state muted,
                   const char *by, const struct alert_target *targets, size_t ntargets,
                   uint64_t now_ms);
/*
 * An alert on its way to the executors, in the server's order: records m
 * when its routes chose executors (targets, ntargets of them), when an
 * <inhibit> source matches it (a generated message, routed or not) or when
 * it is the clear of an alert the store holds; a silence of sil (may be
 * NULL) mutes it first, else an inhibition; when an inhibition source fired
 * or resolved, muting again by the inhibitions follows (alerts_reinhibit).
 * id receives m's alert id when m is recorded.  Returns how many of targets
 * to send m to: ntargets, or 0 when m is muted.
 */
size_t alerts_admit(struct alerts *a, struct silences *sil, const struct msg *m,
                    const struct alert_target *targets, size_t ntargets, struct buf *id,
                    uint64_t now_ms);
/*
 * Resolves alert id by hand (ALERT_BY_HAND) at now_ms, announcing it as a
 * clear does.  0, or -1 when the store has no such alert or it is resolved.
 */
int alerts_resolve(struct alerts *a, const char *id, uint64_t now_ms);
/* Resolves the alerts not raised again for their resolve timeout; how many. */
size_t alerts_tick(struct alerts *a, uint64_t now_ms);
/*
 * Evaluates silences (sil may be NULL) and inhibitions again for every
 * alert not resolved, at now_ms; an alert no longer muted is sent to its
 * executors.  Returns how many alerts changed state.
 */
size_t alerts_remute(struct alerts *a, struct silences *sil, uint64_t now_ms);
/*
 * The same for inhibitions only, when sources fired or resolved but the
 * silences did not change: a silenced alert stays silenced, and no
 * silence's matchers run.
 */
size_t alerts_reinhibit(struct alerts *a, uint64_t now_ms);
/* An inhibition source fired or resolved since the last alerts_remute() or alerts_reinhibit(). */
bool alerts_sources_changed(const struct alerts *a);
/*
 * The store's periodic step at now_ms, in the server's order: resolves the
 * alerts whose resolve timeout passed (alerts_tick); then, when the number
 * of silences of sil (may be NULL) active at now_ms differs from
 * *nactive (the caller's count at the last step, updated here),
 * mutes everything again (alerts_remute), else, when an inhibition source
 * fired or resolved, by the inhibitions only (alerts_reinhibit).
 */
void alerts_step(struct alerts *a, struct silences *sil, size_t *nactive, uint64_t now_ms);
/*
 * Executor `executor` reports on the alert whose message is m.  In a
 * cluster (alerts_set_replica), a report on an alert whose record has not
 * come yet is kept (the last 64) and joins the alert when it does.
 */
void alerts_delivery(struct alerts *a, const char *executor, const struct msg *m,
                     enum alert_delivery d, uint64_t now_ms);

/*
 * Appends the alerts as a JSON array, those that match query (NULL: all)
 * and, when id is not NULL, only the one with that id:
 * [{"id","state","labels":{...},"firstSeen","lastSeen","count","mutedBy",
 *   "resolvedAt","resolvedBy","resolveAt",
 *   "executors":{"NAME":{"state":"delivered","at":"...","sendResolved":true}},
 *   "notifications":[{"at","executor","status","outcome","attempt"}, ...]}, ...]
 * notifications: the last ALERTS_HISTORY (oldest first); "notified" counts all.
 */
void alerts_json(struct alerts *a, const struct labelmatch *query, const char *id, struct buf *out);
/* The same array as a jansson value; the caller owns it (json_decref). */
struct json_t; /* jansson's json_t */
struct json_t *alerts_to_json(struct alerts *a, const struct labelmatch *query, const char *id);
size_t alerts_count(const struct alerts *a);
size_t alerts_in_state(const struct alerts *a, enum alert_state st);
const char *alerts_state_name(enum alert_state st);
const struct alerts_stats *alerts_get_stats(const struct alerts *a);

/* Writes the store to path (durable_replace); 0 or -1 with errno.  Safe in the saving child. */
int alerts_save(const struct alerts *a, const char *path);
/* Reads a store written by alerts_save; a missing file is no error.  0, or -1 (logged). */
int alerts_load(struct alerts *a, const char *path);

#endif
