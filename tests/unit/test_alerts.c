/*
 * Unit tests: Alertmanager label matchers (engine/labelmatch): the four
 * operators, anchored regexes, quoting, aliases, the errors; the silences
 * (agent/silences): add with validation that changes nothing on error,
 * matching by time, expire, query, retention, the file read back; the alert
 * store (agent/alerts): ids, states, clears, inhibition, the bound, and its
 * file read back; the lifecycle: resolution by clear, resolve timeout and
 * by hand with resolved notifications to the send-resolved executors only,
 * once; live muting (a silence added or expired, an inhibition source
 * firing or resolving, the period a resolved source was active); a firing
 * alert never forgotten for a new one; the notification history; two
 * nodes' stores merged (alerts_export, alerts_merge).
 */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alerting/alerts.h"
#include "agent/conf/conf.h"
#include "agent/alerting/silences.h"
#include "engine/durable.h"
#include "engine/labelmatch.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "engine/wire.h"
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

/* Records m as the server does: silences, then inhibitions; routed to targets. */
static bool
record_to(struct alerts *a, struct silences *sil, struct msg *m, uint64_t now,
          const struct alert_target *targets, size_t ntargets)
{
    struct buf id = BUF_INIT;
    const char *by = NULL;
    enum alert_state st = ALERT_FIRING;
    bool r;

    alerts_id(a, m, &id);
    if (sil && (by = silences_match(sil, m, now)))
        st = ALERT_SILENCED;
    else if ((by = alerts_inhibited_by(a, m, buf_str(&id))))
        st = ALERT_INHIBITED;
    r = alerts_record(a, buf_str(&id), m, st, by, targets, ntargets, now);
    if (alerts_sources_changed(a)) alerts_reinhibit(a, now);
    buf_free(&id);
    return r;
}

static void
record(struct alerts *a, struct msg *m, uint64_t now)
{
    record_to(a, NULL, m, now, NULL, 0);
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
    alerts_json(a, NULL, NULL, &out);
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

/* What the store handed to executors (alerts_set_notify). */
struct told {
    char executor[32][16];
    char status[32][16]; /* "resolved" (tag corral.clear) or "firing" */
    char how[32][16];    /* corral.resolved_by */
    char host[32][16];
    size_t n;
};

static void
on_notify(void *arg, const char *executor, const struct msg *m)
{
    struct told *t = arg;
    size_t len;
    const char *v;

    ck_assert_uint_lt(t->n, 32);
    snprintf(t->executor[t->n], 16, "%s", executor);
    snprintf(t->status[t->n], 16, "%s", alerts_is_clear(m) ? "resolved" : "firing");
    v = msg_get(m, nv_intern_str("corral.resolved_by"), &len);
    snprintf(t->how[t->n], 16, "%.*s", v ? (int)len : 0, v ? v : "");
    v = msg_get(m, NV_HOST, &len);
    snprintf(t->host[t->n], 16, "%.*s", v ? (int)len : 0, v ? v : "");
    t->n++;
}

static const struct alert_target MAIL_TRAP[] = {{"mail", true}, {"trap", false}};

static const char *
state_of_id(struct alerts *a, const char *id)
{
    static char state[32];
    struct buf out = BUF_INIT;
    json_error_t e;
    json_t *j;

    alerts_json(a, NULL, id, &out);
    j = json_loads(buf_str(&out), 0, &e);
    ck_assert_ptr_nonnull(j);
    snprintf(state, sizeof(state), "%s",
             json_array_size(j) ? json_string_value(json_object_get(json_array_get(j, 0), "state"))
                                : "absent");
    json_decref(j);
    buf_free(&out);
    return state;
}

START_TEST(test_resolution)
{
    struct conf *c = conf_with(10, NULL, NULL, NULL);
    struct buf err = BUF_INIT;
    struct alerts *a;
    struct told t = {0};
    struct msg *b1 = labels("web1", "sshd", "brute"), *oom = labels("db1", "kernel", "oom");
    struct msg *keep = labels("nas1", "kernel", "raid"), *clear;

    c->resolve_timeout = 60;
    a = alerts_new(c, &err);
    alerts_set_notify(a, on_notify, &t);
    msg_set(keep, nv_intern_str("corral.resolve_after"), "never", 5);
    record_to(a, NULL, b1, T0, MAIL_TRAP, 2);
    record_to(a, NULL, keep, T0, MAIL_TRAP, 2);
    /* raised again at T0 + 30 s: the timeout counts from there */
    record_to(a, NULL, b1, T0 + 30000, MAIL_TRAP, 2);
    ck_assert_uint_eq(alerts_tick(a, T0 + 89999), 0);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "firing");
    ck_assert_uint_eq(alerts_tick(a, T0 + 90000), 1);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "resolved");
    /* told once, to the executor whose route says send-resolved */
    ck_assert_uint_eq(t.n, 1);
    ck_assert_str_eq(t.executor[0], "mail");
    ck_assert_str_eq(t.status[0], "resolved");
    ck_assert_str_eq(t.how[0], "timeout");
    ck_assert_uint_eq(alerts_tick(a, T0 + 999999), 0);
    ck_assert_uint_eq(t.n, 1);
    /* corral.resolve_after="never": only a clear or a hand resolves it */
    ck_assert_str_eq(state_of_id(a, "raid/nas1"), "firing");
    ck_assert_int_eq(alerts_resolve(a, "raid/nas1", T0 + 1000000), 0);
    ck_assert_int_eq(alerts_resolve(a, "raid/nas1", T0 + 1000001), -1);
    ck_assert_int_eq(alerts_resolve(a, "no/such", T0 + 1000001), -1);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_str_eq(t.how[1], "hand");
    ck_assert_uint_eq(alerts_get_stats(a)->resolved_hand, 1);
    /* a clear: the executors it is routed to get it itself; the others that were told get one */
    record_to(a, NULL, oom, T0, (const struct alert_target[]){{"pager", true}, {"mail", true}}, 2);
    clear = msg_clone(oom);
    msg_tag_set(clear, tag_intern("corral.clear", 12));
    record_to(a, NULL, clear, T0 + 5, (const struct alert_target[]){{"mail", true}}, 1);
    ck_assert_str_eq(state_of_id(a, "oom/db1"), "resolved");
    ck_assert_uint_eq(t.n, 3);
    ck_assert_str_eq(t.executor[2], "pager");
    ck_assert_str_eq(t.status[2], "resolved");
    /* a second clear tells nobody again */
    record_to(a, NULL, clear, T0 + 6, NULL, 0);
    ck_assert_uint_eq(t.n, 3);
    /* raised again after its resolution: firing, a new episode */
    record_to(a, NULL, b1, T0 + 2000000, MAIL_TRAP, 2);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "firing");
    alerts_free(a);
    conf_free(c);
    msg_unref(b1);
    msg_unref(oom);
    msg_unref(keep);
    msg_unref(clear);
    buf_free(&err);
}
END_TEST

