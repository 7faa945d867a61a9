/*
 * Unit tests of the engine process's proxy (actions/ipcproxy.c) against
 * the executor process's server (actions/ipcserve.c), over a real
 * socketpair, both ends on one loop as the two processes would run them:
 * the proxy learns the executors from the hello; an alert submitted
 * through it reaches a real exec script, and the observer learns that it
 * was queued and delivered, with the alert; the stats follow; a full queue
 * on the executor's side is full on the engine's side (back-pressure), and
 * low again once delivered; the executor side going away is reported; and
 * a terminate closes the executor's queues, keeping an undelivered alert
 * in its spool for the next start, before the bye; `corral queue` commands
 * run on the executor process's queues and their answers come back to the
 * one who asked, or "FAILED" when the executor process goes away first.
 * A hello of another protocol version ends the connection.  A signal the
 * executor process passes on (g) reaches the engine's callback; one it
 * never passes on (SIGKILL) is not raised but counted as a bad frame.  A reload of
 * the executors: the proxy learns the new list; alerts submitted while it
 * waits for the answer are held and then reach the executor they were
 * routed to, under its index in the new list (one for an executor the
 * reload removed is dropped and counted); a failed reload keeps the old
 * list; a terminate meanwhile goes after the held alerts; the executor
 * process going away fails the reload.
 */
#include "actions/ipcproxy.h"

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
#include "actions/ipcserve.h"
#include "actions/queueset.h"
#include "agent/conf/conf.h"
#include "agent/web/queuectl.h"
#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/wire.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

static void
setup(void)
{
    ck_assert_ptr_nonnull(ul_workdir_new("ipcproxy"));
    /* delivers once the file "go" exists (the test decides when) */
    ul_write_file(ul_wpath("prog"), "#!/bin/sh\nwhile [ ! -e \"$0.go\" ]; do sleep 0.05; done\n"
                                    "echo \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n");
    ck_assert_int_eq(chmod(ul_wpath("prog"), 0755), 0);
    /* deliver at once, each to its own file */
    ul_write_file(ul_wpath("a"), "#!/bin/sh\necho \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n");
    ck_assert_int_eq(chmod(ul_wpath("a"), 0755), 0);
    ul_write_file(ul_wpath("b"), "#!/bin/sh\necho \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n");
    ck_assert_int_eq(chmod(ul_wpath("b"), 0755), 0);
}

static void
teardown(void)
{
    ul_workdir_remove();
}

struct fixture {
    uv_loop_t loop;
    struct conf *conf;
    char file[512];
    struct queue *q;
    struct ipcserve *s;
    struct ipcproxy *p;
    bool ready, proxy_ended, server_ended;
    int queued, delivered;
    char last_id[64], last_executor[64];
};

static void
proxy_ready(void *arg)
{
    ((struct fixture *)arg)->ready = true;
}

static void
proxy_end(void *arg, const char *reason)
{
    struct fixture *f = arg;

    (void)reason; /* "closed", or a write error if the proxy was writing */
    f->proxy_ended = true;
}

static void
server_end(void *arg, const char *reason)
{
    (void)reason;
    ((struct fixture *)arg)->server_ended = true;
}

static void
observe(void *arg, const char *executor, const struct msg *m, enum queue_event ev)
{
    struct fixture *f = arg;
    size_t len = 0;
    const char *id = msg_get(m, nv_intern_str("corral.alert_id"), &len);

    snprintf(f->last_id, sizeof(f->last_id), "%.*s", (int)len, id ? id : "");
    snprintf(f->last_executor, sizeof(f->last_executor), "%s", executor);
    if (ev == QUEUE_EV_QUEUED) f->queued++;
    if (ev == QUEUE_EV_DELIVERED) f->delivered++;
}

