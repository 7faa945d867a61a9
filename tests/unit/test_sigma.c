/*
 * Unit tests: Sigma detection rules (engine/sigma) and their condition
 * language (engine/sigma_cond): every modifier, wildcards and case, keyword
 * lists, null and exists, the logsource mapping, refusals with file:line
 * (a refused rule loads nothing), the alert a match makes, and the
 * correlation engine raising it beside the patterndb rules.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine/corr.h"
#include "engine/sigma.h"
#include "engine/sigma_cond.h"
#include "tests/unit/unit_run.h"

static const char mapping[] = "logsources:\n"
                              "  - product: linux\n"
                              "    service: sshd\n"
                              "    program: [sshd]\n"
                              "  - product: linux\n"
                              "    service: auth\n"
                              "    facility: [auth, authpriv]\n"
                              "  - product: linux\n"
                              "  - category: webserver\n"
                              "    class: [web]\n"
                              "    fields:\n"
                              "      c-uri: http.uri\n"
                              "fields:\n"
                              "  a: a\n"
                              "  b: b\n"
                              "  ip: ip\n"
                              "  n: n\n";

static struct sigma *
load(const char *rule)
{
    struct sigma *s = sigma_new();

    ck_assert_int_eq(sigma_load_mapping_memory(s, "map.yml", mapping, strlen(mapping)), 0);
    ck_assert_int_eq(sigma_load_memory(s, "rule.yml", rule, strlen(rule)), 0);
    return s;
}

/* A message of "name=value" pairs; PROGRAM is sshd unless given. */
static struct msg *
mk(const char *first, ...)
{
    struct msg *m = msg_new();
    const char *kv;
    va_list ap;

    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_HOST, "h1", 2);
    va_start(ap, first);
    for (kv = first; kv; kv = va_arg(ap, const char *)) {
        const char *eq = strchr(kv, '=');
        msg_set(m, nv_intern(kv, (size_t)(eq - kv)), eq + 1, strlen(eq + 1));
    }
    va_end(ap);
    return m;
}

/* Whether the one rule of `rule` (logsource linux) matches a message with field a = v. */
static bool
matches_rule(const char *rule, struct msg *m)
{
    struct sigma *s = load(rule);
    struct sigma_scratch *sc = sigma_scratch_new();
    size_t n;

    ck_assert_msg(sigma_nrules(s) == 1, "not loaded: %s",
                  sigma_ndiags(s) ? sigma_diag_at(s, 0)->text : "");
    n = sigma_match(s, m, sc, NULL, NULL);
    sigma_scratch_free(sc);
    sigma_free(s);
    msg_unref(m);
    return n == 1;
}

#define RULE(det)                                                                                  \
    "title: t\nid: r1\nlogsource:\n  product: linux\ndetection:\n" det "  condition: sel\n"

static bool
a_is(const char *sel, const char *value)
{
    char rule[1024], kv[512];

    snprintf(rule, sizeof(rule), RULE("  sel:\n    %s\n"), sel);
    snprintf(kv, sizeof(kv), "a=%s", value);
    return matches_rule(rule, mk(kv, NULL));
}

START_TEST(test_plain_and_wildcards)
{
    ck_assert(a_is("a: foo", "foo"));
    ck_assert(a_is("a: foo", "FOO"));
    ck_assert(!a_is("a: foo", "foobar"));
    ck_assert(a_is("a: 'foo*'", "foobar"));
    ck_assert(a_is("a: '*bar'", "foobar"));
    ck_assert(a_is("a: '*oba*'", "foobar"));
    ck_assert(a_is("a: 'f?o*r'", "foobar"));
    ck_assert(!a_is("a: 'f?r'", "foobar"));
    ck_assert(a_is("a: 'a\\*b'", "a*b"));
    ck_assert(!a_is("a: 'a\\*b'", "axxb"));
    ck_assert(a_is("a: 'x?y'", "x\xc3\xa9y")); /* ? is one character, not one byte */
    ck_assert(a_is("a: 42", "42"));
    /* wildcards inside: the longest literal run is looked for first, then the whole pattern */
    ck_assert(
        a_is("a|contains: 'cat /dev/null >*sh_history'", "x; cat /dev/null > ~/.bash_history"));
    ck_assert(!a_is("a|contains: 'cat /dev/null >*sh_history'", "cat /dev/null > ~/.profile"));
    ck_assert(!a_is("a|contains: 'cat /dev/null >*sh_history'", "sh_history cat /dev/null >"));
    ck_assert(a_is("a: 'A*b?C'", "axxbyc"));
    ck_assert(!a_is("a: 'A*b?C'", "axxbyyc"));
}
END_TEST

