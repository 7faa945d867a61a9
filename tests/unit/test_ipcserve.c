/*
 * Unit tests of the executor process's server (actions/ipcserve.c), driven
 * over a real socketpair as the engine process would drive it: the hello
 * names the executors; an alert submitted by index reaches a real exec
 * script and comes back as queued and delivered events, with the stats;
 * and what a compromised engine could send instead (an executor index the
 * executor did not publish, an alert that does not decode, trailing bytes,
 * an unknown request) is refused and counted, and nothing is delivered;
 * and what it could send to exhaust this process is bounded: keep=1
 * submits of 1 MB alerts past queue= (at most QUEUE_MAX_BYTES of them
 * queued), alerts with value names never seen (at most IPCSERVE_NEW_NAMES
 * registered, the rest refused and counted).
 * The engine's hello (H) comes first: a request before it is refused, and
 * another protocol version ends the connection.  A reload (L) replaces the
 * queues through the reload function (as corrald's executor process does,
 * with queueset.h): R says so with the new list, a changed executor runs
 * its new program, an added one gets an index; a reload that fails says
 * why and changes nothing.
 */
#include "actions/ipcserve.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "actions/ipc.h"
#include "actions/queueset.h"
#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "engine/log.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/wire.h"
#include "engine/xalloc.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

static void
setup(void)
{
    ck_assert_ptr_nonnull(ul_workdir_new("ipcserve"));
    ul_write_file(ul_wpath("prog"), "#!/bin/sh\necho \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n");
    ck_assert_int_eq(chmod(ul_wpath("prog"), 0755), 0);
    ul_write_file(ul_wpath("prog2"), "#!/bin/sh\necho \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n");
    ck_assert_int_eq(chmod(ul_wpath("prog2"), 0755), 0);
}

static void
teardown(void)
{
    ul_workdir_remove();
}

/* The engine's side: what it has been told. */
struct engine {
    struct ipc_conn *c;
    char names[256];
    int hellos, queued, delivered, pressure, stats;
    uint64_t stats_delivered;
    char last_alert_id[64];
    uint32_t last_index; /* of the last event */
    bool ended;
    char end_reason[64];
    /* the last reload answer (R) */
    int reloads;
    uint64_t reload_gen;
    uint32_t reload_ok;
    char reload_report[1024], reload_names[256];
};

static void
engine_frame(void *arg, char type, const void *body, size_t len)
{
    struct engine *e = arg;
    struct wire_reader r;
    uint32_t n, i, ev;
    const char *p;
    size_t plen;

    wire_reader_init(&r, body, len);
    switch (type) {
    case IPC_X_HELLO:
        ck_assert_uint_eq(wire_get32(&r), IPC_VERSION);
        n = wire_get32(&r);
        for (i = 0; i < n; i++) {
            p = wire_get_bytes(&r, &plen);
            snprintf(e->names + strlen(e->names), sizeof(e->names) - strlen(e->names), "%.*s,",
                     (int)plen, p);
        }
        ck_assert(!r.bad && r.p == r.end);
        e->hellos++;
        break;
    case IPC_X_EVENT: {
        struct msg *m = msg_new();
        const char *id;
        size_t idlen = 0;
        e->last_index = wire_get32(&r);
        ev = wire_get32(&r);
        p = wire_get_bytes(&r, &plen);
        ck_assert(!r.bad && r.p == r.end);
        ck_assert_uint_eq(msg_decode(m, p, plen), plen);
        id = msg_get(m, nv_intern_str("corral.alert_id"), &idlen);
        snprintf(e->last_alert_id, sizeof(e->last_alert_id), "%.*s", (int)idlen, id ? id : "");
        msg_unref(m);
        if (ev == QUEUE_EV_QUEUED) e->queued++;
        if (ev == QUEUE_EV_DELIVERED) e->delivered++;
        break;
    }
    case IPC_X_PRESSURE: e->pressure++; break;
    case IPC_X_SERVED: break;
    case IPC_X_STATS: {
        struct queue_stats st;
        uint64_t *f = (uint64_t *)&st;
        uint32_t index = wire_get32(&r);
        n = wire_get32(&r);
        ck_assert_uint_eq(n, sizeof(st) / sizeof(uint64_t));
        for (i = 0; i < n; i++) f[i] = wire_get64(&r);
        ck_assert(!r.bad && r.p == r.end);
        e->stats++;
        if (index == e->last_index) e->stats_delivered = st.delivered;
        break;
    }
    case IPC_X_RELOADED:
        e->reload_gen = wire_get64(&r);
        e->reload_ok = wire_get32(&r);
        p = wire_get_bytes(&r, &plen);
        snprintf(e->reload_report, sizeof(e->reload_report), "%.*s", (int)plen, p ? p : "");
        n = wire_get32(&r);
        e->reload_names[0] = '\0';
        for (i = 0; i < n; i++) {
            p = wire_get_bytes(&r, &plen);
            snprintf(e->reload_names + strlen(e->reload_names),
                     sizeof(e->reload_names) - strlen(e->reload_names), "%.*s,", (int)plen, p);
        }
        ck_assert(!r.bad && r.p == r.end);
        e->reloads++;
        break;
    default: ck_abort_msg("unexpected frame type %c", type);
    }
}