static void
fixture_open(struct fixture *f, const char *attrs)
{
    struct buf err = BUF_INIT;
    char x[1024];
    int sv[2];

    memset(f, 0, sizeof(*f));
    uv_loop_init(&f->loop);
    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\" %s/>",
             ul_wpath("prog"), attrs);
    f->conf = ul_load_executors(ul_workdir(), x, f->file, sizeof(f->file));
    f->q = queue_open(&f->loop, &f->conf->executors[0], f->file, NULL, &err);
    ck_assert_msg(f->q != NULL, "queue_open: %s", buf_str(&err));
    buf_free(&err);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    f->s = ipcserve_new(&f->loop, sv[1], &f->q, 1, server_end, f);
    f->p = ipcproxy_new(&f->loop, sv[0], proxy_ready, proxy_end, f);
    ck_assert_ptr_nonnull(f->s);
    ck_assert_ptr_nonnull(f->p);
    ipcproxy_set_observer(f->p, observe, f);
    ck_assert(!ipcproxy_ready(f->p));
    ck_assert(ul_run_until(&f->loop, ul_flag_set, &f->ready, 60));
    ck_assert(ipcproxy_ready(f->p));
    ck_assert_uint_eq(ipcproxy_count(f->p), 1);
    ck_assert_str_eq(ipcproxy_name(f->p, 0), "script");
    ck_assert_int_eq(ipcproxy_find(f->p, "script"), 0);
    ck_assert_int_eq(ipcproxy_find(f->p, "other"), -1);
}

/* The executor side closes first (as when the executor process dies); the proxy learns it. */
static void
fixture_close(struct fixture *f)
{
    ipcserve_close(f->s, NULL, NULL);
    ck_assert(ul_run_until(&f->loop, ul_flag_set, &f->proxy_ended, 60));
    ipcproxy_close(f->p, NULL, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f->loop), 0);
    conf_free(f->conf);
}

static void
submit(struct fixture *f, const char *id)
{
    struct msg *m = msg_new();

    msg_set(m, nv_intern_str("corral.alert_id"), id, strlen(id));
    msg_set(m, nv_intern_str("MESSAGE"), id, strlen(id));
    ipcproxy_submit(f->p, 0, m, false);
    msg_unref(m);
}

static bool
delivered_and_counted(void *arg)
{
    struct fixture *f = arg;

    return f->delivered >= 1 && ipcproxy_queue_stats(f->p, 0)->delivered >= 1;
}

START_TEST(test_submit_observe_stats)
{
    struct fixture f;
    char out[64] = "";
    FILE *fp;

    fixture_open(&f, "");
    ul_write_file(ul_wpath("prog.go"), "");
    submit(&f, "a-1");
    ipcproxy_sync(f.p);
    ck_assert(ul_run_until(&f.loop, delivered_and_counted, &f, 60));
    ck_assert_int_eq(f.queued, 1);
    ck_assert_str_eq(f.last_id, "a-1");
    ck_assert_str_eq(f.last_executor, "script");
    ck_assert_uint_eq(ipcproxy_queue_stats(f.p, 0)->submitted, 1);
    ck_assert_uint_eq(ipcproxy_get_stats(f.p)->sent, 1);
    ck_assert_uint_eq(ipcproxy_get_stats(f.p)->bad, 0);
    fp = fopen(ul_wpath("prog.out"), "r");
    ck_assert_ptr_nonnull(fp);
    ck_assert_ptr_nonnull(fgets(out, sizeof(out), fp));
    fclose(fp);
    ck_assert_str_eq(out, "a-1\n");
    /* an index the executor process did not publish is not sent */
    ipcproxy_submit(f.p, 1, NULL, false);
    ck_assert_uint_eq(ipcproxy_get_stats(f.p)->refused, 1);
    fixture_close(&f);
}
END_TEST

static bool
proxy_full(void *arg)
{
    struct fixture *f = arg;

    return ipcproxy_full(f->p, 0);
}

static bool
proxy_low_and_delivered(void *arg)
{
    struct fixture *f = arg;

    return ipcproxy_low(f->p, 0) && f->delivered >= 2;
}

START_TEST(test_pressure)
{
    struct fixture f;

    fixture_open(&f, "queue=\"2\"");
    ck_assert(!ipcproxy_full(f.p, 0));
    ck_assert(ipcproxy_low(f.p, 0));
    submit(&f, "p-1");
    submit(&f, "p-2");
    ck_assert(ul_run_until(&f.loop, proxy_full, &f, 60));
    ck_assert(!ipcproxy_low(f.p, 0));
    ul_write_file(ul_wpath("prog.go"), "");
    ck_assert(ul_run_until(&f.loop, proxy_low_and_delivered, &f, 60));
    ck_assert(!ipcproxy_full(f.p, 0));
    fixture_close(&f);
}
END_TEST

static bool
one_queued(void *arg)
{
    return ((struct fixture *)arg)->queued >= 1;
}

