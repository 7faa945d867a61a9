/*
 * Unit tests: bounded regular expressions (engine/rematch) where they run
 * on values senders choose: label matchers (silences, inhibit rules, API
 * filters) and rule filters.  A pattern that backtracks without end is
 * stopped by the match limit, counted, and is no match: for =~ and for !~
 * alike.  Ordinary patterns on 64 KiB values still match.  And which
 * matcher sets match the empty value (a silence of those is refused).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/filter.h"
#include "engine/labelmatch.h"
#include "engine/rematch.h"
#include "tests/unit/unit_run.h"

/* The catastrophic pattern and an 80-byte value without 30 digits in a row. */
#define EVIL "(?:(?:.|\\\\s)+)+[0-9]{30}"

static struct msg *
with_message(const char *text, size_t len)
{
    struct msg *m = msg_new();

    msg_set(m, NV_MESSAGE, text, len);
    return m;
}

static bool
lm_match(const char *matchers, const struct msg *m)
{
    struct buf err = BUF_INIT;
    struct labelmatch *lm = labelmatch_parse(matchers, &err);
    bool r;

    ck_assert_msg(lm != NULL, "%s: %s", matchers, buf_str(&err));
    r = labelmatch_match(lm, m);
    labelmatch_free(lm);
    buf_free(&err);
    return r;
}

START_TEST(test_labelmatch_limit)
{
    char text[81];
    struct msg *m;
    uint64_t before = rematch_limit_hits();

    memset(text, 'a', 80);
    memcpy(text + 10, " b ", 3);
    text[80] = '\0';
    m = with_message(text, 80);
    ck_assert(!lm_match("MESSAGE=~\"" EVIL "\"", m));
    ck_assert_uint_eq(rematch_limit_hits(), before + 1);
    /* "the value does not match" is not known either: !~ does not hold */
    ck_assert(!lm_match("MESSAGE!~\"" EVIL "\"", m));
    ck_assert_uint_eq(rematch_limit_hits(), before + 2);
    /* within the limit, both as before */
    ck_assert(lm_match("MESSAGE=~\"a+ b a+\"", m));
    ck_assert(lm_match("MESSAGE!~\"b+\"", m));
    ck_assert_uint_eq(rematch_limit_hits(), before + 2);
    msg_unref(m);
}
END_TEST

START_TEST(test_long_values_still_match)
{
    size_t n = 65536;
    char *text = malloc(n);
    struct msg *m;
    uint64_t before = rematch_limit_hits();

    memset(text, 'x', n);
    memcpy(text + 100, "error", 5);
    memcpy(text + n - 4, "web7", 4);
    m = with_message(text, n);
    ck_assert(lm_match("MESSAGE=~\".*error.*\"", m));
    ck_assert(lm_match("MESSAGE=~\"(?i).*ERROR.*web[0-9]+\"", m));
    ck_assert(lm_match("MESSAGE=~\"x+error[^ ]*\"", m));
    ck_assert(lm_match("MESSAGE!~\".*fail.*\"", m));
    ck_assert_uint_eq(rematch_limit_hits(), before);
    msg_unref(m);
    free(text);
}
END_TEST

START_TEST(test_filter_limit)
{
    const char *expr = "match(\"(?:(?:.|\\\\s)+)+[0-9]{30}\" value(\"MESSAGE\"))";
    char text[81];
    struct buf err = BUF_INIT;
    struct filter *f = filter_compile(expr, strlen(expr), &err);
    struct template_env env;
    struct msg *m;
    uint64_t before = rematch_limit_hits();

    ck_assert_msg(f != NULL, "%s", buf_str(&err));
    memset(text, 'a', 80);
    text[80] = '\0';
    m = with_message(text, 80);
    template_env_single(&env, &m);
    ck_assert(!filter_eval(f, &env));
    ck_assert_uint_eq(rematch_limit_hits(), before + 1);
    filter_free(f);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

static bool
empty(const char *matchers)
{
    struct buf err = BUF_INIT;
    struct labelmatch *lm = labelmatch_parse(matchers, &err);
    bool r;

    ck_assert_msg(lm != NULL, "%s: %s", matchers, buf_str(&err));
    r = labelmatch_matches_empty(lm);
    labelmatch_free(lm);
    buf_free(&err);
    return r;
}

START_TEST(test_matches_empty)
{
    ck_assert(empty("HOST=~\".*\""));
    ck_assert(empty("HOST=\"\""));
    ck_assert(empty("HOST!=web1"));
    ck_assert(empty("HOST!~\"web.+\""));
    ck_assert(empty("HOST=~\"web.*|\", PROGRAM!=sshd"));
    ck_assert(!empty("HOST=web1"));
    ck_assert(!empty("HOST=~\".+\""));
    ck_assert(!empty("HOST!=\"\""));
    ck_assert(!empty("HOST!~\".*\""));
    ck_assert(!empty("HOST=~\".*\", PROGRAM=sshd"));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("rematch");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_labelmatch_limit);
    tcase_add_test(tc, test_long_values_still_match);
    tcase_add_test(tc, test_filter_limit);
    tcase_add_test(tc, test_matches_empty);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