static void
engine_end(void *arg, const char *reason)
{
    struct engine *e = arg;

    snprintf(e->end_reason, sizeof(e->end_reason), "%s", reason);
    e->ended = true;
}

/* The engine's first frame: H with a protocol version. */
static void
say_hello(struct engine *e, uint32_t version)
{
    struct buf body = BUF_INIT;

    wire_put32(&body, version);
    ck_assert_int_eq(ipc_send(e->c, IPC_HELLO, body.p, body.len), 0);
    buf_free(&body);
}

static bool
delivered_and_counted(void *arg)
{
    struct engine *e = arg;

    return e->delivered >= 1 && e->stats_delivered >= 1;
}

static bool
hello_seen(void *arg)
{
    return ((struct engine *)arg)->hellos > 0;
}

static void
submit(struct engine *e, uint32_t index, const char *id, bool trailing)
{
    struct buf body = BUF_INIT, enc = BUF_INIT;
    struct msg *m = msg_new();

    msg_set(m, nv_intern_str("corral.alert_id"), id, strlen(id));
    msg_set(m, nv_intern_str("MESSAGE"), id, strlen(id));
    msg_encode(m, &enc);
    msg_unref(m);
    wire_put32(&body, index);
    wire_put32(&body, 0);
    wire_put_bytes(&body, enc.p, enc.len);
    if (trailing) buf_putc(&body, 'x');
    ck_assert_int_eq(ipc_send(e->c, IPC_SUBMIT, body.p, body.len), 0);
    buf_free(&body);
    buf_free(&enc);
}

struct fixture {
    uv_loop_t loop;
    struct conf *conf;
    char file[512];
    struct queue *q;
    struct ipcserve *s;
    struct engine e;
    bool server_ended, closed;
    char server_reason[64];
    /* the reload function's: the configuration of the queues served, and the next one */
    struct conf *next;
    char next_file[512];
};

static void
server_end(void *arg, const char *reason)
{
    struct fixture *f = arg;

    snprintf(f->server_reason, sizeof(f->server_reason), "%s", reason);
    f->server_ended = true;
}

/* Serves one executor: x its element, "" the script that records each alert. */
static void
fixture_open_x(struct fixture *f, const char *xml)
{
    struct buf err = BUF_INIT;
    char x[1024];
    int sv[2];

    memset(f, 0, sizeof(*f));
    uv_loop_init(&f->loop);
    if (*xml)
        snprintf(x, sizeof(x), "%s", xml);
    else
        snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>",
                 ul_wpath("prog"));
    f->conf = ul_load_executors(ul_workdir(), x, f->file, sizeof(f->file));
    f->q = queue_open(&f->loop, &f->conf->executors[0], f->file, NULL, &err);
    ck_assert_msg(f->q != NULL, "queue_open: %s", buf_str(&err));
    buf_free(&err);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    f->s = ipcserve_new(&f->loop, sv[1], &f->q, 1, server_end, f);
    ck_assert_ptr_nonnull(f->s);
    f->e.c = ipc_open(&f->loop, sv[0], engine_frame, engine_end, &f->e);
    ck_assert_ptr_nonnull(f->e.c);
    ck_assert(ul_run_until(&f->loop, hello_seen, &f->e, 60));
    ck_assert_str_eq(f->e.names, "script,");
    ck_assert_int_ge(f->e.pressure, 1);
}

