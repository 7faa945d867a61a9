/*
 * test_exec: the exec executor (actions/exec.c), driven directly from a
 * small libuv loop, no corrald.
 *
 * The programs it runs are small sh scripts written into a private
 * directory: the recording one writes its argv (NUL-separated), its
 * environment exactly as execve() gave it (/proc/self/environ of the
 * shell) and its stdin into files the test reads back, so the test sees
 * byte for byte what a child gets.  Others sleep, trap SIGTERM, exit with a
 * given status, write output or start a grandchild.  Every process started
 * here is a child of the executor under test, or of its children; the test
 * never signals anything by name.
 *
 * A log sink set here records what the executor logs.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "actions/executor.h"
#include "engine/json.h"
#include "engine/log.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

/* ---- the log, recorded ---- */

struct logged {
    int level;
    char *text;
};

static struct logged *logs;
static size_t nlogs, caplogs;

static void
record_log(void *arg, int level, const char *text)
{
    (void)arg;
    if (getenv("TEST_EXEC_VERBOSE")) fprintf(stderr, "log %d: %s\n", level, text);
    if (nlogs == caplogs) {
        caplogs = caplogs ? caplogs * 2 : 64;
        logs = realloc(logs, caplogs * sizeof(*logs));
    }
    logs[nlogs].level = level;
    logs[nlogs].text = strdup(text);
    nlogs++;
}

static void
logs_clear(void)
{
    size_t i;

    for (i = 0; i < nlogs; i++) free(logs[i].text);
    free(logs);
    logs = NULL;
    nlogs = caplogs = 0;
}

/* The index of the first log line at this level containing text, or -1. */
static long
log_find(int level, const char *text)
{
    size_t i;

    for (i = 0; i < nlogs; i++)
        if ((level < 0 || logs[i].level == level) && strstr(logs[i].text, text)) return (long)i;
    return -1;
}

/* ---- files and configuration ---- */

/* Reads a whole file into b; false if it does not exist. */
static bool
read_file(const char *path, struct buf *b)
{
    FILE *f = fopen(path, "rb");
    char chunk[65536];
    size_t n;

    buf_reset(b);
    if (!f) return false;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(b, chunk, n);
    fclose(f);
    return true;
}

/* Writes an executable sh script into the work directory; returns its path. */
static const char *
script(const char *name, const char *body)
{
    const char *p = ul_wpath(name);
    struct buf b = BUF_INIT;

    buf_printf(&b, "#!/bin/sh\n%s", body);
    ul_write_file(p, buf_str(&b));
    ck_assert_int_eq(chmod(p, 0755), 0);
    buf_free(&b);
    return p;
}

/* Loads "<corrald><executors>EXECUTORS</executors></corrald>" (EXECUTORS from line 3). */
static struct conf *
load(const char *executors, char *file, size_t filesize)
{
    return ul_load_executors(ul_workdir(), executors, file, filesize);
}

/* ---- the loop ---- */

struct outcome {
    bool called;
    int calls;
    enum deliver_result r;
    char reason[512];
    double at; /* seconds after deliver() */
    double started;
    int order; /* when done() came, among all done() and close callbacks */
};

static int events;

static void
on_done(void *token, enum deliver_result r, const char *reason)
{
    struct outcome *o = token;

    o->calls++;
    ck_assert_msg(!o->called, "done() called twice");
    o->called = true;
    o->r = r;
    o->at = ul_now() - o->started;
    o->order = ++events;
    snprintf(o->reason, sizeof(o->reason), "%s", reason ? reason : "");
}

struct harness {
    uv_loop_t loop;
    uv_timer_t ticker; /* keeps UV_RUN_ONCE from sleeping forever */
    void *x;
    char file[512];
};

static void
tick(uv_timer_t *t)
{
    (void)t;
}

static void
harness_init(struct harness *h)
{
    uv_loop_init(&h->loop);
    uv_timer_init(&h->loop, &h->ticker);
    uv_timer_start(&h->ticker, tick, 10, 10);
    h->x = NULL;
    events = 0;
}

/* Opens the first executor of a configuration; err gets what open() says. */
static void *
harness_open(struct harness *h, const char *executors, struct buf *err)
{
    struct conf *c = load(executors, h->file, sizeof(h->file));

    ck_assert_uint_ge(c->nexecutors, 1);
    h->x = exec_executor.open(&h->loop, &c->executors[0], h->file, err);
    conf_free(c); /* the executor must have copied what it needs */
    return h->x;
}

static void *
must_open(struct harness *h, const char *executors)
{
    struct buf err = BUF_INIT;

    harness_open(h, executors, &err);
    ck_assert_msg(h->x != NULL, "open failed: %s", buf_str(&err));
    ck_assert_uint_eq(err.len, 0);
    buf_free(&err);
    return h->x;
}

static void
close_cb(void *arg)
{
    *(int *)arg = ++events;
}

