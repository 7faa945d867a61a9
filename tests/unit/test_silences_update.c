/*
 * Unit tests: silences_update_json (agent/silences), Alertmanager's update
 * of a silence: in place, keeping the id, when the matchers are the same and
 * an active silence keeps its start or a pending one's start does not go
 * into the past; otherwise a new silence replaces it (a new id, starting now
 * at the earliest) and the old one is expired.  A member the request lacks
 * keeps the old value.  An unknown id, a bad request, max-silences and a
 * save that fails change nothing.
 */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alerting/silences.h"
#include "engine/durable.h"
#include "engine/labelmatch.h"
#include "engine/nv.h"
#include "tests/unit/unit_run.h"

#define T0  1796400000000ULL /* 2026-12-04T16:00:00Z */
#define SEC 1000ULL

static struct buf err = BUF_INIT;

static char *
add(struct silences *s, const char *text, uint64_t now)
{
    json_t *j = json_loads(text, 0, NULL);
    struct buf id = BUF_INIT;
    char *r = NULL;

    ck_assert_ptr_nonnull(j);
    buf_reset(&err);
    if (silences_add_json(s, j, now, &id, &err) == 0) r = strdup(buf_str(&id));
    json_decref(j);
    buf_free(&id);
    return r;
}

/* The (new) id, or NULL with the message in err. */
static char *
update(struct silences *s, const char *id, const char *text, uint64_t now)
{
    json_t *j = json_loads(text, 0, NULL);
    struct buf nid = BUF_INIT;
    char *r = NULL;

    ck_assert_ptr_nonnull(j);
    buf_reset(&err);
    if (silences_update_json(s, id, j, now, &nid, &err) == 0) r = strdup(buf_str(&nid));
    json_decref(j);
    buf_free(&nid);
    return r;
}

/* Member key of silence id (as silences_json lists it, expired ones too), as text. */
static char *
get(struct silences *s, const char *id, const char *key, uint64_t now)
{
    struct buf out = BUF_INIT;
    json_t *all, *e, *v;
    char *r = NULL;
    size_t i;

    silences_json(s, NULL, true, now, &out);
    all = json_loads(buf_str(&out), 0, NULL);
    json_array_foreach(all, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "id")), id) != 0) continue;
        v = strcmp(key, "state") == 0 ? json_object_get(json_object_get(e, "status"), "state")
                                      : json_object_get(e, key);
        r = strdup(json_string_value(v));
    }
    json_decref(all);
    buf_free(&out);
    return r;
}

static void
expect(struct silences *s, const char *id, const char *key, const char *want, uint64_t now)
{
    char *got = get(s, id, key, now);

    ck_assert_msg(got && strcmp(got, want) == 0, "%s %s: %s, not %s", id, key, got ? got : "(none)",
                  want);
    free(got);
}

static struct msg *
host(const char *h)
{
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, h, strlen(h));
    return m;
}

START_TEST(test_in_place)
{
    struct silences *s = silences_new(NULL, 86400, 100, T0);
    char *id = add(s,
                   "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\", \"createdBy\":\"me\","
                   " \"comment\":\"c1\"}",
                   T0);
    char *n;

    ck_assert_ptr_nonnull(id);
    /* active: a new end and comment in place; --duration from the start; the creator kept */
    n = update(s, id, "{\"duration\":\"3h\", \"comment\":\"c2\"}", T0 + 10 * SEC);
    ck_assert_str_eq(n, id);
    free(n);
    expect(s, id, "endsAt", "2026-12-04T19:00:00Z", T0 + 10 * SEC);
    expect(s, id, "comment", "c2", T0);
    expect(s, id, "createdBy", "me", T0);
    expect(s, id, "startsAt", "2026-12-04T16:00:00Z", T0);
    /* the same start sent back (amtool: whole seconds) and the same matchers: still in place */
    n = update(s, id,
               "{\"matchers\":[{\"name\":\"HOST\",\"value\":\"web1\",\"isRegex\":false,"
               "\"isEqual\":true}], \"startsAt\":\"2026-12-04T16:00:00Z\","
               " \"endsAt\":\"2026-12-04T20:00:00Z\"}",
               T0 + 20 * SEC);
    ck_assert_str_eq(n, id);
    free(n);
    expect(s, id, "endsAt", "2026-12-04T20:00:00Z", T0);
    ck_assert_uint_eq(silences_count(s), 1);
    /* refused, nothing changed: an end in the past, a bad matcher, an unknown id */
    ck_assert_ptr_null(update(s, id, "{\"endsAt\":\"2026-12-04T16:00:05Z\"}", T0 + 20 * SEC));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "in the past"));
    ck_assert_ptr_null(update(s, id, "{\"matchers\":[\"HOST=~\\\"(\\\"\"]}", T0 + 20 * SEC));
    ck_assert_ptr_null(update(s, "00000000-0000-4000-8000-000000000000", "{}", T0));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "no silence"));
    expect(s, id, "endsAt", "2026-12-04T20:00:00Z", T0);
    expect(s, id, "matchersText", "HOST=\"web1\"", T0);
    ck_assert_uint_eq(silences_count(s), 1);
    free(id);
    silences_free(s);
}
END_TEST

