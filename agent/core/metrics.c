/*
 * metrics: the renderer of metric descriptor tables (metrics.h). It owns
 * the exposition format: headers, label escaping, number formatting.
 */
#include "agent/core/metrics.h"

static void
header(struct buf *out, const struct metrics_desc *d)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name, d->type);
}

static void
value(struct buf *out, const struct metrics_desc *d, const void *src, void *ctx)
{
    double v;

    if (d->get) {
        buf_printf(out, "%s %llu\n", d->name, (unsigned long long)d->get(ctx));
        return;
    }
    if (!d->getd && !d->decimals) {
        buf_printf(out, "%s %llu\n", d->name, (unsigned long long)metrics_field(d, src));
        return;
    }
    if (d->getd)
        v = d->getd(ctx);
    else
        v = *(const double *)((const char *)src + d->field);
    buf_printf(out, "%s %.*f\n", d->name, (int)d->decimals, v);
}

void
metrics_render(struct buf *out, const struct metrics_desc *d, size_t n, const void *const *src,
               void *ctx)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (!src[d[i].src]) continue;
        header(out, &d[i]);
        if (d[i].series)
            d[i].series(out, &d[i], ctx);
        else
            value(out, &d[i], src[d[i].src], ctx);
    }
}

void
metrics_label_value(struct buf *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') buf_putc(out, '\\');
        if (*v == '\n')
            buf_puts(out, "\\n");
        else
            buf_putc(out, *v);
    }
}

void
metrics_sample(struct buf *out, const char *name, const char *label, const char *value, uint64_t v)
{
    buf_printf(out, "%s{%s=\"", name, label);
    metrics_label_value(out, value);
    buf_printf(out, "\"} %llu\n", (unsigned long long)v);
}

uint64_t
metrics_field(const struct metrics_desc *d, const void *stats)
{
    return *(const uint64_t *)((const char *)stats + d->field);
}
