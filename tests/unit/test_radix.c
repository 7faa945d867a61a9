/*
 * test_radix: how the matcher picks a pattern and what it captures.
 *
 * Each search below was checked against pdbtool 3.38 (syslog-ng 3.38.1):
 * every pattern was made a rule of its own, in the order given, and pdbtool
 * matched the message; "winner" is the pattern whose rule it reported and
 * "caps" every named value it stored.  Messages are searched from a heap copy
 * of exactly their length, so that AddressSanitizer catches a read past it.
 * Every search runs twice: on the tree as inserted and on the tree compacted
 * (radix_compact), which must find exactly the same.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/buf.h"
#include "engine/nv.h"
#include "engine/radix.h"
#include "tests/unit/unit_run.h"

#define MAX_PATTERNS 4
#define MAX_CAPS     3

struct cap {
    const char *name;
    const char *value;
    size_t fill; /* when not 0 the value is this many 'q's */
};

struct search {
    const char *name;
    const char *patterns[MAX_PATTERNS];
    /* the message: head, fill times 'q', tail */
    const char *head;
    size_t fill;
    const char *tail;
    int winner; /* index into patterns; -1: no match */
    struct cap caps[MAX_CAPS];
};

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

/* checked against pdbtool 3.38 */
/* clang-format off */
static const struct search searches[] = {
    /* a literal continuation is tried before parsers */
    {"literal_first",
     {"a @STRING:s@", "a b"},
     "a b", 0, "", 1,
     {{NULL, NULL, 0}}},
    /* the literal path fails, the parser at the same node is tried */
    {"literal_then_backtrack",
     {"a @NUMBER:n@ x", "a 1 y"},
     "a 1 x", 0, "", 0,
     {{"n", "1", 0}}},
    /* parsers in insertion order */
    {"parser_order1",
     {"a @STRING:s@", "a @NUMBER:n@"},
     "a 12", 0, "", 0,
     {{"s", "12", 0}}},
    /* parsers in insertion order */
    {"parser_order2",
     {"a @NUMBER:n@", "a @STRING:s@"},
     "a 12", 0, "", 0,
     {{"n", "12", 0}}},
    /* the next parser is tried when the rest fails */
    {"parser_backtrack",
     {"a @NUMBER:n@x", "a @STRING:s@"},
     "a 12y", 0, "", 1,
     {{"s", "12y", 0}}},
    /* a parser takes one length only */
    {"no_backtrack_inside",
     {"a @STRING:s@b"},
     "a abb", 0, "", -1,
     {{NULL, NULL, 0}}},
    /* no complete match: the prefix one */
    {"prefix_match",
     {"a @STRING:s@", "a @STRING:s@ b"},
     "a x c", 0, "", 0,
     {{"s", "x", 0}}},
    /* complete */
    {"complete_match",
     {"a @STRING:s@", "a @STRING:s@ b"},
     "a x b", 0, "", 1,
     {{"s", "x", 0}}},
    /* the deepest prefix on the path */
    {"prefix_deepest",
     {"a", "a b"},
     "a b c", 0, "", 1,
     {{NULL, NULL, 0}}},
    /* the first prefix found, in search order */
    {"prefix_first_found",
     {"a @NUMBER:n@", "a @NUMBER:n@ x", "a @STRING:s@ y z"},
     "a 1 y q", 0, "", 0,
     {{"n", "1", 0}}},
    /* a later complete match beats an earlier prefix */
    {"complete_beats_prefix",
     {"a @NUMBER:n@", "a @STRING:s@ y"},
     "a 1 y", 0, "", 1,
     {{"s", "1", 0}}},
    /* the first pattern keeps it */
    {"duplicate",
     {"a @STRING:s@", "a @STRING:s@"},
     "a b", 0, "", 0,
     {{"s", "b", 0}}},
    /* identical parsers share a node, at its first position */
    {"shared_node",
     {"a @STRING:s@x", "a @NUMBER:n@", "a @STRING:s@"},
     "a 12", 0, "", 2,
     {{"s", "12", 0}}},
    /* @@ is a literal '@' */
    {"at_literal",
     {"a@@@STRING:s@", "a@@b"},
     "a@b", 0, "", 1,
     {{NULL, NULL, 0}}},
    /* @@ is a literal '@' */
    {"at_parser",
     {"a@@@STRING:s@", "a@@b"},
     "a@c", 0, "", 0,
     {{"s", "c", 0}}},
    /* a CR is skipped where the pattern has LF */
    {"crlf_literal",
     {"a\nb"},
     "a\r\nb", 0, "", 0,
     {{NULL, NULL, 0}}},
    /* ... also where a literal follows a parser */
    {"crlf_after_parser",
     {"a @NUMBER:n@\nb"},
     "a 1\r\nb", 0, "", 0,
     {{"n", "1", 0}}},
    /* a CR without LF is not skipped */
    {"cr_alone",
     {"a\nb"},
     "a\rb", 0, "", -1,
     {{NULL, NULL, 0}}},
    /* parsers see the CR */
    {"estring_lf",
     {"a @ESTRING:e:\n@b"},
     "a x\r\nb", 0, "", 0,
     {{"e", "x\r", 0}}},
    /* parsers are never tried on an empty rest */
    {"empty_rest",
     {"a @ANYSTRING:s@", "a"},
     "a ", 0, "", 1,
     {{NULL, NULL, 0}}},
    /* not even OPTIONALSET */
    {"empty_rest_optionalset",
     {"a @OPTIONALSET:o:x@"},
     "a ", 0, "", -1,
     {{NULL, NULL, 0}}},
    /* a SET run to the end is past the end: only a prefix match */
    {"set_to_end",
     {"a @SET:s:abc@", "a @STRING:t@"},
     "a abc", 0, "", 1,
     {{"t", "abc", 0}}},
    /* ... which is found when nothing is complete */
    {"set_to_end_alone",
     {"a @SET:s:abc@"},
     "a abc", 0, "", 0,
     {{"s", "abc", 0}}},
    /* past the end OPTIONALSET matches, empty */
    {"past_end_optionalset",
     {"a @SET:s:abc@@OPTIONALSET:o:x@"},
     "a abc", 0, "", 0,
     {{"o", "", 0}, {"s", "abc", 0}}},
    /* ... and ANYSTRING */
    {"past_end_anystring",
     {"b @SET:s:abc@@ANYSTRING:o@"},
     "b abc", 0, "", 0,
     {{"o", "", 0}, {"s", "abc", 0}}},
    /* past the end no literal matches */
    {"past_end_literal",
     {"a @SET:s:abc@x", "a @SET:s:abc@"},
     "a abc", 0, "", 1,
     {{"s", "abc", 0}}},
    /* an empty ESTRING stop: prefix match only */
    {"estring_empty_stop",
     {"a @ESTRING:e:@"},
     "a xyz", 0, "", 0,
     {{"e", "xyz", 0}}},
    /* ... so a complete match wins */
    {"estring_empty_stop_loses",
     {"a @ESTRING:e:@", "a @STRING:t@"},
     "a xyz", 0, "", 1,
     {{"t", "xyz", 0}}},
    /* EMAIL's trailing skip chars reach the end: past it */
    {"email_skip_to_end",
     {"d @EMAIL:e:<>@"},
     "d <a@b.c>", 0, "", 0,
     {{"e", "a@b.c", 0}}},
    /* ... so a complete match wins */
    {"email_skip_to_end_loses",
     {"d @EMAIL:e:<>@", "d <@ESTRING:t:>@"},
     "d <a@b.c>", 0, "", 1,
     {{"t", "a@b.c", 0}}},
    /* a bad pattern leaves its nodes: NUMBER is tried first */
    {"bad_pattern_prefix",
     {"x @NUMBER:n@ @", "x @STRING:s@", "x @NUMBER:n@"},
     "x 12", 0, "", 2,
     {{"n", "12", 0}}},
    /* likewise before an unknown parser */
    {"bad_parser_prefix",
     {"y @NUMBER:n@ @FOO:x@", "y @STRING:s@", "y @NUMBER:n@"},
     "y 12", 0, "", 2,
     {{"n", "12", 0}}},
    /* the later capture wins */
    {"name_twice",
     {"a @STRING:v@ @STRING:v@"},
     "a x y", 0, "", 0,
     {{"v", "y", 0}}},
    /* parsers at the root */
    {"root_parser",
     {"@NUMBER:n@ x", "@STRING:s@"},
     "12 x", 0, "", 0,
     {{"n", "12", 0}}},
    /* the literal fails, QSTRING matches */
    {"qstring_vs_literal",
     {"a \"b\"", "a @QSTRING:q:\"@"},
     "a \"c\"", 0, "", 1,
     {{"q", "c", 0}}},
    /* the literal matches */
    {"qstring_literal_wins",
     {"a \"b\"", "a @QSTRING:q:\"@"},
     "a \"b\"", 0, "", 0,
     {{NULL, NULL, 0}}},
    /* EMAIL looks at the byte before an empty local part */
    {"email_dot_before",
     {"x.@EMAIL:e@", "x.@ANYSTRING:r@"},
     "x.@b.c", 0, "", 1,
     {{"r", "@b.c", 0}}},
    /* greedy: the literal's digit is gone */
    {"number_eats_literal",
     {"a @NUMBER:n@0"},
     "a 120", 0, "", -1,
     {{NULL, NULL, 0}}},
    /* IPv6 eats a port */
    {"ipv6_port",
     {"c @IPv6:ip@:@NUMBER:port@", "c @IPv6:ip@"},
     "c ::1:443", 0, "", 1,
     {{"ip", "::1:443", 0}}},
    /* IPv4 leaves a fifth group */
    {"ipv4_fifth",
     {"c @IPv4:ip@.@NUMBER:n@"},
     "c 1.2.3.4.5", 0, "", 0,
     {{"ip", "1.2.3.4", 0}, {"n", "5", 0}}},
    /* unnamed parsers store nothing */
    {"unnamed",
     {"a @NUMBER@ @STRING::@ @NUMBER:n@"},
     "a 1 b 2", 0, "", 0,
     {{"n", "2", 0}}},
    /* past 64 KiB captures stay whole (syslog-ng 3.38 wraps them at 16 bits: a deliberate difference) */
    {"cap_offset_past_64k",
     {"b @STRING:x@ @STRING:y@"},
     "b ", 65535, " zz", 0,
     {{"x", "", 65535}, {"y", "zz", 0}}},
    {"cap_length_past_64k",
     {"a @ANYSTRING:x@"},
     "a ", 65536, "", 0,
     {{"x", "", 65536}}},
};
/* clang-format on */