START_TEST(test_modifiers)
{
    ck_assert(a_is("a|contains: OBA", "foobar"));
    ck_assert(!a_is("a|contains: xyz", "foobar"));
    ck_assert(a_is("a|startswith: FOO", "foobar"));
    ck_assert(!a_is("a|startswith: bar", "foobar"));
    ck_assert(a_is("a|endswith: bar", "fooBAR"));
    ck_assert(a_is("a|contains|cased: oba", "foobar"));
    ck_assert(!a_is("a|contains|cased: OBA", "foobar"));
    ck_assert(a_is("a|contains|all: [foo, bar]", "foobar"));
    ck_assert(!a_is("a|contains|all: [foo, baz]", "foobar"));
    ck_assert(a_is("a|contains: [baz, bar]", "foobar"));
    ck_assert(a_is("a|re: '^fo+b'", "foobar"));
    ck_assert(!a_is("a|re: '^FO+B'", "foobar"));
    ck_assert(a_is("a|re|i: '^FO+B'", "foobar"));
    ck_assert(!a_is("a|re: '^b.r$'", "foo\nbar"));
    ck_assert(a_is("a|re|m: '^b.r$'", "foo\nbar"));
    ck_assert(!a_is("a|re: 'o.b'", "fo\nbar"));
    ck_assert(a_is("a|re|s: 'o.b'", "fo\nbar"));
    ck_assert(a_is("a|cidr: 10.0.0.0/8", "10.1.2.3"));
    ck_assert(!a_is("a|cidr: 10.0.0.0/8", "11.1.2.3"));
    ck_assert(a_is("a|cidr: 192.168.1.128/25", "192.168.1.200"));
    ck_assert(!a_is("a|cidr: 192.168.1.128/25", "192.168.1.100"));
    ck_assert(a_is("a|cidr: 'fe80::/10'", "fe80::1"));
    ck_assert(!a_is("a|cidr: 10.0.0.0/8", "not an address"));
    /* "hello" in base64: aGVsbG8= */
    ck_assert(a_is("a|base64: hello", "aGVsbG8="));
    ck_assert(a_is("a|base64|contains: hello", "xxaGVsbG8=yy"));
    /* base64offset: "hello" at any of the three offsets of a longer text */
    ck_assert(
        a_is("a|base64offset|contains: hello", "c2F5IGhlbGxvIHdvcmxk"));   /* "say hello world" */
    ck_assert(a_is("a|base64offset|contains: hello", "aGVsbG8gd29ybGQ=")); /* "hello world" */
    ck_assert(a_is("a|base64offset|contains: hello", "YSBoZWxsbyB3b3JsZA==")); /* "a hello world" */
    ck_assert(!a_is("a|base64offset|contains: hello", "d29ybGQ="));
    ck_assert(a_is("a|windash|contains: ' -exec'", "find . /exec x"));
    ck_assert(a_is("a|windash|contains: ' -exec'", "find . \xe2\x80\x93"
                                                   "exec x"));
    ck_assert(a_is("a|windash|contains: ' -exec'", "find . -exec x"));
    ck_assert(!a_is("a|windash|contains: ' -exec'", "find . +exec x"));
    ck_assert(a_is("a|lt: 10", "9.5"));
    ck_assert(!a_is("a|lt: 10", "10"));
    ck_assert(a_is("a|lte: 10", "10"));
    ck_assert(a_is("a|gt: -1", "0"));
    ck_assert(!a_is("a|gte: 3", "2"));
    ck_assert(!a_is("a|gt: 1", "abc"));
}
END_TEST