START_TEST(test_live_muting)
{
    struct conf *c = conf_with(10, "rule_id=absent", "rule_id!=absent", "HOST");
    struct buf err = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    struct silences *sil = silences_new(NULL, 3600, 10, T0);
    struct told t = {0};
    struct msg *b1 = labels("web1", "sshd", "brute"), *b2 = labels("web2", "sshd", "brute");
    struct msg *down = labels("web1", "corrald", "absent");
    const char *ids[1];
    char *sid;

    alerts_set_notify(a, on_notify, &t);
    record_to(a, sil, b1, T0, MAIL_TRAP, 2);
    record_to(a, sil, b2, T0, MAIL_TRAP, 2);
    /* a silence added while web1's alert fires silences it at once */
    sid = add(sil, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\"}", T0 + 1000, &err);
    ck_assert_ptr_nonnull(sid);
    ck_assert_uint_eq(alerts_remute(a, sil, T0 + 1000), 1);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "silenced");
    ck_assert_str_eq(state_of_id(a, "brute/web2"), "firing");
    ck_assert_uint_eq(t.n, 0);
    /* expired: firing again, and sent to the executors its routes chose */
    ids[0] = sid;
    ck_assert_int_eq(silences_expire(sil, ids, 1, T0 + 2000, &err), 0);
    ck_assert_uint_eq(alerts_remute(a, sil, T0 + 2000), 1);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "firing");
    ck_assert_uint_eq(t.n, 2);
    ck_assert_str_eq(t.executor[0], "mail");
    ck_assert_str_eq(t.executor[1], "trap");
    ck_assert_str_eq(t.status[0], "firing");
    /* an inhibition source firing holds back web1's alert already firing, not web2's */
    t.n = 0;
    record_to(a, sil, down, T0 + 3000, NULL, 0);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "inhibited");
    ck_assert_str_eq(state_of_id(a, "brute/web2"), "firing");
    ck_assert_uint_eq(t.n, 0);
    /* its resolution releases it: sent again */
    msg_tag_set(down, tag_intern("corral.clear", 12));
    record_to(a, sil, down, T0 + 4000, NULL, 0);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "firing");
    ck_assert_uint_eq(t.n, 2);
    free(sid);
    alerts_free(a);
    silences_free(sil);
    conf_free(c);
    msg_unref(b1);
    msg_unref(b2);
    msg_unref(down);
    buf_free(&err);
}
END_TEST

/* The ids a store reported changed (alerts_set_replica). */
struct changed {
    char id[8][64];
    size_t n;
};

static void
on_changed(void *arg, const char *id)
{
    struct changed *ch = arg;

    ck_assert_uint_lt(ch->n, 8);
    snprintf(ch->id[ch->n++], 64, "%s", id);
}

