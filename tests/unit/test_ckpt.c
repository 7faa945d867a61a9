/*
 * Unit tests: checkpoints in chunks (agent/cluster/cluster_ckpt) over an
 * in-memory key-value store with revisions standing for the backend.  A
 * checkpoint several times the largest value is written in chunks and read
 * back whole; the one written before it stays whole in the other slot; a
 * chunk of the current one missing or altered makes the reader load the one
 * before it (counted), both damaged make it report none (counted); a head
 * updated by another writer since is a conflict; a head stored whole is read
 * as it is; chunks a smaller checkpoint no longer needs are deleted.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cluster/cluster_ckpt.h"
#include "tests/unit/unit_run.h"

#define KEYS 64

struct kv {
    char *key;
    struct buf val;
    uint64_t rev;
};
static struct kv store[KEYS];
static uint64_t last_rev;

static struct kv *
find(const char *key, int add)
{
    int i;

    for (i = 0; i < KEYS; i++)
        if (store[i].key && strcmp(store[i].key, key) == 0) return &store[i];
    if (!add) return NULL;
    for (i = 0; i < KEYS; i++)
        if (!store[i].key) {
            store[i].key = strdup(key);
            return &store[i];
        }
    ck_abort_msg("store full");
    return NULL;
}

static void
reset(void)
{
    int i;

    for (i = 0; i < KEYS; i++) {
        free(store[i].key);
        buf_free(&store[i].val);
        memset(&store[i], 0, sizeof(store[i]));
    }
}

static int
set(const char *key, const char *val, size_t len, uint64_t *rev)
{
    struct kv *e = find(key, 1);

    buf_reset(&e->val);
    buf_append(&e->val, val, len);
    e->rev = ++last_rev;
    if (rev) *rev = e->rev;
    return CLUSTER_OK;
}

static int
f_get(struct cluster_log *l, enum cluster_bucket b, const char *key, struct buf *val, uint64_t *rev)
{
    struct kv *e = find(key, 0);

    (void)l, (void)b;
    if (!e) return CLUSTER_ABSENT;
    buf_reset(val);
    buf_append(val, e->val.p, e->val.len);
    *rev = e->rev;
    return CLUSTER_OK;
}

static int
f_create(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val, size_t len,
         uint64_t *rev)
{
    (void)l, (void)b;
    if (find(key, 0)) return CLUSTER_CONFLICT;
    return set(key, val, len, rev);
}

static int
f_update(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val, size_t len,
         uint64_t last, uint64_t *rev)
{
    struct kv *e = find(key, 0);

    (void)l, (void)b;
    if (!e || e->rev != last) return CLUSTER_CONFLICT;
    return set(key, val, len, rev);
}

static int
f_put(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val, size_t len)
{
    (void)l, (void)b;
    return set(key, val, len, NULL);
}

static int
f_delete(struct cluster_log *l, enum cluster_bucket b, const char *key)
{
    struct kv *e = find(key, 0);

    (void)l, (void)b;
    if (e) {
        free(e->key);
        buf_free(&e->val);
        memset(e, 0, sizeof(*e));
    }
    return CLUSTER_OK;
}

static const struct cluster_backend fake = {
    .name = "fake",
    .kv_get = f_get,
    .kv_create = f_create,
    .kv_update = f_update,
    .kv_put = f_put,
    .kv_delete = f_delete,
};

#define MAX 1000

/* len bytes, different for each seed, with NULs among them */
static char *
data_of(size_t len, unsigned seed)
{
    char *d = malloc(len);
    size_t i;

    for (i = 0; i < len; i++) d[i] = (char)((i * 31 + seed * 7) % 251);
    return d;
}

static void
expect(struct cluster_ckpt *c, const char *want, size_t len, uint64_t damaged_want)
{
    struct buf out = BUF_INIT;
    uint64_t damaged = 0;

    ck_assert_int_eq(cluster_ckpt_read(&fake, NULL, 3, c, &out, &damaged), CLUSTER_OK);
    ck_assert_uint_eq(out.len, len);
    ck_assert(memcmp(out.p, want, len) == 0);
    ck_assert_uint_eq(damaged, damaged_want);
    buf_free(&out);
}

