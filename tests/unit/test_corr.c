/*
 * Unit tests: the correlation engine.  Timer semantics, emission order, rate
 * limits, create-context and detached contexts, as syslog-ng 3.38's pdbtool
 * behaves (checked with it; tests/compat/corr_diff.py compares at large),
 * and corral's own parts: state files and limits.  Time comes from a fake
 * clock.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/corr.h"
#include "engine/durable.h"
#include "engine/pdb.h"
#include "engine/template.h"
#include "tests/unit/unit_run.h"

#define HEAD                                                                                       \
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"                       \
    "<ruleset name='rs' id='rs'><rules>\n"
#define TAIL "</rules></ruleset></patterndb>\n"

#define T0 1795168800 /* 2026-11-20T10:00:00Z */

/* What a test sees: every emitted message, one line each. */
struct fixture {
    struct pdb *db;
    struct corr *corr;
    struct template *tpl;
    struct buf out;
    uint64_t clock; /* ms */
    int nlog;
};

static uint64_t
fake_clock(void *arg)
{
    return ((struct fixture *)arg)->clock;
}

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    struct fixture *f = arg;
    struct template_env env;

    (void)a;
    template_env_single(&env, &m);
    buf_puts(&f->out, kind == CORR_GENERATED ? "G " : "I ");
    template_eval(f->tpl, &env, &f->out);
    buf_putc(&f->out, '\n');
}

static void
on_log(void *arg, const char *text)
{
    (void)text;
    ((struct fixture *)arg)->nlog++;
}

static struct pdb *
load_rules(const char *rules)
{
    struct pdb *db = pdb_new();
    struct buf xml = BUF_INIT;

    buf_puts(&xml, HEAD);
    buf_puts(&xml, rules);
    buf_puts(&xml, TAIL);
    ck_assert_int_eq(pdb_load_memory(db, "mem.xml", xml.p, xml.len), 0);
    buf_free(&xml);
    return db;
}

/* A new engine with the limits of lim (NULL: the defaults). */
static struct corr *
new_corr_limits(struct fixture *f, const struct corr_opts *lim)
{
    struct corr_opts o;

    memset(&o, 0, sizeof(o));
    if (lim) o = *lim;
    o.emit = on_emit;
    o.log = on_log;
    o.clock = fake_clock;
    o.arg = f;
    return corr_new(f->db, &o);
}

static struct corr *
new_corr(struct fixture *f, size_t max_contexts, size_t max_msgs)
{
    struct corr_opts o;

    memset(&o, 0, sizeof(o));
    o.max_contexts = max_contexts;
    o.max_context_msgs = max_msgs;
    return new_corr_limits(f, &o);
}

static void
setup(struct fixture *f, const char *rules, const char *tpl)
{
    struct buf err = BUF_INIT;

    memset(f, 0, sizeof(*f));
    f->clock = (uint64_t)(T0 + 3600) * 1000;
    f->db = load_rules(rules);
    f->tpl = template_compile_str(tpl ? tpl : "$MESSAGE", &err);
    ck_assert_msg(f->tpl != NULL, "%s", buf_str(&err));
    buf_free(&err);
    f->corr = new_corr(f, 0, 0);
}

static void
teardown(struct fixture *f)
{
    corr_free(f->corr);
    pdb_free(f->db);
    template_free(f->tpl);
    buf_free(&f->out);
}

/* Feeds "MESSAGE" from host/prog[pid] stamped T0 + sec (+ ms). */
static void
feed_full(struct fixture *f, int sec, int ms, const char *host, const char *prog, const char *pid,
          const char *text)
{
    struct msg *m = msg_new();
    struct msg_time t = {T0 + sec, ms * 1000, 0};

    msg_set_stamp(m, &t);
    msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_PROGRAM, prog, strlen(prog));
    if (pid) msg_set(m, NV_PID, pid, strlen(pid));
    msg_set(m, NV_MESSAGE, text, strlen(text));
    corr_process(f->corr, m);
    msg_unref(m);
}

static void
feed(struct fixture *f, int sec, const char *text)
{
    feed_full(f, sec, 0, "h1", "prog", "1", text);
}

/* The output so far, then forgotten. */
static const char *
tmpname(char *path, size_t size, const char *tag)
{
    snprintf(path, size, "/tmp/test_corr.%ld.%s", (long)getpid(), tag);
    return path;
}

static const char *
take(struct fixture *f)
{
    static char copy[8192];

    snprintf(copy, sizeof(copy), "%s", buf_str(&f->out));
    buf_reset(&f->out);
    return copy;
}

static size_t
open_contexts(const struct fixture *f)
{
    struct corr_stats st;

    corr_stats(f->corr, &st);
    return (size_t)st.contexts_open;
}

static const char *timeout_rule =
    "<rule id='r1' provider='t' context-id='${k}' context-timeout='2'>"
    "<patterns><pattern>start @NUMBER:k@</pattern></patterns>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>end ${k}@1 $(context-length)</value>"
    "</values></message></action></actions></rule>\n";

/* Armed at T with N: alive through second T+N, gone at T+N+1 (fractions don't matter). */
START_TEST(test_alive_at_t_plus_n)
{
    struct fixture f;

    setup(&f, timeout_rule, NULL);
    feed(&f, 10, "start 1");
    feed_full(&f, 12, 999, "h1", "prog", "1", "start 1"); /* T+2: joins, re-armed to 14 */
    ck_assert_str_eq(take(&f), "I start 1\nI start 1\n");
    feed(&f, 14, "other");
    ck_assert_str_eq(take(&f), "I other\n");
    ck_assert_uint_eq(open_contexts(&f), 1);
    feed(&f, 15, "other");
    /* expired contexts' messages come before the message that moved time */
    ck_assert_str_eq(take(&f), "G end 1 3\nI other\n");
    ck_assert_uint_eq(open_contexts(&f), 0);
    teardown(&f);
}
END_TEST

/*
 * A deliberate difference: syslog-ng 3.38 files a 1024 s timeout armed at a
 * multiple of 1024 s in the wheel slot it is passing and fires it at the
 * next second it sees (pdbtool: before the line 5 s later).  corral keeps it
 * through T+N like any other (engine/corr.c, corral-rules(5)).
 */
START_TEST(test_1024_at_rotation_start)
{
    struct fixture f;
    int t = 2528; /* T0 + 2528 = 2026-11-20T10:42:08Z, 1753097 * 1024 */

    ck_assert_int_eq((T0 + t) % 1024, 0);
    setup(&f,
          "<rule id='r1' provider='t' context-id='${k}' context-timeout='1024'>"
          "<patterns><pattern>start @NUMBER:k@</pattern></patterns>"
          "<actions><action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>end ${k}@1</value></values></message></action></actions></rule>\n",
          NULL);
    feed(&f, t, "start 1");
    feed(&f, t + 5, "other");
    feed(&f, t + 1024, "other");
    ck_assert_str_eq(take(&f), "I start 1\nI other\nI other\n");
    feed(&f, t + 1025, "other");
    ck_assert_str_eq(take(&f), "G end 1\nI other\n");
    teardown(&f);
}
END_TEST

START_TEST(test_timeout_zero_and_clock)
{
    struct fixture f;

    setup(&f,
          "<rule id='r0' provider='t' context-id='${k}' context-timeout='0'>"
          "<patterns><pattern>start @NUMBER:k@</pattern></patterns>"
          "<values><value name='n'>$(context-length)</value></values>"
          "<actions><action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>end ${k}@1 ${n}@1</value>"
          "</values></message></action></actions></rule>\n",
          NULL);
    feed(&f, 10, "start 1");
    feed_full(&f, 10, 900, "h1", "prog", "1", "start 1");
    feed(&f, 11, "start 1"); /* the old one expires first, then a new one starts */
    ck_assert_str_eq(take(&f), "I start 1\nI start 1\nG end 1 2\nI start 1\n");
    /* a stamp ahead of the clock is clamped to it; time never goes back */
    f.clock = (uint64_t)(T0 + 20) * 1000;
    feed(&f, 100, "x");
    ck_assert_uint_eq(corr_now(f.corr), (uint64_t)(T0 + 20) * 1000);
    ck_assert_str_eq(take(&f), "G end 1 1\nI x\n");
    feed(&f, 5, "start 2");
    ck_assert_uint_eq(corr_now(f.corr), (uint64_t)(T0 + 20) * 1000);
    f.clock += 1000; /* the daemon tick moves an idle engine by the real time elapsed */
    corr_tick(f.corr);
    ck_assert_str_eq(take(&f), "I start 2\nG end 2 1\n");
    teardown(&f);
}
END_TEST

/*
 * Contexts due in the same second fire in the order they went into that
 * second; re-arming to the same second keeps the place, to another one moves
 * to the end (syslog-ng's timer wheel slots).
 */
