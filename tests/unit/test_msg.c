/* Unit tests: messages (values, references into the arena, tags, clone) and JSON output. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/json.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "tests/unit/unit_run.h"

static const char *
get(struct msg *m, const char *name, size_t *len)
{
    return msg_get(m, nv_intern_str(name), len);
}

START_TEST(test_set_get_overwrite)
{
    struct msg *m = msg_new();
    size_t len;
    const char *v;

    ck_assert_ptr_null(msg_get(m, NV_HOST, &len));
    ck_assert_uint_eq(len, 0);
    msg_set(m, NV_HOST, "web1", 4);
    msg_set(m, nv_intern_str("user"), "alice", 5);
    v = msg_get(m, NV_HOST, &len);
    ck_assert_uint_eq(len, 4);
    ck_assert(memcmp(v, "web1", 4) == 0);
    msg_set(m, nv_intern_str("user"), "bob", 3);
    v = get(m, "user", &len);
    ck_assert_uint_eq(len, 3);
    ck_assert(memcmp(v, "bob", 3) == 0);
    ck_assert_uint_eq(msg_nvalues(m), 2); /* overwriting keeps one entry */

    /* an empty value is set, not absent */
    msg_set(m, NV_PID, "", 0);
    ck_assert_ptr_nonnull(msg_get(m, NV_PID, &len));
    ck_assert_uint_eq(len, 0);

    msg_unset(m, NV_HOST);
    ck_assert_ptr_null(msg_get(m, NV_HOST, NULL));
    ck_assert_ptr_nonnull(get(m, "user", NULL));
    ck_assert_ptr_nonnull(msg_get(m, NV_PID, NULL));
    msg_unref(m);
}
END_TEST

START_TEST(test_slices_are_not_copied)
{
    struct msg *m = msg_new();
    const char *line = msg_store(m, "host prog: text", 15);
    size_t len;
    const char *v;

    msg_set(m, NV_HOST, line, 4);
    msg_set(m, NV_PROGRAM, line + 5, 4);
    msg_set(m, NV_MESSAGE, line + 11, 4);
    v = msg_get(m, NV_PROGRAM, &len);
    ck_assert_ptr_eq(v, line + 5); /* a reference into the stored line */
    ck_assert_uint_eq(len, 4);
    msg_unref(m);
}
END_TEST

START_TEST(test_references_survive_arena_growth)
{
    struct msg *m = msg_new();
    const char *line = msg_store(m, "abc", 3);
    char big[5000];
    size_t len;
    const char *v;

    msg_set(m, NV_HOST, line, 3);
    memset(big, 'x', sizeof(big));
    msg_set(m, NV_MESSAGE, big, sizeof(big)); /* reallocates the arena */
    v = msg_get(m, NV_HOST, &len);
    ck_assert_uint_eq(len, 3);
    ck_assert(memcmp(v, "abc", 3) == 0);
    v = msg_get(m, NV_MESSAGE, &len);
    ck_assert_uint_eq(len, sizeof(big));
    msg_unref(m);
}
END_TEST

START_TEST(test_reset_reuses)
{
    struct msg *m = msg_new();
    int i;

    for (i = 0; i < 1000; i++) {
        msg_reset(m);
        msg_set(m, NV_MESSAGE, "hello world", 11);
        msg_tag_set(m, TAG_CLASSIFIER_UNKNOWN);
    }
    ck_assert_uint_eq(msg_nvalues(m), 1);
    ck_assert_uint_eq(msg_ntags(m), 1);
    ck_assert_uint_lt(msg_memory(m), 4096); /* steady state: no growth */
    msg_unref(m);
}
END_TEST

START_TEST(test_tags)
{
    struct msg *m = msg_new();
    tag_id a = tag_intern("a", 1), b = tag_intern("b", 1);

    msg_tag_set(m, a);
    msg_tag_set(m, b);
    msg_tag_set(m, a);
    ck_assert_uint_eq(msg_ntags(m), 2);
    ck_assert(msg_tag_has(m, b));
    msg_tag_clear(m, a);
    ck_assert(!msg_tag_has(m, a));
    ck_assert_uint_eq(msg_tag_at(m, 0), b);
    msg_unref(m);
}
END_TEST

/* $TAGS lists tags in the order they were registered, whatever order a
 * message got them in: syslog-ng 3.38 does the same (tests/compat/corr_diff). */