static char *
make_text(const char *head, size_t fill, const char *tail, size_t *len)
{
    size_t hl = strlen(head), tl = strlen(tail);
    char *s = malloc(hl + fill + tl ? hl + fill + tl : 1);

    ck_assert_ptr_nonnull(s);
    memcpy(s, head, hl);
    memset(s + hl, 'q', fill);
    memcpy(s + hl + fill, tail, tl);
    *len = hl + fill + tl;
    return s;
}

static struct radix *
tree_of(const char *const *patterns, size_t n, int *ids)
{
    struct radix *r = radix_new();
    size_t i;

    for (i = 0; i < n && patterns[i]; i++) {
        struct buf err = BUF_INIT;
        ids[i] = (int)i;
        radix_insert(r, patterns[i], strlen(patterns[i]), &ids[i], NULL, &err);
        buf_free(&err);
    }
    return r;
}

/* The value a name ends up with: captures are applied in order, so the last one wins. */
static const struct radix_cap *
last_cap(const struct radix_caps *caps, nv_handle h)
{
    const struct radix_cap *c = NULL;
    size_t i;

    for (i = 0; i < caps->n; i++)
        if (caps->v[i].name == h) c = &caps->v[i];
    return c;
}

static bool
expected_name(const struct search *t, nv_handle h)
{
    size_t i;

    for (i = 0; i < MAX_CAPS && t->caps[i].name; i++)
        if (nv_lookup(t->caps[i].name, strlen(t->caps[i].name)) == h) return true;
    return false;
}

