/*
 * alertlabels: the labels every alert carries, checked where rules are
 * loaded and made right where corrald records an alert.
 *
 * An alert is a generated message with the tag corral.alert (or the clear
 * of one: tag corral.clear), or one that its action's route= sends to
 * executors.  It carries five values:
 *
 *   HOST              the host the alert is about
 *   corral.alert_id   its identity: the same for every message of one
 *                     incident; characters A-Z a-z 0-9 . _ : / @ - only,
 *                     no empty part between slashes (alertlabels_map_id)
 *   corral.severity   critical, major, minor, warning or info
 *                     (a clear may say clear)
 *   corral.event      what happened, e.g. storage.raid.alert
 *   corral.summary    one line of at most ALERTLABELS_SUMMARY_MAX
 *                     characters for subjects and lists (MESSAGE keeps
 *                     the whole text)
 *
 * alertlabels_check_pdb() checks the rules statically: each alert-raising
 * action must set the four corral.* values in its <message>, and HOST too
 * unless its rule's context has a scope that gives HOST (host, program,
 * process).  alertlabels_check_msg() is the run-time side: it validates
 * and normalises one alert message before it is recorded.
 */
#ifndef CORRAL_ALERTLABELS_H
#define CORRAL_ALERTLABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/pdb.h"

/* Longest corral.summary, in characters (UTF-8 code points), the ellipsis included. */
#define ALERTLABELS_SUMMARY_MAX 120
/* What a missing or unknown severity becomes (the executors' default too). */
#define ALERTLABELS_SEVERITY_DEFAULT "warning"

/*
 * True when action a raises alerts: a <message> action whose tags include
 * corral.alert or corral.clear, or that has route=.
 */
bool alertlabels_action_alerts(const struct pdb_action *a);

/*
 * Checks every alert-raising action of db; appends one line per missing or
 * bad label, "FILE:LINE: rule ID: ...\n" (LINE: the action's), to out.
 * Returns the number of lines appended.
 */
size_t alertlabels_check_pdb(const struct pdb *db, struct buf *out);

/*
 * The same lines, each logged as a warning (log_msg, without the newline):
 * what corrald says of the rules it loads.  Returns their number.
 */
size_t alertlabels_warn_pdb(const struct pdb *db);

/* True when s is one of critical, major, minor, warning, info (exactly, lower case). */
bool alertlabels_severity_valid(const char *s, size_t len);

/*
 * The severity s means, for one that is not valid: case is ignored, and
 * syslog's level names map (emerg, alert, crit: critical; err, error: major;
 * warn: warning; notice, informational, debug: info).  NULL when s means
 * none of them.
 */
const char *alertlabels_severity_map(const char *s, size_t len);

/*
 * Appends id to out in the alert-id character set: each byte other than
 * A-Z a-z 0-9 . _ : / @ - becomes '_', a run of '/' becomes one, and a
 * leading or trailing '/' goes.  Returns true when that changed anything.
 */
bool alertlabels_map_id(const char *id, size_t len, struct buf *out);

/*
 * Appends the summary of text s to out: its first line, control
 * characters as spaces, without leading or trailing blanks; when longer
 * than ALERTLABELS_SUMMARY_MAX characters, cut at the last space that
 * leaves room for "..." (or, with no space in the second half, at a
 * character) and "..." appended.  Returns true when the result differs
 * from s.
 */
bool alertlabels_summary(const char *s, size_t len, struct buf *out);

/* What alertlabels_check_msg found (and, except where said, fixed). */
enum {
    ALERTLABELS_NO_HOST = 1u << 0,      /* HOST unset or empty (left so) */
    ALERTLABELS_NO_ID = 1u << 1,        /* corral.alert_id unset or empty (left so) */
    ALERTLABELS_ID_MAPPED = 1u << 2,    /* corral.alert_id mapped (alertlabels_map_id) */
    ALERTLABELS_NO_SEVERITY = 1u << 3,  /* set to ALERTLABELS_SEVERITY_DEFAULT */
    ALERTLABELS_BAD_SEVERITY = 1u << 4, /* mapped, or set to the default */
    ALERTLABELS_NO_EVENT = 1u << 5,     /* set to .classifier.rule_id if the message has one */
    ALERTLABELS_NO_SUMMARY = 1u << 6,   /* made from MESSAGE */
    ALERTLABELS_SUMMARY_CUT = 1u << 7,  /* made one line of at most 120 characters */
};
#define ALERTLABELS_NFLAGS 8

/*
 * Validates and normalises the labels of alert message m, which must be
 * the caller's to change (a copy no one else holds): maps corral.alert_id,
 * makes corral.severity one of the five (severity "clear", which makes the
 * message a clear, is kept), fills a missing corral.event and
 * corral.summary, and cuts a long summary.  A message whose labels are
 * right is not written to.  Call it before the alert id is computed from
 * the message (the id template reads corral.alert_id).  scratch is the
 * caller's buffer, reused across calls.  Returns the ALERTLABELS_* bits of
 * what it found, 0 when everything was right.
 */
unsigned alertlabels_check_msg(struct msg *m, struct buf *scratch);

/* A short name of one ALERTLABELS_* bit ("no_host", "summary_cut", ...), for logs and metrics. */
const char *alertlabels_flag_name(unsigned flag);

#endif
