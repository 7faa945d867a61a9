/*
 * test_lifecycle: the alert lifecycle as one library (agent/liblifecycle.a:
 * the store, silences, inhibition, routing, absence), driven the way the
 * server drives it, on a clock the test advances: an alert fires and is
 * routed; a silence added after it fired silences it at once and, when it
 * ends, the alert is sent again; a host that goes quiet raises an absence
 * alert that inhibits the host's alerts already firing, and its return
 * releases them; an alert resolves by its clear and another by its resolve
 * timeout, each told once to the executors whose route says send-resolved.
 * The program links neither libuv nor the server (Makefile.am:
 * LIFECYCLE_LIBS), and the headers it includes must not pull libuv in.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/alerting/absence.h"
#include "agent/alerting/alerts.h"
#include "agent/conf/conf.h"
#include "agent/alerting/route.h"
#include "agent/alerting/silences.h"
#include "engine/clock.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "tests/unit/unit_run.h"

#ifdef UV_H
#error "the alert lifecycle's headers include libuv"
#endif

/* ---- the clock: moved by the test, never waited for ---- */

#define T0    1796400000000ULL /* 2026-12-04, wall */
#define MONO0 5000000ULL       /* since boot */

static uint64_t elapsed_ms;

static uint64_t
test_clock(clockid_t id)
{
    return (id == CLOCK_REALTIME ? T0 : MONO0) + elapsed_ms;
}

static void
advance(uint64_t ms)
{
    elapsed_ms += ms;
}

/* ---- a server in miniature: routes, then the store's alerts_admit and alerts_step ---- */

/* The executors, in the order route_new() numbers them. */
static const char *const executors[] = {"mail", "pager"};

/* What reached the executors, one line each, since the last expect(). */
static struct buf told = BUF_INIT;

struct world {
    struct conf conf;
    struct route_table *routes;
    struct alerts *alerts;
    struct silences *sil;
    struct absence *absence;
    size_t silences_active;
    size_t targets[2], ntargets;
};

static void
add_target(size_t index, void *arg)
{
    struct world *w = arg;

    ck_assert_uint_lt(w->ntargets, 2);
    w->targets[w->ntargets++] = index;
}

/* "EXECUTOR firing|resolved ALERT-ID[ by HOW]" */
static void
tell(struct world *w, const char *executor, const struct msg *m)
{
    struct buf id = BUF_INIT;
    const char *how;
    size_t len;

    alerts_id(w->alerts, m, &id);
    buf_printf(&told, "%s %s %s", executor, alerts_is_clear(m) ? "resolved" : "firing",
               buf_str(&id));
    if ((how = msg_get(m, nv_intern_str("corral.resolved_by"), &len)))
        buf_printf(&told, " by %.*s", (int)len, how);
    buf_puts(&told, "\n");
    buf_free(&id);
}

/* The store hands an alert to an executor: a resolution, or the end of its muting. */
static void
on_notify(void *arg, const char *executor, const struct msg *m)
{
    tell(arg, executor, m);
}

/*
 * A generated message, as the server's to_executors takes it: routed, then
 * admitted by the store (alerts_admit), sent to what it returns.
 */
static void
deliver(struct world *w, const struct msg *m)
{
    struct alert_target at[2];
    struct buf id = BUF_INIT;
    size_t i, n;

    w->ntargets = 0;
    route_message(w->routes, m, NULL, add_target, w);
    for (i = 0; i < w->ntargets; i++) {
        at[i].name = executors[w->targets[i]];
        at[i].send_resolved = route_sends_resolved(w->routes, w->targets[i]);
    }
    n = alerts_admit(w->alerts, w->sil, m, at, w->ntargets, &id, clock_wall_ms());
    ck_assert_uint_eq(alerts_get_stats(w->alerts)->unrecorded, 0);
    for (i = 0; i < n; i++) tell(w, executors[w->targets[i]], m);
    buf_free(&id);
}

/* The absence reports reach the executors as rule alerts do. */
static void
on_absence(void *arg, struct msg *m)
{
    deliver(arg, m);
}

/* The server's second tick: absence, silences, the store's timeouts, muting again. */
static void
tick(struct world *w)
{
    uint64_t now = clock_wall_ms();

    absence_tick(w->absence, clock_mono_ms());
    silences_tick(w->sil, now);
    alerts_step(w->alerts, w->sil, &w->silences_active, now);
}

