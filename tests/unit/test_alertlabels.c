/*
 * Unit tests: the alert label contract (engine/alertlabels.c): which
 * actions raise alerts, the static check of a rule database (file:line of
 * the action, HOST from a context's scope only), and the run-time
 * normaliser (alert ids, severities, summaries).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/alertlabels.h"
#include "tests/unit/unit_run.h"

#define HEAD                                                                                       \
    "<?xml version='1.0'?>\n<patterndb version='5' pub_date='2026-01-01'>\n"                       \
    "<ruleset name='t' id='t'><patterns><pattern>t</pattern></patterns><rules>\n"
#define TAIL "</rules></ruleset></patterndb>\n"

/* The four corral.* values of a well-labelled alert (HOST apart). */
#define LABELS                                                                                     \
    "<value name='corral.event'>t.alert</value>"                                                   \
    "<value name='corral.alert_id'>t/${HOST}@1/${x}@1</value>"                                     \
    "<value name='corral.severity'>major</value>"                                                  \
    "<value name='corral.summary'>t on ${HOST}@1</value>"

static struct pdb *
load(const char *xml)
{
    struct pdb *db = pdb_new();

    ck_assert_int_eq(pdb_load_memory(db, "mem.xml", xml, strlen(xml)), 0);
    return db;
}

/* What alertlabels_check_pdb says of a database (a static buffer). */
static const char *
check(const char *xml, size_t *n)
{
    static char text[4096];
    struct pdb *db = load(xml);
    struct buf out = BUF_INIT;

    *n = alertlabels_check_pdb(db, &out);
    snprintf(text, sizeof(text), "%s", buf_str(&out));
    buf_free(&out);
    pdb_free(db);
    return text;
}

