/*
 * output: where corrald writes messages: stdout, a file, or another syslog
 * server (UDP or TCP), as JSON lines or classic syslog lines.  Writes are
 * queued and never block the loop; a queue that is full drops and counts.
 */
#ifndef CORRAL_OUTPUT_H
#define CORRAL_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "buf.h"
#include "conf.h"
#include "msg.h"

struct output;

struct output_stats {
    uint64_t written;   /* messages written (or sent) */
    uint64_t dropped;   /* messages dropped: queue full, receiver down too long */
    uint64_t errors;    /* write or connection errors */
    uint64_t queued;    /* messages waiting now */
};

struct output *output_open(uv_loop_t *loop, const struct conf_output *co, struct buf *err);
/* Queues a message if the output selects it (classified/generated/all). */
void output_write(struct output *o, const struct msg *m);
/* Flushes what is queued, then closes; done (may be NULL) runs when finished. */
void output_close(struct output *o, void (*done)(void *arg), void *arg);
const char *output_name(const struct output *o);
const struct output_stats *output_get_stats(const struct output *o);

/* Formats a message as one line (no newline) in the given format. */
void output_format(const struct msg *m, enum conf_format f, struct buf *out);

#endif