START_TEST(test_same_second_order)
{
    struct fixture f;

    setup(
        &f,
        "<rule id='r1' provider='t' context-id='${k}' context-timeout='3'>"
        "<patterns><pattern>start @NUMBER:k@</pattern></patterns>"
        "<actions><action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>end ${k}@1</value></values></message></action></actions></rule>\n"
        "<rule id='r2' provider='t' context-id='${k}' context-timeout='2'>"
        "<patterns><pattern>two @NUMBER:k@</pattern></patterns>"
        "<actions><action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>end2 ${k}@1</value></values></message></action></actions></rule>\n",
        NULL);
    feed(&f, 1, "start 1");
    feed(&f, 1, "start 2");
    feed(&f, 1, "start 3");
    feed(&f, 1, "start 1"); /* same target: stays first */
    feed(&f, 2, "two 2");   /* 2+2 = 4, the same target again */
    feed(&f, 9, "x");
    ck_assert_str_eq(take(&f), "I start 1\nI start 2\nI start 3\nI start 1\nI two 2\n"
                               "G end 1\nG end2 2\nG end 3\nI x\n");
    feed(&f, 20, "two 1");   /* due at 22 */
    feed(&f, 20, "start 2"); /* due at 23 */
    feed(&f, 21, "two 1");   /* moved to 23: after 2 */
    feed(&f, 30, "x");
    ck_assert_str_eq(take(&f), "I two 1\nI start 2\nI two 1\nG end 2\nG end2 1\nI x\n");
    teardown(&f);
}
END_TEST

/*
 * Ties between long and short timeouts: syslog-ng's wheel moves a timer due
 * more than a rotation (1024 s) ahead down to its second's slot only just
 * before that rotation, behind the timers armed there directly; one due past
 * 65536 s waits a level higher still (corr.c: wheel_order()).
 */
START_TEST(test_long_timeout_order)
{
    struct fixture f;
    int t0 = -36000; /* 2026-11-20T00:00:00Z */

    setup(
        &f,
        "<rule id='ra' provider='t' context-id='${k}' context-timeout='1024'>"
        "<patterns><pattern>a @NUMBER:k@</pattern></patterns>"
        "<actions><action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>end a${k}@1</value></values></message></action></actions></rule>\n"
        "<rule id='rb' provider='t' context-id='${k}' context-timeout='1020'>"
        "<patterns><pattern>b @NUMBER:k@</pattern></patterns>"
        "<actions><action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>end b${k}@1</value></values></message></action></actions></rule>\n"
        "<rule id='rc' provider='t' context-id='${k}' context-timeout='70000'>"
        "<patterns><pattern>c @NUMBER:k@</pattern></patterns>"
        "<actions><action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>end c${k}@1</value></values></message></action></actions></rule>\n"
        "<rule id='rd' provider='t' context-id='${k}' context-timeout='50000'>"
        "<patterns><pattern>d @NUMBER:k@</pattern></patterns>"
        "<actions><action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>end d${k}@1</value></values></message></action></actions></rule>\n",
        NULL);
    f.clock = (uint64_t)(T0 + 86400) * 1000;
    feed(&f, t0, "c 1");         /* due at t0+70000, waits at level 2 */
    feed(&f, t0 + 20000, "d 2"); /* the same second, at level 1 before c gets there */
    feed(&f, 5380, "a 3");       /* due at 6404, at level 1 */
    feed(&f, 5384, "b 4");       /* the same second, straight at level 0 */
    feed(&f, 6405, "x");
    feed(&f, t0 + 70001, "x");
    ck_assert_str_eq(take(&f), "I c 1\nI d 2\nI a 3\nI b 4\nG end b4\nG end a3\nI x\n"
                               "G end d2\nG end c1\nI x\n");
    teardown(&f);
}
END_TEST

/* Generated messages: inheritance, scope fields and back-references. */
START_TEST(test_generated_messages)
{
    struct fixture f;

    setup(&f,
          "<rule id='r1' provider='t' context-id='c' context-scope='program' context-timeout='5'>"
          "<patterns><pattern>m @NUMBER:k@</pattern></patterns>"
          "<values><value name='v'>${k}@1</value></values>"
          "<actions>"
          "<action><message inherit-properties='TRUE'><values>"
          "<value name='MESSAGE'>last ${k}@1 ${k}@2 $(context-length)</value>"
          "</values></message></action>"
          "<action trigger='timeout'><message inherit-mode='context'><values>"
          "<value name='MESSAGE'>ctx $(context-values ${k}) ${v}</value>"
          "</values></message></action>"
          "<action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>none [$k] $CONTEXT_ID</value>"
          "</values></message></action>"
          "</actions></rule>\n",
          "$HOST/$PROGRAM/$PID $MESSAGE");
    feed_full(&f, 1, 0, "h1", "prog", "1", "m 7");
    feed_full(&f, 2, 0, "h1", "prog", "2", "m 8");
    /* inherited from the trigger, PID kept (program scope sets HOST and PROGRAM) */
    ck_assert_str_eq(take(&f), "I h1/prog/1 m 7\nG h1/prog/1 last 7  2\n"
                               "I h1/prog/2 m 8\nG h1/prog/2 last 8 7 3\n");
    feed(&f, 10, "x");
    ck_assert_str_eq(take(&f), "G h1/prog/2 ctx 7,8,8 7\nG h1/prog/ none [] c\nI h1/prog/1 x\n");
    teardown(&f);
}
END_TEST

/*
 * corral extension also-correlate: a line of r1 joins r1's context and t1's
 * (its own key, scope and timeout); t1's values are set over t1's context,
 * its match actions run after r1's, its timeout actions when its context
 * expires; the line keeps r1's classification and context id.
 */
START_TEST(test_also_correlate)
{
    struct fixture f;

    setup(
        &f,
        "<rule id='r1' provider='t' context-id='a-${a}' context-scope='host' context-timeout='60' "
        "also-correlate='t1'>"
        "<patterns><pattern>fail @ESTRING:u: @@NUMBER:a@</pattern></patterns>"
        "<actions><action condition='\"$(context-length)\" == \"2\"'><message><values>"
        "<value name='MESSAGE'>addr ${a}@1 twice</value>"
        "</values></message></action></actions></rule>\n"
        "<rule id='t1' provider='t' context-id='u-${u}' context-scope='global' "
        "context-timeout='10'>"
        "<values><value name='n'>$(list-count $(filter (\"$_\" eq \"${a}\") "
        "$(context-values ${a})))</value></values>"
        "<actions><action condition='\"${n}\" == \"1\" and "
        "&apos;$(list-count $(context-lookup (\"${n}\" == \"1\") ${a}))&apos; == \"3\"'>"
        "<message><values><value name='MESSAGE'>user ${u}@1 from $(context-lookup (\"${n}\" == "
        "\"1\") ${a}) [$CONTEXT_ID]</value></values></message></action>"
        "<action trigger='timeout'><message><values>"
        "<value name='MESSAGE'>user ${u}@1 over $(context-length)</value>"
        "</values></message></action></actions></rule>\n",
        "${.classifier.rule_id} ${.classifier.context_id} n=${n} $MESSAGE");
    feed_full(&f, 1, 0, "h1", "prog", "1", "fail root 1");
    feed_full(&f, 2, 0, "h2", "prog", "1", "fail root 2");
    feed_full(&f, 3, 0, "h1", "prog", "1", "fail bob 1");
    ck_assert_str_eq(take(&f), "I r1 a-1 n=1 fail root 1\n"
                               "I r1 a-2 n=1 fail root 2\n"
                               "I r1 a-1 n=1 fail bob 1\nG  a-1 n= addr 1 twice\n");
    /* the primary context's action runs first, then t1's */
    feed_full(&f, 4, 0, "h1", "prog", "1", "fail root 2");
    feed_full(&f, 5, 0, "h1", "prog", "1", "fail root 3");
    ck_assert_str_eq(take(&f),
                     "I r1 a-2 n=2 fail root 2\n"
                     "I r1 a-3 n=1 fail root 3\nG  u-root n= user root from 1,2,3 [u-root]\n");
    ck_assert_uint_eq(open_contexts(&f), 6);
    /* t1's contexts time out with t1's timeout (10 s), r1's with r1's (60 s) */
    feed_full(&f, 20, 0, "h3", "prog", "1", "x");
    ck_assert_str_eq(take(&f),
                     "G  u-bob n= user bob over 2\nG  u-root n= user root over 5\nI   n= x\n");
    ck_assert_uint_eq(open_contexts(&f), 4);
    teardown(&f);
}
END_TEST

/*
 * Rate limits: a token bucket per rule, action and scope; credits are added
 * in syslog-ng's fixed point ((elapsed << 8) / ((S << 8) / N)).
 */
