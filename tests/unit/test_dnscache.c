/*
 * Unit tests: agent/dnscache, the reverse DNS cache corrald installs as the
 * engine's resolver, on a real libuv loop.  127.0.0.1 is "localhost" in
 * /etc/hosts.  The tests wait for lookups by running the loop until the
 * cache's in-flight counter drops, never for a time.  The eviction test
 * also asks about 127.0.0.2, whose answer (a name or none) does not matter.
 */
#include <arpa/inet.h>
#include <check.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "agent/net/dnscache.h"
#include "engine/msg.h"
#include "engine/resolver.h"
#include "engine/template.h"
#include "tests/unit/unit_run.h"

static uv_loop_t loop;

static struct dnscache_stats
stats(const struct dnscache *c)
{
    struct dnscache_stats st;

    dnscache_stats(c, &st);
    return st;
}

/* Runs the loop until no lookup is in flight. */
static void
settle(const struct dnscache *c)
{
    while (stats(c).inflight) uv_run(&loop, UV_RUN_ONCE);
}

/* Frees the cache and closes the loop, which must then have nothing left. */
static void
finish(struct dnscache *c)
{
    resolver_set(NULL, NULL);
    dnscache_free(c);
    while (uv_run(&loop, UV_RUN_ONCE)) continue;
    ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static void
expand(const char *src, char *out, size_t outlen)
{
    struct buf b = BUF_INIT, err = BUF_INIT;
    struct msg *m = msg_new();
    struct template_env env;
    struct template *t = template_compile_str(src, &err);

    ck_assert_msg(t != NULL, "%s", buf_str(&err));
    template_env_single(&env, &m);
    template_eval(t, &env, &b);
    ck_assert_uint_lt(b.len, outlen);
    memcpy(out, buf_str(&b), b.len + 1);
    template_free(t);
    msg_unref(m);
    buf_free(&b);
    buf_free(&err);
}

static int
ask(struct dnscache *c, const char *ip, char *host, size_t hostlen)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    ck_assert_int_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
    return dnscache_lookup(c, (struct sockaddr *)&sin, sizeof(sin), host, hostlen);
}

/* The first ask gives the address (as when there is no name), a later one the name. */
START_TEST(test_template_answers)
{
    struct dnscache *c;
    char out[256];

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    c = dnscache_new(&loop, NULL);
    resolver_set(dnscache_lookup, c);

    expand("$(dns-resolve-ip 127.0.0.1)", out, sizeof(out));
    ck_assert_str_eq(out, "127.0.0.1");
    ck_assert_uint_eq(stats(c).misses, 1);
    ck_assert_uint_eq(stats(c).lookups, 1);
    /* a second ask while the lookup runs starts no other */
    expand("$(dns-resolve-ip 127.0.0.1)", out, sizeof(out));
    ck_assert_str_eq(out, "127.0.0.1");
    ck_assert_uint_eq(stats(c).lookups, 1);
    settle(c);

    expand("$(dns-resolve-ip 127.0.0.1)", out, sizeof(out));
    ck_assert_str_eq(out, "localhost");
    expand("$(dns-resolve-ip --use-fqdn yes 127.0.0.1)", out, sizeof(out));
    ck_assert_str_eq(out, "localhost");
    ck_assert_uint_eq(stats(c).hits, 3);
    ck_assert_uint_eq(stats(c).lookups, 1);
    /* options and bad addresses behave as before */
    expand("$(dns-resolve-ip --use-dns no 127.0.0.1)", out, sizeof(out));
    ck_assert_str_eq(out, "127.0.0.1");
    expand("$(dns-resolve-ip not-an-address)", out, sizeof(out));
    ck_assert_str_eq(out, "");
    ck_assert_uint_eq(stats(c).entries, 1);
    finish(c);
}
END_TEST

