/*
 * test_workers: corrald's parallel engine (agent/core/workers.c) as its loop
 * drives it.  When a batch is handed to the worker threads: a trickle of
 * messages must not wake every worker for each message (linger_ms), and
 * nothing may wait longer than that, nor be lost when it lingers; busy
 * workers must not make the loop hand over tiny batches.  What
 * comes back: exactly what one engine (server.c's: received_normalise,
 * then corr_process) gives for the same received messages, in the same
 * order and with the same keep flags, through rings that wrap, full queues
 * and a reload that moves the contexts between shards.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "agent/core/workers.h"
#include "engine/clock.h"
#include "engine/corr.h"
#include "engine/pdb.h"
#include "engine/received.h"
#include "engine/syslogfmt.h"
#include "engine/template.h"
#include "tests/unit/unit_run.h"

static const char rules[] = "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
                            "<ruleset name='rs' id='rs'><pattern>app</pattern><rules>\n"
                            "<rule provider='t' id='r.hello' class='system'>"
                            "<patterns><pattern>hello @NUMBER:n@</pattern></patterns></rule>\n"
                            "</rules></ruleset></patterndb>\n";

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action,
        bool keep)
{
    size_t *inputs = arg;

    (void)m;
    (void)action;
    (void)keep;
    if (kind == CORR_INPUT) ++*inputs;
}

struct bench {
    uv_loop_t loop;
    struct pdb *db;
    struct corr_opts co;
    struct workers *w;
    size_t inputs; /* input messages emitted */
};

static void
start(struct bench *b, unsigned linger_ms)
{
    struct workers_opts o;

    memset(b, 0, sizeof(*b));
    ck_assert_int_eq(uv_loop_init(&b->loop), 0);
    b->db = pdb_new();
    ck_assert_int_eq(pdb_load_memory(b->db, "rules", rules, sizeof(rules) - 1), 0);
    memset(&o, 0, sizeof(o));
    o.threads = 2;
    o.queue = 1024;
    o.hostname = "h";
    o.corr = &b->co;
    o.emit = on_emit;
    o.arg = &b->inputs;
    o.linger_ms = linger_ms;
    b->w = workers_new(&b->loop, b->db, &o);
    ck_assert_ptr_nonnull(b->w);
}

static void
stop(struct bench *b)
{
    workers_free(b->w);
    uv_run(&b->loop, UV_RUN_NOWAIT); /* closes the handles */
    ck_assert_int_eq(uv_loop_close(&b->loop), 0);
    pdb_free(b->db);
}

static uint64_t
batches(struct bench *b)
{
    struct workers_stats st;

    workers_get_stats(b->w, &st);
    return st.batches;
}

static void
submit(struct bench *b, unsigned n)
{
    char line[64];
    int len = snprintf(line, sizeof(line), "<13>Dec  5 10:00:00 h app: hello %u", n);

    ck_assert(workers_submit(b->w, line, (size_t)len, NULL, NULL, false, false));
}

/* One message with no batch at the workers: it waits for more rather than wake them all. */
START_TEST(test_trickle_lingers)
{
    struct bench b;

    start(&b, 60000); /* longer than any test run: the check below cannot race it */
    submit(&b, 1);
    submit(&b, 2);
    uv_run(&b.loop, UV_RUN_NOWAIT); /* one iteration: the check handle runs */
    ck_assert_uint_eq(batches(&b), 0);
    /* a drain (metrics, a save, a reload) does not wait for the linger */
    workers_drain(b.w);
    ck_assert_uint_eq(batches(&b), 1);
    ck_assert_uint_eq(b.inputs, 2);
    stop(&b);
}
END_TEST

/* A full batch goes at once, without a loop iteration; a lingering one behind it is not lost. */
START_TEST(test_full_batch_goes)
{
    struct bench b;
    unsigned i;

    start(&b, 60000);
    for (i = 0; i < 256; i++) submit(&b, i);
    ck_assert_uint_eq(batches(&b), 1); /* handed over when it filled, before any iteration */
    submit(&b, 256);
    uv_run(&b.loop, UV_RUN_NOWAIT);
    /* the first batch may be back already (nothing at the workers: the new one lingers) or
     * not (it goes at this iteration's check): either way nothing is lost below */
    workers_drain(b.w);
    ck_assert_uint_eq(b.inputs, 257);
    stop(&b);
}
END_TEST

