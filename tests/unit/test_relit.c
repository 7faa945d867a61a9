/*
 * Unit tests: the required literal of a regular expression (engine/relit):
 * what is extracted from common shapes, what gives none, and, over a set
 * of patterns and subjects, that every subject PCRE2 matches holds the
 * literal (the prefilter never hides a match).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <check.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "engine/relit.h"
#include "tests/unit/unit_run.h"

static const char *
lit(const char *re)
{
    static char out[65];
    size_t n = relit_required(re, strlen(re), out, 64);

    out[n] = '\0';
    return out;
}

START_TEST(test_extracted)
{
    ck_assert_str_eq(lit("foo.*bar"), "foo");
    ck_assert_str_eq(lit("fo.*barbaz"), "barbaz");
    ck_assert_str_eq(lit("(abc|def)xyz"), "xyz");
    ck_assert_str_eq(lit("colou?r"), "colo");
    ck_assert_str_eq(lit("\\.php$"), ".php");
    ck_assert_str_eq(lit("^[a-z]+\\d{3}Admin"), "admin");
    ck_assert_str_eq(lit("x{0,2}yz"), "yz");
    ck_assert_str_eq(lit("abb{2}c"), "abb");
    ck_assert_str_eq(lit("ab*cd"), "cd");
    ck_assert_str_eq(lit("(?i)Password"), "password");
    ck_assert_str_eq(lit("[)|(]secret"), "secret");
    ck_assert_str_eq(lit("\\bwget\\s+http"), "wget");
    ck_assert_str_eq(lit("a{,3}bcd"), "bcd"); /* "{,3}": a quantifier in PCRE2 10.43 */
    /* none */
    ck_assert_str_eq(lit("abc|def"), "");
    ck_assert_str_eq(lit("(?x) a b c"), "");
    ck_assert_str_eq(lit("\\x41BCDEF"), "");
    ck_assert_str_eq(lit("ab\\Qc|d\\E"), "");
    ck_assert_str_eq(lit("abc(\\Qx)\\E)|zzz"), "");
    ck_assert_str_eq(lit("(a)\\1bcd"), "");
    ck_assert_str_eq(lit("abc)"), "");
    ck_assert_str_eq(lit("abc("), "");
    ck_assert_str_eq(lit("abc\\"), "");
    ck_assert_str_eq(lit("[abc]"), "");
    ck_assert_str_eq(lit("caf\xc3\xa9?"), "caf");
    ck_assert_str_eq(lit("n[[:a]|"), "");            /* "[:a]" is no POSIX class: then '|' */
    ck_assert_str_eq(lit("[[:alpha:]]+abc"), "abc"); /* and this one is */
    /* "[:[:]" is no POSIX class either (a "[:" before its ":]"): the class ends at that ']' */
    ck_assert_str_eq(lit("[[:[:]?[]:]"), "");
    ck_assert_str_eq(lit("[[:[:]x]yz"), "x]yz");
    ck_assert_str_eq(lit("[[:a\\]:]]bc"), "bc");
    ck_assert_str_eq(lit("abc[x"), "");
}
END_TEST

/* Every subject a pattern matches holds its literal, without regard to case. */
START_TEST(test_never_hides_a_match)
{
    static const char *const res[] = {
        "foo.*bar",  "colou?r",        "ab*cd",       "abb{2}c",    "x{0,2}yz", "(?i)PassWd",
        "\\.php$",   "[a-z]+\\d{3}ad", "(ab|cd)ef",   "a+b+c",      "ab?c?d",   "wget\\s+-O",
        "\\\\\\\\x", "a.b.c",          "(?s)a.*?bc",  "ab{0}cd",    "ab{1,}cd", "[]a]bc",
        "[^]a]bcd",  "x(?:y|z)+w",     "[[:[:]?[]:]", "[[:[:]x]yz",
    };
    static const char *const subjects[] = {
        "foobar", "FOOxBAR",  "color", "colour",   "acd",   "abbbcd", "abbc",   "yz",   "xxyz",
        "passwd", "PASSWD",   "a.php", "abc123ad", "abef",  "cdef",   "aabbc",  "ad",   "abd",
        "acd",    "wget  -O", "\\\\x", "axbxc",    "a\nbc", "acd",    "abbbcd", "abcd", "]bc",
        "abc",    "xbcd",     "xyw",   "xzyzw",    ":",     "[]yz",   "",
    };
    size_t i, j;

    for (i = 0; i < sizeof(res) / sizeof(*res); i++) {
        int err;
        PCRE2_SIZE off;
        pcre2_code *re =
            pcre2_compile((PCRE2_SPTR)res[i], PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
        pcre2_match_data *md;
        char l[65];
        size_t n = relit_required(res[i], strlen(res[i]), l, 64);

        ck_assert_msg(re != NULL, "%s does not compile", res[i]);
        md = pcre2_match_data_create_from_pattern(re, NULL);
        l[n] = '\0';
        for (j = 0; j < sizeof(subjects) / sizeof(*subjects); j++) {
            char low[64];
            size_t k;
            if (pcre2_match(re, (PCRE2_SPTR)subjects[j], strlen(subjects[j]), 0, 0, md, NULL) < 0)
                continue;
            for (k = 0; subjects[j][k] && k < sizeof(low) - 1; k++)
                low[k] = (char)(subjects[j][k] >= 'A' && subjects[j][k] <= 'Z' ? subjects[j][k] + 32
                                                                               : subjects[j][k]);
            low[k] = '\0';
            ck_assert_msg(strstr(low, l) != NULL, "%s matches %s without its literal '%s'", res[i],
                          subjects[j], l);
        }
        pcre2_match_data_free(md);
        pcre2_code_free(re);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("relit");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_extracted);
    tcase_add_test(tc, test_never_hides_a_match);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