static void
harness_close(struct harness *h)
{
    int closed = 0;
    double end = ul_now() + 15;

    if (h->x) {
        exec_executor.close(h->x, close_cb, &closed);
        while (!closed && ul_now() < end) uv_run(&h->loop, UV_RUN_ONCE);
        ck_assert_msg(closed, "close() never finished");
        h->x = NULL;
    }
    uv_close((uv_handle_t *)&h->ticker, NULL);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&h->loop), 0);
    logs_clear();
}

static void
deliver(struct harness *h, const struct alert *a, struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    o->started = ul_now();
    exec_executor.deliver(h->x, a, on_done, o);
}

/* Delivers one alert and waits for its outcome. */
static void
deliver_wait(struct harness *h, const struct alert *a, struct outcome *o, double seconds)
{
    deliver(h, a, o);
    ul_run_until(&h->loop, ul_flag_set, &o->called, seconds);
    ck_assert_msg(o->called, "no outcome within %g s", seconds);
}

/* ---- messages ---- */

static void
set(struct msg *m, const char *name, const char *val)
{
    msg_set(m, nv_intern_str(name), val, strlen(val));
}

static void
set_n(struct msg *m, const char *name, const char *val, size_t len)
{
    msg_set(m, nv_intern_str(name), val, len);
}

static struct msg *
sample_msg(void)
{
    struct msg *m = msg_new();
    struct msg_time t = {1704445200, 0, 3600}; /* 2024-01-05T10:00:00+01:00 */

    set(m, "HOST", "web1");
    set(m, "PROGRAM", "sshd");
    set(m, "MESSAGE", "5 failed logins for root");
    set(m, ".classifier.rule_id", "ssh-brute");
    msg_set_stamp(m, &t);
    return m;
}

static struct alert
alert_for(struct msg *m)
{
    struct alert a;

    memset(&a, 0, sizeof(a));
    a.seq = 1;
    a.id = "ssh-brute/web1/x";
    a.severity = "major";
    a.msg = m;
    a.attempts = 0;
    return a;
}

/* ---- what the recording script saw ---- */

/* rec.sh DIR ...: argv, environment and stdin of the child into DIR. */
static const char *
rec_script(void)
{
    return script("rec.sh", "d=$1\n"
                            "printf '%s\\0' \"$0\" \"$@\" > \"$d/argv\"\n"
                            "cat /proc/$$/environ > \"$d/env\"\n"
                            "cat > \"$d/stdin\"\n");
}

/* A NUL-separated list, as argv and /proc/PID/environ are written. */
struct strlist {
    char **s;
    size_t *len;
    size_t n;
};

static void
split_nul(const struct buf *b, struct strlist *l)
{
    size_t i, start = 0;

    memset(l, 0, sizeof(*l));
    for (i = 0; i < b->len; i++)
        if (b->p[i] == '\0') {
            l->s = realloc(l->s, (l->n + 1) * sizeof(*l->s));
            l->len = realloc(l->len, (l->n + 1) * sizeof(*l->len));
            l->s[l->n] = malloc(i - start + 1);
            memcpy(l->s[l->n], b->p + start, i - start + 1);
            l->len[l->n] = i - start;
            l->n++;
            start = i + 1;
        }
}

static void
strlist_free(struct strlist *l)
{
    size_t i;

    for (i = 0; i < l->n; i++) free(l->s[i]);
    free(l->s);
    free(l->len);
}

/* The value of NAME in an environment list, or NULL. */
static const char *
env_get(const struct strlist *env, const char *name)
{
    size_t i, n = strlen(name);

    for (i = 0; i < env->n; i++)
        if (strncmp(env->s[i], name, n) == 0 && env->s[i][n] == '=') return env->s[i] + n + 1;
    return NULL;
}

static void
read_recorded(const char *name, struct strlist *l)
{
    struct buf b = BUF_INIT;

    ck_assert_msg(read_file(ul_wpath(name), &b), "%s not written", name);
    split_nul(&b, l);
    buf_free(&b);
}

/* ---- tests: configuration ---- */

static void
expect_error(const char *xml, const char *what)
{
    struct harness h;
    struct buf err = BUF_INIT;
    char want[1024];

    harness_init(&h);
    ck_assert_ptr_null(harness_open(&h, xml, &err));
    snprintf(want, sizeof(want), "%s:%s", h.file, what);
    ck_assert_msg(strstr(buf_str(&err), want), "wanted '%s' in '%s'", want, buf_str(&err));
    buf_free(&err);
    harness_close(&h);
}