/* A record that names one executor twice, as fuzz_alerts_merge found it (merged twice, it
 * changed the store twice). */
static const unsigned char dup_executor[] = {
    0xa1, 0x93, 0x99, 0xf8, 0xa1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4d, 0x53,
    0x45, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x60, 0x30, 0x00, 0x00, 0x74, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
};

/* from's record of id merged into to: alerts_merge's result */
static int
ship(struct alerts *from, struct alerts *to, const char *id)
{
    struct buf rec = BUF_INIT;
    int rc;

    ck_assert_int_eq(alerts_export(from, id, &rec), 0);
    rc = alerts_merge(to, rec.p, rec.len);
    buf_free(&rec);
    return rc;
}

/*
 * Two nodes' stores: a change is reported once until exported; merged into
 * the other store, an alert is listed there, sent to none of its executors,
 * and inhibits there; a resolution made by hand on the other node wins over
 * the older firing and is announced by the first node to the executor it
 * told; an older record changes nothing; a damaged one is refused.
 */
START_TEST(test_merge)
{
    struct conf *c = conf_with(10, "rule_id=absent", "rule_id!=absent", "HOST");
    struct buf err = BUF_INIT, rec = BUF_INIT, old = BUF_INIT;
    struct alerts *a = alerts_new(c, &err), *b = alerts_new(c, &err);
    struct told ta = {0}, tb = {0};
    struct changed ch = {0};
    struct msg *b1 = labels("web1", "sshd", "brute"), *down = labels("web1", "corrald", "absent");
    struct msg *oom = labels("web1", "kernel", "oom");

    alerts_set_notify(a, on_notify, &ta);
    alerts_set_notify(b, on_notify, &tb);
    alerts_set_replica(a, on_changed, &ch);
    record_to(a, NULL, b1, T0, MAIL_TRAP, 2);
    ck_assert_uint_eq(ch.n, 1);
    ck_assert_str_eq(ch.id[0], "brute/web1");
    alerts_delivery(a, "mail", b1, ALERT_DELIVERED, T0 + 10);
    ck_assert_uint_eq(ch.n, 1); /* not exported yet: reported once */
    ck_assert_int_eq(alerts_export(a, "brute/web1", &old), 0);
    ck_assert_int_eq(alerts_merge(b, old.p, old.len), 1);
    ck_assert_str_eq(state_of_id(b, "brute/web1"), "firing");
    ck_assert_int_eq(alerts_merge(b, old.p, old.len), 0); /* not newer */
    alerts_remute(b, NULL, T0 + 20);
    ck_assert_uint_eq(tb.n, 0);
    /* its history came along */
    {
        struct buf out = BUF_INIT;
        alerts_json(b, NULL, "brute/web1", &out);
        ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"delivered\""));
        buf_free(&out);
    }
    /* an inhibition source of node a inhibits on node b */
    record_to(a, NULL, down, T0 + 30, NULL, 0);
    ck_assert_int_eq(ship(a, b, "absent/web1"), 1);
    record_to(b, NULL, oom, T0 + 40, NULL, 0);
    ck_assert_str_eq(state_of_id(b, "oom/web1"), "inhibited");
    /* resolved by hand on b: a takes it, and tells mail (send-resolved), once */
    ck_assert_int_eq(alerts_resolve(b, "brute/web1", T0 + 50), 0);
    ck_assert_uint_eq(tb.n, 0);
    ck_assert_int_eq(ship(b, a, "brute/web1"), 1);
    ck_assert_str_eq(state_of_id(a, "brute/web1"), "resolved");
    ck_assert_uint_eq(ta.n, 1);
    ck_assert_str_eq(ta.executor[0], "mail");
    ck_assert_str_eq(ta.status[0], "resolved");
    /* the firing of before the resolution does not undo it */
    ck_assert_int_eq(alerts_merge(b, old.p, old.len), 0);
    ck_assert_str_eq(state_of_id(b, "brute/web1"), "resolved");
    ck_assert_int_eq(ship(a, b, "brute/web1"), 0); /* the same change, back */
    /* raised again on a after it (inhibited there now, by web1's absence): so on b */
    record_to(a, NULL, b1, T0 + 60, MAIL_TRAP, 2);
    ck_assert_int_eq(ship(a, b, "brute/web1"), 1);
    ck_assert_str_eq(state_of_id(b, "brute/web1"), "inhibited");
    /* damaged records */
    ck_assert_int_eq(alerts_merge(b, "abc", 3), -1);
    ck_assert_int_eq(alerts_export(a, "brute/web1", &rec), 0);
    ck_assert_int_eq(alerts_merge(b, rec.p, rec.len / 2), -1);
    ck_assert_int_eq(alerts_export(a, "no/such", &rec), -1);
    /* an executor twice: refused, nothing taken in */
    alerts_free(a);
    a = alerts_new(c, &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(alerts_merge(a, (const char *)dup_executor, sizeof(dup_executor)), -1);
    ck_assert_int_eq(alerts_count(a), 0);
    alerts_free(a);
    alerts_free(b);
    conf_free(c);
    msg_unref(b1);
    msg_unref(down);
    msg_unref(oom);
    buf_free(&err);
    buf_free(&rec);
    buf_free(&old);
}
END_TEST

