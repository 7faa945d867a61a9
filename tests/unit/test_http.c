/*
 * test_http: the pieces of the HTTP listener that decide what a hostile
 * request or log message can do: the HTML escaper of the status page
 * (agent/web/html.c) against markup, attribute breaking and control bytes; the
 * bearer-token check and the JSON body parser every API write passes
 * (agent/web/http.c); and <stats api-token-file> as the configuration loader
 * reads it (agent/conf/conf.c): a token file anyone may read is refused with
 * file:line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "agent/conf/conf.h"
#include "agent/web/html.h"
#include "agent/web/http.h"
#include "engine/buf.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

static const char *
esc(const char *s, size_t len)
{
    static struct buf out = BUF_INIT;

    buf_reset(&out);
    html_escape(&out, s, len);
    return buf_str(&out);
}

#define ESC(s) esc(s, strlen(s))

START_TEST(test_escape_markup)
{
    ck_assert_str_eq(ESC("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
    ck_assert_str_eq(ESC("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
    ck_assert_str_eq(ESC("a&b"), "a&amp;b");
    /* an entity in the input stays text, not a character */
    ck_assert_str_eq(ESC("&lt;b&gt;"), "&amp;lt;b&amp;gt;");
    ck_assert_str_eq(ESC("<!-- x -->"), "&lt;!-- x --&gt;");
    ck_assert_str_eq(ESC("]]></svg><svg onload=alert(1)>"),
                     "]]&gt;&lt;/svg&gt;&lt;svg onload=alert(1)&gt;");
}
END_TEST

/* quoted attribute values cannot be left: both quotes are entities */
START_TEST(test_escape_attribute)
{
    ck_assert_str_eq(ESC("\" onmouseover=\"alert(1)"), "&quot; onmouseover=&quot;alert(1)");
    ck_assert_str_eq(ESC("' onfocus='x"), "&#39; onfocus=&#39;x");
}
END_TEST

START_TEST(test_escape_bytes)
{
    /* NUL and control bytes become U+FFFD; tab, newline, CR and UTF-8 pass */
    ck_assert_str_eq(esc("a\0b", 3), "a&#xFFFD;b");
    ck_assert_str_eq(ESC("\x01\x1b[31m\x7f"), "&#xFFFD;&#xFFFD;[31m&#xFFFD;");
    ck_assert_str_eq(ESC("t\tn\nr\r"), "t\tn\nr\r");
    ck_assert_str_eq(ESC("h\xc3\xa9llo \xe2\x9c\x93"), "h\xc3\xa9llo \xe2\x9c\x93");
    ck_assert_str_eq(ESC(""), "");
    ck_assert_str_eq(ESC("plain text"), "plain text");
}
END_TEST

START_TEST(test_puts_null)
{
    struct buf out = BUF_INIT;

    html_puts(&out, NULL);
    ck_assert_uint_eq(out.len, 0);
    html_puts(&out, "<x>");
    ck_assert_str_eq(buf_str(&out), "&lt;x&gt;");
    buf_free(&out);
}
END_TEST

/* a chart's title is escaped too, and the chart is one <svg> element */
START_TEST(test_chart)
{
    struct buf out = BUF_INIT;
    uint64_t v[4] = {0, 5, 10, 0};

    const char *x[2] = {"-4 min", "<now>"};

    html_chart(&out, "</title><script>x</script>", v, 4, 100, 40, x, 2);
    ck_assert_ptr_null(strstr(buf_str(&out), "<script"));
    ck_assert_ptr_null(strstr(buf_str(&out), "<now>"));
    ck_assert_ptr_nonnull(strstr(buf_str(&out), ">&lt;now&gt;</text>"));
    /* the scale: the largest value and 0 on the y axis */
    ck_assert_ptr_nonnull(strstr(buf_str(&out), "class=\"ymax\""));
    ck_assert_ptr_nonnull(strstr(buf_str(&out), ">10</text>"));
    ck_assert_ptr_nonnull(strstr(buf_str(&out), ">0</text>"));
    ck_assert_ptr_nonnull(strstr(buf_str(&out), "&lt;script&gt;"));
    ck_assert_ptr_nonnull(strstr(buf_str(&out), "(largest: 10)"));
    ck_assert(strncmp(buf_str(&out), "<svg", 4) == 0);
    ck_assert(out.len > 6 && strcmp(buf_str(&out) + out.len - 6, "</svg>") == 0);
    buf_free(&out);
}
END_TEST