static void
on_bye(void *arg)
{
    *(bool *)arg = true;
}

static void
server_terminated(void *arg, const char *reason)
{
    struct fixture *f = arg;

    ck_assert_str_eq(reason, "terminated");
    f->server_ended = true;
    ipcserve_close(f->s, NULL, NULL);
    f->s = NULL;
}

START_TEST(test_terminate_keeps_spool)
{
    struct fixture f;
    struct buf err = BUF_INIT;
    struct queue *again;
    bool bye = false;
    char x[1024];
    int sv[2];

    memset(&f, 0, sizeof(f));
    uv_loop_init(&f.loop);
    ck_assert_int_eq(mkdir(ul_wpath("spool"), 0700), 0);
    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>",
             ul_wpath("prog"));
    f.conf = ul_load_executors(ul_workdir(), x, f.file, sizeof(f.file));
    f.q = queue_open(&f.loop, &f.conf->executors[0], f.file, ul_wpath("spool"), &err);
    ck_assert_msg(f.q != NULL, "queue_open: %s", buf_str(&err));
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    f.s = ipcserve_new(&f.loop, sv[1], &f.q, 1, server_terminated, &f);
    f.p = ipcproxy_new(&f.loop, sv[0], proxy_ready, NULL, &f);
    ipcproxy_set_observer(f.p, observe, &f);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &f.ready, 60));
    /* the script waits for prog.go, which never comes: the alert is in delivery at the end */
    submit(&f, "kept-1");
    ipcproxy_sync(f.p);
    ck_assert(ul_run_until(&f.loop, one_queued, &f, 60));
    ck_assert_int_eq(ipcproxy_terminate(f.p, on_bye, &bye), 0);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &bye, 60));
    ck_assert(f.server_ended);
    ck_assert_int_eq(f.delivered, 0);
    ipcproxy_close(f.p, NULL, NULL);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    /* the next start takes it over from the spool */
    again = queue_open(&f.loop, &f.conf->executors[0], f.file, ul_wpath("spool"), &err);
    ck_assert_msg(again != NULL, "queue_open: %s", buf_str(&err));
    ck_assert_uint_eq(queue_get_stats(again)->recovered, 1);
    queue_close(again, NULL, NULL);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f.loop), 0);
    conf_free(f.conf);
    buf_free(&err);
}
END_TEST

static void
server_terminated_kept(void *arg, const char *reason)
{
    struct fixture *f = arg;

    ck_assert_str_eq(reason, "terminated");
    f->server_ended = true; /* closed later, as corrald does once the engine has exited */
}

static void
count_active_timer(uv_handle_t *h, void *arg)
{
    if (h->type == UV_TIMER && uv_is_active(h)) (*(int *)arg)++;
}

/*
 * After a terminate the executor side may stay open a while (corrald closes
 * it once the engine has exited): nothing of it may still run then, since
 * its queues are closed and freed (its stats timer read them: ASan).
 */
START_TEST(test_terminate_then_close_later)
{
    struct fixture f;
    struct buf err = BUF_INIT;
    bool bye = false;
    char x[1024];
    int sv[2], timers = 0;

    memset(&f, 0, sizeof(f));
    uv_loop_init(&f.loop);
    snprintf(x, sizeof(x), "<exec name=\"script\" program=\"%s\" backoff=\"1h\"/>",
             ul_wpath("prog"));
    f.conf = ul_load_executors(ul_workdir(), x, f.file, sizeof(f.file));
    f.q = queue_open(&f.loop, &f.conf->executors[0], f.file, NULL, &err);
    ck_assert_msg(f.q != NULL, "queue_open: %s", buf_str(&err));
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    f.s = ipcserve_new(&f.loop, sv[1], &f.q, 1, server_terminated_kept, &f);
    f.p = ipcproxy_new(&f.loop, sv[0], proxy_ready, NULL, &f);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &f.ready, 60));
    ck_assert_int_eq(ipcproxy_terminate(f.p, on_bye, &bye), 0);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &bye, 60));
    ck_assert(f.server_ended);
    uv_walk(&f.loop, count_active_timer, &timers);
    ck_assert_int_eq(timers, 0);
    ipcserve_close(f.s, NULL, NULL);
    ipcproxy_close(f.p, NULL, NULL);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f.loop), 0);
    conf_free(f.conf);
    buf_free(&err);
}
END_TEST