/* id's record in a, exported into rec (cleared first) */
static void
export_to(struct alerts *a, const char *id, struct buf *rec)
{
    buf_reset(rec);
    ck_assert_int_eq(alerts_export(a, id, rec), 0);
}

/*
 * Two nodes write the same alert's record, in either order: the owner
 * resolves it after a clear; the other node, which had not heard of that
 * yet, delivers the firing (a work queue gives it any node) a millisecond
 * later by its clock, or in the same millisecond.  The resolution is never
 * lost, each node keeps the other's delivery, and a node that held what the
 * incoming record lacked writes the union back for the bucket.
 */
START_TEST(test_merge_interleaved)
{
    struct conf *c = conf_with(10, "rule_id=absent", "rule_id!=absent", "HOST");
    struct buf err = BUF_INIT, ra = BUF_INIT, rb = BUF_INIT, r3 = BUF_INIT;
    struct msg *b1 = labels("web1", "sshd", "brute"), *clear;
    int gap;

    clear = msg_clone(b1);
    msg_tag_set(clear, tag_intern("corral.clear", 12));
    for (gap = 0; gap <= 10; gap += 10) {
        struct alerts *a = alerts_new(c, &err), *b = alerts_new(c, &err);
        struct alerts *x = alerts_new(c, &err), *y = alerts_new(c, &err);
        struct changed ch = {0};
        struct told tb = {0};
        struct buf out = BUF_INIT;

        alerts_set_notify(b, on_notify, &tb);
        record_to(a, NULL, b1, T0, MAIL_TRAP, 2);
        ck_assert_int_eq(ship(a, b, "brute/web1"), 1);
        /* the owner (a) resolves it by a clear; b delivers the firing, not knowing */
        record_to(a, NULL, clear, T0 + 50, NULL, 0);
        ck_assert_str_eq(state_of_id(a, "brute/web1"), "resolved");
        alerts_delivery(b, "mail", b1, ALERT_DELIVERED, T0 + 50 + gap);
        export_to(a, "brute/web1", &ra);
        export_to(b, "brute/web1", &rb);
        /* b takes the resolution though its own change is later, and writes the union back */
        alerts_set_replica(b, on_changed, &ch);
        ck_assert_int_eq(alerts_merge(b, ra.p, ra.len), 1);
        ck_assert_str_eq(state_of_id(b, "brute/web1"), "resolved");
        ck_assert_uint_eq(ch.n, 1);
        ck_assert_uint_eq(tb.n, 0); /* b told no executor that it fired */
        /* a keeps its resolution and takes b's delivery */
        ck_assert_int_eq(alerts_merge(a, rb.p, rb.len), 1);
        ck_assert_str_eq(state_of_id(a, "brute/web1"), "resolved");
        alerts_json(a, NULL, "brute/web1", &out);
        ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"delivered\""));
        buf_reset(&out);
        /* a third node, either order of the bucket: resolved */
        ck_assert_int_eq(alerts_merge(x, rb.p, rb.len), 1);
        ck_assert_int_eq(alerts_merge(x, ra.p, ra.len), 1);
        ck_assert_str_eq(state_of_id(x, "brute/web1"), "resolved");
        ck_assert_int_eq(alerts_merge(y, ra.p, ra.len), 1);
        ck_assert_int_eq(alerts_merge(y, rb.p, rb.len), 1);
        ck_assert_str_eq(state_of_id(y, "brute/web1"), "resolved");
        /* b's union, the bucket's last word, says both; merged again, it changes nothing */
        export_to(b, "brute/web1", &r3);
        ck_assert_int_eq(alerts_merge(a, r3.p, r3.len), 0);
        ck_assert_int_eq(alerts_merge(x, r3.p, r3.len), 0);
        alerts_json(x, NULL, "brute/web1", &out);
        ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"delivered\""));
        ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"resolved\""));
        buf_reset(&out);
        /* a delivery made on x before the record of a new alert came: x keeps it for the record */
        if (gap == 0) {
            struct msg *m2 = labels("web2", "sshd", "brute");
            alerts_set_replica(x, on_changed, &ch);
            ch.n = 0;
            alerts_delivery(x, "mail", m2, ALERT_DELIVERED, T0 + 70);
            record_to(a, NULL, m2, T0 + 60, MAIL_TRAP, 2);
            ck_assert_int_eq(ship(a, x, "brute/web2"), 1);
            ck_assert_uint_eq(ch.n, 1); /* written back with it */
            alerts_json(x, NULL, "brute/web2", &out);
            ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"delivered\""));
            buf_reset(&out);
            ck_assert_int_eq(ship(x, a, "brute/web2"), 1);
            alerts_json(a, NULL, "brute/web2", &out);
            ck_assert_ptr_nonnull(strstr(buf_str(&out), "\"delivered\""));
            buf_reset(&out);
            msg_unref(m2);
        }
        /* raised again on a afterwards: firing everywhere, whatever b wrote before */
        record_to(a, NULL, b1, T0 + 100, MAIL_TRAP, 2);
        export_to(a, "brute/web1", &ra);
        ck_assert_int_eq(alerts_merge(b, ra.p, ra.len), 1);
        ck_assert_int_eq(alerts_merge(b, rb.p, rb.len), 0);
        ck_assert_str_eq(state_of_id(b, "brute/web1"), "firing");
        alerts_free(a);
        alerts_free(b);
        alerts_free(x);
        alerts_free(y);
        buf_free(&out);
    }
    conf_free(c);
    msg_unref(b1);
    msg_unref(clear);
    buf_free(&err);
    buf_free(&ra);
    buf_free(&rb);
    buf_free(&r3);
}
END_TEST

