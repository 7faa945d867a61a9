/*
 * test_execproc: corrald's executor process (agent/proc/execproc.c) against an
 * engine that a forked child plays with the engine's own side of the
 * protocol (ipcproxy): the pid file is the executor process's while it
 * serves and gone after; a signal sent to it reaches the engine, and the
 * engine's READY=1 reaches $NOTIFY_SOCKET; a reload the engine asks for
 * reads the configuration again through the caller's function, in the
 * executor process; an engine that stops cleanly (terminate, bye, exit 0)
 * makes it exit 0, and one that dies without a word makes it exit 1; an
 * executor that cannot be opened stops it before the hello.  Otherwise no
 * executor is configured: the queues are queueset's and ipcserve's to test.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actions/ipcproxy.h"
#include "agent/conf/conf.h"
#include "agent/proc/execproc.h"
#include "agent/proc/proc.h"
#include "tests/unit/unit_run.h"

/* What the engine child does once the executor process said hello. */
enum engine_play {
    PLAY_STOP,   /* check the pid file, terminate, wait for the bye, exit 0 */
    PLAY_RELOAD, /* ask for a reload, then as PLAY_STOP */
    PLAY_RELAY,  /* say READY=1, send the executor process SIGHUP, wait for it, then as PLAY_STOP */
    PLAY_DIE,    /* exit 3 without a word */
};

struct engine {
    struct ipcproxy *p;
    bool ended, bye, reloaded, reload_ok, hup;
};

static void
on_end(void *arg, const char *reason)
{
    struct engine *e = arg;

    (void)reason;
    e->ended = true;
}

static void
on_bye(void *arg)
{
    struct engine *e = arg;

    e->bye = ipcproxy_said_bye(e->p);
}

/* A signal the executor process was sent, passed on as a frame. */
static void
on_signal(void *arg, int sig)
{
    struct engine *e = arg;

    if (sig == SIGHUP) e->hup = true;
}

static void
on_reloaded(void *arg, bool ok, const char *report, size_t len)
{
    struct engine *e = arg;

    (void)report;
    (void)len;
    e->reloaded = true;
    e->reload_ok = ok;
}

/* Runs loop until *flag or the connection's end; bounded by the loop running out. */
static void
run_until(uv_loop_t *loop, struct engine *e, const bool *flag)
{
    while (!*flag && !e->ended && uv_run(loop, UV_RUN_ONCE)) {
    }
}

/* The pid file holds the executor process's pid (this child's parent). */
static bool
pidfile_is_parents(const char *path)
{
    FILE *f = fopen(path, "r");
    long pid = 0;
    bool ok;

    if (!f) return false;
    ok = fscanf(f, "%ld", &pid) == 1 && pid == (long)getppid();
    fclose(f);
    return ok;
}

/* The engine child: its exit status says what went wrong (0: nothing). */
static int
play_engine(int fd, enum engine_play play, const char *pidfile)
{
    uv_loop_t loop;
    struct engine e = {0};
    bool ready = false;

    uv_loop_init(&loop);
    e.p = ipcproxy_new(&loop, fd, NULL, on_end, &e);
    if (!e.p) return 10;
    while (!(ready = ipcproxy_ready(e.p)) && !e.ended && uv_run(&loop, UV_RUN_ONCE)) {
    }
    if (!ready) return 11;
    if (play == PLAY_DIE) return 3;
    if (pidfile && !pidfile_is_parents(pidfile)) return 12;
    if (play == PLAY_RELAY) {
        ipcproxy_set_signal(e.p, on_signal, &e);
        if (ipcproxy_notify(e.p, "READY=1") < 0 || kill(getppid(), SIGHUP) < 0) return 17;
        run_until(&loop, &e, &e.hup);
        if (!e.hup) return 18;
    }
    if (play == PLAY_RELOAD) {
        if (ipcproxy_reload(e.p, 1, on_reloaded, &e) < 0) return 13;
        run_until(&loop, &e, &e.reloaded);
        if (!e.reloaded || !e.reload_ok) return 14;
    }
    if (ipcproxy_terminate(e.p, on_bye, &e) < 0) return 15;
    run_until(&loop, &e, &e.bye);
    return e.bye ? 0 : 16;
}

