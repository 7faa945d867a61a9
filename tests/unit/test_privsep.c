/*
 * Unit tests of the process split (agent/proc/privsep.c): the engine child gets
 * its end of a working socketpair and dies with the executor
 * (PR_SET_PDEATHSIG); and the environment scrub leaves no secret in the
 * engine's memory: a process started with a secret in its environment
 * (this program, run again with --scrub-child) no longer shows it in
 * /proc/self/environ, the initial block, nor in getenv, while the time
 * zone and locale stay.
 */
#include "agent/proc/privsep.h"

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/buf.h"

#define SECRET "hunter2-7f3a9c"

/* Whether /proc/self/environ holds s. */
static int
environ_has(const char *s)
{
    char data[65536];
    size_t len = 0;
    ssize_t n;
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);

    if (fd < 0) return -1;
    while (len < sizeof(data) && (n = read(fd, data + len, sizeof(data) - len)) > 0)
        len += (size_t)n;
    close(fd);
    return memmem(data, len, s, strlen(s)) != NULL;
}

/* Run as `test_privsep --scrub-child` with SECRET in the environment; exit 0 when all holds. */
static int
scrub_child(void)
{
    const char *tz, *lc;

    if (environ_has(SECRET) != 1) return 10; /* the test would prove nothing */
    privsep_scrub_environment();
    if (environ_has(SECRET) != 0) return 11;
    if (getenv("SECRET_TOKEN")) return 12;
    tz = getenv("TZ");
    lc = getenv("LC_ALL");
    if (!tz || strcmp(tz, "UTC") != 0 || !lc || strcmp(lc, "C") != 0) return 13;
    return 0;
}

START_TEST(test_scrub_environment)
{
    char *argv[] = {"test_privsep", "--scrub-child", NULL};
    char *envp[] = {"SECRET_TOKEN=" SECRET, "TZ=UTC", "LC_ALL=C", NULL};
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execve("/proc/self/exe", argv, envp);
        _exit(99);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "scrub child: exit %d",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
END_TEST

START_TEST(test_split)
{
    struct buf err = BUF_INIT;
    struct pollfd p;
    pid_t engine = 0;
    char c = 0;
    int fd = -1, status;
    enum privsep_role role = privsep_split(&fd, &engine, &err);

    if (role == PRIVSEP_ENGINE) {
        int sig = 0;
        if (prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0) < 0 || sig != SIGTERM) _exit(20);
        if (write(fd, "E", 1) != 1) _exit(21);
        _exit(0);
    }
    ck_assert_msg(role == PRIVSEP_EXECUTOR, "%s", buf_str(&err));
    ck_assert_int_gt(engine, 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    p.fd = fd;
    p.events = POLLIN;
    ck_assert_int_eq(poll(&p, 1, 60000), 1);
    ck_assert_int_eq(read(fd, &c, 1), 1);
    ck_assert_int_eq(c, 'E');
    ck_assert_int_eq(waitpid(engine, &status, 0), engine);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "engine: exit %d",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    close(fd);
    buf_free(&err);
}
END_TEST

static Suite *
privsep_suite(void)
{
    Suite *s = suite_create("privsep");
    TCase *tc = tcase_create("privsep");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_scrub_environment);
    suite_add_tcase(s, tc);
    return s;
}

int
main(int argc, char **argv)
{
    SRunner *sr;
    int failed;

    if (argc > 1 && strcmp(argv[1], "--scrub-child") == 0) return scrub_child();
    sr = srunner_create(privsep_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