static void
stamp(struct msg *m, uint64_t ms)
{
    struct msg_time t = {(int64_t)(ms / 1000), (int32_t)(ms % 1000) * 1000, 0};

    msg_set_stamp(m, &t);
}

START_TEST(test_inhibit_window)
{
    struct conf *c = conf_with(10, "rule_id=absent", "rule_id!=absent", "HOST");
    struct buf err = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    struct msg *down = labels("web1", "corrald", "absent");
    struct msg *late = labels("web1", "kernel", "oom"), *now = labels("web1", "kernel", "raid");
    struct msg *other = labels("web2", "kernel", "oom");

    /* web1 silent since T0 (corral.since), reported at T0 + 600 s, back at T0 + 900 s */
    msg_set(down, nv_intern_str("corral.since"), "2026-12-04T00:00:00Z", 20);
    record(a, down, T0 + 600000);
    msg_tag_set(down, tag_intern("corral.clear", 12));
    record(a, down, T0 + 900000);
    /* then the lines it queued arrive: stamped while it was away, they are inhibited */
    stamp(late, T0 + 300000);
    record(a, late, T0 + 901000);
    ck_assert_str_eq(state_of_id(a, "oom/web1"), "inhibited");
    /* a line of after its return is not; nor another host's line of that time */
    stamp(now, T0 + 901000);
    record(a, now, T0 + 901000);
    ck_assert_str_eq(state_of_id(a, "raid/web1"), "firing");
    stamp(other, T0 + 300000);
    record(a, other, T0 + 901000);
    ck_assert_str_eq(state_of_id(a, "oom/web2"), "firing");
    alerts_free(a);
    conf_free(c);
    msg_unref(down);
    msg_unref(late);
    msg_unref(now);
    msg_unref(other);
    buf_free(&err);
}
END_TEST

/*
 * A topology rule: the link-down alert of sw1's port ge-0/0/1 inhibits the
 * absence of the hosts behind that port (web1 directly, app1 through web1),
 * not of a host behind another port (web2) nor of the switch itself; its
 * clear releases them at once, whatever their time (no window).
 */
