/*
 * Unit tests: Alertmanager label matchers (engine/labelmatch): the four
 * operators, anchored regexes, quoting, aliases, the errors; the silences
 * (agent/silences): add with validation that changes nothing on error,
 * matching by time, expire, query, retention, the file read back; the alert
 * store (agent/alerts): ids, states, clears, inhibition, the bound, and its
 * file read back.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/alerts.h"
#include "agent/conf.h"
#include "agent/silences.h"
#include "engine/labelmatch.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "tests/unit/unit_run.h"

static struct msg *
labels(const char *host, const char *program, const char *rule)
{
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_PROGRAM, program, strlen(program));
    msg_set(m, NV_RULE_ID, rule, strlen(rule));
    msg_set_flags(m, MSG_F_GENERATED);
    return m;
}

static bool
matches(const char *text, const struct msg *m)
{
    struct buf err = BUF_INIT;
    struct labelmatch *lm = labelmatch_parse(text, &err);
    bool r;

    ck_assert_msg(lm != NULL, "%s: %s", text, buf_str(&err));
    r = labelmatch_match(lm, m);
    labelmatch_free(lm);
    buf_free(&err);
    return r;
}

static const char *
parse_error(const char *text)
{
    static char msg[512];
    struct buf err = BUF_INIT;
    struct labelmatch *lm = labelmatch_parse(text, &err);

    ck_assert_msg(lm == NULL, "'%s' accepted", text);
    snprintf(msg, sizeof(msg), "%s", buf_str(&err));
    buf_free(&err);
    return msg;
}

START_TEST(test_matchers)
{
    struct msg *m = labels("web1", "sshd", "corral.sshd.auth.failed");
    struct labelmatch *lm;
    struct buf err = BUF_INIT, text = BUF_INIT;

    ck_assert(matches("HOST=web1", m));
    ck_assert(!matches("HOST=web", m));
    ck_assert(matches("HOST!=web2", m));
    ck_assert(!matches("HOST!=web1", m));
    ck_assert(matches("HOST=~web[0-9]", m));
    ck_assert(!matches("HOST=~web", m)); /* anchored: the whole value */
    ck_assert(!matches("HOST=~eb1", m));
    ck_assert(matches("HOST=~\"a|web1\"", m)); /* ^(?:a|web1)$, not ^a|web1$ */
    ck_assert(!matches("HOST=~\"w|web\"", m));
    ck_assert(matches("HOST!~db.*", m));
    ck_assert(matches("{HOST=\"web1\", PROGRAM=sshd}", m));
    ck_assert(!matches("HOST=web1,PROGRAM=cron", m));
    ck_assert(matches("rule_id=~\"corral\\.sshd\\..*\"", m)); /* the alias */
    ck_assert(matches("missing=\"\"", m));                    /* absent: empty */
    ck_assert(!matches("missing=~.+", m));
    ck_assert(matches("  HOST = web1  ", m));
    /* quoted values with commas, quotes and spaces, and their round trip */
    msg_set(m, NV_MESSAGE, "a, \"b\" c", 8);
    ck_assert(matches("MESSAGE=\"a, \\\"b\\\" c\"", m));
    lm = labelmatch_parse("MESSAGE=\"a, \\\"b\\\" c\",HOST=~\"web\\\\d\"", &err);
    ck_assert_ptr_nonnull(lm);
    labelmatch_format(lm, &text);
    labelmatch_free(lm);
    lm = labelmatch_parse(buf_str(&text), &err);
    ck_assert_msg(lm != NULL, "%s: %s", buf_str(&text), buf_str(&err));
    ck_assert(labelmatch_match(lm, m));
    ck_assert_int_eq(labelmatch_count(lm), 2);
    labelmatch_free(lm);
    /* errors say what is wrong */
    ck_assert_ptr_nonnull(strstr(parse_error("HOST"), "operator"));
    ck_assert_ptr_nonnull(strstr(parse_error("=web1"), "label name"));
    ck_assert_ptr_nonnull(strstr(parse_error("HOST=\"web1"), "unterminated"));
    ck_assert_ptr_nonnull(strstr(parse_error("HOST=~\"(\""), "bad regular expression"));
    ck_assert_ptr_nonnull(strstr(parse_error(""), "empty"));
    ck_assert_ptr_nonnull(strstr(parse_error("{HOST=a"), "'}'"));
    ck_assert_ptr_nonnull(strstr(parse_error("HOST=\"a\" b=c"), "','"));
    msg_unref(m);
    buf_free(&err);
    buf_free(&text);
}
END_TEST