static int reads; /* configurations read again for a reload */

static struct conf *
read_conf_again(void *arg, struct buf *err)
{
    (void)err;
    ck_assert_ptr_eq(arg, &reads);
    reads++;
    return calloc(1, sizeof(struct conf));
}

/*
 * Forks the engine child and runs the executor process; its exit status,
 * which is 0 only when the engine child exited 0 after the bye.
 */
static int
run_conf(struct conf *c, enum engine_play play, const char *pidfile)
{
    struct execproc_args a = {pidfile, read_conf_again, &reads};
    int sv[2], rc;
    pid_t pid;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    /* as corrald has them when it forks */
    proc_mask_signals(SIG_BLOCK);
    signal(SIGPIPE, SIG_IGN);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(sv[0]);
        _exit(play_engine(sv[1], play, pidfile));
    }
    close(sv[1]);
    rc = execproc_run(c, sv[0], pid, &a);
    /* the child is reaped: by the executor process, whose exit status says how it ended */
    ck_assert_int_eq(kill(pid, 0), -1);
    return rc;
}

/* The same with no executor configured. */
static int
run(enum engine_play play, const char *pidfile)
{
    return run_conf(calloc(1, sizeof(struct conf)), play, pidfile);
}

START_TEST(test_clean_stop)
{
    char dir[] = "/tmp/corral-test-execproc-XXXXXX", pidfile[64];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(pidfile, sizeof(pidfile), "%s/corrald.pid", dir);
    ck_assert_int_eq(run(PLAY_STOP, pidfile), 0);
    ck_assert_int_eq(access(pidfile, F_OK), -1); /* removed at the end */
    ck_assert_int_eq(reads, 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_reload_reads_again)
{

    reads = 0;
    ck_assert_int_eq(run(PLAY_RELOAD, NULL), 0);
    ck_assert_int_eq(reads, 1);
}
END_TEST

/*
 * systemd signals the main process, the executor process: the signal goes
 * on to the engine; and the engine's READY=1 reaches systemd from it.
 */
START_TEST(test_relay_and_notify)
{
    char dir[] = "/tmp/corral-test-execproc-XXXXXX", got[32];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ssize_t n;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", dir);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    setenv("NOTIFY_SOCKET", sa.sun_path, 1);
    ck_assert_int_eq(run(PLAY_RELAY, NULL), 0);
    n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);
    ck_assert_int_eq(n, 7);
    got[n] = '\0';
    ck_assert_str_eq(got, "READY=1");
    close(fd);
    unsetenv("NOTIFY_SOCKET");
    ck_assert_int_eq(unlink(sa.sun_path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_engine_dies)
{

    ck_assert_int_eq(run(PLAY_DIE, NULL), 1);
}
END_TEST

/*
 * An executor that cannot be opened: not started; the engine sees the
 * connection end before any hello, and the pid file goes.
 */
START_TEST(test_not_started)
{
    char dir[] = "/tmp/corral-test-execproc-XXXXXX", pidfile[64];
    struct conf *c = calloc(1, sizeof(*c));

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(pidfile, sizeof(pidfile), "%s/corrald.pid", dir);
    c->file = strdup("corrald.conf");
    c->executors = calloc(1, sizeof(*c->executors));
    c->executors[0].kind = strdup("no-such-kind");
    c->executors[0].name = strdup("x");
    c->executors[0].line = 7;
    c->nexecutors = 1;
    ck_assert_int_eq(run_conf(c, PLAY_STOP, pidfile), 1);
    ck_assert_int_eq(access(pidfile, F_OK), -1);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *
execproc_suite(void)
{
    Suite *s = suite_create("execproc");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_clean_stop);
    tcase_add_test(tc, test_reload_reads_again);
    tcase_add_test(tc, test_relay_and_notify);
    tcase_add_test(tc, test_engine_dies);
    tcase_add_test(tc, test_not_started);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(execproc_suite());
}
