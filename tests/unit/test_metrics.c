/*
 * Unit tests: the metric table renderer (agent/core/metrics.c): headers, the
 * four ways a value is read (uint64_t field, double field, getters,
 * labelled series), metrics of an absent source left out, and label
 * values escaped as the Prometheus text format wants.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "agent/core/metrics.h"
#include "tests/unit/unit_run.h"

struct stats {
    uint64_t count;
    double seconds;
};

struct series {
    const char *name;
    uint64_t hits;
};

static uint64_t
get_answer(void *ctx)
{
    return *(const uint64_t *)ctx;
}

static double
get_third(void *ctx)
{
    (void)ctx;
    return 1.0 / 3.0;
}

static void
per_name(struct buf *out, const struct metrics_desc *d, void *ctx)
{
    static const struct series rows[] = {{"a", 1}, {"q\"u\\o\nte", 2}};
    size_t i;

    (void)ctx;
    for (i = 0; i < 2; i++)
        metrics_sample(out, d->name, "name", rows[i].name, metrics_field(d, &rows[i]));
}

enum { SRC_STATS, SRC_ABSENT, SRC_N };

static const struct metrics_desc table[] = {
    {"t_count_total", "counter", "A field.", SRC_STATS, .field = offsetof(struct stats, count)},
    {"t_gone", "gauge", "Of an absent source.", SRC_ABSENT, .get = get_answer},
    {"t_seconds", "gauge", "A double field.", SRC_STATS, .field = offsetof(struct stats, seconds),
     .decimals = 6},
    {"t_answer", "gauge", "A getter.", SRC_STATS, .get = get_answer},
    {"t_third", "gauge", "A double getter.", SRC_STATS, .getd = get_third, .decimals = 3},
    {"t_hits_total", "counter", "Per name.", SRC_STATS, .series = per_name,
     .field = offsetof(struct series, hits)},
};

START_TEST(test_render)
{
    struct stats st = {18446744073709551615ull, 0.25};
    uint64_t answer = 42;
    const void *src[SRC_N] = {&st, NULL};
    struct buf out = BUF_INIT;

    metrics_render(&out, table, sizeof(table) / sizeof(table[0]), src, &answer);
    ck_assert_str_eq(buf_str(&out), "# HELP t_count_total A field.\n"
                                    "# TYPE t_count_total counter\n"
                                    "t_count_total 18446744073709551615\n"
                                    "# HELP t_seconds A double field.\n"
                                    "# TYPE t_seconds gauge\n"
                                    "t_seconds 0.250000\n"
                                    "# HELP t_answer A getter.\n"
                                    "# TYPE t_answer gauge\n"
                                    "t_answer 42\n"
                                    "# HELP t_third A double getter.\n"
                                    "# TYPE t_third gauge\n"
                                    "t_third 0.333\n"
                                    "# HELP t_hits_total Per name.\n"
                                    "# TYPE t_hits_total counter\n"
                                    "t_hits_total{name=\"a\"} 1\n"
                                    "t_hits_total{name=\"q\\\"u\\\\o\\nte\"} 2\n");
    buf_free(&out);
}
END_TEST

START_TEST(test_absent_sources_only)
{
    const void *src[SRC_N] = {NULL, NULL};
    struct buf out = BUF_INIT;

    metrics_render(&out, table, sizeof(table) / sizeof(table[0]), src, NULL);
    ck_assert_uint_eq(out.len, 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_label_value)
{
    struct buf out = BUF_INIT;

    metrics_label_value(&out, "plain");
    metrics_label_value(&out, "|\\|\"|\n|");
    ck_assert_str_eq(buf_str(&out), "plain|\\\\|\\\"|\\n|");
    buf_free(&out);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_render);
    tcase_add_test(tc, test_absent_sources_only);
    tcase_add_test(tc, test_label_value);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