static json_t *
req(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);

    ck_assert_msg(j != NULL, "%s: %s", text, e.text);
    return j;
}

/* Adds a silence; its id, or NULL and the message in err. */
static char *
add(struct silences *s, const char *text, uint64_t now, struct buf *err)
{
    json_t *j = req(text);
    struct buf id = BUF_INIT;
    char *r = NULL;

    buf_reset(err);
    if (silences_add_json(s, j, now, &id, err) == 0) r = strdup(buf_str(&id));
    json_decref(j);
    buf_free(&id);
    return r;
}

#define T0 1796400000000ULL /* 2026-12-04 */

START_TEST(test_silences)
{
    char path[] = "/tmp/test_silences.XXXXXX";
    int fd = mkstemp(path);
    struct silences *s;
    struct msg *web1 = labels("web1", "sshd", "r"), *web2 = labels("web2", "sshd", "r");
    struct buf err = BUF_INIT, out = BUF_INIT;
    char *id, *id2;
    const char *ids[2];

    close(fd);
    unlink(path);
    s = silences_new(path, 3600, 3, T0);
    /* refused, nothing changed */
    ck_assert_ptr_null(
        add(s, "{\"matchers\":[\"HOST=~\\\"(\\\"\"], \"duration\":\"1h\"}", T0, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "bad regular expression"));
    ck_assert_ptr_null(add(s, "{\"matchers\":[], \"duration\":\"1h\"}", T0, &err));
    ck_assert_ptr_null(add(s, "{\"matchers\":[\"HOST=web1\"]}", T0, &err));
    ck_assert_ptr_null(add(s,
                           "{\"matchers\":[\"HOST=web1\"], \"startsAt\":\"2026-12-05T00:00:00Z\","
                           " \"endsAt\":\"2026-12-04T23:00:00Z\"}",
                           T0, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "not after the start"));
    ck_assert_ptr_null(add(s, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"soon\"}", T0, &err));
    ck_assert_int_eq(silences_count(s), 0);
    /* web1 silenced for an hour */
    id = add(s, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\", \"createdBy\":\"me\"}", T0,
             &err);
    ck_assert_msg(id != NULL, "%s", buf_str(&err));
    ck_assert_int_eq(strlen(id), SILENCES_ID_LEN);
    ck_assert_str_eq(silences_match(s, web1, T0 + 1000), id);
    ck_assert_ptr_null(silences_match(s, web2, T0 + 1000));
    ck_assert_ptr_null(silences_match(s, web1, T0 + 3600 * 1000)); /* ended */
    /* pending: from tomorrow */
    id2 = add(s,
              "{\"matchers\":[{\"name\":\"HOST\",\"value\":\"web.\",\"isRegex\":true}],"
              " \"startsAt\":1796486400, \"duration\":60}",
              T0, &err);
    ck_assert_msg(id2 != NULL, "%s", buf_str(&err));
    ck_assert_ptr_null(silences_match(s, web2, T0 + 1000));
    ck_assert_str_eq(silences_match(s, web2, 1796486400000ULL + 1), id2);
    /* the file is read back */
    silences_free(s);
    s = silences_new(path, 3600, 3, T0);
    ck_assert_int_eq(silences_count(s), 2);
    ck_assert_str_eq(silences_match(s, web1, T0 + 1000), id);
    /* query: the silences naming web1 */
    {
        struct labelmatch *q = labelmatch_parse("HOST=web1", &err);
        silences_json(s, q, false, T0, &out);
        ck_assert_ptr_nonnull(strstr(buf_str(&out), id));
        ck_assert_ptr_null(strstr(buf_str(&out), id2));
        labelmatch_free(q);
    }
    /* expire: all named or none */
    ids[0] = id;
    ids[1] = "00000000-0000-4000-8000-000000000000";
    ck_assert_int_eq(silences_expire(s, ids, 2, T0 + 2000, &err), -1);
    ck_assert_ptr_nonnull(silences_match(s, web1, T0 + 3000));
    ck_assert_int_eq(silences_expire(s, ids, 1, T0 + 2000, &err), 0);
    ck_assert_ptr_null(silences_match(s, web1, T0 + 3000));
    ck_assert_int_eq(silences_expire(s, ids, 1, T0 + 3000, &err), -1); /* ended already */
    buf_reset(&out);
    silences_json(s, NULL, false, T0 + 3000, &out);
    ck_assert_ptr_null(strstr(buf_str(&out), id));
    buf_reset(&out);
    silences_json(s, NULL, true, T0 + 3000, &out);
    ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"expired\""));
    /* the bound, ended ones included; then retention drops the ended one */
    free(add(s, "{\"matchers\":[\"HOST=a\"], \"duration\":\"1h\"}", T0 + 3000, &err));
    ck_assert_ptr_null(add(s, "{\"matchers\":[\"HOST=b\"], \"duration\":\"1h\"}", T0 + 3000, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "max-silences"));
    silences_tick(s, T0 + 2000 + 3601 * 1000);
    ck_assert_int_eq(silences_count(s), 2);
    ck_assert_int_eq(silences_get_stats(s)->dropped, 1);
    silences_free(s);
    unlink(path);
    free(id);
    free(id2);
    msg_unref(web1);
    msg_unref(web2);
    buf_free(&err);
    buf_free(&out);
}
END_TEST

