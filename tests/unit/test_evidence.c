/*
 * Unit tests: the log lines an alert carries (engine/evidence.c): the line
 * format, the bounds in lines (first and last lines around a marker) and in
 * bytes (lines dropped from the middle, then cut at a character boundary),
 * and the engine attaching them to generated messages tagged corral.alert
 * only, with the limits of corr_opts or of the action's own values.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/corr.h"
#include "engine/evidence.h"
#include "engine/pdb.h"
#include "engine/utf8.h"
#include "tests/unit/unit_run.h"

#define T0 1795168800 /* 2026-11-20T10:00:00Z */

static struct msg *
line_msg(int sec, const char *host, const char *prog, const char *pid, const char *text)
{
    struct msg *m = msg_new();
    struct msg_time t = {T0 + sec, 0, 3600};

    msg_set_stamp(m, &t);
    if (host) msg_set(m, NV_HOST, host, strlen(host));
    if (prog) msg_set(m, NV_PROGRAM, prog, strlen(prog));
    if (pid) msg_set(m, NV_PID, pid, strlen(pid));
    if (text) msg_set(m, NV_MESSAGE, text, strlen(text));
    return m;
}

/* n messages "line 0" ... "line n-1", each padded with pad bytes of 'x' */
static struct msg **
many(size_t n, size_t pad)
{
    struct msg **v = calloc(n, sizeof(*v));
    char *text = malloc(pad + 32);
    size_t i;

    for (i = 0; i < n; i++) {
        int k = snprintf(text, 32, "line %zu", i);
        memset(text + k, 'x', pad);
        text[(size_t)k + pad] = '\0';
        v[i] = line_msg((int)i, "web1", "sshd", "42", text);
    }
    free(text);
    return v;
}

static void
free_many(struct msg **v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) msg_unref(v[i]);
    free(v);
}

static size_t
count_lines(const struct buf *b)
{
    size_t i, n = b->len ? 1 : 0;

    for (i = 0; i < b->len; i++) n += b->p[i] == '\n';
    return n;
}

static bool
valid_utf8(const struct buf *b)
{
    size_t i = 0;
    uint32_t cp;

    while (i < b->len) {
        size_t n = utf8_char((const unsigned char *)b->p + i, b->len - i, &cp);
        if (!n) return false;
        i += n;
    }
    return true;
}

START_TEST(test_line_format)
{
    struct buf b = BUF_INIT;
    struct msg *m = line_msg(0, "web1", "sshd", "42", "Failed password\nfor root\tfrom 192.0.2.1");

    evidence_line(m, &b);
    /* the stamp in its own offset; controls (LF, TAB) become spaces: one line */
    ck_assert_str_eq(buf_str(&b),
                     "2026-11-20T11:00:00+01:00 web1 sshd[42]: Failed password for root from "
                     "192.0.2.1");
    msg_unref(m);
    buf_reset(&b);
    m = line_msg(0, "web1", "kernel", NULL, "Out of memory");
    evidence_line(m, &b);
    ck_assert_str_eq(buf_str(&b), "2026-11-20T11:00:00+01:00 web1 kernel: Out of memory");
    msg_unref(m);
    buf_reset(&b);
    /* no program: no header; no host: left out; bytes that are not UTF-8: U+FFFD */
    m = line_msg(0, NULL, NULL, NULL, "raw \xff line");
    evidence_line(m, &b);
    ck_assert_str_eq(buf_str(&b), "2026-11-20T11:00:00+01:00 raw \xef\xbf\xbd line");
    msg_unref(m);
    buf_free(&b);
}
END_TEST

