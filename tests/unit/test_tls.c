/*
 * Unit tests of agent/tls.c's checks that need no peer: how allowed-names
 * patterns match certificate names (exact, any case; "*.example.com" as one
 * label only), and which private key files are refused for their mode.
 * The handshakes themselves are tested against real clients and servers in
 * tests/integration/inputs_tls.sh and outputs_tls.sh.
 */
#include "agent/tls.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(test_name_exact)
{
    ck_assert(tls_name_match("client1.example.com", "client1.example.com"));
    ck_assert(tls_name_match("client1.example.com", "CLIENT1.Example.COM"));
    ck_assert(!tls_name_match("client1.example.com", "client2.example.com"));
    ck_assert(!tls_name_match("client1.example.com", "client1.example.com.evil"));
    ck_assert(!tls_name_match("", ""));
    ck_assert(!tls_name_match("a", ""));
}
END_TEST

START_TEST(test_name_wildcard)
{
    ck_assert(tls_name_match("*.example.com", "a.example.com"));
    ck_assert(tls_name_match("*.example.com", "Web-1.EXAMPLE.com"));
    /* one label: not none, not two */
    ck_assert(!tls_name_match("*.example.com", "example.com"));
    ck_assert(!tls_name_match("*.example.com", ".example.com"));
    ck_assert(!tls_name_match("*.example.com", "a.b.example.com"));
    ck_assert(!tls_name_match("*.example.com", "a.example.org"));
    ck_assert(!tls_name_match("*.example.com", "aexample.com"));
    /* a wildcard in the certificate is not expanded: only the same pattern matches it */
    ck_assert(tls_name_match("*.example.com", "*.example.com"));
    ck_assert(!tls_name_match("a.example.com", "*.example.com"));
    /* a '*' elsewhere in a pattern is an ordinary character */
    ck_assert(!tls_name_match("a*.example.com", "ab.example.com"));
    ck_assert(!tls_name_match("*", "a"));
}
END_TEST

/* Writes a key-like file with mode and returns whether tls_key_read took it. */
static bool
key_taken(mode_t mode, char *why, size_t whylen)
{
    char path[] = "/tmp/test_tls.XXXXXX";
    int fd = mkstemp(path);
    struct buf err = BUF_INIT;
    size_t len = 0;
    char *data;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "-----BEGIN PRIVATE KEY-----\n", 28), 28);
    close(fd);
    ck_assert_int_eq(chmod(path, mode), 0);
    data = tls_key_read(path, &len, &err);
    snprintf(why, whylen, "%s", buf_str(&err));
    unlink(path);
    buf_free(&err);
    if (data) ck_assert_uint_eq(len, 28);
    free(data);
    return data != NULL;
}

START_TEST(test_key_modes)
{
    char why[512];

    ck_assert(key_taken(0600, why, sizeof(why)));
    ck_assert(key_taken(0400, why, sizeof(why)));
    ck_assert(key_taken(0640, why, sizeof(why)));
    ck_assert(key_taken(0440, why, sizeof(why)));
    ck_assert(!key_taken(0644, why, sizeof(why)));
    ck_assert_msg(strstr(why, "open to others (mode 0644)"), "%s", why);
    ck_assert(!key_taken(0604, why, sizeof(why)));
    ck_assert(!key_taken(0602, why, sizeof(why)));
    ck_assert(!key_taken(0601, why, sizeof(why)));
    ck_assert(!key_taken(0660, why, sizeof(why)));
    ck_assert_msg(strstr(why, "writable by its group (mode 0660)"), "%s", why);
}
END_TEST

START_TEST(test_key_not_regular)
{
    struct buf err = BUF_INIT;
    size_t len;

    ck_assert_ptr_null(tls_key_read("/tmp", &len, &err));
    ck_assert_msg(strstr(buf_str(&err), "not a regular file"), "%s", buf_str(&err));
    buf_reset(&err);
    ck_assert_ptr_null(tls_key_read("/nonexistent/key.pem", &len, &err));
    ck_assert_msg(strstr(buf_str(&err), "No such file"), "%s", buf_str(&err));
    buf_free(&err);
}
END_TEST

static Suite *
tls_suite(void)
{
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("tls");

    tcase_add_test(tc, test_name_exact);
    tcase_add_test(tc, test_name_wildcard);
    tcase_add_test(tc, test_key_modes);
    tcase_add_test(tc, test_key_not_regular);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(tls_suite());
}