START_TEST(test_rate_limit)
{
    struct fixture f;
    struct corr_stats st;
    int i;

    setup(&f,
          "<rule id='r1' provider='t'>"
          "<patterns><pattern>m @NUMBER:k@</pattern></patterns>"
          "<actions><action rate='3/5'><message><values>"
          "<value name='MESSAGE'>g ${k}@1</value></values></message></action></actions></rule>\n"
          "<rule id='r2' provider='t'>"
          "<patterns><pattern>big @NUMBER:k@</pattern></patterns>"
          "<actions><action rate='600/1'><message><values>"
          "<value name='MESSAGE'>b</value></values></message></action></actions></rule>\n",
          NULL);
    for (i = 1; i <= 4; i++) feed(&f, 10, i == 4 ? "m 4" : "m 1");
    ck_assert_str_eq(take(&f), "I m 1\nG g 1\nI m 1\nG g 1\nI m 1\nG g 1\nI m 4\n");
    feed(&f, 11, "m 5"); /* 1 s = 256/426 of a credit: nothing, and the bucket clock stays */
    feed(&f, 12, "m 6"); /* 2 s since the last credit: one */
    feed(&f, 12, "m 7");
    ck_assert_str_eq(take(&f), "I m 5\nI m 6\nG g 6\nI m 7\n");
    /* another process has its own bucket */
    feed_full(&f, 12, 0, "h1", "prog", "2", "m 8");
    ck_assert_str_eq(take(&f), "I m 8\nG g 8\n");
    /* N > 256*S: syslog-ng divides by zero; corral refills elapsed*N/S */
    for (i = 0; i < 601; i++) feed(&f, 20, "big 1");
    feed(&f, 21, "big 1");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.generated, 5 + 601);
    ck_assert_uint_eq(st.rate_limited, 3 + 1);
    teardown(&f);
}
END_TEST

/*
 * The rate= buckets carried to another engine (a cluster's next owner of the
 * partition): it goes on limiting where the first stopped, not from a full
 * bucket.  Damaged data loads nothing.
 */
START_TEST(test_rates_save_load)
{
    struct fixture f, g;
    struct buf b = BUF_INIT;
    size_t dropped = 99;
    const char *rules = "<rule id='r1' provider='t'>"
                        "<patterns><pattern>m @NUMBER:k@</pattern></patterns>"
                        "<actions><action rate='2/60'><message><values>"
                        "<value name='MESSAGE'>g ${k}@1</value></values></message></action>"
                        "</actions></rule>\n";

    setup(&f, rules, NULL);
    feed(&f, 10, "m 1");
    feed(&f, 10, "m 2");
    feed(&f, 10, "m 3");
    ck_assert_str_eq(take(&f), "I m 1\nG g 1\nI m 2\nG g 2\nI m 3\n");
    corr_save_rates(f.corr, &b);

    setup(&g, rules, NULL);
    ck_assert_int_eq(corr_load_rates(g.corr, b.p, b.len, &dropped), 1);
    ck_assert_uint_eq(dropped, 0);
    feed(&g, 11, "m 4");
    ck_assert_str_eq(take(&g), "I m 4\n");
    /* the bucket refills as it would have: a credit every 30 s */
    feed(&g, 41, "m 5");
    ck_assert_str_eq(take(&g), "I m 5\nG g 5\n");
    /* loaded twice: the key has its bucket already */
    ck_assert_int_eq(corr_load_rates(g.corr, b.p, b.len, &dropped), 0);
    ck_assert_uint_eq(dropped, 1);
    teardown(&g);

    /* a damaged byte: nothing */
    setup(&g, rules, NULL);
    b.p[b.len / 2] ^= 0x20;
    ck_assert_int_eq(corr_load_rates(g.corr, b.p, b.len, NULL), -1);
    ck_assert_int_eq(corr_load_rates(g.corr, b.p, 3, NULL), -1);
    feed(&g, 11, "m 6");
    ck_assert_str_eq(take(&g), "I m 6\nG g 6\n");
    teardown(&g);
    teardown(&f);
    buf_free(&b);
}
END_TEST

/*
 * Timeout actions run with the clock at the context's target: a context one
 * creates is armed from there.  At the end (pdbtool) time steps through the
 * deadlines, so the created context fires in its turn.
 */
START_TEST(test_expire_all_in_time_order)
{
    struct fixture f;

    setup(&f,
          "<rule id='r1' provider='t' context-id='${k}' context-timeout='2'>"
          "<patterns><pattern>a @NUMBER:k@</pattern></patterns>"
          "<actions>"
          "<action trigger='timeout' condition='\"$(context-length)\" &gt;= \"2\"'>"
          "<create-context context-id='cc${k}' context-scope='process'>"
          "<message inherit-properties='TRUE'><values>"
          "<value name='MESSAGE'>made</value></values></message></create-context></action>"
          "<action trigger='timeout' rate='1/2'><message><values>"
          "<value name='MESSAGE'>end ${MESSAGE}@1</value></values></message></action>"
          "</actions></rule>\n"
          "<rule id='r2' provider='t' context-id='${k}' context-timeout='5'>"
          "<patterns><pattern>b @NUMBER:k@</pattern></patterns>"
          "<actions><action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>end ${MESSAGE}@1</value></values></message></action>"
          "</actions></rule>\n",
          NULL);
    feed(&f, 0, "a 1");
    feed(&f, 0, "a 1"); /* due at 2, creates cc1 due at 2+2 */
    feed(&f, 0, "b 2"); /* due at 5 */
    take(&f);
    corr_expire_all(f.corr);
    /* cc1 (at 4) before 2 (at 5); the bucket has refilled by 4 */
    ck_assert_str_eq(take(&f), "G end a 1\nG end made\nG end b 2\n");
    ck_assert_uint_eq(open_contexts(&f), 0);
    teardown(&f);
}
END_TEST

/* A timeout action creating a context of its own rule never ends: bounded. */
START_TEST(test_expire_all_endless_chain)
{
    struct fixture f;
    struct corr_stats st;

    setup(&f,
          "<rule id='r1' provider='t' context-id='${k}' context-timeout='1'>"
          "<patterns><pattern>a @NUMBER:k@</pattern></patterns>"
          "<actions><action trigger='timeout'>"
          "<create-context context-id='x' context-scope='global'><message/></create-context>"
          "</action></actions></rule>\n",
          NULL);
    feed(&f, 0, "a 1");
    corr_expire_all(f.corr);
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.contexts_open, 0);
    ck_assert_uint_ge(st.contexts_expired, 100000);
    ck_assert_int_eq(f.nlog, 1);
    teardown(&f);
}
END_TEST

/*
 * syslog-ng loses a context a timeout action creates with timeout 0 (see
 * arm() in corr.c); corral fires it at the next step of time.
 */
START_TEST(test_timeout_zero_chain)
{
    struct fixture f;

    setup(&f,
          "<rule id='r1' provider='t' context-id='${k}' context-timeout='0'>"
          "<patterns><pattern>a @NUMBER:k@</pattern></patterns>"
          "<actions><action trigger='timeout'>"
          "<create-context context-id='x' context-scope='global'><message/></create-context>"
          "</action><action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>end $CONTEXT_ID</value></values></message></action>"
          "</actions></rule>\n",
          NULL);
    feed(&f, 0, "a 1");
    feed(&f, 1, "y");
    feed(&f, 1, "y");
    feed(&f, 2, "z");
    ck_assert_str_eq(take(&f), "I a 1\nG end 1\nI y\nI y\nG end x\nI z\n");
    ck_assert_uint_eq(open_contexts(&f), 1);
    corr_expire_all(f.corr);
    ck_assert_uint_eq(open_contexts(&f), 0);
    ck_assert_int_eq(f.nlog, 1);
    teardown(&f);
}
END_TEST

struct seen {
    int n, ndetached;
    char ids[256];
};

static void
collect(const struct corr_context_info *ci, void *arg)
{
    struct seen *s = arg;
    size_t len = strlen(s->ids);

    s->n++;
    s->ndetached += ci->detached;
    snprintf(s->ids + len, sizeof(s->ids) - len, "%s%.*s:%zu", ci->detached ? "~" : "",
             (int)ci->idlen, ci->id, ci->nmsgs);
}

/*
 * create-context over an open context: the old one is detached (no longer
 * joined, still times out); when it expires, what holds its key is
 * detached in turn (syslog-ng 3.38).
 */
/*
 * corr_foreach_many lists the contexts of several engines (corrald's
 * shards) in the order they time out, not in the order of their tables
 * (which follows a hash keyed per process): the same on every run.
 */
