/*
 * ipcserve: the executor process's side of the engine-executor protocol
 * (doc/privsep.md).  It owns the executors' queues (actions/queue.h) and
 * serves one engine over one end of a socketpair (actions/ipc.h):
 *
 *   on start      h: version, the executors' names (their index is what
 *                    the engine names them by), and each one's pressure
 *   H hello       the engine's protocol version, its first frame: any
 *                    other request before it is refused; another version
 *                    is logged and ends the connection (on_end)
 *   S submit      the executor is checked against its own list, the
 *                    alert may bring only so many value names and tags
 *                    new to this process (IPCSERVE_NEW_NAMES) and must
 *                    decode whole; then queue_submit[_keep], within the
 *                    queue's hard bounds (queue.h).
 *                    Anything else is refused, counted and logged: the
 *                    engine can name only an executor and give an alert
 *   Y sync        queue_sync on every queue
 *   e event       each queue event (the alert store's), with the alert
 *   p pressure    when an executor's queue_full/queue_low changes
 *   s stats       each executor's struct queue_stats when it changed,
 *                    at most once a second
 *   x served      struct ipcserve_stats (submitted, rejected), the same way
 *   T terminate   the queues close (their spools keep what is undelivered),
 *                    then B (bye) and on_end(arg, "terminated"); any
 *                    request after T is refused
 *
 *   Q queue ctl   u32 id and a `corral queue` command (what follows "queue "),
 *                    run by the control function on this side's queues;
 *                    answered by A: the same id and the answer text
 *
 *   N notify      "READY=1", "RELOADING=1" or "STOPPING=1" (nothing else),
 *                    for the notify function to tell systemd
 *
 *   L reload      u64 generation: the reload function (ipcserve_set_reload)
 *                    reads the configuration again and replaces the queues
 *                    (queueset.h); R answers: the generation, ok, a report,
 *                    and the new list of names (as in h), then the pressure
 *                    and counters of every queue of it
 *
 * When the engine goes away or breaks the protocol, on_end is called once with the
 * reason; the queues stay open until ipcserve_close, which closes them.
 * Closing under a terminate waits until the queues have closed, since
 * ipcserve_close does the rest.
 */
#ifndef CORRAL_IPCSERVE_H
#define CORRAL_IPCSERVE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "actions/queue.h"
#include "engine/msg.h"

struct ipcserve;

struct ipcserve_stats {
    uint64_t submitted; /* alerts taken from the engine */
    uint64_t rejected;  /* frames refused: unknown executor, undecodable alert, too many new
                           names, unknown type */
};

typedef void (*ipcserve_end_fn)(void *arg, const char *reason);

/*
 * Serves fd (one end of a socketpair) with queues[0..n), which it takes
 * over (closed by ipcserve_close).  NULL when the pipe cannot be opened.
 */
struct ipcserve *ipcserve_new(uv_loop_t *loop, int fd, struct queue **queues, size_t n,
                              ipcserve_end_fn on_end, void *arg);
/* The longest queue control command taken (the control socket's line limit). */
#define IPCSERVE_CONTROL_MAX 16384
/* Runs a queue control command (args as queuectl_command's) on queues[0..n); the answer in out. */
typedef void (*ipcserve_control_fn)(void *arg, struct queue **queues, size_t n, const char *args,
                                    struct buf *out);
/* Who answers Q frames (without one: "ERROR queue control is not available"). */
void ipcserve_set_control(struct ipcserve *s, ipcserve_control_fn fn, void *arg);
/*
 * The executor process's reload (L): reads the configuration file again,
 * and replaces running[0..n) (the queues served now) as a reload does;
 * 0 with the new queues in *out (n of them in *nout, an array the caller
 * frees; the running queues not among them already closing), or -1 with
 * nothing changed.  Either way, lines for the operator in report.
 */
typedef int (*ipcserve_reload_fn)(void *arg, struct queue *const *running, size_t n,
                                  struct queue ***out, size_t *nout, struct buf *report);
/* Who reloads on L (without one, a reload fails with "cannot reload"). */
void ipcserve_set_reload(struct ipcserve *s, ipcserve_reload_fn fn, void *arg);
/*
 * Passes signal sig (SIGHUP, SIGTERM, SIGINT, SIGUSR1, SIGUSR2) on to the
 * engine as a g frame, which needs no right to signal it (kill() across
 * users would need CAP_KILL).  -1 when the connection is over.
 */
int ipcserve_signal(struct ipcserve *s, int sig);
/* Who learns the engine's service states (N frames). */
void ipcserve_set_notify(struct ipcserve *s, void (*fn)(void *arg, const char *state), void *arg);
const struct ipcserve_stats *ipcserve_get_stats(const struct ipcserve *s);
/*
 * Closes the connection (B, if sent, is written first) and every queue not
 * yet closed; done(arg) once all are closed.  After a terminate, call it
 * from on_end("terminated") (the queues have closed by then).
 */
void ipcserve_close(struct ipcserve *s, void (*done)(void *arg), void *arg);

/* A submit frame's body, checked (for the server and the fuzzer). */
struct ipcserve_submit {
    uint32_t index, keep;
    const char *alert; /* msg_encode bytes, in the body */
    size_t alert_len;
    struct msg *msg; /* the caller's: the alert is decoded into it */
};
/*
 * Parses and checks a submit: the index must be below nexecutors, keep 0
 * or 1, the alert must decode using every byte and nothing may follow it.
 * 0, or -1 with a short reason in why.
 */
int ipcserve_parse_submit(const void *body, size_t len, size_t nexecutors,
                          struct ipcserve_submit *out, const char **why);

/*
 * Value names and tags an alert from the engine may add to this process's
 * registries (nv.h, tags.h: 65,536 each, shared with its configuration):
 * per alert, and in all for the engine's connection.  An alert past either
 * is refused (counted in rejected).
 */
#define IPCSERVE_ALERT_NEW_NAMES 256
#define IPCSERVE_NEW_NAMES       8192
/* How many of the names and tags of an encoded alert (msg_encode) the registries do not hold. */
size_t ipcserve_new_names(const void *alert, size_t len);

/* H's body (u32 version) and L's (u64 generation): 0, or -1 when it is not exactly that. */
int ipcserve_parse_hello(const void *body, size_t len, uint32_t *version);
int ipcserve_parse_reload(const void *body, size_t len, uint64_t *generation);

/* The body of a stats frame: index, then the fields of struct queue_stats in order. */
void ipcserve_put_stats(struct buf *out, uint32_t index, const struct queue_stats *st);

#endif