START_TEST(test_search)
{
    const struct search *t = &searches[(size_t)_i % NROWS(searches)];
    int ids[MAX_PATTERNS];
    struct radix *r = tree_of(t->patterns, MAX_PATTERNS, ids);
    struct radix_caps caps = {NULL, 0, 0};
    size_t len, i;
    char *text = make_text(t->head, t->fill, t->tail, &len);
    const int *found;

    if ((size_t)_i >= NROWS(searches)) radix_compact(r);
    found = radix_find(r, text, len, &caps);

    ck_assert_msg((found ? *found : -1) == t->winner, "%s: corral picks pattern %d, pdbtool %d",
                  t->name, found ? *found : -1, t->winner);
    if (!found) ck_assert_uint_eq(caps.n, 0);
    for (i = 0; i < caps.n; i++) {
        ck_assert_msg(caps.v[i].off + caps.v[i].len <= len, "%s: capture outside the text",
                      t->name);
        if (caps.v[i].name)
            ck_assert_msg(expected_name(t, caps.v[i].name), "%s: corral stores %s, pdbtool not",
                          t->name, nv_name(caps.v[i].name, NULL));
    }
    for (i = 0; i < MAX_CAPS && t->caps[i].name; i++) {
        const struct cap *want = &t->caps[i];
        nv_handle h = nv_lookup(want->name, strlen(want->name));
        const struct radix_cap *c = h ? last_cap(&caps, h) : NULL;
        size_t wlen;
        char *wval = make_text(want->value, want->fill, "", &wlen);

        ck_assert_msg(c != NULL, "%s: corral does not store %s", t->name, want->name);
        ck_assert_msg(c->len == wlen && memcmp(text + c->off, wval, wlen) == 0,
                      "%s: corral stores %s=\"%.*s\", pdbtool \"%s\"", t->name, want->name,
                      (int)(c->len < 80 ? c->len : 80), text + c->off, want->value);
        free(wval);
    }
    radix_caps_free(&caps);
    radix_free(r, NULL);
    free(text);
}
END_TEST

