/*
 * Unit tests of the executor process's server (actions/ipcserve.c), driven
 * over a real socketpair as the engine process would drive it: the hello
 * names the executors; an alert submitted by index reaches a real exec
 * script and comes back as queued and delivered events, with the stats;
 * and what a compromised engine could send instead (an executor index the
 * executor did not publish, an alert that does not decode, trailing bytes,
 * an unknown request) is refused and counted, and nothing is delivered.
 */
#include "actions/ipcserve.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "actions/ipc.h"
#include "agent/conf.h"
#include "engine/buf.h"
#include "engine/log.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/wire.h"
#include "tests/unit/unitlib.h"

static void
setup(void)
{
    ck_assert_ptr_nonnull(ul_workdir_new("ipcserve"));
    ul_write_file(ul_wpath("prog"), "#!/bin/sh\necho \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n");
    ck_assert_int_eq(chmod(ul_wpath("prog"), 0755), 0);
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
    bool ended;
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
        ck_assert_uint_eq(wire_get32(&r), 0);
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
        ck_assert_uint_eq(wire_get32(&r), 0);
        n = wire_get32(&r);
        ck_assert_uint_eq(n, sizeof(st) / sizeof(uint64_t));
        for (i = 0; i < n; i++) f[i] = wire_get64(&r);
        ck_assert(!r.bad && r.p == r.end);
        e->stats++;
        e->stats_delivered = st.delivered;
        break;
    }
    default: ck_abort_msg("unexpected frame type %c", type);
    }
}

static void
engine_end(void *arg, const char *reason)
{
    struct engine *e = arg;

    (void)reason;
    e->ended = true;
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
};

static void
server_end(void *arg, const char *reason)
{
    struct fixture *f = arg;

    ck_assert_str_eq(reason, "closed");
    f->server_ended = true;
}

static void
fixture_open(struct fixture *f)
{
    struct buf err = BUF_INIT;
    char x[1024];
    int sv[2];

    memset(f, 0, sizeof(*f));
    uv_loop_init(&f->loop);
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
fixture_close(struct fixture *f)
{
    ipc_close(f->e.c, NULL, NULL);
    ck_assert(ul_run_until(&f->loop, ul_flag_set, &f->server_ended, 60));
    ipcserve_close(f->s, NULL, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f->loop), 0);
    conf_free(f->conf);
}

START_TEST(test_submit_delivers)
{
    struct fixture f;
    char out[256] = "";
    FILE *fp;

    fixture_open(&f);
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

    fixture_open(&f);
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

static Suite *
ipcserve_suite(void)
{
    Suite *s = suite_create("ipcserve");
    TCase *tc = tcase_create("ipcserve");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_submit_delivers);
    tcase_add_test(tc, test_refuses_what_it_did_not_publish);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(ipcserve_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
