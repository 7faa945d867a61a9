/*
 * test_absence: absence detection (agent/alerting/absence.c) on a clock the test
 * moves by hand: a source quiet for `after` is reported down once, comes
 * back up when it sends again, rules per host or per host and program, the
 * bound on the number of sources watched, forgetting sources long silent,
 * a reload taking the sources over, and another process taking them over
 * (absence_save, absence_load).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/conf/conf.h"
#include "agent/alerting/absence.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "tests/unit/unit_run.h"

/* What the emit callback was given: the reports, kept. */
#define MAXREPORTS 16
static struct msg *reports[MAXREPORTS];
static size_t nreports;

static void
emit(void *arg, struct msg *m)
{
    ck_assert_ptr_eq(arg, &nreports);
    ck_assert_uint_lt(nreports, MAXREPORTS);
    reports[nreports++] = msg_ref(m);
}

static void
setup(void)
{
    nreports = 0;
}

static void
teardown(void)
{
    size_t i;

    for (i = 0; i < nreports; i++) msg_unref(reports[i]);
    nreports = 0;
}

/* A value as a C string (msg_get's are not NUL-terminated); good until the next call. */
static const char *
value(const struct msg *m, const char *name)
{
    static char text[256];
    size_t len;
    const char *v = msg_get(m, nv_intern_str(name), &len);

    if (!v) return "(none)";
    ck_assert_uint_lt(len, sizeof(text));
    memcpy(text, v, len);
    text[len] = '\0';
    return text;
}

static bool
has_tag(const struct msg *m, const char *tag)
{
    return msg_tag_has(m, tag_intern(tag, strlen(tag)));
}

/* A message from host/program sent from addr (NULL: a local input) arriving at now_ms. */
static void
seen_from(struct absence *s, const char *host, const char *program, const char *addr,
          uint64_t now_ms)
{
    struct msg *m = msg_new();

    if (addr) msg_set(m, NV_SOURCEIP, addr, strlen(addr));
    msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_PROGRAM, program, strlen(program));
    msg_set(m, NV_MESSAGE, "hello", 5);
    absence_seen(s, m, now_ms);
    msg_unref(m);
}

/* A message from host/program arriving at now_ms. */
static void
seen(struct absence *s, const char *host, const char *program, uint64_t now_ms)
{
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_PROGRAM, program, strlen(program));
    msg_set(m, NV_MESSAGE, "hello", 5);
    absence_seen(s, m, now_ms);
    msg_unref(m);
}

START_TEST(test_down_once_then_up)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 0, false, NULL};
    struct absence *s = absence_new(&rule, 1, 100, 1000, emit, &nreports);
    const struct msg *m;

    seen(s, "web1", "sshd", 1000);
    ck_assert_uint_eq(absence_tracked(s), 1);
    absence_tick(s, 10999);
    ck_assert_uint_eq(nreports, 0);
    ck_assert_uint_eq(absence_down(s), 0);
    absence_tick(s, 11000);
    ck_assert_uint_eq(nreports, 1);
    ck_assert_uint_eq(absence_down(s), 1);
    m = reports[0];
    ck_assert(msg_flags(m) & MSG_F_GENERATED);
    ck_assert_str_eq(value(m, "MESSAGE"), "web1 has been silent for 10 seconds");
    ck_assert_str_eq(value(m, "HOST"), "web1");
    ck_assert_str_eq(value(m, "PROGRAM"), "corrald");
    ck_assert_str_eq(value(m, ".classifier.class"), "absence");
    ck_assert_str_eq(value(m, ".classifier.rule_id"), "corral.absence.down");
    ck_assert_str_eq(value(m, "absence.state"), "down");
    ck_assert_str_eq(value(m, "absence.after"), "10");
    ck_assert(has_tag(m, "corral.absence"));
    ck_assert(has_tag(m, "corral.alert"));
    ck_assert(!has_tag(m, "corral.clear"));
    ck_assert_int_eq(msg_stamp(m)->sec, 11);

    /* still quiet: no second report */
    absence_tick(s, 500000);
    ck_assert_uint_eq(nreports, 1);

    seen(s, "web1", "cron", 600000);
    ck_assert_uint_eq(nreports, 2);
    ck_assert_uint_eq(absence_down(s), 0);
    m = reports[1];
    ck_assert_str_eq(value(m, "MESSAGE"), "web1 is sending again after 599 seconds");
    ck_assert_str_eq(value(m, "absence.state"), "up");
    ck_assert_str_eq(value(m, ".classifier.rule_id"), "corral.absence.up");
    ck_assert(has_tag(m, "corral.absence"));
    ck_assert(has_tag(m, "corral.clear"));
    ck_assert(has_tag(m, "corral.alert")); /* an alert, the clear of the first */

    /* quiet again: down again, `after` from the last message */
    absence_tick(s, 609999);
    ck_assert_uint_eq(nreports, 2);
    absence_tick(s, 610000);
    ck_assert_uint_eq(nreports, 3);
    ck_assert_str_eq(value(reports[2], "absence.state"), "down");
    ck_assert_uint_eq(absence_tracked(s), 1);
    absence_free(s);
}
END_TEST

