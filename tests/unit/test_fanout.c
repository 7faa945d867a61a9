/*
 * test_fanout: engine/fanout.c runs every piece exactly once, on as many
 * threads as asked and no more than there are pieces, and returns only when
 * all are done.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine/fanout.h"
#include "tests/unit/unit_run.h"

#define MAXN 1000

struct count {
    atomic_uint runs[MAXN]; /* how often each piece ran */
    pthread_t tids[MAXN];   /* the thread it ran on */
    pthread_mutex_t lock;
    unsigned now; /* pieces begun and not yet ended */
};

static void
piece(void *arg, size_t i)
{
    struct count *c = arg;
    unsigned k;

    pthread_mutex_lock(&c->lock);
    c->now++;
    pthread_mutex_unlock(&c->lock);
    c->tids[i] = pthread_self();
    for (k = 0; k < 1000; k++) __asm__ volatile("" ::: "memory"); /* a little work */
    atomic_fetch_add(&c->runs[i], 1);
    pthread_mutex_lock(&c->lock);
    c->now--;
    pthread_mutex_unlock(&c->lock);
}

/* How many different threads ran the n pieces. */
static unsigned
threads_used(const struct count *c, size_t n)
{
    unsigned used = 0;
    size_t i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++)
            if (pthread_equal(c->tids[i], c->tids[j])) break;
        if (j == i) used++;
    }
    return used;
}

static void
run(unsigned threads, size_t n)
{
    struct count *c = calloc(1, sizeof(*c));
    size_t i;

    ck_assert_ptr_nonnull(c);
    pthread_mutex_init(&c->lock, NULL);
    fanout_run(threads, n, piece, c);
    for (i = 0; i < n; i++)
        ck_assert_msg(atomic_load(&c->runs[i]) == 1,
                      "%u threads, %zu pieces: piece %zu ran %u times", threads, n, i,
                      atomic_load(&c->runs[i]));
    for (; i < MAXN; i++) ck_assert_uint_eq(atomic_load(&c->runs[i]), 0);
    ck_assert_uint_eq(c->now, 0); /* all ended before fanout_run returned */
    /* never more threads than asked (the caller's among them), nor than pieces */
    ck_assert_uint_le(threads_used(c, n), threads < 1 ? 1 : threads);
    if (threads <= 1 && n > 0) {
        /* one thread: the caller's */
        ck_assert_uint_eq(threads_used(c, n), 1);
        ck_assert(pthread_equal(c->tids[0], pthread_self()));
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

START_TEST(test_every_piece_once)
{
    static const unsigned threads[] = {0, 1, 2, 3, 8, 64, 200};
    static const size_t ns[] = {0, 1, 2, 7, 64, 1000};
    size_t t, k;

    for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++)
        for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) run(threads[t], ns[k]);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("fanout");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_every_piece_once);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
