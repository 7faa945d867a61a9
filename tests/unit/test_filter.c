/*
 * Unit tests: filter expressions.  The expected verdicts were checked with
 * `pdbtool match -F EXPR` (syslog-ng 3.38) on the message
 * PROGRAM=p MESSAGE="a foo b.ar" with x=foo, y=b.ar, tag .classifier.c1.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/filter.h"
#include "tests/unit/unit_run.h"

static struct msg *msg;

static void
setup(void)
{
    msg = msg_new();
    msg_set(msg, NV_PROGRAM, "p", 1);
    msg_set(msg, NV_MESSAGE, "a foo b.ar", 10);
    msg_set(msg, nv_intern_str("x"), "foo", 3);
    msg_set(msg, nv_intern_str("y"), "b.ar", 4);
    msg_tag_set(msg, tag_intern(".classifier.c1", 14));
}

static void
teardown(void)
{
    msg_unref(msg);
}

static int
eval(const char *expr)
{
    struct buf err = BUF_INIT;
    struct filter *f = filter_compile(expr, strlen(expr), &err);
    struct template_env env;
    int r;

    if (!f) {
        buf_free(&err);
        return -1;
    }
    template_env_single(&env, &msg);
    r = filter_eval(f, &env);
    filter_free(f);
    buf_free(&err);
    return r;
}

static const struct {
    const char *expr;
    int verdict; /* 1 match, 0 no match, -1 syntax error */
} cases[] = {
    /* numeric comparisons read each side like atoi() */
    {"\"10.5\" == \"10\"", 1},
    {"\"abc\" == \"0\"", 1},
    {"\"0x10\" == \"16\"", 0},
    {"\" 5\" == \"5\"", 1},
    {"\"5a\" == \"5\"", 1},
    {"\"-3\" < \"2\"", 1},
    {"\"10\" > \"9\"", 1},
    {"\"10\" gt \"9\"", 0}, /* string comparison */
    {"\"b\" gt \"a\"", 1},
    {"\"$x\" eq \"foo\"", 1},
    {"\"$x\" == \"foo\"", 1},
    {"$x eq \"foo\"", 1},
    {"\"${x}\" ne \"foo\"", 0},
    {"not \"${x}\" eq \"foo\"", 0},
    {"\"$(context-length)\" == \"1\"", 1},
    {"\"1\" < \"2\" and \"b\" gt \"a\"", 1},
    {"\"a\" lt \"b\" or \"x\" == \"y\"", 1},
    {"\"a\" gt \"b\" or \"x\" eq \"y\"", 0},
    {"(\"a\" gt \"b\" or \"x\" eq \"x\") and not (\"1\" == \"2\")", 1},
    {"match(\"fo+\" value(\"x\"))", 1},
    {"match(\"^fo$\" value(\"x\"))", 0},
    {"match(\"FOO\" value(\"x\") flags(ignore-case))", 1},
    {"match(\"o.b\" value(\"MESSAGE\") type(string))", 0},
    {"match(\"foo b\" type(string))", 1},
    {"match(\"foo\")", 1},
    {"message(\"foo\")", 1},
    {"program(\"^p$\")", 1},
    {"host(\"\")", 1},
    {"tags(\".classifier.c1\")", 1},
    {"tags(\"c1\")", 0},
    {"level(notice)", 1},
    {"level(err..emerg)", 0},
    {"level(info, notice)", 1},
    {"facility(user)", 1},
    {"facility(mail)", 0},
    /* syntax errors */
    {"", -1},
    {"\"a\" =~ \"b\"", -1},
    {"(\"a\" == \"b\"", -1},
    {"\"unterminated", -1},
    {"nosuch(\"x\")", -1},
    {"match(\"(\")", -1},
    {"level(bogus)", -1},
    {"\"a\" == \"a\" junk", -1},
};

START_TEST(test_cases)
{
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(eval(cases[i].expr) == cases[i].verdict, "%s: expected %d, got %d",
                      cases[i].expr, cases[i].verdict, eval(cases[i].expr));
}
END_TEST