/* Every message re-arms the timer: a source that keeps sending is never reported. */
START_TEST(test_steady_source)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 0, false, NULL};
    struct absence *s = absence_new(&rule, 1, 100, 0, emit, &nreports);
    uint64_t t;

    for (t = 0; t <= 100000; t += 9999) {
        seen(s, "web1", "sshd", t);
        absence_tick(s, t + 9000);
    }
    ck_assert_uint_eq(nreports, 0);
    ck_assert_uint_eq(absence_tracked(s), 1);
    absence_free(s);
}
END_TEST

/* A host-only rule: one source per host, whatever program sends. */
START_TEST(test_per_host)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 0, false, NULL};
    struct absence *s = absence_new(&rule, 1, 100, 0, emit, &nreports);

    seen(s, "web1", "sshd", 0);
    seen(s, "web2", "sshd", 0);
    seen(s, "web1", "cron", 8000);
    ck_assert_uint_eq(absence_tracked(s), 2);
    absence_tick(s, 12000);
    ck_assert_uint_eq(nreports, 1);
    ck_assert_str_eq(value(reports[0], "HOST"), "web2");
    absence_tick(s, 18000);
    ck_assert_uint_eq(nreports, 2);
    ck_assert_str_eq(value(reports[1], "HOST"), "web1");
    ck_assert_str_eq(value(reports[1], "MESSAGE"), "web1 has been silent for 10 seconds");
    ck_assert_uint_eq(absence_down(s), 2);
    absence_free(s);
}
END_TEST

/* A host+program rule watches that program of that host only. */
START_TEST(test_host_program)
{
    struct conf_absence rules[] = {
        {"web1", "sshd", 5, 1, 0, false, NULL},
        {"db1", NULL, 60, 2, 0, false, NULL},
    };
    struct absence *s = absence_new(rules, 2, 100, 0, emit, &nreports);

    seen(s, "web1", "sshd", 0);
    seen(s, "web1", "cron", 0);
    seen(s, "web2", "sshd", 0);
    seen(s, "db1", "postgres", 0);
    ck_assert_uint_eq(absence_tracked(s), 2);
    /* cron keeps sending: it is not what the rule watches */
    seen(s, "web1", "cron", 4000);
    absence_tick(s, 5000);
    ck_assert_uint_eq(nreports, 1);
    ck_assert_str_eq(value(reports[0], "MESSAGE"), "web1 sshd has been silent for 5 seconds");
    ck_assert_str_eq(value(reports[0], "PROGRAM"), "sshd");
    ck_assert_str_eq(value(reports[0], "absence.after"), "5");
    absence_tick(s, 59999);
    ck_assert_uint_eq(nreports, 1);
    absence_tick(s, 60000);
    ck_assert_uint_eq(nreports, 2);
    ck_assert_str_eq(value(reports[1], "MESSAGE"), "db1 has been silent for 60 seconds");
    seen(s, "web1", "sshd", 70000);
    ck_assert_uint_eq(nreports, 3);
    ck_assert_str_eq(value(reports[2], "MESSAGE"), "web1 sshd is sending again after 70 seconds");
    ck_assert_uint_eq(absence_down(s), 1);
    absence_free(s);
}
END_TEST

