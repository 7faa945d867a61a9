/*
 * executor: the interface between corrald's delivery machinery (queue.c:
 * spool, retries with backoff, dead letters, rate limits, de-duplication)
 * and one kind of executor (snmp.c, smtp.c, exec.c), which knows how to send
 * one alert and nothing about queues.
 *
 * An alert is one generated message on its way through one executor.  The
 * queue calls deliver() for it, at most max_inflight() at a time, and the
 * executor reports the outcome through done(): delivered, failed for now
 * (retried later with backoff), or failed for good (straight to the dead
 * letter file).  Everything runs on the libuv loop; deliver() must never
 * block it.
 */
#ifndef CORRAL_EXECUTOR_H
#define CORRAL_EXECUTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "engine/buf.h"
#include "actions/exconf.h"
#include "engine/msg.h"

struct alert {
    uint64_t seq;         /* position in the executor's spool */
    const char *id;       /* stable alert id: pairs a problem with its clear (see below) */
    const char *severity; /* critical, major, minor, warning, info, or clear */
    struct msg *msg;      /* the generated message: name-value pairs, tags, stamp */
    uint32_t attempts;    /* deliveries tried before this one */
};

enum deliver_result {
    DELIVER_OK,    /* the receiver has it (trap sent, inform acknowledged, mail accepted, exit 0) */
    DELIVER_RETRY, /* temporary failure: receiver down, SMTP 4xx, timeout */
    DELIVER_FAIL,  /* permanent failure: SMTP 5xx, bad address; retrying cannot help */
};

/* reason: a short human text for the log and the dead-letter file (may be NULL for OK). */
typedef void (*deliver_done_fn)(void *token, enum deliver_result r, const char *reason);

struct executor_kind {
    const char *name; /* "snmp", "smtp", "exec" */
    /*
     * Reads and checks the executor's own settings with the exconf_*
     * readers, which put errors in err as "FILE:LINE: executor NAME: message"
     * lines (conf_file is the configuration file's name); attributes every
     * executor has (see executor_common_attr) are the queue's, not the
     * kind's, and exconf_check_attrs accepts them.  Returns the executor, or
     * NULL.
     */
    void *(*open)(uv_loop_t *loop, const struct exconf *cfg, const char *conf_file,
                  struct buf *err);
    /* Starts delivering; done(token, ...) is called exactly once, possibly before returning. */
    void (*deliver)(void *impl, const struct alert *a, deliver_done_fn done, void *token);
    /*
     * Describes exactly what deliver() would send, for `corral match --dry-run`:
     * the trap OID and every varbind, the mail's headers and body, the argv and
     * environment of the script.
     */
    void (*render)(void *impl, const struct alert *a, struct buf *out);
    /* Stops; done(arg) once every handle is closed and deliveries are finished or abandoned. */
    void (*close)(void *impl, void (*done)(void *arg), void *arg);
    /* How many deliveries may run at once. */
    unsigned (*max_inflight)(void *impl);
    /*
     * Optional (NULL: never held).  A kind that holds deliveries before it
     * sends them (mail's group-wait and group-interval) says until when, in
     * ms of clock_wall_ms(), delivery token is held; 0 when it is being sent.
     */
    uint64_t (*held_until)(void *impl, void *token);
    /*
     * Optional (NULL: nothing can be taken back).  Forgets delivery token if
     * it is still held: its done() is never called then.  0, or -1 when it
     * is being sent already.
     */
    int (*cancel)(void *impl, void *token);
};

/*
 * The kinds.  A new kind is its own file defining one of these, a line
 * here and in executor.c's kinds[], and its element in etc/corrald.xsd.
 */
extern const struct executor_kind snmp_executor;
extern const struct executor_kind smtp_executor;
extern const struct executor_kind exec_executor;

/*
 * The exec kind's programs run as uid/gid from now on (by default as this
 * process's user): corrald's executor process, which stays root under
 * privilege separation, runs them as <daemon user>, as without it.
 */
void exec_run_as(uid_t uid, gid_t gid);

/* The kind of that name ("snmp", "smtp", "exec"), or NULL. */
const struct executor_kind *executor_kind_find(const char *name);

/*
 * Attributes every executor accepts, handled by the queue:
 *   name, queue (max alerts waiting), attempts (max deliveries), backoff and
 *   max-backoff (retry delays, doubled each time, with jitter), rate ("N/S"),
 *   dedupe (a window: the same dedupe-key within it is sent once),
 *   dedupe-key (template), alert-id (template), severity (template),
 *   dead-letter (file).
 */
bool executor_common_attr(const char *name);

/*
 * The severity scale of alerts, written once: CORRAL-MIB's CorralSeverity
 * numbers it from clear(1) to critical(6), and a mail is titled after its
 * worst alert.  An alert without a known severity counts as
 * EXECUTOR_SEVERITY_DEFAULT (the queue's severity template says the same).
 */
#define EXECUTOR_SEVERITY_DEFAULT "warning"
/*
 * What makes two alerts the same for dedupe= and mail's repeat-interval
 * by default: a resolved notification (corral.status "resolved") is never
 * the same as the alert it resolves.
 */
#define EXECUTOR_DEDUPE_KEY_DEFAULT "${.classifier.rule_id}|${HOST}|${MESSAGE}|${corral.status}"
#define EXECUTOR_SEVERITY_MAX       6
/* 1 (clear) to 6 (critical), compared without case; the default's for anything else. */
int executor_severity_number(const char *name);
/* "clear" to "critical" for 1 to 6; NULL for anything else. */
const char *executor_severity_name(int number);
/*
 * a announces a resolution: its severity is "clear", or its message has the
 * tag corral.clear (a rule's clear, or corrald's resolved notification when
 * an alert resolves: agent/alerting/alerts.h).  SNMP sends it as corralClear, mail
 * titles it "[RESOLVED]", scripts see CORRAL_STATUS=resolved.
 */
bool executor_alert_resolved(const struct alert *a);

#endif