START_TEST(test_parse_time)
{
    int64_t ms;

    ck_assert_int_eq(silences_parse_time("2026-12-04T18:00:00Z", &ms), 0);
    ck_assert_int_eq(ms, 1796407200000LL);
    ck_assert_int_eq(silences_parse_time("2026-12-04 19:00+01:00", &ms), 0);
    ck_assert_int_eq(ms, 1796407200000LL);
    ck_assert_int_eq(silences_parse_time("1796407200", &ms), 0);
    ck_assert_int_eq(ms, 1796407200000LL);
    ck_assert_int_eq(silences_parse_time("2026-13-01", &ms), -1);
    ck_assert_int_eq(silences_parse_time("tomorrow", &ms), -1);
    ck_assert_int_eq(silences_parse_time("2026-12-04T18:00:00Zx", &ms), -1);
}
END_TEST

static struct conf *
conf_with(size_t max, const char *source, const char *target, const char *equal)
{
    struct conf *c = calloc(1, sizeof(*c));

    c->max_alerts = max;
    if (source) {
        c->inhibits = calloc(1, sizeof(*c->inhibits));
        c->inhibits[0].source = strdup(source);
        c->inhibits[0].target = strdup(target);
        c->inhibits[0].equal = calloc(1, sizeof(char *));
        c->inhibits[0].equal[0] = strdup(equal);
        c->inhibits[0].nequal = 1;
        c->ninhibits = 1;
    }
    return c;
}

static void
record(struct alerts *a, struct msg *m, uint64_t now)
{
    struct buf id = BUF_INIT;
    const char *by;

    alerts_id(a, m, &id);
    by = alerts_inhibited_by(a, m, buf_str(&id));
    alerts_record(a, buf_str(&id), m, by ? ALERT_INHIBITED : ALERT_FIRING, by, now);
    buf_free(&id);
}

