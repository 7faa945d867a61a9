/*
 * Unit tests: what a started server (no inputs, an alert store) answers
 * without a socket: the JSON requests of the control socket
 * (control_request_json: every command, and the errors of bad JSON, no or
 * an unknown command, bad ids and matchers), the status page, an alert's
 * own page and the status JSON (agent/status), and /metrics (server.c's
 * table: the families of what is not configured are left out).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/conf/conf.h"
#include "agent/web/control.h"
#include "agent/core/server.h"
#include "agent/web/status.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

#define RULES                                                                                      \
    "<?xml version='1.0'?>\n<patterndb version='5' pub_date='2026-01-01'>\n"                       \
    "<ruleset name='t' id='t'><patterns><pattern>t</pattern></patterns><rules>\n"                  \
    "<rule provider='t' id='t.hello' class='system'><patterns><pattern>hello</pattern>"            \
    "</patterns></rule>\n</rules></ruleset></patterndb>\n"

static uv_loop_t loop;
static struct server *srv;
static struct status *st;

static void
on_shutdown(void *arg)
{
    *(bool *)arg = true;
}

static void
setup(void)
{
    char file[512], rules[512];
    struct buf text = BUF_INIT, err = BUF_INIT;
    struct conf *c;

    ck_assert_ptr_nonnull(ul_workdir_new("control"));
    snprintf(rules, sizeof(rules), "%s", ul_wpath("rules.xml"));
    ul_write_file(rules, RULES);
    snprintf(file, sizeof(file), "%s", ul_wpath("corrald.conf"));
    buf_printf(&text,
               "<corrald>\n<rules path=\"%s\"/>\n<alerts max-alerts=\"10\"/>\n"
               "<executors><exec name=\"x\" program=\"/bin/true\"/></executors>\n"
               "<routes><route tag=\"corral.alert\" to=\"x\"/></routes>\n</corrald>\n",
               rules);
    ul_write_file(file, buf_str(&text));
    c = conf_load(file, NULL, &err); /* the built-in schema */
    ck_assert_msg(c != NULL, "%s", buf_str(&err));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    srv = server_new(&loop);
    ck_assert_msg(server_start(srv, c, &err) == 0, "%s", buf_str(&err));
    st = status_new(&loop, srv);
    buf_free(&text);
    buf_free(&err);
}

static void
teardown(void)
{
    bool done = false;

    status_free(st);
    server_shutdown(srv, on_shutdown, &done);
    ck_assert(ul_run_until(&loop, ul_flag_set, &done, 60));
    server_free(srv);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    ul_workdir_remove();
}