static void
run_ctl(void *arg, struct queue **queues, size_t n, const char *args, struct buf *out)
{
    (void)arg;
    queuectl_command_queues(queues, n, args, out);
}

struct answer {
    char text[4096];
    bool got;
};

static void
on_answer(void *arg, const char *text, size_t len)
{
    struct answer *a = arg;

    ck_assert(!a->got);
    snprintf(a->text, sizeof(a->text), "%.*s", (int)len, text);
    a->got = true;
}

START_TEST(test_queue_control)
{
    struct fixture f;
    struct answer list = {0}, unknown = {0}, noid = {0}, gone = {0};

    fixture_open(&f, "");
    ipcserve_set_control(f.s, run_ctl, NULL);
    submit(&f, "c-1"); /* waits in delivery: prog.go does not exist */
    ck_assert(ul_run_until(&f.loop, one_queued, &f, 60));
    ipcproxy_control(f.p, "list", on_answer, &list);
    ipcproxy_control(f.p, "drop other/q1", on_answer, &unknown);
    ipcproxy_control(f.p, "drop script/q999", on_answer, &noid);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &noid.got, 60));
    ck_assert(list.got && unknown.got);
    ck_assert_msg(strstr(list.text, "\"executor\": \"script\"") && strstr(list.text, "c-1"),
                  "list: %s", list.text);
    ck_assert_str_eq(unknown.text, "ERROR unknown executor 'other'\n");
    ck_assert_msg(strncmp(noid.text, "ERROR ", 6) == 0, "drop: %s", noid.text);
    /* asked, and the executor side goes away before answering */
    ipcproxy_control(f.p, "list", on_answer, &gone);
    ipcserve_close(f.s, NULL, NULL);
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &gone.got, 60));
    ck_assert_str_eq(gone.text, "FAILED the executor process is gone\n");
    ck_assert(ul_run_until(&f.loop, ul_flag_set, &f.proxy_ended, 60));
    ipcproxy_close(f.p, NULL, NULL);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&f.loop), 0);
    conf_free(f.conf);
}
END_TEST

static void
on_notify(void *arg, const char *state)
{
    struct buf *b = arg;

    buf_printf(b, "%s;", state);
}

static bool
proxy_sees_two_rejected(void *arg)
{
    return ipcproxy_get_stats(arg)->served_rejected == 2;
}

static bool
stopping_seen(void *arg)
{
    return strstr(buf_str(arg), "STOPPING=1") != NULL;
}

/* The engine says its service states; the executor process passes on only those three. */
START_TEST(test_notify)
{
    struct fixture f;
    struct buf got = BUF_INIT;

    fixture_open(&f, "");
    ipcserve_set_notify(f.s, on_notify, &got);
    ck_assert_int_eq(ipcproxy_notify(f.p, "READY=1"), 0);
    ck_assert_int_eq(ipcproxy_notify(f.p, "MAINPID=1"), 0);
    ck_assert_int_eq(ipcproxy_notify(f.p, "READY=1\nMAINPID=1"), 0);
    ck_assert_int_eq(ipcproxy_notify(f.p, "STOPPING=1"), 0);
    /* frames are handled in order: STOPPING=1, the last, means all were */
    ck_assert(ul_run_until(&f.loop, stopping_seen, &got, 60));
    ck_assert_str_eq(buf_str(&got), "READY=1;STOPPING=1;");
    ck_assert_uint_eq(ipcserve_get_stats(f.s)->rejected, 2);
    /* and the engine learns the count, for its /metrics */
    ck_assert(ul_run_until(&f.loop, proxy_sees_two_rejected, f.p, 60));
    fixture_close(&f);
    buf_free(&got);
}
END_TEST

/* An executor side of another protocol version: its hello ends the connection. */
static void
ignore_frame(void *arg, char type, const void *body, size_t len)
{
    (void)arg;
    (void)type;
    (void)body;
    (void)len;
}

static void
fake_end(void *arg, const char *reason)
{
    (void)reason;
    *(bool *)arg = true;
}

struct ended {
    bool ended;
    char reason[64];
};

static void
proxy_end_reason(void *arg, const char *reason)
{
    struct ended *e = arg;

    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    e->ended = true;
}

