/*
 * metrics: renders Prometheus text exposition (version 0.0.4) from a table
 * of metric descriptors, so that a metric is one line of data where it is
 * declared (server.c) rather than a run of code. A descriptor names the
 * metric, its type and help, the source its value is read from, and how:
 * a uint64_t or double field of that source, a getter, or an emitter that
 * writes labelled samples. A metric whose source is absent (NULL) is left
 * out, header included: a feature that is not configured shows no series.
 */
#ifndef CORRAL_METRICS_H
#define CORRAL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"

struct metrics_desc;

/* Writes the samples of d (its header is written already); ctx is metrics_render's. */
typedef void (*metrics_series_fn)(struct buf *out, const struct metrics_desc *d, void *ctx);

struct metrics_desc {
    const char *name;
    const char *type; /* "counter" or "gauge" */
    const char *help;
    unsigned src; /* index into metrics_render's sources: NULL there leaves the metric out */
    /* the value: the first of series, get, getd set; else the field at `field` of the source */
    metrics_series_fn series;
    uint64_t (*get)(void *ctx);
    double (*getd)(void *ctx);
    size_t field;      /* offset of a uint64_t (decimals 0) or double in the source; or, for
                          series, of the counter in the per-series stats struct */
    unsigned decimals; /* for double values: digits after the point */
};

/*
 * Renders the n descriptors of d in order: a # HELP and # TYPE header and the
 * samples of each whose source src[d->src] is not NULL. ctx is handed to the
 * getters and emitters.
 */
void metrics_render(struct buf *out, const struct metrics_desc *d, size_t n, const void *const *src,
                    void *ctx);

/* For emitters: a label value escaped as the exposition format wants (\\, \", \n). */
void metrics_label_value(struct buf *out, const char *v);

/* For emitters: one sample name{label="value"} v. */
void metrics_sample(struct buf *out, const char *name, const char *label, const char *value,
                    uint64_t v);

/* For emitters: the uint64_t at d->field of a per-series stats struct. */
uint64_t metrics_field(const struct metrics_desc *d, const void *stats);

#endif
