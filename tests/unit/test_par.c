/*
 * Unit tests: the parallel engine's pieces (engine/par.c).  par_merge puts
 * the shards' records in one-thread order; the correlation key's shard
 * (corrkey.h) spreads keys and is a function of the key alone; and the
 * pipeline (engine/pipeline.c) replaying lines as corral match -j does
 * gives, for 1 to 7 threads, rings of 2 to 8 batches of 1 to 256 lines and
 * output rendered on the threads or handed back, exactly what one corr
 * gives on the same lines, including a shard that owns no message but must
 * still fire its timeouts in place.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/corr.h"
#include "engine/corrkey.h"
#include "engine/par.h"
#include "engine/pdb.h"
#include "engine/pipeline.h"
#include "engine/syslogfmt.h"
#include "engine/template.h"
#include "engine/xalloc.h"
#include "tests/unit/unit_run.h"

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
    struct par_rec r = {pos, {expires, 0, seq}, (size_t)name, 0, expiry, 0};
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

/*
 * A split message's parts: by sub across shards, each shard's own order kept within a sub.  The
 * input message comes from the shard of the last join (sub 0), before the rule's actions, which
 * the shard of step 0 ran without waiting for it (sub 1).
 */
START_TEST(test_merge_sub)
{
    struct par_rec a[] = {rec(4, false, 0, 0, 'b'), rec(4, false, 0, 0, 'c'),
                          rec(4, false, 0, 0, 'f'), rec(5, false, 0, 0, 'h')};
    struct par_rec b[] = {rec(4, true, 9, 1, 'x'), rec(4, false, 0, 0, 'a'),
                          rec(4, false, 0, 0, 'd'), rec(4, false, 0, 0, 'e'),
                          rec(4, false, 0, 0, 'g')};
    const struct par_rec *recs[] = {a, b};
    size_t n[] = {4, 5};
    struct sink s = {{0}, 0};

    /* shard 0 ran step 0 and also[1]: its rule's actions (b, c), sub 1, and also[1]'s (f),
     * sub 3; shard 1 ran also[0] and also[2], the last: a timeout (x), the input message (a),
     * sub 0, also[0]'s actions (d, e), sub 2, and also[2]'s (g), sub 4 */
    a[0].sub = a[1].sub = 1;
    a[2].sub = 3;
    b[2].sub = b[3].sub = 2;
    b[4].sub = 4;
    ck_assert_int_eq(par_merge(recs, n, 2, collect, &s), 0);
    ck_assert_str_eq(s.out, "xabcdefgh");
}
END_TEST

/*
 * Runs of positions only one shard has records at go in that shard's order, up to the first
 * position another shard has records at too, where the timeouts go first.
 */
START_TEST(test_merge_runs)
{
    struct par_rec a[] = {rec(1, false, 0, 0, 'a'), rec(2, true, 3, 0, 'b'),
                          rec(2, false, 0, 0, 'c'), rec(5, false, 0, 0, 'h'),
                          rec(7, false, 0, 0, 'j')};
    struct par_rec b[] = {rec(3, false, 0, 0, 'd'), rec(4, false, 0, 0, 'e'),
                          rec(4, false, 0, 0, 'f'), rec(5, true, 9, 1, 'g'),
                          rec(6, false, 0, 0, 'i')};
    const struct par_rec *recs[] = {a, b};
    size_t n[] = {5, 5};
    struct sink s = {{0}, 0};

    ck_assert_int_eq(par_merge(recs, n, 2, collect, &s), 0);
    ck_assert_str_eq(s.out, "abcdefghij");
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

/* ---- the shard of a correlation key ---- */

static unsigned
par_shard_of(const struct corrkey *k, unsigned n)
{
    return corrkey_shard(corrkey_hash(k), n);
}

START_TEST(test_shard_of)
{
    struct corrkey k = {PDB_SCOPE_HOST, "h", "", "", "id", 1, 0, 0, 2};
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
        struct corrkey k2 = k;
        k2.id = "";
        ck_assert_uint_eq(par_shard_of(&k, 7), par_shard_of(&k2, 7));
    }
}
END_TEST

