/*
 * html: the one HTML escaper of the status page, and its inline SVG charts.
 * See html.h.
 */
#include "agent/html.h"

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
html_chart(struct buf *out, const char *title, const uint64_t *v, size_t n, int width, int height)
{
    uint64_t max = 0;
    size_t i;
    double bw;

    for (i = 0; i < n; i++)
        if (v[i] > max) max = v[i];
    buf_printf(out,
               "<svg class=\"chart\" role=\"img\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\"><title>",
               width, height, width, height);
    html_puts(out, title);
    buf_printf(out, " (largest: %llu)</title>", (unsigned long long)max);
    buf_printf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>", width, height);
    bw = n ? (double)width / (double)n : 0;
    for (i = 0; i < n && max; i++) {
        double h = (double)v[i] * (height - 2) / (double)max;
        if (!v[i]) continue;
        if (h < 1) h = 1;
        buf_printf(out,
                   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#3572a5\"/>",
                   i * bw, height - h, bw > 1.5 ? bw - 1 : bw, h);
    }
    buf_puts(out, "</svg>");
}
