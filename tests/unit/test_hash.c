/*
 * Unit tests: the shared hash function and intrusive hash table (engine/hash),
 * checked against a model: every entry added is found under its hash and
 * only there, removals while walking the table lose nothing else, and the
 * table grows without losing entries.  Also the FNV-1a reference values, and
 * durable_read_file, which refuses what is not a regular file and what is
 * over its bound.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "engine/durable.h"
#include "engine/hash.h"
#include "tests/unit/unit_run.h"

struct item {
    int id;
    struct hash_node node;
    bool in;
};

#define N 5000

/* few distinct hashes, so that chains hold several entries of one hash */
static uint64_t
item_hash(int id)
{
    return hash_string(&(int){id % 1237}, sizeof(int));
}

START_TEST(test_fnv1a_reference)
{
    /* published FNV-1a 64 test vectors */
    ck_assert_uint_eq(hash_string("", 0), 0xcbf29ce484222325ULL);
    ck_assert_uint_eq(hash_string("a", 1), 0xaf63dc4c8601ec8cULL);
    ck_assert_uint_eq(hash_string("foobar", 6), 0x85944171f73967e8ULL);
    ck_assert_uint_eq(hash_bytes(hash_string("foo", 3), "bar", 3), hash_string("foobar", 6));
}
END_TEST

static size_t
count_found(struct hash_table *t, struct item *items, int id)
{
    struct hash_node *n;
    size_t found = 0;

    for (n = hash_table_find(t, item_hash(id)); n; n = hash_table_find_next(n)) {
        struct item *it = hash_entry(n, struct item, node);
        ck_assert_uint_eq(n->hash, item_hash(id));
        if (it == &items[id]) found++;
    }
    return found;
}

START_TEST(test_table_against_model)
{
    static struct item items[N];
    struct hash_table t;
    struct hash_node *n, *next;
    size_t i, walked = 0, live = 0;
    int id;

    hash_table_init(&t, 1);
    ck_assert_uint_eq(t.nbuckets, 16);
    for (id = 0; id < N; id++) {
        items[id].id = id;
        items[id].in = true;
        hash_table_add(&t, &items[id].node, item_hash(id));
    }
    ck_assert_uint_eq(t.count, N);
    ck_assert_uint_ge(t.nbuckets, N);
    for (id = 0; id < N; id++) ck_assert_uint_eq(count_found(&t, items, id), 1);

    /* remove every third entry while walking the whole table */
    for (n = hash_table_iter(&t, &i, NULL); n; n = next) {
        struct item *it = hash_entry(n, struct item, node);
        next = hash_table_iter(&t, &i, n);
        walked++;
        if (it->id % 3 == 0) {
            hash_table_remove(&t, n);
            it->in = false;
        }
    }
    ck_assert_uint_eq(walked, N);
    for (id = 0; id < N; id++) {
        ck_assert_uint_eq(count_found(&t, items, id), items[id].in ? 1 : 0);
        live += items[id].in;
    }
    ck_assert_uint_eq(t.count, live);
    walked = 0;
    for (n = hash_table_iter(&t, &i, NULL); n; n = hash_table_iter(&t, &i, n)) walked++;
    ck_assert_uint_eq(walked, live);
    hash_table_free(&t);
}
END_TEST

START_TEST(test_read_file)
{
    char path[] = "/tmp/corral-test-hash-XXXXXX";
    int fd = mkstemp(path);
    char *data;
    size_t len = 99;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "ab\0cd", 5), 5);
    close(fd);
    data = durable_read_file(path, DURABLE_MAX_STATE, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(len, 5);
    ck_assert_int_eq(memcmp(data, "ab\0cd", 6), 0); /* NUL-terminated after the data */
    free(data);
    /* over the bound: refused whole, not cut */
    errno = 0;
    ck_assert_ptr_null(durable_read_file(path, 4, &len));
    ck_assert_int_eq(errno, EFBIG);
    data = durable_read_file(path, 5, &len);
    ck_assert_ptr_nonnull(data);
    free(data);
    unlink(path);
    errno = 0;
    ck_assert_ptr_null(durable_read_file(path, DURABLE_MAX_STATE, &len));
    ck_assert_int_eq(errno, ENOENT);
    /* a FIFO without a writer would block, /dev/zero never end: both refused at once */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    errno = 0;
    ck_assert_ptr_null(durable_read_file(path, DURABLE_MAX_STATE, &len));
    ck_assert_int_eq(errno, DURABLE_ENOTREG);
    ck_assert_str_eq(durable_strerror(errno), "not a regular file");
    unlink(path);
    errno = 0;
    ck_assert_ptr_null(durable_read_file("/dev/zero", DURABLE_MAX_STATE, &len));
    ck_assert_int_eq(errno, DURABLE_ENOTREG);
    ck_assert_ptr_null(durable_read_file("/tmp", DURABLE_MAX_STATE, &len));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("hash");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_fnv1a_reference);
    tcase_add_test(tc, test_table_against_model);
    tcase_add_test(tc, test_read_file);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