START_TEST(test_listing_in_firing_order)
{
    static const char *rules = "<rule id='w' provider='t' context-id='c${k}' "
                               "context-scope='global' context-timeout='100'>"
                               "<patterns><pattern>w @NUMBER:k@</pattern></patterns></rule>";
    struct fixture f, g;
    struct seen s;
    const struct corr *both[2];
    char text[32], expect[256] = "";
    int i;

    setup(&f, rules, NULL);
    setup(&g, rules, NULL);
    for (i = 0; i < 30; i++) {
        int k = i * 17 % 30, len = (int)strlen(expect);
        snprintf(text, sizeof(text), "w %d", k);
        feed(i % 2 ? &g : &f, i, text);
        snprintf(expect + len, sizeof(expect) - (size_t)len, "c%d:1", k);
    }
    take(&f);
    take(&g);
    both[0] = f.corr;
    both[1] = g.corr;
    memset(&s, 0, sizeof(s));
    corr_foreach_many(both, 2, collect, &s);
    ck_assert_int_eq(s.n, 30);
    ck_assert_str_eq(s.ids, expect);
    teardown(&f);
    teardown(&g);
}
END_TEST

START_TEST(test_create_context_detaches)
{
    struct fixture f;
    struct seen s;

    setup(&f,
          "<rule id='r1' provider='t' context-id='k' context-scope='global' context-timeout='3'>"
          "<patterns><pattern>a @NUMBER:k@</pattern></patterns>"
          "<actions>"
          "<action><create-context context-id='k' context-scope='global'><message><values>"
          "<value name='MESSAGE'>made ${k}@1</value></values></message></create-context></action>"
          "<action><message><values><value name='MESSAGE'>after $(context-length)</value>"
          "</values></message></action>"
          "<action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>end ${MESSAGE}@1 "
          "$(context-length)</value></values></message></action>"
          "</actions></rule>\n"
          "<rule id='r2' provider='t' context-id='k' context-scope='global' context-timeout='10'>"
          "<patterns><pattern>j @NUMBER:k@</pattern></patterns>"
          "<values><value name='n'>$(context-length)</value></values>"
          "<actions><action trigger='timeout'><message><values>"
          "<value name='MESSAGE'>end ${MESSAGE}@1 "
          "$(context-length)</value></values></message></action>"
          "</actions></rule>\n",
          "$MESSAGE ${n}");
    /* the trigger's own context is replaced; the next action still sees it */
    feed(&f, 0, "a 1");
    ck_assert_str_eq(take(&f), "I a 1 \nG after 2 \n");
    memset(&s, 0, sizeof(s));
    corr_foreach(f.corr, collect, &s);
    ck_assert_str_eq(s.ids, "k:1~k:1");
    feed(&f, 1, "j 2"); /* joins the created one (the creating rule's timeout: due at 3) */
    ck_assert_str_eq(take(&f), "I j 2 2\n");
    feed(&f, 4, "x");
    /* the old one fires, and its expiry detaches what holds its key now */
    ck_assert_str_eq(take(&f), "G end a 1 2 \nI x \n");
    feed(&f, 5, "j 3"); /* so this starts afresh */
    ck_assert_str_eq(take(&f), "I j 3 1\n");
    feed(&f, 12, "x"); /* the detached one still times out */
    ck_assert_str_eq(take(&f), "G end j 2 3 \nI x \n");
    ck_assert_uint_eq(open_contexts(&f), 1);
    teardown(&f);
}
END_TEST

START_TEST(test_limits)
{
    struct fixture f;
    struct corr_stats st;

    setup(&f,
          "<rule id='r1' provider='t' context-id='${k}' context-timeout='5'>"
          "<patterns><pattern>a @NUMBER:k@ @ANYSTRING:s@</pattern></patterns>"
          "<values><value name='n'>$(context-length) ${s}@1 ${s}@2</value></values>"
          "</rule>\n",
          "$MESSAGE|${n}");
    corr_free(f.corr);
    f.corr = new_corr(&f, 2, 3);
    feed(&f, 0, "a 1 p");
    feed(&f, 0, "a 2 p");
    feed(&f, 0, "a 3 p"); /* the rule's oldest one-message context (1) makes room */
    ck_assert_str_eq(take(&f), "I a 1 p|1  \nI a 2 p|1  \nI a 3 p|1  \n");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.contexts_refused, 0);
    ck_assert_uint_eq(st.contexts_evicted, 1);
    ck_assert_uint_eq(st.contexts_open, 2);
    ck_assert_int_eq(f.nlog, 1);
    feed(&f, 0, "a 3 q");
    feed(&f, 0, "a 3 r");
    feed(&f, 0, "a 3 s"); /* the oldest goes: at most 3 are kept, plus the current one */
    feed(&f, 0, "a 3 t");
    ck_assert_str_eq(take(&f), "I a 3 q|2 p \nI a 3 r|3 q p\nI a 3 s|4 r q\nI a 3 t|4 s r\n");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.messages_dropped, 2);
    teardown(&f);
}
END_TEST

/* A full context over many messages: the window slides, the array is
 * compacted now and then, and back-references always see the newest. */
START_TEST(test_full_context_slides)
{
    struct fixture f, g;
    struct corr_stats st;
    char buf[256], text[64], want[128];
    const char *path = tmpname(buf, sizeof(buf), "slide");
    int i;

    setup(&f,
          "<rule id='r1' provider='t' context-id='k' context-timeout='500'>"
          "<patterns><pattern>a @NUMBER:s@</pattern></patterns>"
          "<values><value name='n'>$(context-length) ${s}@1 ${s}@2 ${s}@3 ${s}@4</value></values>"
          "</rule>\n",
          "${n}");
    corr_free(f.corr);
    f.corr = new_corr(&f, 0, 4);
    for (i = 1; i <= 300; i++) {
        int k, len = i - 1 < 4 ? i : 5;

        snprintf(text, sizeof(text), "a %d", i);
        feed(&f, 0, text);
        snprintf(want, sizeof(want), "I %d", len);
        for (k = 1; k <= 4; k++) {
            size_t w = strlen(want);
            if (i - k >= 1)
                snprintf(want + w, sizeof(want) - w, " %d", i - k);
            else
                snprintf(want + w, sizeof(want) - w, " ");
        }
        strcat(want, "\n");
        ck_assert_str_eq(take(&f), want);
        if (i == 150) {
            /* a state file holds the window, not the dead slots before it */
            ck_assert_int_eq(corr_save(f.corr, path), 0);
        }
    }
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.messages_dropped, 296);

    setup(&g,
          "<rule id='r1' provider='t' context-id='k' context-timeout='500'>"
          "<patterns><pattern>a @NUMBER:s@</pattern></patterns>"
          "<values><value name='n'>$(context-length) ${s}@1 ${s}@2 ${s}@3 ${s}@4</value></values>"
          "</rule>\n",
          "${n}");
    corr_free(g.corr);
    g.corr = new_corr(&g, 0, 4);
    ck_assert_int_eq(corr_load(g.corr, path, NULL), 1);
    feed(&g, 0, "a 151");
    ck_assert_str_eq(take(&g), "I 5 150 149 148 147\n");
    teardown(&f);
    teardown(&g);
    unlink(path);
}
END_TEST

/* ---- state files ---- */

static const char *state_rules =
    "<rule id='r1' provider='t' context-id='${k}' context-timeout='5'>"
    "<patterns><pattern>a @NUMBER:k@ @ANYSTRING:s@</pattern></patterns>"
    "<tags><tag>tg</tag></tags>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>end $(context-values ${s}) ${HOST}@1</value></values></message></action>"
    "<action><create-context context-id='d' context-scope='global'><message><values>"
    "<value name='MESSAGE'>made ${k}@1</value></values></message></create-context></action>"
    "</actions></rule>\n"
    "<rule id='r2' provider='t' context-id='${k}' context-timeout='3'>"
    "<patterns><pattern>b @NUMBER:k@</pattern></patterns>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>end2 ${k}@1</value></values></message></action></actions></rule>\n";

static void
run_states(struct fixture *f)
{
    feed(f, 0, "a 1 x");
    feed_full(f, 1, 500, "h2", "prog", "1", "b 2");
    feed(f, 1, "a 1 y"); /* replaces d: one detached context */
    feed(f, 1, "b 3");
}