START_TEST(t_config_errors)
{
    char xml[2048], want[1024];
    const char *ok = rec_script();

    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" frobnicate=\"1\"/>", ok);
    expect_error(xml, "3: executor e: unknown attribute frobnicate= for exec");
    expect_error("<exec name=\"e\"/>", "3: executor e: exec needs program=");
    expect_error("<exec name=\"e\" program=\"bin/true\"/>",
                 "3: executor e: program=\"bin/true\" must be an absolute path");
    expect_error("<exec name=\"e\" program=\"/nonexistent/x\"/>",
                 "3: executor e: program /nonexistent/x:");
    ul_write_file(ul_wpath("notexec"), "#!/bin/sh\n");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\"/>", ul_wpath("notexec"));
    expect_error(xml, "3: executor e: program");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\"/>", ul_workdir());
    snprintf(want, sizeof(want), "3: executor e: program %s is not an executable file",
             ul_workdir());
    expect_error(xml, want);
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" timeout=\"soon\"/>", ok);
    expect_error(xml, "3: executor e: bad timeout=\"soon\"");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" kill-after=\"0\"/>", ok);
    expect_error(xml, "3: executor e: bad kill-after=\"0\"");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" max-children=\"0\"/>", ok);
    expect_error(xml, "3: executor e: bad max-children=\"0\"");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" stdin=\"xml\"/>", ok);
    expect_error(xml, "3: executor e: bad stdin=\"xml\" (json or none)");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" fail-on-exit=\"maybe\"/>", ok);
    expect_error(xml, "3: executor e: bad fail-on-exit=\"maybe\" (yes or no)");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" cwd=\"tmp\"/>", ok);
    expect_error(xml, "3: executor e: cwd=\"tmp\" must be an absolute path");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" cwd=\"%s\"/>", ok, ok);
    snprintf(want, sizeof(want), "3: executor e: cwd %s is not a directory", ok);
    expect_error(xml, want);
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" env-pass=\"PATH,1BAD\"/>", ok);
    expect_error(xml, "3: executor e: env-pass: '1BAD' is not a variable name");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\" env-pass=\"CORRAL_SEVERITY\"/>",
             ok);
    expect_error(xml, "3: executor e: env-pass: CORRAL_SEVERITY is set by corrald itself");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\">\n<arg>a</arg>\n<argument/></exec>",
             ok);
    expect_error(xml, "5: executor e: unknown element <argument> in exec");
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\">\n<arg x=\"1\">a</arg></exec>", ok);
    expect_error(xml, "4: executor e: <arg> takes no attributes");
    snprintf(xml, sizeof(xml),
             "<exec name=\"e\" program=\"%s\">\n\n<arg>$(nosuchfunction x)</arg></exec>", ok);
    expect_error(xml, "5: executor e: bad <arg> template");
}
END_TEST

START_TEST(t_config_ok)
{
    struct harness h;
    char xml[2048];

    harness_init(&h);
    /* the queue's attributes are accepted silently */
    snprintf(xml, sizeof(xml),
             "<exec name=\"e\" program=\"%s\" queue=\"10\" attempts=\"3\" backoff=\"1s\" "
             "max-backoff=\"1m\" rate=\"5/60\" dedupe=\"5m\" dedupe-key=\"$HOST\" "
             "alert-id=\"$HOST\" severity=\"major\" dead-letter=\"/tmp/x\" timeout=\"250ms\" "
             "kill-after=\"1\" max-children=\"7\" stdin=\"json\" fail-on-exit=\"no\" cwd=\"/tmp\" "
             "env-pass=\"PATH, LANG,TZ\"><arg>$HOST</arg><arg/></exec>",
             rec_script());
    must_open(&h, xml);
    ck_assert_uint_eq(exec_executor.max_inflight(h.x), 7);
    harness_close(&h);

    harness_init(&h);
    snprintf(xml, sizeof(xml), "<exec name=\"e\" program=\"%s\"/>", rec_script());
    must_open(&h, xml);
    ck_assert_uint_eq(exec_executor.max_inflight(h.x), 4); /* the default */
    /* close(NULL) as queue_open does when something else failed */
    exec_executor.close(h.x, NULL, NULL);
    h.x = NULL;
    harness_close(&h);
}
END_TEST

/* ---- tests: what the child gets ---- */