/* a query value: unreserved bytes as they are, every other byte %XX */
START_TEST(test_url_param)
{
    struct buf out = BUF_INIT;

    html_url_param(&out, "am/ab_c-1.~ \"&<>=%\xc3\xa9");
    ck_assert_str_eq(buf_str(&out), "am%2Fab_c-1.~%20%22%26%3C%3E%3D%25%C3%A9");
    buf_free(&out);
}
END_TEST

START_TEST(test_token)
{
    const char *tok = "0123456789abcdefXYZ";

    ck_assert_int_eq(http_check_token(NULL, "Bearer x"), HTTP_AUTH_DISABLED);
    ck_assert_int_eq(http_check_token("", "Bearer "), HTTP_AUTH_DISABLED);
    ck_assert_int_eq(http_check_token(tok, NULL), HTTP_AUTH_MISSING);
    ck_assert_int_eq(http_check_token(tok, "Basic 0123456789abcdefXYZ"), HTTP_AUTH_MISSING);
    ck_assert_int_eq(http_check_token(tok, "0123456789abcdefXYZ"), HTTP_AUTH_MISSING);
    ck_assert_int_eq(http_check_token(tok, "Bearer 0123456789abcdefXYZ"), HTTP_AUTH_OK);
    ck_assert_int_eq(http_check_token(tok, "bearer 0123456789abcdefXYZ"), HTTP_AUTH_OK);
    ck_assert_int_eq(http_check_token(tok, "Bearer 0123456789abcdefXY"), HTTP_AUTH_WRONG);
    ck_assert_int_eq(http_check_token(tok, "Bearer 0123456789abcdefXYZZ"), HTTP_AUTH_WRONG);
    ck_assert_int_eq(http_check_token(tok, "Bearer 0123456789abcdefXYz"), HTTP_AUTH_WRONG);
    ck_assert_int_eq(http_check_token(tok, "Bearer "), HTTP_AUTH_WRONG);
    ck_assert_int_eq(http_check_token(tok, "Bearer"), HTTP_AUTH_MISSING);
}
END_TEST

START_TEST(test_parse_json)
{
    struct buf err = BUF_INIT;
    json_t *v;

    v = http_parse_json("{\"matchers\":[\"HOST=web1\"]}", 26, &err);
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_array(json_object_get(v, "matchers")));
    json_decref(v);
    ck_assert_ptr_null(http_parse_json("{\"a\":", 5, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "not JSON: line 1 column"));
    buf_reset(&err);
    ck_assert_ptr_null(http_parse_json("", 0, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "empty"));
    buf_reset(&err);
    /* a key twice is ambiguous: refused */
    ck_assert_ptr_null(http_parse_json("{\"a\":1,\"a\":2}", 13, &err));
    buf_reset(&err);
    /* only the given bytes count: what follows is not read */
    v = http_parse_json("[1]garbage", 3, &err);
    ck_assert_ptr_nonnull(v);
    json_decref(v);
    ck_assert_ptr_null(http_parse_json("[1] [2]", 7, &err));
    buf_free(&err);
}
END_TEST

/* Loads <stats listen=... api-token-file=TOKEN/> (the stats element on line 3), with empty rules.
 */