/* The key a rule routes a message by is the key corr files its context under: scope fields
 * by scope, the context id evaluated over the message. */
START_TEST(test_key_for_rule)
{
    struct buf err = BUF_INIT, id = BUF_INIT;
    struct template *tpl = template_compile_str("ssh-${PID}", &err);
    struct msg *m = msg_new();
    struct corrkey a, b;

    ck_assert_ptr_nonnull(tpl);
    msg_set(m, NV_HOST, "web1", 4);
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_PID, "42", 2);
    corrkey_for_rule(&a, PDB_SCOPE_PROGRAM, tpl, m, &id);
    corrkey_from_msg(&b, PDB_SCOPE_PROGRAM, m, "ssh-42", 6);
    ck_assert_uint_eq(a.idlen, 6);
    ck_assert(memcmp(a.id, "ssh-42", 6) == 0);
    ck_assert_uint_eq(a.pidlen, 0); /* program scope: no PID */
    ck_assert_uint_eq(corrkey_hash(&a), corrkey_hash(&b));
    /* no context id: the scope fields alone, as an empty id */
    corrkey_for_rule(&a, PDB_SCOPE_HOST, NULL, m, &id);
    corrkey_from_msg(&b, PDB_SCOPE_HOST, m, "", 0);
    ck_assert_uint_eq(corrkey_hash(&a), corrkey_hash(&b));
    ck_assert_uint_eq(a.hostlen, 4);
    ck_assert_uint_eq(a.proglen, 0);
    /* the scope is part of the key */
    corrkey_from_msg(&b, PDB_SCOPE_GLOBAL, m, "", 0);
    ck_assert_uint_ne(corrkey_hash(&a), corrkey_hash(&b));
    msg_unref(m);
    template_free(tpl);
    buf_free(&id);
    buf_free(&err);
}
END_TEST

/* ---- par_balance: the one balancing of both users of the pipeline ---- */

/* par.c's slot and workers.c's item put the fields elsewhere: the same policy for both */
struct rec_a {
    unsigned shard;
    uint8_t by;
};
struct rec_b {
    const char *pad[3];
    uint8_t by;
    uint64_t t;
    unsigned shard;
};

