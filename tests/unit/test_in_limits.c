/*
 * Unit tests of a stream input's open-files budget (in_stream.c): an input
 * whose max-connections needs more descriptors than the soft limit allows
 * raises it toward the hard limit and says so; where the hard limit is too
 * low it says how many connections it takes at once.  Each case runs in a
 * child of its own, since lowering the hard limit cannot be undone.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "agent/conf/conf.h"
#include "agent/input/input.h"
#include "engine/buf.h"
#include "engine/log.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

static struct buf logged = BUF_INIT;

static void
on_log(void *arg, int level, const char *text)
{
    (void)arg;
    (void)level;
    buf_printf(&logged, "%s\n", text);
}

/*
 * In a child: the open-files limits set to soft and hard, a unix-stream
 * input for 1000 connections opened and closed.  True when it opened and
 * logged every one of want (NULL-terminated); what it logged goes to stderr.
 */
static bool
open_under(rlim_t soft, rlim_t hard, const char *const *want)
{
    int status;
    pid_t pid;

    fflush(NULL); /* the child exits through exit(): nothing buffered twice */
    pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit rl = {soft, hard};
        struct conf conf;
        struct conf_input ci;
        struct buf err = BUF_INIT;
        struct input *in;
        uv_loop_t loop;
        bool ok;

        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) _exit(2);
        log_set_sink(on_log, NULL);
        memset(&conf, 0, sizeof(conf));
        memset(&ci, 0, sizeof(ci));
        conf.max_connections = 1000;
        ci.type = CONF_IN_UNIX_STREAM;
        ci.name = "local";
        ci.path = (char *)ul_wpath("sock");
        ci.mode = 0600;
        if (uv_loop_init(&loop) < 0) _exit(3);
        in = input_open(NULL, &loop, &ci, &conf, &err);
        ok = in != NULL;
        for (; ok && *want; want++) ok = strstr(buf_str(&logged), *want) != NULL;
        if (in) input_close(in);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        fprintf(stderr, "%s%s", buf_str(&err), buf_str(&logged));
        exit(ok ? 0 : 1); /* exit(), not _exit(): a coverage build records the child's runs */
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status) == 0;
}

START_TEST(test_fds_raised)
{
    static const char *const want[] = {"local: open files limit raised from 64 to", NULL};
    struct rlimit rl;

    ck_assert_ptr_nonnull(ul_workdir_new("in_limits"));
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert(open_under(64, rl.rlim_max, want));
    ul_workdir_remove();
}
END_TEST

START_TEST(test_fds_capped)
{
    static const char *const want[] = {"local: max-connections 1000 needs about ",
                                       "the limit is 256: at most ", NULL};

    ck_assert_ptr_nonnull(ul_workdir_new("in_limits"));
    ck_assert(open_under(256, 256, want));
    ul_workdir_remove();
}
END_TEST

static Suite *
in_limits_suite(void)
{
    Suite *s = suite_create("in_limits");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_fds_raised);
    tcase_add_test(tc, test_fds_capped);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(in_limits_suite());
}