START_TEST(test_insert_results)
{
    struct radix *r = radix_new();
    int a = 1, b = 2;
    void *existing = NULL;
    struct buf err = BUF_INIT;

    ck_assert_int_eq(radix_insert(r, "x @STRING:s@", 12, &a, &existing, &err), RADIX_INSERTED);
    ck_assert_int_eq(radix_insert(r, "x @STRING:s@", 12, &b, &existing, &err), RADIX_DUPLICATE);
    ck_assert_ptr_eq(existing, &a);
    ck_assert_int_eq(radix_insert(r, "x @", 3, &b, &existing, &err), RADIX_BAD_PATTERN);
    ck_assert_uint_gt(err.len, 0);
    buf_reset(&err);
    ck_assert_int_eq(radix_insert(r, "x @FOO@", 7, &b, &existing, &err), RADIX_BAD_PATTERN);
    buf_reset(&err);
    ck_assert_int_eq(radix_insert(r, "", 0, &b, &existing, &err), RADIX_BAD_PATTERN);
    buf_reset(&err);
    /* the bad patterns left nodes but no value: "x " still finds nothing but a prefix */
    ck_assert_ptr_null(radix_find(r, "x ", 2, NULL));
    ck_assert_ptr_eq(radix_find(r, "x y", 3, NULL), &a);
    ck_assert_int_eq(radix_insert(r, "@@", 2, &b, &existing, &err), RADIX_INSERTED);
    ck_assert_ptr_eq(radix_find(r, "@", 1, NULL), &b);
    buf_free(&err);
    radix_free(r, NULL);
}
END_TEST

START_TEST(test_check_pattern)
{
    static const char *const good[] = {
        "a", "@@", "a@@b", "@STRING@", "x @PCRE:p:a:b@ y", "@ESTRING::@@@"};
    static const char *const bad[] = {"",      "@",       "a@",  "a @b",
                                      "@FOO@", "@SET:s@", "@@@", "@PCRE:p:(@"};
    size_t i;

    for (i = 0; i < NROWS(good); i++) {
        struct buf err = BUF_INIT;
        ck_assert_msg(radix_check_pattern(good[i], strlen(good[i]), &err), "%s: %s", good[i],
                      buf_str(&err));
        buf_free(&err);
    }
    for (i = 0; i < NROWS(bad); i++) {
        struct buf err = BUF_INIT;
        ck_assert_msg(!radix_check_pattern(bad[i], strlen(bad[i]), &err), "%s accepted", bad[i]);
        ck_assert_uint_gt(err.len, 0);
        buf_free(&err);
    }
}
END_TEST