START_TEST(test_hello_version_mismatch)
{
    uv_loop_t loop;
    struct ipc_conn *fake;
    struct ipcproxy *p;
    struct ended e = {0};
    struct buf body = BUF_INIT;
    bool fake_ended = false;
    int sv[2];

    uv_loop_init(&loop);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    fake = ipc_open(&loop, sv[1], ignore_frame, fake_end, &fake_ended);
    p = ipcproxy_new(&loop, sv[0], NULL, proxy_end_reason, &e);
    ck_assert_ptr_nonnull(p);
    wire_put32(&body, IPC_VERSION + 1);
    wire_put32(&body, 1);
    wire_put_bytes(&body, "script", 6);
    ck_assert_int_eq(ipc_send(fake, IPC_X_HELLO, body.p, body.len), 0);
    ck_assert(ul_run_until(&loop, ul_flag_set, &e.ended, 60));
    ck_assert_str_eq(e.reason, "protocol version mismatch");
    ck_assert(!ipcproxy_ready(p));
    ipcproxy_close(p, NULL, NULL);
    ck_assert(ul_run_until(&loop, ul_flag_set, &fake_ended, 60));
    ipc_close(fake, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&body);
}
END_TEST

static void
got_signal(void *arg, int sig)
{
    *(int *)arg = sig;
}

static bool
signal_seen(void *arg)
{
    return *(int *)arg != 0;
}

/* g: a signal the executor process passes on reaches the engine's callback, in order. */
START_TEST(test_signal_passed_on)
{
    struct fixture f;
    int sig = 0;

    fixture_open(&f, "");
    ipcproxy_set_signal(f.p, got_signal, &sig);
    ck_assert_int_eq(ipcserve_signal(f.s, SIGHUP), 0);
    ck_assert(ul_run_until(&f.loop, signal_seen, &sig, 60));
    ck_assert_int_eq(sig, SIGHUP);
    sig = 0;
    ck_assert_int_eq(ipcserve_signal(f.s, SIGUSR2), 0);
    ck_assert(ul_run_until(&f.loop, signal_seen, &sig, 60));
    ck_assert_int_eq(sig, SIGUSR2);
    fixture_close(&f);
}
END_TEST

static bool
one_bad(void *arg)
{
    return ipcproxy_get_stats(arg)->bad == 1;
}

/* g with a signal the executor never passes on (SIGKILL): not raised, counted as a bad frame. */
START_TEST(test_signal_other_refused)
{
    struct fixture f;
    int sig = 0;

    fixture_open(&f, "");
    ipcproxy_set_signal(f.p, got_signal, &sig);
    ck_assert_int_eq(ipcserve_signal(f.s, SIGKILL), 0);
    ck_assert(ul_run_until(&f.loop, one_bad, f.p, 60));
    ck_assert_int_eq(sig, 0);
    /* the connection goes on: a signal it passes on still comes through */
    ck_assert_int_eq(ipcserve_signal(f.s, SIGTERM), 0);
    ck_assert(ul_run_until(&f.loop, signal_seen, &sig, 60));
    ck_assert_int_eq(sig, SIGTERM);
    fixture_close(&f);
}
END_TEST

/* Two executors, a and b, on the executor side; the reload function moves to f->next. */
struct rfix {
    struct fixture f;
    struct queue *qs[2];
    struct conf *next;
    char next_file[512];
    bool answered, ok;
    char report[1024];
};

static int
reload_fn(void *arg, struct queue *const *running, size_t n, struct queue ***out, size_t *nout,
          struct buf *report)
{
    struct rfix *r = arg;
    struct queueset_stage qs;

    if (queueset_prepare(&qs, &r->f.loop, running, r->f.conf->executors, n, r->next->executors,
                         r->next->nexecutors, r->next_file, NULL, report) < 0)
        return -1;
    *out = qs.queues;
    *nout = r->next->nexecutors;
    queueset_commit(&qs, report);
    conf_free(r->f.conf);
    r->f.conf = r->next;
    r->next = NULL;
    return 0;
}