static struct conf *
load_token(const char *dir, const char *token_file, struct buf *err)
{
    char file[300];
    struct buf text = BUF_INIT;
    struct conf *c;

    snprintf(file, sizeof(file), "%s/rules.xml", dir);
    ul_write_file(file, "<patterndb version=\"4\" pub_date=\"2024-01-01\"></patterndb>\n");
    snprintf(file, sizeof(file), "%s/corrald.conf", dir);
    buf_printf(
        &text,
        "<?xml version=\"1.0\"?>\n<corrald>\n"
        "<stats listen=\"127.0.0.1:0\" api-token-file=\"%s\"/>\n<rules path=\"%s/rules.xml\"/>"
        "</corrald>\n",
        token_file, dir);
    ul_write_file(file, buf_str(&text));
    buf_free(&text);
    c = conf_load(file, ul_schema_path(), err);
    return c;
}

START_TEST(test_token_file)
{
    char dir[] = "/tmp/corral-test-http-XXXXXX", tok[300], cmd[400];
    struct buf err = BUF_INIT;
    struct conf *c;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(tok, sizeof(tok), "%s/token", dir);

    /* one line, the final newline not part of it */
    ul_write_file(tok, "s3cret-token-0123456789\n");
    ck_assert_int_eq(chmod(tok, 0600), 0);
    c = load_token(dir, tok, &err);
    ck_assert_msg(c != NULL, "%s", buf_str(&err));
    ck_assert_str_eq(c->stats_api_token, "s3cret-token-0123456789");
    ck_assert_str_eq(c->stats_api_token_file, tok);
    conf_free(c);

    /* readable by everyone: refused, with where it is configured */
    ck_assert_int_eq(chmod(tok, 0644), 0);
    buf_reset(&err);
    ck_assert_ptr_null(load_token(dir, tok, &err));
    ck_assert_msg(strstr(buf_str(&err), "corrald.conf:3: api-token-file ") != NULL, "%s",
                  buf_str(&err));
    ck_assert_msg(strstr(buf_str(&err), "readable by everyone") != NULL, "%s", buf_str(&err));

    /* too short, two lines, missing, a directory */
    ul_write_file(tok, "short\n");
    ck_assert_int_eq(chmod(tok, 0600), 0);
    buf_reset(&err);
    ck_assert_ptr_null(load_token(dir, tok, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "at least 16 characters"));
    ul_write_file(tok, "0123456789abcdef\n0123456789abcdef\n");
    buf_reset(&err);
    ck_assert_ptr_null(load_token(dir, tok, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "one line"));
    buf_reset(&err);
    ck_assert_ptr_null(load_token(dir, "/nonexistent/token", &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "corrald.conf:3: api-token-file /nonexistent"));
    buf_reset(&err);
    ck_assert_ptr_null(load_token(dir, dir, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "corrald.conf:3: "));

    buf_free(&err);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A listener that cannot be: no http, and the reason with the address. */
START_TEST(test_open_refused)
{
    struct buf err = BUF_INIT;
    uv_loop_t loop;
    char addr[64];
    int port, fd;

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ck_assert_ptr_null(http_open(&loop, "no-port-here", NULL, &err));
    ck_assert_msg(strncmp(buf_str(&err), "stats listener: ", 16) == 0, "%s", buf_str(&err));
    /* the port held by a listening socket of ours (SO_REUSEADDR does not share a listener) */
    fd = ul_reserve_port(SOCK_STREAM, &port);
    ck_assert_int_eq(listen(fd, 1), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    buf_reset(&err);
    ck_assert_ptr_null(http_open(&loop, addr, NULL, &err));
    ck_assert_msg(strstr(buf_str(&err), addr) && strstr(buf_str(&err), "in use"), "%s",
                  buf_str(&err));
    close(fd);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
}
END_TEST

static Suite *
http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("http");

    tcase_add_test(tc, test_escape_markup);
    tcase_add_test(tc, test_escape_attribute);
    tcase_add_test(tc, test_escape_bytes);
    tcase_add_test(tc, test_puts_null);
    tcase_add_test(tc, test_chart);
    tcase_add_test(tc, test_url_param);
    tcase_add_test(tc, test_token);
    tcase_add_test(tc, test_parse_json);
    tcase_add_test(tc, test_token_file);
    tcase_add_test(tc, test_open_refused);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(http_suite());
}