static void
fixture_open(struct fixture *f)
{
    fixture_open_x(f, "");
}

static void
fixture_hello(struct fixture *f)
{
    fixture_open(f);
    say_hello(&f->e, IPC_VERSION);
}

/*
 * The engine goes away.  busy: the executor process may be sending at that
 * moment (its deliveries' events), so it may see a reset, or a broken pipe
 * when its write comes after the close, rather than the close.
 */
static void
fixture_close_busy(struct fixture *f, bool busy)
{
    ipc_close(f->e.c, NULL, NULL);
    ck_assert(ul_run_until(&f->loop, ul_flag_set, &f->server_ended, 60));
    if (!busy || (strcmp(f->server_reason, "connection reset by peer") != 0 &&
                  strcmp(f->server_reason, "broken pipe") != 0))
        ck_assert_str_eq(f->server_reason, "closed");
    ipcserve_close(f->s, NULL, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f->loop), 0);
    conf_free(f->conf);
    conf_free(f->next);
}

static void
fixture_close(struct fixture *f)
{
    fixture_close_busy(f, false);
}

START_TEST(test_submit_delivers)
{
    struct fixture f;
    char out[256] = "";
    FILE *fp;

    fixture_hello(&f);
    submit(&f.e, 0, "alert-1", false);
    ck_assert_int_eq(ipc_send(f.e.c, IPC_SYNC, NULL, 0), 0);
    ck_assert_msg(ul_run_until(&f.loop, delivered_and_counted, &f.e, 60),
                  "delivered events %d, stats delivered %llu", f.e.delivered,
                  (unsigned long long)f.e.stats_delivered);
    ck_assert_int_eq(f.e.queued, 1);
    ck_assert_str_eq(f.e.last_alert_id, "alert-1");
    fp = fopen(ul_wpath("prog.out"), "r");
    ck_assert_ptr_nonnull(fp);
    ck_assert_ptr_nonnull(fgets(out, sizeof(out), fp));
    fclose(fp);
    ck_assert_str_eq(out, "alert-1\n");
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->submitted, 1);
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, 0);
    fixture_close(&f);
}
END_TEST

static bool
four_rejected(void *arg)
{
    return ipcserve_get_stats(arg)->rejected >= 4;
}

START_TEST(test_refuses_what_it_did_not_publish)
{
    struct fixture f;
    struct buf body = BUF_INIT;

    fixture_hello(&f);
    submit(&f.e, 1, "no-such-executor", false);
    submit(&f.e, 0, "trailing-bytes", true);
    wire_put32(&body, 0);
    wire_put32(&body, 0);
    wire_put_bytes(&body, "\xff\xff\xff\xff", 4); /* not an encoded message */
    ck_assert_int_eq(ipc_send(f.e.c, IPC_SUBMIT, body.p, body.len), 0);
    ck_assert_int_eq(ipc_send(f.e.c, 'X', "/bin/sh", 7), 0);
    ck_assert(ul_run_until(&f.loop, four_rejected, f.s, 60));
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, 4);
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->submitted, 0);
    ck_assert_uint_eq(queue_get_stats(f.q)->submitted, 0);
    ck_assert_int_eq(f.e.queued, 0);
    ck_assert_int_eq(access(ul_wpath("prog.out"), F_OK), -1);
    buf_free(&body);
    fixture_close(&f);
}
END_TEST

static bool
one_rejected(void *arg)
{
    return ipcserve_get_stats(arg)->rejected >= 1;
}

/* A request before the hello is refused; then the hello lets the next one through. */
START_TEST(test_hello_first)
{
    struct fixture f;

    fixture_open(&f);
    submit(&f.e, 0, "too-early", false);
    ck_assert(ul_run_until(&f.loop, one_rejected, f.s, 60));
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->submitted, 0);
    say_hello(&f.e, IPC_VERSION);
    submit(&f.e, 0, "alert-2", false);
    ck_assert(ul_run_until(&f.loop, delivered_and_counted, &f.e, 60));
    ck_assert_str_eq(f.e.last_alert_id, "alert-2");
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, 1);
    fixture_close(&f);
}
END_TEST