START_TEST(test_save_load_round_trip)
{
    struct fixture f, g;
    char buf[256];
    const char *path = tmpname(buf, sizeof(buf), "state");
    struct seen s1, s2;
    size_t dropped = 99;
    char expect[8192];

    setup(&f, state_rules, NULL);
    run_states(&f);
    ck_assert_int_eq(corr_save(f.corr, path), 0);
    memset(&s1, 0, sizeof(s1));
    corr_foreach(f.corr, collect, &s1);
    ck_assert_int_eq(s1.ndetached, 1);
    /* what the original does from here on */
    take(&f);
    feed(&f, 20, "x");
    snprintf(expect, sizeof(expect), "%s", take(&f));
    /* the created contexts' messages have the fields of the context that made them */
    ck_assert_str_eq(expect, "G end2 2\nG end2 3\nG end \"\",\"\" h1\nG end x,y,\"\" h1\n"
                             "G end \"\",\"\" h1\nI x\n");

    setup(&g, state_rules, NULL);
    ck_assert_int_eq(corr_load(g.corr, path, &dropped), 5);
    ck_assert_uint_eq(dropped, 0);
    ck_assert_uint_eq(corr_now(g.corr), (uint64_t)(T0 + 1) * 1000 + 500);
    memset(&s2, 0, sizeof(s2));
    corr_foreach(g.corr, collect, &s2);
    ck_assert_int_eq(s2.n, 5);
    ck_assert_int_eq(s2.ndetached, 1);
    feed(&g, 20, "x");
    ck_assert_str_eq(take(&g), expect);
    /* loading again into an engine that has them: every key is taken */
    teardown(&f);
    setup(&f, state_rules, NULL);
    ck_assert_int_eq(corr_load(f.corr, path, NULL), 5);
    ck_assert_int_eq(corr_load(f.corr, path, &dropped), 1); /* only the detached one */
    ck_assert_uint_eq(dropped, 4);
    teardown(&f);
    teardown(&g);
    unlink(path);
}
END_TEST

/*
 * A disk that fails under a state save (durable.c's fault hook), at each
 * step: the save says so, and the file saved before is still there whole,
 * read back with every context; no temporary file is left.
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
    struct fixture f, g;
    char buf[256];
    const char *path = tmpname(buf, sizeof(buf), "state");
    struct buf tmp = BUF_INIT;
    size_t i;
    long before;

    setup(&f, state_rules, NULL);
    feed(&f, 0, "a 1 x");
    ck_assert_int_eq(corr_save(f.corr, path), 0);
    setup(&g, state_rules, NULL);
    before = corr_load(g.corr, path, NULL);
    ck_assert_int_gt(before, 0);
    teardown(&g);
    run_states(&f); /* more contexts, which the failed saves do not reach the file with */
    for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
        durable_fault_set(faults[i].op, 1, faults[i].kind, faults[i].err);
        errno = 0;
        ck_assert_int_eq(corr_save(f.corr, path), -1);
        ck_assert_int_eq(errno, faults[i].err);
        ck_assert_uint_eq(durable_fault_failed(faults[i].op), 1);
        durable_fault_clear();
        setup(&g, state_rules, NULL);
        ck_assert_int_eq(corr_load(g.corr, path, NULL), before);
        teardown(&g);
        buf_reset(&tmp);
        durable_tmp_path(&tmp, path, (long)getpid());
        ck_assert_int_eq(access(buf_str(&tmp), F_OK), -1);
    }
    /* the disk well again: the next save has them all */
    ck_assert_int_eq(corr_save(f.corr, path), 0);
    setup(&g, state_rules, NULL);
    ck_assert_int_gt(corr_load(g.corr, path, NULL), before);
    teardown(&g);
    teardown(&f);
    buf_free(&tmp);
    unlink(path);
}
END_TEST

/* Loads path into a fresh engine of g's rules (what a damaged file leaves is seen alone). */
static long
load_fresh(struct fixture *g, const char *path)
{
    corr_free(g->corr);
    g->corr = new_corr(g, 0, 0);
    return corr_load(g->corr, path, NULL);
}

/*
 * A damaged state file keeps what is intact: cut anywhere, the contexts
 * wholly before the cut load; a flipped bit anywhere costs at most the one
 * context it hits (in the header: none).  Only a file that is no state file
 * (magic, version) is refused whole.
 */
START_TEST(test_load_refuses_bad_files)
{
    struct fixture f, g;
    char buf[256], buf2[256];
    const char *path = tmpname(buf, sizeof(buf), "bad"), *bad = tmpname(buf2, sizeof(buf2), "bad2");
    char *data;
    long size, i, n, before = 0;
    FILE *fp;

    setup(&f, state_rules, NULL);
    run_states(&f);
    ck_assert_int_eq(corr_save(f.corr, path), 0);
    fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    size = ftell(fp);
    rewind(fp);
    data = malloc((size_t)size + 16);
    ck_assert_int_eq(fread(data, 1, (size_t)size, fp), size);
    fclose(fp);

    setup(&g, state_rules, NULL);
    for (i = 0; i <= size + 1; i++) {
        long len = i <= size ? i : size + 1;
        fp = fopen(bad, "wb");
        if (i <= size) {
            fwrite(data, 1, (size_t)len, fp);
        } else {
            fwrite(data, 1, (size_t)size, fp);
            fputc(0, fp); /* trailing garbage */
        }
        fclose(fp);
        errno = 0;
        n = load_fresh(&g, bad);
        if (i < 12) {
            /* no magic and version: not a state file */
            ck_assert_int_eq(n, -1);
            ck_assert_int_eq(errno, EINVAL);
            ck_assert_uint_eq(open_contexts(&g), 0);
            continue;
        }
        /* the longer the file, the more contexts; all of them from the whole file on */
        ck_assert_int_ge(n, before);
        ck_assert_int_le(n, 5);
        ck_assert_uint_eq(open_contexts(&g), (uint64_t)n);
        if (i >= size) ck_assert_int_eq(n, 5);
        before = n;
    }
    for (i = 0; i < size; i++) {
        data[i] ^= 0x10;
        fp = fopen(bad, "wb");
        fwrite(data, 1, (size_t)size, fp);
        fclose(fp);
        data[i] ^= 0x10;
        errno = 0;
        n = load_fresh(&g, bad);
        if (i < 12) {
            ck_assert_int_eq(n, -1);
            ck_assert_int_eq(errno, EINVAL);
            ck_assert_uint_eq(open_contexts(&g), 0);
        } else {
            ck_assert_msg(n >= 4, "a flipped bit at %ld cost %ld contexts", i, 5 - n);
            ck_assert_uint_eq(open_contexts(&g), (uint64_t)n);
        }
    }
    errno = 0;
    ck_assert_int_eq(load_fresh(&g, "/nonexistent/state"), -1);
    ck_assert_int_eq(errno, ENOENT);
    /* the intact file still loads */
    ck_assert_int_eq(load_fresh(&g, path), 5);
    free(data);
    teardown(&f);
    teardown(&g);
    unlink(path);
    unlink(bad);
}
END_TEST

/*
 * A state file larger than the loader's read window (1 MiB), with a context
 * larger than the window too: every context loads, whatever window boundary
 * it straddles.
 */