START_TEST(test_balance)
{
    struct rec_a a[12];
    struct rec_b b[12];
    size_t i;

    /* 4 messages of contexts in shard 0 weigh 16, 8 without: an even share is 12, so shard 1
     * takes all 8 although thread 0 classified them */
    for (i = 0; i < 12; i++) {
        a[i].shard = i < 4 ? 0 : PAR_ANY_SHARD;
        a[i].by = 0;
        b[i].shard = a[i].shard;
        b[i].by = a[i].by;
    }
    par_balance(a, 12, sizeof(*a), offsetof(struct rec_a, shard), offsetof(struct rec_a, by), 2);
    par_balance(b, 12, sizeof(*b), offsetof(struct rec_b, shard), offsetof(struct rec_b, by), 2);
    for (i = 0; i < 12; i++) {
        ck_assert_uint_eq(a[i].shard, i < 4 ? 0 : 1);
        ck_assert_uint_eq(b[i].shard, a[i].shard);
    }
    /* none of a context, all classified by thread 1: it keeps its share (4 of 8), the rest fill
     * shard 0 */
    for (i = 0; i < 8; i++) {
        a[i].shard = PAR_ANY_SHARD;
        a[i].by = 1;
    }
    par_balance(a, 8, sizeof(*a), offsetof(struct rec_a, shard), offsetof(struct rec_a, by), 2);
    for (i = 0; i < 8; i++) ck_assert_uint_eq(a[i].shard, i < 4 ? 1 : 0);
    /* a thread beyond the shards (corrald's workers may have more threads than shards) */
    for (i = 0; i < 6; i++) {
        a[i].shard = PAR_ANY_SHARD;
        a[i].by = 5;
    }
    par_balance(a, 6, sizeof(*a), offsetof(struct rec_a, shard), offsetof(struct rec_a, by), 3);
    for (i = 0; i < 6; i++) ck_assert_uint_eq(a[i].shard, (unsigned)(i / 2));
    /* one shard: nothing to do */
    a[0].shard = PAR_ANY_SHARD;
    par_balance(a, 1, sizeof(*a), offsetof(struct rec_a, shard), offsetof(struct rec_a, by), 1);
    ck_assert_uint_eq(a[0].shard, PAR_ANY_SHARD);
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

/* The pipeline's shapes the tests run: corral match's, and small rings that wrap often. */
struct shape {
    size_t batch;
    unsigned nbatches;
    bool by_ref; /* messages handed back and rendered on the collecting thread */
    /* a tick alone after every batch (as corrald's second does; the clock stands still, so
     * it fires nothing): batches with nothing to classify */
    bool ticks;
};
static const struct shape shapes[] = {{256, 8, false, false}, {5, 2, true, false},
                                      {33, 3, false, false},  {1, 2, true, false},
                                      {3, 2, false, true},    {40, 3, true, true}};

struct replay {
    struct pipeline *pl;
    struct capture *c;
    /* the rendered texts of the batch being delivered, written at its end (as corral match
     * gathers them for writev): they must stay put until then */
    struct pending {
        const char *text;
        size_t len;
    } * pending;
    size_t npending, cappending;
};

static int
deliver(void *arg, const struct pipeline_out *o)
{
    struct replay *r = arg;
    size_t i;

    if (o->m) {
        render(r->c, o->m, o->kind, o->action, &r->c->out);
    } else {
        r->pending = xgrow(r->pending, &r->cappending, r->npending + 1, sizeof(*r->pending));
        r->pending[r->npending].text = o->text;
        r->pending[r->npending++].len = o->len;
    }
    if (o->batch_end) {
        for (i = 0; i < r->npending; i++)
            buf_append(&r->c->out, r->pending[i].text, r->pending[i].len);
        r->npending = 0;
    }
    ck_assert(!o->keep);
    return 0;
}

/* Every batch's delivery ends with its last record (batch_end). */
static void
replay_collect(struct replay *r)
{
    pipeline_collect(r->pl, deliver, r);
    ck_assert_uint_eq(r->npending, 0);
}

static void
replay_submit(struct replay *r, const struct shape *sh, unsigned flags)
{
    if (!pipeline_can_submit(r->pl)) {
        pipeline_wait(r->pl, pipeline_submitted(r->pl) + 2 - sh->nbatches);
        replay_collect(r);
    }
    ck_assert(pipeline_submit(r->pl, NOW, flags));
    replay_collect(r);
}

/* Replays lines on the pipeline as corral match -j does, with the given shape. */
static void
run_shape(struct pdb *db, char **lines, size_t n, unsigned threads, const struct shape *sh,
          struct capture *c, unsigned want_shards, struct corr_stats *st)
{
    struct msg_time now = {(int64_t)(NOW / 1000), 0, 0};
    struct pipeline_opts o;
    struct replay r = {NULL, c, NULL, 0, 0};
    size_t i;

    memset(&o, 0, sizeof(o));
    o.threads = threads;
    o.batch = sh->batch;
    o.nbatches = sh->nbatches;
    o.parse.now = &now;
    o.render = sh->by_ref ? NULL : render;
    if (sh->ticks) o.corr.clock = fixed;
    o.arg = c;
    r.pl = pipeline_new(db, &o);
    ck_assert_ptr_nonnull(r.pl);
    ck_assert_uint_eq(pipeline_nshards(r.pl), want_shards);
    for (i = 0; i < n; i++)
        if (pipeline_add(r.pl, lines[i], strlen(lines[i]), NULL, 0, NULL, 0, false) == sh->batch) {
            replay_submit(&r, sh, 0);
            if (sh->ticks) replay_submit(&r, sh, PIPELINE_TICK);
        }
    if (pipeline_filling(r.pl)) replay_submit(&r, sh, 0);
    replay_submit(&r, sh, PIPELINE_EXPIRE);
    pipeline_wait(r.pl, pipeline_submitted(r.pl));
    replay_collect(&r);
    free(r.pending);
    ck_assert_uint_eq(pipeline_collected(r.pl), pipeline_submitted(r.pl));
    ck_assert_uint_eq(pipeline_queued(r.pl), 0);
    pipeline_stats(r.pl, st);
    pipeline_free(r.pl);
}

/* Runs lines through one corr into one->out, then the pipeline with 1, 3, 5, 7 threads (3 in
 * every shape): the same bytes. */
static void
same_as_one_thread(struct pdb *db, char **lines, size_t n, struct capture *one)
{
    struct corr_opts co = {0};
    struct corr *corr;
    struct msg *m = msg_new();
    struct msg_time now = {(int64_t)(NOW / 1000), 0, 0};
    struct syslogfmt_opts so = {&now};
    struct corr_stats want, got;
    size_t i;
    unsigned threads;

    co.emit = on_emit;
    co.clock = fixed;
    co.arg = one;
    corr = corr_new(db, &co);
    for (i = 0; i < n; i++) {
        syslogfmt_parse(m, lines[i], strlen(lines[i]), &so);
        corr_process(corr, m);
    }
    corr_expire_all(corr);
    corr_stats(corr, &want);
    corr_free(corr);
    msg_unref(m);
    for (threads = 1; threads <= 7; threads += 2) {
        size_t k;
        for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
            struct capture c = {one->tpl, BUF_INIT};
            /* every shape with 3 threads, corral match's with the others */
            if (k && threads != 3) continue;
            run_shape(db, lines, n, threads, &shapes[k], &c, threads, &got);
            ck_assert_uint_eq(c.out.len, one->out.len);
            ck_assert_int_eq(memcmp(c.out.p, one->out.p, one->out.len), 0);
            /* and the same counts, the messages that need no shard included */
            ck_assert_uint_eq(got.processed, want.processed);
            ck_assert_uint_eq(got.matched, want.matched);
            ck_assert_uint_eq(got.unknown, want.unknown);
            ck_assert_uint_eq(got.generated, want.generated);
            ck_assert_uint_eq(got.contexts_created, want.contexts_created);
            ck_assert_uint_eq(got.contexts_expired, want.contexts_expired);
            buf_free(&c.out);
        }
    }
}