START_TEST(t_argv_env_stdin)
{
    static const char nasty[] = "x; rm -rf / $(id) `id` 'q' \"d\" | & > < * ? ~ $HOME \\ %s \r\n"
                                "second line\n";
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    struct strlist argv, env;
    struct buf b = BUF_INIT, json = BUF_INIT;
    char xml[4096];
    size_t i;

    harness_init(&h);
    setenv("EXEC_TEST_VAR", "passed through", 1);
    unsetenv("EXEC_TEST_UNSET");
    unsetenv("CORRAL_DRY_RUN");
    snprintf(xml, sizeof(xml),
             "<exec name=\"rec\" program=\"%s\" stdin=\"json\" "
             "env-pass=\"PATH,EXEC_TEST_VAR,EXEC_TEST_UNSET,CORRAL_DRY_RUN\">\n"
             "<arg>%s</arg><arg>${MESSAGE}</arg><arg>$HOST</arg><arg>two words</arg><arg/>"
             "<arg>${usracct.username}-x</arg><arg>--opt=${.classifier.rule_id}</arg></exec>",
             rec_script(), ul_workdir());
    must_open(&h, xml);
    set(m, "MESSAGE", nasty);
    set(m, "usracct.username", "alice");
    set(m, "USRACCT_USERNAME", "loses: set after usracct.username");
    set(m, "severity", "spoofed");      /* CORRAL_SEVERITY is the alert's */
    set(m, "truncated", "1");           /* CORRAL_TRUNCATED is corrald's */
    set(m, "dry_run", "1");             /* CORRAL_DRY_RUN is reserved by env-pass */
    set(m, "...", "no name left");      /* skipped */
    set(m, "\303\274ber.name", "utf8"); /* leading non-ASCII dropped, like dots */
    set(m, "a=b", "eq");
    msg_tag_set(m, tag_intern("t1", 2));
    msg_tag_set(m, tag_intern("ssh.brute", 9));
    a.attempts = 2;
    deliver_wait(&h, &a, &o, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);

    read_recorded("argv", &argv);
    ck_assert_uint_eq(argv.n, 8);
    ck_assert_str_eq(argv.s[0], ul_wpath("rec.sh"));
    ck_assert_str_eq(argv.s[1], ul_workdir());
    ck_assert_uint_eq(argv.len[2], strlen(nasty));
    ck_assert_str_eq(argv.s[2], nasty);
    ck_assert_str_eq(argv.s[3], "web1");
    ck_assert_str_eq(argv.s[4], "two words");
    ck_assert_str_eq(argv.s[5], "");
    ck_assert_str_eq(argv.s[6], "alice-x");
    ck_assert_str_eq(argv.s[7], "--opt=ssh-brute");
    strlist_free(&argv);

    read_recorded("env", &env);
    ck_assert_str_eq(env_get(&env, "PATH"), getenv("PATH"));
    ck_assert_str_eq(env_get(&env, "EXEC_TEST_VAR"), "passed through");
    ck_assert_ptr_null(env_get(&env, "EXEC_TEST_UNSET"));
    ck_assert_ptr_null(env_get(&env, "CORRAL_DRY_RUN"));
    ck_assert_ptr_null(env_get(&env, "HOME"));
    ck_assert_ptr_null(env_get(&env, "CORRAL_TRUNCATED"));
    ck_assert_str_eq(env_get(&env, "CORRAL_EXECUTOR"), "rec");
    ck_assert_str_eq(env_get(&env, "CORRAL_ALERT_ID"), "ssh-brute/web1/x");
    ck_assert_str_eq(env_get(&env, "CORRAL_SEVERITY"), "major");
    ck_assert_str_eq(env_get(&env, "CORRAL_ISODATE"), "2024-01-05T10:00:00+01:00");
    ck_assert_str_eq(env_get(&env, "CORRAL_ATTEMPT"), "3");
    ck_assert_str_eq(env_get(&env, "CORRAL_TAGS"), "t1,ssh.brute");
    ck_assert_str_eq(env_get(&env, "CORRAL_STATUS"), "firing");
    ck_assert_str_eq(env_get(&env, "CORRAL_HOST"), "web1");
    ck_assert_str_eq(env_get(&env, "CORRAL_PROGRAM"), "sshd");
    ck_assert_str_eq(env_get(&env, "CORRAL_MESSAGE"), nasty);
    ck_assert_str_eq(env_get(&env, "CORRAL_CLASSIFIER_RULE_ID"), "ssh-brute");
    ck_assert_str_eq(env_get(&env, "CORRAL_USRACCT_USERNAME"), "alice");
    ck_assert_str_eq(env_get(&env, "CORRAL_BER_NAME"), "utf8");
    ck_assert_str_eq(env_get(&env, "CORRAL_A_B"), "eq");
    /* exactly these, nothing inherited, no name twice */
    ck_assert_uint_eq(env.n, 2 + 7 + 7);
    for (i = 0; i < env.n; i++) {
        size_t j, n = strcspn(env.s[i], "=");
        for (j = 0; j < i; j++)
            ck_assert_msg(strncmp(env.s[i], env.s[j], n + 1) != 0, "twice: %s", env.s[i]);
    }
    strlist_free(&env);

    ck_assert(read_file(ul_wpath("stdin"), &b));
    json_format_msg(m, &json);
    buf_putc(&json, '\n');
    ck_assert_uint_eq(b.len, json.len);
    ck_assert(memcmp(b.p, json.p, b.len) == 0);
    buf_free(&b);
    buf_free(&json);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* 100 KB values arrive whole, as one argv element and one variable. */
START_TEST(t_big_values)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    struct strlist argv, env;
    char xml[2048], *big = malloc(100 * 1024 + 1);
    size_t i;

    for (i = 0; i < 100 * 1024; i++) big[i] = (char)('a' + i % 26);
    big[100] = '\n';
    big[200] = '\'';
    big[300] = ';';
    big[100 * 1024] = '\0';
    set(m, "big", big);
    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"rec\" program=\"%s\"><arg>%s</arg><arg>${big}</arg></exec>",
             rec_script(), ul_workdir());
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    read_recorded("argv", &argv);
    ck_assert_uint_eq(argv.n, 3);
    ck_assert_uint_eq(argv.len[2], strlen(big));
    ck_assert(strcmp(argv.s[2], big) == 0);
    strlist_free(&argv);
    read_recorded("env", &env);
    ck_assert_ptr_nonnull(env_get(&env, "CORRAL_BIG"));
    ck_assert(strcmp(env_get(&env, "CORRAL_BIG"), big) == 0);
    ck_assert_ptr_null(env_get(&env, "CORRAL_TRUNCATED"));
    /* stdin="none" is /dev/null */
    {
        struct buf b = BUF_INIT;
        ck_assert(read_file(ul_wpath("stdin"), &b));
        ck_assert_uint_eq(b.len, 0);
        buf_free(&b);
    }
    strlist_free(&env);
    free(big);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* Past the limits: values cut, CORRAL_TRUNCATED=1, the environment within 128 KiB. */