START_TEST(test_load_in_windows)
{
    static const char *rules = "<rule id='w' provider='t' context-id='${k}' context-timeout='50'>"
                               "<patterns><pattern>w @NUMBER:k@ @ANYSTRING:s@</pattern></patterns>"
                               "<actions><action trigger='timeout'><message><values>"
                               "<value name='MESSAGE'>${s}@1</value></values></message>"
                               "</action></actions></rule>\n";
    struct fixture f, g;
    char buf[256];
    const char *path = tmpname(buf, sizeof(buf), "windows");
    size_t big = 3 * 1024 * 1024 / 2, dropped = 1;
    char *text = malloc(big + 64);
    struct seen s;
    struct stat st;
    int i;

    setup(&f, rules, NULL);
    for (i = 1; i <= 3000; i++) {
        int len = snprintf(text, 64, "w %d ", i);
        memset(text + len, 'x', 997 + i % 7);
        text[len + 997 + i % 7] = '\0';
        feed(&f, 0, text);
        if (i == 1500) {
            snprintf(text, 64, "w 0 ");
            memset(text + 4, 'y', big);
            text[4 + big] = '\0';
            feed(&f, 0, text);
        }
    }
    ck_assert_int_eq(corr_save(f.corr, path), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_gt(st.st_size, 4 * 1024 * 1024);
    setup(&g, rules, NULL);
    ck_assert_int_eq(corr_load(g.corr, path, &dropped), 3001);
    ck_assert_uint_eq(dropped, 0);
    memset(&s, 0, sizeof(s));
    corr_foreach(g.corr, collect, &s);
    ck_assert_int_eq(s.n, 3001);
    free(text);
    teardown(&f);
    teardown(&g);
    unlink(path);
}
END_TEST

/* Rules gone after a reload drop their contexts, in state files and live. */
START_TEST(test_rules_gone)
{
    struct fixture f, g;
    char buf[256];
    const char *path = tmpname(buf, sizeof(buf), "gone");
    size_t dropped = 0, kept = 0;
    struct pdb *db2;

    setup(&f, state_rules, NULL);
    run_states(&f);
    ck_assert_int_eq(corr_save(f.corr, path), 0);
    /* only r2 left */
    setup(&g,
          "<rule id='r2' provider='t' context-id='${k}' context-timeout='3'>"
          "<patterns><pattern>b @NUMBER:k@</pattern></patterns></rule>\n",
          NULL);
    ck_assert_int_eq(corr_load(g.corr, path, &dropped), 2);
    ck_assert_uint_eq(dropped, 3);
    ck_assert_uint_eq(open_contexts(&g), 2);

    db2 = load_rules("<rule id='r1' provider='t' context-id='${k}' context-timeout='5'>"
                     "<patterns><pattern>a @NUMBER:k@ @ANYSTRING:s@</pattern></patterns></rule>\n");
    corr_set_db(f.corr, db2, &kept, &dropped);
    ck_assert_uint_eq(kept, 3); /* the detached one too */
    ck_assert_uint_eq(dropped, 2);
    pdb_free(f.db);
    f.db = db2;
    take(&f);
    feed(&f, 20, "x"); /* r1's contexts now have no actions */
    ck_assert_str_eq(take(&f), "I x\n");
    ck_assert_uint_eq(open_contexts(&f), 0);
    teardown(&f);
    teardown(&g);
    unlink(path);
}
END_TEST

/* ---- fairness between rules, memory limits, rate buckets ---- */

struct rule_seen {
    char text[512];
};

static void
collect_rule(const struct corr_rule_stats *rs, void *arg)
{
    struct rule_seen *s = arg;
    size_t len = strlen(s->text);

    snprintf(s->text + len, sizeof(s->text) - len, "%s:%llu/%llu/%llu ", rs->rule_id,
             (unsigned long long)rs->contexts, (unsigned long long)rs->refused,
             (unsigned long long)rs->evicted);
}

static const char *
rule_stats(struct fixture *f)
{
    static struct rule_seen s;

    memset(&s, 0, sizeof(s));
    corr_foreach_rule(f->corr, collect_rule, &s);
    return s.text;
}

/* A session rule an attacker floods, a brute-force rule that must still alert. */
static const char *flood_rules =
    /* the user name is part of the context id: spoofed long names make big contexts */
    "<rule id='session' provider='t' context-id='s${u}' context-scope='process' "
    "context-timeout='600'>"
    "<patterns><pattern>accepted @ANYSTRING:u@</pattern></patterns></rule>\n"
    "<rule id='brute' provider='t' context-id='b' context-scope='host' context-timeout='60'>"
    "<patterns><pattern>failed @ANYSTRING:u@</pattern></patterns>"
    "<actions><action condition='\"$(context-length)\" == \"3\"'><message><values>"
    "<value name='MESSAGE'>ALERT ${HOST}</value></values></message></action></actions></rule>\n"
    "<rule id='plain' provider='t'><patterns><pattern>plain</pattern></patterns></rule>\n";

/* brute-force attempts from host h (the context is per host) */
static void
attack(struct fixture *f, int sec, const char *h)
{
    int i;

    for (i = 0; i < 3; i++) feed_full(f, sec, 0, h, "sshd", "9", "failed root");
}

/* One rule's flood fills its share and what nobody reserves, never another rule's share. */
START_TEST(test_flood_does_not_starve)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    char host[32];
    int i;

    setup(&f, flood_rules, NULL);
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_contexts = 10; /* two rules open contexts: 5 each */
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 40; i++) {
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", i);
        feed_full(&f, 0, 0, "spoofed", "sshd", pid, "accepted x");
    }
    /* its share full, the rule's one-off contexts make room for its new ones */
    ck_assert_str_eq(rule_stats(&f), "session:5/0/35 brute:0/0/0 ");
    ck_assert_int_eq(f.nlog, 1); /* one line, naming the rule; the next after 10,000 more */
    take(&f);
    for (i = 0; i < 5; i++) {
        snprintf(host, sizeof(host), "attacker%d", i);
        attack(&f, 1, host);
        snprintf(host, sizeof(host), "G ALERT attacker%d\n", i);
        ck_assert_ptr_nonnull(strstr(take(&f), host));
    }
    /* the table is full now: the sixth attacker takes the oldest of the smallest */
    attack(&f, 1, "attacker5");
    ck_assert_str_eq(take(&f), "I failed root\nI failed root\nI failed root\nG ALERT attacker5\n");
    ck_assert_str_eq(rule_stats(&f), "session:5/0/35 brute:5/0/1 ");
    /* contexts that grew past a few messages are kept: then a new one is refused, counted */
    for (i = 1; i < 6; i++) {
        snprintf(host, sizeof(host), "attacker%d", i);
        feed_full(&f, 1, 0, host, "sshd", "9", "failed root");
        feed_full(&f, 1, 0, host, "sshd", "9", "failed root");
    }
    attack(&f, 1, "attacker6");
    ck_assert_ptr_null(strstr(take(&f), "ALERT"));
    ck_assert_str_eq(rule_stats(&f), "session:5/0/35 brute:5/3/1 ");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.contexts_refused, 3);
    ck_assert_uint_eq(st.contexts_evicted, 36);
    ck_assert_uint_eq(st.contexts_open, 10);
    teardown(&f);

    /* a smaller configured share: a busy rule borrows what is not reserved */
    setup(&f, flood_rules, NULL);
    corr_free(f.corr);
    lim.context_share = 2;
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 40; i++) {
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", i);
        feed_full(&f, 0, 0, "spoofed", "sshd", pid, "accepted x");
    }
    ck_assert_str_eq(rule_stats(&f), "session:8/0/32 brute:0/0/0 ");
    attack(&f, 1, "a");
    attack(&f, 1, "b");
    ck_assert_str_eq(rule_stats(&f), "session:8/0/32 brute:2/0/0 ");
    /* when the flood's contexts expire, their room returns to everyone */
    feed_full(&f, 700, 0, "h", "p", "1", "plain");
    ck_assert_str_eq(rule_stats(&f), "session:0/0/32 brute:0/0/0 ");
    for (i = 0; i < 7; i++) {
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", i);
        feed_full(&f, 700, 0, "spoofed", "sshd", pid, "accepted x");
    }
    ck_assert_str_eq(rule_stats(&f), "session:7/0/32 brute:0/0/0 ");
    teardown(&f);
}
END_TEST

/* A brute-force rule with a context per client address, as the shipped SSH rules have. */
static const char *by_addr_rules =
    "<rule id='brute' provider='t' context-id='b-${a}' context-scope='host' context-timeout='60'>"
    "<patterns><pattern>failed @ESTRING:u: @from @ANYSTRING:a@</pattern></patterns>"
    "<actions><action condition='\"$(context-length)\" == \"5\"'><message><values>"
    "<value name='MESSAGE'>ALERT ${a}@1</value><value name='users'>${u}@1</value>"
    "</values></message></action></actions></rule>\n"
    "<rule id='session' provider='t' context-id='s${PID}' context-scope='host' "
    "context-timeout='600'><patterns><pattern>accepted @ANYSTRING:u@</pattern></patterns></rule>\n";

/*
 * A rule's own one-off traffic cannot starve another key of the rule: spoofed
 * single lines from distinct addresses fill the rule's share (by count, or by
 * memory with long user names), and a real brute force then evicts the oldest
 * of them and is reported.
 */
START_TEST(test_own_flood_does_not_starve)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    char line[128];
    char *big;
    int i, round;

    big = malloc(70000);
    for (round = 0; round < 2; round++) {
        setup(&f, by_addr_rules, NULL);
        corr_free(f.corr);
        memset(&lim, 0, sizeof(lim));
        if (round == 0)
            lim.max_contexts = 1000; /* two rules open contexts: 500 each */
        else
            lim.max_context_memory = 2000000; /* 1,000,000 each */
        f.corr = new_corr_limits(&f, &lim);
        for (i = 0; i < 3000; i++) {
            if (round == 0) {
                snprintf(line, sizeof(line), "failed root from 10.0.%d.%d", i / 256, i % 256);
                feed_full(&f, 0, 0, "server", "sshd", "1", line);
            } else {
                /* 60 KB user names: 17 lines fill the rule's memory */
                memcpy(big, "failed ", 7);
                memset(big + 7, 'u', 60000);
                snprintf(big + 60007, 64, " from 10.0.%d.%d", i / 256, i % 256);
                feed_full(&f, 0, 0, "server", "sshd", "1", big);
                if (i == 100) break;
            }
        }
        take(&f);
        for (i = 0; i < 5; i++)
            feed_full(&f, 1, 0, "server", "sshd", "1", "failed root from attacker");
        ck_assert_ptr_nonnull(strstr(take(&f), "G ALERT attacker\n"));
        corr_stats(f.corr, &st);
        ck_assert_uint_eq(st.contexts_refused, 0);
        ck_assert_uint_gt(st.contexts_evicted, (round == 0 ? 2500 : 80));
        /* what grew is kept: more lines of the attacker while the flood goes on */
        for (i = 0; i < 600; i++) {
            snprintf(line, sizeof(line), "failed root from 10.1.%d.%d", i / 256, i % 256);
            feed_full(&f, 1, 0, "server", "sshd", "1", line);
        }
        take(&f);
        for (i = 0; i < 5; i++)
            feed_full(&f, 1, 0, "server", "sshd", "1", "failed root from attacker");
        ck_assert_str_eq(
            take(&f),
            "I failed root from attacker\nI failed root from attacker\nI failed root from "
            "attacker\nI failed root from attacker\nI failed root from attacker\n");
        corr_stats(f.corr, &st);
        ck_assert_uint_eq(st.contexts_refused, 0);
        teardown(&f);
    }
    free(big);
}
END_TEST