/* Another protocol version: the executor side stops serving (on_end), nothing is taken. */
START_TEST(test_hello_version_mismatch)
{
    struct fixture f;

    fixture_open(&f);
    say_hello(&f.e, IPC_VERSION + 1);
    submit(&f.e, 0, "after-a-bad-hello", false);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &f.server_ended, 60));
    ck_assert_str_eq(f.server_reason, "protocol version mismatch");
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->submitted, 0);
    ipcserve_close(f.s, NULL, NULL); /* as corrald: the engine learns it from the close */
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &f.e.ended, 60));
    ipc_close(f.e.c, NULL, NULL);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f.loop), 0);
    ck_assert_int_eq(access(ul_wpath("prog.out"), F_OK), -1);
    conf_free(f.conf);
}
END_TEST

/* corrald's executor process in small: the next configuration, through queueset.h. */
static int
reload_fn(void *arg, struct queue *const *running, size_t n, struct queue ***out, size_t *nout,
          struct buf *report)
{
    struct fixture *f = arg;
    struct queueset_stage qs;

    if (queueset_prepare(&qs, &f->loop, running, f->conf->executors, n, f->next->executors,
                         f->next->nexecutors, f->next_file, NULL, report) < 0)
        return -1;
    *out = qs.queues;
    *nout = f->next->nexecutors;
    queueset_commit(&qs, report);
    conf_free(f->conf);
    f->conf = f->next;
    f->next = NULL;
    return 0;
}

static void
send_reload(struct engine *e, uint64_t gen)
{
    struct buf body = BUF_INIT;

    wire_put64(&body, gen);
    ck_assert_int_eq(ipc_send(e->c, IPC_RELOAD, body.p, body.len), 0);
    buf_free(&body);
}

static bool
reloaded(void *arg)
{
    return ((struct engine *)arg)->reloads > 0;
}

static bool
delivered_twice(void *arg)
{
    return ((struct engine *)arg)->delivered >= 2;
}

static void
read_line(const char *path, char *out, size_t size)
{
    FILE *fp = fopen(path, "r");

    out[0] = '\0';
    ck_assert_msg(fp != NULL, "%s: not written", path);
    ck_assert_ptr_nonnull(fgets(out, (int)size, fp));
    fclose(fp);
}

/*
 * L: executor "script" changes its program (prog -> prog2) and "added"
 * appears; R lists both, the change and the addition are reported, and
 * each index reaches its new program.
 */
START_TEST(test_reload_changes_and_adds)
{
    struct fixture f;
    char x[2048], out[64];

    fixture_hello(&f);
    ipcserve_set_reload(f.s, reload_fn, &f);
    snprintf(x, sizeof(x),
             "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>\n"
             "<exec name=\"added\" program=\"%s\" backoff=\"1h\"/>",
             ul_wpath("prog2"), ul_wpath("prog"));
    f.next = ul_load_executors(ul_workdir(), x, f.next_file, sizeof(f.next_file));
    send_reload(&f.e, 7);
    ck_assert(ul_run_until(&f.loop, reloaded, &f.e, 60));
    ck_assert_uint_eq(f.e.reload_gen, 7);
    ck_assert_uint_eq(f.e.reload_ok, 1);
    ck_assert_str_eq(f.e.reload_names, "script,added,");
    ck_assert_msg(strstr(f.e.reload_report, "executor changed: script\n") &&
                      strstr(f.e.reload_report, "executor added: added\n"),
                  "report: %s", f.e.reload_report);
    /* the indexes of the new list: 0 the changed script (prog2), 1 the added one (prog) */
    submit(&f.e, 0, "to-changed", false);
    ck_assert(ul_run_until(&f.loop, delivered_and_counted, &f.e, 60));
    read_line(ul_wpath("prog2.out"), out, sizeof(out));
    ck_assert_str_eq(out, "to-changed\n");
    ck_assert_int_eq(access(ul_wpath("prog.out"), F_OK), -1);
    submit(&f.e, 1, "to-added", false);
    ck_assert(ul_run_until(&f.loop, delivered_twice, &f.e, 60));
    ck_assert_uint_eq(f.e.last_index, 1);
    read_line(ul_wpath("prog.out"), out, sizeof(out));
    ck_assert_str_eq(out, "to-added\n");
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, 0);
    fixture_close(&f);
}
END_TEST

