/*
 * html: the one HTML escaper of the status page, and its inline SVG charts.
 * See html.h.
 */
#include "agent/web/html.h"

#include <string.h>

void
html_escape(struct buf *out, const char *s, size_t len)
{
    size_t i, from = 0;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *ent;

        switch (c) {
        case '&': ent = "&amp;"; break;
        case '<': ent = "&lt;"; break;
        case '>': ent = "&gt;"; break;
        case '"': ent = "&quot;"; break;
        case '\'': ent = "&#39;"; break;
        case '\t':
        case '\n':
        case '\r': continue;
        default:
            if (c >= 0x20 && c != 0x7f) continue;
            ent = "&#xFFFD;";
            break;
        }
        buf_append(out, s + from, i - from);
        buf_puts(out, ent);
        from = i + 1;
    }
    buf_append(out, s + from, len - from);
}

void
html_puts(struct buf *out, const char *s)
{
    if (s) html_escape(out, s, strlen(s));
}

void
html_url_param(struct buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            buf_putc(out, (char)c);
        } else {
            buf_putc(out, '%');
            buf_putc(out, hex[c >> 4]);
            buf_putc(out, hex[c & 15]);
        }
    }
}

/* The plot's margins: the y axis's labels at the left, the x axis's under it. */
#define CHART_LEFT   44
#define CHART_BOTTOM 16
#define CHART_TOP    6

void
html_chart(struct buf *out, const char *title, const uint64_t *v, size_t n, int width, int height,
           const char *const *xlabels, size_t nx)
{
    int pw = width - CHART_LEFT - 4, ph = height - CHART_BOTTOM - CHART_TOP;
    int x0 = CHART_LEFT, y0 = CHART_TOP + ph; /* the plot's bottom left corner */
    uint64_t max = 0;
    size_t i;
    double bw;

    for (i = 0; i < n; i++)
        if (v[i] > max) max = v[i];
    buf_printf(out,
               "<svg class=\"chart\" role=\"img\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"10\" "
               "fill=\"#444\"><title>",
               width, height, width, height);
    html_puts(out, title);
    buf_printf(out, " (largest: %llu)</title>", (unsigned long long)max);
    buf_printf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>", x0,
               CHART_TOP, pw, ph);
    /* the scale: the top of the plot is the largest value (1 when all are 0) */
    buf_printf(out,
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ccc\"/>"
               "<text class=\"ymax\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%llu</text>"
               "<text class=\"ymin\" x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>",
               x0, CHART_TOP, x0 + pw, CHART_TOP, x0 - 4, CHART_TOP + 8,
               (unsigned long long)(max ? max : 1), x0 - 4, y0);
    bw = n ? (double)pw / (double)n : 0;
    for (i = 0; i < n && max; i++) {
        double h = (double)v[i] * ph / (double)max;
        if (!v[i]) continue;
        if (h < 1) h = 1;
        buf_printf(out,
                   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#3572a5\"/>",
                   x0 + i * bw, y0 - h, bw > 1.5 ? bw - 1 : bw, h);
    }
    /* the axes, and the x axis's labels under their ticks */
    buf_printf(out, "<path d=\"M%d %dV%dH%d\" stroke=\"#666\" fill=\"none\"/>", x0, CHART_TOP, y0,
               x0 + pw);
    for (i = 0; i < nx; i++) {
        double x = nx > 1 ? x0 + (double)pw * (double)i / (double)(nx - 1) : x0;
        const char *anchor = i == 0 ? "start" : i + 1 == nx ? "end" : "middle";
        buf_printf(out,
                   "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#666\"/>"
                   "<text class=\"xlabel\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">",
                   x, y0, x, y0 + 3, x, height - 3, anchor);
        html_puts(out, xlabels[i]);
        buf_puts(out, "</text>");
    }
    buf_puts(out, "</svg>");
}