START_TEST(test_chunks_and_fallback)
{
    struct cluster_ckpt w = {0}, r;
    struct buf out = BUF_INIT;
    uint64_t damaged = 0;
    char *a = data_of(3500, 1), *b = data_of(2200, 2);

    reset();
    ck_assert_int_eq(cluster_ckpt_read(&fake, NULL, 3, &r, &out, &damaged), CLUSTER_ABSENT);
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &w, a, 3500, MAX), CLUSTER_OK);
    ck_assert_ptr_nonnull(find("ckpt.3.0.3", 0)); /* 4 chunks, none over MAX */
    ck_assert_ptr_null(find("ckpt.3.0.4", 0));
    ck_assert_uint_eq(find("ckpt.3.0.0", 0)->val.len, MAX);
    expect(&r, a, 3500, 0);
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &w, b, 2200, MAX), CLUSTER_OK);
    ck_assert_ptr_nonnull(find("ckpt.3.1.2", 0));
    expect(&r, b, 2200, 0);
    /* the current one damaged: the one before it, whole in the other slot */
    find("ckpt.3.1.1", 0)->val.p[5] ^= 1;
    expect(&r, a, 3500, 1);
    /* a chunk missing: the same */
    find("ckpt.3.1.1", 0)->val.p[5] ^= 1;
    f_delete(NULL, CLUSTER_STATE, "ckpt.3.1.2");
    expect(&r, a, 3500, 1);
    /* written after that fallback: into the damaged slot, the whole one kept */
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &r, b, 2200, MAX), CLUSTER_OK);
    ck_assert_ptr_null(find("ckpt.3.1.3", 0));
    expect(&r, b, 2200, 0);
    /* both damaged: none, each counted */
    find("ckpt.3.0.0", 0)->val.p[0] ^= 1;
    find("ckpt.3.1.0", 0)->val.p[0] ^= 1;
    damaged = 0;
    ck_assert_int_eq(cluster_ckpt_read(&fake, NULL, 3, &r, &out, &damaged), CLUSTER_ABSENT);
    ck_assert_uint_eq(damaged, 2);
    ck_assert_uint_eq(out.len, 0);
    /* the writer that read that head can still write (its revision) */
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &r, a, 3500, MAX), CLUSTER_OK);
    expect(&r, a, 3500, 0);
    buf_free(&out);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_fencing_and_cleanup)
{
    struct cluster_ckpt w = {0}, stale;
    char *a = data_of(3500, 3), *b = data_of(900, 4);

    reset();
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &w, a, 3500, MAX), CLUSTER_OK);
    stale = w;
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &w, b, 900, MAX), CLUSTER_OK);
    /* the head changed since the stale writer's revision */
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &stale, b, 900, MAX), CLUSTER_CONFLICT);
    /* a one-chunk checkpoint into slot 0: its 3 older chunks go */
    ck_assert_int_eq(cluster_ckpt_write(&fake, NULL, 3, &w, b, 900, MAX), CLUSTER_OK);
    ck_assert_ptr_nonnull(find("ckpt.3.0.0", 0));
    ck_assert_ptr_null(find("ckpt.3.0.1", 0));
    ck_assert_ptr_null(find("ckpt.3.0.3", 0));
    free(a);
    free(b);
}
END_TEST

START_TEST(test_whole_and_damaged_head)
{
    struct cluster_ckpt r;
    struct buf out = BUF_INIT;
    uint64_t damaged = 0;
    static const char whole[] = "42\nrates 0\ncontexts";

    reset();
    set("ckpt.3", whole, sizeof(whole) - 1, NULL);
    expect(&r, whole, sizeof(whole) - 1, 0);
    set("ckpt.3", "chunks 1\n0 x", 12, NULL);
    ck_assert_int_eq(cluster_ckpt_read(&fake, NULL, 3, &r, &out, &damaged), CLUSTER_ABSENT);
    ck_assert_uint_eq(damaged, 1);
    ck_assert_uint_ne(r.rev, 0); /* the head's: a new checkpoint updates it */
    buf_free(&out);
    reset();
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_chunks_and_fallback);
    tcase_add_test(tc, test_fencing_and_cleanup);
    tcase_add_test(tc, test_whole_and_damaged_head);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
