/*
 * status: what corrald's status page (GET /) and GET /api/v1/status show:
 * the alerts (most severe first, then the most recent; filtered by
 * Alertmanager's matchers and a state), silences, the last hour's received
 * and generated message rates, executor queues, open contexts per rule and
 * inputs; and each alert's own page (GET /alert?id=ID: labels, evidence
 * lines, notifications, what mutes it, a `corral silence add` command).
 * The pages are server-rendered HTML without script, form or external
 * resources, and read-only; the JSON holds the same data.
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

/* The most ?filter= arguments a page takes (each is one matcher or a set). */
#define STATUS_MAX_FILTERS 16

/* What the page's URL asks for: ?filter=MATCHERS (repeatable) and ?state=. */
struct status_query {
    const char *const *filters; /* Alertmanager's matchers, each "HOST=\"web1\"" or a set */
    size_t nfilters;            /* more than STATUS_MAX_FILTERS: the page says the URL is bad */
    const char *state;          /* active, silenced, inhibited, resolved; NULL: all but resolved */
};

/*
 * Appends the status page (a whole HTML document, UTF-8) to out, its
 * alerts those that q selects (NULL: all but the resolved).  Returns the
 * HTTP status: 200, or 400 when a filter or the state is bad (the page
 * says why, and lists no alert).
 */
unsigned status_page(struct status *st, const struct status_query *q, struct buf *out);
/*
 * Appends alert id's page to out.  Returns 200, or 404 (a page saying so)
 * when the store has no such alert.
 */
unsigned status_alert_page(struct status *st, const char *id, struct buf *out);
/* The page's data as a JSON object (the caller owns it). */
json_t *status_json(struct status *st);

/* The message counts of the last STATUS_MINUTES whole minutes, oldest first. */
void status_rates(const struct status *st, uint64_t received[STATUS_MINUTES],
                  uint64_t generated[STATUS_MINUTES]);

#endif