/* The answer to a request, parsed; its status must be want ("success" or "error"). */
static json_t *
ask(const char *req, const char *want)
{
    struct buf out = BUF_INIT;
    json_t *j;

    control_request_json(srv, req, strlen(req), &out);
    j = json_loads(buf_str(&out), 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", buf_str(&out));
    ck_assert_msg(strcmp(json_string_value(json_object_get(j, "status")), want) == 0,
                  "%s: want %s, got %s", req, want, buf_str(&out));
    buf_free(&out);
    return j;
}

/* The error a request is answered with contains what. */
static void
refused(const char *req, const char *what)
{
    json_t *j = ask(req, "error");
    const char *e = json_string_value(json_object_get(j, "error"));

    ck_assert_msg(e && strstr(e, what), "%s: want an error with %s, got %s", req, what, e);
    json_decref(j);
}

START_TEST(test_errors)
{
    refused("{not json", "bad JSON");
    refused("{}", "\"command\" expected");
    refused("{\"command\":\"flush\"}", "unknown command \"flush\"");
    refused("{\"command\":\"alerts\",\"id\":5}", "id: a string expected");
    refused("{\"command\":\"alerts\",\"matchers\":\"HOST=a\"}", "matchers: an array of strings");
    refused("{\"command\":\"alerts\",\"matchers\":[5]}", "matchers: an array of strings");
    refused("{\"command\":\"silence-list\",\"matchers\":[\"=~(\"]}", "");
    refused("{\"command\":\"alerts-resolve\",\"ids\":\"x\"}", "ids: an array of alert ids");
    refused("{\"command\":\"alerts-resolve\",\"ids\":[]}", "ids: an array of alert ids");
    refused("{\"command\":\"alerts-resolve\",\"ids\":[\"a\",\"b\"]}",
            "a: no such alert, or resolved already; b: no such");
    refused("{\"command\":\"silence-expire\",\"ids\":[1]}", "ids: an array of silence ids");
    refused("{\"command\":\"silence-expire\",\"ids\":[\"nope\"]}", "nope");
    refused("{\"command\":\"silence-update\"}", "id: a silence id expected");
    refused("{\"command\":\"silence-add\",\"silence\":{}}", "");
    refused("{\"command\":\"alert-add\",\"alerts\":5}", "");
}
END_TEST

/* An alert added as POST /api/v2/alerts does, listed, silenced, resolved by hand. */
START_TEST(test_commands)
{
    json_t *j;
    char req[512], id[128];
    const char *sid;

    j = ask("{\"command\":\"alert-add\",\"alerts\":[{\"labels\":{\"alertname\":\"DiskFull\","
            "\"instance\":\"web1\",\"severity\":\"critical\"}}]}",
            "success");
    json_decref(j);
    j = ask("{\"command\":\"alerts\"}", "success");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "data")), 1);
    snprintf(
        id, sizeof(id), "%s",
        json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id")));
    json_decref(j);
    j = ask("{\"command\":\"alerts\",\"matchers\":[\"HOST=\\\"nowhere\\\"\"]}", "success");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "data")), 0);
    json_decref(j);

    /* a silence: added, listed, updated, expired */
    j = ask("{\"command\":\"silence-add\",\"silence\":{\"matchers\":[\"HOST=web1\"],"
            "\"duration\":\"1h\",\"comment\":\"c\"}}",
            "success");
    sid = json_string_value(json_object_get(json_object_get(j, "data"), "silenceID"));
    ck_assert_ptr_nonnull(sid);
    snprintf(req, sizeof(req),
             "{\"command\":\"silence-update\",\"id\":\"%s\",\"silence\":{\"comment\":\"d\"}}", sid);
    json_decref(ask(req, "success"));
    json_decref(ask("{\"command\":\"silence-query\",\"matchers\":[\"HOST=web1\"]}", "success"));
    json_decref(ask("{\"command\":\"silence-list\",\"expired\":true}", "success"));
    snprintf(req, sizeof(req), "{\"command\":\"silence-expire\",\"ids\":[\"%s\"]}", sid);
    json_decref(j);
    json_decref(ask(req, "success"));

    /* the status page, the alert's own page, the JSON */
    {
        struct buf out = BUF_INIT;
        const char *bad[] = {"=~("};
        struct status_query q = {bad, 1, NULL};
        json_t *sj;

        ck_assert_uint_eq(status_page(st, NULL, &out), 200);
        ck_assert_ptr_nonnull(strstr(buf_str(&out), "</html>"));
        buf_reset(&out);
        ck_assert_uint_eq(status_page(st, &q, &out), 400);
        buf_reset(&out);
        q.nfilters = 0;
        q.state = "bogus";
        ck_assert_uint_eq(status_page(st, &q, &out), 400);
        buf_reset(&out);
        ck_assert_uint_eq(status_alert_page(st, id, &out), 200);
        ck_assert_ptr_nonnull(strstr(buf_str(&out), "corral silence add"));
        buf_reset(&out);
        ck_assert_uint_eq(status_alert_page(st, "no/such<alert>", &out), 404);
        ck_assert_ptr_null(strstr(buf_str(&out), "<alert>"));
        sj = status_json(st);
        ck_assert_ptr_nonnull(sj);
        json_decref(sj);
        buf_free(&out);
    }

    snprintf(req, sizeof(req), "{\"command\":\"alerts-resolve\",\"ids\":[\"%s\"]}", id);
    json_decref(ask(req, "success"));
    refused(req, "resolved already");
}
END_TEST