START_TEST(t_truncation)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    struct strlist argv, env;
    char xml[2048], *huge = malloc(300 * 1024 + 1);
    size_t i, total = 0;

    memset(huge, 'h', 300 * 1024);
    huge[300 * 1024] = '\0';
    set(m, "huge", huge);
    set(m, "after", "left out: no room");
    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"rec\" program=\"%s\"><arg>%s</arg><arg>${huge}</arg></exec>",
             rec_script(), ul_workdir());
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    read_recorded("argv", &argv);
    ck_assert_uint_eq(argv.n, 3);
    ck_assert_uint_eq(argv.len[2], 128 * 1024 - 1); /* the kernel's limit for one string */
    strlist_free(&argv);
    read_recorded("env", &env);
    for (i = 0; i < env.n; i++) total += env.len[i] + 1;
    ck_assert_uint_le(total, 128 * 1024);
    ck_assert_uint_gt(total, 120 * 1024);
    ck_assert_str_eq(env_get(&env, "CORRAL_TRUNCATED"), "1");
    ck_assert_ptr_nonnull(env_get(&env, "CORRAL_HUGE"));
    ck_assert_ptr_null(env_get(&env, "CORRAL_AFTER"));
    ck_assert_str_eq(env_get(&env, "CORRAL_HOST"), "web1");
    strlist_free(&env);
    free(huge);
    msg_unref(m);

    /* a NUL byte cuts the value (environment strings cannot hold one) */
    m = sample_msg();
    a = alert_for(m);
    set_n(m, "nul", "before\0after", 12);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    read_recorded("env", &env);
    ck_assert_str_eq(env_get(&env, "CORRAL_NUL"), "before");
    ck_assert_str_eq(env_get(&env, "CORRAL_TRUNCATED"), "1");
    strlist_free(&env);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* ---- tests: outcomes ---- */

static void
expect_exit(struct harness *h, const char *status, enum deliver_result want, const char *reason)
{
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);

    set(m, "status", status);
    deliver_wait(h, &a, &o, 10);
    ck_assert_msg(o.r == want, "status %s: got %d (%s), wanted %d", status, o.r, o.reason, want);
    ck_assert_msg(strstr(o.reason, reason), "status %s: reason '%s', wanted '%s'", status, o.reason,
                  reason);
    msg_unref(m);
}

START_TEST(t_exit_status)
{
    struct harness h;
    char xml[2048];
    const char *p = script("exit.sh", "case $1 in\n"
                                      "kill) kill -KILL $$ ;;\n"
                                      "*) echo \"failing with $1\" >&2; exit \"$1\" ;;\n"
                                      "esac\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml), "<exec name=\"x\" program=\"%s\"><arg>$status</arg></exec>", p);
    must_open(&h, xml);
    expect_exit(&h, "0", DELIVER_OK, "");
    expect_exit(&h, "75", DELIVER_RETRY, "exit 75 (temporary failure); stderr: failing with 75");
    expect_exit(&h, "1", DELIVER_FAIL, "exit 1; stderr: failing with 1");
    expect_exit(&h, "64", DELIVER_FAIL, "exit 64");
    expect_exit(&h, "kill", DELIVER_RETRY, "killed by SIGKILL");
    harness_close(&h);

    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"x\" program=\"%s\" fail-on-exit=\"no\"><arg>$status</arg></exec>", p);
    must_open(&h, xml);
    expect_exit(&h, "0", DELIVER_OK, "");
    expect_exit(&h, "1", DELIVER_OK, "exit 1");
    ck_assert_int_ge(log_find(LOG_INFO, "exit 1 counted as delivered (fail-on-exit=no)"), 0);
    expect_exit(&h, "75", DELIVER_RETRY, "exit 75");
    harness_close(&h);
}
END_TEST

/* The program vanished after the configuration was loaded: retried later. */
START_TEST(t_spawn_failure)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048];
    const char *p = script("gone.sh", "exit 0\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml), "<exec name=\"g\" program=\"%s\"/>", p);
    must_open(&h, xml);
    ck_assert_int_eq(unlink(p), 0);
    deliver(&h, &a, &o);
    ck_assert(o.called); /* at once */
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "cannot run") && strstr(o.reason, "no such file"), "%s",
                  o.reason);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* ---- tests: timeouts ---- */

