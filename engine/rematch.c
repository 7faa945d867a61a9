/*
 * rematch: bounded PCRE2 matching (see rematch.h).  One match context holds
 * the limits; it is read-only once made, so every thread shares it.  The
 * count of limit hits is one relaxed atomic: it is a statistic.
 */
#include "engine/rematch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static pcre2_match_context *context;
static pthread_once_t context_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t limit_hits;

static void
make_context(void)
{
    context = pcre2_match_context_create(NULL);
    if (!context) abort(); /* out of memory: xalloc's policy */
    pcre2_set_match_limit(context, REMATCH_MATCH_LIMIT);
    pcre2_set_depth_limit(context, REMATCH_DEPTH_LIMIT);
    pcre2_set_heap_limit(context, REMATCH_HEAP_LIMIT);
}

int
rematch(const pcre2_code *re, const char *s, size_t len, pcre2_match_data *md)
{
    int rc;

    pthread_once(&context_once, make_context);
    rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, context);
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
    case PCRE2_ERROR_JIT_STACKLIMIT:
        atomic_fetch_add_explicit(&limit_hits, 1, memory_order_relaxed);
        return REMATCH_LIMIT;
    default: return rc;
    }
}

uint64_t
rematch_limit_hits(void)
{
    return atomic_load_explicit(&limit_hits, memory_order_relaxed);
}
