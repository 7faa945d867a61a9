/*
 * status: what corrald's status page (GET /) and GET /api/v1/status show:
 * active, silenced and inhibited alerts, silences, executor queues, open
 * contexts per rule, inputs, and the last hour's received and generated
 * message rates.  The page is server-rendered HTML
 * without script or external resources; the JSON holds the same data.
 * Both are built from one table of sections (status.c), so that a new part
 * of the page is a function that writes its HTML and one that adds its JSON.
 */
#ifndef CORRAL_STATUS_H
#define CORRAL_STATUS_H

#include <jansson.h>
#include <uv.h>

#include "engine/buf.h"

struct server;
struct status;

/* Minutes of message rates kept, one count per minute. */
#define STATUS_MINUTES 60
/* Open contexts listed on the page and in the JSON at most (the per-rule counts are complete). */
#define STATUS_MAX_CONTEXTS 200

/*
 * Starts sampling srv's received and generated counts once a minute (a
 * timer on loop: nothing is done per message).
 */
struct status *status_new(uv_loop_t *loop, struct server *srv);
/* Stops the timer; the memory goes once libuv has closed it. */
void status_free(struct status *st);

/* Appends the status page (a whole HTML document, UTF-8) to out. */
void status_page(struct status *st, struct buf *out);
/* The page's data as a JSON object (the caller owns it). */
json_t *status_json(struct status *st);

/* The message counts of the last STATUS_MINUTES whole minutes, oldest first. */
void status_rates(const struct status *st, uint64_t received[STATUS_MINUTES],
                  uint64_t generated[STATUS_MINUTES]);

#endif