START_TEST(test_replaced)
{
    struct silences *s = silences_new(NULL, 86400, 100, T0);
    char *id =
        add(s, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\", \"comment\":\"c1\"}", T0);
    char *n, *n2;
    struct msg *web1 = host("web1"), *web2 = host("web2");

    /* new matchers: a new silence from now, the rest kept; the old one expired */
    n = update(s, id, "{\"matchers\":[\"HOST=web2\"]}", T0 + 60 * SEC);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_ne(n, id);
    expect(s, id, "state", "expired", T0 + 60 * SEC);
    expect(s, n, "state", "active", T0 + 60 * SEC);
    expect(s, n, "startsAt", "2026-12-04T16:01:00Z", T0);
    expect(s, n, "endsAt", "2026-12-04T17:00:00Z", T0);
    expect(s, n, "comment", "c1", T0);
    ck_assert_ptr_null(silences_match(s, web1, T0 + 61 * SEC));
    ck_assert_str_eq(silences_match(s, web2, T0 + 61 * SEC), n);
    /* an active silence's start moved: replaced */
    n2 = update(s, n, "{\"startsAt\":\"2026-12-04T16:00:30Z\"}", T0 + 120 * SEC);
    ck_assert_ptr_nonnull(n2);
    ck_assert_str_ne(n2, n);
    expect(s, n, "state", "expired", T0 + 120 * SEC);
    expect(s, n2, "startsAt", "2026-12-04T16:02:00Z", T0);
    /* an expired one: only with a new end, and then a new silence (the old stays as it was) */
    ck_assert_ptr_null(update(s, id, "{\"comment\":\"again\"}", T0 + 120 * SEC));
    free(n);
    n = update(s, id, "{\"duration\":\"2h\", \"startsAt\":\"2026-12-04T16:05:00Z\"}",
               T0 + 120 * SEC);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_ne(n, id);
    expect(s, id, "endsAt", "2026-12-04T16:01:00Z", T0);
    expect(s, n, "state", "pending", T0 + 120 * SEC);
    expect(s, n, "matchersText", "HOST=\"web1\"", T0);
    ck_assert_uint_eq(silences_count(s), 4);
    free(id);
    free(n);
    free(n2);
    msg_unref(web1);
    msg_unref(web2);
    silences_free(s);
}
END_TEST

START_TEST(test_pending)
{
    struct silences *s = silences_new(NULL, 86400, 100, T0);
    char *id = add(s,
                   "{\"matchers\":[\"HOST=web1\"], \"startsAt\":\"2026-12-04T17:00:00Z\","
                   " \"duration\":\"1h\"}",
                   T0);
    char *n;

    /* a pending silence's start moves later in place */
    n = update(s, id, "{\"startsAt\":\"2026-12-04T18:00:00Z\", \"duration\":\"1h\"}", T0);
    ck_assert_str_eq(n, id);
    free(n);
    expect(s, id, "startsAt", "2026-12-04T18:00:00Z", T0);
    expect(s, id, "endsAt", "2026-12-04T19:00:00Z", T0);
    /* into the past: replaced, from now; the old one never began */
    n = update(s, id, "{\"startsAt\":\"2026-12-04T15:00:00Z\"}", T0);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_ne(n, id);
    expect(s, n, "startsAt", "2026-12-04T16:00:00Z", T0);
    expect(s, n, "state", "active", T0);
    expect(s, id, "state", "expired", T0);
    free(n);
    free(id);
    silences_free(s);
}
END_TEST

