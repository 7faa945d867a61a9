/* xalloc: allocation wrappers that abort on exhaustion (see xalloc.h for why). */
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
oom(size_t size)
{
    fprintf(stderr, "corral: out of memory allocating %zu bytes\n", size);
    abort();
}

void *
xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) oom(size);
    return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p) oom(nmemb * size);
    return p;
}

void *
xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p) oom(size);
    return p;
}

void *
xgrow(void *ptr, size_t *cap, size_t need, size_t size)
{
    size_t n;

    if (need <= *cap) return ptr;
    n = *cap ? *cap : 8;
    while (n < need) {
        if (n > ((size_t)-1) / 4 / size) oom(need * size);
        n *= 2;
    }
    *cap = n;
    return xrealloc(ptr, n * size);
}

char *
xstrdup(const char *s)
{
    return xmemdup(s, strlen(s) + 1);
}

char *
xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void *
xmemdup(const void *src, size_t n)
{
    void *p = xmalloc(n);
    if (n) memcpy(p, src, n);
    return p;
}

/*
 * glibc gives every thread but the main one an arena of its own, and grows
 * its heap a page at a time, with an mprotect() for each page: a correlation
 * shard that keeps 100 MB of context messages made 20,000 of those calls, a
 * tenth of its time (perf, corral match -j 2).  Allocating `bytes` here in
 * blocks just below the mmap threshold (128 KiB, so that they come from the
 * heap) makes the heap writable that far with one call per block; freeing
 * them gives the pages back (the heap is trimmed with madvise, not made
 * unwritable), so later growth up to there costs no system call.  A heap is
 * at most 64 MiB; beyond it glibc adds heaps as before.
 */
void
xalloc_thread_reserve(size_t bytes)
{
    enum { BLOCK = 120 * 1024 };
    size_t n = bytes / BLOCK, i;
    void **blocks = n ? malloc(n * sizeof(*blocks)) : NULL;

    if (!blocks) return; /* an optimisation: nothing is lost without it */
    for (i = 0; i < n; i++)
        if (!(blocks[i] = malloc(BLOCK))) break;
    while (i-- > 0) free(blocks[i]);
    free(blocks);
}
