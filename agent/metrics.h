/*
 * metrics: a minimal HTTP listener that serves corrald's counters in
 * Prometheus text format at /metrics, for a local scraper.
 */
#ifndef CORRAL_METRICS_H
#define CORRAL_METRICS_H

#include <uv.h>

#include "engine/buf.h"

struct server;
struct metrics;

/* Connections the stats endpoint holds open at once; a new one closes the oldest. */
#define METRICS_MAX_CONNS 16

struct metrics *metrics_open(uv_loop_t *loop, const char *listen, struct server *srv,
                             struct buf *err);
void metrics_close(struct metrics *m);

#endif