START_TEST(test_nothing_changed)
{
    char dir[] = "/tmp/test_silences_update.XXXXXX", path[64];
    struct silences *s;
    char *id, *n;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/silences", dir);
    s = silences_new(path, 86400, 2, T0);
    id = add(s, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\"}", T0);
    free(add(s, "{\"matchers\":[\"HOST=web9\"], \"duration\":\"1h\"}", T0));
    /* max-silences (2): a replacement is refused, the old one stays active */
    ck_assert_ptr_null(update(s, id, "{\"matchers\":[\"HOST=web2\"]}", T0 + SEC));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "max-silences"));
    expect(s, id, "state", "active", T0 + SEC);
    /* the file cannot be written: neither an update in place nor a replacement */
    unlink(path);
    ck_assert_int_eq(rmdir(dir), 0);
    ck_assert_ptr_null(update(s, id, "{\"comment\":\"x\", \"duration\":\"5h\"}", T0 + SEC));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "not updated"));
    expect(s, id, "comment", "", T0);
    expect(s, id, "endsAt", "2026-12-04T17:00:00Z", T0);
    silences_set_limits(s, 86400, 10);
    ck_assert_ptr_null(update(s, id, "{\"matchers\":[\"HOST=web2\"]}", T0 + SEC));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "not added"));
    expect(s, id, "state", "active", T0 + SEC);
    expect(s, id, "endsAt", "2026-12-04T17:00:00Z", T0);
    ck_assert_uint_eq(silences_count(s), 2);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    n = update(s, id, "{\"matchers\":[\"HOST=web2\"]}", T0 + SEC);
    ck_assert_ptr_nonnull(n);
    free(n);
    free(id);
    silences_free(s);
    unlink(path);
    rmdir(dir);
}
END_TEST

/*
 * A disk that fails under a save of the silences (durable.c's fault hook),
 * at each step: the new silence is refused with the reason, the error
 * counted, the silences in memory as they were, and the file saved before
 * still there whole; the disk well again, it is added.
 */
START_TEST(test_save_faults)
{
    static const struct {
        enum durable_op op;
        enum durable_fault_kind kind;
        int err;
    } faults[] = {
        {DURABLE_OP_OPEN, DURABLE_FAULT_ONCE, EACCES},
        {DURABLE_OP_WRITE, DURABLE_FAULT_ONCE, ENOSPC},
        {DURABLE_OP_WRITE, DURABLE_FAULT_SHORT, ENOSPC},
        {DURABLE_OP_SYNC, DURABLE_FAULT_ONCE, EIO},
        {DURABLE_OP_RENAME, DURABLE_FAULT_ONCE, EXDEV},
    };
    char dir[] = "/tmp/test_silences_update.XXXXXX", path[64];
    struct silences *s, *back;
    size_t i;
    char *id;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/silences", dir);
    s = silences_new(path, 86400, 10, T0);
    free(add(s, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\"}", T0));
    for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
        durable_fault_set(faults[i].op, 1, faults[i].kind, faults[i].err);
        ck_assert_ptr_null(add(s, "{\"matchers\":[\"HOST=web2\"], \"duration\":\"1h\"}", T0));
        ck_assert_ptr_nonnull(strstr(buf_str(&err), strerror(faults[i].err)));
        ck_assert_ptr_nonnull(strstr(buf_str(&err), "not added"));
        ck_assert_uint_eq(durable_fault_failed(faults[i].op), 1);
        durable_fault_clear();
        ck_assert_uint_eq(silences_get_stats(s)->save_errors, i + 1);
        ck_assert_uint_eq(silences_count(s), 1);
        back = silences_new(path, 86400, 10, T0);
        ck_assert_uint_eq(silences_count(back), 1);
        silences_free(back);
    }
    id = add(s, "{\"matchers\":[\"HOST=web2\"], \"duration\":\"1h\"}", T0);
    ck_assert_ptr_nonnull(id);
    back = silences_new(path, 86400, 10, T0);
    ck_assert_uint_eq(silences_count(back), 2);
    silences_free(back);
    free(id);
    silences_free(s);
    unlink(path);
    rmdir(dir);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("silences_update");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_in_place);
    tcase_add_test(tc, test_replaced);
    tcase_add_test(tc, test_pending);
    tcase_add_test(tc, test_nothing_changed);
    tcase_add_test(tc, test_save_faults);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