/* A line from host arrives (absence watches every host). */
static void
line_from(struct world *w, const char *host)
{
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_MESSAGE, "hello", 5);
    absence_seen(w->absence, m, clock_mono_ms());
    msg_unref(m);
}

/* Rule `rule` of class `class` raises an alert for host now (clear: its clear). */
static void
fire(struct world *w, const char *class, const char *rule, const char *host, bool clear)
{
    struct msg *m = msg_new();
    uint64_t now = clock_wall_ms();
    struct msg_time t = {(int64_t)(now / 1000), (int32_t)(now % 1000) * 1000, 0};

    msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_CLASS, class, strlen(class));
    msg_set(m, NV_RULE_ID, rule, strlen(rule));
    msg_set_flags(m, MSG_F_GENERATED);
    msg_set_stamp(m, &t);
    msg_tag_set(m, tag_intern("corral.alert", 12));
    if (clear) msg_tag_set(m, tag_intern("corral.clear", 12));
    deliver(w, m);
    msg_unref(m);
}

/* Adds a silence as the API does (the server then mutes again at once). */
static void
silence(struct world *w, const char *json)
{
    json_error_t e;
    json_t *req = json_loads(json, 0, &e);
    struct buf id = BUF_INIT, err = BUF_INIT;

    ck_assert_msg(req != NULL, "%s", e.text);
    ck_assert_msg(silences_add_json(w->sil, req, clock_wall_ms(), &id, &err) == 0, "%s",
                  buf_str(&err));
    alerts_remute(w->alerts, w->sil, clock_wall_ms());
    json_decref(req);
    buf_free(&id);
    buf_free(&err);
}

/* The store's view of alert id: "firing", "silenced", "inhibited", "resolved" (or "absent"). */
static const char *
state(struct world *w, const char *id)
{
    static char text[32];
    json_t *j = alerts_to_json(w->alerts, NULL, id);

    ck_assert_ptr_nonnull(j);
    snprintf(text, sizeof(text), "%s",
             json_array_size(j) ? json_string_value(json_object_get(json_array_get(j, 0), "state"))
                                : "absent");
    json_decref(j);
    return text;
}

/* What reached the executors since the last call is exactly `lines`. */
#define expect(lines)                                                                              \
    do {                                                                                           \
        ck_assert_str_eq(buf_str(&told), lines);                                                   \
        buf_reset(&told);                                                                          \
    } while (0)

/*
 * The configuration of the story: auth alerts to mail (send-resolved),
 * absence alerts to the pager; a host reported absent inhibits its other
 * alerts (corrald.conf(5)'s example); hosts quiet for a minute are
 * reported; an alert not raised again for an hour resolves.
 */
static char *to_mail[] = {"mail"}, *to_pager[] = {"pager"}, *equal_host[] = {"HOST"};
static struct conf_route routes[] = {
    {.to = to_mail,
     .nto = 1,
     .class = "auth",
     .messages = CONF_SELECT_GENERATED,
     .send_resolved = 1,
     .line = 10},
    {.to = to_pager,
     .nto = 1,
     .class = "absence",
     .messages = CONF_SELECT_GENERATED,
     .send_resolved = -1,
     .line = 11},
};
static struct conf_inhibit inhibits[] = {
    {.source = "rule_id=corral.absence.down",
     .target = "class!=absence",
     .equal = equal_host,
     .nequal = 1,
     .line = 12},
};
static struct conf_absence absences[] = {{.after = 60, .line = 13}};

static void
world_init(struct world *w)
{
    struct buf err = BUF_INIT;

    elapsed_ms = 0;
    clock_set_source(test_clock);
    buf_reset(&told);
    memset(w, 0, sizeof(*w));
    w->conf.file = "corrald.conf";
    w->conf.routes = routes;
    w->conf.nroutes = 2;
    w->conf.inhibits = inhibits;
    w->conf.ninhibits = 1;
    w->conf.max_alerts = 100;
    w->conf.resolve_timeout = 3600;
    w->routes = route_new(&w->conf, executors, 2, &err);
    ck_assert_msg(w->routes != NULL, "%s", buf_str(&err));
    w->alerts = alerts_new(&w->conf, &err);
    ck_assert_msg(w->alerts != NULL, "%s", buf_str(&err));
    alerts_set_notify(w->alerts, on_notify, w);
    w->sil = silences_new(NULL, 3600, 100, clock_wall_ms());
    w->absence = absence_new(absences, 1, 100, clock_mono_ms(), on_absence, w);
    absence_wall_clock(w->absence, clock_mono_to_wall);
    buf_free(&err);
}