START_TEST(test_tags_in_registration_order)
{
    struct msg *m = msg_new();
    struct buf out = BUF_INIT;
    tag_id z = tag_intern("ord-z", 5), y = tag_intern("ord-y", 5), x = tag_intern("ord-x", 5);

    msg_tag_set(m, x);
    msg_tag_set(m, z);
    msg_tag_set(m, y);
    msg_tag_set(m, TAG_CLASSIFIER_SYSTEM);
    ck_assert_uint_eq(msg_ntags(m), 4);
    ck_assert_uint_eq(msg_tag_at(m, 0), TAG_CLASSIFIER_SYSTEM);
    ck_assert_uint_eq(msg_tag_at(m, 1), z);
    ck_assert_uint_eq(msg_tag_at(m, 2), y);
    ck_assert_uint_eq(msg_tag_at(m, 3), x);
    json_format_msg(m, &out);
    ck_assert_ptr_nonnull(
        strstr(buf_str(&out), "\"TAGS\":\".classifier.system,ord-z,ord-y,ord-x\""));
    buf_free(&out);
    msg_unref(m);
}
END_TEST

/* Times stay within years 1 to 9999, so that no date macro or timeout
 * arithmetic can overflow; a stored message with a time outside is refused. */
START_TEST(test_times_are_bounded)
{
    struct msg *m = msg_new(), *d = msg_new();
    struct msg_time far = {INT64_MAX, 2000000, 90000}, early = {INT64_MIN, -1, -90000};
    struct buf enc = BUF_INIT;

    msg_set_stamp(m, &far);
    ck_assert_int_eq(msg_stamp(m)->sec, 253402300799LL); /* 9999-12-31T23:59:59Z */
    ck_assert_int_eq(msg_stamp(m)->usec, 0);
    ck_assert_int_eq(msg_stamp(m)->gmtoff, 0);
    msg_set_recvd(m, &early);
    ck_assert_int_eq(msg_recvd(m)->sec, -62135596800LL); /* 0001-01-01T00:00:00Z */

    msg_encode(m, &enc);
    ck_assert_uint_eq(msg_decode(d, enc.p, enc.len), enc.len);
    ck_assert_int_eq(msg_stamp(d)->sec, 253402300799LL);
    /* the stamp's seconds, little-endian after priority and flags: INT64_MAX */
    memcpy(enc.p + 8, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
    ck_assert_uint_eq(msg_decode(d, enc.p, enc.len), 0);
    buf_free(&enc);
    msg_unref(m);
    msg_unref(d);
}
END_TEST

/* A stored message cut short anywhere (a torn write) is refused, never half read. */
START_TEST(test_truncated_encoding_refused)
{
    struct msg *m = msg_new(), *d = msg_new();
    struct msg_time t = {1764756000, 250000, 3600};
    struct buf enc = BUF_INIT;
    size_t n;

    msg_set_stamp(m, &t);
    msg_set(m, nv_intern_str("MESSAGE"), "Accepted password for root", 26);
    msg_set(m, nv_intern_str("user"), "root", 4);
    msg_tag_set(m, tag_intern("t1", 2));
    msg_encode(m, &enc);
    for (n = 0; n < enc.len; n++) ck_assert_uint_eq(msg_decode(d, enc.p, n), 0);
    ck_assert_uint_eq(msg_decode(d, enc.p, enc.len), enc.len);
    ck_assert_int_eq(msg_stamp(d)->gmtoff, 3600);
    ck_assert_uint_eq(msg_ntags(d), 1);
    buf_free(&enc);
    msg_unref(m);
    msg_unref(d);
}
END_TEST

/* a name with a NUL is no name corral makes: refused (a dead letter could not be read back) */
START_TEST(test_name_with_nul_refused)
{
    struct msg *m = msg_new(), *d = msg_new();
    struct msg_time t = {1764756000, 0, 0};
    struct buf enc = BUF_INIT;

    msg_set_stamp(m, &t);
    msg_set(m, nv_intern("a\0b", 3), "x", 1);
    msg_encode(m, &enc);
    ck_assert_uint_eq(msg_decode(d, enc.p, enc.len), 0);
    buf_free(&enc);
    msg_unref(m);
    msg_unref(d);
}
END_TEST

START_TEST(test_clone_is_compact_and_independent)
{
    struct msg *m = msg_new(), *c;
    char big[10000];
    size_t len;

    memset(big, 'y', sizeof(big));
    msg_set(m, NV_MESSAGE, big, sizeof(big));
    msg_set(m, NV_MESSAGE, "short", 5); /* the big value is now dead bytes */
    msg_set(m, NV_HOST, "h", 1);
    msg_tag_set(m, TAG_CLASSIFIER_SYSTEM);
    c = msg_clone(m);
    ck_assert_uint_lt(msg_memory(c), 1024);
    msg_set(m, NV_HOST, "other", 5);
    ck_assert(memcmp(msg_get(c, NV_HOST, &len), "h", 1) == 0);
    ck_assert(msg_tag_has(c, TAG_CLASSIFIER_SYSTEM));
    msg_unref(m);
    msg_unref(c);
}
END_TEST

START_TEST(test_clone_kept)
{
    struct msg *m = msg_new(), *c;
    unsigned char *keep = calloc(NV_MAX_NAMES + 1, 1);
    nv_handle a = nv_intern_str("keep.me"), b = nv_intern_str("drop.me");

    msg_set(m, a, "1", 1);
    msg_set(m, b, "2", 1);
    msg_set(m, NV_MESSAGE, "long text nobody reads later", 28);
    keep[a] = 1;
    c = msg_clone_kept(m, keep);
    ck_assert_uint_eq(msg_nvalues(c), 1);
    ck_assert_ptr_nonnull(msg_get(c, a, NULL));
    ck_assert_ptr_null(msg_get(c, b, NULL));
    ck_assert_ptr_null(msg_get(c, NV_MESSAGE, NULL));
    ck_assert_uint_lt(msg_memory(c), msg_memory(m));
    msg_unref(c);
    msg_unref(m);
    free(keep);
}
END_TEST

/* A kept copy is one block; each of its parts that grows moves out of it intact. */
START_TEST(test_clone_kept_grows_out_of_its_block)
{
    struct msg *m = msg_new(), *c;
    char big[5000];
    size_t len, i;
    const char *v;

    memset(big, 'z', sizeof(big));
    msg_set(m, NV_HOST, "host1", 5);
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_tag_set(m, TAG_CLASSIFIER_SYSTEM);
    c = msg_clone_kept(m, NULL);
    ck_assert_uint_eq(msg_nvalues(c), 2);
    /* the arena grows (a large value), then the entries (many names), then the tags */
    msg_set(c, NV_MESSAGE, big, sizeof(big));
    for (i = 0; i < 40; i++) {
        char name[32];
        int n = snprintf(name, sizeof(name), "grow.v%zu", i);
        msg_set(c, nv_intern(name, (size_t)n), name, (size_t)n);
    }
    msg_tag_set(c, TAG_CLASSIFIER_UNKNOWN);
    ck_assert_uint_eq(msg_nvalues(c), 43);
    v = msg_get(c, NV_HOST, &len);
    ck_assert(len == 5 && memcmp(v, "host1", 5) == 0);
    v = msg_get(c, NV_MESSAGE, &len);
    ck_assert(len == sizeof(big) && v[0] == 'z' && v[len - 1] == 'z');
    v = msg_get(c, nv_intern_str("grow.v39"), &len);
    ck_assert(len == 8 && memcmp(v, "grow.v39", 8) == 0);
    ck_assert(msg_tag_has(c, TAG_CLASSIFIER_SYSTEM) && msg_tag_has(c, TAG_CLASSIFIER_UNKNOWN));
    /* the original is untouched */
    ck_assert_uint_eq(msg_nvalues(m), 2);
    ck_assert(!msg_tag_has(m, TAG_CLASSIFIER_UNKNOWN));
    msg_unref(c); /* ASan: frees what moved out, not the block's parts */
    /* a copy with nothing kept: every part empty, each allocated when first set */
    c = msg_clone_kept(m, (const unsigned char[NV_MAX_NAMES + 1]){0});
    ck_assert_uint_eq(msg_nvalues(c), 0);
    ck_assert_uint_eq(msg_ntags(c), 1);
    msg_set(c, NV_HOST, "h2", 2);
    v = msg_get(c, NV_HOST, &len);
    ck_assert(len == 2 && memcmp(v, "h2", 2) == 0);
    msg_unref(c);
    msg_tag_clear(m, TAG_CLASSIFIER_SYSTEM);
    c = msg_clone_kept(m, NULL);
    msg_tag_set(c, TAG_CLASSIFIER_UNKNOWN);
    ck_assert(msg_tag_has(c, TAG_CLASSIFIER_UNKNOWN) && msg_ntags(c) == 1);
    msg_unref(c);
    msg_unref(m);
}
END_TEST

START_TEST(test_buf_reserve_terminates)
{
    struct buf b = BUF_INIT;

    buf_reserve(&b, 0);
    ck_assert_str_eq(b.p, ""); /* a reserved, still empty buffer is a C string */
    buf_free(&b);
}
END_TEST

START_TEST(test_buf_put_uint)
{
    struct buf b = BUF_INIT;
    unsigned long long v[] = {0, 7, 10, 1234567890ULL, 18446744073709551615ULL};
    char want[32];
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        buf_reset(&b);
        buf_puts(&b, "x:");
        buf_put_uint(&b, v[i]);
        snprintf(want, sizeof(want), "x:%llu", v[i]);
        ck_assert_str_eq(buf_str(&b), want);
    }
    buf_free(&b);
}
END_TEST

