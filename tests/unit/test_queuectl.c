/*
 * Unit tests: the `queue` commands of the control socket (agent/queuectl)
 * against a real queue: list (all, one, an unknown executor), retry and
 * drop of an id that is malformed, of an unknown executor or of an entry
 * that is not there, retry --all-dead (all, one, an unknown executor), and
 * the usage line for anything else.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "actions/queue.h"
#include "agent/web/queuectl.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

struct fixture {
    uv_loop_t loop;
    struct conf *conf;
    struct queue *q;
    char file[300];
};

static void
open_queue(struct fixture *f)
{
    struct buf err = BUF_INIT;
    char x[512];

    ck_assert_ptr_nonnull(ul_workdir_new("queuectl"));
    uv_loop_init(&f->loop);
    ul_write_file(ul_wpath("prog"), "#!/bin/sh\nexit 0\n");
    ck_assert_int_eq(chmod(ul_wpath("prog"), 0755), 0);
    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>",
             ul_wpath("prog"));
    f->conf = ul_load_executors(ul_workdir(), x, f->file, sizeof(f->file));
    f->q = queue_open(&f->loop, &f->conf->executors[0], f->file, NULL, &err);
    ck_assert_msg(f->q != NULL, "queue_open: %s", buf_str(&err));
    buf_free(&err);
}

static void
close_queue(struct fixture *f)
{
    queue_close(f->q, NULL, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f->loop), 0);
    conf_free(f->conf);
    ul_workdir_remove();
}

/* The answer to `queue ARGS` (a static buffer). */
static const char *
ctl(struct fixture *f, const char *args)
{
    static char text[4096];
    struct buf out = BUF_INIT;

    queuectl_command_queues(&f->q, 1, args, &out);
    snprintf(text, sizeof(text), "%s", buf_str(&out));
    buf_free(&out);
    return text;
}

static bool
starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

START_TEST(test_list)
{
    struct fixture f;
    json_t *j;

    open_queue(&f);
    j = json_loads(ctl(&f, "list"), 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "executors")), 1);
    json_decref(j);
    j = json_loads(ctl(&f, "list script"), 0, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "executors")), 1);
    json_decref(j);
    ck_assert_str_eq(ctl(&f, "list nope"), "ERROR unknown executor 'nope'\n");
    ck_assert(starts(ctl(&f, "list script more"), "ERROR usage: queue list"));
    close_queue(&f);
}
END_TEST

START_TEST(test_retry_and_drop_ids)
{
    struct fixture f;

    open_queue(&f);
    ck_assert_str_eq(ctl(&f, "retry noslash"),
                     "ERROR bad id 'noslash': EXECUTOR/ID, as `corral queue list` shows\n");
    ck_assert(starts(ctl(&f, "drop /abc"), "ERROR bad id '/abc'"));
    ck_assert(starts(ctl(&f, "drop script/"), "ERROR bad id 'script/'"));
    ck_assert_str_eq(ctl(&f, "drop nope/abc"), "ERROR unknown executor 'nope'\n");
    /* the executor is known, the entry is not: the queue's own answer */
    ck_assert(starts(ctl(&f, "retry script/abc"), "ERROR "));
    ck_assert(starts(ctl(&f, "drop script/abc"), "ERROR "));
    ck_assert(starts(ctl(&f, "drop"), "ERROR usage:"));
    close_queue(&f);
}
END_TEST

START_TEST(test_retry_all_dead)
{
    struct fixture f;

    open_queue(&f);
    ck_assert(starts(ctl(&f, "retry --all-dead"), "OK "));
    ck_assert(starts(ctl(&f, "retry --all-dead script"), "OK "));
    ck_assert_str_eq(ctl(&f, "retry --all-dead nope"), "ERROR unknown executor 'nope'\n");
    ck_assert(starts(ctl(&f, "retry --all-dead script more"), "ERROR usage:"));
    ck_assert(starts(ctl(&f, ""), "ERROR usage:"));
    ck_assert(starts(ctl(&f, "flush"), "ERROR usage:"));
    close_queue(&f);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("queuectl");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_list);
    tcase_add_test(tc, test_retry_and_drop_ids);
    tcase_add_test(tc, test_retry_all_dead);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
