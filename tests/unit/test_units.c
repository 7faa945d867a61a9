/*
 * Unit tests of engine/units.c: durations, sizes and counts as the
 * configuration writes them, and what does not fit refused rather than
 * wrapped (a size times its unit) or saturated (strtoull, strtod).
 */
#include "engine/units.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

START_TEST(test_duration)
{
    ck_assert(units_duration("300") == 300);
    ck_assert(units_duration("5s") == 5);
    ck_assert(units_duration("250ms") == 0.25);
    ck_assert(units_duration("10m") == 600);
    ck_assert(units_duration("2h") == 7200);
    ck_assert(units_duration("1d") == 86400);
    ck_assert(units_duration(".5s") == 0.5);
    ck_assert(units_duration("0") == 0);
    ck_assert(units_duration("36500d") == UNITS_DURATION_MAX);
    /* malformed */
    ck_assert(units_duration("") < 0);
    ck_assert(units_duration("5x") < 0);
    ck_assert(units_duration("-5") < 0);
    ck_assert(units_duration("+5") < 0);
    ck_assert(units_duration(" 5") < 0);
    ck_assert(units_duration("inf") < 0);
    ck_assert(units_duration("nan") < 0);
    ck_assert(units_duration("0x10") < 0);
    /* too long: beyond 100 years, or beyond a double */
    ck_assert(units_duration("36501d") < 0);
    ck_assert(units_duration("1e400") < 0);
    ck_assert(units_duration("99999999999999999999999999999h") < 0);
}
END_TEST

START_TEST(test_size)
{
    char s[64];

    ck_assert_uint_eq(units_size("65536"), 65536);
    ck_assert_uint_eq(units_size("64k"), 65536);
    ck_assert_uint_eq(units_size("64K"), 65536);
    ck_assert_uint_eq(units_size("10M"), 10u << 20);
    ck_assert_uint_eq(units_size("1G"), 1u << 30);
    /* malformed */
    ck_assert_uint_eq(units_size(""), 0);
    ck_assert_uint_eq(units_size("k"), 0);
    ck_assert_uint_eq(units_size("64kb"), 0);
    ck_assert_uint_eq(units_size("-1"), 0);
    ck_assert_uint_eq(units_size(" 64k"), 0);
    ck_assert_uint_eq(units_size("+64k"), 0);
    ck_assert_str_eq(units_why("64kb", 1), "malformed");
    /* 18014398509481984064 fits in 64 bits; times 1024 it wrapped to 65536 */
    ck_assert_uint_eq(units_size("18014398509481984064k"), 0);
    ck_assert_str_eq(units_why("18014398509481984064k", 1), "too large");
    /* beyond unsigned long long: strtoull saturated */
    ck_assert_uint_eq(units_size("99999999999999999999999"), 0);
    ck_assert_str_eq(units_why("99999999999999999999999", 1), "too large");
    /* the largest that fits, and one more */
    snprintf(s, sizeof(s), "%zuG", SIZE_MAX >> 30);
    ck_assert_uint_eq(units_size(s), (SIZE_MAX >> 30) << 30);
    snprintf(s, sizeof(s), "%zuG", (SIZE_MAX >> 30) + 1);
    ck_assert_uint_eq(units_size(s), 0);
    snprintf(s, sizeof(s), "%zu", SIZE_MAX);
    ck_assert_uint_eq(units_size(s), SIZE_MAX);
}
END_TEST

START_TEST(test_count)
{
    ck_assert_uint_eq(units_count("100000"), 100000);
    ck_assert_uint_eq(units_count("64k"), 0);
    ck_assert_uint_eq(units_count("12abc"), 0);
    ck_assert_uint_eq(units_count("-1"), 0);
    ck_assert_uint_eq(units_count(""), 0);
    ck_assert_str_eq(units_why("12abc", 0), "malformed");
    ck_assert_uint_eq(units_count("99999999999999999999999"), 0);
    ck_assert_str_eq(units_why("99999999999999999999999", 0), "too large");
}
END_TEST

static Suite *
units_suite(void)
{
    Suite *s = suite_create("units");
    TCase *tc = tcase_create("units");

    tcase_add_test(tc, test_duration);
    tcase_add_test(tc, test_size);
    tcase_add_test(tc, test_count);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(units_suite());
}