START_TEST(test_inhibit_topology)
{
    char path[] = "/tmp/test_alerts_topo.XXXXXX";
    int fd = mkstemp(path);
    static const char text[] = "web1 sw1 ge-0/0/1\nweb2 sw1 ge-0/0/2\napp1 web1\n";
    struct conf *c = conf_with(10, NULL, NULL, NULL);
    struct buf err = BUF_INIT;
    struct alerts *a;
    struct msg *link = labels("sw1", "snmptrap", "linkdown");
    struct msg *web1 = labels("web1", "corrald", "absent"),
               *web2 = labels("web2", "corrald", "absent");
    struct msg *app1 = labels("app1", "corrald", "absent"),
               *sw1 = labels("sw1", "corrald", "absent");

    ck_assert(fd >= 0);
    ck_assert(write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1));
    close(fd);
    c->inhibits = calloc(1, sizeof(*c->inhibits));
    c->inhibits[0].source = strdup("rule_id=linkdown");
    c->inhibits[0].target = strdup("rule_id=absent");
    c->inhibits[0].topology = true;
    c->inhibits[0].ports = calloc(2, sizeof(char *));
    c->inhibits[0].ports[0] = strdup("net.if_index");
    c->inhibits[0].ports[1] = strdup("net.interface");
    c->inhibits[0].nports = 2;
    c->inhibits[0].line = 9;
    c->ninhibits = 1;
    /* topology="yes" without a topology file: refused with the rule's line */
    ck_assert_ptr_null(alerts_new(c, &err));
    ck_assert_msg(strstr(buf_str(&err), ":9: inhibit topology=\"yes\" needs a <topology"), "%s",
                  buf_str(&err));
    c->topology_file = strdup(path);
    buf_reset(&err);
    a = alerts_new(c, &err);
    ck_assert_msg(a != NULL, "%s", buf_str(&err));

    msg_set(link, nv_intern_str("net.interface"), "ge-0/0/1", 8);
    stamp(link, T0);
    record(a, link, T0);
    stamp(web1, T0 + 60000);
    record(a, web1, T0 + 60000);
    stamp(web2, T0 + 60000);
    record(a, web2, T0 + 60000);
    stamp(app1, T0 + 60000);
    record(a, app1, T0 + 60000);
    stamp(sw1, T0 + 60000);
    record(a, sw1, T0 + 60000);
    ck_assert_str_eq(state_of_id(a, "absent/web1"), "inhibited");
    ck_assert_str_eq(state_of_id(a, "absent/app1"), "inhibited");
    ck_assert_str_eq(state_of_id(a, "absent/web2"), "firing");
    ck_assert_str_eq(state_of_id(a, "absent/sw1"), "firing");
    /* a reload reads the file again: web2 moved behind ge-0/0/1 */
    {
        static const char moved[] = "web1 sw1 ge-0/0/1\nweb2 sw1 ge-0/0/1\napp1 web1\n";
        struct alerts *fresh;
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(moved, f);
        fclose(f);
        fresh = alerts_new(c, &err);
        ck_assert_msg(fresh != NULL, "%s", buf_str(&err));
        alerts_adopt(fresh, a);
        alerts_free(a);
        a = fresh;
        alerts_reinhibit(a, T0 + 61000);
        ck_assert_str_eq(state_of_id(a, "absent/web2"), "inhibited");
        /* and a broken one is refused with its file and line */
        f = fopen(path, "a");
        ck_assert_ptr_nonnull(f);
        fputs("web3\n", f);
        fclose(f);
        buf_reset(&err);
        ck_assert_ptr_null(alerts_new(c, &err));
        ck_assert_msg(strstr(buf_str(&err), ":4: expected HOST UPSTREAM"), "%s", buf_str(&err));
    }
    /* the port is back: released at once, though their time is within its down time */
    msg_tag_set(link, tag_intern("corral.clear", 12));
    stamp(link, T0 + 120000);
    record(a, link, T0 + 120000);
    ck_assert_str_eq(state_of_id(a, "linkdown/sw1"), "resolved");
    ck_assert_str_eq(state_of_id(a, "absent/web1"), "firing");
    ck_assert_str_eq(state_of_id(a, "absent/app1"), "firing");
    ck_assert_str_eq(state_of_id(a, "absent/web2"), "firing");
    alerts_free(a);
    conf_free(c);
    unlink(path);
    msg_unref(link);
    msg_unref(web1);
    msg_unref(web2);
    msg_unref(app1);
    msg_unref(sw1);
    buf_free(&err);
}
END_TEST

START_TEST(test_never_forget_firing)
{
    struct conf *c = conf_with(2, NULL, NULL, NULL);
    struct buf err = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    struct msg *m1 = labels("web1", "sshd", "r"), *m2 = labels("web2", "sshd", "r");
    struct msg *m3 = labels("web3", "sshd", "r");

    ck_assert(record_to(a, NULL, m1, T0, NULL, 0));
    ck_assert(record_to(a, NULL, m2, T0 + 1, NULL, 0));
    /* both firing: the third is not recorded, and neither is pushed out */
    ck_assert(!record_to(a, NULL, m3, T0 + 2, NULL, 0));
    ck_assert_uint_eq(alerts_count(a), 2);
    ck_assert(alerts_firing(a, "r/web1"));
    ck_assert(alerts_firing(a, "r/web2"));
    ck_assert_uint_eq(alerts_get_stats(a)->unrecorded, 1);
    ck_assert_uint_eq(alerts_get_stats(a)->forgotten, 0);
    /* one resolved: it makes room */
    ck_assert_int_eq(alerts_resolve(a, "r/web1", T0 + 3), 0);
    ck_assert(record_to(a, NULL, m3, T0 + 4, NULL, 0));
    ck_assert(alerts_firing(a, "r/web3"));
    ck_assert(!alerts_known(a, "r/web1"));
    alerts_free(a);
    conf_free(c);
    msg_unref(m1);
    msg_unref(m2);
    msg_unref(m3);
    buf_free(&err);
}
END_TEST