START_TEST(test_store)
{
    struct conf *c = conf_with(3, "rule_id=absent", "rule_id!=absent", "HOST");
    struct buf err = BUF_INIT, id = BUF_INIT, out = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    struct msg *down = labels("web1", "corrald", "absent");
    struct msg *b1 = labels("web1", "sshd", "brute"), *b2 = labels("web2", "sshd", "brute");
    char path[] = "/tmp/test_alerts.XXXXXX";
    int fd = mkstemp(path);

    close(fd);
    ck_assert_ptr_nonnull(a);
    alerts_id(a, b1, &id);
    ck_assert_str_eq(buf_str(&id), "brute/web1"); /* no leading or doubled '/' */
    /* the absence of web1 inhibits web1's alerts, not web2's */
    record(a, down, T0);
    record(a, b1, T0 + 1);
    record(a, b2, T0 + 2);
    ck_assert_int_eq(alerts_in_state(a, ALERT_INHIBITED), 1);
    ck_assert_int_eq(alerts_in_state(a, ALERT_FIRING), 2);
    ck_assert_int_eq(alerts_get_stats(a)->inhibited, 1);
    /* a reload: the new store takes the entries over, and they still inhibit */
    {
        struct alerts *fresh = alerts_new(c, &err);
        alerts_adopt(fresh, a);
        alerts_free(a);
        a = fresh;
        ck_assert_int_eq(alerts_count(a), 3);
        alerts_id(a, b1, &id);
        ck_assert_str_eq(alerts_inhibited_by(a, b1, buf_str(&id)), "absent/web1");
        alerts_id(a, b2, &id);
        ck_assert_ptr_null(alerts_inhibited_by(a, b2, buf_str(&id)));
    }
    /* web1 back: a clear of the same id resolves it and ends the inhibition */
    msg_tag_set(down, tag_intern("corral.clear", 12));
    record(a, down, T0 + 3);
    ck_assert_int_eq(alerts_in_state(a, ALERT_RESOLVED), 1);
    record(a, b1, T0 + 4);
    ck_assert_int_eq(alerts_in_state(a, ALERT_INHIBITED), 0);
    ck_assert_int_eq(alerts_in_state(a, ALERT_FIRING), 2);
    alerts_delivery(a, "mail", b1, ALERT_DELIVERED, T0 + 5);
    /* saved and read back */
    ck_assert_int_eq(alerts_save(a, path), 0);
    alerts_free(a);
    a = alerts_new(c, &err);
    ck_assert_int_eq(alerts_load(a, path), 0);
    ck_assert_int_eq(alerts_count(a), 3);
    ck_assert_int_eq(alerts_in_state(a, ALERT_RESOLVED), 1);
    alerts_json(a, NULL, &out);
    ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"mail\":{\"state\":\"delivered\""));
    ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"count\":2"));
    /* the bound: the resolved alert goes first */
    {
        struct msg *b3 = labels("web3", "sshd", "brute");
        record(a, b3, T0 + 6);
        msg_unref(b3);
    }
    ck_assert_int_eq(alerts_count(a), 3);
    ck_assert_int_eq(alerts_in_state(a, ALERT_RESOLVED), 0);
    ck_assert_int_eq(alerts_get_stats(a)->forgotten, 1);
    /* a bad inhibit matcher is refused with its line */
    {
        struct conf *bad = conf_with(3, "HOST=~\"(\"", "HOST=a", "HOST");
        bad->inhibits[0].line = 7;
        buf_reset(&err);
        ck_assert_ptr_null(alerts_new(bad, &err));
        ck_assert_ptr_nonnull(strstr(buf_str(&err), ":7: inhibit source="));
        conf_free(bad);
    }
    alerts_free(a);
    conf_free(c);
    unlink(path);
    msg_unref(down);
    msg_unref(b1);
    msg_unref(b2);
    buf_free(&err);
    buf_free(&id);
    buf_free(&out);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("alerts");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_matchers);
    tcase_add_test(tc, test_silences);
    tcase_add_test(tc, test_parse_time);
    tcase_add_test(tc, test_store);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
