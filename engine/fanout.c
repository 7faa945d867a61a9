/*
 * fanout: independent pieces of work on a few short-lived threads (see
 * fanout.h).  The pieces are claimed one at a time from a shared counter,
 * so a thread that drew small pieces takes more of them: no piece's size
 * needs to be known in advance.
 */
#include "engine/fanout.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* More threads than this are not started: the work fanned out is a few thousand pieces at most. */
#define FANOUT_MAX_THREADS 64

struct fanout {
    void (*fn)(void *arg, size_t i);
    void *arg;
    size_t n;
    atomic_size_t next; /* the next piece nobody has taken */
};

static void
take_pieces(struct fanout *f)
{
    size_t i;

    while ((i = atomic_fetch_add_explicit(&f->next, 1, memory_order_relaxed)) < f->n)
        f->fn(f->arg, i);
}

static void *
helper(void *arg)
{
    take_pieces(arg);
    return NULL;
}

void
fanout_run(unsigned threads, size_t n, void (*fn)(void *arg, size_t i), void *arg)
{
    struct fanout f = {fn, arg, n, 0};
    pthread_t tid[FANOUT_MAX_THREADS];
    unsigned started = 0, k;

    if (threads > FANOUT_MAX_THREADS) threads = FANOUT_MAX_THREADS;
    if (threads > n) threads = (unsigned)n;
    /* a thread that cannot start leaves its share to the others (the caller takes all, at worst) */
    for (k = 1; k < threads; k++)
        if (pthread_create(&tid[started], NULL, helper, &f) == 0) started++;
    take_pieces(&f);
    for (k = 0; k < started; k++) pthread_join(tid[k], NULL);
}