/* Whether the rule with selection sel matches a message with fields a = av and b = bv (NULL:
 * absent). */
static bool
ab_is(const char *sel, const char *av, const char *bv)
{
    char rule[1024], ka[256], kb[256];

    snprintf(rule, sizeof(rule), RULE("  sel:\n    %s\n"), sel);
    snprintf(ka, sizeof(ka), "a=%s", av ? av : "");
    snprintf(kb, sizeof(kb), "b=%s", bv ? bv : "");
    return matches_rule(rule, av && bv ? mk(ka, kb, NULL)
                              : av     ? mk(ka, NULL)
                              : bv     ? mk(kb, NULL)
                                       : mk(NULL));
}

/* |fieldref: a field compared with another field of the same message. */
START_TEST(test_fieldref)
{
    ck_assert(ab_is("a|fieldref: b", "root", "root"));
    ck_assert(ab_is("a|fieldref: b", "Root", "rOOT")); /* without regard to case */
    ck_assert(!ab_is("a|fieldref: b", "root", "admin"));
    ck_assert(!ab_is("a|fieldref: b", "root", "roo"));
    ck_assert(!ab_is("a|fieldref: b", "root", NULL)); /* nothing to compare with */
    ck_assert(!ab_is("a|fieldref: b", NULL, "root"));
    ck_assert(ab_is("a|fieldref: b", "", ""));
    ck_assert(ab_is("a|fieldref|cased: b", "root", "root"));
    ck_assert(!ab_is("a|fieldref|cased: b", "Root", "root"));
    ck_assert(ab_is("a|fieldref|startswith: b", "C:\\Users\\bob\\x.exe", "c:\\users\\BOB"));
    ck_assert(!ab_is("a|fieldref|startswith: b", "C:\\Users\\bob", "C:\\Users\\bob\\x"));
    ck_assert(ab_is("a|fieldref|endswith: b", "DOMAIN\\bob", "bob"));
    ck_assert(!ab_is("a|fieldref|endswith: b", "DOMAIN\\bob", "DOMAIN"));
    ck_assert(ab_is("a|fieldref|contains: b", "xxbobxx", "BOB"));
    ck_assert(!ab_is("a|fieldref|contains: b", "xxbobxx", "alice"));
    /* a list of references: any; with |all: every one */
    ck_assert(ab_is("a|fieldref: [n, b]", "bob", "bob"));
    ck_assert(!ab_is("a|fieldref|all: [n, b]", "bob", "bob"));
    /* the filter of a rule: not the same user */
#define NOT_SAME                                                                                   \
    "title: t\nid: r1\nlogsource:\n  product: linux\ndetection:\n  sel:\n    a: x\n  same:\n"      \
    "    b|fieldref: n\n  condition: sel and not same\n"
    ck_assert(matches_rule(NOT_SAME, mk("a=x", "b=bob", "n=alice", NULL)));
    ck_assert(!matches_rule(NOT_SAME, mk("a=x", "b=bob", "n=BOB", NULL)));
}
END_TEST

/* |re with the literal it requires as a prefilter: the same results as without. */
START_TEST(test_re_prefilter)
{
    ck_assert(a_is("a|re: 'Admin\\d+'", "user Admin42"));
    ck_assert(!a_is("a|re: 'Admin\\d+'", "user admin42")); /* the literal, not the case */
    ck_assert(!a_is("a|re: 'Admin\\d+'", "user root"));
    ck_assert(a_is("a|re|i: 'Admin\\d+'", "user ADMIN42"));
    ck_assert(a_is("a|re: 'colou?r=red'", "color=red"));
    ck_assert(a_is("a|re: 'wget|curl'", "curl -O")); /* no literal: always run */
    ck_assert(!a_is("a|re: '^/etc/(passwd|shadow)$'", "/etc/group"));
    ck_assert(a_is("a|re: '^/etc/(passwd|shadow)$'", "/etc/shadow"));
}
END_TEST