/* A reload keeps the per-rule counts, and recounts the shares of the new rules. */
START_TEST(test_shares_across_reload)
{
    struct fixture f;
    struct corr_opts lim;
    struct pdb *db2;
    size_t kept, dropped;
    int i;

    setup(&f, flood_rules, NULL);
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_contexts = 10;
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 8; i++) {
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", i);
        feed_full(&f, 0, 0, "spoofed", "sshd", pid, "accepted x");
    }
    ck_assert_str_eq(rule_stats(&f), "session:5/0/3 brute:0/0/0 ");
    /* brute gone: session alone shares the limit */
    db2 = load_rules("<rule id='session' provider='t' context-id='s' context-scope='process' "
                     "context-timeout='600'><patterns><pattern>accepted @ANYSTRING:u@</pattern>"
                     "</patterns></rule>\n");
    corr_set_db(f.corr, db2, &kept, &dropped);
    ck_assert_uint_eq(kept, 5);
    pdb_free(f.db);
    f.db = db2;
    for (i = 8; i < 20; i++) {
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", i);
        feed_full(&f, 0, 0, "spoofed", "sshd", pid, "accepted x");
    }
    ck_assert_str_eq(rule_stats(&f), "session:10/0/10 ");
    teardown(&f);
}
END_TEST

/* Rate-limit buckets are freed once full again; the limit on buckets recovers. */
START_TEST(test_rate_buckets_freed)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    char host[32];
    int i;

    setup(&f,
          "<rule id='r1' provider='t'><patterns><pattern>m @NUMBER:k@</pattern></patterns>"
          "<actions><action rate='1/5'><message inherit-properties='TRUE'><values>"
          "<value name='MESSAGE'>g ${HOST}</value></values></message></action></actions>"
          "</rule>\n",
          NULL);
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_rate_buckets = 3;
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 5; i++) {
        snprintf(host, sizeof(host), "h%d", i);
        feed_full(&f, 0, 0, host, "p", "1", "m 1");
    }
    /* three buckets; the two further hosts evict the least recently used (h0, h1): a new key
     * is never silenced for want of a bucket */
    ck_assert_str_eq(take(&f),
                     "I m 1\nG g h0\nI m 1\nG g h1\nI m 1\nG g h2\nI m 1\nG g h3\nI m 1\nG g h4\n");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_buckets, 3);
    ck_assert_uint_eq(st.rate_limited, 0);
    ck_assert_uint_eq(st.rate_evicted, 2);
    ck_assert_int_eq(f.nlog, 1);
    /* within the window the buckets held hold */
    feed_full(&f, 4, 0, "h4", "p", "1", "m 1");
    feed_full(&f, 4, 0, "h2", "p", "1", "m 1");
    ck_assert_str_eq(take(&f), "I m 1\nI m 1\n");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_buckets, 3);
    ck_assert_uint_eq(st.rate_limited, 2);
    /* a bucket whose window has passed is as good as none: taken back first, no eviction */
    feed_full(&f, 5, 0, "h5", "p", "1", "m 1");
    ck_assert_str_eq(take(&f), "I m 1\nG g h5\n");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_evicted, 2);
    /* once the window has passed they are gone, and new keys get buckets */
    feed_full(&f, 12, 0, "h", "p", "1", "other");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_buckets, 0);
    feed_full(&f, 12, 0, "h3", "p", "1", "m 1");
    feed_full(&f, 12, 0, "h3", "p", "1", "m 1");
    feed_full(&f, 12, 0, "h4", "p", "1", "m 1");
    ck_assert_str_eq(take(&f), "I other\nI m 1\nG g h3\nI m 1\nI m 1\nG g h4\n");
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_buckets, 2);
    teardown(&f);
}
END_TEST

/* Two rules with rate=, for the shares of buckets. */
static const char *rate_rules =
    "<rule id='spoof' provider='t' context-scope='host'>"
    "<patterns><pattern>accepted @ANYSTRING:u@</pattern></patterns>"
    "<actions><action rate='1/60'><message inherit-properties='TRUE'><values>"
    "<value name='MESSAGE'>root ${HOST}</value></values></message></action></actions></rule>\n"
    "<rule id='brute' provider='t' context-scope='host'>"
    "<patterns><pattern>failed @ANYSTRING:u@</pattern></patterns>"
    "<actions><action rate='2/60'><message inherit-properties='TRUE'><values>"
    "<value name='MESSAGE'>brute ${HOST}</value></values></message></action></actions></rule>\n";

static void
collect_rate(const struct corr_rule_stats *rs, void *arg)
{
    struct rule_seen *s = arg;
    size_t len = strlen(s->text);

    snprintf(s->text + len, sizeof(s->text) - len, "%s:%llu/%llu/%llu ", rs->rule_id,
             (unsigned long long)rs->buckets, (unsigned long long)rs->rate_refused,
             (unsigned long long)rs->rate_evicted);
}

static const char *
rate_stats(struct fixture *f)
{
    static struct rule_seen s;

    memset(&s, 0, sizeof(s));
    corr_foreach_rule(f->corr, collect_rate, &s);
    return s.text;
}

/*
 * Spoofed lines with distinct hosts fill one rule's share of the buckets, not
 * the others' (which a new key of theirs then gets); within a rule, new keys
 * evict the buckets that limited least, and a key that used its whole rate
 * stays limited.
 */
START_TEST(test_rate_bucket_shares)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    char host[32];
    int i;

    setup(&f, rate_rules, NULL);
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_rate_buckets = 10; /* two rules with rate=: 5 each */
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 1000; i++) {
        snprintf(host, sizeof(host), "spoofed%d", i);
        feed_full(&f, 0, 0, host, "sshd", "1", "accepted root");
    }
    take(&f);
    /* the brute-force rule's buckets are its own: a real attacker is reported */
    feed_full(&f, 1, 0, "attacked", "sshd", "1", "failed root");
    ck_assert_str_eq(take(&f), "I failed root\nG brute attacked\n");
    ck_assert_str_eq(rate_stats(&f), "spoof:5/0/995 brute:1/0/0 ");
    feed_full(&f, 1, 0, "attacked", "sshd", "1", "failed root");
    feed_full(&f, 1, 0, "attacked", "sshd", "1", "failed root"); /* its rate used up */
    ck_assert_str_eq(take(&f), "I failed root\nG brute attacked\nI failed root\n");
    /* a flood of one-off keys of the same rule takes buckets that limited least */
    for (i = 0; i < 100; i++) {
        snprintf(host, sizeof(host), "other%d", i);
        feed_full(&f, 2, 0, host, "sshd", "1", "failed root");
    }
    ck_assert_uint_eq(strlen(strstr(take(&f), "G brute other99\n")), strlen("G brute other99\n"));
    ck_assert_str_eq(rate_stats(&f), "spoof:5/0/995 brute:5/0/96 ");
    feed_full(&f, 3, 0, "attacked", "sshd", "1", "failed root");
    ck_assert_str_eq(take(&f), "I failed root\n"); /* still limited: its bucket was kept */
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_buckets, 10);
    ck_assert_uint_eq(st.rate_evicted, 995 + 96);
    teardown(&f);
}
END_TEST

/* A reload keeps the buckets of rules still there (with their counters), drops the others'. */
START_TEST(test_rate_buckets_across_reload)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    struct pdb *db2;
    char host[32];
    int i;

    setup(&f, rate_rules, NULL);
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_rate_buckets = 10;
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 8; i++) {
        snprintf(host, sizeof(host), "h%d", i);
        feed_full(&f, 0, 0, host, "sshd", "1", "accepted root");
        feed_full(&f, 0, 0, host, "sshd", "1", "failed root");
    }
    ck_assert_str_eq(rate_stats(&f), "spoof:5/0/3 brute:5/0/3 ");
    /* spoof gone: brute alone shares the 10 buckets, its 5 kept, still limiting */
    db2 = load_rules("<rule id='brute' provider='t' context-scope='host'>"
                     "<patterns><pattern>failed @ANYSTRING:u@</pattern></patterns>"
                     "<actions><action rate='2/60'><message inherit-properties='TRUE'><values>"
                     "<value name='MESSAGE'>brute ${HOST}</value></values></message></action>"
                     "</actions></rule>\n");
    corr_set_db(f.corr, db2, NULL, NULL);
    pdb_free(f.db);
    f.db = db2;
    corr_stats(f.corr, &st);
    ck_assert_uint_eq(st.rate_buckets, 5);
    ck_assert_str_eq(rate_stats(&f), "brute:5/0/3 ");
    take(&f);
    feed_full(&f, 1, 0, "h7", "sshd", "1", "failed root");
    feed_full(&f, 1, 0, "h7", "sshd", "1", "failed root"); /* its second run in 60 s: limited */
    ck_assert_str_eq(take(&f), "I failed root\nG brute h7\nI failed root\n");
    for (i = 8; i < 20; i++) {
        snprintf(host, sizeof(host), "h%d", i);
        feed_full(&f, 1, 0, host, "sshd", "1", "failed root");
    }
    ck_assert_str_eq(rate_stats(&f), "brute:10/0/10 "); /* 5 fit, 7 evicted */
    teardown(&f);
}
END_TEST

