/*
 * Unit tests of the file input (in_file.c) driven through a test sink on a
 * libuv loop, as `tail -F` users rely on it: lines appended, a line
 * written in two parts, rotation (the old file read to its end, then the
 * new one from its start), truncation, deletion (the last partial line
 * delivered), a file that appears later (read from its start), pause and
 * resume; and across restarts the position file: resumed, rotated or
 * truncated while stopped, malformed.  Every wait is on a condition (what
 * the sink received, the position file existing), bounded.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "agent/conf/conf.h"
#include "agent/input/input.h"
#include "engine/buf.h"
#include "engine/log.h"
#include "engine/xalloc.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

#define SINK_MAX 16
#define WAIT_S   30

/* What the sink received, in order, one line each. */
struct sink_log {
    size_t n;
    struct buf text;
};

static void
sink_deliver(void *ctx, struct input *in, const char *data, size_t len, const char *peer)
{
    struct sink_log *l = ctx;

    (void)in;
    ck_assert_ptr_null(peer); /* a file has no sender */
    ck_assert_uint_lt(l->n, SINK_MAX);
    buf_printf(&l->text, "%.*s\n", (int)len, data);
    l->n++;
}

struct wait_for {
    const struct sink_log *log;
    size_t n;
};

static bool
has_n(void *arg)
{
    const struct wait_for *w = arg;

    return w->log->n >= w->n;
}

static bool
exists(void *arg)
{
    return access(arg, F_OK) == 0;
}

/* What the input logged, one line each, since its rig was opened. */
static struct buf logged = BUF_INIT;

static void
on_log(void *arg, int level, const char *text)
{
    (void)arg;
    (void)level;
    buf_printf(&logged, "%s\n", text);
}

static bool
log_has(void *arg)
{
    return strstr(buf_str(&logged), arg) != NULL;
}

/* The position file at arg holds a position. */
static bool
pos_valid(void *arg)
{
    char head[16] = "";
    FILE *f = fopen(arg, "r");

    if (!f) return false;
    if (!fgets(head, sizeof(head), f)) head[0] = '\0';
    fclose(f);
    return strncmp(head, "corral-pos 1 ", 13) == 0;
}

/* One file input on its own loop, and what it delivered. */
struct rig {
    uv_loop_t loop;
    struct conf conf;
    struct conf_input ci;
    struct sink_log log;
    struct input_sink sink;
    struct input *in;
    char path[256], pos[300];
};

static void
rig_open(struct rig *r, bool from_start)
{
    struct buf err = BUF_INIT;

    memset(&r->conf, 0, sizeof(r->conf));
    memset(&r->ci, 0, sizeof(r->ci));
    r->log.n = 0;
    buf_reset(&r->log.text);
    r->sink.deliver = sink_deliver;
    r->sink.ctx = &r->log;
    buf_reset(&logged);
    log_set_sink(on_log, NULL);
    snprintf(r->path, sizeof(r->path), "%s", ul_wpath("app.log"));
    snprintf(r->pos, sizeof(r->pos), "%s.corral-pos", r->path); /* the default */
    ck_assert_int_eq(uv_loop_init(&r->loop), 0);
    r->ci.type = CONF_IN_FILE;
    r->ci.name = "app";
    r->ci.path = r->path;
    r->ci.from_start = from_start;
    r->in = input_open(&r->sink, &r->loop, &r->ci, &r->conf, &err);
    ck_assert_msg(r->in != NULL, "%s", buf_str(&err));
    ck_assert(input_can_pause(r->in));
    buf_free(&err);
}

/* Runs until n lines in all were delivered, then checks them all. */
static void
rig_expect(struct rig *r, size_t n, const char *lines)
{
    struct wait_for w = {&r->log, n};

    ck_assert_msg(ul_run_until(&r->loop, has_n, &w, WAIT_S), "got only: %s", buf_str(&r->log.text));
    ck_assert_str_eq(buf_str(&r->log.text), lines);
}

/* The input has taken its position in the file (its position file is written then). */
static void
rig_following(struct rig *r)
{
    ck_assert(ul_run_until(&r->loop, exists, r->pos, WAIT_S));
}

static void
rig_close(struct rig *r)
{
    input_close(r->in);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&r->loop), 0);
    buf_free(&r->log.text);
    log_set_sink(NULL, NULL);
    buf_free(&logged);
}

static void
append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* "corral-pos 1 DEV INO OFFSET" for path as it is now. */
static void
write_pos(const char *pos, const char *path, int64_t ino_delta, int64_t off)
{
    struct stat st;
    char text[128];

    ck_assert_int_eq(stat(path, &st), 0);
    snprintf(text, sizeof(text), "corral-pos 1 %" PRIu64 " %" PRIu64 " %" PRId64 "\n",
             (uint64_t)st.st_dev, (uint64_t)st.st_ino + (uint64_t)ino_delta, off);
    ul_write_file(pos, text);
}

/* The offset the position file holds for path, which it must name. */
static long long
read_pos(const char *pos, const char *path)
{
    unsigned long long dev, ino;
    long long off = -1;
    struct stat st;
    FILE *f = fopen(pos, "r");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "corral-pos 1 %llu %llu %lld", &dev, &ino, &off), 3);
    fclose(f);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(dev, (unsigned long long)st.st_dev);
    ck_assert_uint_eq(ino, (unsigned long long)st.st_ino);
    return off;
}