START_TEST(test_lines_bound)
{
    struct buf b = BUF_INIT;
    struct msg **v = many(12, 0);

    /* as many as the limit: all of them, no marker */
    evidence_render(v, 3, 5, 2048, &b);
    ck_assert_uint_eq(count_lines(&b), 3);
    ck_assert_ptr_null(strstr(buf_str(&b), "more line"));
    ck_assert_ptr_nonnull(strstr(buf_str(&b), "sshd[42]: line 0\n"));
    ck_assert(b.len > 0 && b.p[b.len - 1] != '\n');
    buf_reset(&b);
    evidence_render(v, 5, 5, 2048, &b);
    ck_assert_uint_eq(count_lines(&b), 5);
    ck_assert_ptr_null(strstr(buf_str(&b), "more line"));
    buf_reset(&b);

    /* longer: the first three and the last two around the marker */
    evidence_render(v, 12, 5, 2048, &b);
    ck_assert_str_eq(buf_str(&b), "2026-11-20T11:00:00+01:00 web1 sshd[42]: line 0\n"
                                  "2026-11-20T11:00:01+01:00 web1 sshd[42]: line 1\n"
                                  "2026-11-20T11:00:02+01:00 web1 sshd[42]: line 2\n"
                                  "... 7 more lines ...\n"
                                  "2026-11-20T11:00:10+01:00 web1 sshd[42]: line 10\n"
                                  "2026-11-20T11:00:11+01:00 web1 sshd[42]: line 11");
    buf_reset(&b);
    /* an even limit: as many first as last */
    evidence_render(v, 12, 4, 2048, &b);
    ck_assert_uint_eq(count_lines(&b), 5);
    ck_assert_ptr_nonnull(strstr(buf_str(&b), "line 1\n... 8 more lines ...\n"));
    buf_reset(&b);
    /* one line: the first, then how many more */
    evidence_render(v, 12, 1, 2048, &b);
    ck_assert_str_eq(buf_str(&b), "2026-11-20T11:00:00+01:00 web1 sshd[42]: line 0\n"
                                  "... 11 more lines ...");
    buf_reset(&b);
    evidence_render(v, 2, 1, 2048, &b);
    ck_assert_ptr_nonnull(strstr(buf_str(&b), "\n... 1 more line ..."));
    buf_reset(&b);
    /* nothing to show: nothing */
    evidence_render(v, 0, 5, 2048, &b);
    ck_assert_uint_eq(b.len, 0);
    free_many(v, 12);
    buf_free(&b);
}
END_TEST

START_TEST(test_bytes_bound)
{
    struct buf b = BUF_INIT;
    struct msg **v = many(12, 300); /* lines of about 350 bytes */
    const char *s;

    /* five lines of 350 do not fit 1024: lines go from the middle, first and last stay */
    evidence_render(v, 12, 5, 1024, &b);
    s = buf_str(&b);
    ck_assert_uint_le(b.len, 1024);
    ck_assert_uint_eq(count_lines(&b), 3);
    ck_assert_ptr_nonnull(strstr(s, "line 0x"));
    ck_assert_ptr_nonnull(strstr(s, "\n... 10 more lines ...\n"));
    ck_assert_ptr_nonnull(strstr(s, "line 11x"));
    ck_assert_ptr_null(strstr(s, "x...")); /* neither line is cut */
    buf_reset(&b);

    /* the least: two cut lines around the marker, within the bytes */
    evidence_render(v, 12, 5, EVIDENCE_BYTES_MIN, &b);
    s = buf_str(&b);
    ck_assert_uint_le(b.len, EVIDENCE_BYTES_MIN);
    ck_assert_uint_ge(b.len, EVIDENCE_BYTES_MIN - 8);
    ck_assert_uint_eq(count_lines(&b), 3);
    ck_assert_ptr_nonnull(strstr(s, "line 0xxx"));
    ck_assert_ptr_nonnull(strstr(s, "xxx...\n... 10 more lines ...\n"));
    ck_assert_ptr_nonnull(strstr(s, "line 11xxx"));
    ck_assert(b.len > 3 && memcmp(b.p + b.len - 3, "...", 3) == 0);
    buf_reset(&b);
    /* less than the least counts as the least */
    evidence_render(v, 12, 5, 10, &b);
    ck_assert_uint_le(b.len, EVIDENCE_BYTES_MIN);
    ck_assert_uint_eq(count_lines(&b), 3);
    buf_reset(&b);
    free_many(v, 12);

    /* one long line of two-byte characters, and a short one: the long one is cut, whole
     * characters only, the short one stays whole */
    {
        char text[8001];
        struct msg *two[2];
        size_t i;
        for (i = 0; i < 8000; i += 2) memcpy(text + i, "\xc3\xa9", 2);
        text[8000] = '\0';
        two[0] = line_msg(0, "db1", "postgres", "7", text);
        two[1] = line_msg(1, "db1", "postgres", "7", "short");
        evidence_render(two, 2, 5, 2048, &b);
        ck_assert_uint_le(b.len, 2048);
        ck_assert_uint_ge(b.len, 2040);
        ck_assert(valid_utf8(&b));
        ck_assert_ptr_nonnull(strstr(buf_str(&b), "\xc3\xa9...\n"));
        ck_assert_ptr_nonnull(strstr(buf_str(&b), "postgres[7]: short"));
        ck_assert(b.p[b.len - 1] == 't');
        buf_reset(&b);
        /* alone, cut all the same */
        evidence_render(two, 1, 5, 300, &b);
        ck_assert_uint_le(b.len, 300);
        ck_assert(valid_utf8(&b));
        ck_assert(memcmp(b.p + b.len - 3, "...", 3) == 0);
        msg_unref(two[0]);
        msg_unref(two[1]);
    }
    buf_free(&b);
}
END_TEST