START_TEST(test_null_exists_keywords)
{
    ck_assert(matches_rule(RULE("  sel:\n    b: null\n"), mk("a=x", NULL)));
    ck_assert(matches_rule(RULE("  sel:\n    b: null\n"), mk("b=", NULL)));
    ck_assert(!matches_rule(RULE("  sel:\n    b: null\n"), mk("b=y", NULL)));
    ck_assert(matches_rule(RULE("  sel:\n    b|exists: true\n"), mk("b=", NULL)));
    ck_assert(!matches_rule(RULE("  sel:\n    b|exists: true\n"), mk("a=1", NULL)));
    ck_assert(matches_rule(RULE("  sel:\n    b|exists: false\n"), mk("a=1", NULL)));
    /* keywords search MESSAGE; a map is AND, a list of maps OR */
    ck_assert(matches_rule(RULE("  sel:\n    - 'segfault'\n    - 'Oops'\n"),
                           mk("MESSAGE=kernel: oops at 0x0", NULL)));
    ck_assert(!matches_rule(RULE("  sel:\n    - 'segfault'\n"), mk("MESSAGE=all fine", NULL)));
    ck_assert(matches_rule(RULE("  sel:\n    '|all':\n      - 'bash -c'\n      - '/dev/tcp/'\n"),
                           mk("MESSAGE=x bash -c y >&/dev/tcp/1.2.3.4", NULL)));
    ck_assert(!matches_rule(RULE("  sel:\n    '|all':\n      - 'bash -c'\n      - '/dev/tcp/'\n"),
                            mk("MESSAGE=x bash -c y", NULL)));
    ck_assert(matches_rule(RULE("  sel:\n    a: 1\n    b: 2\n"), mk("a=1", "b=2", NULL)));
    ck_assert(!matches_rule(RULE("  sel:\n    a: 1\n    b: 2\n"), mk("a=1", "b=3", NULL)));
    ck_assert(matches_rule(RULE("  sel:\n    - a: 1\n    - b: 2\n"), mk("a=0", "b=2", NULL)));
    ck_assert(!matches_rule(RULE("  sel:\n    - a: 1\n    - b: 2\n"), mk("a=0", "b=0", NULL)));
}
END_TEST

static bool
truth_of(void *arg, size_t i)
{
    return (*(unsigned *)arg >> i) & 1;
}

static bool
cond(const char *src, unsigned truth)
{
    static const char *const names[] = {"sel1", "sel2", "filter_a", "filter_b", "_x"};
    char err[256];
    struct sigma_cond *c = sigma_cond_parse(src, names, 5, err, sizeof(err));
    bool r;

    ck_assert_msg(c != NULL, "%s: %s", src, err);
    r = sigma_cond_eval(c, truth_of, &truth);
    sigma_cond_free(c);
    return r;
}

static const char *
cond_err(const char *src)
{
    static const char *const names[] = {"sel1", "sel2", "filter_a", "filter_b", "_x"};
    static char err[256];
    struct sigma_cond *c = sigma_cond_parse(src, names, 5, err, sizeof(err));

    ck_assert_msg(c == NULL, "%s parsed", src);
    return err;
}

