/*
 * Unit tests: Sigma correlation rules (engine/sigma): the examples of the
 * Sigma correlation rules specification v2.1 with the results it states
 * (event_count, value_count, temporal, temporal_ordered, value_sum,
 * value_avg, value_percentile, the chained
 * failed-logins-then-success example, field name aliases), sliding
 * windows, generate and level overrides, the bounds and the memory
 * budget against floods of spoofed group-by values, and refusals with
 * file:line.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/corr.h"
#include "engine/sigma.h"
#include "tests/unit/unit_run.h"

static const char mapping[] = "logsources:\n"
                              "  - product: windows\n"
                              "    service: security\n"
                              "  - product: linux\n"
                              "fields:\n"
                              "  EventID: EventID\n"
                              "  User: User\n"
                              "  ComputerName: ComputerName\n"
                              "  WorkstationName: WorkstationName\n"
                              "  cmd: cmd\n"
                              "  http.response.status_code: status\n"
                              "  event.type: etype\n"
                              "  source.ip: sip\n"
                              "  destination.ip: dip\n"
                              "  SourceIP: SourceIP\n"
                              "  bytes_sent: bytes_sent\n"
                              "  BytesOut: BytesOut\n"
                              "  Image: Image\n";

static struct sigma *
load(const char *rules)
{
    struct sigma *s = sigma_new();

    ck_assert_int_eq(sigma_load_mapping_memory(s, "map.yml", mapping, strlen(mapping)), 0);
    ck_assert_int_eq(sigma_load_memory(s, "rules.yml", rules, strlen(rules)), 0);
    return s;
}

static void
assert_loaded(const struct sigma *s, size_t nrules, size_t ncorr)
{
    ck_assert_msg(sigma_nrefused(s) == 0, "refused: %s:%d: %s",
                  sigma_ndiags(s) ? sigma_diag_at(s, 0)->file : "",
                  sigma_ndiags(s) ? sigma_diag_at(s, 0)->line : 0,
                  sigma_ndiags(s) ? sigma_diag_at(s, 0)->text : "");
    ck_assert_uint_eq(sigma_nrules(s), nrules);
    ck_assert_uint_eq(sigma_ncorrelations(s), ncorr);
}

/* The alerts reported: their rule ids, and the last alerts made. */
struct got {
    char ids[4096];
    struct msg *last;
    struct sigma_scratch *sc;
    const struct msg *m;
};

static void
note(void *arg, const struct sigma_rule *r)
{
    struct got *g = arg;
    size_t n = strlen(g->ids);

    snprintf(g->ids + n, sizeof(g->ids) - n, "%s%s", n ? " " : "", r->id);
    if (g->last) msg_unref(g->last);
    g->last = sigma_alert_fired(r, g->m, g->sc);
}

/* Feeds one event at time t (seconds) of "name=value" pairs to s. */
static void
ev(const struct sigma *s, struct got *g, unsigned t, const char *first, ...)
{
    struct msg *m = msg_new();
    const char *kv;
    va_list ap;

    msg_set(m, NV_HOST, "h1", 2);
    msg_set(m, NV_PROGRAM, "x", 1);
    va_start(ap, first);
    for (kv = first; kv; kv = va_arg(ap, const char *)) {
        const char *eq = strchr(kv, '=');
        msg_set(m, nv_intern(kv, (size_t)(eq - kv)), eq + 1, strlen(eq + 1));
    }
    va_end(ap);
    sigma_scratch_set_time(g->sc, (uint64_t)t * 1000);
    g->m = m;
    sigma_match(s, m, g->sc, note, g);
    g->m = NULL;
    msg_unref(m);
}

static void
got_init(struct got *g)
{
    memset(g, 0, sizeof(*g));
    g->sc = sigma_scratch_new();
}

static void
got_free(struct got *g)
{
    if (g->last) msg_unref(g->last);
    sigma_scratch_free(g->sc);
}

static void
assert_value(const struct msg *m, const char *name, const char *want)
{
    size_t n;
    const char *v = msg_get(m, nv_intern_str(name), &n);

    ck_assert_msg(v != NULL, "%s unset", name);
    ck_assert_msg(n == strlen(want) && memcmp(v, want, n) == 0, "%s = %.*s, not %s", name, (int)n,
                  v, want);
}

#define FAILED_LOGIN                                                                               \
    "title: Single failed login\nid: 5638f7c0-ac70-491d-8465-2a65075e0d86\nname: failed_login\n"   \
    "logsource:\n  product: windows\n  service: security\n"                                        \
    "detection:\n  selection:\n    EventID:\n      - 529\n      - 4625\n  condition: selection\n"

