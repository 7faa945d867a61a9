/*
 * unitlib: helpers shared by the executor unit tests (see unitlib.h).
 */
#include "tests/unit/unitlib.h"

#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/buf.h"

const char *
ul_schema_path(void)
{
    static char path[512];
    const char *top = getenv("top_srcdir");

    snprintf(path, sizeof(path), "%s/etc/corrald.xsd", top ? top : ".");
    return path;
}

void
ul_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static char workdir[256];

const char *
ul_workdir_new(const char *tag)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(workdir, sizeof(workdir), "%s/corral-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (!mkdtemp(workdir)) {
        perror(workdir); /* not ck_assert: test_exec makes it before any test runs */
        workdir[0] = '\0';
        return NULL;
    }
    return workdir;
}

const char *
ul_workdir(void)
{
    return workdir;
}

const char *
ul_wpath(const char *name)
{
    static char path[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", workdir, name);
    return path[k];
}

void
ul_workdir_remove(void)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
}

struct conf *
ul_load_executors(const char *dir, const char *executors, char *file, size_t filesize)
{
    static int count;
    struct buf text = BUF_INIT, err = BUF_INIT;
    struct conf *c;

    snprintf(file, filesize, "%s/corrald%d.conf", dir, count++);
    buf_printf(&text,
               "<?xml version=\"1.0\"?>\n<corrald><rules path=\"rules\"/><executors>\n%s\n"
               "</executors></corrald>\n",
               executors);
    ul_write_file(file, buf_str(&text));
    c = conf_load(file, ul_schema_path(), &err);
    if (!c) fprintf(stderr, "%s", buf_str(&err));
    ck_assert_ptr_nonnull(c);
    buf_free(&text);
    buf_free(&err);
    return c;
}

double
ul_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
on_guard(uv_timer_t *t)
{
    *(bool *)t->data = true;
}

bool
ul_run_until(uv_loop_t *loop, bool (*done)(void *arg), void *arg, double seconds)
{
    uv_timer_t guard;
    bool timed_out = false, ok;

    uv_update_time(loop); /* the loop may have been idle while a server started */
    uv_timer_init(loop, &guard);
    guard.data = &timed_out;
    uv_timer_start(&guard, on_guard, (uint64_t)(seconds * 1000), 0);
    while (!(done && done(arg)) && !timed_out) uv_run(loop, UV_RUN_ONCE);
    ok = done && done(arg);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(loop, UV_RUN_NOWAIT); /* lets the guard's close finish */
    return ok;
}

bool
ul_flag_set(void *arg)
{
    return *(const bool *)arg;
}

int
ul_reserve_port(int socktype, int *port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, socktype | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}