START_TEST(test_same_as_one_thread)
{
    struct pdb *db = pdb_new();
    struct buf err = BUF_INIT;
    struct capture one = {NULL, BUF_INIT};
    size_t n, i;
    char **lines = make_log(&n);

    ck_assert_int_eq(pdb_load_memory(db, "rules", rules, sizeof(rules) - 1), 0);
    one.tpl = template_compile_str("${ISODATE} ${HOST} ${.classifier.rule_id} ${MESSAGE}\n", &err);
    ck_assert_ptr_nonnull(one.tpl);
    same_as_one_thread(db, lines, n, &one);
    /* timeouts fired mid-stream, and the rate limit held some back */
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "closed 3 on h"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "seen 3 on h"));
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
    struct pipeline_opts o;
    struct pipeline *p;

    memset(&o, 0, sizeof(o));
    o.threads = 4;
    o.batch = 256;
    o.nbatches = 8;
    o.render = render;
    ck_assert_int_eq(pdb_load_memory(db, "cc", cc, sizeof(cc) - 1), 0);
    p = pipeline_new(db, &o);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(pipeline_nshards(p), 1);
    pipeline_free(p);
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
    struct pipeline_opts o;
    struct pipeline *p;

    memset(&o, 0, sizeof(o));
    o.threads = 4;
    o.batch = 256;
    o.nbatches = 8;
    o.render = render;
    ck_assert_int_eq(pdb_load_memory(db, "rw", rw, sizeof(rw) - 1), 0);
    p = pipeline_new(db, &o);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(pipeline_nshards(p), 1);
    pipeline_free(p);
    pdb_free(db);
}
END_TEST