static bool
process_gone(int pid)
{
    char path[64], stat[512];
    FILE *f;
    const char *p;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if (!(f = fopen(path, "r"))) return true;
    if (!fgets(stat, sizeof(stat), f)) stat[0] = '\0';
    fclose(f);
    p = strrchr(stat, ')');
    return p && (p[2] == 'Z' || p[2] == 'X'); /* a zombie waiting for init to reap it */
}

static int
read_pid(const char *name)
{
    struct buf b = BUF_INIT;
    int pid = 0;

    if (read_file(ul_wpath(name), &b)) pid = atoi(buf_str(&b));
    buf_free(&b);
    return pid;
}

static bool
wait_gone(int pid, double seconds)
{
    double end = ul_now() + seconds;

    while (!process_gone(pid) && ul_now() < end) usleep(20000);
    return process_gone(pid);
}

START_TEST(t_timeout_term)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048];
    int grandchild;
    const char *p = script("sleep.sh", "sleep 30 &\n"
                                       "echo $! > \"$1/grandchild.pid\"\n"
                                       "wait\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"s\" program=\"%s\" timeout=\"300ms\"><arg>%s</arg></exec>", p,
             ul_workdir());
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "timed out after 0.3s"), "%s", o.reason);
    ck_assert_int_ge(log_find(LOG_WARNING, "still running after 0.3s; sending SIGTERM"), 0);
    ck_assert_int_lt(log_find(LOG_WARNING, "SIGKILL"), 0);
    /* the whole process group got the signal: the grandchild too */
    grandchild = read_pid("grandchild.pid");
    ck_assert_int_gt(grandchild, 0);
    ck_assert_msg(wait_gone(grandchild, 3), "grandchild %d still running", grandchild);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

START_TEST(t_timeout_kill)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048];
    const char *p = script("trap.sh", "trap '' TERM\n"
                                      "echo $$ > \"$1/trap.pid\"\n"
                                      "while :; do sleep 0.05; done\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"t\" program=\"%s\" timeout=\"300ms\" kill-after=\"400ms\">"
             "<arg>%s</arg></exec>",
             p, ul_workdir());
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "timed out"), "%s", o.reason);
    ck_assert_int_ge(log_find(LOG_WARNING, "still running 0.4s after SIGTERM; sending SIGKILL"), 0);
    ck_assert(wait_gone(read_pid("trap.pid"), 3));
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* A grandchild that keeps the output pipes open does not hold the delivery up for long. */
START_TEST(t_pipe_held_open)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048];
    int grandchild;
    const char *p = script("bg.sh", "sleep 20 &\n"
                                    "echo $! > \"$1/bg.pid\"\n"
                                    "echo started\n"
                                    "exit 0\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml), "<exec name=\"bg\" program=\"%s\"><arg>%s</arg></exec>", p,
             ul_workdir());
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    ck_assert_int_ge(log_find(LOG_INFO, "]: started"), 0);
    grandchild = read_pid("bg.pid");
    ck_assert_int_gt(grandchild, 0);
    /* ours: started by our script; still the sleep (not a reused pid), so stop it */
    {
        struct buf comm = BUF_INIT;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/comm", grandchild);
        if (read_file(path, &comm) && strcmp(buf_str(&comm), "sleep\n") == 0)
            kill(grandchild, SIGTERM);
        buf_free(&comm);
    }
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* A child that never reads its stdin, with a JSON larger than any pipe buffer. */
START_TEST(t_stdin_unread)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048], *big = malloc(1024 * 1024 + 1);
    const char *p = script("noread.sh", "exit 0\n");

    memset(big, 'j', 1024 * 1024);
    big[1024 * 1024] = '\0';
    set(m, "big", big);
    harness_init(&h);
    snprintf(xml, sizeof(xml), "<exec name=\"n\" program=\"%s\" stdin=\"json\"/>", p);
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    free(big);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* ---- tests: concurrency ---- */

/* Whether the seven outcomes at arg have all been reported. */
static bool
all_called(void *arg)
{
    const struct outcome *o = arg;
    int i;

    for (i = 0; i < 7; i++)
        if (!o[i].called) return false;
    return true;
}

