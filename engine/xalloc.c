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