/* IPv6 addresses are cached as IPv4 ones are; other families and short addresses are no key. */
START_TEST(test_families)
{
    struct sockaddr_in6 sin6;
    struct sockaddr_in sin;
    struct sockaddr_un sun;
    struct dnscache *c;
    struct dnscache_stats st;
    char host[256];

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    c = dnscache_new(&loop, NULL);
    memset(&sin6, 0, sizeof(sin6));
    sin6.sin6_family = AF_INET6;
    ck_assert_int_eq(inet_pton(AF_INET6, "::1", &sin6.sin6_addr), 1);
    ck_assert_int_eq(dnscache_lookup(c, (struct sockaddr *)&sin6, sizeof(sin6), host, sizeof(host)),
                     -1);
    ck_assert_uint_eq(stats(c).lookups, 1);
    ck_assert_uint_eq(stats(c).entries, 1);
    settle(c);
    /* answered from the cache now: a name, or the failure remembered (no name for ::1 here) */
    st = stats(c);
    if (dnscache_lookup(c, (struct sockaddr *)&sin6, sizeof(sin6), host, sizeof(host)) < 0)
        ck_assert_uint_eq(st.failures, 1);
    ck_assert_uint_eq(stats(c).hits, 1);
    ck_assert_uint_eq(stats(c).lookups, 1);

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    ck_assert_int_eq(dnscache_lookup(c, (struct sockaddr *)&sun, sizeof(sun), host, sizeof(host)),
                     -1);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    ck_assert_int_eq(dnscache_lookup(c, (struct sockaddr *)&sin, 4, host, sizeof(host)), -1);
    ck_assert_uint_eq(stats(c).misses, 1); /* neither was a miss: no key at all */
    ck_assert_uint_eq(stats(c).entries, 1);
    finish(c);
}
END_TEST

/* More lookups than max_inflight are refused and not remembered. */
START_TEST(test_inflight_bound)
{
    struct dnscache_opts o = {.max_inflight = 1};
    struct dnscache *c;
    char host[256];

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    c = dnscache_new(&loop, &o);
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), -1);
    ck_assert_int_eq(ask(c, "127.0.0.2", host, sizeof(host)), -1);
    ck_assert_uint_eq(stats(c).refused, 1);
    ck_assert_uint_eq(stats(c).lookups, 1);
    ck_assert_uint_eq(stats(c).entries, 1);
    settle(c);
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), 0);
    ck_assert_str_eq(host, "localhost");
    /* a name longer than the caller's buffer is no answer */
    ck_assert_int_eq(ask(c, "127.0.0.1", host, 4), -1);
    finish(c);
}
END_TEST

/* The oldest entry goes at max_entries, also while its lookup runs. */
START_TEST(test_eviction)
{
    struct dnscache_opts o = {.max_entries = 1};
    struct dnscache *c;
    char host[256];

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    c = dnscache_new(&loop, &o);
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), -1);
    ck_assert_int_eq(ask(c, "127.0.0.2", host, sizeof(host)), -1); /* evicts it in flight */
    ck_assert_uint_eq(stats(c).evicted, 1);
    ck_assert_uint_eq(stats(c).entries, 1);
    ck_assert_uint_eq(stats(c).inflight, 1);
    settle(c);
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), -1); /* gone: a miss again */
    ck_assert_uint_eq(stats(c).misses, 3);
    ck_assert_uint_eq(stats(c).evicted, 2);
    finish(c); /* frees with a lookup in flight */
}
END_TEST

/* An expired name is still given while it is looked up again. */
START_TEST(test_expiry)
{
    struct dnscache_opts o = {.ttl_ms = 1};
    struct dnscache *c;
    char host[256];
    uint64_t t;

    ck_assert_int_eq(uv_loop_init(&loop), 0);
    c = dnscache_new(&loop, &o);
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), -1);
    settle(c);
    /* let the loop's clock pass the entry's life (it counts milliseconds) */
    t = uv_now(&loop);
    while (uv_now(&loop) <= t + 1) uv_update_time(&loop);
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), 0);
    ck_assert_str_eq(host, "localhost");
    ck_assert_uint_eq(stats(c).lookups, 2);
    settle(c);
    /* refreshed (it may have expired again since: a millisecond is short) */
    ck_assert_int_eq(ask(c, "127.0.0.1", host, sizeof(host)), 0);
    ck_assert_str_eq(host, "localhost");
    ck_assert_uint_ge(stats(c).lookups, 2);
    finish(c);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("dnscache");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60); /* a lookup of 127.0.0.2 may ask a slow DNS server */
    tcase_add_test(tc, test_template_answers);
    tcase_add_test(tc, test_inflight_bound);
    tcase_add_test(tc, test_families);
    tcase_add_test(tc, test_eviction);
    tcase_add_test(tc, test_expiry);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