START_TEST(test_check_host_needs_a_scope)
{
    size_t n;
    const char *out;

    /* no context: HOST must be set, and the line is the action's (line 5) */
    out = check(HEAD "<rule id='r1' provider='p'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions>\n"
                     "<action><message><values>" LABELS "</values>"
                     "<tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(strstr(out, "mem.xml:5: rule r1: alert action: sets no HOST (its rule has no "
                              "context to give one)"),
                  "%s", out);

    /* the same with HOST set: nothing to say */
    out = check(HEAD "<rule id='r1' provider='p'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions><action><message><values>" LABELS
                     "<value name='HOST'>${HOST}@1</value></values>"
                     "<tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_msg(n == 0, "%s", out);

    /* a host, program or process context gives HOST */
    out = check(HEAD "<rule id='r1' provider='p' context-id='c' context-scope='host' "
                     "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions><action><message><values>" LABELS "</values>"
                     "<tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_msg(n == 0, "%s", out);
    out = check(HEAD "<rule id='r1' provider='p' context-id='c' context-scope='process' "
                     "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions><action trigger='timeout'><message><values>" LABELS
                     "</values><tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_msg(n == 0, "%s", out);

    /* a global one does not */
    out = check(HEAD "<rule id='r1' provider='p' context-id='c' context-scope='global' "
                     "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions><action><message><values>" LABELS "</values>"
                     "<tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(strstr(out, "sets no HOST (context-scope global gives no HOST)"), "%s", out);
}
END_TEST

START_TEST(test_check_missing_and_bad_values)
{
    size_t n;
    const char *out;

    /* what is missing, in one line */
    out = check(HEAD "<rule id='r1' provider='p' context-id='c' context-scope='host' "
                     "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions><action><message><values>"
                     "<value name='corral.event'>t.alert</value>"
                     "<value name='MESSAGE'>text</value></values>"
                     "<tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(strstr(out, "sets no corral.alert_id, corral.severity, corral.summary\n"), "%s",
                  out);

    /* constant values are checked: severity, alert id characters, summary length */
    out = check(HEAD
                "<rule id='r1' provider='p' context-id='c' context-scope='host' "
                "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                "</patterns><actions><action><message><values>"
                "<value name='corral.event'>t.alert</value>"
                "<value name='corral.alert_id'>t/two words</value>"
                "<value name='corral.severity'>urgent</value>"
                "<value name='corral.summary'>0123456789012345678901234567890123456789012345678901"
                "234567890123456789012345678901234567890123456789012345678901234567890</value>"
                "</values><tags><tag>corral.alert</tag></tags></message></action>"
                "</actions></rule>\n" TAIL,
                &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_msg(strstr(out, "corral.alert_id 't/two words' is not an alert id"), "%s", out);
    ck_assert_msg(strstr(out, "corral.severity 'urgent' is none of"), "%s", out);
    ck_assert_msg(strstr(out, "corral.summary is not one line of at most 120"), "%s", out);

    /* an empty part between slashes, in a template */
    out = check(HEAD "<rule id='r1' provider='p' context-id='c' context-scope='host' "
                     "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions><action><message><values>"
                     "<value name='corral.event'>t.alert</value>"
                     "<value name='corral.alert_id'>t/${HOST}//${x}@1</value>"
                     "<value name='corral.severity'>${sev}@1</value>"
                     "<value name='corral.summary'>t</value>"
                     "</values><tags><tag>corral.alert</tag></tags></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(strstr(out, "has an empty part between slashes"), "%s", out);
}
END_TEST

START_TEST(test_check_which_actions)
{
    size_t n;
    const char *out;

    /* no alert tag, no route: not an alert; create-context: its message is not sent */
    out = check(HEAD "<rule id='r1' provider='p' context-id='c' context-scope='global' "
                     "context-timeout='60'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions>"
                     "<action><message><values><value name='MESSAGE'>x</value></values>"
                     "<tags><tag>corral.summary</tag></tags></message></action>"
                     "<action><create-context context-id='d'><message><values>"
                     "<value name='MESSAGE'>x</value></values>"
                     "<tags><tag>corral.alert</tag></tags></message></create-context></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_msg(n == 0, "%s", out);

    /* a clear is checked as an alert, and so is an action with route= */
    out = check(HEAD "<rule id='r1' provider='p'><patterns><pattern>a @ESTRING:x: @</pattern>"
                     "</patterns><actions>\n"
                     "<action><message><values><value name='MESSAGE'>x</value></values>"
                     "<tags><tag>corral.clear</tag></tags></message></action>\n"
                     "<action route='nms'><message><values><value name='MESSAGE'>x</value>"
                     "</values></message></action>"
                     "</actions></rule>\n" TAIL,
                &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_msg(strstr(out, "mem.xml:5: rule r1: alert action: sets no HOST"), "%s", out);
    ck_assert_msg(strstr(out, "mem.xml:6: rule r1: alert action: sets no HOST"), "%s", out);
}
END_TEST

static const char *
map(const char *id)
{
    static struct buf b;

    buf_reset(&b);
    alertlabels_map_id(id, strlen(id), &b);
    return buf_str(&b);
}

START_TEST(test_map_id)
{
    struct buf b = BUF_INIT;

    ck_assert(!alertlabels_map_id("storage.raid/nas1/md0", 21, &b));
    ck_assert_str_eq(buf_str(&b), "storage.raid/nas1/md0");
    ck_assert_str_eq(map("storage.raid/nas1//dev/md0"), "storage.raid/nas1/dev/md0");
    ck_assert_str_eq(map("ssh.bruteforce/web1/2001:db8::1"), "ssh.bruteforce/web1/2001:db8::1");
    ck_assert_str_eq(map("u/admin from 192.0.2.1 port 22"), "u/admin_from_192.0.2.1_port_22");
    ck_assert_str_eq(map("/a///b/"), "a/b");
    ck_assert_str_eq(map("caf\xc3\xa9\t\"x\"%"), "caf____x__");
    ck_assert_str_eq(map("user@host:1-2_3"), "user@host:1-2_3");
    ck_assert_str_eq(map("///"), "");
    buf_free(&b);
}
END_TEST

START_TEST(test_severities)
{
    ck_assert(alertlabels_severity_valid("critical", 8));
    ck_assert(alertlabels_severity_valid("info", 4));
    ck_assert(!alertlabels_severity_valid("Info", 4));
    ck_assert(!alertlabels_severity_valid("clear", 5));
    ck_assert(!alertlabels_severity_valid("", 0));
    ck_assert_str_eq(alertlabels_severity_map("CRIT", 4), "critical");
    ck_assert_str_eq(alertlabels_severity_map("err", 3), "major");
    ck_assert_str_eq(alertlabels_severity_map("Warning", 7), "warning");
    ck_assert_str_eq(alertlabels_severity_map("notice", 6), "info");
    ck_assert_ptr_null(alertlabels_severity_map("urgent", 6));
    ck_assert_ptr_null(alertlabels_severity_map("warningx", 8));
}
END_TEST

/* Characters (code points) of a UTF-8 string. */
static size_t
chars(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) n++;
    return n;
}

static const char *
summary(const char *s, bool *changed)
{
    static struct buf b;

    buf_reset(&b);
    *changed = alertlabels_summary(s, strlen(s), &b);
    return buf_str(&b);
}

START_TEST(test_summary)
{
    char long_text[400], no_space[200];
    const char *out;
    bool changed;
    size_t i;

    out = summary("RAID md0 on nas1 lost a disk", &changed);
    ck_assert_str_eq(out, "RAID md0 on nas1 lost a disk");
    ck_assert(!changed);

    /* the first line only, without blanks around it, control characters as spaces */
    out = summary("  first\tline \nsecond line", &changed);
    ck_assert_str_eq(out, "first line");
    ck_assert(changed);

    /* 40 words of 9 characters: cut after a whole word, "..." included in the 120 */
    long_text[0] = '\0';
    for (i = 0; i < 40; i++) strcat(long_text, i ? " word_abc" : "word_abc");
    out = summary(long_text, &changed);
    ck_assert(changed);
    ck_assert_uint_le(chars(out), 120);
    ck_assert_uint_ge(chars(out), 100);
    ck_assert_str_eq(out + strlen(out) - 12, " word_abc...");
    ck_assert_int_eq(strncmp(out, long_text, strlen(out) - 3), 0);

    /* no space in the second half of the room: cut at a character, 117 + "..." */
    memset(no_space, 'x', 150);
    no_space[150] = '\0';
    out = summary(no_space, &changed);
    ck_assert_uint_eq(chars(out), 120);
    ck_assert_str_eq(out + 117, "...");

    /* characters, not bytes: 130 two-byte characters are cut to 120 characters */
    long_text[0] = '\0';
    for (i = 0; i < 130; i++) strcat(long_text, "\xc3\xa9");
    out = summary(long_text, &changed);
    ck_assert_uint_eq(chars(out), 120);
    ck_assert_uint_eq(strlen(out), 117 * 2 + 3);

    /* exactly 120 characters stay */
    memset(no_space, 'y', 120);
    no_space[120] = '\0';
    out = summary(no_space, &changed);
    ck_assert(!changed);

    /* a byte that is not UTF-8 is shown as U+FFFD */
    out = summary("disk \xff full", &changed);
    ck_assert_str_eq(out, "disk \xef\xbf\xbd full");
    ck_assert(changed);
}
END_TEST

static void
set(struct msg *m, const char *name, const char *value)
{
    msg_set(m, nv_intern_str(name), value, strlen(value));
}

static const char *
get(struct msg *m, const char *name)
{
    static char out[512];
    size_t len;
    const char *v = msg_get(m, nv_intern_str(name), &len);

    if (!v) return NULL;
    snprintf(out, sizeof(out), "%.*s", (int)len, v);
    return out;
}

START_TEST(test_check_msg)
{
    struct msg *m = msg_new();
    struct buf scratch = BUF_INIT;
    char long_text[300];
    unsigned f;

    /* right: nothing found, nothing changed */
    set(m, "HOST", "nas1");
    set(m, "corral.alert_id", "storage.raid/nas1/md0");
    set(m, "corral.severity", "major");
    set(m, "corral.event", "storage.raid.alert");
    set(m, "corral.summary", "RAID md0 degraded on nas1");
    set(m, "MESSAGE", "md/raid1:md0: Disk failure on sdb1, disabling device.");
    ck_assert_uint_eq(alertlabels_check_msg(m, &scratch), 0);
    ck_assert_str_eq(get(m, "corral.alert_id"), "storage.raid/nas1/md0");
    ck_assert_str_eq(get(m, "corral.summary"), "RAID md0 degraded on nas1");

    /* a clear may say clear */
    set(m, "corral.severity", "clear");
    ck_assert_uint_eq(alertlabels_check_msg(m, &scratch), 0);

    /* bad id characters, a syslog severity name, a long summary */
    set(m, "corral.alert_id", "storage.raid/nas1//dev/md0");
    set(m, "corral.severity", "CRIT");
    memset(long_text, 'z', 200);
    long_text[200] = '\0';
    set(m, "corral.summary", long_text);
    f = alertlabels_check_msg(m, &scratch);
    ck_assert_uint_eq(f,
                      ALERTLABELS_ID_MAPPED | ALERTLABELS_BAD_SEVERITY | ALERTLABELS_SUMMARY_CUT);
    ck_assert_str_eq(get(m, "corral.alert_id"), "storage.raid/nas1/dev/md0");
    ck_assert_str_eq(get(m, "corral.severity"), "critical");
    ck_assert_uint_eq(strlen(get(m, "corral.summary")), 120);

    /* an unknown severity becomes the default */
    set(m, "corral.severity", "urgent");
    ck_assert_uint_eq(alertlabels_check_msg(m, &scratch), ALERTLABELS_BAD_SEVERITY);
    ck_assert_str_eq(get(m, "corral.severity"), ALERTLABELS_SEVERITY_DEFAULT);

    /* missing: HOST and id are reported and left; the rest are filled */
    msg_reset(m);
    set(m, "MESSAGE", "web1 sshd has been silent for 300 seconds\nsecond line");
    msg_set(m, NV_RULE_ID, "corral.absence.down", 19);
    f = alertlabels_check_msg(m, &scratch);
    ck_assert_uint_eq(f, ALERTLABELS_NO_HOST | ALERTLABELS_NO_ID | ALERTLABELS_NO_SEVERITY |
                             ALERTLABELS_NO_EVENT | ALERTLABELS_NO_SUMMARY);
    ck_assert_ptr_null(get(m, "corral.alert_id"));
    ck_assert_str_eq(get(m, "corral.severity"), "warning");
    ck_assert_str_eq(get(m, "corral.event"), "corral.absence.down");
    ck_assert_str_eq(get(m, "corral.summary"), "web1 sshd has been silent for 300 seconds");
    /* and once filled, a second look finds only what it cannot fill */
    ck_assert_uint_eq(alertlabels_check_msg(m, &scratch), ALERTLABELS_NO_HOST | ALERTLABELS_NO_ID);

    /* an id with nothing of an id in it is no id */
    set(m, "corral.alert_id", "//");
    f = alertlabels_check_msg(m, &scratch);
    ck_assert_uint_eq(f, ALERTLABELS_NO_HOST | ALERTLABELS_NO_ID | ALERTLABELS_ID_MAPPED);
    ck_assert_ptr_null(get(m, "corral.alert_id"));

    ck_assert_str_eq(alertlabels_flag_name(ALERTLABELS_SUMMARY_CUT), "summary_cut");
    buf_free(&scratch);
    msg_unref(m);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("alertlabels");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_check_host_needs_a_scope);
    tcase_add_test(tc, test_check_missing_and_bad_values);
    tcase_add_test(tc, test_check_which_actions);
    tcase_add_test(tc, test_map_id);
    tcase_add_test(tc, test_severities);
    tcase_add_test(tc, test_summary);
    tcase_add_test(tc, test_check_msg);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