static void
rfix_open(struct rfix *r)
{
    struct buf err = BUF_INIT;
    char x[2048];
    int sv[2], i;

    memset(r, 0, sizeof(*r));
    uv_loop_init(&r->f.loop);
    snprintf(x, sizeof(x),
             "<exec name=\"a\" program=\"%s\" backoff=\"1h\"/>\n"
             "<exec name=\"b\" program=\"%s\" backoff=\"1h\"/>",
             ul_wpath("a"), ul_wpath("b"));
    r->f.conf = ul_load_executors(ul_workdir(), x, r->f.file, sizeof(r->f.file));
    for (i = 0; i < 2; i++) {
        r->qs[i] = queue_open(&r->f.loop, &r->f.conf->executors[i], r->f.file, NULL, &err);
        ck_assert_msg(r->qs[i] != NULL, "queue_open: %s", buf_str(&err));
    }
    buf_free(&err);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    r->f.s = ipcserve_new(&r->f.loop, sv[1], r->qs, 2, server_end, &r->f);
    ipcserve_set_reload(r->f.s, reload_fn, r);
    r->f.p = ipcproxy_new(&r->f.loop, sv[0], proxy_ready, proxy_end, &r->f);
    ipcproxy_set_observer(r->f.p, observe, &r->f);
    ck_assert(ul_run_until(&r->f.loop, ul_flag_set, &r->f.ready, 60));
    ck_assert_uint_eq(ipcproxy_count(r->f.p), 2);
}

static void
rfix_next(struct rfix *r, const char *executors)
{
    r->next = ul_load_executors(ul_workdir(), executors, r->next_file, sizeof(r->next_file));
}

static void
on_reloaded(void *arg, bool ok, const char *report, size_t len)
{
    struct rfix *r = arg;

    ck_assert(!r->answered);
    r->answered = true;
    r->ok = ok;
    snprintf(r->report, sizeof(r->report), "%.*s", (int)len, report);
}

static void
submit_to(struct fixture *f, size_t i, const char *id)
{
    struct msg *m = msg_new();

    msg_set(m, nv_intern_str("corral.alert_id"), id, strlen(id));
    ipcproxy_submit(f->p, i, m, false);
    msg_unref(m);
}

static bool
delivered_n(void *arg)
{
    struct rfix *r = arg;

    return r->f.delivered >= 2;
}

static bool
one_delivered(void *arg)
{
    return ((struct fixture *)arg)->delivered >= 1;
}

static void
file_is(const char *name, const char *want)
{
    char got[256] = "";
    FILE *fp = fopen(ul_wpath(name), "r");
    size_t n;

    ck_assert_msg(fp != NULL, "%s not written", name);
    n = fread(got, 1, sizeof(got) - 1, fp);
    got[n] = '\0';
    fclose(fp);
    ck_assert_str_eq(got, want);
}

/*
 * The new configuration lists b first, drops a, and adds c (a's program):
 * the alerts submitted before the answer, to old index 0 (a, removed) and
 * old index 1 (b), are held: b's reaches b under its new index 0, a's is
 * dropped and counted.  After it, index 1 is c.
 */
START_TEST(test_reload_holds_and_maps)
{
    struct rfix r;
    char x[2048];

    rfix_open(&r);
    snprintf(x, sizeof(x),
             "<exec name=\"b\" program=\"%s\" backoff=\"1h\"/>\n"
             "<exec name=\"c\" program=\"%s\" backoff=\"1h\"/>",
             ul_wpath("b"), ul_wpath("a"));
    rfix_next(&r, x);
    ck_assert_int_eq(ipcproxy_reload(r.f.p, 1, on_reloaded, &r), 0);
    ck_assert(ipcproxy_reloading(r.f.p));
    ck_assert_int_eq(ipcproxy_reload(r.f.p, 2, on_reloaded, &r), -1); /* one at a time */
    submit_to(&r.f, 0, "held-for-a");
    submit_to(&r.f, 1, "held-for-b");
    ck_assert_uint_eq(ipcproxy_get_stats(r.f.p)->sent, 0);
    ck_assert(ul_run_until(&r.f.loop, ul_flag_set, &r.answered, 60));
    ck_assert(r.ok);
    ck_assert(!ipcproxy_reloading(r.f.p));
    ck_assert_msg(strstr(r.report, "executor removed: a") && strstr(r.report, "executor added: c"),
                  "report: %s", r.report);
    ck_assert_uint_eq(ipcproxy_count(r.f.p), 2);
    ck_assert_str_eq(ipcproxy_name(r.f.p, 0), "b");
    ck_assert_str_eq(ipcproxy_name(r.f.p, 1), "c");
    ck_assert_uint_eq(ipcproxy_get_stats(r.f.p)->sent, 1);
    ck_assert_uint_eq(ipcproxy_get_stats(r.f.p)->refused, 1);
    /* b's delivered first: else b and c run at once, and either may end last */
    ck_assert(ul_run_until(&r.f.loop, one_delivered, &r.f, 60));
    submit_to(&r.f, 1, "to-c");
    ck_assert(ul_run_until(&r.f.loop, delivered_n, &r, 60));
    file_is("b.out", "held-for-b\n");
    file_is("a.out", "to-c\n"); /* c runs a's program; a itself got nothing */
    ck_assert_str_eq(r.f.last_executor, "c");
    ck_assert_uint_eq(ipcserve_get_stats(r.f.s)->rejected, 0);
    fixture_close(&r.f);
}
END_TEST