/* Sources beyond max_sources are not watched, and never reported. */
START_TEST(test_max_sources)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 0, false, NULL};
    struct absence *s = absence_new(&rule, 1, 2, 0, emit, &nreports);

    /* seen twice: off probation, kept (see test_evict_seen_once) */
    seen(s, "h1", "p", 0);
    seen(s, "h1", "p", 0);
    seen(s, "h2", "p", 0);
    seen(s, "h2", "p", 0);
    seen(s, "h3", "p", 0);
    seen(s, "h4", "p", 0);
    ck_assert_uint_eq(absence_tracked(s), 2);
    ck_assert_uint_eq(absence_evicted(s), 0);
    /* a tracked source is still watched */
    seen(s, "h2", "p", 5000);
    ck_assert_uint_eq(absence_tracked(s), 2);
    absence_tick(s, 100000);
    ck_assert_uint_eq(nreports, 2);
    ck_assert_str_eq(value(reports[0], "HOST"), "h1");
    ck_assert_str_eq(value(reports[1], "HOST"), "h2");
    ck_assert_uint_eq(absence_down(s), 2);
    absence_free(s);
}
END_TEST

/* Messages from sources beyond the limit are counted. */
START_TEST(test_untracked_counted)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 0, false, NULL};
    struct absence *s = absence_new(&rule, 1, 2, 0, emit, &nreports);

    /* seen twice each: not on probation, so neither makes room for h3 */
    seen(s, "h1", "p", 0);
    seen(s, "h1", "p", 0);
    seen(s, "h2", "p", 0);
    seen(s, "h2", "p", 0);
    ck_assert_uint_eq(absence_untracked(s), 0);
    seen(s, "h3", "p", 0);
    seen(s, "h3", "p", 1);
    seen(s, "h4", "p", 2);
    ck_assert_uint_eq(absence_untracked(s), 3);
    ck_assert_uint_eq(absence_tracked(s), 2);
    absence_free(s);
}
END_TEST

/*
 * A source silent for forget= is forgotten once, after its down report;
 * that makes room for a new source under the limit, and the forgotten one
 * sending again is a new source (no up report: nothing was kept of it).
 */
START_TEST(test_forget)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 60, false, NULL};
    struct absence *s = absence_new(&rule, 1, 2, 0, emit, &nreports);

    seen(s, "h1", "p", 0);
    seen(s, "h1", "p", 0);
    seen(s, "h2", "p", 30000);
    seen(s, "h2", "p", 30000);
    absence_tick(s, 10000);
    ck_assert_uint_eq(nreports, 1);
    ck_assert_uint_eq(absence_down(s), 1);
    seen(s, "h3", "p", 50000);
    ck_assert_uint_eq(absence_untracked(s), 1);
    absence_tick(s, 59999);
    ck_assert_uint_eq(absence_tracked(s), 2);
    ck_assert_uint_eq(absence_forgotten(s), 0);
    absence_tick(s, 60000);
    ck_assert_uint_eq(absence_tracked(s), 1);
    ck_assert_uint_eq(absence_down(s), 1); /* h2 */
    ck_assert_uint_eq(absence_forgotten(s), 1);
    ck_assert_uint_eq(nreports, 2); /* h2 went down at 40 s */
    /* room again: h3 is tracked */
    seen(s, "h3", "p", 61000);
    ck_assert_uint_eq(absence_tracked(s), 2);
    ck_assert_uint_eq(absence_untracked(s), 1);
    /* h1 again: a new source, no "sending again" */
    absence_tick(s, 90000); /* h2 forgotten, h3 down */
    ck_assert_uint_eq(absence_forgotten(s), 2);
    ck_assert_uint_eq(nreports, 3);
    seen(s, "h1", "p", 95000);
    ck_assert_uint_eq(nreports, 3);
    ck_assert_uint_eq(absence_tracked(s), 2);
    absence_free(s);
}
END_TEST