START_TEST(test_condition)
{
    ck_assert(cond("sel1", 1));
    ck_assert(!cond("sel1", 2));
    ck_assert(cond("sel1 and sel2", 3));
    ck_assert(!cond("sel1 and sel2", 1));
    ck_assert(cond("sel1 or sel2", 2));
    ck_assert(cond("sel1 and not filter_a", 1));
    ck_assert(!cond("sel1 and not filter_a", 5));
    ck_assert(cond("NOT sel1 AND sel2", 2)); /* keywords in any case */
    /* not binds tighter than and, and tighter than or */
    ck_assert(cond("sel1 or sel2 and filter_a", 1));
    ck_assert(!cond("(sel1 or sel2) and filter_a", 1));
    ck_assert(cond("not sel1 or sel2", 0));
    ck_assert(!cond("not (sel1 or sel2)", 2));
    ck_assert(cond("1 of sel*", 2));
    ck_assert(!cond("1 of sel*", 4));
    ck_assert(cond("all of sel*", 3));
    ck_assert(!cond("all of sel*", 1));
    ck_assert(cond("sel1 and not 1 of filter_*", 1));
    ck_assert(!cond("sel1 and not 1 of filter_*", 9));
    /* them: every identifier but those starting with _ */
    ck_assert(cond("all of them", 15));
    ck_assert(!cond("all of them", 7));
    ck_assert(cond("1 of them", 8));
    ck_assert(!cond("1 of them", 16));
    ck_assert(cond("2 of them", 5));
    ck_assert(!cond("2 of them", 4));
    ck_assert(cond("((sel1))", 1));
    ck_assert(strstr(cond_err("sel3"), "unknown detection identifier 'sel3'"));
    ck_assert(strstr(cond_err("sel1 and"), "ends"));
    ck_assert(strstr(cond_err("sel1 sel2"), "unexpected 'sel2'"));
    ck_assert(strstr(cond_err("(sel1"), "')' expected"));
    ck_assert(strstr(cond_err("sel1 | count() > 5"), "aggregations"));
    ck_assert(strstr(cond_err("1 of x*"), "matches no detection identifier"));
    ck_assert(strstr(cond_err("all sel1"), "'of' expected"));
    ck_assert(strstr(cond_err("3 of sel*"), "only 2"));
    ck_assert(strstr(cond_err(""), "ends"));
}
END_TEST

START_TEST(test_condition_depth)
{
    static const char *const names[] = {"a"};
    char err[256], *src = malloc(20001);
    struct sigma_cond *c;

    memset(src, '(', 10000);
    strcpy(src + 10000, "a");
    memset(src + 10001, ')', 10000);
    src[20001 - 1] = '\0';
    c = sigma_cond_parse(src, names, 1, err, sizeof(err));
    ck_assert(c == NULL);
    ck_assert(strstr(err, "nested deeper"));
    free(src);
}
END_TEST

/* The refusal of rule text: "rule.yml:LINE: sigma rule refused: ...", and nothing loaded. */
static const char *
refusal(const char *rule, int line)
{
    static char text[600];
    struct sigma *s = load(rule);

    ck_assert_uint_eq(sigma_nrules(s), 0);
    ck_assert_uint_eq(sigma_nrefused(s), 1);
    ck_assert_uint_eq(sigma_ndiags(s), 1);
    ck_assert_str_eq(sigma_diag_at(s, 0)->file, "rule.yml");
    ck_assert_msg(sigma_diag_at(s, 0)->line == line, "line %d, not %d: %s",
                  sigma_diag_at(s, 0)->line, line, sigma_diag_at(s, 0)->text);
    snprintf(text, sizeof(text), "%s", sigma_diag_at(s, 0)->text);
    sigma_free(s);
    return text;
}