/* Specification, event_count: more than or equal 100 failed logins to a host in an hour. */
START_TEST(test_event_count)
{
    struct sigma *s = load("title: Many failed logins\nid: 0e95725d-7320-415d-80f7-004da920fc11\n"
                           "level: high\n"
                           "correlation:\n    type: event_count\n    rules:\n"
                           "        - 5638f7c0-ac70-491d-8465-2a65075e0d86\n"
                           "    group-by:\n        - ComputerName\n    timespan: 1h\n"
                           "    condition:\n        gte: 100\n---\n" FAILED_LOGIN);
    struct got g;
    unsigned i;

    assert_loaded(s, 1, 1);
    got_init(&g);
    /* 99 on host a in the hour, and 99 on host b: nothing; the detection rule alone is quiet */
    for (i = 0; i < 99; i++) {
        ev(s, &g, 10 + i, "EventID=4625", "ComputerName=a", NULL);
        ev(s, &g, 10 + i, "EventID=529", "ComputerName=b", NULL);
    }
    ck_assert_str_eq(g.ids, "");
    /* the 100th on a within the hour fires, once, for a */
    ev(s, &g, 3000, "EventID=4625", "ComputerName=a", NULL);
    ck_assert_str_eq(g.ids, "0e95725d-7320-415d-80f7-004da920fc11");
    assert_value(g.last, "corral.summary", "Many failed logins");
    assert_value(g.last, "corral.severity", "major");
    assert_value(g.last, "sigma.level", "high");
    assert_value(g.last, "ComputerName", "a");
    assert_value(g.last, "HOST", "h1");
    assert_value(g.last, "corral.alert_id", "sigma/0e95725d-7320-415d-80f7-004da920fc11/a");
    /* sliding: b's first events leave the window an hour later; 100 in no hour: nothing */
    g.ids[0] = 0;
    ev(s, &g, 3610 + 10, "EventID=529", "ComputerName=b", NULL);
    ck_assert_str_eq(g.ids, "");
    /* a started afresh after firing: 99 more do not fire */
    for (i = 0; i < 99; i++) ev(s, &g, 3001, "EventID=4625", "ComputerName=a", NULL);
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 3002, "EventID=4625", "ComputerName=a", NULL);
    ck_assert_str_eq(g.ids, "0e95725d-7320-415d-80f7-004da920fc11");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* Specification, value_count: 100 different users per source and destination in a day. */
START_TEST(test_value_count)
{
    struct sigma *s = load(FAILED_LOGIN "---\ntitle: Failed login\n"
                                        "id: 0e95725d-7320-415d-80f7-004da920fc12\n"
                                        "correlation:\n    type: value_count\n    rules:\n"
                                        "        - 5638f7c0-ac70-491d-8465-2a65075e0d86\n"
                                        "    group-by:\n        - ComputerName\n"
                                        "        - WorkstationName\n    timespan: 1d\n"
                                        "    condition:\n        field: User\n        gte: 100\n");
    struct got g;
    char user[32];
    unsigned i;

    assert_loaded(s, 1, 1);
    got_init(&g);
    for (i = 0; i < 99; i++) {
        snprintf(user, sizeof(user), "User=u%u", i);
        ev(s, &g, 100 + i, "EventID=4625", "ComputerName=c", "WorkstationName=w", user, NULL);
        /* the same user again, another workstation, no user: not a new value of the group */
        ev(s, &g, 100 + i, "EventID=4625", "ComputerName=c", "WorkstationName=w", "User=u0", NULL);
        ev(s, &g, 100 + i, "EventID=4625", "ComputerName=c", "WorkstationName=v", user, NULL);
        ev(s, &g, 100 + i, "EventID=4625", "ComputerName=c", "WorkstationName=w", NULL);
    }
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 80000, "EventID=4625", "ComputerName=c", "WorkstationName=w", "User=u99", NULL);
    ck_assert_str_eq(g.ids, "0e95725d-7320-415d-80f7-004da920fc12");
    assert_value(g.last, "ComputerName", "c");
    assert_value(g.last, "WorkstationName", "w");
    assert_value(g.last, "corral.alert_id", "sigma/0e95725d-7320-415d-80f7-004da920fc12/c/w");
    got_free(&g);
    sigma_free(s);
}
END_TEST

#define RECON(n, c)                                                                                \
    "---\ntitle: recon " n "\nid: recon-" n "\nname: recon_cmd_" n "\nlogsource:\n"                \
    "  product: linux\ndetection:\n  sel:\n    cmd: " c "\n  condition: sel\n"

static const char temporal[] =
    "title: Recon\nid: recon\ncorrelation:\n    type: temporal\n"
    "    rules:\n        - recon_cmd_a\n        - recon_cmd_b\n"
    "        - recon_cmd_c\n    group-by:\n        - ComputerName\n"
    "        - User\n    timespan: 5m\n" RECON("a", "whoami") RECON("b", "id") RECON("c", "uname");