/*
 * A reload: the new detector takes the sources of rules alike over, with
 * when they were last seen: an absence due soon still comes, a silent
 * source is neither reported again nor lost (its "sending again" comes),
 * and a source whose rule is gone is not taken.
 */
START_TEST(test_adopt)
{
    struct conf_absence old_rules[] = {{NULL, NULL, 10, 1, 0, false, NULL},
                                       {"db1", "pg", 10, 2, 0, false, NULL}};
    struct conf_absence new_rules[] = {{"mail", NULL, 5, 1, 0, false, NULL},
                                       {NULL, NULL, 20, 2, 0, false, NULL}};
    struct absence *old = absence_new(old_rules, 2, 100, 0, emit, &nreports);
    struct absence *s;

    seen(old, "web1", "sshd", 0);
    seen(old, "web2", "sshd", 9000);
    seen(old, "db1", "pg", 0);
    absence_tick(old, 10000); /* web1, db1 and db1 pg down */
    ck_assert_uint_eq(nreports, 3);
    ck_assert_uint_eq(absence_tracked(old), 4);
    s = absence_new(new_rules, 2, 100, 12000, emit, &nreports);
    absence_adopt(s, old, 12000);
    absence_free(old);
    ck_assert_uint_eq(absence_tracked(s), 3); /* db1 pg: its rule is gone */
    ck_assert_uint_eq(absence_down(s), 2);
    absence_tick(s, 28999);
    ck_assert_uint_eq(nreports, 3);
    absence_tick(s, 29000); /* web2, last seen at 9 s, now after 20 s */
    ck_assert_uint_eq(nreports, 4);
    ck_assert_str_eq(value(reports[3], "HOST"), "web2");
    ck_assert_str_eq(value(reports[3], "absence.state"), "down");
    seen(s, "web1", "cron", 30000);
    ck_assert_uint_eq(nreports, 5);
    ck_assert_str_eq(value(reports[4], "MESSAGE"), "web1 is sending again after 30 seconds");
    absence_free(s);
}
END_TEST

/*
 * absence_save and absence_load hand the sources to another process (a
 * cluster's next owner of a partition): when each was last seen (wall
 * time), whether it is down, its address; a source down is not reported
 * again, one due is reported at its time with the same stamps (its
 * corral.since) as the first process would have; malformed text is refused.
 */
START_TEST(test_save_load)
{
    struct conf_absence rules[] = {{NULL, NULL, 10, 1, 0, false, NULL},
                                   {"db1", "pg", 10, 2, 0, false, NULL}};
    struct absence *old = absence_new(rules, 2, 100, 0, emit, &nreports);
    struct absence *s;
    struct buf text = BUF_INIT;
    char since[64];

    seen(old, "web1", "sshd", 0);
    seen_from(old, "web 2\n-:", "sshd", "192.0.2.7", 9000);
    seen(old, "db1", "pg", 0);
    absence_tick(old, 10000); /* web1, db1 and db1 pg down */
    ck_assert_uint_eq(nreports, 3);
    absence_save(old, &text);
    s = absence_new(rules, 2, 100, 12000, emit, &nreports);
    ck_assert_int_eq(absence_load(s, text.p, text.len, 12000), 4);
    ck_assert_uint_eq(absence_tracked(s), 4);
    ck_assert_uint_eq(absence_down(s), 3);
    absence_tick(s, 18999);
    ck_assert_uint_eq(nreports, 3); /* the three down are not reported again */
    absence_tick(s, 19000);         /* web 2, last seen at 9 s */
    ck_assert_uint_eq(nreports, 4);
    ck_assert_str_eq(value(reports[3], "HOST"), "web 2\n-:");
    snprintf(since, sizeof(since), "%s", value(reports[3], "corral.since"));
    absence_tick(old, 19000); /* the first process's report of it: the same stamps */
    ck_assert_uint_eq(nreports, 5);
    ck_assert_str_eq(value(reports[4], "corral.since"), since);
    /* bound to its address still */
    seen_from(s, "web 2\n-:", "sshd", "192.0.2.8", 20000);
    ck_assert_uint_eq(absence_foreign(s), 1);
    ck_assert_uint_eq(nreports, 5);
    seen(s, "web1", "cron", 30000);
    ck_assert_uint_eq(nreports, 6);
    ck_assert_str_eq(value(reports[5], "absence.state"), "up");
    absence_free(s);
    /* cut short, or not of absence_save */
    s = absence_new(rules, 2, 100, 12000, emit, &nreports);
    ck_assert_int_eq(absence_load(s, text.p, text.len - 3, 12000), -1);
    ck_assert_int_eq(absence_load(s, "12 0 0 5:web1\n", 14, 12000), -1);
    ck_assert_int_eq(absence_load(s, "", 0, 12000), 0);
    absence_free(s);
    absence_free(old);
    buf_free(&text);
}
END_TEST

