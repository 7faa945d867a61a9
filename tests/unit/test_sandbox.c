/*
 * Unit tests of the engine's sandbox (agent/proc/sandbox.c), each in a child
 * process that loads the filter (it cannot be removed again): the kernel
 * reports NoNewPrivs 1 and Seccomp 2; what the engine does still works
 * (files, sockets of its families, a thread, a forked child as the state
 * save makes); other socket families are refused; and execve kills the
 * process with SIGSYS, as does execveat.
 *
 * The child tells the parent how far it got through a pipe, so that a
 * kill is known to come from the step under test.
 */
#include "agent/proc/sandbox.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/buf.h"
#include "tests/unit/unit_run.h"

static int progress_fd = -1;

/* The child says it reached step c. */
static void
reached(char c)
{
    if (write(progress_fd, &c, 1) != 1) _exit(90);
}

/* In the child: the value of a /proc/self/status field, or -1. */
static long
status_field(const char *name)
{
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    FILE *f = fopen("/proc/self/status", "r");

    if (!f) return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

static void *
thread_main(void *arg)
{
    return arg;
}

/*
 * Runs body in a sandboxed child; returns its wait status and puts the
 * steps it reached in steps (NUL-terminated).
 */
static int
run_child(void (*body)(void), char *steps, size_t size)
{
    int p[2], status = 0;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct buf err = BUF_INIT;
        close(p[0]);
        progress_fd = p[1];
        if (sandbox_engine(SANDBOX_KILL, &err) < 0) {
            fprintf(stderr, "%s", buf_str(&err));
            _exit(91);
        }
        reached('L');
        body();
        _exit(0);
    }
    close(p[1]);
    while (got + 1 < size && (n = read(p[0], steps + got, size - 1 - got)) > 0) got += (size_t)n;
    steps[got] = '\0';
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static void
body_allowed(void)
{
    char buf[16];
    pthread_t t;
    void *ret;
    int fd, s, status;
    pid_t pid;

    if (status_field("NoNewPrivs") != 1) _exit(10);
    if (status_field("Seccomp") != 2) _exit(11);
    reached('S');
    /* files */
    fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0) _exit(12);
    close(fd);
    reached('F');
    /* sockets of the engine's families; another one refused, not fatal */
    s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) _exit(13);
    close(s);
    s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) _exit(14);
    close(s);
    if (socket(AF_PACKET, SOCK_RAW, 0) >= 0 || errno != EAFNOSUPPORT) _exit(15);
    reached('N');
    /* a thread (clone3 refused, clone taken) and a forked child, as the state save */
    if (pthread_create(&t, NULL, thread_main, buf) != 0 || pthread_join(t, &ret) != 0 || ret != buf)
        _exit(16);
    pid = fork();
    if (pid == 0) _exit(7);
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 7)
        _exit(17);
    reached('T');
}

START_TEST(test_allowed)
{
    char steps[16];
    int status = run_child(body_allowed, steps, sizeof(steps));

    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child: steps '%s', exit %d, signal %d", steps,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ck_assert_str_eq(steps, "LSFNT");
}
END_TEST

static void
body_execve(void)
{
    char *argv[] = {"true", NULL}, *envp[] = {NULL};

    reached('E');
    execve("/bin/true", argv, envp);
    reached('X'); /* not reached: the filter kills the process */
}

/* A thread that runs before the filter is loaded, and tries execve after. */
static int tsync_pipe[2];

static void *
early_thread(void *arg)
{
    char c;

    (void)arg;
    if (read(tsync_pipe[0], &c, 1) != 1) _exit(40);
    execl("/bin/true", "true", (char *)NULL);
    _exit(41);
}

/*
 * The filter covers threads that were running before it was loaded
 * (SCMP_FLTATR_CTL_TSYNC): without, this thread's execve would replace
 * the process with /bin/true and it would exit 0.
 */
START_TEST(test_tsync)
{
    int status = 0;
    pid_t pid;

    ck_assert_int_eq(pipe(tsync_pipe), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct buf err = BUF_INIT;
        pthread_t t;
        if (pthread_create(&t, NULL, early_thread, NULL) != 0) _exit(90);
        if (sandbox_engine(SANDBOX_KILL, &err) < 0) _exit(91);
        if (write(tsync_pipe[1], "x", 1) != 1) _exit(92);
        pthread_join(t, NULL);
        _exit(0);
    }
    close(tsync_pipe[0]);
    close(tsync_pipe[1]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
                  "exit %d, signal %d: the early thread's execve was not killed",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
END_TEST

START_TEST(test_execve_kills)
{
    char steps[16];
    int status = run_child(body_execve, steps, sizeof(steps));

    ck_assert_str_eq(steps, "LE");
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
                  "execve: exit %d, signal %d (SIGSYS expected)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
END_TEST

static void
body_execveat(void)
{
    char *argv[] = {"true", NULL}, *envp[] = {NULL};

    reached('E');
    syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0);
    reached('X');
}

START_TEST(test_execveat_kills)
{
    char steps[16];
    int status = run_child(body_execveat, steps, sizeof(steps));

    ck_assert_str_eq(steps, "LE");
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS);
}
END_TEST

static Suite *
sandbox_suite(void)
{
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("sandbox");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_allowed);
    tcase_add_test(tc, test_execve_kills);
    tcase_add_test(tc, test_execveat_kills);
    tcase_add_test(tc, test_tsync);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(sandbox_suite());
}
