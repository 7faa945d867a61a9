/*
 * Unit tests of execq (agent/core/execq.c) with executors in this process: a
 * configuration's executors staged and committed, alerts submitted and
 * delivered with their events, a reload that keeps an executor configured
 * alike, a stage given up, and the close at shutdown.  The executor process
 * side (ipcproxy) is tested in test_ipcproxy and the privsep integration
 * tests.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "agent/conf/conf.h"
#include "agent/core/execq.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

struct events {
    unsigned queued, delivered;
    char last[32]; /* the executor named by the last event */
};

static void
on_event(void *arg, const char *executor, const struct msg *m, enum queue_event ev)
{
    struct events *e = arg;

    (void)m;
    if (ev == QUEUE_EV_QUEUED) e->queued++;
    if (ev == QUEUE_EV_DELIVERED) e->delivered++;
    snprintf(e->last, sizeof(e->last), "%s", executor);
}

static bool
delivered_one(void *arg)
{
    return ((struct events *)arg)->delivered >= 1;
}

static void
closed(void *arg)
{
    (*(unsigned *)arg)++;
}

static struct conf *
load(const char *program, char *file, size_t filesize)
{
    char x[512];

    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>", program);
    return ul_load_executors(ul_workdir(), x, file, filesize);
}

START_TEST(test_local)
{
    struct events ev = {0};
    struct execq_stage st;
    struct buf err = BUF_INIT, report = BUF_INIT;
    struct conf *c1, *c2;
    struct execq *q;
    struct queue *running;
    struct msg *m;
    uv_loop_t loop;
    char file1[300], file2[300];
    unsigned nclosed = 0;

    ck_assert_ptr_nonnull(ul_workdir_new("execq"));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ul_write_file(ul_wpath("prog"), "#!/bin/sh\ncat >/dev/null\nexit 0\n");
    ck_assert_int_eq(chmod(ul_wpath("prog"), 0755), 0);
    c1 = load(ul_wpath("prog"), file1, sizeof(file1));
    q = execq_new(&loop, on_event, &ev);
    ck_assert_ptr_null(execq_proxy(q));
    ck_assert_ptr_null(execq_proxy_stats(q));
    ck_assert_uint_eq(execq_count(q), 0);

    /* start: staged, then committed */
    memset(&st, 0, sizeof(st));
    ck_assert_msg(execq_prepare(q, &st, NULL, c1, NULL, &err) == 0, "%s", buf_str(&err));
    ck_assert(!execq_stage_waits(&st));
    ck_assert_uint_eq(st.n, 1);
    ck_assert_str_eq(st.names[0], "script");
    execq_commit(q, &st, NULL);
    ck_assert_uint_eq(execq_count(q), 1);
    ck_assert_str_eq(execq_name(q, 0), "script");
    running = execq_queue(q, 0);
    ck_assert_ptr_nonnull(running);

    /* an alert, delivered, seen by the observer given at creation */
    m = msg_new();
    msg_set(m, nv_intern_str("MESSAGE"), "x", 1);
    execq_submit(q, 0, m, false);
    msg_unref(m);
    ck_assert(ul_run_until(&loop, delivered_one, &ev, 30));
    ck_assert_uint_eq(ev.queued, 1);
    ck_assert_str_eq(ev.last, "script");
    ck_assert_uint_eq(execq_stats(q, 0)->submitted, 1);
    ck_assert_uint_eq(execq_stats(q, 0)->delivered, 1);
    ck_assert(!execq_full(q, 0));
    ck_assert(execq_low(q, 0));

    /* a reload configured alike keeps the running queue */
    c2 = load(ul_wpath("prog"), file2, sizeof(file2));
    memset(&st, 0, sizeof(st));
    ck_assert_msg(execq_prepare(q, &st, c1, c2, NULL, &err) == 0, "%s", buf_str(&err));
    execq_commit(q, &st, &report);
    ck_assert_ptr_eq(execq_queue(q, 0), running);
    ck_assert_uint_eq(execq_stats(q, 0)->delivered, 1);

    /* a stage given up leaves the running executors as they are */
    memset(&st, 0, sizeof(st));
    ck_assert_msg(execq_prepare(q, &st, c2, c1, NULL, &err) == 0, "%s", buf_str(&err));
    execq_discard(&st);
    ck_assert_ptr_eq(execq_queue(q, 0), running);
    ck_assert_uint_eq(execq_count(q), 1);

    /* shutdown: one close per queue in this process */
    ck_assert_uint_eq(execq_closing(q), 1);
    execq_close(q, closed, &nclosed);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_uint_eq(nclosed, 1);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    execq_free(q);
    conf_free(c1);
    conf_free(c2);
    buf_free(&err);
    buf_free(&report);
    ul_workdir_remove();
}
END_TEST

/* A configuration whose executor cannot open: refused with file:line, nothing running. */
START_TEST(test_refused)
{
    struct events ev = {0};
    struct execq_stage st;
    struct buf err = BUF_INIT;
    struct conf *c;
    struct execq *q;
    uv_loop_t loop;
    char file[300], x[256];

    ck_assert_ptr_nonnull(ul_workdir_new("execq"));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\"/>", ul_wpath("missing"));
    c = ul_load_executors(ul_workdir(), x, file, sizeof(file));
    q = execq_new(&loop, on_event, &ev);
    memset(&st, 0, sizeof(st));
    ck_assert_int_eq(execq_prepare(q, &st, NULL, c, NULL, &err), -1);
    ck_assert_msg(strstr(buf_str(&err), file) != NULL, "%s", buf_str(&err));
    execq_discard(&st);
    ck_assert_uint_eq(execq_count(q), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    execq_free(q);
    conf_free(c);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("execq");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_local);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