START_TEST(test_refusals)
{
    ck_assert(
        strstr(refusal(RULE("  sel:\n    a|wide: x\n"), 7), "modifier 'wide' is not supported"));
    ck_assert(strstr(refusal(RULE("  sel:\n    CommandLine: x\n"), 7),
                     "field 'CommandLine' has no mapping"));
    ck_assert(strstr(refusal("title: t\nlogsource:\n  product: windows\ndetection:\n  sel:\n    a: "
                             "1\n  condition: sel\n",
                             3),
                     "logsource (product windows"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|re: '(x'\n"), 7), "regular expression"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|cidr: 10.0.0.0/33\n"), 7), "CIDR"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|lt: abc\n"), 7), "not a number"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|i: x\n"), 7), "only follows re"));
    ck_assert(
        strstr(refusal(RULE("  sel:\n    a|contains|startswith: x\n"), 7), "exclude each other"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|base64: 'x*'\n"), 7),
                     "base64 of a value with wildcards"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a: []\n"), 7), "empty list"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|fieldref: Nope\n"), 7),
                     "field 'Nope' (|fieldref) has no mapping"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|fieldref|re: b\n"), 7),
                     "fieldref of 'a|fieldref|re' only combines with"));
    ck_assert(strstr(refusal(RULE("  sel:\n    a|fieldref: null\n"), 7),
                     "|fieldref takes the name of a field"));
    ck_assert(strstr(refusal("title: t\nlogsource:\n  product: linux\ndetection:\n  sel:\n    a: "
                             "1\n  condition: sel | count() > 3\n",
                             7),
                     "aggregations"));
    ck_assert(strstr(refusal("title: t\nlogsource:\n  product: linux\ndetection:\n  sel:\n    a: "
                             "1\n  condition: sel2\n",
                             7),
                     "unknown detection identifier"));
    ck_assert(
        strstr(refusal("title: t\nlogsource:\n  product: linux\ndetection:\n  sel:\n    a: 1\n", 5),
               "no condition"));
    ck_assert(strstr(
        refusal("logsource:\n  product: linux\ndetection:\n  sel:\n    a: 1\n  condition: sel\n",
                1),
        "title missing"));
    ck_assert(strstr(refusal("title: t\nlevel: severe\nlogsource:\n  product: linux\ndetection:\n  "
                             "sel:\n    a: 1\n  condition: sel\n",
                             2),
                     "level must be"));
    ck_assert(strstr(refusal("title: t\ncorrelation:\n  type: value_median\n", 3),
                     "unknown correlation type value_median"));
    ck_assert(strstr(refusal("title: t\n  bad: [yaml\n", 2), "YAML"));
    /* YAML aliases repeating a large list: refused, not compiled a million times */
    {
        struct buf b = BUF_INIT;
        int i;
        buf_puts(&b, "title: t\nlogsource:\n  product: linux\ndetection:\n  m: &m {a: [");
        for (i = 0; i < 500; i++) buf_printf(&b, "%sx%d", i ? "," : "", i);
        buf_puts(&b, "]}\n  sel: [");
        for (i = 0; i < 500; i++) buf_printf(&b, "%s*m", i ? "," : "");
        buf_puts(&b, "]\n  condition: sel\n");
        ck_assert(strstr(refusal(buf_str(&b), 5), "rule too large"));
        buf_free(&b);
    }
    /* the second rule of a file refused, the first kept */
    {
        struct sigma *s = load(RULE("  sel:\n    a: 1\n") "---\n" RULE("  sel:\n    a|utf16: 1\n"));
        ck_assert_uint_eq(sigma_nrules(s), 1);
        ck_assert_uint_eq(sigma_nrefused(s), 1);
        ck_assert_int_eq(sigma_diag_at(s, 0)->line, 16);
        sigma_free(s);
    }
}
END_TEST

START_TEST(test_logsource)
{
    const char *sshd = "title: t\nid: r1\nlogsource:\n  product: linux\n  service: sshd\n"
                       "detection:\n  keywords:\n    - Failed\n  condition: keywords\n";
    const char *auth = "title: t\nid: r1\nlogsource:\n  product: linux\n  service: auth\n"
                       "detection:\n  keywords:\n    - Failed\n  condition: keywords\n";
    const char *web = "title: t\nid: r1\nlogsource:\n  category: webserver\n"
                      "detection:\n  sel:\n    c-uri|contains: '../'\n  condition: sel\n";
    struct msg *m = mk("MESSAGE=Failed password", NULL);

    ck_assert(matches_rule(sshd, msg_ref(m)));
    msg_set(m, NV_PROGRAM, "su", 2);
    ck_assert(!matches_rule(sshd, msg_ref(m)));
    msg_set_pri(m, 4 << 3 | 6); /* auth.info */
    ck_assert(matches_rule(auth, msg_ref(m)));
    msg_set_pri(m, 3 << 3 | 6); /* daemon.info */
    ck_assert(!matches_rule(auth, msg_ref(m)));
    msg_unref(m);
    m = mk("http.uri=/a/../../etc/passwd", NULL);
    ck_assert(!matches_rule(web, msg_ref(m))); /* not of class web */
    msg_set(m, NV_CLASS, "web", 3);
    ck_assert(matches_rule(web, m));
}
END_TEST