/* Posted alerts that are not Alertmanager's postableAlerts: refused whole, with the reason. */
START_TEST(test_alert_add_refused)
{
    static const struct {
        const char *alerts, *why;
    } bad[] = {
        {"[5]", "alert 0: an object expected"},
        {"[{\"labels\":{}}]", "labels: a non-empty object expected"},
        {"[{\"labels\":[]}]", "labels: a non-empty object expected"},
        {"[{\"labels\":{\"a b\":\"x\"}}]", "labels: \"a b\" is not a label name"},
        {"[{\"labels\":{\"a\":5}}]", "labels: a: a string expected"},
        {"[{\"labels\":{\"TAGS\":\"x\"}}]", "labels: TAGS is corrald's own"},
        {"[{\"labels\":{\"a\":\"x\"},\"annotations\":5}]", "annotations: an object expected"},
        {"[{\"labels\":{\"a\":\"x\"},\"annotations\":{\"b\":1}}]", "annotations: b: a string"},
        {"[{\"labels\":{\"a\":\"x\"},\"generatorURL\":5}]", "generatorURL: a string expected"},
        {"[{\"labels\":{\"a\":\"x\"},\"startsAt\":\"yesterday\"}]", "startsAt: an RFC 3339 time"},
        {"[{\"labels\":{\"a\":\"x\"},\"endsAt\":5}]", "endsAt: an RFC 3339 time"},
        /* one bad alert refuses the batch: the good one before it is not stored */
        {"[{\"labels\":{\"alertname\":\"Good\"}},{\"labels\":{}}]", "alert 1: labels"},
    };
    struct buf req = BUF_INIT;
    json_t *j;
    size_t i;
    int k;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        buf_reset(&req);
        buf_printf(&req, "{\"command\":\"alert-add\",\"alerts\":%s}", bad[i].alerts);
        refused(buf_str(&req), bad[i].why);
    }
    /* more labels than an alert may have */
    buf_reset(&req);
    buf_puts(&req, "{\"command\":\"alert-add\",\"alerts\":[{\"labels\":{\"l0\":\"v\"");
    for (k = 1; k <= 64; k++) buf_printf(&req, ",\"l%d\":\"v\"", k);
    buf_puts(&req, "}}]}");
    refused(buf_str(&req), "more than 64 labels");
    j = ask("{\"command\":\"alerts\"}", "success");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "data")), 0);
    json_decref(j);
    buf_free(&req);
}
END_TEST

