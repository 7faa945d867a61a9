/*
 * output: where corrald writes messages: stdout, a file, or another syslog
 * server (UDP, TCP or TLS), as JSON lines or classic syslog lines.  Writes are
 * queued and never block the loop; a queue that is full drops and counts,
 * unless the message comes from an input that back-pressure can pause
 * (output_write_keep) or is generated (a lane of its own, bounded in bytes:
 * see output.c).
 */
#ifndef CORRAL_OUTPUT_H
#define CORRAL_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "agent/net/tls.h"
#include "engine/msg.h"

struct output;

struct output_stats {
    uint64_t written;           /* messages written (or sent) */
    uint64_t dropped;           /* messages dropped: queue full, receiver down too long */
    uint64_t generated_dropped; /* of which generated: their lane full too (a stuck output) */
    uint64_t errors;            /* write or connection errors */
    uint64_t queued;            /* messages waiting now */
    uint64_t tls_failures[TLS_FAIL_N]; /* TLS forward: handshakes that failed, by reason */
};

/*
 * This host's name (gethostname, read once; "localhost" if it has none): the
 * HOST of syslog lines and of local messages that name none.
 */
const char *output_local_hostname(void);

struct output *output_open(uv_loop_t *loop, const struct conf_output *co, struct buf *err);
/*
 * What output_open() would refuse, without creating or connecting anything:
 * a file that cannot be written or created, a forward address that is not
 * host:port.  For `corrald -t` and `corral check-config`.  Returns 0, or -1
 * with a "file:line: output NAME: message" line in err.
 */
int output_check(const struct conf_output *co, const char *conf_file, struct buf *err);
/*
 * Queues a message if the output selects it (conf_output.select):
 *   CONF_SELECT_ALL         every message, input and generated
 *   CONF_SELECT_CLASSIFIED  input messages a rule matched: .classifier.class is set
 *                      and not "unknown" (generated messages are not included)
 *   CONF_SELECT_GENERATED   messages with MSG_F_GENERATED: rule actions, absence alerts
 * Never blocks: a full queue drops the message and counts it; a generated
 * message is kept past the message bound, up to a byte bound of its own.
 */
void output_write(struct output *o, const struct msg *m);
/*
 * The same for a message of a stream input, which the server pauses once
 * output_full(): the message is kept even past the queue's message bound
 * (not past its byte bound), since its input stops reading right after.
 */
void output_write_keep(struct output *o, const struct msg *m);
/* At or past its queue bound (messages, or half the byte bound): stream inputs should wait. */
bool output_full(const struct output *o);
/* At or below half its queue bound: waiting stream inputs may go on. */
bool output_low(const struct output *o);
/*
 * Reopens a file output's file (after log rotation: corrald calls it on
 * SIGHUP/SIGUSR2); queued lines go to the new file.  Does nothing for the
 * other types.
 */
void output_reopen(struct output *o);
/* Flushes what is queued, then closes; done (may be NULL) runs when finished. */
void output_close(struct output *o, void (*done)(void *arg), void *arg);
const char *output_name(const struct output *o);
/*
 * A reload keeps the outputs when they are all configured alike; a TLS
 * forward output reads its certificate, key and CA again all the same:
 * output_reload_prepare() loads them (-1 with a "file:line: output NAME:
 * message" line in err: the reload fails, the output keeps what it has),
 * output_reload_commit() puts them in place for its next connection.  Other
 * outputs: nothing to do.
 */
int output_reload_prepare(struct output *o, const struct conf_output *co, const char *conf_file,
                          struct buf *err);
void output_reload_commit(struct output *o);
/* A forward output over TLS (it has handshake failure counters). */
bool output_is_tls(const struct output *o);
const struct output_stats *output_get_stats(const struct output *o);

/*
 * Formats a message as one line (no newline) in the given format.  Syslog:
 * "<PRI>Mmm dd hh:mm:ss HOST PROGRAM[PID]: MESSAGE" (RFC 3164); HOST falls
 * back to this host's name, PROGRAM to "corral" for a generated message; an
 * input message without PROGRAM has no "PROGRAM[PID]: " tag; CR and LF in
 * MESSAGE become spaces (TCP and UDP forwarding keep them: see output.c).
 */
void output_format(const struct msg *m, enum conf_format f, struct buf *out);

#endif
