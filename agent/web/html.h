/*
 * html: writing HTML safely.  Everything on corrald's status page that may
 * come from a log message or the configuration goes through html_escape(),
 * so that a hostile field value is shown as text and never becomes markup;
 * html_chart() draws a series of counts as a small inline SVG with its axes
 * (no external resources, no script); html_url_param() writes a URL's
 * query value.
 */
#ifndef CORRAL_HTML_H
#define CORRAL_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"

/*
 * Appends s (len bytes, NULs included) to out as HTML text, safe in element
 * content and in quoted attribute values: & < > " ' become entities, and
 * control characters (but tab, newline and carriage return) and NUL become
 * U+FFFD, which a browser would otherwise drop or choke on.  Bytes that are
 * not valid UTF-8 are passed on: the page is served as UTF-8, and a browser
 * shows them as U+FFFD, never as markup.
 */
void html_escape(struct buf *out, const char *s, size_t len);
/* html_escape() of a NUL-terminated string; NULL writes nothing. */
void html_puts(struct buf *out, const char *s);

/*
 * Appends s percent-encoded for a URL's query value: every byte but
 * A-Z a-z 0-9 - . _ ~ becomes %XX, so the result is also safe, unescaped,
 * in a quoted HTML attribute.
 */
void html_url_param(struct buf *out, const char *s);

/*
 * An inline SVG bar chart of n counts (oldest first) titled title (escaped),
 * width x height pixels in all: a y axis with its scale (0 and the largest
 * value, which is the top of the plot) at the left, and under the plot an x
 * axis with the nx labels of xlabels (escaped) spread evenly from its left
 * end to its right end.
 */
void html_chart(struct buf *out, const char *title, const uint64_t *v, size_t n, int width,
                int height, const char *const *xlabels, size_t nx);

#endif