/* linger_ms 0: each loop iteration hands over what it read, as before linger existed. */
START_TEST(test_no_linger)
{
    struct bench b;

    start(&b, 0);
    submit(&b, 1);
    uv_run(&b.loop, UV_RUN_NOWAIT);
    ck_assert_uint_eq(batches(&b), 1);
    workers_drain(b.w);
    ck_assert_uint_eq(b.inputs, 1);
    stop(&b);
}
END_TEST

/* The linger timer hands a lone batch over by itself: nothing waits for more traffic. */
START_TEST(test_linger_timer_hands_over)
{
    struct bench b;

    start(&b, 1);
    submit(&b, 1);
    /* runs until the input message has come back: the timer, then the workers' async */
    while (b.inputs < 1) uv_run(&b.loop, UV_RUN_ONCE);
    ck_assert_uint_eq(batches(&b), 1);
    stop(&b);
}
END_TEST

/*
 * Busy workers: the batch being filled is not handed over at every loop
 * iteration but fills up (or goes once every batch is back).  Otherwise a
 * fast reader fills the ring (queue 1024: 4 batches) with batches of a few
 * messages each, and the queue refuses datagrams while nearly empty.  Here
 * 768 messages, with an iteration after every 10 and the linger longer than
 * the test: a batch that is not full goes only while none is with the
 * workers, so at most one is, and three batches' worth can never be refused.
 */
START_TEST(test_busy_workers_fill_batches)
{
    struct bench b;
    unsigned i;

    start(&b, 60000);
    for (i = 0; i < 768; i++) {
        submit(&b, i); /* asserts the message was taken */
        if (i % 10 == 9) uv_run(&b.loop, UV_RUN_NOWAIT);
    }
    workers_drain(b.w);
    ck_assert_uint_eq(b.inputs, 768);
    stop(&b);
}
END_TEST

/* ---- the same as one engine ---- */

/* Contexts per host whose timeout reports them, a rate-limited action per host, a rule without
 * context, and the received fields in the output. */
static const char corr_rules[] =
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
    "<ruleset name='rs' id='rs'><pattern>app</pattern><rules>\n"
    "<rule provider='t' id='r.ev' class='system' context-id='c-${n}' context-timeout='60' "
    "context-scope='host'>"
    "<patterns><pattern>event @NUMBER:n@ @ANYSTRING:rest@</pattern></patterns>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>closed ${n}@1 on ${HOST} after $(context-length)</value>"
    "</values></message></action>"
    "<action rate='2/30'><message><values>"
    "<value name='MESSAGE'>seen ${n}@1 on ${HOST} from ${SOURCEIP}</value></values></message>"
    "</action></actions></rule>\n"
    "<rule provider='t' id='r.plain' class='system'>"
    "<patterns><pattern>plain @ANYSTRING:rest@</pattern></patterns></rule>\n"
    "</rules></ruleset></patterndb>\n";

/* The same without the rate limit: contexts are routed by their id too, so a reload to these
 * rules moves them between shards. */
static const char corr_rules_norate[] =
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
    "<ruleset name='rs' id='rs'><pattern>app</pattern><rules>\n"
    "<rule provider='t' id='r.ev' class='system' context-id='c-${n}' context-timeout='60' "
    "context-scope='host'>"
    "<patterns><pattern>event @NUMBER:n@ @ANYSTRING:rest@</pattern></patterns>"
    "<actions><action trigger='timeout'><message><values>"
    "<value name='MESSAGE'>closed ${n}@1 on ${HOST} after $(context-length)</value>"
    "</values></message></action>"
    "<action><message><values>"
    "<value name='MESSAGE'>seen ${n}@1 on ${HOST} from ${SOURCEIP}</value></values></message>"
    "</action></actions></rule>\n"
    "<rule provider='t' id='r.plain' class='system'>"
    "<patterns><pattern>plain @ANYSTRING:rest@</pattern></patterns></rule>\n"
    "</rules></ruleset></patterndb>\n";

#define NLINES 3000

