/*
 * test_workers: corrald's parallel engine (agent/workers.c) as its loop
 * drives it: when a batch is handed to the worker threads.  A trickle of
 * messages must not wake every worker for each message (linger_ms), and
 * nothing may wait longer than that, nor be lost when it lingers.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "agent/workers.h"
#include "engine/corr.h"
#include "engine/pdb.h"
#include "tests/unit/unit_run.h"

static const char rules[] = "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
                            "<ruleset name='rs' id='rs'><pattern>app</pattern><rules>\n"
                            "<rule provider='t' id='r.hello' class='system'>"
                            "<patterns><pattern>hello @NUMBER:n@</pattern></patterns></rule>\n"
                            "</rules></ruleset></patterndb>\n";

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action,
        bool keep)
{
    size_t *inputs = arg;

    (void)m;
    (void)action;
    (void)keep;
    if (kind == CORR_INPUT) ++*inputs;
}

struct bench {
    uv_loop_t loop;
    struct pdb *db;
    struct corr_opts co;
    struct workers *w;
    size_t inputs; /* input messages emitted */
};

static void
start(struct bench *b, unsigned linger_ms)
{
    struct workers_opts o;

    memset(b, 0, sizeof(*b));
    ck_assert_int_eq(uv_loop_init(&b->loop), 0);
    b->db = pdb_new();
    ck_assert_int_eq(pdb_load_memory(b->db, "rules", rules, sizeof(rules) - 1), 0);
    memset(&o, 0, sizeof(o));
    o.threads = 2;
    o.queue = 1024;
    o.hostname = "h";
    o.corr = &b->co;
    o.emit = on_emit;
    o.arg = &b->inputs;
    o.linger_ms = linger_ms;
    b->w = workers_new(&b->loop, b->db, &o);
    ck_assert_ptr_nonnull(b->w);
}

static void
stop(struct bench *b)
{
    workers_free(b->w);
    uv_run(&b->loop, UV_RUN_NOWAIT); /* closes the handles */
    ck_assert_int_eq(uv_loop_close(&b->loop), 0);
    pdb_free(b->db);
}

static uint64_t
batches(struct bench *b)
{
    struct workers_stats st;

    workers_get_stats(b->w, &st);
    return st.batches;
}

static void
submit(struct bench *b, unsigned n)
{
    char line[64];
    int len = snprintf(line, sizeof(line), "<13>Dec  5 10:00:00 h app: hello %u", n);

    ck_assert(workers_submit(b->w, line, (size_t)len, NULL, NULL, false, false));
}

/* One message with no batch at the workers: it waits for more rather than wake them all. */
START_TEST(test_trickle_lingers)
{
    struct bench b;

    start(&b, 60000); /* longer than any test run: the check below cannot race it */
    submit(&b, 1);
    submit(&b, 2);
    uv_run(&b.loop, UV_RUN_NOWAIT); /* one iteration: the check handle runs */
    ck_assert_uint_eq(batches(&b), 0);
    /* a drain (metrics, a save, a reload) does not wait for the linger */
    workers_drain(b.w);
    ck_assert_uint_eq(batches(&b), 1);
    ck_assert_uint_eq(b.inputs, 2);
    stop(&b);
}
END_TEST

/* A full batch goes at once, without a loop iteration; a lingering one behind it is not lost. */
START_TEST(test_full_batch_goes)
{
    struct bench b;
    unsigned i;

    start(&b, 60000);
    for (i = 0; i < 256; i++) submit(&b, i);
    ck_assert_uint_eq(batches(&b), 1); /* handed over when it filled, before any iteration */
    submit(&b, 256);
    uv_run(&b.loop, UV_RUN_NOWAIT);
    /* the first batch may be back already (nothing at the workers: the new one lingers) or
     * not (it goes at this iteration's check): either way nothing is lost below */
    workers_drain(b.w);
    ck_assert_uint_eq(b.inputs, 257);
    stop(&b);
}
END_TEST

/* linger_ms 0: each loop iteration hands over what it read, as before linger existed. */
START_TEST(test_no_linger)
{
    struct bench b;

    start(&b, 0);
    submit(&b, 1);
    uv_run(&b.loop, UV_RUN_NOWAIT);
    ck_assert_uint_eq(batches(&b), 1);
    workers_drain(b.w);
    ck_assert_uint_eq(b.inputs, 1);
    stop(&b);
}
END_TEST

/* The linger timer hands a lone batch over by itself: nothing waits for more traffic. */
START_TEST(test_linger_timer_hands_over)
{
    struct bench b;

    start(&b, 1);
    submit(&b, 1);
    /* runs until the input message has come back: the timer, then the workers' async */
    while (b.inputs < 1) uv_run(&b.loop, UV_RUN_ONCE);
    ck_assert_uint_eq(batches(&b), 1);
    stop(&b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("workers");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_trickle_lingers);
    tcase_add_test(tc, test_full_batch_goes);
    tcase_add_test(tc, test_no_linger);
    tcase_add_test(tc, test_linger_timer_hands_over);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