/* Silences that cannot be: refused with the reason; a matcher object's value kept as it was. */
START_TEST(test_silence_add_refused)
{
    static const struct {
        const char *silence, *why;
    } bad[] = {
        {"5", "a JSON object expected"},
        {"{\"matchers\":[],\"duration\":\"1h\"}", "matchers: a non-empty array expected"},
        {"{\"matchers\":[5],\"duration\":\"1h\"}", "a matcher is a string"},
        {"{\"matchers\":[{\"name\":\"a\"}],\"duration\":\"1h\"}", "needs a name and a value"},
        {"{\"matchers\":[{\"name\":\"\",\"value\":\"x\"}],\"duration\":\"1h\"}",
         "a matcher object needs a name"},
        {"{\"matchers\":[\"a=x\"],\"startsAt\":\"soon\",\"duration\":\"1h\"}", "startsAt: seconds"},
        {"{\"matchers\":[\"a=x\"],\"endsAt\":\"later\"}", "endsAt: seconds since the epoch"},
        {"{\"matchers\":[\"a=x\"]}", "endsAt or duration expected"},
        {"{\"matchers\":[\"a=x\"],\"duration\":\"1h\",\"createdBy\":5}", "createdBy: a string"},
        {"{\"matchers\":[\"a=x\"],\"duration\":\"1h\",\"comment\":[]}", "comment: a string"},
    };
    struct buf req = BUF_INIT;
    json_t *j, *m;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        buf_reset(&req);
        buf_printf(&req, "{\"command\":\"silence-add\",\"silence\":%s}", bad[i].silence);
        refused(buf_str(&req), bad[i].why);
    }
    /* Alertmanager's matcher objects, = != =~ !~: a quote and a backslash in a value stay
     * what they were */
    json_decref(
        ask("{\"command\":\"silence-add\",\"silence\":{\"matchers\":["
            "{\"name\":\"alertname\",\"value\":\"Disk\",\"isRegex\":false,\"isEqual\":true},"
            "{\"name\":\"HOST\",\"value\":\"we\\\"b\\\\1\",\"isEqual\":false},"
            "{\"name\":\"job\",\"value\":\"a.*\",\"isRegex\":true,\"isEqual\":false},"
            "{\"name\":\"env\",\"value\":\"p.*\",\"isRegex\":true}],\"duration\":\"1h\"}}",
            "success"));
    j = ask("{\"command\":\"silence-list\"}", "success");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "data")), 1);
    m = json_object_get(json_array_get(json_object_get(j, "data"), 0), "matchers");
    ck_assert_uint_eq(json_array_size(m), 4);
    for (i = 0; i < 4; i++) {
        static const char *const name[] = {"alertname", "HOST", "job", "env"};
        static const char *const value[] = {"Disk", "we\"b\\1", "a.*", "p.*"};
        static const bool re[] = {false, false, true, true}, eq[] = {true, false, false, true};
        json_t *one = json_array_get(m, i);
        ck_assert_str_eq(json_string_value(json_object_get(one, "name")), name[i]);
        ck_assert_str_eq(json_string_value(json_object_get(one, "value")), value[i]);
        ck_assert_int_eq(json_is_true(json_object_get(one, "isRegex")), re[i]);
        ck_assert_int_eq(json_is_true(json_object_get(one, "isEqual")), eq[i]);
    }
    json_decref(j);
    buf_free(&req);
}
END_TEST

/* ---- the socket ---- */

static int
client(const char *path)
{
    struct sockaddr_un su;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    memset(&su, 0, sizeof(su));
    su.sun_family = AF_UNIX;
    snprintf(su.sun_path, sizeof(su.sun_path), "%s", path);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&su, sizeof(su)), 0);
    return fd;
}

/* Runs the loop until fd's answer has ended (the server closes); the answer. */
static char *
answer_of(int fd)
{
    struct buf b = BUF_INIT;
    double end = ul_now() + 30;
    char chunk[4096];
    ssize_t n = -1;
    char *s;

    while (ul_now() < end) {
        uv_run(&loop, UV_RUN_NOWAIT);
        n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n > 0) buf_append(&b, chunk, (size_t)n);
        if (n == 0) break;
        if (n < 0) usleep(1000);
    }
    ck_assert_msg(n == 0, "no end of the answer");
    s = strdup(buf_str(&b));
    buf_free(&b);
    close(fd);
    return s;
}

static void
no_reload(void *arg, control_reload_done done, void *conn)
{
    (void)arg;
    done(conn, -1, "not here\n");
}

/* Runs the loop until the evicted counter reaches want. */
static bool
evicted(void *arg)
{
    return server_endpoint_stats(srv, SERVER_EP_CONTROL)->evicted >= *(uint64_t *)arg;
}

/*
 * Words and ends of requests on the socket: a request ended by the end of
 * the connection instead of a newline, an unknown word, reload, a
 * connection that says nothing; the ninth connection closes the oldest.
 */
