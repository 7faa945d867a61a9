/*
 * Unit tests: the parallel engine's pieces (engine/par.c).  par_merge puts
 * the shards' records in one-thread order; par_shard_of spreads keys and is
 * a function of the key alone; and the engine as a whole gives, for 1 to 7
 * threads, exactly what one corr gives on the same lines, including a shard
 * that owns no message but must still fire its timeouts in place.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/corr.h"
#include "engine/par.h"
#include "engine/pdb.h"
#include "engine/syslogfmt.h"
#include "engine/template.h"

/* ---- par_merge ---- */

struct sink {
    char out[256];
    size_t n;
};

static int
collect(void *arg, unsigned shard, const struct par_rec *r)
{
    struct sink *s = arg;

    /* off carries a letter naming the record */
    (void)shard;
    s->out[s->n++] = (char)r->off;
    s->out[s->n] = '\0';
    return 0;
}

static struct par_rec
rec(uint64_t pos, bool expiry, uint64_t expires, uint64_t seq, char name)
{
    struct par_rec r = {pos, {expires, 0, seq}, (size_t)name, 0, expiry};
    return r;
}

START_TEST(test_merge_order)
{
    /* position 5: shard 0 fired timers due at 10 (armed at 1) and 12; shard 1
     * one due at 10 armed at 0 (first) and one due at 11; then the input
     * message of position 5 (owned by shard 1) and its action's message;
     * position 6: shard 0's input, with no timeouts */
    struct par_rec a[] = {rec(5, true, 10, 1, 'b'), rec(5, true, 12, 3, 'e'),
                          rec(6, false, 0, 0, 'h')};
    struct par_rec b[] = {rec(5, true, 10, 0, 'a'), rec(5, true, 11, 2, 'c'),
                          rec(5, false, 0, 0, 'f'), rec(5, false, 0, 0, 'g')};
    struct par_rec c[] = {rec(5, true, 11, 2, 'd')}; /* same key as shard 1's: after it */
    const struct par_rec *recs[] = {a, b, c};
    size_t n[] = {3, 4, 1};
    struct sink s = {{0}, 0};

    ck_assert_int_eq(par_merge(recs, n, 3, collect, &s), 0);
    ck_assert_str_eq(s.out, "abcdefgh");
}
END_TEST

static int
stop_at_second(void *arg, unsigned shard, const struct par_rec *r)
{
    int *count = arg;

    (void)shard;
    (void)r;
    return ++*count == 2 ? 7 : 0;
}

START_TEST(test_merge_stops)
{
    struct par_rec a[] = {rec(1, false, 0, 0, 'x'), rec(2, false, 0, 0, 'y'),
                          rec(3, false, 0, 0, 'z')};
    const struct par_rec *recs[] = {a};
    size_t n[] = {3};
    int count = 0;

    ck_assert_int_eq(par_merge(recs, n, 1, stop_at_second, &count), 7);
    ck_assert_int_eq(count, 2);
}
END_TEST

/* ---- par_shard_of ---- */

START_TEST(test_shard_of)
{
    struct par_key k = {PDB_SCOPE_HOST, "h", "", "", "id", 1, 0, 0, 2};
    unsigned count[4] = {0}, i;
    char host[32];

    ck_assert_uint_eq(par_shard_of(&k, 1), 0);
    /* a function of the key: the same key, the same shard */
    ck_assert_uint_eq(par_shard_of(&k, 4), par_shard_of(&k, 4));
    /* 4000 hosts spread over 4 shards, none of them starved */
    for (i = 0; i < 4000; i++) {
        snprintf(host, sizeof(host), "host%u", i);
        k.host = host;
        k.hostlen = strlen(host);
        count[par_shard_of(&k, 4)]++;
    }
    for (i = 0; i < 4; i++) ck_assert_uint_gt(count[i], 800);
    /* the id is part of the key unless left out (NULL) */
    k.id = NULL;
    k.idlen = 0;
    k.host = "h";
    k.hostlen = 1;
    {
        struct par_key k2 = k;
        k2.id = "";
        ck_assert_uint_eq(par_shard_of(&k, 7), par_shard_of(&k2, 7));
    }
}
END_TEST

/* ---- the engine against one corr ---- */

/* Contexts per host (60 s) whose timeout reports them; a rate-limited action per host. */
static const char rules[] =
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
    "<ruleset name='rs' id='rs'><pattern>app</pattern><rules>\n"
    "<rule provider='t' id='r.ev' class='system' context-id='c-${n}' context-timeout='60' "
    "context-scope='host'>"
    "<patterns><pattern>event @NUMBER:n@ @ANYSTRING:rest@</pattern></patterns>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>closed ${n}@1 on ${HOST} after $(context-length)</value>"
    "</values></message></action>"
    "<action rate='2/30'><message><values>"
    "<value name='MESSAGE'>seen ${n}@1 on ${HOST}</value></values></message></action>"
    "</actions></rule>\n"
    "<rule provider='t' id='r.plain' class='system'>"
    "<patterns><pattern>plain @ANYSTRING:rest@</pattern></patterns></rule>\n"
    "</rules></ruleset></patterndb>\n";

struct capture {
    struct template *tpl;
    struct buf out;
};

static void
render(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a,
       struct buf *out)
{
    struct capture *c = arg;
    struct template_env env;

    (void)kind;
    (void)a;
    template_env_single(&env, &m);
    template_eval(c->tpl, &env, out);
}

static int
write_out(void *arg, const char *p, size_t len)
{
    struct capture *c = arg;

    buf_append(&c->out, p, len);
    return 0;
}

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    struct capture *c = arg;

    render(c, m, kind, a, &c->out);
}

#define NOW 1795168800000ULL /* 2026-11-20T10:00:00Z */