/*
 * rate-key: each value of the template has its own bucket within the rule's
 * scope (10 spoofed addresses do not use up the alerts of the 11th); without
 * it, syslog-ng's one bucket per rule, action and scope fields.
 */
START_TEST(test_rate_key)
{
    static const char *const rules[2] = {
        "<rule id='b' provider='t' context-id='b-${a}' context-scope='host' context-timeout='60'>"
        "<patterns><pattern>failed from @ANYSTRING:a@</pattern></patterns><actions>"
        "<action condition='\"$(context-length)\" == \"2\"' rate='2/60' rate-key='${a}@1'>"
        "<message><values><value name='MESSAGE'>ALERT ${a}@1</value></values></message>"
        "</action></actions></rule>\n",
        "<rule id='b' provider='t' context-id='b-${a}' context-scope='host' context-timeout='60'>"
        "<patterns><pattern>failed from @ANYSTRING:a@</pattern></patterns><actions>"
        "<action condition='\"$(context-length)\" == \"2\"' rate='2/60'>"
        "<message><values><value name='MESSAGE'>ALERT ${a}@1</value></values></message>"
        "</action></actions></rule>\n"};
    struct fixture f;
    struct corr_stats st;
    char line[64];
    int i, k;

    for (k = 0; k < 2; k++) {
        setup(&f, rules[k], NULL);
        for (i = 0; i < 10; i++) {
            snprintf(line, sizeof(line), "failed from fake%d", i);
            feed_full(&f, 0, 0, "server", "sshd", "1", line);
            feed_full(&f, 0, 0, "server", "sshd", "1", line);
        }
        take(&f);
        feed_full(&f, 1, 0, "server", "sshd", "1", "failed from attacker");
        feed_full(&f, 1, 0, "server", "sshd", "1", "failed from attacker");
        corr_stats(f.corr, &st);
        if (k == 0) {
            ck_assert_str_eq(take(&f), "I failed from attacker\nI failed from attacker\n"
                                       "G ALERT attacker\n");
            ck_assert_uint_eq(st.rate_buckets, 11);
            ck_assert_uint_eq(st.rate_limited, 0);
        } else {
            ck_assert_str_eq(take(&f), "I failed from attacker\nI failed from attacker\n");
            ck_assert_uint_eq(st.rate_buckets, 1);
            ck_assert_uint_eq(st.rate_limited, 9);
        }
        teardown(&f);
    }
}
END_TEST

/* A long value, to make messages of known weight. */
static void
feed_big(struct fixture *f, int sec, const char *host, const char *tag, size_t size)
{
    char *text = malloc(size + 64);

    snprintf(text, size + 64, "%s ", tag);
    memset(text + strlen(text), 'x', size);
    text[strlen(tag) + 1 + size] = '\0';
    feed_full(f, sec, 0, host, "prog", "1", text);
    free(text);
}

/* One context's bytes: the window slides by bytes, the newest kept. */
START_TEST(test_context_bytes)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    int i;

    setup(&f,
          "<rule id='r1' provider='t' context-id='k' context-timeout='60'>"
          "<patterns><pattern>a @NUMBER:n@ @ANYSTRING:s@</pattern></patterns>"
          "<values><value name='len'>$(context-length) ${n}@1 ${n}@2</value>"
          "<value name='keep'>${s}@1</value></values>" /* ${s} is kept in the context */
          "</rule>\n",
          "${len}");
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_context_bytes = 10000;
    f.corr = new_corr_limits(&f, &lim);
    for (i = 1; i <= 20; i++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "a %d", i);
        feed_big(&f, 0, "h", tag, 2000);
        corr_stats(f.corr, &st);
        ck_assert_uint_le(st.context_bytes, 10000);
    }
    corr_stats(f.corr, &st);
    ck_assert_uint_gt(st.context_bytes, 5000);
    ck_assert_uint_gt(st.bytes_dropped, 10);
    ck_assert_uint_eq(st.messages_dropped, 0);
    /* the newest are there: back-references see 19 and 18 */
    take(&f);
    feed_big(&f, 0, "h", "a 21", 10);
    ck_assert_ptr_nonnull(strstr(take(&f), " 20 19\n"));
    /* a message larger than the limit on its own is kept alone */
    feed_big(&f, 0, "h", "a 22", 20000);
    feed_big(&f, 0, "h", "a 23", 10);
    ck_assert_str_eq(take(&f), "I 6 21 20\nI 2 22 \n");
    teardown(&f);
}
END_TEST

/* All contexts' bytes, shared fairly: one rule's big contexts do not starve another rule. */
START_TEST(test_context_memory_shared)
{
    struct fixture f;
    struct corr_opts lim;
    struct corr_stats st;
    char host[32];
    int i;

    setup(&f, flood_rules, NULL);
    corr_free(f.corr);
    memset(&lim, 0, sizeof(lim));
    lim.max_context_memory = 200000; /* 100,000 per rule */
    f.corr = new_corr_limits(&f, &lim);
    for (i = 0; i < 100; i++) {
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", i);
        {
            char *text = malloc(6000);
            memset(text, 'u', 5999);
            text[5999] = '\0';
            memcpy(text, "accepted ", 9);
            feed_full(&f, 0, 0, "spoofed", "sshd", pid, text);
            free(text);
        }
    }
    corr_stats(f.corr, &st);
    /* its share of 100,000, passed by one context (id and message: 12 KB) at most */
    ck_assert_uint_le(st.context_bytes, 100000 + 13000);
    ck_assert_uint_eq(st.contexts_refused, 0);
    ck_assert_uint_gt(st.contexts_evicted, 70);
    take(&f);
    for (i = 0; i < 5; i++) {
        snprintf(host, sizeof(host), "attacker%d", i);
        attack(&f, 1, host);
        snprintf(host, sizeof(host), "G ALERT attacker%d\n", i);
        ck_assert_ptr_nonnull(strstr(take(&f), host));
    }
    /* growing contexts of a rule over its share slide instead */
    feed_full(&f, 1, 0, "spoofed", "sshd", "0", "accepted y");
    corr_stats(f.corr, &st);
    ck_assert_uint_le(st.context_bytes, 200000);
    teardown(&f);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("corr");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_alive_at_t_plus_n);
    tcase_add_test(tc, test_1024_at_rotation_start);
    tcase_add_test(tc, test_timeout_zero_and_clock);
    tcase_add_test(tc, test_same_second_order);
    tcase_add_test(tc, test_long_timeout_order);
    tcase_add_test(tc, test_generated_messages);
    tcase_add_test(tc, test_rate_limit);
    tcase_add_test(tc, test_rates_save_load);
    tcase_add_test(tc, test_expire_all_in_time_order);
    tcase_add_test(tc, test_expire_all_endless_chain);
    tcase_add_test(tc, test_timeout_zero_chain);
    tcase_add_test(tc, test_create_context_detaches);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_full_context_slides);
    tcase_add_test(tc, test_save_load_round_trip);
    tcase_add_test(tc, test_save_faults);
    tcase_add_test(tc, test_load_refuses_bad_files);
    tcase_add_test(tc, test_load_in_windows);
    tcase_add_test(tc, test_rules_gone);
    tcase_add_test(tc, test_flood_does_not_starve);
    tcase_add_test(tc, test_shares_across_reload);
    tcase_add_test(tc, test_rate_buckets_freed);
    tcase_add_test(tc, test_rate_bucket_shares);
    tcase_add_test(tc, test_rate_key);
    tcase_add_test(tc, test_rate_buckets_across_reload);
    tcase_add_test(tc, test_own_flood_does_not_starve);
    tcase_add_test(tc, test_context_bytes);
    tcase_add_test(tc, test_also_correlate);
    tcase_add_test(tc, test_context_memory_shared);
    tcase_add_test(tc, test_listing_in_firing_order);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