START_TEST(test_socket)
{
    struct buf err = BUF_INIT;
    struct control *ctl;
    char path[300], *a;
    int fd, idle[CONTROL_MAX_CONNS + 1], i;
    uint64_t want = 1;

    snprintf(path, sizeof(path), "%s/nodir/c.sock", ul_wpath(""));
    ck_assert_ptr_null(control_open(&loop, path, (gid_t)-1, 0600, srv, no_reload, NULL, &err));
    ck_assert_msg(strstr(buf_str(&err), "control socket ") && strstr(buf_str(&err), "c.sock: "),
                  "%s", buf_str(&err));
    snprintf(path, sizeof(path), "%s", ul_wpath("c.sock"));
    buf_reset(&err);
    ctl = control_open(&loop, path, (gid_t)-1, 0600, srv, no_reload, NULL, &err);
    ck_assert_msg(ctl != NULL, "%s", buf_str(&err));

    fd = client(path);
    ck_assert_int_eq(write(fd, "stats", 5), 5);
    shutdown(fd, SHUT_WR); /* no newline: the end of the connection ends the request */
    a = answer_of(fd);
    ck_assert_msg(strstr(a, "# TYPE corral_rules gauge"), "%s", a);
    free(a);
    fd = client(path);
    ck_assert_int_eq(write(fd, "flush\n", 6), 6);
    a = answer_of(fd);
    ck_assert_str_eq(a,
                     "unknown command 'flush' (stats, contexts, cluster, reload, save, queue)\n");
    free(a);
    fd = client(path);
    ck_assert_int_eq(write(fd, "reload\n", 7), 7);
    a = answer_of(fd);
    ck_assert_str_eq(a, "not here\nFAILED\n");
    free(a);
    fd = client(path);
    ck_assert_int_eq(write(fd, "contexts\n", 9), 9);
    a = answer_of(fd);
    ck_assert_str_eq(a, "[]\n");
    free(a);
    fd = client(path);
    shutdown(fd, SHUT_WR); /* nothing said: closed without an answer */
    a = answer_of(fd);
    ck_assert_str_eq(a, "");
    free(a);

    /* CONTROL_MAX_CONNS idle connections, then one more: the oldest is closed */
    for (i = 0; i <= CONTROL_MAX_CONNS; i++) {
        idle[i] = client(path);
        if (i < CONTROL_MAX_CONNS) continue;
        ck_assert(ul_run_until(&loop, evicted, &want, 30));
    }
    a = answer_of(idle[0]);
    ck_assert_str_eq(a, "");
    free(a);
    for (i = 1; i <= CONTROL_MAX_CONNS; i++) close(idle[i]);
    control_close(ctl);
    buf_free(&err);
}
END_TEST

/* /metrics of a server without privsep, absence or DNS cache: those are left out. */
START_TEST(test_metrics)
{
    struct buf out = BUF_INIT;
    const char *m;

    server_metrics(srv, &out);
    m = buf_str(&out);
    ck_assert_ptr_nonnull(strstr(m, "# HELP corral_rules Rules loaded.\n# TYPE corral_rules "
                                    "gauge\ncorral_rules 1\n"));
    ck_assert_ptr_nonnull(strstr(m, "\ncorral_dropped_total{reason=\"value_truncated\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(m, "\ncorral_alerts{state=\"firing\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(m, "\n# TYPE corral_silences_load_errors_total counter\n"));
    ck_assert_ptr_nonnull(strstr(m, "\ncorral_endpoint_timeouts_total{endpoint=\"stats\"} 0\n"));
    /* no rule opens contexts: the header, no series */
    ck_assert_ptr_nonnull(strstr(m, "# TYPE corral_rule_contexts_open gauge\n# HELP "));
    ck_assert_ptr_null(strstr(m, "corral_privsep_"));
    ck_assert_ptr_nonnull(strstr(m, "\ncorral_executor_submitted_total{executor=\"x\"} 0\n"));
    ck_assert_ptr_null(strstr(m, "corral_absence_"));
    ck_assert_ptr_null(strstr(m, "corral_dns_"));
    ck_assert_ptr_null(strstr(m, "corral_input_messages_total{"));
    buf_free(&out);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("control");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_commands);
    tcase_add_test(tc, test_alert_add_refused);
    tcase_add_test(tc, test_silence_add_refused);
    tcase_add_test(tc, test_socket);
    tcase_add_test(tc, test_metrics);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