/* A received message: its line (an ISO stamp: the year is in it), peer, TLS peer, stream. */
struct rx {
    char line[160];
    char peer[32], tls[32];
    bool has_peer, has_tls, keep;
};

/* Over an hour, 30 hosts, a third of the lines naming no host (HOST from how they came). */
static struct rx *
make_rx(void)
{
    struct rx *rx = calloc(NLINES, sizeof(*rx));
    unsigned i, t = 0, seed = 7;

    for (i = 0; i < NLINES; i++) {
        unsigned host, n;
        char hostf[16] = "-";
        seed = seed * 1103515245 + 12345;
        /* the restart (halfway) within the second of a context armed before it: timers armed
         * after it tie with that loaded one */
        if (i != NLINES / 2) t += (seed >> 16) % 3 + (i % 1000 == 0 ? 200 : 0);
        host = (seed >> 4) % 30;
        n = (seed >> 12) % 5;
        if ((seed >> 20) % 3) snprintf(hostf, sizeof(hostf), "h%u", host);
        snprintf(rx[i].line, sizeof(rx[i].line),
                 (seed >> 8) % 5 || i == NLINES / 2 - 1
                     ? "<13>1 2026-11-20T08:%02u:%02uZ %s app 1 - - event %u x"
                     : "<13>1 2026-11-20T08:%02u:%02uZ %s app 1 - - plain %u",
                 (t / 60) % 60, t % 60, hostf, n);
        rx[i].has_peer = (seed >> 22) % 4 != 0;
        snprintf(rx[i].peer, sizeof(rx[i].peer), "10.0.0.%u", host % 7);
        rx[i].has_tls = (seed >> 24) % 3 == 0;
        snprintf(rx[i].tls, sizeof(rx[i].tls), "client%u.example", host % 3);
        rx[i].keep = (seed >> 26) % 2;
    }
    return rx;
}

#define RX_TEMPLATE "${HOST}|${SOURCEIP}|${.tls.peer_name}|${.classifier.rule_id}|${MESSAGE}"

struct same {
    struct template *tpl;
    struct buf out;
    struct corr *corr;         /* the one engine's, for its firing key */
    struct corr_stats st;      /* the counters at the end */
    struct corr_rule_stats rs; /* the per-rule counts at the end, summed over the rules */
};

static void
add_rule_counts(const struct corr_rule_stats *rs, void *arg)
{
    struct corr_rule_stats *sum = arg;

    sum->refused += rs->refused;
    sum->dropped += rs->dropped;
    sum->evicted += rs->evicted;
    sum->rate_limited += rs->rate_limited;
    sum->rate_refused += rs->rate_refused;
    sum->rate_evicted += rs->rate_evicted;
}

static void
render_rx(struct same *s, struct msg *m, bool keep)
{
    struct template_env env;

    template_env_single(&env, &m);
    template_eval(s->tpl, &env, &s->out);
    buf_printf(&s->out, " keep=%d\n", keep);
}

static uint64_t
late_clock(void *arg)
{
    (void)arg;
    return clock_steady_ms();
}

/* keep of the message being processed by the one engine (its emits are synchronous) */
static bool one_keep;

static void
one_emit_keep(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    struct same *s = arg;
    uint64_t key[3];

    (void)kind;
    (void)a;
    render_rx(s, m, !corr_firing_key(s->corr, key) && one_keep);
}

/*
 * One engine: what server.c does for each message with <engine workers="1"/>.  With state, a
 * restart halfway: the first half's contexts saved to state, then loaded by a new engine that
 * takes the second half, whose output alone is kept.
 */
