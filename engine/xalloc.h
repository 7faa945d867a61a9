/*
 * xalloc: allocation that never returns NULL.
 *
 * corral's policy on memory exhaustion is the one Redis and OpenSMTPD use:
 * running out of memory is not a recoverable condition for a log pipeline, so
 * the process reports it and aborts instead of threading an error code through
 * every string append.  Growth is bounded elsewhere (message size, open
 * contexts, queue lengths), so reaching this is a bug or a misconfiguration.
 */
#ifndef CORRAL_XALLOC_H
#define CORRAL_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Grows an array to hold at least `need` elements of `size` bytes; `*cap` is updated. */
void *xgrow(void *ptr, size_t *cap, size_t need, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);

#endif