/* ---- through the engine ---- */

#define HEAD                                                                                       \
    "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"                       \
    "<ruleset name='rs' id='rs'><rules>\n"
#define TAIL "</rules></ruleset></patterndb>\n"

/*
 * Four failures from one host raise an alert; nothing in the rule names
 * MESSAGE, so only evidence makes contexts keep it.  "plain" is the same
 * action without the tag; "own" chooses its own limit; "single" has no
 * context.
 */
static const char *rules =
    "<rule id='fail' provider='t' context-id='f' context-scope='host' context-timeout='60'>"
    "<patterns><pattern>failure @NUMBER:n@</pattern></patterns>"
    "<actions>"
    "<action condition='\"$(context-length)\" == \"4\"'><message><values>"
    "<value name='MESSAGE'>alert ${HOST}</value></values>"
    "<tags><tag>corral.alert</tag></tags></message></action>"
    "<action condition='\"$(context-length)\" == \"4\"'><message><values>"
    "<value name='MESSAGE'>plain ${HOST}</value></values></message></action>"
    "<action condition='\"$(context-length)\" == \"4\"'><message><values>"
    "<value name='MESSAGE'>own ${HOST}</value>"
    "<value name='corral.evidence_lines'>1</value></values></message></action>"
    "</actions></rule>\n"
    "<rule id='single' provider='t'>"
    "<patterns><pattern>oom @NUMBER:n@</pattern></patterns>"
    "<actions><action><message><values><value name='MESSAGE'>oom</value></values>"
    "<tags><tag>corral.alert</tag></tags></message></action></actions></rule>\n";

struct seen {
    struct buf out; /* "MESSAGE|evidence" per generated message */
};

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    struct seen *s = arg;
    const char *v;
    size_t len;

    (void)a;
    if (kind != CORR_GENERATED) return;
    v = msg_get(m, NV_MESSAGE, &len);
    buf_append(&s->out, v, len);
    buf_putc(&s->out, '|');
    if ((v = msg_get(m, nv_intern_str(EVIDENCE_NAME), &len)))
        buf_append(&s->out, v, len);
    else
        buf_puts(&s->out, "(none)");
    buf_putc(&s->out, '#');
}

static void
run(const struct corr_opts *lim, struct seen *s)
{
    struct pdb *db = pdb_new();
    struct buf xml = BUF_INIT;
    struct corr_opts o;
    struct corr *c;
    int i;

    buf_puts(&xml, HEAD);
    buf_puts(&xml, rules);
    buf_puts(&xml, TAIL);
    ck_assert_int_eq(pdb_load_memory(db, "mem.xml", xml.p, xml.len), 0);
    buf_free(&xml);
    memset(&o, 0, sizeof(o));
    if (lim) o = *lim;
    o.emit = on_emit;
    o.arg = s;
    o.clock = NULL;
    c = corr_new(db, &o);
    for (i = 0; i < 4; i++) {
        char text[32];
        struct msg *m;
        snprintf(text, sizeof(text), "failure %d", i);
        m = line_msg(i, "web1", "app", "9", text);
        corr_process(c, m);
        msg_unref(m);
    }
    {
        struct msg *m = line_msg(5, "db1", "kernel", NULL, "oom 1");
        corr_process(c, m);
        msg_unref(m);
    }
    corr_free(c);
    pdb_free(db);
}

