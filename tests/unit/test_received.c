/*
 * Unit tests: the normalisation of a received message (engine/received.c),
 * what both one engine (server.c) and corrald's workers (workers.c) apply.
 */
#include <check.h>
#include <string.h>

#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/received.h"
#include "engine/syslogfmt.h"
#include "tests/unit/unit_run.h"

static void
assert_value(const struct msg *m, nv_handle h, const char *want)
{
    size_t len = 0;
    const char *v = msg_get(m, h, &len);

    if (!want) {
        ck_assert_ptr_null(v);
        return;
    }
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert(memcmp(v, want, len) == 0);
}

static struct msg *
parsed(const char *line)
{
    struct msg *m = msg_new();

    syslogfmt_parse(m, line, strlen(line), NULL);
    return m;
}

/* A remote sender: SOURCEIP, and HOST only where the message names none. */
START_TEST(test_remote)
{
    /* the peer's length counts, not a NUL: workers.c points into a batch */
    struct received_from from = {"192.0.2.7xyz", 9, NULL, 0, "here"};
    struct msg *m = parsed("<13>Jan  1 00:00:00 named prog: hello");

    received_normalise(m, &from);
    assert_value(m, NV_SOURCEIP, "192.0.2.7");
    assert_value(m, NV_HOST, "named");
    assert_value(m, nv_intern_str(".tls.peer_name"), NULL);
    msg_unref(m);

    m = parsed("<13>hello");
    msg_set(m, NV_HOST, "", 0);
    received_normalise(m, &from);
    assert_value(m, NV_HOST, "192.0.2.7");
    msg_unref(m);
}
END_TEST

/* A local input: no SOURCEIP, this host for a message without HOST. */
START_TEST(test_local)
{
    struct received_from from = {NULL, 0, NULL, 0, "here"};
    struct msg *m = parsed("<13>hello");

    received_normalise(m, &from);
    assert_value(m, NV_SOURCEIP, NULL);
    assert_value(m, NV_HOST, "here");
    msg_unref(m);
}
END_TEST

/* A TLS client: its certificate's name in .tls.peer_name. */
START_TEST(test_tls_peer)
{
    struct received_from from = {"::1", 3, "client.example.orgZZ", 18, "here"};
    struct msg *m = parsed("<13>Jan  1 00:00:00 h p: x");

    received_normalise(m, &from);
    assert_value(m, nv_intern_str(".tls.peer_name"), "client.example.org");
    assert_value(m, NV_SOURCEIP, "::1");
    msg_unref(m);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("received");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_remote);
    tcase_add_test(tc, test_local);
    tcase_add_test(tc, test_tls_peer);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