static void
world_free(struct world *w)
{
    absence_free(w->absence);
    silences_free(w->sil);
    alerts_free(w->alerts);
    route_free(w->routes);
    buf_free(&told);
    clock_set_source(NULL);
}

START_TEST(test_fire_silence_inhibit_resolve)
{
    struct world w;

    world_init(&w);
    /* fired and routed: auth alerts to mail; nothing reaches the pager */
    fire(&w, "auth", "brute", "web1", false);
    fire(&w, "auth", "brute", "web2", false);
    expect("mail firing brute/web1\nmail firing brute/web2\n");
    ck_assert_str_eq(state(&w, "brute/web1"), "firing");

    /* a silence added after it fired acts on it at once; again, it reaches nobody */
    advance(1000);
    silence(&w, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"10m\", \"createdBy\":\"ops\"}");
    ck_assert_str_eq(state(&w, "brute/web1"), "silenced");
    ck_assert_str_eq(state(&w, "brute/web2"), "firing");
    fire(&w, "auth", "brute", "web1", false);
    expect("");
    ck_assert_uint_eq(alerts_get_stats(w.alerts)->silenced, 1);
    /* the silence ends: the alert, still firing, is sent again */
    advance(10 * 60 * 1000 - 1);
    tick(&w);
    expect("");
    ck_assert_str_eq(state(&w, "brute/web1"), "silenced");
    advance(1);
    tick(&w);
    ck_assert_str_eq(state(&w, "brute/web1"), "firing");
    expect("mail firing brute/web1\n");

    /* web1 goes quiet for a minute: reported to the pager, and its alert held back */
    line_from(&w, "web1");
    advance(60 * 1000 - 1);
    tick(&w);
    expect("");
    advance(1);
    tick(&w);
    expect("pager firing corral.absence/web1\n");
    ck_assert_str_eq(state(&w, "brute/web1"), "inhibited");
    ck_assert_str_eq(state(&w, "brute/web2"), "firing");
    fire(&w, "auth", "brute", "web2", false);
    expect("mail firing brute/web2\n");
    /* web1 sends again: the absence resolves (its clear to the pager), the alert is released */
    advance(30 * 1000);
    line_from(&w, "web1");
    expect("mail firing brute/web1\npager resolved corral.absence/web1\n");
    ck_assert_str_eq(state(&w, "corral.absence/web1"), "resolved");
    ck_assert_str_eq(state(&w, "brute/web1"), "firing");

    /* resolved by its clear: mail, routed the clear itself, is not told a second time */
    advance(1000);
    fire(&w, "auth", "brute", "web1", true);
    expect("mail resolved brute/web1\n");
    ck_assert_str_eq(state(&w, "brute/web1"), "resolved");
    ck_assert_uint_eq(alerts_get_stats(w.alerts)->resolved_clear, 2); /* and the absence */

    /* web2, not raised again for the resolve timeout (an hour), resolves; told once */
    fire(&w, "auth", "brute", "web2", false);
    expect("mail firing brute/web2\n");
    advance(3600 * 1000 - 1);
    tick(&w);
    ck_assert_str_eq(state(&w, "brute/web2"), "firing");
    expect("pager firing corral.absence/web1\n"); /* web1 quiet again meanwhile */
    advance(1);
    tick(&w);
    ck_assert_str_eq(state(&w, "brute/web2"), "resolved");
    expect("mail resolved brute/web2 by timeout\n");
    ck_assert_uint_eq(alerts_get_stats(w.alerts)->resolved_timeout, 1);
    advance(1000);
    tick(&w);
    expect("");
    world_free(&w);
}
END_TEST

static Suite *
lifecycle_suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_fire_silence_inhibit_resolve);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(lifecycle_suite());
}