/* A reload that cannot open an executor: R says why, with no list; the running queue serves on. */
START_TEST(test_reload_fails_keeps_running)
{
    struct fixture f;
    char x[2048], out[64];

    fixture_hello(&f);
    ipcserve_set_reload(f.s, reload_fn, &f);
    snprintf(x, sizeof(x),
             "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>\n"
             "<exec name=\"broken\" program=\"%s\"/>",
             ul_wpath("prog2"), ul_wpath("missing"));
    f.next = ul_load_executors(ul_workdir(), x, f.next_file, sizeof(f.next_file));
    send_reload(&f.e, 8);
    ck_assert(ul_run_until(&f.loop, reloaded, &f.e, 60));
    ck_assert_uint_eq(f.e.reload_gen, 8);
    ck_assert_uint_eq(f.e.reload_ok, 0);
    ck_assert_str_eq(f.e.reload_names, "");
    ck_assert_msg(strstr(f.e.reload_report, "executor broken: program ") != NULL, "report: %s",
                  f.e.reload_report);
    ck_assert_msg(strstr(f.e.reload_report, f.next_file) != NULL, "no file:line: %s",
                  f.e.reload_report);
    submit(&f.e, 0, "still-old", false);
    submit(&f.e, 1, "no-index-1", false); /* not published: the reload did not happen */
    ck_assert(ul_run_until(&f.loop, delivered_and_counted, &f.e, 60));
    read_line(ul_wpath("prog.out"), out, sizeof(out));
    ck_assert_str_eq(out, "still-old\n");
    ck_assert_int_eq(access(ul_wpath("prog2.out"), F_OK), -1);
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, 1);
    /* without a reload function: refused the same way */
    ipcserve_set_reload(f.s, NULL, NULL);
    f.e.reloads = 0;
    send_reload(&f.e, 9);
    ck_assert(ul_run_until(&f.loop, reloaded, &f.e, 60));
    ck_assert_uint_eq(f.e.reload_ok, 0);
    fixture_close(&f);
}
END_TEST

/* ---- what a compromised engine could send to exhaust this process ---- */

/* An S frame as any engine can make it: index, keep, the alert's bytes. */
static void
submit_raw(struct engine *e, uint32_t index, uint32_t keep, const struct buf *alert)
{
    struct buf body = BUF_INIT;

    wire_put32(&body, index);
    wire_put32(&body, keep);
    wire_put_bytes(&body, alert->p, alert->len);
    ck_assert_int_eq(ipc_send(e->c, IPC_SUBMIT, body.p, body.len), 0);
    buf_free(&body);
}

struct taken {
    struct fixture *f;
    uint64_t n;
};

/* Every submit so far has been taken or refused. */
static bool
all_answered(void *arg)
{
    struct taken *t = arg;
    const struct ipcserve_stats *st = ipcserve_get_stats(t->f->s);

    return st->submitted + st->rejected >= t->n;
}

/* An executor that never delivers: every attempt fails for now, the next in an hour. */
static void
fixture_stuck(struct fixture *f, const char *queue)
{
    char x[1024];

    signal(SIGPIPE, SIG_IGN); /* as corrald: a child that does not read its input */
    ul_write_file(ul_wpath("later"), "#!/bin/sh\nexit 75\n");
    ck_assert_int_eq(chmod(ul_wpath("later"), 0755), 0);
    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\" queue=\"%s\"/>",
             ul_wpath("later"), queue);
    fixture_open_x(f, x);
    say_hello(&f->e, IPC_VERSION);
}

/*
 * keep=1 (as the engine replays what it held during a reload) goes past
 * queue="5", but not without bound: 64 alerts of 1 MB each leave at most
 * QUEUE_MAX_BYTES of them queued, the rest refused as queue full.
 */