START_TEST(test_history)
{
    struct conf *c = conf_with(10, NULL, NULL, NULL);
    struct buf err = BUF_INIT, out = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    struct msg *m = labels("web1", "sshd", "r"), *res;
    char path[] = "/tmp/test_alerts_hist.XXXXXX";
    int fd = mkstemp(path), i;
    json_error_t e;
    json_t *all, *j, *n;

    close(fd);
    record_to(a, NULL, m, T0, MAIL_TRAP, 2);
    alerts_delivery(a, "mail", m, ALERT_QUEUED, T0 + 1);
    alerts_delivery(a, "mail", m, ALERT_RETRYING, T0 + 2);
    alerts_delivery(a, "mail", m, ALERT_DELIVERED, T0 + 3);
    alerts_delivery(a, "trap", m, ALERT_QUEUED, T0 + 1);
    alerts_delivery(a, "trap", m, ALERT_DEAD, T0 + 4);
    res = msg_clone(m);
    msg_tag_set(res, tag_intern("corral.clear", 12));
    alerts_resolve(a, "r/web1", T0 + 5);
    alerts_delivery(a, "mail", res, ALERT_QUEUED, T0 + 6);
    alerts_delivery(a, "mail", res, ALERT_DELIVERED, T0 + 7);
    /* saved and read back: the history, the resolution and the routes too */
    ck_assert_int_eq(alerts_save(a, path), 0);
    alerts_free(a);
    a = alerts_new(c, &err);
    ck_assert_int_eq(alerts_load(a, path), 0);
    alerts_json(a, NULL, "r/web1", &out);
    all = json_loads(buf_str(&out), 0, &e);
    ck_assert_ptr_nonnull(all);
    j = json_array_get(all, 0);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "resolved");
    ck_assert_str_eq(json_string_value(json_object_get(j, "resolvedBy")), "hand");
    n = json_object_get(j, "notifications");
    ck_assert_uint_eq(json_array_size(n), 7);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(n, 1), "outcome")),
                     "retrying");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(n, 1), "attempt")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(n, 2), "attempt")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(n, 6), "status")),
                     "resolved");
    ck_assert(json_is_true(
        json_object_get(json_object_get(json_object_get(j, "executors"), "mail"), "sendResolved")));
    json_decref(all);
    /* bounded: the last ALERTS_HISTORY are kept, all are counted */
    for (i = 0; i < ALERTS_HISTORY + 5; i++) alerts_delivery(a, "mail", m, ALERT_QUEUED, T0 + 10);
    buf_reset(&out);
    alerts_json(a, NULL, "r/web1", &out);
    j = json_loads(buf_str(&out), 0, &e);
    ck_assert_uint_eq(json_array_size(json_object_get(json_array_get(j, 0), "notifications")),
                      ALERTS_HISTORY);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(j, 0), "notified")),
                     7 + ALERTS_HISTORY + 5);
    json_decref(j);
    alerts_free(a);
    conf_free(c);
    unlink(path);
    msg_unref(m);
    msg_unref(res);
    buf_free(&err);
    buf_free(&out);
}
END_TEST

/* The whole of a file, and its length. */
static char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data = malloc(65536);

    ck_assert_ptr_nonnull(f);
    *len = fread(data, 1, 65536, f);
    fclose(f);
    return data;
}

