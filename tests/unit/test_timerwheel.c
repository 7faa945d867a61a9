/*
 * Unit tests: the timer wheel.  A randomized run against a brute-force model
 * checks that every timer fires exactly once, at the right time, in order of
 * expiry and arming, whatever the mix of arming, re-arming, cancelling and
 * time jumps (small steps and jumps of days).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/timerwheel.h"
#include "tests/unit/unit_run.h"

#define N 2000

struct item {
    struct tw_timer t; /* first member */
    int id;
    bool armed;       /* model: armed and not yet fired */
    uint64_t expires; /* model */
    uint64_t seq;     /* model: arming order */
};

static struct item items[N];
static uint64_t fired_at[N * 8], fired_id[N * 8];
static size_t nfired;
static uint64_t cur_now;
static struct tw *wheel;
static bool expiring_all; /* tw_expire_all fires timers before their time, by design */

static void
on_fire(struct tw_timer *t, void *arg)
{
    struct item *it = (struct item *)t;

    (void)arg;
    ck_assert_msg(it->armed, "timer %d fired but was not armed", it->id);
    ck_assert_msg(expiring_all || it->expires <= tw_now(wheel),
                  "timer %d fired early: due %llu, now %llu", it->id,
                  (unsigned long long)it->expires, (unsigned long long)tw_now(wheel));
    it->armed = false;
    fired_at[nfired] = it->expires;
    fired_id[nfired] = (uint64_t)it->id;
    nfired++;
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

START_TEST(test_randomized)
{
    uint64_t seq = 0;
    size_t i, round;

    cur_now = 1764756000000ULL; /* 2025-12-03, in ms */
    wheel = tw_new(cur_now);
    for (i = 0; i < N; i++) {
        tw_timer_init(&items[i].t);
        items[i].id = (int)i;
    }
    for (round = 0; round < 400; round++) {
        size_t before = nfired, k;
        uint64_t to;
        /* arm, re-arm or cancel some timers */
        for (k = 0; k < 40; k++) {
            struct item *it = &items[rnd() % N];
            uint64_t r = rnd() % 100, delta;
            if (r < 10) {
                tw_cancel(wheel, &it->t);
                it->armed = false;
                continue;
            }
            delta = r < 50 ? rnd() % 2000 : r < 80 ? rnd() % 600000 : rnd() % 86400000ULL * 3;
            if (r == 99) delta = 0; /* already due */
            it->expires = cur_now + delta;
            it->armed = true;
            it->seq = seq++;
            tw_arm(wheel, &it->t, it->expires);
        }
        /* advancing to before tw_quiet_until() fires nothing: it is at most the earliest
         * expiry (now, with one due) */
        {
            uint64_t q = tw_quiet_until(wheel), first = UINT64_MAX;
            for (i = 0; i < N; i++)
                if (items[i].armed && items[i].expires < first) first = items[i].expires;
            ck_assert_uint_le(q, first < cur_now ? cur_now : first);
            if (round % 3 == 1 && q != UINT64_MAX && q > cur_now + 1) {
                tw_advance(wheel, q - 1, on_fire, NULL);
                ck_assert_uint_eq(nfired, before);
                cur_now = q - 1;
            }
        }
        /* advance by a small step, a large step, or not at all */
        to = cur_now + (round % 7 == 0 ? rnd() % 86400000ULL : rnd() % 5000);
        tw_advance(wheel, to, on_fire, NULL);
        cur_now = to;
        ck_assert_uint_eq(tw_now(wheel), cur_now);
        /* everything due has fired, in (expires, seq) order */
        for (i = 0; i < N; i++)
            ck_assert_msg(!(items[i].armed && items[i].expires <= cur_now),
                          "timer %zu due at %llu did not fire by %llu", i,
                          (unsigned long long)items[i].expires, (unsigned long long)cur_now);
        for (i = before + 1; i < nfired; i++) {
            ck_assert_uint_le(fired_at[i - 1], fired_at[i]);
            if (fired_at[i - 1] == fired_at[i])
                ck_assert_uint_lt(items[fired_id[i - 1]].seq, items[fired_id[i]].seq);
        }
        {
            size_t armed = 0;
            for (i = 0; i < N; i++) armed += items[i].armed;
            ck_assert_uint_eq(tw_count(wheel), armed);
        }
        nfired = 0;
    }
    /* the remaining timers fire in order with expire_all */
    expiring_all = true;
    tw_expire_all(wheel, on_fire, NULL);
    expiring_all = false;
    for (i = 0; i < N; i++) ck_assert(!items[i].armed);
    for (i = 1; i < nfired; i++) ck_assert_uint_le(fired_at[i - 1], fired_at[i]);
    ck_assert_uint_eq(tw_count(wheel), 0);
    tw_free(wheel);
}
END_TEST

START_TEST(test_next_expiry_and_far_future)
{
    struct item a, b;

    wheel = tw_new(1000);
    tw_timer_init(&a.t);
    tw_timer_init(&b.t);
    ck_assert_uint_eq(tw_next_expiry(wheel), UINT64_MAX);
    ck_assert_uint_eq(tw_quiet_until(wheel), UINT64_MAX);
    a.armed = b.armed = true;
    a.id = 0;
    b.id = 1;
    a.expires = 1000 + 10ULL * 365 * 86400000; /* ten years ahead */
    b.expires = 5000;
    tw_arm(wheel, &a.t, a.expires);
    tw_arm(wheel, &b.t, b.expires);
    ck_assert_uint_eq(tw_next_expiry(wheel), 5000);
    nfired = 0;
    tw_advance(wheel, 4999, on_fire, NULL);
    ck_assert_uint_eq(nfired, 0);
    tw_advance(wheel, 5000, on_fire, NULL);
    ck_assert_uint_eq(nfired, 1);
    tw_advance(wheel, a.expires - 1, on_fire, NULL);
    ck_assert_uint_eq(nfired, 1);
    tw_advance(wheel, a.expires, on_fire, NULL);
    ck_assert_uint_eq(nfired, 2);
    tw_free(wheel);
}
END_TEST

static size_t counted;

static void
count_fire(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    counted++;
}

START_TEST(test_million_timers_fire)
{
    size_t n = 1000000, i;
    struct tw_timer *t = calloc(n, sizeof(*t));
    uint64_t now = 1764756000000ULL;

    wheel = tw_new(now);
    for (i = 0; i < n; i++) {
        tw_timer_init(&t[i]);
        tw_arm(wheel, &t[i], now + 1000 + (i * 7919) % 3600000);
    }
    for (i = 0; i < n; i += 3) tw_arm(wheel, &t[i], now + 7200000);
    ck_assert_uint_eq(tw_count(wheel), n);
    counted = 0;
    tw_advance(wheel, now + 3600000 + 1000, count_fire, NULL);
    ck_assert_uint_eq(counted, n - (n + 2) / 3);
    tw_advance(wheel, now + 7200000, count_fire, NULL);
    ck_assert_uint_eq(counted, n);
    ck_assert_uint_eq(tw_count(wheel), 0);
    tw_free(wheel);
    free(t);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("timerwheel");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_randomized);
    tcase_add_test(tc, test_next_expiry_and_far_future);
    tcase_add_test(tc, test_million_timers_fire);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
