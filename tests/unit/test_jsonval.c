/*
 * Unit tests of actions/jsonval.c: strings from bytes that are not all
 * UTF-8, a message as the object json_format_msg writes, compact output.
 */
#include "actions/jsonval.h"
#include "engine/json.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* j written by jsonval_put_new, as a C string the caller frees. */
static char *
put(json_t *j)
{
    struct buf b = BUF_INIT;
    char *s;

    jsonval_put_new(&b, j);
    s = strdup(buf_str(&b));
    buf_free(&b);
    return s;
}

START_TEST(test_text)
{
    char *s;

    /* a stray byte and NUL become U+FFFD; UTF-8 stays as it is */
    s = put(jsonval_text("a\xff"
                         "b\0c \xc3\xa9\"\\\n",
                         11));
    ck_assert_str_eq(s, "\"a\xef\xbf\xbd"
                        "b\xef\xbf\xbd"
                        "c \xc3\xa9\\\"\\\\\\n\"");
    free(s);
    s = put(jsonval_text(NULL, 0));
    ck_assert_str_eq(s, "\"\"");
    free(s);
    s = put(jsonval_str(NULL));
    ck_assert_str_eq(s, "null");
    free(s);
    s = put(jsonval_str("web1"));
    ck_assert_str_eq(s, "\"web1\"");
    free(s);
}
END_TEST

START_TEST(test_msg_as_json_format_msg)
{
    struct msg *m = msg_new();
    struct buf direct = BUF_INIT;
    char *s;

    /* the same text as the per-message writer when every value is UTF-8 without NUL */
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_MESSAGE, "a \"q\" \\ \n\t \xc3\xa9", 13);
    msg_set(m, nv_intern_str("usr.name"), "", 0);
    msg_tag_set(m, tag_intern("t1", 2));
    json_format_msg(m, &direct);
    s = put(jsonval_msg(m));
    ck_assert_str_eq(s, buf_str(&direct));
    free(s);
    buf_free(&direct);

    /* what is not UTF-8 is U+FFFD, NUL stays \u0000, control bytes \u00XX */
    msg_set(m, NV_MESSAGE, "x\xff\0\x01", 4);
    s = put(jsonval_msg(m));
    ck_assert_str_eq(s, "{\"PROGRAM\":\"sshd\",\"MESSAGE\":\"x\xef\xbf\xbd\\u0000\\u0001\","
                        "\"usr.name\":\"\",\"TAGS\":\"t1\"}");
    free(s);
    msg_unref(m);
}
END_TEST

START_TEST(test_put_order_and_null)
{
    char *s;
    struct buf b = BUF_INIT;

    /* members in the order they were set, no blanks */
    s = put(json_pack("{s:i, s:s, s:[b, n]}", "z", 1, "a", "x", "m", 1));
    ck_assert_str_eq(s, "{\"z\":1,\"a\":\"x\",\"m\":[true,null]}");
    free(s);
    /* a failed allocation (NULL) is written as null after what was there */
    buf_puts(&b, "data:");
    jsonval_put_new(&b, NULL);
    ck_assert_str_eq(buf_str(&b), "data:null");
    buf_free(&b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("jsonval");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_text);
    tcase_add_test(tc, test_msg_as_json_format_msg);
    tcase_add_test(tc, test_put_order_and_null);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
