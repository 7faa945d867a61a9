/*
 * Unit tests: silences with a store instead of the file (silences_set_store,
 * as a cluster's bucket has them) and the merge of another node's changes
 * (silences_apply): every change reaches the store as a record with its
 * updatedAt; a record is taken unless the silence here is as new or newer,
 * so that two nodes that changed one silence at once converge on the newer
 * change, whatever order they see the records in.  A store that fails
 * undoes the change; a damaged record is counted and changes nothing.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agent/alerting/silences.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "tests/unit/unit_run.h"

#define T0  1796400000000ULL /* 2026-12-04T16:00:00Z */
#define SEC 1000ULL

/* What a store was given last. */
struct bucket {
    char rec[4096];
    char id[SILENCES_ID_LEN + 1];
    int64_t updated;
    int puts, deletes;
    bool broken;
};

static int
store(void *arg, const char *id, const char *rec, size_t len, int64_t updated, struct buf *err)
{
    struct bucket *b = arg;

    if (b->broken) {
        if (err) buf_puts(err, "the bucket is gone");
        return -1;
    }
    snprintf(b->id, sizeof(b->id), "%s", id);
    if (!rec) {
        b->deletes++;
        return 0;
    }
    ck_assert_uint_lt(len, sizeof(b->rec));
    memcpy(b->rec, rec, len);
    b->rec[len] = 0;
    b->updated = updated;
    b->puts++;
    return 0;
}

static struct msg *
host(const char *h)
{
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, h, strlen(h));
    return m;
}

static void
add(struct silences *s, const char *text, uint64_t now, struct buf *id, int want)
{
    json_t *j = json_loads(text, 0, NULL);
    struct buf err = BUF_INIT;

    ck_assert_ptr_nonnull(j);
    buf_reset(id);
    ck_assert_int_eq(silences_add_json(s, j, now, id, &err), want);
    json_decref(j);
    buf_free(&err);
}

START_TEST(test_converge)
{
    struct silences *x = silences_new(NULL, 86400, 10, T0), *y = silences_new(NULL, 86400, 10, T0);
    struct bucket bx = {0}, by = {0};
    struct buf id = BUF_INIT, err = BUF_INIT;
    struct msg *web1 = host("web1");
    char rx[4096], ry[4096];
    const char *ids[1];
    json_t *j;

    silences_set_store(x, store, &bx);
    silences_set_store(y, store, &by);
    add(x, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\", \"comment\":\"disk\"}", T0, &id, 0);
    ck_assert_int_eq(bx.puts, 1);
    ck_assert_str_eq(bx.id, buf_str(&id));
    ck_assert_int_eq(bx.updated, (int64_t)T0);
    /* y takes it, once: the same record again is not newer */
    ck_assert_ptr_null(silences_match(y, web1, T0 + SEC));
    ck_assert_int_eq(silences_apply(y, bx.rec, strlen(bx.rec), &err), 1);
    ck_assert_str_eq(silences_match(y, web1, T0 + SEC), buf_str(&id));
    ck_assert_int_eq(silences_apply(y, bx.rec, strlen(bx.rec), &err), 0);
    ck_assert_int_eq(by.puts, 0); /* applied, not written back */

    /* at once: y changes the comment at T0+5s, x expires it at T0+10s */
    j = json_loads("{\"comment\":\"disk, and more\"}", 0, NULL);
    {
        struct buf nid = BUF_INIT;
        ck_assert_int_eq(silences_update_json(y, buf_str(&id), j, T0 + 5 * SEC, &nid, &err), 0);
        ck_assert_str_eq(buf_str(&nid), buf_str(&id));
        buf_free(&nid);
    }
    json_decref(j);
    ids[0] = buf_str(&id);
    ck_assert_int_eq(silences_expire(x, ids, 1, T0 + 10 * SEC, &err), 0);
    strcpy(rx, bx.rec);
    strcpy(ry, by.rec);
    ck_assert_int_eq(by.updated, (int64_t)(T0 + 5 * SEC));
    ck_assert_int_eq(bx.updated, (int64_t)(T0 + 10 * SEC));
    /* each sees the other's: the newer (the expiry) wins on both */
    ck_assert_int_eq(silences_apply(x, ry, strlen(ry), &err), 0);
    ck_assert_int_eq(silences_apply(y, rx, strlen(rx), &err), 1);
    ck_assert_ptr_null(silences_match(x, web1, T0 + 11 * SEC));
    ck_assert_ptr_null(silences_match(y, web1, T0 + 11 * SEC));
    /* and in the other order too: the older one, seen last, changes nothing */
    ck_assert_int_eq(silences_apply(y, ry, strlen(ry), &err), 0);
    ck_assert_ptr_null(silences_match(y, web1, T0 + 11 * SEC));
    ck_assert_uint_eq(silences_active(y, T0 + 11 * SEC), 0);

    /* deleted elsewhere */
    ck_assert(silences_forget(y, buf_str(&id)));
    ck_assert(!silences_forget(y, buf_str(&id)));
    ck_assert_uint_eq(silences_count(y), 0);
    msg_unref(web1);
    buf_free(&id);
    buf_free(&err);
    silences_free(x);
    silences_free(y);
}
END_TEST

START_TEST(test_store_fails)
{
    struct silences *x = silences_new(NULL, 86400, 10, T0);
    struct bucket bx = {0};
    struct buf id = BUF_INIT, err = BUF_INIT;
    const char *ids[1];
    char keep[SILENCES_ID_LEN + 1];

    silences_set_store(x, store, &bx);
    bx.broken = true;
    add(x, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\"}", T0, &id, -1);
    ck_assert_uint_eq(silences_count(x), 0);
    ck_assert_uint_eq(silences_get_stats(x)->save_errors, 1);
    bx.broken = false;
    add(x, "{\"matchers\":[\"HOST=web1\"], \"duration\":\"1h\"}", T0, &id, 0);
    snprintf(keep, sizeof(keep), "%s", buf_str(&id));
    bx.broken = true;
    ids[0] = keep;
    ck_assert_int_eq(silences_expire(x, ids, 1, T0 + SEC, &err), -1);
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "the bucket is gone"));
    ck_assert_uint_eq(silences_active(x, T0 + SEC), 1);
    /* a later change gives the store only what changed */
    bx.broken = false;
    bx.puts = 0;
    add(x, "{\"matchers\":[\"HOST=web2\"], \"duration\":\"1h\"}", T0 + 2 * SEC, &id, 0);
    ck_assert_int_eq(bx.puts, 1);
    ck_assert_str_eq(bx.id, buf_str(&id));
    /* ended past the retention: deleted from the store */
    ck_assert_int_eq(silences_expire(x, ids, 1, T0 + 3 * SEC, &err), 0);
    silences_tick(x, T0 + 3 * SEC + 86401 * SEC);
    ck_assert_int_ge(bx.deletes, 1);
    buf_free(&id);
    buf_free(&err);
    silences_free(x);
}
END_TEST

START_TEST(test_damaged)
{
    struct silences *x = silences_new(NULL, 86400, 10, T0);
    struct buf err = BUF_INIT;

    ck_assert_int_eq(silences_apply(x, "{not json", 9, &err), -1);
    buf_reset(&err);
    ck_assert_int_eq(silences_apply(x, "{\"id\":\"x\"}", 10, &err), -1);
    ck_assert_uint_eq(silences_get_stats(x)->load_errors, 2);
    ck_assert_uint_eq(silences_count(x), 0);
    buf_free(&err);
    silences_free(x);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("silences_merge");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_converge);
    tcase_add_test(tc, test_store_fails);
    tcase_add_test(tc, test_damaged);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