/* A reload the executor side cannot do: the old list stays, held alerts go to it. */
START_TEST(test_reload_fails_keeps_list)
{
    struct rfix r;
    char x[2048];

    rfix_open(&r);
    snprintf(x, sizeof(x), "<exec name=\"a\" program=\"%s\"/>", ul_wpath("missing"));
    rfix_next(&r, x);
    ck_assert_int_eq(ipcproxy_reload(r.f.p, 1, on_reloaded, &r), 0);
    submit_to(&r.f, 1, "held-for-b");
    ck_assert(ul_run_until(&r.f.loop, ul_flag_set, &r.answered, 60));
    ck_assert(!r.ok);
    ck_assert_msg(strstr(r.report, "executor a: program ") != NULL, "report: %s", r.report);
    ck_assert_str_eq(ipcproxy_name(r.f.p, 0), "a");
    ck_assert_str_eq(ipcproxy_name(r.f.p, 1), "b");
    ck_assert(ul_run_until(&r.f.loop, one_delivered, &r.f, 60));
    file_is("b.out", "held-for-b\n");
    ck_assert_uint_eq(ipcproxy_get_stats(r.f.p)->sent, 1);
    ck_assert_uint_eq(ipcproxy_get_stats(r.f.p)->refused, 0);
    conf_free(r.next);
    fixture_close(&r.f);
}
END_TEST

static void
rfix_terminated(void *arg, const char *reason)
{
    struct fixture *f = arg;

    ck_assert_str_eq(reason, "terminated");
    f->server_ended = true;
}

/* A terminate while a reload waits: the held alert goes first, then T; the bye comes. */
START_TEST(test_reload_then_terminate)
{
    struct rfix r;
    bool bye = false;
    char x[2048];
    struct buf err = BUF_INIT;
    int sv[2];

    memset(&r, 0, sizeof(r));
    uv_loop_init(&r.f.loop);
    snprintf(x, sizeof(x), "<exec name=\"a\" program=\"%s\" backoff=\"1h\"/>", ul_wpath("a"));
    r.f.conf = ul_load_executors(ul_workdir(), x, r.f.file, sizeof(r.f.file));
    r.qs[0] = queue_open(&r.f.loop, &r.f.conf->executors[0], r.f.file, NULL, &err);
    ck_assert_ptr_nonnull(r.qs[0]);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    r.f.s = ipcserve_new(&r.f.loop, sv[1], r.qs, 1, rfix_terminated, &r.f);
    ipcserve_set_reload(r.f.s, reload_fn, &r);
    r.f.p = ipcproxy_new(&r.f.loop, sv[0], proxy_ready, NULL, &r.f);
    ipcproxy_set_observer(r.f.p, observe, &r.f);
    ck_assert(ul_run_until(&r.f.loop, ul_flag_set, &r.f.ready, 60));
    snprintf(x, sizeof(x), "<exec name=\"a\" program=\"%s\" backoff=\"1h\"/>", ul_wpath("b"));
    rfix_next(&r, x);
    ck_assert_int_eq(ipcproxy_reload(r.f.p, 1, on_reloaded, &r), 0);
    submit_to(&r.f, 0, "held");
    ck_assert_int_eq(ipcproxy_terminate(r.f.p, on_bye, &bye), 0);
    ck_assert(ul_run_until(&r.f.loop, ul_flag_set, &bye, 60));
    ck_assert(r.answered && r.ok);
    ck_assert(ipcproxy_said_bye(r.f.p));
    ck_assert_uint_eq(ipcserve_get_stats(r.f.s)->submitted, 1);
    ck_assert_uint_eq(ipcserve_get_stats(r.f.s)->rejected, 0);
    ipcserve_close(r.f.s, NULL, NULL);
    ipcproxy_close(r.f.p, NULL, NULL);
    uv_run(&r.f.loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&r.f.loop), 0);
    conf_free(r.f.conf);
    buf_free(&err);
}
END_TEST