START_TEST(test_keep_is_bounded)
{
    struct fixture f;
    struct buf alert = BUF_INIT;
    struct msg *m = msg_new();
    char *big = xmalloc(1000000);
    struct taken t = {&f, 64};
    const struct queue_stats *qs;
    size_t i;

    fixture_stuck(&f, "5");
    memset(big, 'x', 1000000);
    msg_set(m, nv_intern_str("MESSAGE"), big, 1000000);
    msg_encode(m, &alert);
    for (i = 0; i < t.n; i++) submit_raw(&f.e, 0, 1, &alert);
    ck_assert(ul_run_until(&f.loop, all_answered, &t, 60));
    qs = queue_get_stats(f.q);
    ck_assert_uint_eq(qs->submitted, t.n);
    ck_assert_msg(qs->queued <= QUEUE_MAX_BYTES / 1000000, "%llu alerts of 1 MB queued",
                  (unsigned long long)qs->queued);
    ck_assert_uint_ge(qs->queued, 5);
    ck_assert_uint_eq(qs->dropped_full, t.n - qs->queued);
    ck_assert(queue_full(f.q));
    msg_unref(m);
    free(big);
    buf_free(&alert);
    fixture_close_busy(&f, true);
}
END_TEST

/* An alert as msg_encode writes it, with `names` value names that nothing registered: "f-ID-I". */
static void
alert_with_names(struct buf *out, unsigned id, unsigned names)
{
    char name[64];
    unsigned i;

    buf_reset(out);
    wire_put32(out, 13); /* pri */
    wire_put32(out, 0);  /* flags */
    for (i = 0; i < 2; i++) {
        wire_put64(out, 1764000000); /* stamp, then received: sec, usec, gmtoff */
        wire_put32(out, 0);
        wire_put32(out, 0);
    }
    wire_put32(out, names);
    for (i = 0; i < names; i++) {
        int n = snprintf(name, sizeof(name), "f-%u-%u", id, i);
        wire_put_bytes(out, name, (size_t)n);
        wire_put_bytes(out, "v", 1);
    }
    wire_put32(out, 0); /* no tags */
}

/*
 * 1,400 alerts of 50 value names each that this process has never seen
 * (70,000: more than the registry's 65,536) register at most
 * IPCSERVE_NEW_NAMES of them; the alerts past that are refused and
 * counted, and a name the next reload needs can still be registered.  One
 * alert with more than IPCSERVE_ALERT_NEW_NAMES is refused outright.
 */
START_TEST(test_new_names_are_bounded)
{
    struct fixture f;
    struct buf alert = BUF_INIT;
    struct taken t = {&f, 1401};
    unsigned i;
    uint64_t taken = IPCSERVE_NEW_NAMES / 50;

    fixture_stuck(&f, "100000");
    alert_with_names(&alert, 999999, IPCSERVE_ALERT_NEW_NAMES + 1);
    submit_raw(&f.e, 0, 0, &alert);
    for (i = 0; i < 1400; i++) {
        alert_with_names(&alert, i, 50);
        submit_raw(&f.e, 0, 0, &alert);
    }
    ck_assert(ul_run_until(&f.loop, all_answered, &t, 60));
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->submitted, taken);
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, t.n - taken);
    ck_assert_uint_eq(nv_lookup("f-999999-0", 10), 0);
    ck_assert_uint_ne(nv_lookup("f-0-0", 5), 0);
    ck_assert_uint_eq(nv_lookup("f-1399-49", 9), 0);
    ck_assert_uint_ne(nv_intern_str("a.name.the.next.reload.needs"), 0);
    buf_free(&alert);
    fixture_close_busy(&f, true);
}
END_TEST

static Suite *
ipcserve_suite(void)
{
    Suite *s = suite_create("ipcserve");
    TCase *tc = tcase_create("ipcserve");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_submit_delivers);
    tcase_add_test(tc, test_refuses_what_it_did_not_publish);
    tcase_add_test(tc, test_hello_first);
    tcase_add_test(tc, test_hello_version_mismatch);
    tcase_add_test(tc, test_reload_changes_and_adds);
    tcase_add_test(tc, test_reload_fails_keeps_running);
    tcase_add_test(tc, test_keep_is_bounded);
    tcase_add_test(tc, test_new_names_are_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(ipcserve_suite());
}
