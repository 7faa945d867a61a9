/*
 * Unit tests of engine/strlist.c: items separated by commas, spaces or both.
 */
#include "engine/strlist.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static void
check_split(const char *s, size_t want_n, const char *const *want)
{
    char **list = (char **)1;
    size_t n = 99, i;

    strlist_split(s, &list, &n);
    ck_assert_uint_eq(n, want_n);
    if (!n) ck_assert_ptr_null(list);
    for (i = 0; i < n; i++) {
        ck_assert_str_eq(list[i], want[i]);
        free(list[i]);
    }
    free(list);
}

START_TEST(test_split)
{
    static const char *const abc[] = {"a", "bb", "c"};

    check_split("a,bb,c", 3, abc);
    check_split("a, bb c", 3, abc);
    check_split(" ,a,,bb  ,c, ", 3, abc);
    check_split("", 0, NULL);
    check_split(" , ,", 0, NULL);
    check_split(NULL, 0, NULL);
}
END_TEST

START_TEST(test_next)
{
    const char *pos = "web1, db", *item;
    size_t len;

    ck_assert(strlist_next(&pos, &item, &len));
    ck_assert(len == 4 && strncmp(item, "web1", 4) == 0);
    ck_assert(strlist_next(&pos, &item, &len));
    ck_assert(len == 2 && strncmp(item, "db", 2) == 0);
    ck_assert(!strlist_next(&pos, &item, &len));
    ck_assert(!strlist_next(&pos, &item, &len)); /* and stays at the end */
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("strlist");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_next);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