/*
 * also-correlate across shards: failures join a context per address (host
 * scope), one per user (host scope) and one per address (global scope), each
 * keyed by its id, so one line's three contexts are mostly in three shards.
 * Each join's values read its context and the values set before it, the
 * input message shows them all, match and timeout actions of every rule
 * fire; a probe rule without a context joins the user's (one shard: it has
 * no key of its own).  A scan rule without a context but with a rate limit
 * is keyed by its process and joins the global context, elsewhere: its
 * action reads the join's value from the message, so its shard waits for
 * the join (par_process()).  The user's and the
 * global context have the same timeout: armed by one line, they fire in the
 * order of the joins.
 */
static const char also_rules[] =
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
    "<ruleset name='rs' id='rs'><pattern>app</pattern><rules>\n"
    "<rule provider='t' id='r.fail' class='violation' context-id='a-${addr}' context-timeout='30' "
    "context-scope='host' also-correlate='r.user,r.g'>"
    "<patterns><pattern>fail user @ESTRING:user: @from @ANYSTRING:addr@</pattern></patterns>"
    "<values><value name='a.n'>$(context-length)</value></values>"
    "<actions><action condition='\"$(context-length)\" == \"3\"'><message><values>"
    "<value name='MESSAGE'>burst ${addr}@1 n=$(context-length) u=${u.n}@1</value>"
    "</values></message></action>"
    "<action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>addr ${addr}@1 done after $(context-length)</value>"
    "</values></message></action></actions></rule>\n"
    "<rule provider='t' id='r.probe' class='system' also-correlate='r.user'>"
    "<patterns><pattern>probe user @ESTRING:user: @from @ANYSTRING:addr@</pattern></patterns>"
    "<values><value name='a.n'>p</value></values>"
    "<actions><action><message><values>"
    "<value name='MESSAGE'>probe ${user} u=${u.n}</value></values></message></action>"
    "</actions></rule>\n"
    "<rule provider='t' id='r.scan' class='system' also-correlate='r.g'>"
    "<patterns><pattern>scan user @ESTRING:user: @from @ANYSTRING:addr@</pattern></patterns>"
    "<actions><action rate='1000/1'><message inherit-mode='context'><values>"
    "<value name='MESSAGE'>scan ${addr} g=${g.n}</value></values></message></action>"
    "</actions></rule>\n"
    "<rule provider='t' id='r.user' class='violation' context-id='u-${user}' "
    "context-timeout='40' context-scope='host'>"
    "<values><value name='u.n'>$(context-length)/${a.n}</value></values>"
    "<actions><action condition='\"$(context-length)\" == \"4\"'><message><values>"
    "<value name='MESSAGE'>user ${user}@1 ${u.n}@1</value></values></message></action>"
    "<action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>user ${user}@1 quiet after $(context-length)</value>"
    "</values></message></action></actions></rule>\n"
    "<rule provider='t' id='r.g' class='violation' context-id='g-${addr}' "
    "context-timeout='40' context-scope='global'>"
    "<values><value name='g.n'>$(context-length)/${u.n}</value></values>"
    "<actions><action condition='\"$(context-length)\" == \"2\"'><message><values>"
    "<value name='MESSAGE'>global ${addr}@1 ${g.n}@1</value></values></message></action>"
    "<action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>global ${addr}@1 done $(context-length)</value>"
    "</values></message></action></actions></rule>\n"
    "</rules></ruleset></patterndb>\n";

static char **
make_also_log(size_t *n)
{
    char **lines = calloc(4000, sizeof(*lines));
    size_t i;
    unsigned t = 0, seed = 3;

    for (i = 0; i < 4000; i++) {
        char buf[256];
        seed = seed * 1103515245 + 12345;
        t += (seed >> 16) % 3 + (i % 1000 == 0 ? 100 : 0);
        snprintf(buf, sizeof(buf),
                 "2026-11-20T08:%02u:%02u+00:00 h%u app[1]: %s user u%u from 10.0.0.%u",
                 (t / 60) % 60, t % 60, (seed >> 4) % 4,
                 (seed >> 9) % 9 == 0   ? "probe"
                 : (seed >> 9) % 9 == 1 ? "scan"
                                        : "fail",
                 (seed >> 12) % 6, (seed >> 20) % 23);
        lines[i] = strdup(buf);
    }
    *n = i;
    return lines;
}