START_TEST(test_engine_attaches)
{
    struct seen s = {BUF_INIT};
    struct corr_opts lim;

    run(NULL, &s);
    ck_assert_str_eq(buf_str(&s.out), "alert web1|"
                                      "2026-11-20T11:00:00+01:00 web1 app[9]: failure 0\n"
                                      "2026-11-20T11:00:01+01:00 web1 app[9]: failure 1\n"
                                      "2026-11-20T11:00:02+01:00 web1 app[9]: failure 2\n"
                                      "2026-11-20T11:00:03+01:00 web1 app[9]: failure 3#"
                                      "plain web1|(none)#"
                                      "own web1|"
                                      "2026-11-20T11:00:00+01:00 web1 app[9]: failure 0\n"
                                      "... 3 more lines ...#"
                                      "oom|2026-11-20T11:00:05+01:00 db1 kernel: oom 1#");
    buf_reset(&s.out);

    /* corrald's limits: 3 lines */
    memset(&lim, 0, sizeof(lim));
    lim.evidence_lines = 3;
    run(&lim, &s);
    ck_assert_ptr_nonnull(strstr(buf_str(&s.out), "failure 1\n... 1 more line ...\n"));
    buf_reset(&s.out);

    /* none by default: only the action that asks for its own */
    lim.evidence_lines = CORR_EVIDENCE_NONE;
    run(&lim, &s);
    ck_assert_str_eq(buf_str(&s.out), "alert web1|(none)#plain web1|(none)#own web1|"
                                      "2026-11-20T11:00:00+01:00 web1 app[9]: failure 0\n"
                                      "... 3 more lines ...#oom|(none)#");
    buf_free(&s.out);
}
END_TEST

/* The limits a rule writes: checked when the rules load, with the line. */
START_TEST(test_rule_limits)
{
    static const char *const bad[] = {"<value name='corral.evidence_lines'>many</value>",
                                      "<value name='corral.evidence_lines'>1001</value>",
                                      "<value name='corral.evidence_bytes'>10</value>",
                                      "<value name='corral.evidence_bytes'>1M</value>"};
    size_t i, v;

    ck_assert(evidence_parse_limit("0", 1, false, &v) && v == 0);
    ck_assert(evidence_parse_limit("1000", 4, false, &v) && v == 1000);
    ck_assert(!evidence_parse_limit("-1", 2, false, &v));
    ck_assert(!evidence_parse_limit("5 ", 2, false, &v));
    ck_assert(evidence_parse_limit("4k", 2, true, &v) && v == 4096);
    ck_assert(!evidence_parse_limit("0", 1, true, &v));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pdb *db = pdb_new();
        char xml[1024];
        int n =
            snprintf(xml, sizeof(xml),
                     HEAD "<rule id='r' provider='t'><patterns><pattern>x</pattern></patterns>\n"
                          "<actions><action><message><values>\n%s\n"
                          "</values></message></action></actions></rule>\n" TAIL,
                     bad[i]);
        ck_assert_int_eq(pdb_load_memory(db, "mem.xml", xml, (size_t)n), -1);
        ck_assert_uint_eq(pdb_nerrors(db), 1);
        ck_assert_int_eq(pdb_diag_at(db, 0)->line, 6);
        ck_assert_ptr_nonnull(strstr(pdb_diag_at(db, 0)->text, "corral.evidence_"));
        pdb_free(db);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("evidence");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_line_format);
    tcase_add_test(tc, test_lines_bound);
    tcase_add_test(tc, test_bytes_bound);
    tcase_add_test(tc, test_engine_attaches);
    tcase_add_test(tc, test_rule_limits);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