static struct msg *alerts[4];
static size_t nalerts, ninputs;

static void
emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    (void)arg;
    if (kind == CORR_INPUT) {
        ninputs++;
        return;
    }
    ck_assert(a != NULL && a->rule != NULL);
    ck_assert_str_eq(a->rule->id, "11111111-2222");
    if (nalerts < 4) alerts[nalerts++] = msg_ref(m);
}

static void
assert_value(const struct msg *m, const char *name, const char *want)
{
    size_t n;
    const char *v = msg_get(m, nv_intern_str(name), &n);

    ck_assert_msg(v != NULL, "%s unset", name);
    ck_assert_msg(n == strlen(want) && memcmp(v, want, n) == 0, "%s = %.*s, not %s", name, (int)n,
                  v, want);
}

START_TEST(test_alert_through_corr)
{
    const char *xml =
        "<patterndb version='4' pub_date='2024-01-01'><ruleset name='s' id='s'>"
        "<pattern>sshd</pattern><rules><rule provider='t' id='pdb.fail' class='system'>"
        "<patterns><pattern>Failed password for @ESTRING:usr: @from @ESTRING:src: @"
        "</pattern></patterns></rule></rules></ruleset></patterndb>";
    const char *rule = "title: Root login attempt\nid: 11111111-2222\nlevel: high\n"
                       "logsource:\n  product: linux\n  service: sshd\n"
                       "detection:\n  sel:\n    a: root\n  net:\n    ip|cidr: 10.0.0.0/8\n"
                       "  condition: sel and not net\n";
    const char *map = "logsources:\n  - product: linux\n    service: sshd\n    program: [sshd]\n"
                      "fields:\n  a: usr\n  ip: src\n";
    struct pdb *db = pdb_new();
    struct sigma *s = sigma_new();
    struct corr_opts o = {0};
    struct corr *c;
    struct msg *m;

    ck_assert_int_eq(pdb_load_memory(db, "t.xml", xml, strlen(xml)), 0);
    ck_assert_int_eq(sigma_load_mapping_memory(s, "m.yml", map, strlen(map)), 0);
    ck_assert_int_eq(sigma_load_memory(s, "r.yml", rule, strlen(rule)), 0);
    ck_assert_uint_eq(sigma_nrules(s), 1);
    pdb_set_sigma(db, s);
    o.emit = emit;
    c = corr_new(db, &o);
    /* the Sigma rule reads what the patterndb rule extracted */
    m = mk("MESSAGE=Failed password for root from 192.0.2.7 port 22", NULL);
    corr_process(c, m);
    msg_unref(m);
    m = mk("MESSAGE=Failed password for root from 10.0.0.7 port 22", NULL);
    corr_process(c, m);
    msg_unref(m);
    m = mk("MESSAGE=Failed password for alice from 192.0.2.7 port 22", NULL);
    corr_process(c, m);
    msg_unref(m);
    ck_assert_uint_eq(ninputs, 3);
    ck_assert_uint_eq(nalerts, 1);
    assert_value(alerts[0], "corral.summary", "Root login attempt");
    assert_value(alerts[0], "corral.severity", "major");
    assert_value(alerts[0], "corral.alert_id", "sigma/11111111-2222/h1");
    assert_value(alerts[0], "corral.event", "sigma.11111111-2222");
    assert_value(alerts[0], "HOST", "h1");
    assert_value(alerts[0], "usr", "root");
    assert_value(alerts[0], "src", "192.0.2.7");
    assert_value(alerts[0], ".classifier.rule_id", "11111111-2222");
    assert_value(alerts[0], ".classifier.class", "sigma");
    assert_value(alerts[0], "MESSAGE", "Failed password for root from 192.0.2.7 port 22");
    ck_assert(msg_tag_has(alerts[0], tag_intern("corral.alert", 12)));
    ck_assert(msg_flags(alerts[0]) & MSG_F_GENERATED);
    msg_unref(alerts[0]);
    corr_free(c);
    pdb_free(db);
}
END_TEST