/*
 * A reload keeps the order of reports due at the same time: sources seen in
 * the same millisecond are reported in the order they were seen, on every
 * run (not in the order of a table, which follows a hash keyed per process).
 */
START_TEST(test_adopt_keeps_order)
{
    static const char *hosts[] = {"web7", "db2", "mail", "app1", "web1", "cache",
                                  "zz",   "aa",  "m3",   "lb",   "dns",  "ntp"};
    struct conf_absence rules[] = {{NULL, NULL, 10, 1, 0, false, NULL}};
    struct absence *old = absence_new(rules, 1, 100, 0, emit, &nreports);
    struct absence *s;
    size_t i, n = sizeof(hosts) / sizeof(hosts[0]);

    for (i = 0; i < n; i++) seen(old, hosts[i], "sshd", 1000);
    s = absence_new(rules, 1, 100, 2000, emit, &nreports);
    absence_adopt(s, old, 2000);
    absence_free(old);
    absence_tick(s, 11000);
    ck_assert_uint_eq(nreports, n);
    for (i = 0; i < n; i++) ck_assert_str_eq(value(reports[i], "HOST"), hosts[i]);
    absence_free(s);
}
END_TEST

/*
 * A source is bound to the address it was first seen from: a message naming
 * it from another address neither resolves its absence nor keeps it alive,
 * and is counted; address="any" takes any sender's word.
 */
START_TEST(test_bound_address)
{
    struct conf_absence rules[] = {{"web1", NULL, 10, 1, 0, false, NULL},
                                   {"web2", NULL, 10, 2, 0, true, NULL}};
    struct absence *s = absence_new(rules, 2, 100, 0, emit, &nreports);

    seen_from(s, "web1", "app", "10.0.0.1", 0);
    seen_from(s, "web2", "app", "10.0.0.2", 0);
    /* a spoofed heartbeat does not keep web1 alive */
    seen_from(s, "web1", "app", "10.6.6.6", 5000);
    seen_from(s, "web1", "app", NULL, 6000);
    ck_assert_uint_eq(absence_foreign(s), 2);
    absence_tick(s, 10000);
    ck_assert_uint_eq(nreports, 2);
    ck_assert_str_eq(value(reports[0], "HOST"), "web1");
    /* nor resolves its absence */
    seen_from(s, "web1", "app", "10.6.6.6", 11000);
    ck_assert_uint_eq(nreports, 2);
    ck_assert_uint_eq(absence_down(s), 2);
    ck_assert_uint_eq(absence_foreign(s), 3);
    /* web1 itself does */
    seen_from(s, "web1", "app", "10.0.0.1", 12000);
    ck_assert_uint_eq(nreports, 3);
    ck_assert_str_eq(value(reports[2], "absence.state"), "up");
    /* address="any": web2 comes back from anywhere */
    seen_from(s, "web2", "app", "10.9.9.9", 13000);
    ck_assert_uint_eq(nreports, 4);
    ck_assert_str_eq(value(reports[3], "HOST"), "web2");
    ck_assert_uint_eq(absence_foreign(s), 3);
    absence_free(s);
}
END_TEST

/*
 * When max_sources are tracked, the oldest source seen only once makes room
 * for a new one: made-up names sent once each cannot keep a real new host
 * out, and a host seen twice is never evicted.
 */