START_TEST(t_max_children)
{
    struct harness h;
    struct outcome o[7];
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    struct buf b = BUF_INIT;
    char xml[2048];
    const char *s;
    int i, running = 0, most = 0, starts = 0;
    const char *p = script("conc.sh", "echo \"start $$\" >> \"$1/conc.log\"\n"
                                      "sleep 0.5\n"
                                      "echo \"end $$\" >> \"$1/conc.log\"\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"c\" program=\"%s\" max-children=\"2\"><arg>%s</arg></exec>", p,
             ul_workdir());
    must_open(&h, xml);
    ck_assert_uint_eq(exec_executor.max_inflight(h.x), 2);
    /* more than max_inflight() at once: the executor keeps the limit by itself */
    for (i = 0; i < 7; i++) deliver(&h, &a, &o[i]);
    msg_unref(m); /* waiting deliveries hold their own reference */
    ck_assert(ul_run_until(&h.loop, all_called, o, 60));
    for (i = 0; i < 7; i++) ck_assert_msg(o[i].r == DELIVER_OK, "%d: %s", i, o[i].reason);
    ck_assert(read_file(ul_wpath("conc.log"), &b));
    for (s = buf_str(&b); *s; s = strchr(s, '\n') + 1) {
        if (strncmp(s, "start", 5) == 0) {
            starts++;
            if (++running > most) most = running;
        } else {
            running--;
        }
    }
    ck_assert_int_eq(starts, 7);
    ck_assert_int_eq(most, 2);
    /* in order: the first two finish first */
    ck_assert_int_lt(o[0].order, o[2].order);
    ck_assert_int_lt(o[1].order, o[6].order);
    buf_free(&b);
    harness_close(&h);
}
END_TEST

/* ---- tests: output ---- */

START_TEST(t_output)
{
    struct harness h;
    struct outcome o;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048], want[256];
    long i, out, err;
    size_t logged = 0;
    const char *p = script("out.sh", "echo \"$$\" > \"$1/out.pid\"\n"
                                     "echo 'hello stdout'\n"
                                     "echo 'hello stderr' >&2\n"
                                     "printf 'esc \\033[31m red\\r\\n'\n"
                                     "printf 'no newline at the end'\n"
                                     "exit 3\n");
    int pid;

    harness_init(&h);
    snprintf(xml, sizeof(xml), "<exec name=\"out\" program=\"%s\"><arg>%s</arg></exec>", p,
             ul_workdir());
    must_open(&h, xml);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_int_eq(o.r, DELIVER_FAIL);
    ck_assert_str_eq(o.reason, "exit 3; stderr: hello stderr");
    pid = read_pid("out.pid");
    snprintf(want, sizeof(want), "executor out[%d]: hello stdout", pid);
    out = log_find(LOG_INFO, want);
    ck_assert_msg(out >= 0, "no '%s'", want);
    ck_assert_str_eq(logs[out].text, want);
    snprintf(want, sizeof(want), "executor out[%d]: hello stderr", pid);
    err = log_find(LOG_WARNING, want);
    ck_assert_msg(err >= 0, "no '%s'", want);
    snprintf(want, sizeof(want), "executor out[%d]: esc \\x1b[31m red", pid);
    i = log_find(LOG_INFO, want);
    ck_assert_msg(i >= 0, "no '%s'", want);
    ck_assert_str_eq(logs[i].text, want); /* the CR of CRLF dropped */
    snprintf(want, sizeof(want), "executor out[%d]: no newline at the end", pid);
    ck_assert_int_ge(log_find(LOG_INFO, want), 0);
    msg_unref(m);
    harness_close(&h);

    /* 200 000 bytes: 64 KiB logged, in pieces, the rest counted */
    harness_init(&h);
    p = script("flood.sh", "head -c 200000 /dev/zero | tr '\\0' a\n");
    snprintf(xml, sizeof(xml), "<exec name=\"flood\" program=\"%s\"/>", p);
    must_open(&h, xml);
    m = sample_msg();
    a = alert_for(m);
    deliver_wait(&h, &a, &o, 10);
    ck_assert_int_eq(o.r, DELIVER_OK);
    for (i = 0; i < (long)nlogs; i++) {
        const char *c = strstr(logs[i].text, "]: aaaa");
        if (c) {
            ck_assert_uint_le(strlen(c + 3), 4096);
            logged += strlen(c + 3);
        }
    }
    ck_assert_uint_eq(logged, 65536);
    ck_assert_int_ge(log_find(LOG_WARNING, "134464 more bytes of output not logged"), 0);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* ---- tests: close ---- */

/* Whether both of t_close_running's children have written their pids. */
static bool
both_pids(void *arg)
{
    (void)arg;
    return read_pid("slow.plain.pid") > 0 && read_pid("slow.trap.pid") > 0;
}