/* A file input needs a path that names a file; the error names the configuration's line. */
START_TEST(test_file_bad_path)
{
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    uv_loop_t loop;

    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    conf.file = "corrald.conf";
    ci.type = CONF_IN_FILE;
    ci.name = "app";
    ci.line = 7;
    ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
    ck_assert_str_eq(buf_str(&err), "corrald.conf:7: input app: no path\n");
    buf_reset(&err);
    ci.path = "/var/log/";
    ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
    ck_assert_str_eq(buf_str(&err),
                     "corrald.conf:7: input app: /var/log/ names a directory, not a file\n");
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
}
END_TEST

/*
 * Followed from its end: appends, a line in two writes, rotation (the old
 * file's last lines, its unterminated end, then the new file), truncation,
 * pause and resume; the position saved at close is past the last line.
 */
START_TEST(test_file_follow)
{
    struct rig r;
    char old[300];

    memset(&r, 0, sizeof(r));
    ck_assert_ptr_nonnull(ul_workdir_new("in_file"));
    ul_write_file(ul_wpath("app.log"), "before\n");
    rig_open(&r, false);
    rig_following(&r);
    append(r.path, "one\ntw");
    rig_expect(&r, 1, "one\n");
    append(r.path, "o\n");
    rig_expect(&r, 2, "one\ntwo\n");

    /* rotated: what the writer still adds to the old file comes first */
    snprintf(old, sizeof(old), "%s.1", r.path);
    ck_assert_int_eq(rename(r.path, old), 0);
    append(old, "three\nlast");
    ul_write_file(r.path, "four\n");
    rig_expect(&r, 5, "one\ntwo\nthree\nlast\nfour\n");

    /* truncated below what was read: read again from its start */
    ul_write_file(r.path, "5\n");
    rig_expect(&r, 6, "one\ntwo\nthree\nlast\nfour\n5\n");

    /* paused: what is appended meanwhile waits in the file */
    input_pause(r.in, true);
    append(r.path, "six\n");
    input_pause(r.in, false);
    rig_expect(&r, 7, "one\ntwo\nthree\nlast\nfour\n5\nsix\n");
    ck_assert_uint_eq(input_get_stats(r.in)->received, 7);
    ck_assert_uint_eq(input_get_stats(r.in)->errors, 0);
    rig_close(&r);
    ck_assert_int_eq(read_pos(r.pos, r.path), 6);
    ul_workdir_remove();
}
END_TEST

/*
 * Restarts: resumed at the saved position; a position for another file
 * (rotated while stopped) or beyond the end (truncated while stopped) reads
 * from the start; a malformed position file is ignored (from the end).
 */
START_TEST(test_file_position)
{
    struct rig r;

    memset(&r, 0, sizeof(r));
    ck_assert_ptr_nonnull(ul_workdir_new("in_file"));
    ul_write_file(ul_wpath("app.log"), "a\nb\n");

    write_pos(ul_wpath("app.log.corral-pos"), ul_wpath("app.log"), 0, 2);
    rig_open(&r, false);
    rig_expect(&r, 1, "b\n");
    rig_close(&r);

    write_pos(r.pos, r.path, 1, 2);
    rig_open(&r, false);
    rig_expect(&r, 2, "a\nb\n");
    rig_close(&r);

    write_pos(r.pos, r.path, 0, 100);
    rig_open(&r, false);
    rig_expect(&r, 2, "a\nb\n");
    rig_close(&r);
    ck_assert_int_eq(read_pos(r.pos, r.path), 4);

    ul_write_file(r.pos, "not a position\n");
    rig_open(&r, false);
    /* the malformed file is replaced once the input has taken the end */
    ck_assert(ul_run_until(&r.loop, pos_valid, r.pos, WAIT_S));
    ck_assert(log_has("app.log.corral-pos is malformed, ignored"));
    append(r.path, "c\n");
    rig_expect(&r, 1, "c\n");
    rig_close(&r);
    ck_assert_int_eq(read_pos(r.pos, r.path), 6);
    ul_workdir_remove();
}
END_TEST

/*
 * A file that does not exist yet is read from its start when it appears;
 * deleted, its unterminated last line is delivered and it is let go; a new
 * one by that name is read from its start.
 */
START_TEST(test_file_appears_and_goes)
{
    struct rig r;

    memset(&r, 0, sizeof(r));
    ck_assert_ptr_nonnull(ul_workdir_new("in_file"));
    rig_open(&r, false);
    /* created only once the input found nothing there (else it would take it from its end) */
    ck_assert(ul_run_until(&r.loop, log_has, "does not exist (yet): waiting for it", WAIT_S));
    ul_write_file(r.path, "first\nunterminated");
    rig_expect(&r, 1, "first\n");
    ck_assert_int_eq(unlink(r.path), 0);
    rig_expect(&r, 2, "first\nunterminated\n");
    ck_assert(log_has("app.log was deleted"));
    ul_write_file(r.path, "again\n");
    rig_expect(&r, 3, "first\nunterminated\nagain\n");
    rig_close(&r);
    ul_workdir_remove();
}
END_TEST

static Suite *
in_file_suite(void)
{
    Suite *s = suite_create("in_file");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_file_bad_path);
    tcase_add_test(tc, test_file_follow);
    tcase_add_test(tc, test_file_position);
    tcase_add_test(tc, test_file_appears_and_goes);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(in_file_suite());
}
