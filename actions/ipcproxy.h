/*
 * ipcproxy: the engine process's side of the engine-executor protocol
 * (doc/privsep.md): stands for the executor process's queues
 * (actions/ipcserve.h) with the calls corrald's server makes on a queue
 * (submit, submit_keep, full, low, sync, stats, name, observer), so
 * that the server can hold either.  It knows the executors by the index and
 * name the executor process published in its hello; until that has come,
 * ipcproxy_ready is false and there is nothing to submit to.
 *
 * Submitting encodes the alert into a frame and queues it for writing (one
 * write per loop turn, however many alerts); an alert too long for a frame
 * is refused, counted (refused) and logged.  queue_full/queue_low are what
 * the executor process last said (its pressure frames), and the stats the
 * last it sent (at most a second old).
 *
 * The proxy says hello first (H, the protocol version); a hello (h) of
 * another version ends the connection, logged.  A reload of the executors
 * (ipcproxy_reload) asks the executor process to read the configuration
 * again (L); its answer (R) brings the new list of executors.
 */
#ifndef CORRAL_IPCPROXY_H
#define CORRAL_IPCPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "actions/queue.h"
#include "engine/msg.h"

struct ipcproxy;

struct ipcproxy_stats {
    uint64_t sent;    /* alerts sent to the executor process */
    uint64_t refused; /* alerts too long for a frame, or named an unknown executor */
    uint64_t bad;     /* frames from the executor process that did not parse (ignored) */
    /* the executor process's counters (struct ipcserve_stats), as it last sent them */
    uint64_t served_submitted; /* alerts it took */
    uint64_t served_rejected;  /* requests of this side it refused */
};

/*
 * on_ready(arg) once the hello has come (the executors are known);
 * on_end(arg, reason) once when the connection is over (the executor
 * process died, closed, or broke the framing).
 */
struct ipcproxy *ipcproxy_new(uv_loop_t *loop, int fd, void (*on_ready)(void *arg),
                              void (*on_end)(void *arg, const char *reason), void *arg);
bool ipcproxy_ready(const struct ipcproxy *p);
size_t ipcproxy_count(const struct ipcproxy *p);
/* The index of the executor of that name, or -1. */
int ipcproxy_find(const struct ipcproxy *p, const char *name);
const char *ipcproxy_name(const struct ipcproxy *p, size_t i);
void ipcproxy_submit(struct ipcproxy *p, size_t i, const struct msg *m, bool keep);
bool ipcproxy_full(const struct ipcproxy *p, size_t i);
bool ipcproxy_low(const struct ipcproxy *p, size_t i);
void ipcproxy_sync(struct ipcproxy *p);
const struct queue_stats *ipcproxy_queue_stats(const struct ipcproxy *p, size_t i);
/* fn learns each event of every executor's alerts, as queue_set_observer. */
void ipcproxy_set_observer(struct ipcproxy *p, queue_observer_fn fn, void *arg);

/*
 * Who gets the signals the executor process passes on (g frames): fn(arg,
 * sig) with SIGHUP, SIGTERM, SIGINT, SIGUSR1 or SIGUSR2; any other number is
 * counted as a bad frame (ipcproxy_stats.bad) and not passed on.
 */
void ipcproxy_set_signal(struct ipcproxy *p, void (*fn)(void *arg, int sig), void *arg);
/*
 * Tells the executor process, which systemd knows as corrald's main
 * process, a service state for sd_notify: "READY=1", "RELOADING=1" or
 * "STOPPING=1".  -1 when the connection is over.
 */
int ipcproxy_notify(struct ipcproxy *p, const char *state);
/* The longest command sent (as the executor process takes: IPCSERVE_CONTROL_MAX). */
#define IPCPROXY_CONTROL_MAX 16384
/* A queue control command's answer: text as queuectl_command writes it. */
typedef void (*ipcproxy_answer_fn)(void *arg, const char *text, size_t len);
/*
 * Sends a `corral queue` command (what follows "queue ") to the executor
 * process, which runs it on its queues; fn(arg, ...) once with the answer,
 * or with "FAILED the executor process is gone" when the connection ends
 * first (possibly before this returns).  Not after ipcproxy_close.
 */
void ipcproxy_control(struct ipcproxy *p, const char *args, ipcproxy_answer_fn fn, void *arg);
/*
 * Asks the executor process to stop (T): it closes its queues, whose spools
 * keep what is undelivered, and says bye; bye(arg) then, or when the
 * connection ends first.  -1 when the connection is already over.
 */
int ipcproxy_terminate(struct ipcproxy *p, void (*bye)(void *arg), void *arg);
/*
 * The executor process's answer to a reload: ok (its executors are those
 * of the configuration it read again, and the proxy's list is already the
 * new one: find them by name), or not (nothing changed on either side);
 * report is what it did or why it failed, lines of text.
 */
typedef void (*ipcproxy_reload_fn)(void *arg, bool ok, const char *report, size_t len);
/*
 * Asks the executor process to reload its executors (L with generation):
 * it reads the configuration file again itself and opens, keeps, hands
 * over and closes its queues as a reload without privilege separation
 * does; fn(arg, ...) once with its answer, or with ok false when the
 * connection ends first.  -1 (fn never called) when a reload is already
 * waiting or the connection is over.
 *
 * Alerts submitted until the answer has come are held here and sent after
 * it, their executor's index translated to the new list by name.  Why hold
 * rather than send them and let the executor process map the old indexes
 * by generation: it commits its new queues as soon as it has read L, so it
 * could tell old indexes from new ones only if the engine told it when it
 * had switched (one more message, and a second list kept over there); the
 * engine holds alerts (rare, beside messages) for one round trip instead.
 * An alert for an executor the reload removed is dropped, counted in
 * refused and logged.  ipcproxy_terminate meanwhile sends T after them.
 */
int ipcproxy_reload(struct ipcproxy *p, uint64_t generation, ipcproxy_reload_fn fn, void *arg);
/* Whether a reload waits for its answer. */
bool ipcproxy_reloading(const struct ipcproxy *p);
/* A reload answer's body, parsed (for the proxy and the fuzzer). */
struct ipcproxy_reloaded {
    uint64_t generation;
    bool ok;
    const char *report; /* in the body */
    size_t report_len;
    size_t n;     /* executors listed (0 when not ok) */
    char **names; /* n names and NULL, allocated (ipcproxy_reloaded_free) */
};
/*
 * R's body: u64 generation, u32 ok (0 or 1), bytes report, u32 n, n × bytes
 * name (no NUL; n 0 when not ok), nothing after.  0, or -1 (nothing to free).
 */
int ipcproxy_parse_reloaded(const void *body, size_t len, struct ipcproxy_reloaded *out);
void ipcproxy_reloaded_free(struct ipcproxy_reloaded *r);
/* Whether the bye came (false in bye() when the connection ended first). */
bool ipcproxy_said_bye(const struct ipcproxy *p);
const struct ipcproxy_stats *ipcproxy_get_stats(const struct ipcproxy *p);
void ipcproxy_close(struct ipcproxy *p, void (*done)(void *arg), void *arg);

#endif