/* The root value serves the empty text; the program tree keeps the generic rules there. */
START_TEST(test_root_value)
{
    struct radix *r = radix_new();
    int root = 0, a = 1;
    struct buf err = BUF_INIT;

    radix_set_root_value(r, &root);
    radix_insert(r, "ssh", 3, &a, NULL, &err);
    buf_free(&err);
    ck_assert_ptr_eq(radix_find(r, "", 0, NULL), &root);
    ck_assert_ptr_eq(radix_find(r, "sshd", 4, NULL), &a);
    ck_assert_ptr_eq(radix_find(r, "cron", 4, NULL), &root);
    radix_free(r, NULL);
}
END_TEST

static void
count_cb(void *value, void *arg)
{
    (void)value;
    (*(int *)arg)++;
}

START_TEST(test_find_all)
{
    static const char *const patterns[] = {"a 1", "a @NUMBER:n@", "a @STRING:s@", "a @NUMBER:n@x"};
    int ids[MAX_PATTERNS], count = 0;
    struct radix *r = tree_of(patterns, NROWS(patterns), ids);

    ck_assert_uint_eq(radix_find_all(r, "a 1", 3, count_cb, &count), 3);
    ck_assert_int_eq(count, 3);
    ck_assert_uint_eq(radix_find_all(r, "a 1y", 4, count_cb, &count), 1);
    ck_assert_uint_eq(radix_find_all(r, "a 1 y", 5, count_cb, &count), 0);
    radix_free(r, NULL);
}
END_TEST

/* The capture vector keeps its memory: searching does not allocate once it has grown. */
START_TEST(test_caps_reused)
{
    static const char *const patterns[] = {"a @STRING:s@ @NUMBER:n@ @IPv4:ip@"};
    int ids[1];
    struct radix *r = tree_of(patterns, 1, ids);
    struct radix_caps caps = {NULL, 0, 0};
    const struct radix_cap *v;
    size_t cap, i;

    ck_assert_ptr_nonnull(radix_find(r, "a x 1 1.2.3.4", 13, &caps));
    ck_assert_uint_eq(caps.n, 3);
    v = caps.v;
    cap = caps.cap;
    for (i = 0; i < 100; i++) {
        ck_assert_ptr_nonnull(radix_find(r, "a y 2 4.3.2.1", 13, &caps));
        ck_assert_ptr_null(radix_find(r, "a y 2 x", 7, &caps));
        ck_assert_uint_eq(caps.n, 0);
    }
    ck_assert_ptr_eq(caps.v, v);
    ck_assert_uint_eq(caps.cap, cap);
    radix_caps_free(&caps);
    radix_free(r, NULL);
}
END_TEST

/*
 * The compacted tree (radix_compact) on the shapes it is for: a node with
 * many literal children (searched by halves), long keys with shared prefixes
 * that differ at every position (compared eight bytes at a time), chains of
 * literal nodes (walked in a loop) and backtracking from a failed literal
 * into the parsers of the same node, whose arguments live in the compacted
 * block.  Each message is searched before compaction, after it, after an
 * insert into the compacted tree and after compacting that again: the
 * winner and the captures must be the same every time, and the ones given
 * (big_searches checked against pdbtool 3.38: each pattern a rule, in order).
 */