START_TEST(test_json)
{
    struct msg *m = msg_new();
    struct buf out = BUF_INIT;

    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_MESSAGE, "a \"q\" \\ \n\t\x01 \xc3\xa9 \xff", 16);
    msg_set(m, nv_intern_str("usr.name"), "", 0);
    msg_tag_set(m, tag_intern("t1", 2));
    msg_tag_set(m, tag_intern("t2", 2));
    json_format_msg(m, &out);
    ck_assert_str_eq(buf_str(&out),
                     "{\"PROGRAM\":\"sshd\",\"MESSAGE\":\"a \\\"q\\\" \\\\ \\n\\t\\u0001 \xc3\xa9 "
                     "\\ufffd\",\"usr.name\":\"\",\"TAGS\":\"t1,t2\"}");
    buf_free(&out);
    msg_unref(m);
}
END_TEST

START_TEST(test_json_rejects_overlong_and_surrogates)
{
    struct buf out = BUF_INIT;

    json_quote(&out, "\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80", 9);
    ck_assert_str_eq(buf_str(&out),
                     "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
    buf_free(&out);
}
END_TEST

/*
 * Names interned on several threads at once, as the threads that build a
 * load's rule trees do: more names than a thread remembers (nv.c), so that
 * names share its slots, each interned again and again in another order.
 * Every name must get its own handle, the same on every thread.
 */
#define NAMES   600
#define THREADS 4

static nv_handle interned[THREADS][NAMES];

static void
name_of(int i, char *out, size_t cap)
{
    snprintf(out, cap, "threads.name%d", i);
}

static void *
intern_all(void *arg)
{
    int t = (int)(intptr_t)arg, round, i;
    char name[32];

    for (round = 0; round < 20; round++)
        for (i = 0; i < NAMES; i++) {
            static const int step[THREADS] = {1, 7, 11, 13}; /* none shares a factor with 600 */
            int k = (i * step[t] + round) % NAMES;
            nv_handle h;
            name_of(k, name, sizeof(name));
            h = nv_intern(name, strlen(name));
            if (interned[t][k] && interned[t][k] != h)
                interned[t][k] = 0xffffffffu; /* changed */
            else
                interned[t][k] = h;
        }
    return NULL;
}

START_TEST(test_names_interned_on_threads)
{
    pthread_t tid[THREADS];
    char name[32];
    size_t len;
    int t, i, j;

    for (t = 0; t < THREADS; t++)
        ck_assert_int_eq(pthread_create(&tid[t], NULL, intern_all, (void *)(intptr_t)t), 0);
    for (t = 0; t < THREADS; t++) pthread_join(tid[t], NULL);
    for (i = 0; i < NAMES; i++) {
        name_of(i, name, sizeof(name));
        for (t = 0; t < THREADS; t++)
            ck_assert_uint_eq(interned[t][i], nv_lookup(name, strlen(name)));
        ck_assert_str_eq(nv_name(nv_lookup(name, strlen(name)), &len), name);
        for (j = 0; j < i; j++) ck_assert_uint_ne(interned[0][i], interned[0][j]);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("msg");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_set_get_overwrite);
    tcase_add_test(tc, test_name_with_nul_refused);
    tcase_add_test(tc, test_slices_are_not_copied);
    tcase_add_test(tc, test_references_survive_arena_growth);
    tcase_add_test(tc, test_reset_reuses);
    tcase_add_test(tc, test_tags);
    tcase_add_test(tc, test_tags_in_registration_order);
    tcase_add_test(tc, test_times_are_bounded);
    tcase_add_test(tc, test_truncated_encoding_refused);
    tcase_add_test(tc, test_clone_is_compact_and_independent);
    tcase_add_test(tc, test_clone_kept);
    tcase_add_test(tc, test_clone_kept_grows_out_of_its_block);
    tcase_add_test(tc, test_buf_reserve_terminates);
    tcase_add_test(tc, test_buf_put_uint);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_json_rejects_overlong_and_surrogates);
    tcase_add_test(tc, test_names_interned_on_threads);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