START_TEST(test_also_correlate_split)
{
    struct pdb *db = pdb_new();
    struct buf err = BUF_INIT, id = BUF_INIT;
    struct capture one = {NULL, BUF_INIT};
    struct par_route rt;
    struct par_steps st;
    struct msg *m = msg_new();
    size_t n, i, split = 0;
    char **lines = make_also_log(&n);

    ck_assert_int_eq(pdb_load_memory(db, "also", also_rules, sizeof(also_rules) - 1), 0);
    /* not one shard any more, and most failure lines are split */
    ck_assert_uint_eq(par_route_init(&rt, db, 4), 4);
    for (i = 0; i < n; i++) {
        const struct pdb_rule *r;
        syslogfmt_parse(m, lines[i], strlen(lines[i]), NULL);
        r = pdb_lookup(db, m);
        ck_assert_ptr_nonnull(r);
        par_owner_steps(&rt, m, r, &id, &st);
        if (st.n) {
            ck_assert_uint_eq(st.n, 1 + r->nalso);
            split++;
        }
    }
    ck_assert_uint_gt(split, n / 2);
    one.tpl = template_compile_str("${ISODATE} ${HOST} ${.classifier.rule_id} "
                                   "${.classifier.context_id} a=${a.n} u=${u.n} g=${g.n} "
                                   "${MESSAGE}\n",
                                   &err);
    ck_assert_ptr_nonnull(one.tpl);
    same_as_one_thread(db, lines, n, &one);
    /* every kind of message was there to compare */
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), " burst 10.0.0."));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), " quiet after "));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), " global 10.0.0."));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), " done after "));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), " probe u"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "a=p u=3/p g= "));
    /* a rule without a context whose rate limit keeps it in its process's shard: its action
     * reads what the join (elsewhere) set, so it waits for it (par_process()) */
    {
        const char *p = strstr(buf_str(&one.out), " scan 10.0.0.");
        ck_assert_ptr_nonnull(p);
        p = strstr(p, " g=");
        ck_assert_ptr_nonnull(p);
        ck_assert(p[3] >= '1' && p[3] <= '9');
    }
    for (i = 0; i < n; i++) free(lines[i]);
    free(lines);
    msg_unref(m);
    buf_free(&one.out);
    buf_free(&err);
    buf_free(&id);
    template_free(one.tpl);
    pdb_free(db);
}
END_TEST

/* A join whose context-id reads a value the classifying rule sets: its key is not known at
 * classification, so correlation stays in one shard. */
START_TEST(test_also_unknown_key_one_shard)
{
    static const char rw[] =
        "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
        "<ruleset name='rs' id='rs'><rules>\n"
        "<rule provider='t' id='r.a' class='system' context-id='a${n}' also-correlate='r.b'>"
        "<patterns><pattern>go @NUMBER:n@</pattern></patterns>"
        "<values><value name='k'>$(context-length)</value></values></rule>\n"
        "<rule provider='t' id='r.b' class='system' context-id='b${k}'></rule>\n"
        "</rules></ruleset></patterndb>\n";
    struct pdb *db = pdb_new();
    struct par_route rt;

    ck_assert_int_eq(pdb_load_memory(db, "rw", rw, sizeof(rw) - 1), 0);
    ck_assert_uint_eq(par_route_init(&rt, db, 4), 1);
    pdb_free(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("par");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_merge_order);
    tcase_add_test(tc, test_merge_stops);
    tcase_add_test(tc, test_merge_sub);
    tcase_add_test(tc, test_merge_runs);
    tcase_add_test(tc, test_also_correlate_split);
    tcase_add_test(tc, test_also_unknown_key_one_shard);
    tcase_add_test(tc, test_shard_of);
    tcase_add_test(tc, test_balance);
    tcase_add_test(tc, test_key_for_rule);
    tcase_add_test(tc, test_same_as_one_thread);
    tcase_add_test(tc, test_create_context_one_shard);
    tcase_add_test(tc, test_rewritten_scope_one_shard);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
