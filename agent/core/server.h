/*
 * server: the running corrald.  Owns the libuv loop's inputs, outputs and
 * executors, the pattern database and the correlation engine, and the
 * per-message path: an input hands a framed message to server_submit(),
 * which parses it, correlates it and passes every resulting message to the
 * outputs and, as the routes say, to the executors.  Start and reload
 * (server_start, server_reload, server_check*) are staging.c's.
 */
#ifndef CORRAL_SERVER_H
#define CORRAL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"

struct server;
struct input;

struct server *server_new(uv_loop_t *loop);
void server_free(struct server *s);

/*
 * Loads rules and state and opens inputs, outputs and executors, into a
 * server that runs nothing yet.  Takes ownership of conf.  Returns 0, or -1
 * with "file:line: message" lines in err (and the server still empty).
 */
int server_start(struct server *s, struct conf *conf, struct buf *err);

/*
 * What server_start() would refuse in conf, short of binding sockets,
 * loading state and dropping privileges: the rules (file:line), the outputs,
 * every executor opened and closed again as start-up opens it, the routes,
 * rule actions routing to executors that do not exist, the inputs'
 * addresses and socket paths.  `corrald -t` and `corral check-config` run
 * it; reload runs the same steps.  Returns 0 (with the number of rules in
 * *nrules), or -1 with every "file:line: message" line found in err.
 */
int server_check(const struct conf *conf, size_t *nrules, bool files, struct buf *err);

/*
 * What of server_check the engine opens as its own user: the state file's
 * path and the output files.  With files false, server_check leaves them
 * out, for `corrald -t` to check them as that user (privilege separation).
 */
int server_check_files(const struct conf *conf, struct buf *err);

/*
 * server_check as a reload in the engine process runs it, for `corrald -t`
 * as the engine's user: with executors false (privilege separation) the
 * executors are left to the executor process, which opens them as its own
 * user; their names still route.  Neither the files nor the rule count.
 */
int server_check_reload(const struct conf *conf, bool executors, struct buf *err);

/*
 * One message from an input: raw bytes of one syslog message without framing
 * (no trailing newline).  peer is the sender's address as text, or NULL.
 */
void server_submit(struct server *s, struct input *in, const char *data, size_t len,
                   const char *peer);

/*
 * Reloads configuration and rules: conf (owned) replaces the current one only
 * if everything in it loads; otherwise the old one keeps running.  done(arg,
 * rc, report) once, with 0 or -1 and what changed, or why the reload failed
 * (lines).  Before server_reload returns, except under privilege separation
 * when the executors changed: the executor process reloads them first
 * (doc/privsep.md), and done runs once it has answered (or at
 * server_shutdown, or when it is gone).  One at a time: a reload while one
 * waits fails (corrald runs them one after the other).
 */
typedef void (*server_reload_fn)(void *arg, int rc, const char *report);
void server_reload(struct server *s, struct conf *conf, server_reload_fn done, void *arg);
/* A reload that failed before reaching the server (the file unreadable or invalid): counted. */
void server_reload_failed(struct server *s);

/* Stops inputs, flushes outputs, saves the state; done runs when finished. */
void server_shutdown(struct server *s, void (*done)(void *arg), void *arg);
/* After server_shutdown: whether its save failed (logged; the contexts it held are lost). */
bool server_final_save_failed(const struct server *s);

/* The configuration in use. */
const struct conf *server_conf(const struct server *s);

/* Writes the engine's, inputs', outputs', executors' and the process's counters in Prometheus
 * text format (the web side adds its own, apiv2_metrics). */
