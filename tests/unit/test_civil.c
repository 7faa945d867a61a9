/*
 * Unit tests of engine/civil.c: calendar days both ways, and the one ISO 8601
 * reader and writer (Z, offsets, fractions, epoch seconds, bad input).
 */
#include "engine/civil.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdint.h>

START_TEST(test_days)
{
    int64_t y;
    int m, d;

    ck_assert_int_eq(civil_to_days(1970, 1, 1), 0);
    ck_assert_int_eq(civil_to_days(2000, 3, 1), 11017);
    ck_assert_int_eq(civil_to_days(1969, 12, 31), -1);
    civil_from_days(11016, &y, &m, &d); /* 2000-02-29: a leap day of a century year */
    ck_assert(y == 2000 && m == 2 && d == 29);
}
END_TEST

static int64_t
parse(const char *s)
{
    int64_t ms = -42;

    return civil_parse_time(s, &ms) == 0 ? ms : -1;
}

START_TEST(test_parse_zones)
{
    ck_assert_int_eq(parse("2026-12-04T18:00:00Z"), 1796407200000LL);
    ck_assert_int_eq(parse("2026-12-04T18:00:00"), 1796407200000LL); /* no zone: UTC */
    ck_assert_int_eq(parse("2026-12-04 19:00+01:00"), 1796407200000LL);
    ck_assert_int_eq(parse("2026-12-04T19:30:00+0130"), 1796407200000LL);
    ck_assert_int_eq(parse("2026-12-04T13:00:00-05:00"), 1796407200000LL);
    ck_assert_int_eq(parse("2026-12-04"), 1796342400000LL);
    ck_assert_int_eq(parse("2026-12-04Z"), 1796342400000LL);
    ck_assert_int_eq(parse("1970-01-01T00:00:00Z"), 0);
    ck_assert_int_eq(parse("9999-12-31T23:59:59Z"), CIVIL_MAX_SEC * 1000);
    ck_assert_int_eq(parse("2024-02-29T00:00:00Z"), 1709164800000LL);
    ck_assert_int_eq(parse("2016-12-31T23:59:60Z"), 1483228800000LL); /* a leap second */
}
END_TEST

START_TEST(test_parse_fractions)
{
    /* milliseconds kept, finer digits dropped */
    ck_assert_int_eq(parse("2026-12-04T18:00:00.5Z"), 1796407200500LL);
    ck_assert_int_eq(parse("2026-12-04T18:00:00.05Z"), 1796407200050LL);
    ck_assert_int_eq(parse("2026-12-04T18:00:00.123456+00:00"), 1796407200123LL);
    ck_assert_int_eq(parse("2026-12-04T18:00:00.999999999Z"), 1796407200999LL);
}
END_TEST

START_TEST(test_parse_epoch)
{
    ck_assert_int_eq(parse("1796407200"), 1796407200000LL);
    ck_assert_int_eq(parse("0"), 0);
    ck_assert_int_eq(parse("253402300799"), CIVIL_MAX_SEC * 1000);
    ck_assert_int_eq(parse("253402300800"), -1);
    ck_assert_int_eq(parse("99999999999999999999999"), -1);
}
END_TEST

START_TEST(test_parse_bad)
{
    static const char *const bad[] = {
        "",
        "tomorrow",
        "-1",
        "2026-13-01",
        "2026-00-01",
        "2026-12-00",
        "2026-12-32",
        "2026-02-29", /* not a leap year */
        "2100-02-29", /* nor is a century not divisible by 400 */
        "26-12-04",   /* two-digit year */
        "2026-1-4",   /* one-digit month and day */
        "2026/12/04",
        "2026-12-04T",
        "2026-12-04T18",
        "2026-12-04T24:00:00Z",
        "2026-12-04T18:60:00Z",
        "2026-12-04T18:00:61Z",
        "2026-12-04T18:00:00.Z", /* a point without digits */
        "2026-12-04T18:00:00Zx",
        "2026-12-04T18:00:00+1",
        "2026-12-04T18:00:00+24:00",
        "2026-12-04T18:00:00+01:60",
        "2026-12-04T18:00:00 Z",
        " 2026-12-04T18:00:00Z",
        "2026-12-04T18:00:00Z ",
    };
    size_t i;
    int64_t ms = 7;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(civil_parse_time(bad[i], &ms) < 0 && ms == 7, "accepted \"%s\"", bad[i]);
    ck_assert_int_eq(civil_parse_time(NULL, &ms), -1);
}
END_TEST

static void
check_format(int64_t ms, const char *want)
{
    struct buf out = BUF_INIT;

    civil_format_time(ms, &out);
    ck_assert_str_eq(buf_str(&out), want);
    buf_free(&out);
}

START_TEST(test_format)
{
    check_format(0, "1970-01-01T00:00:00Z");
    check_format(1796407200999LL, "2026-12-04T18:00:00Z"); /* whole seconds, rounded down */
    check_format(1709164800000LL, "2024-02-29T00:00:00Z");
    check_format(CIVIL_MAX_SEC * 1000, "9999-12-31T23:59:59Z");
    check_format(-1, "1969-12-31T23:59:59Z");
    check_format(-86400000LL, "1969-12-31T00:00:00Z");
}
END_TEST

START_TEST(test_round_trip)
{
    static const int64_t secs[] = {0, 59, 86399, 951782400, 1796407200, CIVIL_MAX_SEC};
    size_t i;

    for (i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
        struct buf out = BUF_INIT;
        civil_format_time(secs[i] * 1000, &out);
        ck_assert_int_eq(parse(buf_str(&out)), secs[i] * 1000);
        buf_free(&out);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("civil");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_days);
    tcase_add_test(tc, test_parse_zones);
    tcase_add_test(tc, test_parse_fractions);
    tcase_add_test(tc, test_parse_epoch);
    tcase_add_test(tc, test_parse_bad);
    tcase_add_test(tc, test_format);
    tcase_add_test(tc, test_round_trip);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