START_TEST(test_evict_seen_once)
{
    struct conf_absence rule = {NULL, NULL, 10, 1, 0, false, NULL};
    struct absence *s = absence_new(&rule, 1, 3, 0, emit, &nreports);
    char name[32];
    int i;

    seen(s, "real1", "p", 0);
    seen(s, "real1", "p", 1);
    for (i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "forged%d", i);
        seen(s, name, "p", 2);
    }
    ck_assert_uint_eq(absence_tracked(s), 3);
    ck_assert_uint_eq(absence_evicted(s), 98);
    ck_assert_uint_eq(absence_untracked(s), 0);
    seen(s, "real2", "p", 3);
    seen(s, "real2", "p", 4);
    for (i = 100; i < 200; i++) {
        snprintf(name, sizeof(name), "forged%d", i);
        seen(s, name, "p", 5);
    }
    absence_tick(s, 100000);
    /* real1 and real2 are watched through the flood, and reported */
    ck_assert_uint_eq(absence_tracked(s), 3);
    ck_assert_uint_eq(nreports, 3);
    ck_assert_str_eq(value(reports[0], "HOST"), "real1");
    ck_assert_str_eq(value(reports[1], "HOST"), "real2");
    absence_free(s);
}
END_TEST

/* Both reports are alerts with the contract's labels; the second clears the first. */
START_TEST(test_alert_labels)
{
    struct conf_absence rule = {NULL, "sshd", 10, 1, 0, false, (char *)"major"};
    struct absence *s = absence_new(&rule, 1, 100, 0, emit, &nreports);
    char host[200];

    memset(host, 'h', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    seen(s, "web1", "sshd", 0);
    seen(s, host, "sshd", 0);
    absence_tick(s, 10000);
    seen(s, "web1", "sshd", 20000);
    ck_assert_uint_eq(nreports, 3);
    ck_assert(has_tag(reports[2], "corral.alert"));
    ck_assert(has_tag(reports[2], "corral.clear"));
    ck_assert(!has_tag(reports[0], "corral.clear"));
    ck_assert_str_eq(value(reports[0], "corral.alert_id"), "corral.absence/web1/sshd");
    ck_assert_str_eq(value(reports[2], "corral.alert_id"), "corral.absence/web1/sshd");
    ck_assert_str_eq(value(reports[0], "corral.severity"), "major");
    ck_assert_str_eq(value(reports[2], "corral.severity"), "major");
    ck_assert_str_eq(value(reports[0], "corral.event"), "absence.down");
    ck_assert_str_eq(value(reports[2], "corral.event"), "absence.up");
    ck_assert_str_eq(value(reports[2], "corral.summary"),
                     "web1 sshd is sending again after 20 seconds");
    ck_assert_uint_eq(strlen(value(reports[1], "corral.summary")), 120);
    absence_free(s);
}
END_TEST

/* No rules: nothing is watched. */
START_TEST(test_no_rules)
{
    struct absence *s = absence_new(NULL, 0, 100, 0, emit, &nreports);

    seen(s, "web1", "sshd", 0);
    absence_tick(s, 1000000);
    ck_assert_uint_eq(absence_tracked(s), 0);
    ck_assert_uint_eq(nreports, 0);
    absence_free(s);
}
END_TEST

static Suite *
absence_suite(void)
{
    Suite *s = suite_create("absence");
    TCase *tc = tcase_create("absence");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_down_once_then_up);
    tcase_add_test(tc, test_steady_source);
    tcase_add_test(tc, test_per_host);
    tcase_add_test(tc, test_host_program);
    tcase_add_test(tc, test_max_sources);
    tcase_add_test(tc, test_no_rules);
    tcase_add_test(tc, test_untracked_counted);
    tcase_add_test(tc, test_forget);
    tcase_add_test(tc, test_adopt);
    tcase_add_test(tc, test_adopt_keeps_order);
    tcase_add_test(tc, test_save_load);
    tcase_add_test(tc, test_bound_address);
    tcase_add_test(tc, test_evict_seen_once);
    tcase_add_test(tc, test_alert_labels);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(absence_suite());
}