void server_metrics(struct server *s, struct buf *out);
struct dnscache;
/* The cache $(dns-resolve-ip) uses, whose counters the metrics show (NULL: none). */
void server_set_dnscache(struct server *s, struct dnscache *dns);
struct queue;
/* The executors' queues, in configuration order (for delivery control, queuectl.c). */
size_t server_nqueues(const struct server *s);
struct queue *server_queue_at(const struct server *s, size_t i);
/*
 * Privilege separation (doc/privsep.md): before server_start, the executor
 * process's queues, behind proxy (ready: its hello has come), stand for the
 * executors; server_queue_at is then NULL, and the caller terminates the
 * proxy after server_shutdown.  server_proxy: the proxy, or NULL.
 */
struct ipcproxy;
void server_set_proxy(struct server *s, struct ipcproxy *proxy);
struct ipcproxy *server_proxy(const struct server *s);
/* Where executor spools live (configured, beside the state file, or NULL: memory only). */
char *server_spool_dir(const struct conf *c);
/* Writes the open correlation contexts as a JSON array. */
void server_contexts_json(struct server *s, struct buf *out);
/*
 * For the status page (status.c): the running parts, read only, in
 * configuration order.  The stats and names passed to fn are valid during
 * the call.
 */
struct input_stats;
struct queue_stats;
struct corr_rule_stats;
struct corr_context_info;
void server_foreach_input(struct server *s,
                          void (*fn)(const char *name, const struct input_stats *st, void *arg),
                          void *arg);
void server_foreach_queue(struct server *s,
                          void (*fn)(const char *name, const struct queue_stats *st, void *arg),
                          void *arg);
void server_foreach_rule(struct server *s, void (*fn)(const struct corr_rule_stats *rs, void *arg),
                         void *arg);
void server_foreach_context(struct server *s,
                            void (*fn)(const struct corr_context_info *ci, void *arg), void *arg);
/* Messages received from all inputs and generated by rule actions, since start. */
void server_counts(struct server *s, uint64_t *received, uint64_t *generated);
struct alerts;
struct silences;
/*
 * The active alert store and the silences (NULL before start), for the
 * control socket and the HTTP API: alerts_json(), silences_add_json() ...
 */
struct alerts *server_alerts(struct server *s);
struct silences *server_silences(struct server *s);
/* <cluster>: its nodes and the partitions' owners (cluster_view_json); NULL: no cluster. */
struct json_t;
struct json_t *server_cluster_json(struct server *s);
/*
 * An alert from outside (POST /api/v2/alerts, apiv2.c): a generated
 * message (MSG_F_GENERATED, tag corral.alert or corral.clear), written to
 * the outputs and routed to the executors, recorded, silenced and
 * inhibited as a rule's alert, except that an alert the store holds
 * unresolved is recorded again but not sent to the executors again.  m
 * is not kept.
 */
struct msg;
void server_inject_alert(struct server *s, struct msg *m);
/* When corrald started (wall clock, ms). */
uint64_t server_started_ms(const struct server *s);
/* Reopens file outputs (after log rotation). */
void server_reopen_outputs(struct server *s);

/*
 * Counters of the endpoints corrald serves besides its inputs: the control
 * socket (control.c) and the stats endpoint (http.c) count their
 * connections here, and server_metrics() shows them.
 */
enum server_endpoint { SERVER_EP_CONTROL, SERVER_EP_STATS, SERVER_EP_N };
struct server_endpoint_stats {
    uint64_t timed_out;     /* connections closed: no complete request in time */
    uint64_t evicted;       /* connections closed for a new one: the cap was reached */
    uint64_t accept_errors; /* connections that could not be accepted (EMFILE...) */
    uint64_t unauthorized;  /* requests refused: no valid credentials (stats: the API token) */
    uint64_t bad_requests;  /* requests refused: malformed or too large */
};
struct server_endpoint_stats *server_endpoint_stats(struct server *s, enum server_endpoint ep);

/*
 * Saves the correlation state in the background (a forked child, see
 * snapshot.h): the loop goes on.  done (may be NULL) runs with 0 or -1 once
 * a save begun after this call has finished.
 */
void server_save_state(struct server *s, void (*done)(void *arg, int rc), void *arg);

#endif