/* Specification, temporal: three recon commands in any order within 5 minutes, same host and user.
 */
START_TEST(test_temporal)
{
    struct sigma *s = load(temporal);
    struct got g;

    assert_loaded(s, 3, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 10, "cmd=whoami", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 20, "cmd=id", "ComputerName=h", "User=v", NULL); /* another user */
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 299, "cmd=id", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, "recon");
    /* outside 5 minutes: uname at 400, whoami at 500, id at 701: not all three in 5m */
    g.ids[0] = 0;
    ev(s, &g, 400, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 500, "cmd=whoami", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 701, "cmd=id", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, "");
    /* uname again at 702: whoami (500), id (701), uname (702) are in 5m */
    ev(s, &g, 702, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, "recon");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* Specification, temporal_ordered: the same rules, in the order given only. */
START_TEST(test_temporal_ordered)
{
    struct sigma *s;
    struct got g;

    s = load("title: Recon\nid: recon\ncorrelation:\n    type: temporal_ordered\n"
             "    rules:\n        - recon_cmd_a\n        - recon_cmd_b\n"
             "        - recon_cmd_c\n    group-by:\n        - ComputerName\n"
             "        - User\n    timespan: 5m\n" RECON("a", "whoami") RECON("b", "id")
                 RECON("c", "uname"));
    assert_loaded(s, 3, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 1, "cmd=id", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 2, "cmd=whoami", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, ""); /* c, b, a: the wrong order */
    ev(s, &g, 3, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, ""); /* a, c: b missing between */
    ev(s, &g, 4, "cmd=id", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 5, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, "recon"); /* a (2), b (4), c (5) */
    g.ids[0] = 0;
    ev(s, &g, 10, "cmd=whoami", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 20, "cmd=id", "ComputerName=h", "User=u", NULL);
    ev(s, &g, 311, "cmd=uname", "ComputerName=h", "User=u", NULL);
    ck_assert_str_eq(g.ids, ""); /* in order but over 5 minutes */
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* Specification, "Failed Logins Followed by Successful Login": a chain in one multi-document file.
 */
static const char example[] =
    "title: Correlation - Multiple Failed Logins Followed by Successful Login\n"
    "id: b180ead8-d58f-40b2-ae54-c8940995b9b6\nstatus: experimental\n"
    "description: Detects multiple failed logins by a single user followed by a successful login\n"
    "references:\n    - https://reference.com\nauthor: Florian Roth (Nextron Systems)\n"
    "date: 2023-06-16\ncorrelation:\n    type: temporal_ordered\n    rules:\n"
    "        - multiple_failed_login\n        - successful_login\n    group-by:\n"
    "        - User\n    timespan: 10m\nfalsepositives:\n    - Unlikely\nlevel: high\n"
    "---\ntitle: Multiple failed logons\nid: a8418a5a-5fc4-46b5-b23b-6c73beb19d41\n"
    "description: Detects multiple failed logins within a certain amount of time\n"
    "name: multiple_failed_login\ncorrelation:\n    type: event_count\n    rules:\n"
    "        - failed_login\n    group-by:\n        - User\n    timespan: 10m\n"
    "    condition:\n        gte: 10\n"
    "---\n" FAILED_LOGIN "---\ntitle: Successful login\nid: 4d0a2c83-c62c-4ed4-b475-c7e23a9269b8\n"
    "description: Detects a successful login\nname: successful_login\nlogsource:\n"
    "    product: windows\n    service: security\ndetection:\n    selection:\n        EventID:\n"
    "            - 528\n            - 4624\n    condition: selection\n";

START_TEST(test_spec_example)
{
    struct sigma *s = load(example);
    struct got g;
    unsigned i;

    nv_handle key[SIGMA_KEY_MAX];

    assert_loaded(s, 2, 2);
    /* both group by User: messages may be sharded by it */
    ck_assert_int_eq(sigma_correlation_key(s, key), 1);
    ck_assert_uint_eq(key[0], nv_intern_str("User"));
    got_init(&g);
    /* a success with no failures before, 9 failures then success: no alert */
    ev(s, &g, 0, "EventID=4624", "User=bob", NULL);
    for (i = 0; i < 9; i++) ev(s, &g, 1 + i, "EventID=4625", "User=bob", NULL);
    ev(s, &g, 20, "EventID=528", "User=bob", NULL);
    ck_assert_str_eq(g.ids, "");
    /* the 10th failure (bob's count is at 10 in 10m) feeds the chain; alice's success does not
     * complete bob's */
    ev(s, &g, 30, "EventID=529", "User=bob", NULL);
    ck_assert_str_eq(g.ids, ""); /* multiple_failed_login is referred to: it does not alert */
    ev(s, &g, 40, "EventID=4624", "User=alice", NULL);
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 50, "EventID=4624", "User=bob", NULL);
    ck_assert_str_eq(g.ids, "b180ead8-d58f-40b2-ae54-c8940995b9b6");
    assert_value(g.last, "User", "bob");
    assert_value(g.last, "corral.severity", "major");
    assert_value(g.last, "corral.summary",
                 "Correlation - Multiple Failed Logins Followed by Successful Login");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* Specification, field name aliases: internal_ip, remote_ip read different fields per rule. */
START_TEST(test_aliases)
{
    struct sigma *s = load(
        "title: alias\nid: al\ncorrelation:\n    type: temporal\n    rules:\n"
        "        - internal_error\n        - new_network_connection\n    group-by:\n"
        "        - internal_ip\n        - remote_ip\n    timespan: 10s\n    aliases:\n"
        "        internal_ip:\n            internal_error: destination.ip\n"
        "            new_network_connection: source.ip\n        remote_ip:\n"
        "            internal_error: source.ip\n            new_network_connection: "
        "destination.ip\n"
        "---\ntitle: e\nname: internal_error\nlogsource:\n  product: linux\ndetection:\n"
        "    selection:\n        http.response.status_code: 500\n    condition: selection\n"
        "---\ntitle: n\nname: new_network_connection\nlogsource:\n  product: linux\ndetection:\n"
        "    selection:\n        event.type: connection\n    condition: selection\n");
    struct got g;

    nv_handle key[SIGMA_KEY_MAX];

    assert_loaded(s, 2, 1);
    /* the aliases read other fields for each rule: no one key */
    ck_assert_int_eq(sigma_correlation_key(s, key), -1);
    got_init(&g);
    ev(s, &g, 0, "status=500", "dip=10.0.0.1", "sip=192.0.2.9", NULL);
    /* the same addresses in the same fields: not the alias's pairing */
    ev(s, &g, 1, "etype=connection", "dip=10.0.0.1", "sip=192.0.2.9", NULL);
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 2, "etype=connection", "sip=10.0.0.1", "dip=192.0.2.9", NULL);
    ck_assert_str_eq(g.ids, "al");
    assert_value(g.last, "internal_ip", "10.0.0.1");
    assert_value(g.last, "remote_ip", "192.0.2.9");
    /* 11 seconds apart: outside 10s */
    g.ids[0] = 0;
    ev(s, &g, 20, "status=500", "dip=10.0.0.1", "sip=192.0.2.9", NULL);
    ev(s, &g, 31, "etype=connection", "sip=10.0.0.1", "dip=192.0.2.9", NULL);
    ck_assert_str_eq(g.ids, "");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* generate: true keeps the referred rule's own alerts; a condition range (gt and lte). */
START_TEST(test_generate_and_range)
{
    struct sigma *s = load(FAILED_LOGIN "---\ntitle: c\nid: c1\ngenerate: true\n"
                                        "correlation:\n  type: event_count\n  rules: failed_login\n"
                                        "  timespan: 1m\n  condition:\n    gt: 1\n    lte: 2\n");
    struct got g;

    assert_loaded(s, 1, 1);
    got_init(&g);
    ev(s, &g, 0, "EventID=4625", NULL);
    ck_assert_str_eq(g.ids, "5638f7c0-ac70-491d-8465-2a65075e0d86");
    ev(s, &g, 1, "EventID=4625", NULL);
    ck_assert_str_eq(g.ids, "5638f7c0-ac70-491d-8465-2a65075e0d86 "
                            "5638f7c0-ac70-491d-8465-2a65075e0d86 c1");
    assert_value(g.last, "corral.alert_id", "sigma/c1/");
    got_free(&g);
    sigma_free(s);
}
END_TEST

#define WEB                                                                                        \
    "---\ntitle: web\nid: website_access\nlogsource:\n  product: linux\ndetection:\n"              \
    "  sel:\n    cmd: GET\n  condition: sel\n"

/* Specification, value_sum: more than 1,000,000 bytes sent by one source and user in an hour. */
START_TEST(test_value_sum)
{
    struct sigma *s = load("title: Possible Exfiltration to Website\nid: exfil\ncorrelation:\n"
                           "    type: value_sum\n    rules:\n        - website_access\n"
                           "    group-by:\n        - SourceIP\n        - User\n    timespan: 1h\n"
                           "    condition:\n        field: bytes_sent\n        gt: 1000000\n" WEB);
    struct got g;

    assert_loaded(s, 1, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=GET", "SourceIP=10.0.0.1", "User=u", "bytes_sent=600000", NULL);
    ev(s, &g, 10, "cmd=GET", "SourceIP=10.0.0.2", "User=u", "bytes_sent=600000", NULL);
    ev(s, &g, 20, "cmd=GET", "SourceIP=10.0.0.1", "User=u", "bytes_sent=lots", NULL);
    ev(s, &g, 30, "cmd=GET", "SourceIP=10.0.0.1", "User=u", NULL);
    ck_assert_str_eq(g.ids, "");
    /* 600,000 + 400,000 is not more than 1,000,000; one more byte is */
    ev(s, &g, 40, "cmd=GET", "SourceIP=10.0.0.1", "User=u", "bytes_sent=400000", NULL);
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 3600, "cmd=GET", "SourceIP=10.0.0.1", "User=u", "bytes_sent=1", NULL);
    ck_assert_str_eq(g.ids, "exfil");
    /* the window slides: 10.0.0.2's 600,000 (time 10) is out of the hour at 3611 */
    g.ids[0] = 0;
    ev(s, &g, 3605, "cmd=GET", "SourceIP=10.0.0.2", "User=u", "bytes_sent=400001", NULL);
    ck_assert_str_eq(g.ids, "exfil");
    g.ids[0] = 0;
    ev(s, &g, 3611, "cmd=GET", "SourceIP=10.0.0.2", "User=u", "bytes_sent=600000", NULL);
    ev(s, &g, 7300, "cmd=GET", "SourceIP=10.0.0.2", "User=u", "bytes_sent=400001", NULL);
    ck_assert_str_eq(g.ids, "");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* Specification, value_avg: an average of more than 500 bytes out per source and user in 24h. */
START_TEST(test_value_avg)
{
    struct sigma *s = load("title: Suspicious average network traffic\nid: avg\ncorrelation:\n"
                           "    type: value_avg\n    rules:\n        - website_access\n"
                           "    group-by:\n        - SourceIP\n        - User\n    timespan: 24h\n"
                           "    condition:\n        field: BytesOut\n        gt: 500\n" WEB);
    struct got g;

    assert_loaded(s, 1, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=GET", "SourceIP=a", "User=u", "BytesOut=400", NULL);
    ev(s, &g, 1, "cmd=GET", "SourceIP=a", "User=u", "BytesOut=600", NULL);
    ck_assert_str_eq(g.ids, ""); /* 500 */
    ev(s, &g, 2, "cmd=GET", "SourceIP=a", "User=u", "BytesOut=503", NULL);
    ck_assert_str_eq(g.ids, "avg"); /* 501 */
    got_free(&g);
    sigma_free(s);
}
END_TEST

/*
 * Events at the same time take one slot: 100,000 within one second count
 * (beyond the 65,536 slots a group keeps) in a few hundred bytes, and an
 * average over slots of several events is that of the events.
 */
START_TEST(test_same_time)
{
    struct sigma *s = load(FAILED_LOGIN "---\ntitle: many\nid: many\ncorrelation:\n"
                                        "  type: event_count\n  rules: [failed_login]\n"
                                        "  group-by: [User]\n  timespan: 1m\n  condition:\n"
                                        "    gte: 100000\n");
    struct got g;
    unsigned i;

    assert_loaded(s, 1, 1);
    got_init(&g);
    for (i = 0; i < 99999; i++) ev(s, &g, 10, "EventID=4625", "User=root", NULL);
    ck_assert_str_eq(g.ids, "");
    ck_assert_uint_lt(sigma_scratch_bytes(g.sc), 1024);
    ev(s, &g, 10, "EventID=4625", "User=root", NULL);
    ck_assert_str_eq(g.ids, "many");
    got_free(&g);
    sigma_free(s);

    s = load("title: avg\nid: avg\ncorrelation:\n    type: value_avg\n    rules:\n"
             "        - website_access\n    group-by:\n        - SourceIP\n    timespan: 10s\n"
             "    condition:\n        field: BytesOut\n        gt: 500\n" WEB);
    got_init(&g);
    ev(s, &g, 0, "cmd=GET", "SourceIP=a", "BytesOut=100", NULL);
    ev(s, &g, 0, "cmd=GET", "SourceIP=a", "BytesOut=200", NULL);
    ev(s, &g, 5, "cmd=GET", "SourceIP=a", "BytesOut=900", NULL);
    ck_assert_str_eq(g.ids, ""); /* 400 */
    /* the slot of time 0 leaves with both its events: (900 + 110) / 2 */
    ev(s, &g, 11, "cmd=GET", "SourceIP=a", "BytesOut=110", NULL);
    ck_assert_str_eq(g.ids, "avg");
    got_free(&g);
    sigma_free(s);
}
END_TEST

#define PROC                                                                                       \
    "---\ntitle: proc\nid: process_creation\nlogsource:\n  product: linux\ndetection:\n"           \
    "  sel:\n    cmd: exec\n  condition: sel\n"
#define PCT(cond)                                                                                  \
    "title: A computer spawned a process name in the last 24h in less than 1% of all processes\n"  \
    "id: pct\ncorrelation:\n    type: value_percentile\n    rules:\n        - process_creation\n"  \
    "    group-by:\n        - ComputerName\n    timespan: 24h\n    condition:\n"                   \
    "        field: Image\n" cond "\n" PROC

/*
 * Specification, value_percentile: a process name that makes up at most 1% of
 * a computer's processes in 24h. The specification states no result for its
 * example; the share of the window's events with the event's value is the
 * figure compared (doc/corral-sigma.5).
 */
START_TEST(test_value_percentile)
{
    struct sigma *s = load(PCT("        lte: 1"));
    struct got g;
    unsigned i;

    assert_loaded(s, 1, 1);
    got_init(&g);
    for (i = 0; i < 99; i++) ev(s, &g, i, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    for (i = 0; i < 50; i++) ev(s, &g, i, "cmd=exec", "ComputerName=pc2", "Image=/bin/sh", NULL);
    ck_assert_str_eq(g.ids, ""); /* 100% each */
    ev(s, &g, 100, "cmd=exec", "ComputerName=pc2", "Image=/tmp/x", NULL);
    ck_assert_str_eq(g.ids, ""); /* 1 of 51: 1.96% */
    ev(s, &g, 100, "cmd=exec", "ComputerName=pc1", "Image=/tmp/x", NULL);
    ck_assert_str_eq(g.ids, "pct"); /* 1 of 100: 1% */
    assert_value(g.last, "ComputerName", "pc1");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* One value alone in its window is 100% of it; an event without the field is no event. */
START_TEST(test_value_percentile_one)
{
    struct sigma *s = load(PCT("        gte: 100"));
    struct got g;

    assert_loaded(s, 1, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=exec", "ComputerName=pc1", NULL);
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 1, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    ck_assert_str_eq(g.ids, "pct");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/* The window slides: values older than the timespan leave the shares. */
START_TEST(test_value_percentile_slides)
{
    struct sigma *s = load(PCT("        lte: 50"));
    struct got g;

    assert_loaded(s, 1, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    ev(s, &g, 1, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    ev(s, &g, 86500, "cmd=exec", "ComputerName=pc1", "Image=/tmp/x", NULL);
    ck_assert_str_eq(g.ids, ""); /* 1 of 1, not 1 of 3 */
    ev(s, &g, 86501, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    ck_assert_str_eq(g.ids, "pct"); /* 1 of 2, not 3 of 4 */
    ev(s, &g, 86502, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    ck_assert_str_eq(g.ids, "pct"); /* the group started afresh: 1 of 1 */
    got_free(&g);
    sigma_free(s);
}
END_TEST

/*
 * The bound: a group keeps its window's latest 65,536 events, so the share is
 * over them. /tmp/x, then 65,535 /bin/sh, then /tmp/x again: the first /tmp/x
 * has left, the share is 1 of 65,536 (0.0015%), not 2 of 65,537 (0.0031%).
 */
START_TEST(test_value_percentile_bound)
{
    struct sigma *s = load(PCT("        lte: 0.002\n        gt: 0"));
    struct got g;
    unsigned i;

    assert_loaded(s, 1, 1);
    got_init(&g);
    ev(s, &g, 0, "cmd=exec", "ComputerName=pc1", "Image=/tmp/x", NULL);
    for (i = 0; i < 65535; i++) ev(s, &g, 1, "cmd=exec", "ComputerName=pc1", "Image=/bin/sh", NULL);
    ck_assert_str_eq(g.ids, "");
    ev(s, &g, 2, "cmd=exec", "ComputerName=pc1", "Image=/tmp/x", NULL);
    ck_assert_str_eq(g.ids, "pct");
    got_free(&g);
    sigma_free(s);
}
END_TEST

/*
 * A flood of spoofed group-by values, one event each, more groups than any
 * fixed bound on their number held (100,000), in the timespan: the real
 * group that follows still gets its group and fires, once.
 */
START_TEST(test_flood_groups)
{
    struct sigma *s = load(FAILED_LOGIN "---\ntitle: five\nid: five\ncorrelation:\n"
                                        "  type: event_count\n  rules: [failed_login]\n"
                                        "  group-by: [User]\n  timespan: 1h\n  condition:\n"
                                        "    gte: 5\n");
    struct got g;
    char user[32];
    unsigned i;

    assert_loaded(s, 1, 1);
    got_init(&g);
    for (i = 0; i < 150000; i++) {
        snprintf(user, sizeof(user), "User=spoof%u", i);
        ev(s, &g, 10, "EventID=4625", user, NULL);
    }
    ck_assert_str_eq(g.ids, "");
    for (i = 0; i < 5; i++) ev(s, &g, 20 + i, "EventID=4625", "User=root", NULL);
    ck_assert_str_eq(g.ids, "five");
    assert_value(g.last, "User", "root");
    got_free(&g);
    sigma_free(s);
}
END_TEST

#define FLOOD_PROC                                                                                 \
    "title: proc\nid: proc\nname: proc\nlogsource:\n  product: windows\n  service: security\n"     \
    "detection:\n  selection:\n    cmd: exec\n  condition: selection\n"

/*
 * Within a small memory budget (a share of some 250 groups): a flood of
 * spoofed users under one correlation, the real user's events interleaved
 * (one in 150 lines), fires the real group exactly once and evicts
 * one-event groups of its own correlation only; the
 * memory held never exceeds the budget; another correlation's group, made
 * before the flood, is still there after it.
 */
START_TEST(test_memory_budget)
{
    struct sigma *s =
        load(FAILED_LOGIN "---\n" FLOOD_PROC "---\ntitle: five\nid: five\ncorrelation:\n"
                          "  type: event_count\n  rules: [failed_login]\n"
                          "  group-by: [User]\n  timespan: 1h\n  condition:\n"
                          "    gte: 5\n---\ntitle: twice\nid: twice\ncorrelation:\n"
                          "  type: event_count\n  rules: [proc]\n"
                          "  group-by: [ComputerName]\n  timespan: 1h\n  condition:\n"
                          "    gte: 2\n---\ntitle: users\nid: users\ncorrelation:\n"
                          "  type: value_count\n  rules: [failed_login]\n"
                          "  group-by: [ComputerName]\n  timespan: 1h\n  condition:\n"
                          "    field: User\n    gte: 1000000\n");
    const size_t budget = 3 * 64 * 1024;
    struct got g;
    char user[32], host[48];
    unsigned i, real = 0;

    assert_loaded(s, 2, 3);
    got_init(&g);
    sigma_scratch_set_memory(g.sc, budget);
    ev(s, &g, 5, "cmd=exec", "ComputerName=pc1", NULL);
    for (i = 0; i < 20000; i++) {
        snprintf(user, sizeof(user), "User=spoof%u", i);
        snprintf(host, sizeof(host), "ComputerName=spoofhost%u", i);
        ev(s, &g, 10 + i / 100, "EventID=4625", user, host, NULL);
        if (i % 3000 == 150 * real + 150 && real < 5) {
            ev(s, &g, 10 + i / 100, "EventID=4625", "User=root", NULL);
            real++;
        }
        ck_assert_uint_le(sigma_scratch_bytes(g.sc), budget);
    }
    ck_assert_uint_eq(real, 5);
    ck_assert_str_eq(g.ids, "five");
    assert_value(g.last, "User", "root");
    ck_assert_uint_gt(sigma_scratch_evicted(g.sc), 10000);
    ck_assert_uint_eq(sigma_scratch_dropped(g.sc), 0);
    /* the other correlation's group survived the flood: its second event fires it */
    g.ids[0] = 0;
    ev(s, &g, 300, "cmd=exec", "ComputerName=pc1", NULL);
    ck_assert_str_eq(g.ids, "twice");
    /* once the timespan has passed, the groups go */
    ev(s, &g, 10000, "cmd=other", NULL);
    ck_assert_uint_eq(sigma_scratch_groups(g.sc), 0);
    ck_assert_uint_eq(sigma_scratch_bytes(g.sc), 0);
    got_free(&g);
    sigma_free(s);
}
END_TEST

static unsigned ngenerated;

static void
count_generated(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    (void)arg, (void)m, (void)a;
    if (kind == CORR_GENERATED) ngenerated++;
}

static struct pdb *
db_with(const char *rules)
{
    struct pdb *db = pdb_new();

    pdb_set_sigma(db, load(rules));
    return db;
}

/* Through the correlation engine: alerts fire there; a reload starts the groups afresh. */
START_TEST(test_through_corr_and_reload)
{
    const char *rules = FAILED_LOGIN "---\ntitle: two\nid: two\ncorrelation:\n  type: event_count\n"
                                     "  rules: [failed_login]\n  timespan: 1h\n  condition:\n"
                                     "    gte: 2\n";
    struct pdb *db1 = db_with(rules), *db2 = db_with(rules);
    struct corr_opts o = {0};
    struct corr *c;
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, "h1", 2);
    msg_set(m, nv_intern_str("EventID"), "4625", 4);
    o.emit = count_generated;
    c = corr_new(db1, &o);
    corr_process(c, m);
    ck_assert_uint_eq(ngenerated, 0);
    corr_process(c, m);
    ck_assert_uint_eq(ngenerated, 1);
    corr_process(c, m);
    ck_assert_uint_eq(ngenerated, 1);
    /* one event counted before the reload: after it, one more does not fire */
    corr_set_db(c, db2, NULL, NULL);
    corr_process(c, m);
    ck_assert_uint_eq(ngenerated, 1);
    corr_process(c, m);
    ck_assert_uint_eq(ngenerated, 2);
    msg_unref(m);
    corr_free(c);
    pdb_free(db1);
    pdb_free(db2);
}
END_TEST

/* A refused correlation: file:line and the reason, and nothing of it loaded. */
static void
refused(const char *rules, int line, const char *why)
{
    struct sigma *s = load(rules);
    size_t i;
    bool found = false;

    ck_assert_uint_eq(sigma_ncorrelations(s), 0);
    for (i = 0; i < sigma_ndiags(s); i++)
        if (strstr(sigma_diag_at(s, i)->text, why)) {
            ck_assert_str_eq(sigma_diag_at(s, i)->file, "rules.yml");
            ck_assert_msg(sigma_diag_at(s, i)->line == line, "line %d, not %d: %s",
                          sigma_diag_at(s, i)->line, line, sigma_diag_at(s, i)->text);
            found = true;
        }
    ck_assert_msg(found, "no refusal '%s' (%s)", why,
                  sigma_ndiags(s) ? sigma_diag_at(s, 0)->text : "none");
    sigma_free(s);
}

#define CORR(body) "title: c\nid: c1\ncorrelation:\n" body

START_TEST(test_refusals)
{
    refused(CORR("  type: value_percentile\n  rules: [x]\n  timespan: 1h\n  condition:\n"
                 "    lte: 1\n"),
            4, "value_percentile needs a condition field");
    refused(CORR("  type: temporal\n  rules: [x]\n  rules: [y]\n  timespan: 1h\n"), 6,
            "rules given twice");
    refused(CORR("  type: value_sum\n  rules: [x]\n  timespan: 1h\n  condition:\n    gt: 1\n"), 4,
            "value_sum needs a condition field");
    refused(
        CORR("  type: event_count\n  rules: [nope]\n  timespan: 1h\n  condition:\n    gte: 1\n"), 5,
        "refers to nope, which is not a loaded rule");
    refused(CORR("  type: event_count\n  rules: [x]\n  timespan: 1w\n"), 6, "timespan must be");
    refused(CORR("  type: event_count\n  rules: [x]\n  timespan: 1h\n"), 4, "needs a condition");
    refused(CORR("  type: event_count\n  rules: [x]\n  timespan: 1h\n  condition:\n    most: 1\n"),
            8, "expected gt, gte");
    refused(CORR("  type: value_count\n  rules: [x]\n  timespan: 1h\n  condition:\n    gte: 1\n"),
            4, "value_count needs a condition field");
    refused(CORR("  type: temporal\n  rules: [x]\n  timespan: 1h\n  frobnicate: 1\n"), 7,
            "unknown correlation attribute frobnicate");
    /* a circle of two correlations: both refused */
    refused("title: a\nid: a\ncorrelation:\n  type: temporal\n  rules: [b]\n  timespan: 1h\n"
            "---\ntitle: b\nid: b\ncorrelation:\n  type: temporal\n  rules: [a]\n  timespan: 1h\n",
            1, "deeper than 8, or circular");
    refused(FAILED_LOGIN "---\n" CORR("  type: event_count\n  rules: [failed_login]\n  group-by: "
                                      "[nofield]\n  timespan: 1h\n  condition:\n    gte: 1\n"),
            14, "group-by field nofield has no mapping");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sigma_corr");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_event_count);
    tcase_add_test(tc, test_value_count);
    tcase_add_test(tc, test_temporal);
    tcase_add_test(tc, test_temporal_ordered);
    tcase_add_test(tc, test_spec_example);
    tcase_add_test(tc, test_aliases);
    tcase_add_test(tc, test_generate_and_range);
    tcase_add_test(tc, test_value_sum);
    tcase_add_test(tc, test_value_avg);
    tcase_add_test(tc, test_value_percentile);
    tcase_add_test(tc, test_value_percentile_one);
    tcase_add_test(tc, test_value_percentile_slides);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_through_corr_and_reload);
    suite_add_tcase(s, tc);
    tc = tcase_create("bound"); /* 65,537 events */
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_value_percentile_bound);
    tcase_add_test(tc, test_flood_groups);
    tcase_add_test(tc, test_same_time);
    tcase_add_test(tc, test_memory_budget);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