static uint64_t
fixed(void *arg)
{
    (void)arg;
    return NOW;
}

/* A log over an hour: 40 hosts, events with ids, gaps that expire contexts mid-stream. */
static char **
make_log(size_t *n)
{
    char **lines = calloc(6000, sizeof(*lines));
    size_t i;
    unsigned t = 0, seed = 1;

    for (i = 0; i < 6000; i++) {
        char buf[256];
        seed = seed * 1103515245 + 12345;
        t += (seed >> 16) % 3 + (i % 1500 == 0 ? 200 : 0);
        snprintf(buf, sizeof(buf),
                 (seed >> 8) % 5 ? "2026-11-20T08:%02u:%02u+00:00 h%u app[1]: event %u x"
                                 : "2026-11-20T08:%02u:%02u+00:00 h%u app[1]: plain %u",
                 (t / 60) % 60, t % 60, (seed >> 4) % 40, (seed >> 12) % 7);
        lines[i] = strdup(buf);
    }
    *n = i;
    return lines;
}

static void
run_par(struct pdb *db, char **lines, size_t n, unsigned threads, struct capture *c)
{
    struct par_opts o = {threads, render, write_out, NULL, NOW, c, 0, 0, 0};
    struct par *p = par_new(db, &o);
    size_t i;

    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(par_shards(p), threads);
    for (i = 0; i < n; i++) ck_assert_int_eq(par_line(p, lines[i], strlen(lines[i])), 0);
    ck_assert_int_eq(par_finish(p, true), 0);
    par_free(p);
}

START_TEST(test_same_as_one_thread)
{
    struct pdb *db = pdb_new();
    struct buf err = BUF_INIT;
    struct capture one = {NULL, BUF_INIT};
    struct corr_opts co = {0};
    struct corr *corr;
    struct msg *m = msg_new();
    struct msg_time now = {(int64_t)(NOW / 1000), 0, 0};
    struct syslogfmt_opts so = {&now};
    size_t n, i;
    char **lines = make_log(&n);
    unsigned threads;

    ck_assert_int_eq(pdb_load_memory(db, "rules", rules, sizeof(rules) - 1), 0);
    one.tpl = template_compile_str("${ISODATE} ${HOST} ${.classifier.rule_id} ${MESSAGE}\n", &err);
    ck_assert_ptr_nonnull(one.tpl);
    co.emit = on_emit;
    co.clock = fixed;
    co.arg = &one;
    corr = corr_new(db, &co);
    for (i = 0; i < n; i++) {
        syslogfmt_parse(m, lines[i], strlen(lines[i]), &so);
        corr_process(corr, m);
    }
    corr_expire_all(corr);
    corr_free(corr);
    msg_unref(m);
    /* timeouts fired mid-stream, and the rate limit held some back */
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "closed 3 on h"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "seen 3 on h"));

    for (threads = 1; threads <= 7; threads += 2) {
        struct capture c = {one.tpl, BUF_INIT};
        run_par(db, lines, n, threads, &c);
        ck_assert_uint_eq(c.out.len, one.out.len);
        ck_assert_int_eq(memcmp(c.out.p, one.out.p, one.out.len), 0);
        buf_free(&c.out);
    }
    for (i = 0; i < n; i++) free(lines[i]);
    free(lines);
    buf_free(&one.out);
    buf_free(&err);
    template_free(one.tpl);
    pdb_free(db);
}
END_TEST

START_TEST(test_create_context_one_shard)
{
    static const char cc[] =
        "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
        "<ruleset name='rs' id='rs'><rules>\n"
        "<rule provider='t' id='r.cc' class='system'>"
        "<patterns><pattern>go @NUMBER:n@</pattern></patterns>"
        "<actions><action><create-context context-id='x${n}' context-timeout='5'>"
        "<message><values><value name='MESSAGE'>made</value></values></message>"
        "</create-context></action></actions></rule>\n"
        "</rules></ruleset></patterndb>\n";
    struct pdb *db = pdb_new();
    struct par_opts o = {4, render, write_out, NULL, NOW, NULL, 0, 0, 0};
    struct par *p;

    ck_assert_int_eq(pdb_load_memory(db, "cc", cc, sizeof(cc) - 1), 0);
    p = par_new(db, &o);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(par_shards(p), 1);
    par_free(p);
    pdb_free(db);
}
END_TEST

/* A rule whose values rewrite HOST beside a rate limit: buckets would not follow the key. */
START_TEST(test_rewritten_scope_one_shard)
{
    static const char rw[] =
        "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
        "<ruleset name='rs' id='rs'><rules>\n"
        "<rule provider='t' id='r.rw' class='system'>"
        "<patterns><pattern>go @NUMBER:n@</pattern></patterns>"
        "<values><value name='HOST'>h${n}</value></values>"
        "<actions><action rate='1/10'><message><values><value name='MESSAGE'>x</value>"
        "</values></message></action></actions></rule>\n"
        "</rules></ruleset></patterndb>\n";
    struct pdb *db = pdb_new();
    struct par_opts o = {4, render, write_out, NULL, NOW, NULL, 0, 0, 0};
    struct par *p;

    ck_assert_int_eq(pdb_load_memory(db, "rw", rw, sizeof(rw) - 1), 0);
    p = par_new(db, &o);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(par_shards(p), 1);
    par_free(p);
    pdb_free(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("par");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_merge_order);
    tcase_add_test(tc, test_merge_stops);
    tcase_add_test(tc, test_shard_of);
    tcase_add_test(tc, test_same_as_one_thread);
    tcase_add_test(tc, test_create_context_one_shard);
    tcase_add_test(tc, test_rewritten_scope_one_shard);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