static const char *const big_patterns[] = {
    /* shared heads, as the benchmark's application rules */
    "[auth] Granted session #@NUMBER:id@ (@ESTRING:user:)@",
    "[auth] Granted session #@NUMBER:id@: @ANYSTRING:detail@",
    "[auth] Granted session #@NUMBER:id@ from @IPv4:addr@",
    "[auth] Granted session @ESTRING:user: @for @NUMBER:ms@ms",
    "[auth] Granted token for @ESTRING:user: @from @IPv4:addr@ port @NUMBER:port@",
    "[auth] Denied session name=@QSTRING:name:'@ by @ESTRING:user: @(@ANYSTRING:detail@",
    /* a literal that fails late, then the parser of the same node */
    "[db] Opened lock id=42 ok",
    "[db] Opened lock id=@NUMBER:id@ @STRING:rest@",
    /* keys of 8, 9, 16 and 17 bytes sharing prefixes */
    "abcdefgh-@NUMBER:n@",
    "abcdefghi-@NUMBER:n@",
    "abcdefghijklmnop-@NUMBER:n@",
    "abcdefghijklmnopq-@NUMBER:n@",
    /* parsers with arguments */
    "q @QSTRING:q:<>@ e",
    "e @ESTRING:e:, @x",
    "s @SET:s: ab@!",
    "p @PCRE:p:[0-9]+z@ end",
};

struct big_search {
    const char *text;
    int winner;                       /* index into big_patterns, -1: none */
    const char *cap_name, *cap_value; /* one capture to check, or NULL */
};

static const struct big_search big_searches[] = {
    {"[auth] Granted session #193 (sierra)", 0, "user", "sierra"},
    {"[auth] Granted session #193: quota exceeded", 1, "detail", "quota exceeded"},
    {"[auth] Granted session #7 from 10.1.2.3", 2, "addr", "10.1.2.3"},
    /* '#' is a literal child, and "#x" fails there: back to the ESTRING of "session " */
    {"[auth] Granted session #x for 12ms", 3, "user", "#x"},
    {"[auth] Granted session alice for 12ms", 3, "ms", "12"},
    {"[auth] Granted session #193 (sierra", -1, NULL, NULL},
    {"[auth] Granted token for bob from 1.2.3.4 port 22", 4, "port", "22"},
    {"[auth] Granted token for bob from 1.2.3.4 port x", -1, NULL, NULL},
    {"[auth] Denied session name='a b' by carol (why not", 5, "name", "a b"},
    {"[auth] Denied session name='a b by carol (why not", -1, NULL, NULL},
    {"[db] Opened lock id=42 ok", 6, NULL, NULL},
    {"[db] Opened lock id=42 okay", 7, "rest", "okay"},
    {"[db] Opened lock id=43 ok", 7, "id", "43"},
    {"abcdefgh-1", 8, "n", "1"},
    {"abcdefghi-2", 9, "n", "2"},
    {"abcdefghijklmnop-3", 10, "n", "3"},
    {"abcdefghijklmnopq-4", 11, "n", "4"},
    {"abcdefghijklmnoX-5", -1, NULL, NULL},
    {"abcdefghijklmnopqr-6", -1, NULL, NULL},
    {"abcdefgX", -1, NULL, NULL},
    {"q <in side> e", 12, "q", "in side"},
    {"e one two, x", 13, "e", "one two"},
    {"s abba!", 14, "s", "abba"},
    {"p 123z end", 15, "p", "123z"},
    {"p 123 end", -1, NULL, NULL},
};

/* 60 programs' names under one node: more literal children than a short scan covers. */
#define NMANY 60

static char many_names[NMANY][16];

static struct radix *
big_tree(int *ids)
{
    struct radix *r = tree_of(big_patterns, NROWS(big_patterns), ids);
    size_t i;

    for (i = 0; i < NMANY; i++) {
        struct buf err = BUF_INIT;
        /* first bytes 'A' + i: the root gets dozens more children, some shared with the patterns
         * above */
        snprintf(many_names[i], sizeof(many_names[i]), "%c%zu @NUMBER:n@", (char)('A' + i), i);
        ids[NROWS(big_patterns) + i] = (int)(NROWS(big_patterns) + i);
        ck_assert_int_eq(radix_insert(r, many_names[i], strlen(many_names[i]),
                                      &ids[NROWS(big_patterns) + i], NULL, &err),
                         RADIX_INSERTED);
        buf_free(&err);
    }
    return r;
}