static void
note_hit(void *arg, const struct sigma_rule *r)
{
    *(unsigned *)arg |= 1u << (r->id[1] - '0');
}

/* Which rules r0..r5 of the set match MESSAGE text (with a = a_value): bit i for ri. */
static unsigned
hits(const struct sigma *s, struct sigma_scratch *sc, const char *text, const char *a_value)
{
    struct msg *m = mk("a=", NULL);
    unsigned got = 0;

    msg_set(m, NV_MESSAGE, text, strlen(text));
    msg_set(m, nv_intern_str("a"), a_value, strlen(a_value));
    sigma_match(s, m, sc, note_hit, &got);
    msg_unref(m);
    return got;
}

#define KW(id, det, cond)                                                                          \
    "title: t\nid: " id "\nlogsource:\n  product: linux\ndetection:\n" det "  condition: " cond    \
    "\n---\n"

START_TEST(test_literal_scan)
{
    /* literals shared between rules, overlapping, at either end, in a negated selection, on
     * another field, and with |all; every message is checked against every rule */
    const char *rules =
        KW("r0", "  kw:\n    - abc\n    - xyz\n", "kw") KW("r1", "  kw:\n    - abcd\n", "kw")
            KW("r2", "  sel:\n    a: 1\n  filter:\n    - abc\n", "sel and not filter")
                KW("r3", "  sel:\n    a|contains: abc\n", "sel")
                    KW("r4", "  kw:\n    '|all':\n      - abc\n      - 'b*z'\n", "kw")
                        KW("r5", "  kw:\n    - ab\n  sel:\n    - abcab\n", "kw and not sel");
    struct sigma *s = load(rules);
    struct sigma_scratch *sc = sigma_scratch_new();
    int i;

    ck_assert_uint_eq(sigma_nrules(s), 6);
    for (i = 0; i < 3; i++) { /* the same answers on a scratch used before */
        ck_assert_uint_eq(hits(s, sc, "xxABCd", "0"), 1u << 0 | 1u << 1 | 1u << 5);
        ck_assert_uint_eq(hits(s, sc, "ababc", "1"), 1u << 0 | 1u << 5);
        ck_assert_uint_eq(hits(s, sc, "abcab", "1"), 1u << 0);
        ck_assert_uint_eq(hits(s, sc, "end: XYZ", "1"), 1u << 0 | 1u << 2);
        ck_assert_uint_eq(hits(s, sc, "nothing here", "1"), 1u << 2);
        ck_assert_uint_eq(hits(s, sc, "", "zabcz"), 1u << 3);
        ck_assert_uint_eq(hits(s, sc, "abc then bz", "0"), 1u << 0 | 1u << 4 | 1u << 5);
        ck_assert_uint_eq(hits(s, sc, "ab", "0"), 1u << 5);
    }
    sigma_scratch_free(sc);
    sigma_free(s);
}
END_TEST

START_TEST(test_mapping_errors)
{
    struct sigma *s = sigma_new();
    const char *bad = "logsources:\n  - product: linux\n    facility: [nope]\n";

    ck_assert_int_eq(sigma_load_mapping_memory(s, "m.yml", bad, strlen(bad)), -1);
    ck_assert_int_eq(sigma_diag_at(s, 0)->line, 2);
    ck_assert(strstr(sigma_diag_at(s, 0)->text, "unknown facility 'nope'"));
    ck_assert_int_eq(sigma_load_memory(s, "r.yml", "title: x\n", 9), -1); /* no mapping yet */
    sigma_free(s);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sigma");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_plain_and_wildcards);
    tcase_add_test(tc, test_modifiers);
    tcase_add_test(tc, test_fieldref);
    tcase_add_test(tc, test_re_prefilter);
    tcase_add_test(tc, test_null_exists_keywords);
    tcase_add_test(tc, test_condition);
    tcase_add_test(tc, test_condition_depth);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_logsource);
    tcase_add_test(tc, test_alert_through_corr);
    tcase_add_test(tc, test_mapping_errors);
    tcase_add_test(tc, test_literal_scan);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