START_TEST(test_context_condition)
{
    struct buf err = BUF_INIT;
    const char *expr = "\"$(context-length)\" >= \"3\" and \"${x}@1\" eq \"one\"";
    struct filter *f = filter_compile(expr, strlen(expr), &err);
    struct msg *set[3];
    struct template_env env = {0};
    int i;

    ck_assert_ptr_nonnull(f);
    for (i = 0; i < 3; i++) set[i] = msg_new();
    msg_set(set[1], nv_intern_str("x"), "one", 3);
    env.msgs = set;
    env.nmsgs = 2;
    ck_assert(!filter_eval(f, &env));
    env.nmsgs = 3;
    ck_assert(filter_eval(f, &env));
    for (i = 0; i < 3; i++) msg_unref(set[i]);
    filter_free(f);
    buf_free(&err);
}
END_TEST

/*
 * filter_each evaluates a comparison's side that reads only values once: for
 * every item it must give filter_eval's verdict with $_ = the item, the
 * fixed side on the left or the right, compared as strings and as numbers,
 * and the expressions it evaluates whole (both sides or neither fixed, and,
 * or, not, match).
 */
START_TEST(test_each_item)
{
    static const char *const exprs[] = {"\"$_\" eq \"${x}\"",
                                        "\"${x}\" eq \"$_\"",
                                        "\"$_\" ne \"${y:-none}\"",
                                        "\"${y}\" lt \"$_\"",
                                        "\"$_\" ge \"b\"",
                                        "\"$_\" == \"${n}\"",
                                        "\"${n}\" > \"$_\"",
                                        "\"$_\" <= \"7\"",
                                        "\"$_\" eq \"$(echo ${x})\"",
                                        "\"${x}\" eq \"${y}\"",
                                        "\"$_\" eq \"$_\"",
                                        "\"$_\" eq \"${x}\" or \"$_\" eq \"1\"",
                                        "not \"$_\" eq \"${x}\"",
                                        "match(\"foo\" value(\"x\"))",
                                        "\"${x}\" eq \"$(echo $_)\"",
                                        "\"$_\" eq \"${unset:-$_}\""};
    static const char *const items[] = {"", "foo", "b.ar", "1", "7", "12", "zzz", "foo "};
    struct buf err = BUF_INIT;
    struct template_env env;
    size_t e, i;

    msg_set(msg, nv_intern_str("n"), "7", 1);
    template_env_single(&env, &msg);
    for (e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
        struct filter *f = filter_compile(exprs[e], strlen(exprs[e]), &err);
        struct filter_each fe;
        ck_assert_msg(f, "%s: %s", exprs[e], buf_str(&err));
        filter_each_begin(&fe, f, &env);
        for (i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
            env.context_id = items[i];
            env.context_id_len = strlen(items[i]);
            ck_assert_msg(filter_each_eval(&fe, &env) == filter_eval(f, &env), "%s with $_ %s",
                          exprs[e], items[i]);
        }
        filter_each_end(&fe);
        env.context_id = NULL;
        env.context_id_len = 0;
        filter_free(f);
    }
    buf_free(&err);
}
END_TEST

START_TEST(test_deep_nesting_is_refused)
{
    char expr[4096];
    size_t i, n = 0;

    for (i = 0; i < 1000; i++) expr[n++] = '(';
    strcpy(expr + n, "\"a\" eq \"a\"");
    ck_assert_int_eq(eval(expr), -1);
    n = 0;
    for (i = 0; i < 500; i++) n += (size_t)sprintf(expr + n, "not ");
    strcpy(expr + n, "\"a\" eq \"a\"");
    ck_assert_int_eq(eval(expr), -1);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("filter");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_cases);
    tcase_add_test(tc, test_context_condition);
    tcase_add_test(tc, test_each_item);
    tcase_add_test(tc, test_deep_nesting_is_refused);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