START_TEST(t_close_running)
{
    struct harness h;
    struct outcome o1, o2, o3;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    char xml[2048];
    int closed = 0, p1, p2;
    double t0;
    const char *p = script("slow.sh", "if [ \"$2\" = trap ]; then trap '' TERM; fi\n"
                                      "echo $$ > \"$1/slow.$2.tmp\"\n"
                                      "mv \"$1/slow.$2.tmp\" \"$1/slow.$2.pid\"\n"
                                      "while :; do sleep 0.05; done\n");

    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"slow\" program=\"%s\" max-children=\"2\" kill-after=\"500ms\">"
             "<arg>%s</arg><arg>$mode</arg></exec>",
             p, ul_workdir());
    must_open(&h, xml);
    set(m, "mode", "plain");
    deliver(&h, &a, &o1);
    set(m, "mode", "trap");
    deliver(&h, &a, &o2);
    deliver(&h, &a, &o3); /* waits for a free slot */
    /* both running (and the TERM trap set, as the pid is written after it) */
    ck_assert(ul_run_until(&h.loop, both_pids, NULL, 30));
    ck_assert(!o1.called && !o2.called && !o3.called);
    p1 = read_pid("slow.plain.pid");
    p2 = read_pid("slow.trap.pid");
    ck_assert(p1 > 0 && p2 > 0);
    t0 = ul_now();
    exec_executor.close(h.x, close_cb, &closed);
    h.x = NULL;
    ck_assert(o3.called); /* the waiting one at once */
    ck_assert_int_eq(o3.r, DELIVER_RETRY);
    while (!closed && ul_now() < t0 + 10) uv_run(&h.loop, UV_RUN_ONCE);
    ck_assert(closed);
    ck_assert(o1.called && o2.called);
    ck_assert_int_eq(o1.r, DELIVER_RETRY);
    ck_assert_int_eq(o2.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o1.reason, "stopped"), "%s", o1.reason);
    ck_assert_int_lt(o1.order, closed);
    ck_assert_int_lt(o2.order, closed);
    /* the TERM-proof child needed SIGKILL, after kill-after */
    ck_assert_int_ge(log_find(LOG_WARNING, "still running 0.5s after SIGTERM; sending SIGKILL"), 0);
    ck_assert(process_gone(p1) || wait_gone(p1, 2));
    ck_assert(process_gone(p2) || wait_gone(p2, 2));
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* ---- tests: render ---- */

START_TEST(t_render)
{
    struct harness h;
    struct msg *m = sample_msg();
    struct alert a = alert_for(m);
    struct buf out = BUF_INIT, json = BUF_INIT;
    char xml[2048], want[1024];
    const char *p = rec_script();

    set(m, "MESSAGE", "it's\nnot; $(safe)");
    harness_init(&h);
    snprintf(xml, sizeof(xml),
             "<exec name=\"r\" program=\"%s\" stdin=\"json\" timeout=\"10s\">"
             "<arg>--host</arg><arg>$HOST</arg><arg>${MESSAGE}</arg><arg>a b</arg><arg/></exec>",
             p);
    must_open(&h, xml);
    exec_executor.render(h.x, &a, &out);
    snprintf(want, sizeof(want), "argv: %s --host web1 $'it\\'s\\nnot; $(safe)' 'a b' ''\n", p);
    ck_assert_msg(strstr(buf_str(&out), want), "no '%s' in:\n%s", want, buf_str(&out));
    ck_assert(strstr(buf_str(&out), "exec r: timeout 10s, kill-after 5s, cwd /, stdin json"));
    ck_assert(strstr(buf_str(&out), "\nenv: CORRAL_HOST=web1\n"));
    ck_assert(strstr(buf_str(&out), "\nenv: CORRAL_SEVERITY=major\n"));
    ck_assert(strstr(buf_str(&out), "\nenv: CORRAL_MESSAGE=$'it\\'s\\nnot; $(safe)'\n"));
    ck_assert(strstr(buf_str(&out), "\nenv: PATH="));
    json_format_msg(m, &json);
    snprintf(want, sizeof(want), "\nstdin: %s\n", buf_str(&json));
    ck_assert_msg(strstr(buf_str(&out), want), "no '%s' in:\n%s", want, buf_str(&out));
    buf_free(&out);
    buf_free(&json);
    msg_unref(m);
    harness_close(&h);
}
END_TEST

/* ---- main ---- */

static void
remove_workdir(void)
{
    if (!ul_workdir()[0] || getenv("KEEP_WORK")) return;
    ul_workdir_remove();
}

int
main(void)
{
    Suite *s = suite_create("exec");

    log_setup(NULL, "debug", "stderr");
    log_set_sink(record_log, NULL);
    TCase *tc = tcase_create("exec");
    int failed;

    /* corrald ignores SIGPIPE: a child that closes its stdin early is not a reason to die */
    signal(SIGPIPE, SIG_IGN);
    if (!ul_workdir_new("exec")) return 1;
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t_config_errors);
    tcase_add_test(tc, t_config_ok);
    tcase_add_test(tc, t_argv_env_stdin);
    tcase_add_test(tc, t_big_values);
    tcase_add_test(tc, t_truncation);
    tcase_add_test(tc, t_exit_status);
    tcase_add_test(tc, t_spawn_failure);
    tcase_add_test(tc, t_timeout_term);
    tcase_add_test(tc, t_timeout_kill);
    tcase_add_test(tc, t_pipe_held_open);
    tcase_add_test(tc, t_stdin_unread);
    tcase_add_test(tc, t_max_children);
    tcase_add_test(tc, t_output);
    tcase_add_test(tc, t_close_running);
    tcase_add_test(tc, t_render);
    suite_add_tcase(s, tc);
    failed = unit_run(s);
    remove_workdir();
    return failed;
}