static void
check_big(struct radix *r, const char *stage)
{
    struct radix_caps caps = {NULL, 0, 0};
    size_t i;

    for (i = 0; i < NROWS(big_searches) + NMANY; i++) {
        struct big_search t;
        char msg[32];
        if (i < NROWS(big_searches)) {
            t = big_searches[i];
        } else {
            size_t k = i - NROWS(big_searches);
            snprintf(msg, sizeof(msg), "%c%zu %zu", (char)('A' + k), k, k * 7);
            t.text = msg;
            t.winner = (int)(NROWS(big_patterns) + k);
            t.cap_name = NULL;
        }
        size_t len;
        char *text = make_text(t.text, 0, "", &len);
        const int *found = radix_find(r, text, len, &caps);

        ck_assert_msg((found ? *found : -1) == t.winner, "%s: '%s' finds %d, not %d", stage, t.text,
                      found ? *found : -1, t.winner);
        if (t.cap_name) {
            nv_handle h = nv_lookup(t.cap_name, strlen(t.cap_name));
            const struct radix_cap *c = h ? last_cap(&caps, h) : NULL;
            ck_assert_msg(c && c->len == strlen(t.cap_value) &&
                              memcmp(text + c->off, t.cap_value, c->len) == 0,
                          "%s: '%s' captures %s wrong", stage, t.text, t.cap_name);
        }
        free(text);
    }
    radix_caps_free(&caps);
}

START_TEST(test_compact)
{
    int ids[NROWS(big_patterns) + NMANY + 1];
    struct radix *r = big_tree(ids);
    struct buf err = BUF_INIT;
    int extra = (int)(NROWS(big_patterns) + NMANY);
    int count = 0;

    check_big(r, "as inserted");
    radix_compact(r);
    check_big(r, "compacted");
    radix_compact(r); /* again: from one block into another */
    check_big(r, "compacted twice");
    ids[extra] = extra;
    /* an insert into a compacted tree, under a node that already has children */
    ck_assert_int_eq(
        radix_insert(r, "[auth] Granted session #@NUMBER:id@ end", 39, &ids[extra], NULL, &err),
        RADIX_INSERTED);
    check_big(r, "inserted into");
    ck_assert_ptr_eq(radix_find(r, "[auth] Granted session #5 end", 29, NULL), &ids[extra]);
    radix_compact(r);
    check_big(r, "compacted after the insert");
    ck_assert_ptr_eq(radix_find(r, "[auth] Granted session #5 end", 29, NULL), &ids[extra]);
    /* every complete match, as pdbtool's conflict report wants them */
    ck_assert_uint_eq(radix_find_all(r, "[db] Opened lock id=42 ok", 25, count_cb, &count), 2);
    buf_free(&err);
    radix_free(r, NULL);
}
END_TEST

static const char *
id_name(const void *value)
{
    static const char *const names[] = {"r0", "r1", "r2", "r3"};
    return names[*(const int *)value];
}

START_TEST(test_dump)
{
    static const char *const patterns[] = {"a @STRING:s@\n", "a@@b", "a @ESTRING::, @"};
    int ids[MAX_PATTERNS];
    struct radix *r = tree_of(patterns, NROWS(patterns), ids);
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);

    ck_assert_ptr_nonnull(f);
    radix_dump(r, f, id_name);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(out, "@STRING:s@"));
    ck_assert_ptr_nonnull(strstr(out, "'\\n' => r0"));
    ck_assert_ptr_nonnull(strstr(out, "'b' => r1"));
    ck_assert_ptr_nonnull(strstr(out, "@ESTRING::, @ => r2"));
    free(out);
    radix_free(r, NULL);
}
END_TEST

static Suite *
radix_suite(void)
{
    Suite *s = suite_create("radix");
    TCase *tc = tcase_create("pdbtool");

    tcase_add_loop_test(tc, test_search, 0, 2 * (int)NROWS(searches));
    suite_add_tcase(s, tc);
    tc = tcase_create("api");
    tcase_add_test(tc, test_insert_results);
    tcase_add_test(tc, test_check_pattern);
    tcase_add_test(tc, test_root_value);
    tcase_add_test(tc, test_find_all);
    tcase_add_test(tc, test_caps_reused);
    tcase_add_test(tc, test_dump);
    tcase_add_test(tc, test_compact);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(radix_suite());
}