static void
spill(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* A store of three alerts read back from path after damage: how many it kept. */
static size_t
reload(const struct conf *c, const char *path, int want_rc, uint64_t *errors)
{
    struct buf err = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    size_t n;

    ck_assert_int_eq(alerts_load(a, path), want_rc);
    n = alerts_count(a);
    *errors = alerts_get_stats(a)->load_errors;
    alerts_free(a);
    buf_free(&err);
    return n;
}

/*
 * The alert store file read past damage: a damaged stretch is skipped to the
 * next record that checks out, a record that checks out but does not decode
 * is skipped, each counted in load_errors; a file that is not a store, or
 * cannot be read, is one load error and nothing read.
 */
START_TEST(test_load_damage)
{
    struct conf *c = conf_with(10, NULL, NULL, NULL);
    struct buf err = BUF_INIT, rec = BUF_INIT;
    struct alerts *a = alerts_new(c, &err);
    struct msg *m[3] = {labels("web1", "sshd", "brute"), labels("web2", "sshd", "brute"),
                        labels("web3", "sshd", "brute")};
    char path[] = "/tmp/test_alerts_damage.XXXXXX";
    char *data;
    size_t len, i, hl = strlen("CORRALAL2\n");
    uint64_t errors;
    int fd = mkstemp(path);

    close(fd);
    for (i = 0; i < 3; i++) record(a, m[i], T0 + i);
    ck_assert_int_eq(alerts_save(a, path), 0);
    alerts_free(a);
    data = slurp(path, &len);
    ck_assert_uint_eq(reload(c, path, 0, &errors), 3);
    ck_assert_uint_eq(errors, 0);

    /* a byte of the second record changed: it is lost, the others are read */
    {
        size_t second = hl + 8 + wire_load32((const unsigned char *)data + hl);
        data[second + 20] ^= 0x55;
        spill(path, data, len);
        ck_assert_uint_eq(reload(c, path, 0, &errors), 2);
        ck_assert_uint_eq(errors, 1);
        data[second + 20] ^= 0x55;
    }
    /* cut inside the last record: the two before it are read */
    spill(path, data, len - 5);
    ck_assert_uint_eq(reload(c, path, 0, &errors), 2);
    ck_assert_uint_eq(errors, 1);

    /* a record whose checksum is right but whose content is not an alert */
    {
        static const unsigned char junk[] = {1, 0, 0, 0, 'x', 0xff, 0xff, 0xff};
        unsigned char head[8];
        buf_append(&rec, data, len);
        wire_store32(head, sizeof(junk));
        wire_store32(head + 4, durable_crc32(0, junk, sizeof(junk)));
        buf_append(&rec, (const char *)head, 8);
        buf_append(&rec, (const char *)junk, sizeof(junk));
        spill(path, rec.p, rec.len);
        ck_assert_uint_eq(reload(c, path, 0, &errors), 3);
        ck_assert_uint_eq(errors, 1);
    }

    /* not a store at all */
    spill(path, "CORRALXX\nwhatever", 17);
    ck_assert_uint_eq(reload(c, path, -1, &errors), 0);
    ck_assert_uint_eq(errors, 1);
    spill(path, "CO", 2);
    ck_assert_uint_eq(reload(c, path, -1, &errors), 0);
    ck_assert_uint_eq(errors, 1);
    /* unreadable: a directory in its place; absent: no error */
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_uint_eq(reload(c, path, -1, &errors), 0);
    ck_assert_uint_eq(errors, 1);
    rmdir(path);
    ck_assert_uint_eq(reload(c, path, 0, &errors), 0);
    ck_assert_uint_eq(errors, 0);

    for (i = 0; i < 3; i++) msg_unref(m[i]);
    free(data);
    buf_free(&rec);
    buf_free(&err);
    conf_free(c);
}
END_TEST

/*
 * A disk that fails under a save of the store (durable.c's fault hook), at
 * each step: the save says so, the store in memory is untouched, and the
 * file saved before is still there whole; the next save, the disk well
 * again, has everything.
 */
START_TEST(test_save_faults)
{
    static const struct {
        enum durable_op op;
        enum durable_fault_kind kind;
        int err;
    } faults[] = {
        {DURABLE_OP_OPEN, DURABLE_FAULT_ONCE, EACCES},
        {DURABLE_OP_WRITE, DURABLE_FAULT_ONCE, ENOSPC},
        {DURABLE_OP_WRITE, DURABLE_FAULT_SHORT, ENOSPC},
        {DURABLE_OP_SYNC, DURABLE_FAULT_ONCE, EIO},
        {DURABLE_OP_RENAME, DURABLE_FAULT_ONCE, EXDEV},
    };
    struct conf *c = conf_with(3, "rule_id=absent", "rule_id!=absent", "HOST");
    struct buf err = BUF_INIT;
    struct alerts *a = alerts_new(c, &err), *b;
    struct msg *b1 = labels("web1", "sshd", "brute"), *b2 = labels("web2", "sshd", "brute");
    char path[] = "/tmp/test_alerts.XXXXXX";
    int fd = mkstemp(path);
    size_t i;

    close(fd);
    ck_assert_ptr_nonnull(a);
    record(a, b1, T0);
    ck_assert_int_eq(alerts_save(a, path), 0);
    record(a, b2, T0 + 1);
    for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
        durable_fault_set(faults[i].op, 1, faults[i].kind, faults[i].err);
        errno = 0;
        ck_assert_int_eq(alerts_save(a, path), -1);
        ck_assert_int_eq(errno, faults[i].err);
        ck_assert_uint_eq(durable_fault_failed(faults[i].op), 1);
        durable_fault_clear();
        ck_assert_int_eq(alerts_count(a), 2);
        b = alerts_new(c, &err);
        ck_assert_int_eq(alerts_load(b, path), 0);
        ck_assert_int_eq(alerts_count(b), 1);
        alerts_free(b);
    }
    ck_assert_int_eq(alerts_save(a, path), 0);
    b = alerts_new(c, &err);
    ck_assert_int_eq(alerts_load(b, path), 0);
    ck_assert_int_eq(alerts_count(b), 2);
    alerts_free(b);
    alerts_free(a);
    conf_free(c);
    unlink(path);
    msg_unref(b1);
    msg_unref(b2);
    buf_free(&err);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("alerts");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_matchers);
    tcase_add_test(tc, test_silences);
    tcase_add_test(tc, test_store);
    tcase_add_test(tc, test_load_damage);
    tcase_add_test(tc, test_resolution);
    tcase_add_test(tc, test_live_muting);
    tcase_add_test(tc, test_inhibit_window);
    tcase_add_test(tc, test_inhibit_topology);
    tcase_add_test(tc, test_never_forget_firing);
    tcase_add_test(tc, test_history);
    tcase_add_test(tc, test_merge);
    tcase_add_test(tc, test_merge_interleaved);
    tcase_add_test(tc, test_save_faults);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