static void
run_one(struct pdb *db, struct pdb *db2, const char *state, const struct rx *rx, struct same *s)
{
    struct corr_opts co;
    struct msg *m = msg_new();
    size_t i, kept, dropped;

    memset(&co, 0, sizeof(co));
    co.emit = one_emit_keep;
    co.clock = late_clock;
    co.arg = s;
    s->corr = corr_new(db, &co);
    for (i = 0; i < NLINES; i++) {
        struct received_from from = {rx[i].has_peer ? rx[i].peer : NULL, strlen(rx[i].peer),
                                     rx[i].has_tls ? rx[i].tls : NULL, strlen(rx[i].tls), "local"};
        if (db2 && i == NLINES / 2) corr_set_db(s->corr, db2, &kept, &dropped);
        if (state && i == NLINES / 2) {
            ck_assert_int_eq(corr_save(s->corr, state), 0);
            corr_free(s->corr);
            s->corr = corr_new(db, &co);
            ck_assert_int_gt(corr_load(s->corr, state, &dropped), 0);
            buf_reset(&s->out);
        }
        syslogfmt_parse(m, rx[i].line, strlen(rx[i].line), NULL);
        received_normalise(m, &from);
        one_keep = rx[i].keep;
        corr_process(s->corr, m);
    }
    corr_stats(s->corr, &s->st);
    corr_foreach_rule(s->corr, add_rule_counts, &s->rs);
    corr_free(s->corr);
    msg_unref(m);
}

static void
workers_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action,
             bool keep)
{
    (void)kind;
    (void)action;
    render_rx(arg, m, keep);
}

/* The workers, threads and queue as given, fed as corrald's loop feeds them. */
static void
run_workers(struct pdb *db, struct pdb *db2, const char *state, const struct rx *rx,
            unsigned threads, size_t queue, struct same *s, unsigned *nshards)
{
    uv_loop_t loop;
    struct corr_opts co;
    struct workers_opts o;
    struct workers *w;
    size_t i, spins, kept, dropped;

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    memset(&co, 0, sizeof(co));
    co.clock = late_clock;
    memset(&o, 0, sizeof(o));
    o.threads = threads;
    o.queue = queue;
    o.hostname = "local";
    o.corr = &co;
    o.emit = workers_emit;
    o.arg = s;
    o.linger_ms = 1;
    w = workers_new(&loop, db, &o);
    ck_assert_ptr_nonnull(w);
    *nshards = workers_nshards(w);
    /* restarted with the first half's state: the second half only */
    if (state) ck_assert_int_gt(workers_load(w, state, &dropped), 0);
    for (i = state ? NLINES / 2 : 0; i < NLINES; i++) {
        const struct rx *r = &rx[i];
        if (db2 && i == NLINES / 2) {
            workers_set_db(w, db2, NULL, &kept, &dropped);
            ck_assert_uint_ne(workers_nshards(w), 0);
        }
        /* a datagram is refused while the queue is full: the loop runs until it is taken (the
         * workers' async wakes it); a stream's message always goes in (the batch grows) */
        for (spins = 0; !workers_submit(w, r->line, strlen(r->line), r->has_peer ? r->peer : NULL,
                                        r->has_tls ? r->tls : NULL, r->keep, i % 3 == 0);
             spins++) {
            ck_assert_uint_lt(spins, 1000000);
            uv_run(&loop, UV_RUN_ONCE);
        }
        if (i % 97 == 0) uv_run(&loop, UV_RUN_NOWAIT);
    }
    workers_drain(w);
    workers_corr_stats(w, &s->st);
    /* a rule's series are summed over the shards, as corrald's metrics sum them */
    for (i = 0; i < workers_nshards(w); i++)
        corr_foreach_rule(workers_shard(w, (unsigned)i), add_rule_counts, &s->rs);
    workers_free(w);
    uv_run(&loop, UV_RUN_NOWAIT); /* closes the handles */
    ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static void
same_as_one(const char *rules2, bool restart)
{
    struct pdb *db = pdb_new(), *db2 = NULL;
    struct buf err = BUF_INIT;
    struct same one = {NULL, BUF_INIT, NULL, {0}, {0}};
    struct rx *rx = make_rx();
    static const size_t queues[] = {1024, 7, 64};
    unsigned threads, nshards;
    size_t q;
    char state[] = "/tmp/test_workers-XXXXXX";
    int fd = -1;

    ck_assert_int_eq(pdb_load_memory(db, "rules", corr_rules, sizeof(corr_rules) - 1), 0);
    if (rules2) {
        db2 = pdb_new();
        ck_assert_int_eq(pdb_load_memory(db2, "rules2", rules2, strlen(rules2)), 0);
    }
    one.tpl = template_compile_str(RX_TEMPLATE, &err);
    ck_assert_ptr_nonnull(one.tpl);
    if (restart) {
        fd = mkstemp(state);
        ck_assert_int_ge(fd, 0);
    }
    run_one(db, db2, restart ? state : NULL, rx, &one);
    /* timeouts fired mid-stream, the rate limit held some back, HOST came from the peer and
     * from this host, the TLS name is there, and stream messages are kept */
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "closed 3 on h"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "seen 3 on h"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "\n10.0.0."));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "\nlocal||"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "|client1.example|"));
    ck_assert_ptr_nonnull(strstr(buf_str(&one.out), "keep=1"));
    ck_assert_uint_gt(one.rs.rate_limited, 0);
    for (threads = 2; threads <= 3; threads++)
        for (q = 0; q < sizeof(queues) / sizeof(queues[0]); q++) {
            struct same s = {one.tpl, BUF_INIT, NULL, {0}, {0}};
            run_workers(db, db2, restart ? state : NULL, rx, threads, queues[q], &s, &nshards);
            ck_assert_uint_eq(nshards, threads);
            /* the counters of one engine, also when a reload moved the contexts between shards
             * (none lost with the shards replaced, none counted created twice) */
            ck_assert_uint_eq(s.st.processed, one.st.processed);
            ck_assert_uint_eq(s.st.matched, one.st.matched);
            ck_assert_uint_eq(s.st.unknown, one.st.unknown);
            ck_assert_uint_eq(s.st.generated, one.st.generated);
            ck_assert_uint_eq(s.st.contexts_created, one.st.contexts_created);
            ck_assert_uint_eq(s.st.contexts_expired, one.st.contexts_expired);
            ck_assert_uint_eq(s.st.contexts_open, one.st.contexts_open);
            /* and per rule: the rate limit's counts go on across the shards replaced */
            ck_assert_uint_eq(s.rs.rate_limited, one.rs.rate_limited);
            ck_assert_uint_eq(s.rs.rate_refused, one.rs.rate_refused);
            ck_assert_uint_eq(s.rs.refused, one.rs.refused);
            ck_assert_uint_eq(s.rs.dropped, one.rs.dropped);
            ck_assert_uint_eq(s.rs.evicted, one.rs.evicted);
            if (s.out.len != one.out.len || memcmp(s.out.p, one.out.p, one.out.len) != 0) {
                size_t k = 0;
                while (k < s.out.len && k < one.out.len && s.out.p[k] == one.out.p[k]) k++;
                ck_abort_msg("%u threads, queue %zu: differs at byte %zu: one engine '%.80s', "
                             "workers '%.80s'",
                             threads, queues[q], k, one.out.p + k, s.out.p + k);
            }
            buf_free(&s.out);
        }
    if (restart) {
        close(fd);
        unlink(state);
    }
    template_free(one.tpl);
    buf_free(&one.out);
    buf_free(&err);
    free(rx);
    pdb_free(db);
    pdb_free(db2);
}