/* The executor side goes away before answering: the reload fails, then on_end. */
START_TEST(test_reload_gone)
{
    struct rfix r;

    signal(SIGPIPE, SIG_IGN); /* as corrald: the write of L fails with EPIPE instead */
    rfix_open(&r);
    ipcserve_close(r.f.s, NULL, NULL); /* before it reads L */
    ck_assert_int_eq(ipcproxy_reload(r.f.p, 1, on_reloaded, &r), 0);
    submit_to(&r.f, 0, "never-sent");
    ck_assert(ul_run_until(&r.f.loop, ul_flag_set, &r.answered, 60));
    ck_assert(!r.ok);
    ck_assert_str_eq(r.report, "the executor process is gone\n");
    ck_assert(ul_run_until(&r.f.loop, ul_flag_set, &r.f.proxy_ended, 60));
    ipcproxy_close(r.f.p, NULL, NULL);
    uv_run(&r.f.loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&r.f.loop), 0);
    conf_free(r.f.conf);
}
END_TEST

/* R's body: what parses, and what does not. */
START_TEST(test_parse_reloaded)
{
    struct ipcproxy_reloaded r;
    struct buf b = BUF_INIT;

    wire_put64(&b, 5);
    wire_put32(&b, 1);
    wire_put_bytes(&b, "ok\n", 3);
    wire_put32(&b, 2);
    wire_put_bytes(&b, "x", 1);
    wire_put_bytes(&b, "y", 1);
    ck_assert_int_eq(ipcproxy_parse_reloaded(b.p, b.len, &r), 0);
    ck_assert_uint_eq(r.generation, 5);
    ck_assert(r.ok);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_str_eq(r.names[1], "y");
    ck_assert_ptr_null(r.names[2]);
    ipcproxy_reloaded_free(&r);
    buf_putc(&b, 'z'); /* trailing */
    ck_assert_int_eq(ipcproxy_parse_reloaded(b.p, b.len, &r), -1);
    buf_reset(&b);
    wire_put64(&b, 5);
    wire_put32(&b, 0);
    wire_put_bytes(&b, "no\n", 3);
    wire_put32(&b, 1); /* a list with a failure */
    wire_put_bytes(&b, "x", 1);
    ck_assert_int_eq(ipcproxy_parse_reloaded(b.p, b.len, &r), -1);
    buf_reset(&b);
    wire_put64(&b, 5);
    wire_put32(&b, 1);
    wire_put_bytes(&b, "", 0);
    wire_put32(&b, 1);
    wire_put_bytes(&b, "a\0b", 3); /* a NUL in a name */
    ck_assert_int_eq(ipcproxy_parse_reloaded(b.p, b.len, &r), -1);
    buf_reset(&b);
    wire_put64(&b, 5);
    wire_put32(&b, 2); /* ok is 0 or 1 */
    wire_put_bytes(&b, "", 0);
    wire_put32(&b, 0);
    ck_assert_int_eq(ipcproxy_parse_reloaded(b.p, b.len, &r), -1);
    buf_free(&b);
}
END_TEST

static Suite *
ipcproxy_suite(void)
{
    Suite *s = suite_create("ipcproxy");
    TCase *tc = tcase_create("ipcproxy");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_submit_observe_stats);
    tcase_add_test(tc, test_pressure);
    tcase_add_test(tc, test_terminate_keeps_spool);
    tcase_add_test(tc, test_terminate_then_close_later);
    tcase_add_test(tc, test_queue_control);
    tcase_add_test(tc, test_notify);
    tcase_add_test(tc, test_hello_version_mismatch);
    tcase_add_test(tc, test_signal_passed_on);
    tcase_add_test(tc, test_signal_other_refused);
    tcase_add_test(tc, test_reload_holds_and_maps);
    tcase_add_test(tc, test_reload_fails_keeps_list);
    tcase_add_test(tc, test_reload_then_terminate);
    tcase_add_test(tc, test_reload_gone);
    tcase_add_test(tc, test_parse_reloaded);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(ipcproxy_suite());
}
