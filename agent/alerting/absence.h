/*
 * absence: tells when a source that has been sending goes quiet, and again
 * when it comes back.  A source is a host, or a host and program, chosen by
 * <absence host=... program=... after=...> entries of the configuration.
 * Both events are generated messages like those of rule actions, so they
 * reach the same outputs (and executors):
 *
 *   MESSAGE="web1 sshd has been silent for 300 seconds"
 *       tags corral.absence, corral.alert
 *   MESSAGE="web1 sshd is sending again after 412 seconds"
 *       tags corral.absence, corral.alert, corral.clear
 *
 * with values absence.state (down/up), absence.after, absence.last_seen,
 * class "absence", rule id corral.absence.down / corral.absence.up, HOST
 * (and PROGRAM) of the source that went quiet, not of corrald (an alert's
 * HOST label, which inhibition and silences key on, is the quiet host), and
 * the alert labels: corral.alert_id corral.absence/HOST[/PROGRAM] (the same
 * for both: the second clears the first), corral.severity (severity=,
 * warning by default), corral.event absence.down / absence.up and
 * corral.summary (MESSAGE, at most 120 bytes).  A source is bound to the
 * address it was first seen from (see absence.c).  A source silent for
 * `forget` seconds (conf_absence.forget; 0: never) is forgotten: no state
 * is kept for it any more.
 *
 * In a cluster, each partition its node owns has one, for the hosts of the
 * partition (cluster_node.c); absence_save and absence_load hand its
 * sources to the partition's next owner.
 *
 * The configuration also reads the old name <silence>, with a warning.
 */
#ifndef CORRAL_ABSENCE_H
#define CORRAL_ABSENCE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "engine/msg.h"

struct absence;

typedef void (*absence_emit_fn)(void *arg, struct msg *m);

/* max_sources bounds the number of sources tracked (the rest are counted, not watched). */
struct absence *absence_new(const struct conf_absence *rules, size_t nrules, size_t max_sources,
                            uint64_t now_ms, absence_emit_fn emit, void *arg);
void absence_free(struct absence *s);
/*
 * The stamps of the reports: now_ms and last-seen times are monotonic
 * (clock_mono_ms) and wall turns them into wall time (clock_mono_to_wall);
 * without it they are taken as they are (a test's clock).
 */
void absence_wall_clock(struct absence *s, uint64_t (*wall)(uint64_t mono_ms));
/* A message arrived from host/program (bound to its SOURCEIP) at now_ms. */
void absence_seen(struct absence *s, const struct msg *m, uint64_t now_ms);
/*
 * The same, for a message stored at wall_ms (a record's stamp; 0: now): its
 * source was seen then, the time it is absent counted from then.
 */
void absence_seen_at(struct absence *s, const struct msg *m, uint64_t now_ms, uint64_t wall_ms);
/* Time passes: reports sources that went silent. */
void absence_tick(struct absence *s, uint64_t now_ms);
/*
 * At a reload: takes over old's sources that s watches alike (a rule with
 * the same host and program), with when they were last seen and whether
 * they are silent, so that a reload neither forgets nor repeats an absence report.
 * old keeps its own; the caller frees it.  Also takes over its counters.
 */
void absence_adopt(struct absence *s, struct absence *old, uint64_t now_ms);
/*
 * The sources as text, to hand them to another watcher (another process):
 * one line each, "SEEN SILENT PROBATION" (SEEN: wall ms it was last seen)
 * then the rule's host and program, the host, program and address, each
 * "LEN:BYTES" or "-" (none).
 */
void absence_save(const struct absence *s, struct buf *out);
/*
 * Takes over absence_save's sources that s watches alike (as
 * absence_adopt()), their times counted on the wall clock; the number read,
 * or -1 for malformed text (the sources before it are taken).
 */
long absence_load(struct absence *s, const char *data, size_t len, uint64_t now_ms);
/* Reports made and sources forgotten since s was created (what absence_save writes changed). */
uint64_t absence_changes(const struct absence *s);
size_t absence_tracked(const struct absence *s);
/* Messages from sources not tracked (max_sources reached). */
uint64_t absence_untracked(const struct absence *s);
/* Sources forgotten after `forget` seconds of absence. */
uint64_t absence_forgotten(const struct absence *s);
/* Sources seen once dropped to make room for a new one (max_sources reached). */
uint64_t absence_evicted(const struct absence *s);
/* Messages naming a source from another address than the one it is bound to (ignored). */
uint64_t absence_foreign(const struct absence *s);
size_t absence_down(const struct absence *s);

#endif