START_TEST(test_same_as_one_engine)
{
    same_as_one(NULL, false);
}
END_TEST

/* Halfway, the rules change so that the contexts are routed anew: they move between shards. */
START_TEST(test_same_as_one_engine_reload)
{
    same_as_one(corr_rules_norate, false);
}
END_TEST

/* Halfway, the same rules are loaded again: every shard keeps its contexts. */
START_TEST(test_same_as_one_engine_reload_same)
{
    same_as_one(corr_rules, false);
}
END_TEST

/*
 * A restart: the contexts of the first half, saved by one engine, are read
 * by the shards, and the timers the second half arms that tie with theirs
 * fire after them, as with one engine.
 */
START_TEST(test_same_as_one_engine_restart)
{
    same_as_one(NULL, true);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("workers");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_trickle_lingers);
    tcase_add_test(tc, test_full_batch_goes);
    tcase_add_test(tc, test_no_linger);
    tcase_add_test(tc, test_linger_timer_hands_over);
    tcase_add_test(tc, test_busy_workers_fill_batches);
    tcase_add_test(tc, test_same_as_one_engine);
    tcase_add_test(tc, test_same_as_one_engine_reload);
    tcase_add_test(tc, test_same_as_one_engine_reload_same);
    tcase_add_test(tc, test_same_as_one_engine_restart);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
